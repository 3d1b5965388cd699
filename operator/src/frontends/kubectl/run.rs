//! `kubectl benchmatrix run FILE`: the cluster's `benchmatrix run`. One command that validates
//! the file as the operator will, creates the BenchmarkRun, follows it to its end with the
//! local runner's progress display, prints the comparison table, writes `--out` and exits with
//! the same verdict as `benchmatrix run` would for the same status.
//!
//! Exit codes: 0, 1 and 3 as `benchmatrix run` ([`Outcome`]); 2 for an invalid file, an
//! `--out` that is not a writable folder, a run of that name already there (without
//! `--replace`), or a spec the cluster refuses; 4 when `--timeout` expires; 5 when the cluster
//! cannot be asked (or the run was deleted by someone else); 130 on Ctrl-C.

use crate::engine::verdict::exit;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams, Preconditions, PropagationPolicy};
use kube::runtime::WatchStreamExt;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher::watch_object;

use super::api_error;
use super::connect::{Cluster, Connection};
use super::follow::Follower;
use super::runs::{runs_api, status_of};
use crate::engine::verdict::outcome::Outcome;
use crate::frontends::progress::{Display, Plan};
use crate::frontends::report::{self, markdown::Notes};
use crate::resource::BenchmarkRunStatus;
use crate::resource::ValidatedRun;

const COMMAND: &str = "kubectl benchmatrix run";

/// After this long without a status, the run is probably not seen by any operator: say so.
pub const NO_STATUS_HINT: Duration = Duration::from_secs(30);

/// How long `--replace` waits for the earlier run to be gone.
const REPLACE_WAIT: Duration = Duration::from_secs(120);

/// Arguments of `kubectl benchmatrix run`.
#[derive(Debug, Clone, clap::Args)]
pub struct PluginRunArgs {
    /// The BenchmarkRun YAML to run on the cluster.
    pub file: PathBuf,
    /// Folder for status.yaml, report.md and the charts, as `benchmatrix run` writes them;
    /// made if missing. A path that is not a writable folder is refused (exit 2) before
    /// anything is created.
    #[arg(long, default_value = "benchmatrix-out")]
    pub out: PathBuf,
    /// Stop following after this long (`90s`, `10m`, `1h`): exit 4, and delete the run unless
    /// --keep.
    #[arg(long, default_value = "1h", value_name = "DURATION")]
    pub timeout: crate::resource::Duration,
    /// On Ctrl-C or --timeout, leave the run on the cluster (by default a timeout deletes it,
    /// and Ctrl-C asks on a terminal and deletes it elsewhere).
    #[arg(long)]
    pub keep: bool,
    /// Delete a BenchmarkRun of the same name first (its pods go with it) instead of refusing
    /// to start.
    #[arg(long)]
    pub replace: bool,
    /// Measure this image as the variant `base` against --candidate, side by side in paired
    /// rounds (spec.variants written for you; the file must not set its own).
    #[arg(long, value_name = "IMAGE", requires = "candidate")]
    pub base: Option<String>,
    /// The image measured as the variant `candidate` against --base.
    #[arg(long, value_name = "IMAGE", requires = "base")]
    pub candidate: Option<String>,
    /// The regression gate over spec.variants.
    #[command(flatten)]
    pub gate: crate::frontends::variants::GateArgs,
    /// JUnit XML and benchmark JSON for CI, on request.
    #[command(flatten)]
    pub ci: crate::frontends::report::ci::CiFiles,
    /// Check the run as a real one is checked (the operator's own validation, --out and the
    /// CI files, made and removed again) and have the API server check it too, with a
    /// server-side dry run of its create (dryRun=All: the CRD schema, its CEL rules,
    /// admission), without creating anything. Exit 0 when it would be created, 2 when
    /// refused, 5 when the cluster cannot be reached.
    #[arg(long)]
    pub dry_run: bool,
}

/// What to do with the run on the cluster when following it stops before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStop {
    /// Leave it running.
    Keep,
    /// Delete it (the operator's objects go with it).
    Delete,
    /// Ask the person at the terminal.
    Ask,
}

impl OnStop {
    /// On Ctrl-C: `--keep` leaves the run; at a terminal, ask; elsewhere (a CI job being
    /// cancelled) delete it, as nobody is left to stop the load it puts on the cluster.
    pub fn on_interrupt(keep: bool, stdin_is_terminal: bool) -> OnStop {
        match (keep, stdin_is_terminal) {
            (true, _) => OnStop::Keep,
            (false, true) => OnStop::Ask,
            (false, false) => OnStop::Delete,
        }
    }

    /// When `--timeout` expires: the deadline was chosen beforehand, so nobody is asked.
    pub fn on_timeout(keep: bool) -> OnStop {
        if keep { OnStop::Keep } else { OnStop::Delete }
    }
}

/// The person's (or CI job's) side of a run.
pub struct Console {
    /// Makes the progress display for the run's plan ([`Display::new`] on stdout).
    pub display: Box<dyn FnOnce(Plan) -> Display + Send>,
    /// Completes on Ctrl-C (or SIGTERM).
    pub interrupted: BoxFuture<'static, ()>,
    /// Whether a question can be asked (stdin is a terminal).
    pub stdin_is_terminal: bool,
    /// Asks a yes/no question; true for yes.
    pub ask: Box<dyn FnOnce(String) -> BoxFuture<'static, bool> + Send>,
}

/// How following a run ended.
enum End {
    /// The run finished; its final status is the last one shown.
    Finished,
    TimedOut,
    Interrupted,
    /// The run is gone, or another object of its name replaced it.
    Gone,
}

/// `kubectl benchmatrix run`; returns the exit code.
pub async fn run(mut args: PluginRunArgs, connection: &mut Connection, console: Console) -> u8 {
    let Console {
        display: make_display,
        mut interrupted,
        stdin_is_terminal,
        ask,
    } = console;
    let file = args.file.display().to_string();
    let checked = match check(&args, &file) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    args.gate = args
        .gate
        .resolved(!checked.validated.spec().variants.is_empty());
    let cluster = tokio::select! {
        c = connection.cluster() => match c {
            Ok(c) => c.clone(),
            Err(e) => {
                eprintln!("{COMMAND}: {e}");
                return exit::CLUSTER;
            }
        },
        _ = &mut interrupted => return Outcome::Interrupted.code(),
    };
    if args.dry_run {
        return dry_run(&file, &checked, &cluster).await;
    }
    let ours = match create(&args, &file, &checked, &cluster, &mut interrupted).await {
        Ok(ours) => ours,
        Err(code) => return code,
    };
    let what = ours.what();
    let mut shown = Shown {
        follower: Follower::new(&checked.validated),
        display: make_display(Plan::of(&checked.validated)),
        last: BenchmarkRunStatus::default(),
    };
    shown.say(&format!("created {what} ({})", cluster.describe));
    let end = follow(&ours, args.timeout.get(), &mut interrupted, &mut shown).await;
    let Shown {
        follower,
        mut display,
        last,
    } = shown;
    display.run_ended(&last, checked.validated.repeat());
    let code = match end {
        End::Finished => {
            crate::frontends::variants::finish(&last, &args.gate, |line| display.line(line))
        }
        End::TimedOut => {
            display.line(&format!(
                "timed out: {what} did not finish within {} (--timeout); it is {} with {} \
                 measurement(s) done",
                args.timeout,
                last.phase,
                follower.done()
            ));
            stop(&ours, OnStop::on_timeout(args.keep), ask, &mut display).await;
            exit::TIMEOUT
        }
        End::Interrupted => {
            let on_stop = OnStop::on_interrupt(args.keep, stdin_is_terminal);
            stop(&ours, on_stop, ask, &mut display).await;
            Outcome::Interrupted.code()
        }
        End::Gone => {
            display.line(&format!(
                "{what} was deleted before it finished; below is what it had measured"
            ));
            exit::CLUSTER
        }
    };
    let notes = notes(&file, &what, &cluster, &checked, &args);
    // Only a run that ended has verdicts to report; a timeout or an interrupt is the step's
    // failure, said by the exit code.
    let finished = matches!(end, End::Finished).then_some(ours.name.as_str());
    write_files(&args, &last, &notes, finished, &mut display);
    code
}

/// What report.md says of where the run came from and how it was gated.
fn notes(
    file: &str,
    what: &str,
    cluster: &Cluster,
    checked: &CheckedFile,
    args: &PluginRunArgs,
) -> Notes {
    Notes {
        source: format!("{file}, as {what}"),
        machine: format!("Kubernetes ({})", cluster.describe),
        workload: crate::frontends::report::markdown::workload_line(&checked.validated),
        extra: Vec::new(),
        max_regression: args.gate.max_regression,
    }
}

/// The files of `--out` (the status, report.md, the charts) and, for a run that `finished`
/// under that name, the CI files its flags ask for, each said on the display.
fn write_files(
    args: &PluginRunArgs,
    last: &BenchmarkRunStatus,
    notes: &Notes,
    finished: Option<&str>,
    display: &mut Display,
) {
    write_outputs(&args.out, last, notes, display);
    let Some(name) = finished else {
        return;
    };
    for line in args.ci.write(name, last, args.gate.max_regression) {
        match line {
            Ok(wrote) => display.line(&wrote),
            Err(e) => eprintln!("{COMMAND}: {e}"),
        }
    }
}

/// The run file, as checked before the cluster is asked.
struct CheckedFile {
    /// The document as written.
    text: String,
    /// As the operator will find it.
    validated: ValidatedRun,
    /// Its name on the cluster (`metadata.name`).
    name: String,
}

/// Checks what can be checked before the cluster is asked: the file (`file` names it) read,
/// valid as the operator will find it, and named, and `--out` a writable folder. The exit code
/// (2) once the error is said.
fn check(args: &PluginRunArgs, file: &str) -> Result<CheckedFile, u8> {
    if let Some(problem) = args.gate.problem() {
        eprintln!("{COMMAND}: {problem}");
        return Err(exit::BAD_INPUT);
    }
    let mut text = std::fs::read_to_string(&args.file).map_err(|e| {
        eprintln!("{COMMAND}: cannot read {file}: {e}");
        exit::BAD_INPUT
    })?;
    if let (Some(base), Some(candidate)) = (&args.base, &args.candidate) {
        text = crate::frontends::variants::with_images(&text, base, candidate).map_err(|e| {
            eprintln!("{COMMAND}: {file} {e}");
            exit::BAD_INPUT
        })?;
    }
    let validated = crate::resource::validate::parse_benchmark_run(&text)
        .and_then(ValidatedRun::for_cluster)
        .map_err(|e| {
            eprintln!("{COMMAND}: {file} is not a valid BenchmarkRun:");
            for fe in &e.errors {
                eprintln!("  {fe}");
            }
            exit::BAD_INPUT
        })?;
    for old in crate::resource::validate::deprecations(validated.spec()) {
        eprintln!("{COMMAND}: warning: {old}");
    }
    let Some(name) = validated
        .run()
        .metadata
        .name
        .clone()
        .filter(|n| !n.is_empty())
    else {
        eprintln!("{COMMAND}: {file} is not a valid BenchmarkRun:");
        eprintln!("  metadata.name: required: the run's name on the cluster");
        return Err(exit::BAD_INPUT);
    };
    let outputs = if args.dry_run {
        // Checked as a run checks them, then undone: a dry run leaves nothing behind.
        crate::frontends::outputs::problems(&args.out, &args.ci)
    } else {
        crate::frontends::report::files::check_writable_folder(&args.out)
            .map_err(|e| format!("--out {}: {e}", args.out.display()))
            .and_then(|()| args.ci.check())
            .err()
            .into_iter()
            .collect()
    };
    if !outputs.is_empty() {
        for problem in outputs {
            eprintln!("{COMMAND}: {problem}");
        }
        return Err(exit::BAD_INPUT);
    }
    Ok(CheckedFile {
        text,
        validated,
        name,
    })
}

/// Creates the run of `checked` on `cluster`, in its namespace, after deleting an earlier one
/// of its name with `--replace`. The run created, or the exit code once the error is said (or
/// the interrupt's, when one comes while an earlier run is deleted).
async fn create(
    args: &PluginRunArgs,
    file: &str,
    checked: &CheckedFile,
    cluster: &Cluster,
    interrupted: &mut BoxFuture<'static, ()>,
) -> Result<Ours, u8> {
    let name = checked.name.clone();
    let namespace = namespace_of(&checked.validated, cluster).map_err(|e| {
        eprintln!("{COMMAND}: {e}");
        exit::BAD_INPUT
    })?;
    let object = object_to_create(&checked.text, &namespace).map_err(|e| {
        eprintln!("{COMMAND}: {file}: {e}");
        exit::BAD_INPUT
    })?;
    let api = runs_api(cluster, &namespace);
    let what = format!("benchmarkrun {namespace}/{name}");
    if args.replace {
        let replaced = tokio::select! {
            r = delete_existing(&api, &name) => r,
            _ = &mut *interrupted => return Err(Outcome::Interrupted.code()),
        };
        match replaced {
            Ok(true) => eprintln!("deleted the earlier {what}"),
            Ok(false) => {}
            Err(e) => {
                eprintln!("{COMMAND}: --replace: {e}");
                return Err(exit::CLUSTER);
            }
        }
    }
    let created = match api.create(&PostParams::default(), &object).await {
        Ok(o) => o,
        Err(e) => return Err(refused_create(&e, &what, cluster, &namespace, &name)),
    };
    Ok(Ours {
        api,
        namespace,
        name,
        uid: created.metadata.uid.clone().unwrap_or_default(),
    })
}

/// `--dry-run` once the file has passed the operator's validation: the create sent with
/// dryRun=All, so the API server runs its schema, CEL rules and admission on the object and
/// stores nothing. Exit 0 when it would be created, else the create's own refusal.
async fn dry_run(file: &str, checked: &CheckedFile, cluster: &Cluster) -> u8 {
    let namespace = match namespace_of(&checked.validated, cluster) {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!("{COMMAND}: {e}");
            return exit::BAD_INPUT;
        }
    };
    let object = match object_to_create(&checked.text, &namespace) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{COMMAND}: {file}: {e}");
            return exit::BAD_INPUT;
        }
    };
    let what = format!("benchmarkrun {namespace}/{}", checked.name);
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    if let Err(e) = runs_api(cluster, &namespace).create(&params, &object).await {
        return refused_create(&e, &what, cluster, &namespace, &checked.name);
    }
    println!(
        "{file}: a valid BenchmarkRun; the operator's checks pass and the API server ({}) \
         accepts {what} (server-side dry run: nothing was created)",
        cluster.describe
    );
    let cells = checked.validated.cells();
    println!("cells: {}", cells.len());
    for cell in cells {
        println!(
            "  {}: {} replica(s) x cpu {} memory {}",
            cell.name, cell.replicas, cell.cpu, cell.memory
        );
    }
    exit::SUCCESS
}

/// The run this command created: the object with this uid (a run deleted and created again
/// under the same name is another).
struct Ours {
    api: Api<DynamicObject>,
    namespace: String,
    name: String,
    uid: String,
}

impl Ours {
    /// "benchmarkrun NS/NAME".
    fn what(&self) -> String {
        format!("benchmarkrun {}/{}", self.namespace, self.name)
    }
}

/// What the person sees of the run: the progress so far and the last status.
struct Shown {
    follower: Follower,
    display: Display,
    last: BenchmarkRunStatus,
}

impl Shown {
    fn status(&mut self, status: BenchmarkRunStatus) {
        self.follower.update(&status, &mut self.display);
        self.last = status;
    }

    fn say(&mut self, line: &str) {
        self.display.line(line);
    }

    fn tick(&mut self) {
        let now = crate::resource::conditions::secs_of(&crate::resource::conditions::now());
        self.follower.tick(now, &mut self.display);
    }
}

/// The namespace of the run: `-n`, else the file's, else the context's. A file that names a
/// namespace other than `-n` is refused, as kubectl refuses it.
fn namespace_of(run: &ValidatedRun, cluster: &Cluster) -> Result<String, String> {
    match &run.run().metadata.namespace {
        Some(ns) if cluster.namespace_from_flag && *ns != cluster.namespace => Err(format!(
            "the file's metadata.namespace is {ns:?} but -n says {:?}: leave one out, or make \
             them agree",
            cluster.namespace
        )),
        Some(ns) => Ok(ns.clone()),
        None => Ok(cluster.namespace.clone()),
    }
}

/// The object to create: the document as written (the API server applies the CRD's defaults,
/// as for `kubectl create -f`), in `namespace`, keeping only the metadata a user sets (a copy
/// of `kubectl get -o yaml` carries a uid, a resourceVersion and a status, which a create
/// must not).
fn object_to_create(text: &str, namespace: &str) -> Result<DynamicObject, String> {
    let mut raw: serde_json::Value =
        serde_yaml::from_str(text).map_err(|e| format!("not a YAML object: {e}"))?;
    let Some(doc) = raw.as_object_mut() else {
        return Err("not a YAML object".into());
    };
    doc.remove("status");
    let meta = doc
        .get("metadata")
        .and_then(|m| m.as_object())
        .cloned()
        .unwrap_or_default();
    let mut kept: serde_json::Map<String, serde_json::Value> = meta
        .into_iter()
        .filter(|(k, _)| matches!(k.as_str(), "name" | "labels" | "annotations"))
        .collect();
    kept.insert("namespace".into(), namespace.into());
    doc.insert("metadata".into(), kept.into());
    serde_json::from_value(raw).map_err(|e| format!("not a Kubernetes object: {e}"))
}

/// Deletes the run named `name` if there is one, and waits until it is gone; true if there
/// was one. The deletion is in the foreground: the API server keeps the run until the
/// garbage collector has deleted what it owns (its Deployments and Jobs, and in turn their
/// pods), so once it is gone no pod of it is left to load the machines under the new run's
/// first cell.
async fn delete_existing(api: &Api<DynamicObject>, name: &str) -> Result<bool, String> {
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| format!("cannot read the earlier run: {}", api_error(&e)))?;
    let Some(existing) = existing else {
        return Ok(false);
    };
    let uid = existing.metadata.uid.clone().unwrap_or_default();
    match api
        .delete(name, &delete_params(&uid, PropagationPolicy::Foreground))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(true),
        Err(e) => return Err(format!("cannot delete the earlier run: {}", api_error(&e))),
    }
    let gone = await_condition(api.clone(), name, conditions::is_deleted(&uid));
    match tokio::time::timeout(REPLACE_WAIT, gone).await {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => Err(format!("waiting for the earlier run to go: {e}")),
        Err(_) => Err(format!(
            "the earlier run was still there {}s after its deletion (a finalizer?)",
            REPLACE_WAIT.as_secs()
        )),
    }
}

/// A deletion of exactly the object with `uid` (not one created since under the same name),
/// its dependents deleted as `propagation` says.
fn delete_params(uid: &str, propagation: PropagationPolicy) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(propagation),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

/// The exit code and message for a create the API server refused.
fn refused_create(
    e: &kube::Error,
    what: &str,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> u8 {
    let code = match e {
        kube::Error::Api(s) => s.code,
        _ => 0,
    };
    match code {
        409 => {
            eprintln!(
                "{COMMAND}: {what} already exists. Delete it (kubectl -n {namespace} delete \
                 benchmarkrun {name}), rename the run in the file, or pass --replace to delete \
                 it first."
            );
            exit::BAD_INPUT
        }
        // The CRD schema or its CEL rules refused the spec: the file is invalid there.
        400 | 422 => {
            eprintln!("{COMMAND}: the cluster refused {what}: {}", api_error(e));
            exit::BAD_INPUT
        }
        404 => {
            eprintln!(
                "{COMMAND}: the API server ({}) does not know BenchmarkRuns, or has no \
                 namespace {namespace}: is the benchmatrix CRD installed (kubectl apply \
                 --server-side -f manifests/crd.yaml)? {}",
                cluster.describe,
                api_error(e)
            );
            exit::CLUSTER
        }
        _ => {
            eprintln!(
                "{COMMAND}: cannot create {what} ({}): {}",
                cluster.describe,
                api_error(e)
            );
            exit::CLUSTER
        }
    }
}

/// Follows `ours` with a watch on that one object until it finishes, the timeout expires, an
/// interrupt comes, or it is gone; shows each status (and notices: a lost watch, no operator in
/// sight) on `shown`.
async fn follow(
    ours: &Ours,
    timeout: Duration,
    interrupted: &mut BoxFuture<'static, ()>,
    shown: &mut Shown,
) -> End {
    let what = ours.what();
    let mut events = pin!(watch_object(ours.api.clone(), &ours.name).default_backoff());
    let mut deadline = pin!(tokio::time::sleep(timeout));
    let mut hint = pin!(tokio::time::sleep(NO_STATUS_HINT));
    // Between status updates the live estimate of the time left moves on by the clock.
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut hinted = false;
    let mut any_status = false;
    let mut failing = false;
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(Some(object))) => {
                    failing = false;
                    if object.metadata.uid.as_deref() != Some(ours.uid.as_str()) {
                        // Deleted and created again under the same name: not ours any more.
                        return End::Gone;
                    }
                    let status = match status_of(&object) {
                        Ok(s) => s,
                        Err(e) => {
                            shown.say(&format!("warning: {what}: {e}"));
                            continue;
                        }
                    };
                    any_status |= object.data.get("status").is_some_and(|s| !s.is_null());
                    let finished = status.phase.is_finished();
                    shown.status(status);
                    if finished {
                        return End::Finished;
                    }
                }
                Some(Ok(None)) | None => return End::Gone,
                Some(Err(e)) => {
                    // The watch restarts by itself, after a backoff; an API server outage is
                    // no reason to stop following (the operator carries the run on).
                    if !failing {
                        shown.say(&format!("warning: the watch of {what} failed ({e}); retrying"));
                        failing = true;
                    }
                }
            },
            _ = ticks.tick() => shown.tick(),
            _ = &mut deadline => return End::TimedOut,
            _ = &mut *interrupted => return End::Interrupted,
            _ = &mut hint, if !hinted => {
                hinted = true;
                if !any_status {
                    shown.say(&format!(
                        "{what} has no status after {}s: is the benchmatrix operator running, \
                         and watching this namespace? (kubectl get pods -A -l \
                         app.kubernetes.io/name=benchmatrix)",
                        NO_STATUS_HINT.as_secs()
                    ));
                }
            }
        }
    }
}

/// Leaves or deletes the run as `on_stop` says, and says which.
async fn stop(
    ours: &Ours,
    on_stop: OnStop,
    ask: Box<dyn FnOnce(String) -> BoxFuture<'static, bool> + Send>,
    display: &mut Display,
) {
    let (what, ns, name) = (ours.what(), &ours.namespace, &ours.name);
    let delete = match on_stop {
        OnStop::Keep => false,
        OnStop::Delete => true,
        OnStop::Ask => {
            ask(format!(
                "Delete {what} (its pods go with it)? Otherwise it runs on."
            ))
            .await
        }
    };
    if !delete {
        display.line(&format!(
            "left {what} on the cluster: follow it with `kubectl -n {ns} get benchmarkrun \
             {name} -w`, delete it with `kubectl -n {ns} delete benchmarkrun {name}`"
        ));
        return;
    }
    // In the background: nothing waits for it to be gone.
    let params = delete_params(&ours.uid, PropagationPolicy::Background);
    match ours.api.delete(name, &params).await {
        Ok(_) => display.line(&format!(
            "deleted {what}; the operator's objects go with it"
        )),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            display.line(&format!("{what} was already gone"));
        }
        Err(e) => display.line(&format!(
            "could not delete {what}: {}; delete it with `kubectl -n {ns} delete benchmarkrun \
             {name}`",
            api_error(&e)
        )),
    }
}

/// Writes status.yaml, report.md and the charts into `out` and prints the table, the gate's
/// verdict and the recommendation under the progress, as `benchmatrix run` does. A run that
/// never started a cell has no table: its message (why it was refused, or is still queued)
/// is already shown, as the follower shows every status without cells.
fn write_outputs(out: &Path, status: &BenchmarkRunStatus, notes: &Notes, display: &mut Display) {
    let status_path = out.join("status.yaml");
    if let Err(e) = report::write_status(out, status) {
        eprintln!("{COMMAND}: cannot write {}: {e}", status_path.display());
        return;
    }
    if status.cells.is_empty() {
        display.line(&format!("wrote {}", status_path.display()));
        return;
    }
    match report::write_report(out, status, &[], notes) {
        Ok(files) => {
            for line in report::finished_lines(status, out, files.len(), notes.max_regression) {
                display.line(&line);
            }
        }
        Err(e) => eprintln!("{COMMAND}: cannot write the report: {e}"),
    }
}
