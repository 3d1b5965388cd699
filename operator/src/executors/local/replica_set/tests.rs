use super::*;
use std::time::Instant;

fn launch(cell: &str, dir: &Path, command: Vec<String>) -> Launch {
    Launch {
        cell: cell.into(),
        program: std::env::current_exe().unwrap(),
        command,
        mode: "single".into(),
        pool_size: "auto".into(),
        env: vec![],
        replicas: 2,
        cpu: Some(0.5),
        port: free_port().unwrap(),
        spread: Spread::Service,
        readiness_path: "/healthz".into(),
        log_dir: dir.to_path_buf(),
    }
}

/// Starts `l` and looks until it is ready, fails, or `wait_ms` pass (the engine's ready
/// timeout, in these tests).
fn start_ready(l: &Launch, backend: &Backend, wait_ms: u64) -> Result<ReplicaSet, StartError> {
    let mut set = ReplicaSet::spawn(l, backend)?;
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        match set.check_ready(l) {
            Readiness::Ready => {
                set.finish_start(l)?;
                return Ok(set);
            }
            Readiness::Failed(e) => return Err(e),
            Readiness::NotYet(why) if Instant::now() >= deadline => {
                return Err(StartError {
                    reason: Cause::NeverReady,
                    message: why,
                });
            }
            Readiness::NotYet(_) => {
                std::thread::sleep(crate::executors::local::wake::READY_PROBE_PERIOD)
            }
        }
    }
}

#[test]
fn a_target_that_never_listens_is_not_ready_with_the_probe_and_its_output_said() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        "echo still-starting; sleep 30".into(),
    ];
    let l = launch("never", dir.path(), cmd);
    let mut set = ReplicaSet::spawn(&l, &backend).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let Readiness::NotYet(why) = set.check_ready(&l) else {
        panic!("a target that does not listen is not ready");
    };
    assert!(why.contains("GET /healthz on 127.0.0.1:"), "{why}");
    assert!(
        why.contains("still-starting"),
        "its output is quoted: {why}"
    );
    let stopping = Instant::now();
    set.stop();
    assert!(stopping.elapsed() < Duration::from_secs(5));
    backend.remove();
}

#[test]
fn a_target_that_exits_reports_its_last_words() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        "echo boom-from-target >&2; exit 3".into(),
    ];
    let err = start_ready(&launch("exits", dir.path(), cmd), &backend, 5000).unwrap_err();
    assert_eq!(err.reason, Cause::ReplicaExited, "{err:?}");
    assert!(err.message.contains("boom-from-target"), "{}", err.message);
    backend.remove();
}

/// Two replicas of Python's static file server bound to `bind` (a shell word) on $PORT, with
/// round-robin spread; "/" answers 200 once it listens.
fn round_robin_http_server(cell: &str, dir: &Path, bind: &str) -> Launch {
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        format!("exec python3 -m http.server --bind {bind} \"$PORT\""),
    ];
    let mut l = launch(cell, dir, cmd);
    l.spread = Spread::RoundRobin;
    l.readiness_path = "/".into();
    l
}

#[test]
fn round_robin_replicas_each_answer_on_their_own_address_and_none_on_the_shared_one() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    // Any program that honours BENCH_HOST and PORT, as `spec.target.command` targets must.
    let l = round_robin_http_server("own-addr", dir.path(), "\"$BENCH_HOST\"");
    let set = start_ready(&l, &backend, 10_000).unwrap();
    let want: Vec<SocketAddr> = ["127.0.0.2", "127.0.0.3"]
        .iter()
        .map(|h| format!("{h}:{}", l.port).parse().unwrap())
        .collect();
    assert_eq!(set.addrs, want);
    for a in &set.addrs {
        let r = http::get(*a, "/", Duration::from_secs(2)).unwrap();
        assert_eq!(r.status, 200, "{a}");
    }
    let shared = SocketAddr::from(([127, 0, 0, 1], l.port));
    assert!(
        http::get(shared, "/", Duration::from_secs(1)).is_err(),
        "nothing may listen on the shared address in roundRobin spread"
    );
    drop(set);
    backend.remove();
}

#[test]
fn a_round_robin_target_that_listens_on_every_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    // Ignores BENCH_HOST: bound to 0.0.0.0, it answers on its own address and on the
    // shared one alike, so the dealing could not decide where connections go.
    let mut l = round_robin_http_server("any-addr", dir.path(), "0.0.0.0");
    l.replicas = 1;
    let err = start_ready(&l, &backend, 10_000).unwrap_err();
    assert_eq!(err.reason, Cause::WrongAddress, "{err:?}");
    assert!(err.message.contains("BENCH_HOST"), "{}", err.message);
    backend.remove();
}

/// Until it is reaped, a killed replica's /proc entry stays (a zombie): the check must
/// reap it, and say how it ended.
#[test]
fn a_killed_replica_is_noticed_though_its_proc_entry_remains() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        "exec python3 -m http.server --bind 127.0.0.1 \"$PORT\"".into(),
    ];
    let mut l = launch("zombie", dir.path(), cmd);
    l.readiness_path = "/".into();
    l.replicas = 1;
    let mut set = start_ready(&l, &backend, 10_000).unwrap();
    assert_eq!(set.first_exit(), None);
    let pid = set.pids()[0];
    process::signal_process(pid, libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "a zombie until reaped"
    );
    let why = set.first_exit().expect("the killed replica is noticed");
    assert!(
        why.contains(&pid.to_string()) && why.contains("SIGKILL"),
        "{why}"
    );
    drop(set);
    backend.remove();
}

/// A wrapper shell that lives on after the server it started died: the server was recorded
/// when the load began, and its exit is noticed by pid and name.
#[test]
fn a_wrapped_server_that_dies_is_noticed_while_the_shell_lives() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::detect();
    let cmd = vec![
        "sh".into(),
        "-c".into(),
        "python3 -m http.server --bind 127.0.0.1 \"$PORT\" & wait; sleep 30".into(),
    ];
    let mut l = launch("wrapped", dir.path(), cmd);
    l.readiness_path = "/".into();
    l.replicas = 1;
    let mut set = start_ready(&l, &backend, 10_000).unwrap();
    set.watch_descendants();
    assert_eq!(set.first_exit(), None);
    let shell = set.pids()[0];
    let server = process_tree(shell)[1];
    process::signal_process(server, libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(300));
    let why = set.first_exit().expect("the server's exit is noticed");
    assert!(
        why.contains(&format!("process {server} (python3)")) && why.contains("lived on"),
        "{why}"
    );
    // The shell went on to `sleep 30`; stopping the set ends all of the replica (its
    // cgroup's members and its process group), not only the shell.
    let tree = process_tree(shell);
    assert_eq!(tree.len(), 2, "the shell and its sleep: {tree:?}");
    drop(set);
    std::thread::sleep(Duration::from_millis(100));
    let left: Vec<u32> = tree
        .into_iter()
        .filter(|&p| LiveProcess::read(p).is_some())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    backend.remove();
}

#[test]
fn the_statistics_address_is_read_from_the_targets_output() {
    let out = "listening on http://127.0.0.2:4000\nstatistics on http://127.0.0.2:39111\n";
    assert_eq!(
        statistics_address(out),
        Some("127.0.0.2:39111".parse().unwrap())
    );
    assert_eq!(
        statistics_address("listening on http://127.0.0.1:4000\n"),
        None
    );
}
