//! Starting what a cell runs: the target's replicas (ready, with the target's own report of
//! itself read), then the load generator in its own cgroup.

use std::time::{Duration, Instant};

use super::loadgen_setup::{LoadFiles, LoadgenPlacement};
use super::{CellContext, Failure};
use crate::executors::local::cgroup::{Cgroup, LimitMethod};
use crate::executors::local::loadgen::Loadgen;
use crate::executors::local::replica_set::{Launch, ReplicaSet, free_port};
use crate::executors::local::signals;
use crate::executors::local::wake::Waker;
use crate::frontends::progress::Update;
use crate::resource::Enforcement;
use crate::resource::conditions::Cause;
use crate::resource::matrix::Cell;
use benchmatrix_quota::http;

/// What was read of a cell's replicas once every one was ready, before any load.
pub struct ReplicasReady {
    /// What the target said of itself on its stats path once ready (`None`: it did not say).
    pub self_report: Option<benchmatrix_loadgen::result::StatsSnapshot>,
    /// Resident memory of every replica's processes, summed, when ready.
    pub idle_rss: u64,
    /// Seconds from the cell's start until every replica was ready.
    pub ready_secs: f64,
    /// How the replicas' limit is enforced: the status word and a line of detail.
    pub enforcement: (&'static str, String),
}

/// Starts `cell`'s replicas on a free port; the run engine decides how long to wait for them
/// to be ready ([`ReplicaSet::check_ready`]).
pub fn spawn_replicas(ctx: &mut CellContext, cell: &Cell) -> Result<(ReplicaSet, Launch), Failure> {
    let spec = ctx.run.spec();
    let cpu = cell.cpu.cpu_cores().ok();
    let port = free_port().map_err(|e| Failure {
        cause: Cause::SpawnFailed,
        message: format!("no free port: {e}"),
    })?;
    let launch = Launch {
        cell: cell.name.clone(),
        program: ctx.program.to_path_buf(),
        command: spec.target_of(cell.variant.as_ref()).command.to_vec(),
        mode: cell.mode.as_str().to_string(),
        pool_size: cell.pool_size.env_value(),
        env: cell
            .env
            .iter()
            .map(|e| (e.name.clone(), e.value.clone()))
            .collect(),
        replicas: cell.replicas,
        cpu,
        port,
        spread: spec.workload.spread,
        readiness_path: spec.target.readiness_path.clone(),
        log_dir: ctx.out.join("logs"),
    };
    let detail = format!(
        "starting {} x {} replica(s), cpu {} each ({}), port {port}",
        cell.mode,
        cell.replicas,
        cell.cpu.as_str(),
        ctx.backend.name()
    );
    let step = ctx.step;
    ctx.display.show(Update::Started {
        step,
        detail: &detail,
    });
    let set = ReplicaSet::spawn(&launch, ctx.backend).map_err(|e| Failure {
        // A replica that died because of the same Ctrl-C is not the cell's fault.
        cause: if signals::interrupted() {
            Cause::Interrupted
        } else {
            e.reason
        },
        message: e.message,
    })?;
    Ok((set, launch))
}

/// What is read of replicas once every one is ready: the target's own report of itself, its
/// idle memory and how the limit is enforced; `started` is when the cell began.
pub fn read_ready(
    ctx: &CellContext,
    set: &ReplicaSet,
    cpu: Option<f64>,
    started: Instant,
) -> ReplicasReady {
    let spec = ctx.run.spec();
    let enforcement = set
        .limit_method()
        .map(|e| (mechanism(e), e.describe(cpu)))
        .unwrap_or(("none", "unlimited".into()));
    let self_report = http::get(set.addr, &spec.target.stats_path, Duration::from_secs(2))
        .ok()
        .filter(|r| r.status == 200)
        .and_then(|r| serde_json::from_slice(&r.body).ok());
    ReplicasReady {
        self_report,
        idle_rss: set.rss().0,
        ready_secs: started.elapsed().as_secs_f64(),
        enforcement,
    }
}

/// Makes the load generator's cgroup for `cell`.
pub fn loadgen_cgroup(
    ctx: &CellContext,
    cell: &Cell,
    placement: LoadgenPlacement,
) -> Result<Cgroup, Failure> {
    ctx.backend
        .create(
            &format!("{}-loadgen", cell.name),
            placement.cores,
            placement.first_cpu,
        )
        .map_err(|e| Failure {
            cause: Cause::CgroupFailed,
            message: e.to_string(),
        })
}

/// The cell's enforcement entry: how the replicas' limit (`target`, from [`ReplicasReady`]) and
/// the load generator's (`loadgen`, limited to `loadgen_cores`) are enforced.
pub fn enforcement(
    target: &(&'static str, String),
    loadgen: &Cgroup,
    loadgen_cores: Option<f64>,
) -> Enforcement {
    Enforcement {
        target: target.0.to_string(),
        loadgen: Some(mechanism(loadgen.limit_method()).to_string()),
        detail: Some(format!(
            "target replicas: {}; load generator: {}",
            target.1,
            loadgen.limit_method().describe(loadgen_cores)
        )),
    }
}

/// Checks that every replica still lives as the load is about to start, then records the
/// processes each has started, which from then on must live too (see
/// [`ReplicaSet::watch_descendants`]).
pub fn alive_before_load(set: &mut ReplicaSet) -> Result<(), Failure> {
    // A replica that exited since it was ready, or that a wrapper's server left, fails the
    // cell before any load.
    if let Some(why) = set.first_exit() {
        return Err(Failure {
            cause: Cause::ReplicaExited,
            message: format!("{why} (before the load started)"),
        });
    }
    set.watch_descendants();
    Ok(())
}

/// Starts the load generator on `files` inside `cgroup`, with the run's header values in
/// its environment; its progress lines and its end wake the runner through `waker`.
pub fn start_loadgen(
    ctx: &CellContext,
    files: &LoadFiles,
    cgroup: Cgroup,
    waker: Waker,
) -> Result<Loadgen, Failure> {
    Loadgen::start(
        ctx.program,
        &files.plan,
        &files.result,
        &files.log,
        cgroup,
        ctx.header_values,
        waker,
    )
    .map_err(|e| Failure {
        cause: Cause::LoadgenFailed,
        message: format!("cannot start the load generator: {e}"),
    })
}

/// The status word for a mechanism.
fn mechanism(e: &LimitMethod) -> &'static str {
    match e {
        LimitMethod::CgroupV2 { .. } => "cgroup-v2",
        LimitMethod::CgroupV1 { .. } => "cgroup-v1",
        LimitMethod::Affinity { .. } => "affinity",
        LimitMethod::Unlimited => "none",
    }
}
