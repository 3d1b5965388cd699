//! N target processes sharing one port (SO_REUSEPORT, so the kernel spreads connections as a
//! Service does), each in its own cgroup; readiness, resource readings and stopping.
//!
//! With `spread: roundRobin` the replicas do not share an address: replica i listens on
//! 127.0.0.(i+2) at the same port, the local stand-in for a pod IP, so the load generator can
//! deal connections to each in turn and read each one's `/stats`.
//!
//! Everything here is blocking: the runner starts a handful of processes, and its own CPU use
//! competes with the target's, so no async runtime is spun up for it. What wakes the runner
//! when a replica ends or starts to answer is `wake`'s.

use std::fs::{self, File};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use benchmatrix_loadgen::plan::Spread;

use super::cgroup::{Backend, Cgroup, CpuUsage, LimitMethod};
use super::guard;
use super::process::{self, LiveProcess, process_tree, signal_group, stop_children, tie_to_runner};
use super::signals;
use crate::resource::conditions::Cause;
use benchmatrix_quota::http;

/// How long a stopped process gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// The shorter grace after Ctrl-C or SIGTERM: the interrupted cell is abandoned, and a target
/// that ignores SIGTERM must not keep the user waiting for the prompt.
pub const INTERRUPTED_GRACE: Duration = Duration::from_millis(500);

/// How long children may take to stop now: [`STOP_GRACE`], or [`INTERRUPTED_GRACE`] once the
/// runner has been interrupted.
pub fn stop_grace() -> Duration {
    if signals::interrupted() {
        INTERRUPTED_GRACE
    } else {
        STOP_GRACE
    }
}

/// What to start: the built-in target (this binary re-executed) or any local program.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Name of the cell; names the cgroups and log files.
    pub cell: String,
    /// The benchmatrix program that serves the built-in target (this one, normally).
    pub program: PathBuf,
    /// The argv to run; empty means the built-in target (`PROGRAM target ...`).
    pub command: Vec<String>,
    /// Concurrency mode (flag `--mode` for the built-in target, env BENCH_MODE for all).
    pub mode: String,
    /// Worker pool size, "auto" or a number (env BENCH_POOL_SIZE).
    pub pool_size: String,
    /// Extra environment, in order (later wins).
    pub env: Vec<(String, String)>,
    /// Number of processes.
    pub replicas: u32,
    /// CPU limit per process, in cores.
    pub cpu: Option<f64>,
    /// Port they all listen on.
    pub port: u16,
    /// Whether they share 127.0.0.1 (`service`) or each has its own address (`roundRobin`).
    pub spread: Spread,
    /// Path that answers 200 when ready.
    pub readiness_path: String,
    /// Folder for each replica's stdout/stderr.
    pub log_dir: PathBuf,
}

/// Why the replicas could not be brought up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    /// A word for the status' `reason`: NeverReady, SpawnFailed, ReplicaExited, CgroupFailed,
    /// Interrupted, WrongAddress.
    pub reason: Cause,
    /// A sentence, with the process' own last words where there are some.
    pub message: String,
}

/// One running replica.
#[derive(Debug)]
struct Replica {
    child: Child,
    cgroup: Cgroup,
    log: PathBuf,
    exited: Option<ExitStatus>,
    /// The processes it had started when the load began (a shell wrapper's server, forked
    /// workers): each must live until the result is in, as the replica itself must.
    watched: Vec<LiveProcess>,
}

/// What one look at starting replicas found.
#[derive(Debug)]
pub enum Readiness {
    /// Every replica is ready.
    Ready,
    /// Not yet, and why not (for the message should the ready timeout pass).
    NotYet(String),
    /// A replica failed to start.
    Failed(StartError),
}

/// Whether a cell's replicas answer: the built-in target has printed its `listening on` line in
/// each replica's output, and GET readinessPath answers 200 at every address the load will use
/// (on the shared address which replica answers is the kernel's choice, so with the built-in
/// target the per-process line is what proves each is bound).
#[derive(Debug, Clone)]
pub struct ReadinessProbe {
    builtin: bool,
    logs: Vec<PathBuf>,
    addrs: Vec<SocketAddr>,
    path: String,
}

impl ReadinessProbe {
    /// Probes once: `Ok` when every replica answers, else why not.
    pub fn answers(&self) -> Result<(), String> {
        let bound = !self.builtin
            || self.logs.iter().all(|log| {
                fs::read_to_string(log)
                    .map(|t| t.contains("listening on "))
                    .unwrap_or(false)
            });
        if !bound {
            return Err("not every replica printed its `listening on` line".into());
        }
        let not_ready = self.addrs.iter().find_map(|&addr| {
            match http::get(addr, &self.path, Duration::from_millis(500)) {
                Ok(r) if r.status == 200 => None,
                Ok(r) => Some(format!("GET {} on {addr} answered {}", self.path, r.status)),
                Err(e) => Some(format!("GET {} on {addr} failed: {e}", self.path)),
            }
        });
        not_ready.map_or(Ok(()), Err)
    }
}

/// The running replicas of one cell. Dropping it stops them and removes their cgroups.
#[derive(Debug)]
pub struct ReplicaSet {
    replicas: Vec<Replica>,
    /// Where the target answers: the shared address, or the first replica's own.
    pub addr: SocketAddr,
    /// Where the load generator reaches the replicas: the one shared address (`service`), or
    /// each replica's own (`roundRobin`).
    pub addrs: Vec<SocketAddr>,
    /// Where each replica serves its statistics from a thread of their own (the built-in
    /// target's `statistics on` line), in replica order; empty when not every replica has one.
    pub stats_addrs: Vec<SocketAddr>,
}

/// Most replicas that get an address of their own on 127.0.0.0/8 (127.0.0.2 upwards).
pub const MAX_OWN_ADDRESS_REPLICAS: u32 = 250;

/// The address replica `index` listens on.
pub fn replica_host(spread: Spread, index: u32) -> Ipv4Addr {
    match spread {
        Spread::Service => Ipv4Addr::LOCALHOST,
        // 127.0.0.1 stays free: nothing answers there, so a stray connection to the shared
        // address fails loudly instead of reaching an arbitrary replica.
        Spread::RoundRobin => Ipv4Addr::new(127, 0, 0, (index + 2).min(255) as u8),
    }
}

/// Picks a free local TCP port (bind to port 0, read it, release it). Locally each cell gets its
/// own port so a previous cell's sockets in TIME_WAIT or another program on 8080 cannot interfere.
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl ReplicaSet {
    /// Starts every replica in its own cgroup; whether they are ready is [`Self::check_ready`]'s
    /// to tell, and how long to wait for that is the run engine's.
    pub fn spawn(launch: &Launch, backend: &Backend) -> Result<ReplicaSet, StartError> {
        fs::create_dir_all(&launch.log_dir).map_err(|e| StartError {
            reason: Cause::SpawnFailed,
            message: format!("cannot create {}: {e}", launch.log_dir.display()),
        })?;
        if launch.spread == Spread::RoundRobin && launch.replicas > MAX_OWN_ADDRESS_REPLICAS {
            return Err(StartError {
                reason: Cause::SpawnFailed,
                message: format!(
                    "spread roundRobin gives each local replica its own loopback address; \
                     at most {MAX_OWN_ADDRESS_REPLICAS} replicas, not {}",
                    launch.replicas
                ),
            });
        }
        let addrs: Vec<SocketAddr> = match launch.spread {
            Spread::Service => vec![SocketAddr::from(([127, 0, 0, 1], launch.port))],
            Spread::RoundRobin => (0..launch.replicas)
                .map(|i| SocketAddr::from((replica_host(launch.spread, i), launch.port)))
                .collect(),
        };
        let mut set = ReplicaSet {
            replicas: Vec::new(),
            addr: addrs[0],
            addrs,
            stats_addrs: Vec::new(),
        };
        for i in 0..launch.replicas {
            // Many replicas take a while to start: a Ctrl-C stops the loop, and dropping `set`
            // stops those already started.
            if signals::interrupted() {
                return Err(StartError {
                    reason: Cause::Interrupted,
                    message: format!(
                        "interrupted while starting replicas ({i} of {} started)",
                        launch.replicas
                    ),
                });
            }
            let name = format!("{}-r{i}", launch.cell);
            let cgroup = backend
                .create(
                    &name,
                    launch.cpu,
                    i as usize * launch.cpu.unwrap_or(1.0).ceil() as usize,
                )
                .map_err(|e| StartError {
                    reason: Cause::CgroupFailed,
                    message: e.to_string(),
                })?;
            let log = launch.log_dir.join(format!("{name}.log"));
            let mut cmd = target_command(launch, replica_host(launch.spread, i))?;
            let out = File::create(&log).map_err(|e| StartError {
                reason: Cause::SpawnFailed,
                message: format!("cannot create {}: {e}", log.display()),
            })?;
            let err = out.try_clone().map_err(|e| StartError {
                reason: Cause::SpawnFailed,
                message: e.to_string(),
            })?;
            cmd.stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err));
            cgroup.apply_to(&mut cmd);
            tie_to_runner(&mut cmd);
            let child = cmd.spawn().map_err(|e| StartError {
                reason: Cause::SpawnFailed,
                message: format!("cannot start {:?}: {e}", cmd.get_program()),
            })?;
            guard::watch(child.id());
            set.replicas.push(Replica {
                child,
                cgroup,
                log,
                exited: None,
                watched: Vec::new(),
            });
        }
        Ok(set)
    }

    /// Once every replica is ready: checks that round-robin replicas answer only on their own
    /// addresses, and reads where each serves its statistics.
    pub fn finish_start(&mut self, launch: &Launch) -> Result<(), StartError> {
        if launch.spread == Spread::RoundRobin {
            self.check_own_addresses(launch.port)?;
        }
        self.stats_addrs = self
            .replicas
            .iter()
            .map(|r| statistics_address(&fs::read_to_string(&r.log).unwrap_or_default()))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        Ok(())
    }

    /// Looks once whether every replica is alive and answers ([`ReadinessProbe::answers`]).
    pub fn check_ready(&mut self, launch: &Launch) -> Readiness {
        let answer = self.readiness_probe(launch).answers();
        self.readiness(answer)
    }

    /// Whether every replica is ready, given the readiness probe's last `answer`: a replica
    /// that exited has failed whatever the answer.
    pub fn readiness(&mut self, answer: Result<(), String>) -> Readiness {
        for r in &mut self.replicas {
            if let Some(status) = process::exit_status(&mut r.child) {
                r.exited = Some(status);
                return Readiness::Failed(StartError {
                    reason: Cause::ReplicaExited,
                    message: format!(
                        "target replica {} exited before it was ready ({status}); its last output: {}",
                        r.log.display(),
                        tail(&r.log, 5)
                    ),
                });
            }
        }
        match answer {
            Ok(()) => Readiness::Ready,
            Err(why) => Readiness::NotYet(format!(
                "{why}; last output: {}",
                self.replicas
                    .first()
                    .map(|r| tail(&r.log, 3))
                    .unwrap_or_default()
            )),
        }
    }

    /// What tells that every replica answers, apart from the processes themselves: a copy a
    /// probing thread can keep.
    pub fn readiness_probe(&self, launch: &Launch) -> ReadinessProbe {
        ReadinessProbe {
            builtin: launch.command.is_empty(),
            logs: self.replicas.iter().map(|r| r.log.clone()).collect(),
            addrs: self.addrs.clone(),
            path: launch.readiness_path.clone(),
        }
    }

    /// With round-robin spread nothing may answer on the shared 127.0.0.1: a target that binds
    /// 0.0.0.0 with SO_REUSEPORT instead of BENCH_HOST would pass every readiness probe while
    /// the kernel, not the dealing, chose the replica of each connection.
    fn check_own_addresses(&self, port: u16) -> Result<(), StartError> {
        let shared = SocketAddr::from(([127, 0, 0, 1], port));
        match std::net::TcpStream::connect_timeout(&shared, Duration::from_millis(300)) {
            Err(_) => Ok(()),
            Ok(_) => Err(StartError {
                reason: Cause::WrongAddress,
                message: format!(
                    "spread roundRobin gives each replica its own address (BENCH_HOST: {}), but \
                     something also answers on {shared}: the target seems to listen on every \
                     address, so connections would not reach the replica they are dealt to; \
                     make it listen on BENCH_HOST",
                    self.addrs
                        .iter()
                        .map(|a| a.ip().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    }

    /// Process ids of the replicas.
    pub fn pids(&self) -> Vec<u32> {
        self.replicas.iter().map(|r| r.child.id()).collect()
    }

    /// How each replica's limit is enforced (they are all alike; the first speaks for all).
    pub fn limit_method(&self) -> Option<&LimitMethod> {
        self.replicas.first().map(|r| r.cgroup.limit_method())
    }

    /// CPU used by each replica so far, in replica order, from its cgroup (or /proc with
    /// affinity only); `None` where it cannot be read.
    pub fn usage_each(&self) -> Vec<Option<CpuUsage>> {
        self.replicas
            .iter()
            .map(|r| r.cgroup.usage(&[r.child.id()]))
            .collect()
    }

    /// The sum of several replicas' CPU readings.
    pub fn total(each: &[Option<CpuUsage>]) -> CpuUsage {
        let mut sum = CpuUsage::default();
        for u in each.iter().flatten() {
            sum.usage_secs += u.usage_secs;
            sum.nr_periods += u.nr_periods;
            sum.nr_throttled += u.nr_throttled;
            sum.throttled_secs += u.throttled_secs;
        }
        sum
    }

    /// How each replica is named in a status: its own address where it has one, else "rN".
    pub fn replica_names(&self) -> Vec<String> {
        (0..self.replicas.len())
            .map(|i| match self.addrs.get(i) {
                Some(a) if self.addrs.len() == self.replicas.len() && self.replicas.len() > 1 => {
                    a.to_string()
                }
                _ => format!("r{i}"),
            })
            .collect()
    }

    /// Resident memory now and at its peak (VmRSS, VmHWM), summed over every process of every
    /// live replica: a replica may fork workers (node:cluster), and they count as its memory.
    /// The peak is the sum of each process' own peak, an upper bound of the replica's.
    pub fn rss(&self) -> (u64, u64) {
        self.replicas
            .iter()
            .flat_map(|r| process_tree(r.child.id()))
            .filter_map(process::rss)
            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }

    /// Records the processes each replica has started by now (a shell wrapper's server,
    /// forked workers), so that [`ReplicaSet::first_exit`] notices when one of them exits
    /// while the replica itself lives on. Called when the load starts.
    pub fn watch_descendants(&mut self) {
        for r in &mut self.replicas {
            r.watched = process_tree(r.child.id())
                .into_iter()
                .skip(1)
                .filter_map(LiveProcess::read)
                .collect();
        }
    }

    /// The processes the replicas had started when the load began ([`Self::watch_descendants`]).
    pub fn descendant_pids(&self) -> Vec<u32> {
        self.replicas
            .iter()
            .flat_map(|r| r.watched.iter().map(|w| w.pid))
            .collect()
    }

    /// The first replica that has exited, or a process it had started when the load began
    /// that has; a sentence with the pid, exit status or signal, and the replica's last
    /// output. The replica is reaped ([`process::exit_status`]), so an exited one is never mistaken for a
    /// live one the way a zombie's /proc entry would be.
    pub fn first_exit(&mut self) -> Option<String> {
        for r in &mut self.replicas {
            if r.exited.is_none()
                && let Some(status) = process::exit_status(&mut r.child)
            {
                r.exited = Some(status);
            }
            if let Some(status) = r.exited {
                return Some(format!(
                    "target replica pid {} exited ({status}); its last output: {}",
                    r.child.id(),
                    tail(&r.log, 5)
                ));
            }
            if let Some(w) = r.watched.iter().find(|w| !w.running()) {
                return Some(format!(
                    "process {} ({}) of target replica pid {} exited while the replica lived \
                     on; the replica's last output: {}",
                    w.pid,
                    w.command,
                    r.child.id(),
                    tail(&r.log, 5)
                ));
            }
        }
        None
    }

    /// SIGTERM to every replica, SIGKILL after [`stop_grace`], then removes their cgroups.
    pub fn stop(mut self) {
        self.stop_all();
    }

    /// Freezes every live replica (SIGSTOP to its process group) once the load has ended.
    /// Requests cut at the end keep a replica busy for up to a /slow's length (~1.5 s of wall
    /// time at 0.25 CPU), and busy replicas take the CPU the runner needs to read their CPU
    /// and memory and to stop them: with 8 replicas filling both cores of a 2-core box, those
    /// reads took 0.18 s instead of a few ms. What a replica does after the end is not part of
    /// the measurement, so it need not run at all.
    pub fn freeze(&self) {
        for r in self.replicas.iter().filter(|r| r.exited.is_none()) {
            signal_group(r.child.id(), libc::SIGSTOP);
        }
    }

    /// Stops frozen replicas once the result is in: SIGKILL at once, then removes their
    /// cgroups. A frozen process would not handle SIGTERM before SIGCONT, and nothing of a
    /// replica is needed any more (its CPU, memory and `/stats` were read): a grace would only
    /// wait, as it used to for a single-mode replica that reaches its SIGTERM handler only
    /// when its /slow request ends.
    pub fn kill_frozen(mut self) {
        self.stop_within(Duration::ZERO);
    }

    fn stop_all(&mut self) {
        self.stop_within(stop_grace());
    }

    fn stop_within(&mut self, grace: Duration) {
        let mut procs: Vec<&mut Child> = self
            .replicas
            .iter_mut()
            .filter(|r| r.exited.is_none())
            .map(|r| &mut r.child)
            .collect();
        stop_children(&mut procs, grace);
        for r in &mut self.replicas {
            // A replica that exited on its own may have left processes in its group (a shell
            // wrapper's children); they go too.
            if r.exited.is_some() {
                signal_group(r.child.id(), libc::SIGKILL);
                guard::unwatch(r.child.id());
            }
            r.cgroup.remove();
        }
        self.replicas.clear();
    }
}

impl Drop for ReplicaSet {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// The address in a built-in target's `statistics on http://ADDR` line, if it printed one.
fn statistics_address(output: &str) -> Option<SocketAddr> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("statistics on http://"))
        .and_then(|a| a.trim_end_matches('/').parse().ok())
}

fn target_command(launch: &Launch, host: Ipv4Addr) -> Result<Command, StartError> {
    let host = host.to_string();
    let mut cmd = if launch.command.is_empty() {
        let mut c = Command::new(&launch.program);
        c.args([
            "target",
            "--mode",
            &launch.mode,
            "--host",
            &host,
            "--port",
            &launch.port.to_string(),
        ]);
        // /stats on a port of its own, served by a thread the workload cannot block: read at
        // every phase boundary, it must not queue behind a busy event loop (0 = any free port;
        // the target names it in its `statistics on` line).
        c.env("BENCH_STATS_PORT", "0");
        c
    } else {
        let mut c = Command::new(&launch.command[0]);
        c.args(&launch.command[1..]);
        c
    };
    cmd.env("PORT", launch.port.to_string())
        .env("BENCH_MODE", &launch.mode)
        .env("BENCH_POOL_SIZE", &launch.pool_size)
        .env("BENCH_HOST", &host);
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    Ok(cmd)
}

/// The last `n` non-empty lines of a log file, joined with " | ".
pub fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let joined = lines[start..].join(" | ");
    if joined.is_empty() {
        "(nothing)".into()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests;
