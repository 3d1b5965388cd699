//! `benchmatrix run` never calls a broken measurement a success: a replica killed during a
//! phase fails its cell, a run where no cell was measured fails, and the runner's children
//! do not outlive it, whether it is interrupted or killed.

mod local_common;

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use benchmatrix::resource::{Configuration, Mode};
use local_common::{
    alive, cell, cmdline, descendants_of, exe, figures, parent_of, quickstart, run, runner_log,
    spawn_run, status, text, wait_for,
};

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// The Complete condition's reason in a status.
fn complete_reason(st: &serde_yaml::Value) -> Option<String> {
    st["conditions"]
        .as_sequence()?
        .iter()
        .find(|c| c["type"].as_str() == Some("Complete"))?["reason"]
        .as_str()
        .map(String::from)
}

/// Every process on this machine whose environment holds `tag` (a unique NAME=VALUE given to
/// the replicas): the ground truth of what is left, wherever it was reparented.
fn tagged_processes(tag: &str) -> Vec<u32> {
    let needle = tag.as_bytes();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle))
                .unwrap_or(false)
        })
        .filter(|&p| alive(p))
        .collect()
}

/// The port the runner announced for its current cell ("..., port 41234").
fn announced_port(dir: &Path) -> Option<u16> {
    let log = runner_log(dir);
    let at = log.rfind(", port ")?;
    log[at + 7..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// The `kill -9` of the issue: one replica of the first cell dies during a phase. Its cell
/// fails with ReplicaExited naming the signal, its load generator is stopped at once, the
/// next cell still runs and is measured, and the run exits 1.
#[test]
fn a_replica_killed_mid_phase_fails_its_cell_and_the_next_cell_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = quickstart("0s", "1s", "4s")
        .with_cell(Configuration::named("victim").replicas(2))
        .with_cell(Configuration::named("survivor"))
        .to_yaml();
    let (mut child, out) = spawn_run(dir.path(), &yaml);
    let runner = child.id();
    let (loadgen, replica) = wait_for(Duration::from_secs(30), "the first cell's load", || {
        let d = descendants_of(runner);
        let lg = *d.iter().find(|&&p| cmdline(p).contains(" loadgen "))?;
        let tg = *d.iter().find(|&&p| cmdline(p).contains(" target "))?;
        Some((lg, tg))
    });
    // A second into the load (the end of fast-only), 4 s of load still to go.
    std::thread::sleep(Duration::from_millis(1000));
    kill(replica, libc::SIGKILL);
    let killed = Instant::now();
    wait_for(
        Duration::from_millis(1500),
        "the load generator stopped after the replica died",
        || (!alive(loadgen)).then_some(()),
    );
    let stopped_after = killed.elapsed();
    let code = child.wait().unwrap().code();
    let log = runner_log(dir.path());
    assert_eq!(code, Some(1), "{log}");

    let st = status(&out);
    let victim = cell(&st, "victim");
    assert_eq!(
        victim["phase"].as_str(),
        Some("Failed"),
        "{victim:?}\n{log}"
    );
    assert_eq!(
        victim["reason"].as_str(),
        Some("ReplicaExited"),
        "{victim:?}"
    );
    let message = victim["message"].as_str().unwrap();
    assert!(
        message.contains("SIGKILL") && message.contains(&replica.to_string()),
        "the message names the signal and the pid: {message}"
    );
    let survivor = cell(&st, "survivor");
    assert_eq!(survivor["phase"].as_str(), Some("Succeeded"), "{log}");
    figures(survivor, "mixed", "fast");
    assert!(
        !st["message"]
            .as_str()
            .unwrap_or("")
            .contains("all 2 cells measured"),
        "{st:?}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Failed (ReplicaExited)"), "{md}");
    eprintln!("load generator gone {stopped_after:?} after the SIGKILL; the cell: {message}");
}

/// A custom command that is a shell around the server: the server dies, the shell lives on.
/// The cell still fails with ReplicaExited naming the server's pid, and nothing of the
/// replica (the shell, what it started afterwards) outlives the run.
#[test]
fn a_shell_wrappers_server_child_killed_mid_phase_fails_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{} target &\nchild=$!\ntrap '' TERM\nwait $child\nsleep 30\n",
            exe().display()
        ),
    )
    .unwrap();
    let tag = format!("BENCH_TEST_TAG=wrapper-{}", std::process::id());
    let (name, value) = tag.split_once('=').unwrap();
    let yaml = quickstart("0s", "1s", "4s")
        .with_target_command(["sh", &wrapper.display().to_string()])
        .with_cell(Configuration::named("wrapped").env(name, value))
        .to_yaml();
    let (mut child, out) = spawn_run(dir.path(), &yaml);
    let runner = child.id();
    let server = wait_for(
        Duration::from_secs(30),
        "the wrapped server under load",
        || {
            let d = descendants_of(runner);
            d.iter().find(|&&p| cmdline(p).contains(" loadgen "))?;
            d.iter()
                .copied()
                .find(|&p| cmdline(p).ends_with(" target") && parent_of(p) != Some(runner))
        },
    );
    std::thread::sleep(Duration::from_millis(1000));
    kill(server, libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(300));
    let left_behind = tagged_processes(&tag);
    assert!(
        !left_behind.is_empty(),
        "the shell lives on after its server died"
    );
    let code = child.wait().unwrap().code();
    let log = runner_log(dir.path());
    assert_eq!(code, Some(1), "{log}");
    let st = status(&out);
    let c = cell(&st, "wrapped");
    assert_eq!(c["phase"].as_str(), Some("Failed"), "{c:?}\n{log}");
    assert_eq!(c["reason"].as_str(), Some("ReplicaExited"), "{c:?}");
    let message = c["message"].as_str().unwrap();
    assert!(message.contains(&server.to_string()), "{message}");
    assert_eq!(st["phase"].as_str(), Some("Failed"));
    assert_eq!(complete_reason(&st).as_deref(), Some("NoCellMeasured"));
    std::thread::sleep(Duration::from_millis(200));
    let survivors = tagged_processes(&tag);
    assert!(
        survivors.is_empty(),
        "outlived the run: {:?}",
        survivors.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
}

/// A run where every cell fails (the target exits at once) measured nothing: status Failed
/// with reason NoCellMeasured, each cell ReplicaExited with the target's last words, exit 1.
#[test]
fn a_run_where_every_cell_fails_is_failed_no_cell_measured() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = quickstart("0s", "1s", "1s")
        .with_target_command(["sh", "-c", "echo cannot-start-here >&2; exit 3"])
        .with_cell(Configuration::named("a"))
        .with_cell(Configuration::named("b").mode(Mode::Pool))
        .to_yaml();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let st = status(&out);
    assert_eq!(st["phase"].as_str(), Some("Failed"), "{st:?}");
    assert_eq!(
        complete_reason(&st).as_deref(),
        Some("NoCellMeasured"),
        "{st:?}"
    );
    for name in ["a", "b"] {
        let c = cell(&st, name);
        assert_eq!(c["phase"].as_str(), Some("Failed"), "{c:?}");
        assert_eq!(c["reason"].as_str(), Some("ReplicaExited"), "{c:?}");
        let m = c["message"].as_str().unwrap();
        assert!(
            m.contains("exit status: 3") && m.contains("cannot-start-here"),
            "{m}"
        );
    }
}

/// A target that passes the runner's readiness check once and answers 503 from then on: the
/// load generator's own check before the load never gets an answer, and the cell fails
/// TargetUnreachable naming the address, after the ready timeout and before any load.
#[test]
fn a_target_that_stops_answering_after_readiness_fails_target_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("target.py");
    std::fs::write(
        &script,
        r#"import http.server, os
seen = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 404
        if self.path == "/healthz":
            seen[0] += 1
            code = 200 if seen[0] == 1 else 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
"#,
    )
    .unwrap();
    let yaml = quickstart("0s", "1s", "1s")
        .with_target_command(["python3", &script.display().to_string()])
        .with_ready_timeout("2s")
        .with_cell(Configuration::named("gone"))
        .to_yaml();
    let started = Instant::now();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let c = cell(&status(&out), "gone").clone();
    assert_eq!(c["phase"].as_str(), Some("Failed"), "{c:?}");
    assert_eq!(c["reason"].as_str(), Some("TargetUnreachable"), "{c:?}");
    let m = c["message"].as_str().unwrap();
    assert!(
        m.contains("did not answer GET /healthz within 2s: it answered HTTP 503")
            && m.contains("http://127.0.0.1:"),
        "{m}"
    );
    // The check's 2 s are the cell's overhead; the planned 2 s of load never ran.
    let overhead = c["overheadSeconds"].as_f64().unwrap();
    assert!(overhead >= 2.0, "{c:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "{t}");
}

/// A cell of 64 replicas with a sliver of CPU each, so starting them takes a while.
fn many_replicas_yaml(tag: &str) -> String {
    let (name, value) = tag.split_once('=').unwrap();
    quickstart("0s", "1s", "1s")
        .with_cell(
            Configuration::named("many")
                .replicas(64)
                .cpu("10m")
                .env(name, value),
        )
        .with_ready_timeout("120s")
        .to_yaml()
}

/// SIGTERM while the replicas start: the runner stops starting more, stops those it started
/// and exits 130 within 3 s, leaving no process behind.
#[test]
fn sigterm_while_replicas_start_exits_promptly_with_nothing_left() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("BENCH_TEST_TAG=term-{}", std::process::id());
    let (mut child, out) = spawn_run(dir.path(), &many_replicas_yaml(&tag));
    wait_for(Duration::from_secs(30), "some replicas started", || {
        (tagged_processes(&tag).len() >= 2).then_some(())
    });
    kill(child.id(), libc::SIGTERM);
    let sent = Instant::now();
    let code = child.wait().unwrap().code();
    let took = sent.elapsed();
    let log = runner_log(dir.path());
    assert_eq!(code, Some(130), "{log}");
    assert!(
        took < Duration::from_secs(3),
        "exiting took {took:?}\n{log}"
    );
    // Each replica's log is made just before it is started: the loop stopped starting more.
    let started = std::fs::read_dir(out.join("logs")).unwrap().count();
    assert!(
        started < 64,
        "all {started} replicas were started after SIGTERM\n{log}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let left = tagged_processes(&tag);
    assert!(left.is_empty(), "left behind: {left:?}");
    eprintln!("{started} of 64 replicas started; exit {took:?} after SIGTERM");
}

/// SIGKILL of the runner while its replicas start: within 2 s no replica remains and nothing
/// listens on the cell's port.
#[test]
fn sigkill_of_the_runner_leaves_no_replica_and_no_listener() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("BENCH_TEST_TAG=kill-{}", std::process::id());
    let (mut child, _out) = spawn_run(dir.path(), &many_replicas_yaml(&tag));
    let port = wait_for(Duration::from_secs(30), "replicas started", || {
        (tagged_processes(&tag).len() >= 8)
            .then(|| announced_port(dir.path()))
            .flatten()
    });
    kill(child.id(), libc::SIGKILL);
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = tagged_processes(&tag);
    while (!left.is_empty() || listening(port)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = tagged_processes(&tag);
    }
    assert!(left.is_empty(), "replicas outlived the runner: {left:?}");
    assert!(!listening(port), "something still listens on {port}");
}

/// SIGKILL of the runner while a shell-wrapped server is under load: the server, the shell's
/// child, goes too, not only the shell.
#[test]
fn sigkill_of_the_runner_also_ends_a_shell_wrappers_server() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("BENCH_TEST_TAG=kill-sh-{}", std::process::id());
    let (name, value) = tag.split_once('=').unwrap();
    let yaml = quickstart("0s", "2s", "4s")
        .with_target_command(["sh", "-c", &format!("{} target & wait", exe().display())])
        .with_cell(Configuration::named("wrapped").replicas(2).env(name, value))
        .to_yaml();
    let (mut child, _out) = spawn_run(dir.path(), &yaml);
    let runner = child.id();
    let port = wait_for(
        Duration::from_secs(30),
        "the wrapped servers under load",
        || {
            descendants_of(runner)
                .iter()
                .find(|&&p| cmdline(p).contains(" loadgen "))?;
            announced_port(dir.path())
        },
    );
    assert!(listening(port));
    kill(runner, libc::SIGKILL);
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = tagged_processes(&tag);
    while (!left.is_empty() || listening(port)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = tagged_processes(&tag);
    }
    assert!(
        left.is_empty(),
        "outlived the runner: {:?}",
        left.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    assert!(!listening(port), "something still listens on {port}");
}

/// Ctrl-C (SIGTERM here) is not held up by a target that ignores SIGTERM: the runner does not
/// wait out the usual stop grace for an abandoned cell, and exits 130 within 3 s with nothing
/// left.
#[test]
fn sigterm_is_not_held_up_by_a_target_that_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("BENCH_TEST_TAG=deaf-{}", std::process::id());
    let (name, value) = tag.split_once('=').unwrap();
    let yaml = quickstart("0s", "3s", "3s")
        .with_target_command([
            "sh",
            "-c",
            "trap '' TERM; exec python3 -m http.server --bind 127.0.0.1 $PORT",
        ])
        .with_readiness_path("/")
        .with_stats_path("/")
        .with_cell(Configuration::named("deaf").env(name, value))
        .to_yaml();
    let (mut child, _out) = spawn_run(dir.path(), &yaml);
    let runner = child.id();
    wait_for(
        Duration::from_secs(30),
        "the load on the deaf target",
        || {
            descendants_of(runner)
                .iter()
                .find(|&&p| cmdline(p).contains(" loadgen "))
                .map(|_| ())
        },
    );
    let deaf = tagged_processes(&tag);
    assert!(!deaf.is_empty(), "{deaf:?}\n{}", runner_log(dir.path()));
    kill(runner, libc::SIGTERM);
    let sent = Instant::now();
    let code = child.wait().unwrap().code();
    let took = sent.elapsed();
    let log = runner_log(dir.path());
    assert_eq!(code, Some(130), "{log}");
    assert!(
        took < Duration::from_secs(3),
        "exiting took {took:?}\n{log}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let left = tagged_processes(&tag);
    assert!(left.is_empty(), "left behind: {left:?}");
}
