//! `kubectl benchmatrix` against the faked API server. The runs are driven by the operator's
//! own reconciler (`executors::cluster::tests::Harness`) over the same fake, so the plugin
//! follows the statuses a real operator writes, through a watch that serves each change as an
//! event.

use crate::engine::verdict::exit;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};

use super::connect::{Cluster, Connection};
use super::logs::{self, LogsArgs, Role};
use super::run::{self, Console, OnStop, PluginRunArgs};
use super::runs::{self, PluginCompareArgs, PluginReportArgs};
use crate::executors::cluster::tests::fake::FakeApi;
use crate::executors::cluster::tests::{Behaviour, Harness, NS, healthy, sample, with_timeout};
use crate::frontends::compare::CompareOptions;
use crate::frontends::progress::Display;
use crate::resource::{CellPhase, RunPhase};

use crate::fixtures::Buffer;

/// The console of a test: plain lines into a buffer, an interrupt the test fires, and the
/// questions asked (answered with `answer`).
struct Screen {
    out: Buffer,
    interrupt: Option<futures::channel::oneshot::Sender<()>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Screen {
    fn new() -> Screen {
        Screen {
            out: Buffer::default(),
            interrupt: None,
            asked: Arc::default(),
        }
    }

    /// A console for one run; `tty` says whether stdin is a terminal, `answer` what the person
    /// answers.
    fn console(&mut self, tty: bool, answer: bool) -> Console {
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        self.interrupt = Some(tx);
        let out = self.out.clone();
        let asked = self.asked.clone();
        Console {
            display: Box::new(move |plan| Display::plain(plan, Box::new(out))),
            // A dropped sender is no interrupt.
            interrupted: async move {
                if rx.await.is_err() {
                    futures::future::pending::<()>().await;
                }
            }
            .boxed(),
            stdin_is_terminal: tty,
            ask: Box::new(move |question| {
                asked.lock().unwrap().push(question);
                async move { answer }.boxed()
            }),
        }
    }

    fn interrupt(&mut self) {
        if let Some(tx) = self.interrupt.take() {
            let _ = tx.send(());
        }
    }
}

/// A connection to the fake as a user; `-n` chose `namespace` when `from_flag`, else it is the
/// context's.
fn connection(fake: &FakeApi, namespace: &str, from_flag: bool) -> Connection {
    Connection::Ready(Cluster {
        client: fake.user_client(),
        namespace: namespace.into(),
        namespace_from_flag: from_flag,
        describe: "the fake API".into(),
    })
}

/// Writes `run` as a YAML file in `dir`.
fn run_file(dir: &Path, run: &Value) -> PathBuf {
    let p = dir.join("run.yaml");
    std::fs::write(&p, serde_yaml::to_string(run).unwrap()).unwrap();
    p
}

fn run_args(file: PathBuf, out: PathBuf) -> PluginRunArgs {
    PluginRunArgs {
        file,
        out,
        timeout: "1m".parse().unwrap(),
        keep: false,
        replace: false,
        base: None,
        candidate: None,
        gate: Default::default(),
        ci: Default::default(),
        dry_run: false,
    }
}

/// A run of cells a and b whose mixed/fast p99 (a 400 ms, b 20 ms with [`healthy`]) must be
/// below `limit`.
fn gated(name: &str, limit: &str) -> Value {
    let mut run = sample(name, &["a", "b"]);
    run["spec"]["thresholds"] =
        json!([{"phase": "mixed", "endpoint": "fast", "p99": {"below": limit}}]);
    run
}

/// Runs the plugin on `file` while the operator's reconciler drives the run it creates, each
/// cell behaving as `behaviour` says; returns the exit code and what was shown.
async fn run_with_operator(
    h: &Harness,
    args: PluginRunArgs,
    name: &str,
    behaviour: &dyn Fn(&str) -> Behaviour,
) -> (u8, String) {
    h.fake.serve_watch_events();
    let mut screen = Screen::new();
    let console = screen.console(false, false);
    let mut conn = connection(&h.fake, NS, false);
    let plugin = run::run(args, &mut conn, console);
    let operator = async {
        wait_for(|| h.fake.get("benchmarkruns", NS, name).is_some()).await;
        h.drive(name, behaviour).await;
    };
    let (code, ()) = tokio::join!(plugin, operator);
    (code, screen.out.text())
}

/// Waits (yielding to the run under test) until `cond` holds.
async fn wait_for(cond: impl Fn() -> bool) {
    while !cond() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn run_follows_the_operator_to_the_end_and_writes_what_benchmatrix_run_writes() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let file = run_file(dir.path(), &gated("gate", "1s"));
        let out = dir.path().join("out");
        let mut args = run_args(file, out.clone());
        args.ci.junit = Some(out.join("junit.xml"));
        args.ci.benchmark_json = Some(out.join("bench.json"));
        let (code, shown) = run_with_operator(&h, args, "gate", &healthy).await;
        assert_eq!(code, 0, "{shown}");

        // Created once, as written, then followed through one watch: no polling.
        let runs_created: Vec<String> = h
            .fake
            .creations()
            .into_iter()
            .filter(|(resource, _)| resource == "benchmarkruns")
            .map(|(_, name)| name)
            .collect();
        assert_eq!(runs_created, ["gate"]);
        let calls = h.fake.user_calls();
        assert_eq!(calls[0], "create benchmarkruns in bench", "{calls:#?}");
        assert!(
            calls[1..]
                .iter()
                .all(|c| c == "list benchmarkruns in bench" || c == "watch benchmarkruns in bench")
        );
        assert_eq!(
            calls.iter().filter(|c| c.starts_with("watch")).count(),
            1,
            "{calls:#?}"
        );

        // The local runner's progress: a line as each measurement starts, one per phase with
        // its figures, one as it ends; then the table, the gate and where the files went.
        let lines: Vec<&str> = shown.lines().collect();
        let at = |prefix: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{shown}"))
        };
        assert!(shown.starts_with("created benchmarkrun bench/gate (the fake API)\n"));
        let order = [
            at("[1/2] a | deploying"),
            at("[1/2] a | fast-only 5 s: fast 100.0 rps, p50 3.3 ms, p99 10.0 ms"),
            at("[1/2] a | mixed 5 s: fast 100.0 rps, p50 133.3 ms, p99 400.0 ms; slow 100.0 rps"),
            at("[1/2] a | done ("),
            at("[2/2] b | deploying"),
            at("[2/2] b | mixed 5 s: fast 100.0 rps, p50 6.7 ms, p99 20.0 ms"),
            at("[2/2] b | done ("),
            at("2 measurements in "),
            at("configuration "),
            at("thresholds: "),
            at("wrote "),
        ];
        assert!(order.is_sorted(), "out of order: {order:?}\n{shown}");
        assert!(
            shown.contains("mixed / fast\n"),
            "the comparison table: {shown}"
        );

        // --out holds what `benchmatrix run` writes: the status, report.md and the charts.
        let status = crate::frontends::report::parse_status(
            &std::fs::read_to_string(out.join("status.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(status.phase, RunPhase::Succeeded);
        assert_eq!(status.cells.len(), 2);
        assert!(status.cells.iter().all(|c| c.phase == CellPhase::Succeeded));
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains("as benchmarkrun bench/gate"), "{report}");
        assert!(
            std::fs::read_dir(&out).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".svg"))
        );
        // The CI files of `benchmatrix run`, named after the run on the cluster.
        let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
        assert!(
            junit.contains("<testsuites name=\"benchmatrix gate\""),
            "{junit}"
        );
        assert!(
            junit.contains("classname=\"gate.cells\" name=\"b\""),
            "{junit}"
        );
        let bigger = std::fs::read_to_string(out.join("bench.bigger.json")).unwrap();
        assert!(
            bigger.contains("\"name\": \"mixed/fast b rps\""),
            "{bigger}"
        );
        assert!(shown.contains(&format!("wrote {}", out.join("junit.xml").display())));
    })
    .await;
}

/// `--dry-run`: the operator's checks, then the create sent as a server-side dry run
/// (dryRun=All): nothing is stored, nothing is followed, no --out is left; a run the operator
/// would refuse is refused before the cluster is asked.
#[tokio::test]
async fn a_dry_run_is_checked_by_the_operator_s_rules_and_the_api_server_and_creates_nothing() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut args = run_args(run_file(dir.path(), &gated("dry", "1s")), out.clone());
        args.dry_run = true;
        let mut screen = Screen::new();
        let code = run::run(
            args,
            &mut connection(&h.fake, NS, false),
            screen.console(false, false),
        )
        .await;
        assert_eq!(code, exit::SUCCESS);
        assert_eq!(
            h.fake.dry_runs(),
            [("benchmarkruns".to_owned(), "dry".to_owned())]
        );
        assert!(h.fake.get("benchmarkruns", NS, "dry").is_none());
        assert!(h.fake.creations().is_empty());
        assert_eq!(h.fake.user_calls(), ["create benchmarkruns in bench"]);
        assert!(!out.exists(), "a dry run leaves no --out behind");

        // The operator's own validation refuses first: the cluster is never asked.
        let mut bad = gated("bad", "1s");
        bad["spec"]["configurations"][0]["replicas"] = json!(500);
        let mut args = run_args(run_file(dir.path(), &bad), out.clone());
        args.dry_run = true;
        let code = run::run(
            args,
            &mut connection(&h.fake, NS, false),
            screen.console(false, false),
        )
        .await;
        assert_eq!(code, exit::BAD_INPUT);
        assert_eq!(h.fake.dry_runs().len(), 1);
    })
    .await;
}

/// `--base IMAGE --candidate IMAGE`: the run is created with those two variants, a cell each,
/// the status compares them, and the gate over identical figures passes.
#[tokio::test]
async fn base_and_candidate_images_run_as_variants_of_one_run() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let file = run_file(dir.path(), &sample("pair", &["b"]));
        let mut args = run_args(file, dir.path().join("out"));
        args.base = Some("app:main".into());
        args.candidate = Some("app:pr-7".into());
        args.gate.max_regression = Some(5.0);
        let (code, shown) = run_with_operator(&h, args, "pair", &healthy).await;
        assert_eq!(code, 0, "{shown}");
        let created = h.fake.get("benchmarkruns", NS, "pair").unwrap();
        assert_eq!(
            created["spec"]["variants"],
            json!([{"name": "base", "image": "app:main"}, {"name": "candidate", "image": "app:pr-7"}])
        );
        // The images themselves reach the Deployments as cluster::children::build's tests show.
        let st = &h.fake.get("benchmarkruns", NS, "pair").unwrap()["status"];
        let cells: Vec<&str> = st["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(cells, ["b-base", "b-candidate"]);
        assert_eq!(st["variants"][0]["candidate"], "candidate", "{st}");
        assert!(shown.contains("variants (candidate / base, paired rounds):"), "{shown}");
        assert!(
            shown.contains("no candidate regressed beyond 5% (--max-regression)"),
            "{shown}"
        );
        let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
        assert!(md.contains("## Variants"), "{md}");
    })
    .await;
}

#[tokio::test]
async fn a_failed_threshold_exits_3_and_a_failed_cell_exits_1() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let file = run_file(dir.path(), &gated("strict", "1ms"));
        let (code, shown) = run_with_operator(
            &h,
            run_args(file, dir.path().join("strict")),
            "strict",
            &healthy,
        )
        .await;
        assert_eq!(code, 3, "{shown}");
        assert!(shown.contains("thresholds: "), "{shown}");

        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let file = run_file(dir.path(), &sample("flaky", &["a", "b"]));
        let fails_b = |cell: &str| {
            if cell == "b" {
                Behaviour::JobFails("loadgen: connection refused".into())
            } else {
                healthy(cell)
            }
        };
        let (code, shown) = run_with_operator(
            &h,
            run_args(file, dir.path().join("flaky")),
            "flaky",
            &fails_b,
        )
        .await;
        assert_eq!(code, 1, "{shown}");
        assert!(
            shown.contains("[2/2] b | FAILED (LoadgenFailed): "),
            "{shown}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_run_the_operator_refuses_exits_2_and_says_why_once() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        // Valid to the plugin's checks; the operator refuses the image reference.
        let mut refused = sample("refused", &["a"]);
        refused["spec"]["target"] = json!({"image": "ghcr.io/benchmatrix/../evil/x:1"});
        let file = run_file(dir.path(), &refused);
        let out = dir.path().join("o");
        let (code, shown) =
            run_with_operator(&h, run_args(file, out.clone()), "refused", &healthy).await;
        assert_eq!(
            code,
            crate::engine::verdict::outcome::Outcome::Refused.code(),
            "{shown}"
        );
        assert_eq!(code, 2);

        let status = crate::frontends::report::parse_status(
            &std::fs::read_to_string(out.join("status.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        assert!(status.cells.is_empty(), "{status:#?}");
        let message = status.message.expect("the refusal's message");
        assert!(message.contains("invalid image reference"), "{message}");
        assert_eq!(shown.matches(message.as_str()).count(), 1, "{shown}");
        assert!(shown.contains("wrote "), "{shown}");
    })
    .await;
}

#[tokio::test]
async fn repetitions_are_numbered_as_the_local_runner_numbers_them() {
    with_timeout(async {
        let h = Harness::new();
        let dir = tempfile::tempdir().unwrap();
        let mut twice = sample("twice", &["a", "b"]);
        twice["spec"]["repeat"] = json!(2);
        let file = run_file(dir.path(), &twice);
        let (code, shown) =
            run_with_operator(&h, run_args(file, dir.path().join("o")), "twice", &healthy).await;
        assert_eq!(code, 0, "{shown}");
        let ends: Vec<&str> = shown
            .lines()
            .filter(|l| l.contains(" | done ("))
            .map(|l| l.split(" | ").next().unwrap())
            .collect();
        assert_eq!(
            ends,
            [
                "[1/4] a rep 1/2",
                "[2/4] b rep 1/2",
                "[3/4] a rep 2/2",
                "[4/4] b rep 2/2"
            ],
            "{shown}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_bad_file_or_out_exits_2_and_nothing_is_asked_of_the_cluster() {
    with_timeout(async {
        let fake = FakeApi::default();
        let dir = tempfile::tempdir().unwrap();
        let duplicate = sample("bad", &["a", "a"]);
        let mut nameless = sample("x", &["a"]);
        nameless["metadata"].as_object_mut().unwrap().remove("name");
        let mut misspelt = sample("typo", &["a"]);
        misspelt["spec"]["workload"]["warmpu"] = json!("1s");
        let not_a_folder = dir.path().join("a-file");
        std::fs::write(&not_a_folder, "x").unwrap();
        let cases = [
            (duplicate, dir.path().join("o1")),
            (nameless, dir.path().join("o2")),
            (misspelt, dir.path().join("o3")),
            (sample("fine", &["a"]), not_a_folder),
        ];
        for (run, out) in cases {
            let file = run_file(dir.path(), &run);
            let mut screen = Screen::new();
            let code = run::run(
                run_args(file, out),
                &mut connection(&fake, NS, false),
                screen.console(false, false),
            )
            .await;
            assert_eq!(code, 2, "{run:#}");
        }
        let missing = run::run(
            run_args(dir.path().join("missing.yaml"), dir.path().join("o4")),
            &mut connection(&fake, NS, false),
            Screen::new().console(false, false),
        )
        .await;
        assert_eq!(missing, 2);
        assert_eq!(fake.user_calls(), Vec::<String>::new());
    })
    .await;
}

/// Starts the plugin on `run` in the fake's `conn`, interrupts it as soon as the run exists
/// (with --keep, so it stays), and returns the exit code.
async fn create_and_interrupt(fake: &FakeApi, run: &Value, mut conn: Connection, ns: &str) -> u8 {
    let dir = tempfile::tempdir().unwrap();
    let name = run["metadata"]["name"].as_str().unwrap().to_owned();
    let mut args = run_args(run_file(dir.path(), run), dir.path().join("o"));
    args.keep = true;
    let mut screen = Screen::new();
    let console = screen.console(false, false);
    let plugin = run::run(args, &mut conn, console);
    let interrupter = async {
        wait_for(|| fake.get("benchmarkruns", ns, &name).is_some()).await;
        screen.interrupt();
    };
    let (code, ()) = tokio::join!(plugin, interrupter);
    code
}

#[tokio::test]
async fn the_namespace_is_dash_n_else_the_files_else_the_contexts() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        let unplaced = |name: &str| {
            let mut run = sample(name, &["a"]);
            run["metadata"].as_object_mut().unwrap().remove("namespace");
            run
        };
        let placed = |name: &str| {
            let mut run = sample(name, &["a"]);
            run["metadata"]["namespace"] = json!("from-file");
            run
        };
        let code = create_and_interrupt(
            &fake,
            &unplaced("flag"),
            connection(&fake, "team-a", true),
            "team-a",
        )
        .await;
        assert_eq!(code, 130);
        let code = create_and_interrupt(
            &fake,
            &placed("file"),
            connection(&fake, "ctx-ns", false),
            "from-file",
        )
        .await;
        assert_eq!(code, 130);
        let code = create_and_interrupt(
            &fake,
            &unplaced("context"),
            connection(&fake, "ctx-ns", false),
            "ctx-ns",
        )
        .await;
        assert_eq!(code, 130);
        let created: Vec<String> = fake
            .list("benchmarkruns")
            .iter()
            .map(|r| {
                format!(
                    "{}/{}",
                    r["metadata"]["namespace"].as_str().unwrap(),
                    r["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(created, ["ctx-ns/context", "from-file/file", "team-a/flag"]);
        // A file in one namespace and -n naming another: refused, as kubectl refuses it.
        let dir = tempfile::tempdir().unwrap();
        let code = run::run(
            run_args(run_file(dir.path(), &placed("clash")), dir.path().join("o")),
            &mut connection(&fake, "team-a", true),
            Screen::new().console(false, false),
        )
        .await;
        assert_eq!(code, 2);
        assert!(fake.list("benchmarkruns").len() == 3);
    })
    .await;
}

/// Creates `name` with the plugin, interrupts it once it exists, and says whether the run is
/// still on the cluster; the questions asked come back too.
async fn interrupted(keep: bool, tty: bool, answer: bool) -> (u8, bool, Vec<String>) {
    let fake = FakeApi::default();
    fake.serve_watch_events();
    let dir = tempfile::tempdir().unwrap();
    let mut args = run_args(
        run_file(dir.path(), &sample("stop", &["a"])),
        dir.path().join("o"),
    );
    args.keep = keep;
    let mut screen = Screen::new();
    let console = screen.console(tty, answer);
    let mut conn = connection(&fake, NS, false);
    let plugin = run::run(args, &mut conn, console);
    let interrupter = async {
        wait_for(|| fake.get("benchmarkruns", NS, "stop").is_some()).await;
        screen.interrupt();
    };
    let (code, ()) = tokio::join!(plugin, interrupter);
    let asked = screen.asked.lock().unwrap().clone();
    (code, fake.get("benchmarkruns", NS, "stop").is_some(), asked)
}

#[tokio::test]
async fn ctrl_c_deletes_the_run_unless_kept_and_asks_at_a_terminal() {
    with_timeout(async {
        // A CI job cancelled: nobody to ask, the load must not run on.
        assert_eq!(interrupted(false, false, false).await, (130, false, vec![]));
        // --keep: left, nobody asked.
        assert_eq!(interrupted(true, true, true).await, (130, true, vec![]));
        // At a terminal: asked; "no" leaves it, "yes" deletes it.
        let (code, exists, asked) = interrupted(false, true, false).await;
        assert_eq!((code, exists), (130, true));
        assert_eq!(asked.len(), 1);
        assert!(
            asked[0].starts_with("Delete benchmarkrun bench/stop"),
            "{asked:?}"
        );
        assert!(!interrupted(false, true, true).await.1);
    })
    .await;
}

#[test]
fn what_stops_a_run_on_an_interrupt_or_a_timeout() {
    assert_eq!(OnStop::on_interrupt(false, false), OnStop::Delete);
    assert_eq!(OnStop::on_interrupt(false, true), OnStop::Ask);
    assert_eq!(OnStop::on_interrupt(true, true), OnStop::Keep);
    assert_eq!(OnStop::on_interrupt(true, false), OnStop::Keep);
    assert_eq!(OnStop::on_timeout(false), OnStop::Delete);
    assert_eq!(OnStop::on_timeout(true), OnStop::Keep);
}

#[tokio::test]
async fn a_timeout_exits_4_and_deletes_the_run_unless_kept() {
    with_timeout(async {
        for keep in [false, true] {
            // No operator: the run never moves.
            let fake = FakeApi::default();
            fake.serve_watch_events();
            let dir = tempfile::tempdir().unwrap();
            let mut args = run_args(
                run_file(dir.path(), &sample("slow", &["a"])),
                dir.path().join("o"),
            );
            args.timeout = "1s".parse().unwrap();
            args.keep = keep;
            let mut screen = Screen::new();
            let code = run::run(
                args,
                &mut connection(&fake, NS, false),
                screen.console(true, true),
            )
            .await;
            let shown = screen.out.text();
            assert_eq!(code, exit::TIMEOUT, "{shown}");
            assert!(
                shown.contains("timed out: benchmarkrun bench/slow did not finish within 1s"),
                "{shown}"
            );
            assert_eq!(fake.get("benchmarkruns", NS, "slow").is_some(), keep);
            // A timeout asks nobody, even at a terminal.
            assert!(screen.asked.lock().unwrap().is_empty());
            // What there was is written all the same.
            assert!(dir.path().join("o/status.yaml").is_file());
        }
    })
    .await;
}

#[tokio::test]
async fn an_existing_run_is_refused_unless_replace_deletes_it_first() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        fake.insert("benchmarkruns", sample("taken", &["a"]));
        let old_uid = fake.get("benchmarkruns", NS, "taken").unwrap()["metadata"]["uid"].clone();
        let dir = tempfile::tempdir().unwrap();
        let file = run_file(dir.path(), &sample("taken", &["a"]));
        let code = run::run(
            run_args(file.clone(), dir.path().join("o")),
            &mut connection(&fake, NS, false),
            Screen::new().console(false, false),
        )
        .await;
        assert_eq!(code, 2);
        assert_eq!(
            fake.get("benchmarkruns", NS, "taken").unwrap()["metadata"]["uid"],
            old_uid
        );

        let mut args = run_args(file, dir.path().join("o"));
        args.replace = true;
        args.keep = true;
        let mut screen = Screen::new();
        let console = screen.console(false, false);
        let mut conn = connection(&fake, NS, false);
        let plugin = run::run(args, &mut conn, console);
        let interrupter = async {
            wait_for(|| {
                fake.get("benchmarkruns", NS, "taken")
                    .is_some_and(|r| r["metadata"]["uid"] != old_uid)
            })
            .await;
            screen.interrupt();
        };
        let (code, ()) = tokio::join!(plugin, interrupter);
        assert_eq!(code, 130);
        let calls = fake.user_calls();
        let delete = calls
            .iter()
            .position(|c| c == "delete benchmarkruns/taken in bench");
        let create = calls
            .iter()
            .rposition(|c| c == "create benchmarkruns in bench");
        assert!(delete.is_some() && delete < create, "{calls:#?}");
    })
    .await;
}

#[tokio::test]
async fn a_run_deleted_by_someone_else_ends_the_follow_with_5() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        let dir = tempfile::tempdir().unwrap();
        let args = run_args(
            run_file(dir.path(), &sample("gone", &["a"])),
            dir.path().join("o"),
        );
        let mut screen = Screen::new();
        let console = screen.console(false, false);
        let mut conn = connection(&fake, NS, false);
        let plugin = run::run(args, &mut conn, console);
        let someone = async {
            wait_for(|| fake.get("benchmarkruns", NS, "gone").is_some()).await;
            // Let the watch start before the deletion, as it would on a cluster.
            wait_for(|| fake.open_watches() > 0).await;
            fake.remove("benchmarkruns", NS, "gone");
        };
        let (code, ()) = tokio::join!(plugin, someone);
        assert_eq!(code, exit::CLUSTER, "{}", screen.out.text());
        assert!(screen.out.text().contains("was deleted before it finished"));
    })
    .await;
}

/// A pod of run `run` (UID `uid`), cell `cell`, repetition `repetition`, role `role`, with its
/// log.
fn pod(
    fake: &FakeApi,
    (run, uid): (&str, &str),
    cell: &str,
    repetition: u32,
    role: &str,
) -> String {
    let name = format!("{run}-{uid}-{cell}-r{repetition}-{role}");
    let labels = json!({
        "benchmatrix.dev/run": run,
        "benchmatrix.dev/run-uid": uid,
        "benchmatrix.dev/cell": cell,
        "benchmatrix.dev/repetition": repetition.to_string(),
        "benchmatrix.dev/role": role,
        "app.kubernetes.io/managed-by": "benchmatrix",
    });
    fake.insert(
        "pods",
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"containers": [{"name": role}]},
        }),
    );
    fake.set_log(NS, &name, &format!("log of {name}\n"));
    name
}

fn logs_args(name: &str) -> LogsArgs {
    LogsArgs {
        name: name.into(),
        cell: None,
        repetition: None,
        role: None,
    }
}

async fn logs_of(fake: &FakeApi, args: &LogsArgs) -> (std::process::ExitCode, String) {
    let Connection::Ready(cluster) = connection(fake, NS, false) else {
        unreachable!()
    };
    let mut out = Vec::new();
    let code = logs::logs(&cluster, args, &mut out).await;
    (code, String::from_utf8(out).unwrap())
}

#[tokio::test]
async fn logs_select_a_runs_pods_by_its_labels() {
    with_timeout(async {
        let fake = FakeApi::default();
        let mut run = sample("demo", &["a", "b"]);
        run["status"] = json!({"phase": "Running", "cells": [{"name": "a"}, {"name": "b"}]});
        fake.insert("benchmarkruns", run);
        let uid = fake.get("benchmarkruns", NS, "demo").unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let demo = ("demo", uid.as_str());
        for (cell, rep) in [("a", 1), ("a", 2), ("b", 1), ("b", 2)] {
            pod(&fake, demo, cell, rep, "target");
            pod(&fake, demo, cell, rep, "loadgen");
        }
        pod(&fake, ("other", "u-9"), "a", 1, "target");
        // What an earlier run of the same name left behind: not this run's.
        pod(&fake, ("demo", "u-old"), "b", 2, "loadgen");

        let mut args = logs_args("demo");
        args.cell = Some("b".into());
        args.repetition = Some(2);
        args.role = Some(Role::Loadgen);
        let (code, out) = logs_of(&fake, &args).await;
        assert_eq!(code, std::process::ExitCode::SUCCESS);
        assert_eq!(
            out,
            format!(
                "==> pod/demo-{uid}-b-r2-loadgen container/loadgen (cell b, repetition 2, \
                 loadgen) <==\nlog of demo-{uid}-b-r2-loadgen\n\n"
            )
        );

        // The first repetition's pods.
        let mut args = logs_args("demo");
        args.repetition = Some(1);
        let (_, out) = logs_of(&fake, &args).await;
        let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("==>")).collect();
        assert_eq!(heads.len(), 4, "{out}");
        assert!(heads[0].starts_with(&format!("==> pod/demo-{uid}-a-r1-target container/target")));
        assert!(heads[1].starts_with(&format!("==> pod/demo-{uid}-a-r1-loadgen")));
        assert!(heads[2].starts_with(&format!("==> pod/demo-{uid}-b-r1-target")));
        assert!(!out.contains("other-"), "another run's pod: {out}");

        // Every pod of the run, cells in order, targets first; none of the earlier run's.
        let (_, out) = logs_of(&fake, &logs_args("demo")).await;
        assert_eq!(out.matches("==> pod/demo-").count(), 8);
        assert!(!out.contains("u-old"), "an earlier run's pod: {out}");
    })
    .await;
}

#[tokio::test]
async fn logs_say_why_there_is_nothing_to_show() {
    with_timeout(async {
        let fake = FakeApi::default();
        let mut run = sample("done", &["a"]);
        run["status"] = json!({"phase": "Succeeded", "cells": [{"name": "a"}]});
        fake.insert("benchmarkruns", run);
        let (code, out) = logs_of(&fake, &logs_args("done")).await;
        assert_eq!(code, std::process::ExitCode::from(exit::FAILED));
        assert!(out.is_empty());
        let mut args = logs_args("done");
        args.cell = Some("zz".into());
        assert_eq!(
            logs_of(&fake, &args).await.0,
            std::process::ExitCode::from(exit::BAD_INPUT)
        );
        assert_eq!(
            logs_of(&fake, &logs_args("nope")).await.0,
            std::process::ExitCode::from(exit::BAD_INPUT)
        );
    })
    .await;
}

#[test]
fn the_selector_names_the_operators_labels() {
    let mut args = logs_args("demo");
    assert_eq!(
        logs::selector(&args, "u-1"),
        "benchmatrix.dev/run=demo,benchmatrix.dev/run-uid=u-1"
    );
    args.cell = Some("b".into());
    args.repetition = Some(1);
    args.role = Some(Role::Target);
    assert_eq!(
        logs::selector(&args, "u-1"),
        "benchmatrix.dev/run=demo,benchmatrix.dev/run-uid=u-1,benchmatrix.dev/cell=b,\
         benchmatrix.dev/repetition=1,benchmatrix.dev/role=target"
    );
    args.repetition = Some(3);
    assert!(logs::selector(&args, "u-1").contains(",benchmatrix.dev/repetition=3,"));
}

#[tokio::test]
async fn report_and_compare_read_runs_from_the_cluster_and_from_files() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("main", &["a", "b"]));
        h.drive("main", &healthy).await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("main-report");

        // report NAME: the report, and the status beside it for later comparisons.
        let code = runs::report(
            PluginReportArgs {
                run: "main".into(),
                out: Some(out.clone()),
            },
            &mut connection(&h.fake, NS, false),
        )
        .await;
        assert_eq!(code, std::process::ExitCode::SUCCESS);
        assert!(out.join("report.md").is_file());
        let saved = out.join("status.yaml");
        let status =
            crate::frontends::report::parse_status(&std::fs::read_to_string(&saved).unwrap())
                .unwrap();
        assert_eq!(status.cells.len(), 2);

        // compare FILE NAME: the same figures, no regression.
        let compare = |base: String, new: String, out: Option<PathBuf>| PluginCompareArgs {
            base,
            new: Some(new),
            options: CompareOptions {
                out,
                max_regression: 0.0,
                min_change: 5.0,
            },
        };
        let saved_arg = saved.display().to_string();
        let cmp_out = dir.path().join("cmp");
        let code = runs::compare(
            compare(saved_arg.clone(), "main".into(), Some(cmp_out.clone())),
            &mut connection(&h.fake, NS, false),
        )
        .await;
        assert_eq!(code, std::process::ExitCode::SUCCESS);
        let md = std::fs::read_to_string(cmp_out.join("compare.md")).unwrap();
        assert!(md.contains("- new: `benchmarkrun bench/main`"), "{md}");

        // A baseline twice as fast: the run on the cluster regressed.
        let mut faster = status.clone();
        for c in &mut faster.cells {
            for r in &mut c.results {
                if let Some(l) = &mut r.latency_ms {
                    l.p50 /= 2.0;
                    l.p99 /= 2.0;
                }
            }
        }
        let base = dir.path().join("faster.yaml");
        std::fs::write(&base, serde_yaml::to_string(&faster).unwrap()).unwrap();
        let code = runs::compare(
            compare(base.display().to_string(), "main".into(), None),
            &mut connection(&h.fake, NS, false),
        )
        .await;
        assert_eq!(code, std::process::ExitCode::from(3));

        // Neither a file nor a run: bad input.
        for missing in ["nope", "no/such/status.yaml", "status.yaml"] {
            let code = runs::compare(
                compare(saved_arg.clone(), missing.into(), None),
                &mut connection(&h.fake, NS, false),
            )
            .await;
            assert_eq!(code, std::process::ExitCode::from(2), "{missing}");
        }
    })
    .await;
}

#[tokio::test]
async fn report_and_compare_exit_5_when_the_cluster_cannot_be_asked() {
    with_timeout(async {
        let dir = tempfile::tempdir().unwrap();
        let report_args = |run: &str| PluginReportArgs {
            run: run.into(),
            out: Some(dir.path().join("out")),
        };
        let compare_args = |base: &str, new: &str| PluginCompareArgs {
            base: base.into(),
            new: Some(new.into()),
            options: CompareOptions {
                out: None,
                max_regression: 0.0,
                min_change: 5.0,
            },
        };
        let cluster = std::process::ExitCode::from(exit::CLUSTER);

        // The API server refuses (RBAC) or fails: the cluster's trouble, not bad input.
        let fake = FakeApi::default();
        fake.insert("benchmarkruns", sample("main", &["a"]));
        fake.fail_next("GET", "benchmarkruns", 403);
        let code = runs::report(report_args("main"), &mut connection(&fake, NS, false)).await;
        assert_eq!(code, cluster);
        fake.fail_next("GET", "benchmarkruns", 500);
        let code = runs::compare(
            compare_args("main", "main"),
            &mut connection(&fake, NS, false),
        )
        .await;
        assert_eq!(code, cluster);
        // Once it answers, a run that is not there is bad input still.
        let code = runs::report(report_args("nope"), &mut connection(&fake, NS, false)).await;
        assert_eq!(code, std::process::ExitCode::from(exit::BAD_INPUT));

        // No API server at all: a kubeconfig whose server refuses the connection.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: gone\nclusters:\n- name: gone\n  \
                 cluster: {{server: \"http://127.0.0.1:{port}\"}}\nusers:\n- name: u\n  user: \
                 {{token: t}}\ncontexts:\n- name: gone\n  context: {{cluster: gone, user: u}}\n"
            ),
        )
        .unwrap();
        let unreachable = || {
            Connection::Pending(
                super::connect::ConnectionArgs {
                    kubeconfig: Some(kubeconfig.clone()),
                    ..Default::default()
                },
                super::connect::Environment::default(),
            )
        };
        let code = runs::report(report_args("main"), &mut unreachable()).await;
        assert_eq!(code, cluster);
        let code = runs::compare(compare_args("main", "other"), &mut unreachable()).await;
        assert_eq!(code, cluster);
        // A file that is not there needs no cluster: bad input, whatever the cluster.
        let code = runs::report(report_args("no/such/status.yaml"), &mut unreachable()).await;
        assert_eq!(code, std::process::ExitCode::from(exit::BAD_INPUT));
    })
    .await;
}

#[test]
fn the_plugin_answers_to_its_name_and_takes_the_actions_spellings() {
    assert!(super::is_plugin("kubectl-benchmatrix".as_ref()));
    assert!(super::is_plugin(
        "/home/me/.krew/bin/kubectl-benchmatrix".as_ref()
    ));
    assert!(!super::is_plugin("benchmatrix".as_ref()));
    assert!(!super::is_plugin(
        "/usr/bin/kubectl-benchmatrix-old".as_ref()
    ));
    use clap::Parser;
    // As the GitHub Action calls it.
    for line in [
        "kubectl-benchmatrix run spec.yaml --out out --timeout 20m",
        "kubectl-benchmatrix compare base.yaml out/status.yaml --max-regression 10 --out out/compare",
        "kubectl-benchmatrix -n bench --context kind-ci logs demo --cell a --repetition 2 --role loadgen",
        "kubectl-benchmatrix report demo --kubeconfig /tmp/k -n bench",
    ] {
        let parsed = super::PluginCli::try_parse_from(line.split(' '));
        assert!(parsed.is_ok(), "{line}: {}", parsed.unwrap_err());
    }
    let bad =
        super::PluginCli::try_parse_from(["kubectl-benchmatrix", "run", "f", "--timeout", "10"]);
    assert!(bad.unwrap_err().to_string().contains("missing unit"));
    // Through the binary's own name, too; files that are not there need no cluster.
    for files in [["no/base.yaml", "no/new.yaml"], ["base.yaml", "new.yml"]] {
        let code = crate::cli::main(
            ["benchmatrix", "kubectl", "compare", files[0], files[1]]
                .map(std::ffi::OsString::from)
                .to_vec(),
        );
        assert_eq!(code, std::process::ExitCode::from(2), "{files:?}");
    }
}

/// Every saved status of `operator/tests/fixtures/verdicts/` (one per way a run can end), with
/// the exit code its verdict gives and whether it is a sizing (`size` refuses any other kind).
const VERDICTS: &[(&str, u8, bool)] = &[
    ("fixed-pass", exit::SUCCESS, false),
    ("fixed-fail", exit::GATE_FAILED, false),
    ("fixed-cell-failed", exit::FAILED, false),
    ("capacity-found", exit::SUCCESS, false),
    ("capacity-held-at-upper-bound", exit::FAILED, false),
    ("capacity-failed-at-start", exit::FAILED, false),
    ("capacity-older-operator", exit::FAILED, false),
    ("sizing-chosen", exit::SUCCESS, true),
    ("sizing-nothing-holds", exit::FAILED, true),
    ("sizing-out-of-budget", exit::FAILED, true),
];

/// The saved status `name` of [`VERDICTS`].
fn saved_verdict(name: &str) -> crate::resource::BenchmarkRunStatus {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/verdicts")
        .join(format!("{name}.yaml"));
    crate::frontends::report::read_status_file(&path).unwrap()
}

/// `benchmatrix run` and `kubectl benchmatrix run` end through `variants::finish` once the
/// status has ended (executors/local/mod.rs, kubectl/run.rs); `benchmatrix size` prints a
/// saved status through `size::print`, and `kubectl benchmatrix size` reads the run from the
/// cluster first. For the same status all four give the table's code; `size` of a status that
/// is no sizing is bad input.
#[tokio::test]
async fn every_command_gives_one_exit_code_per_status() {
    with_timeout(async {
        let manifests = crate::frontends::size::ManifestArgs {
            manifests: None,
            deployment: "my-service".into(),
            container: "app".into(),
        };
        for &(name, code, is_sizing) in VERDICTS {
            let status = saved_verdict(name);
            let run = crate::frontends::variants::finish(&status, &Default::default(), |_| {});
            let size = crate::frontends::size::print(&status, &manifests, "benchmatrix size");
            let h = Harness::new();
            let mut object = sample(name, &["a"]);
            object["status"] = serde_json::to_value(&status).unwrap();
            h.fake.insert("benchmarkruns", object);
            let plugin_size = runs::size(
                runs::PluginSizeArgs {
                    run: name.into(),
                    manifests: manifests.clone(),
                },
                &mut connection(&h.fake, NS, false),
            )
            .await;
            let size_code = if is_sizing { code } else { exit::BAD_INPUT };
            assert_eq!(
                run, code,
                "benchmatrix run / kubectl benchmatrix run: {name}"
            );
            assert_eq!(size, size_code, "benchmatrix size: {name}");
            assert_eq!(
                plugin_size,
                std::process::ExitCode::from(size_code),
                "kubectl benchmatrix size: {name}"
            );
        }
    })
    .await;
}
