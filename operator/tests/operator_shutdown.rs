//! `benchmatrix operator` stops on the first SIGTERM within a bounded time, exit code 0.
//!
//! These run the real binary against API servers that misbehave in the ways that used to hold
//! it: none at all (kube's graceful drain waited for a first list that never came), and one
//! whose answers stop mid-reconcile (the drain waits at most `--shutdown-timeout`). The names
//! start with `timing_` because each asserts a wall-clock bound (with a wide margin).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the operator may take to exit after SIGTERM when nothing is in flight. It takes
/// milliseconds; the margin is for a loaded 2-core CI machine.
const PROMPT_EXIT: Duration = Duration::from_secs(4);

/// A running operator, with its log file; killed when dropped so a failing test leaves no
/// process behind.
struct Operator {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Operator {
    /// Starts `benchmatrix operator` with a kubeconfig whose server is `server`.
    fn start(server: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
                 users:\n- name: u\n  user:\n    token: test\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\n\
                 current-context: c\n"
            ),
        )
        .expect("write kubeconfig");
        let log = dir.path().join("operator.log");
        let child = Command::new(env!("CARGO_BIN_EXE_benchmatrix"))
            .args(["operator", "--metrics-addr", "127.0.0.1:0"])
            .args(extra)
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start benchmatrix operator");
        let op = Self {
            child,
            log,
            _dir: dir,
        };
        op.wait_for_log("controller starting", Duration::from_secs(30));
        op
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for_log(&self, needle: &str, limit: Duration) {
        let start = Instant::now();
        while !self.log_text().contains(needle) {
            assert!(
                start.elapsed() < limit,
                "no {needle:?} in the operator log after {limit:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn sigterm(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
        let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM) failed");
    }

    /// Sends SIGTERM and asserts a clean exit (status 0) within `limit`; returns how long the
    /// exit took.
    fn stop_cleanly(&mut self, limit: Duration) -> Duration {
        self.sigterm();
        let (status, took) = self.wait_exit(limit);
        assert!(
            status.success(),
            "exit status {status}; log:\n{}",
            self.log_text()
        );
        eprintln!("exited {took:?} after SIGTERM");
        took
    }

    /// Waits up to `limit` for the process to exit; returns its status and how long it took.
    fn wait_exit(&mut self, limit: Duration) -> (ExitStatus, Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return (status, start.elapsed());
            }
            assert!(
                start.elapsed() < limit,
                "the operator still runs {limit:?} after SIGTERM; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn timing_sigterm_stops_the_operator_when_no_api_server_answers() {
    let mut op = Operator::start(&format!("https://127.0.0.1:{}", closed_port()), &[]);
    // Let the watchers fail and back off at least once, as in the reported case.
    std::thread::sleep(Duration::from_millis(1500));
    op.stop_cleanly(PROMPT_EXIT);
    assert!(
        op.log_text().contains("operator stopped"),
        "{}",
        op.log_text()
    );
}

/// What the fake API server has seen: one request line ("GET /path?query") per request.
type Seen = Arc<Mutex<Vec<String>>>;

/// A deliberately small HTTP/1.1 API server: lists answer with `items` for BenchmarkRuns and
/// empty lists for everything else; watches and every other request get no answer at all (the
/// connection stays open), which is how a hung or partitioned API server looks to a client.
fn fake_api_server(runs: &'static str) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let seen_accept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen_accept.clone();
            std::thread::spawn(move || serve_connection(stream, runs, &seen));
        }
    });
    (url, seen)
}

/// Reads one request (line, headers, body), records "METHOD TARGET" in `seen`, and returns
/// both; `None` once the client has closed the connection.
fn read_request(reader: &mut BufReader<TcpStream>, seen: &Seen) -> Option<(String, String)> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return None;
    }
    let mut content_length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body).ok()?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    seen.lock().unwrap().push(format!("{method} {target}"));
    Some((method, target))
}

/// Where the operator reads the installed BenchmarkRun CRD.
const CRD_PATH: &str = "/customresourcedefinitions/benchmarkruns.benchmatrix.dev";

/// The CRD this build generates (`benchmatrix crd`), as the API server returns it.
fn installed_crd() -> String {
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&benchmatrix::resource::crdgen::crd_yaml()).expect("the CRD parses");
    serde_json::to_string(&yaml).expect("the CRD serializes")
}

fn serve_connection(stream: TcpStream, runs: &str, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some((method, target)) = read_request(&mut reader, seen) {
        // The operator reads its CRD before it reconciles (its schema gate): this API server
        // has the very CRD the binary was built with, as an up-to-date install does.
        if method == "GET" && target.contains(CRD_PATH) {
            let body = installed_crd();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if writer.write_all(response.as_bytes()).is_err() {
                return;
            }
            continue;
        }
        let is_list = method == "GET" && !target.contains("watch=true") && {
            // A list is a GET on a collection: its path ends with the plural resource name.
            let path = target.split('?').next().unwrap_or_default();
            ["benchmarkruns", "deployments", "jobs", "pods"]
                .iter()
                .any(|r| path.ends_with(r))
        };
        if !is_list {
            // Hold the connection: the client waits until it gives up or the process exits.
            std::thread::sleep(Duration::from_secs(3600));
            return;
        }
        let items = if target.contains("benchmarkruns") {
            runs
        } else {
            ""
        };
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"List","metadata":{{"resourceVersion":"1"}},"items":[{items}]}}"#
        );
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn wait_for_request(seen: &Seen, what: &str, pred: impl Fn(&str) -> bool) {
    let start = Instant::now();
    while !seen.lock().unwrap().iter().any(|r| pred(r)) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the operator made no {what} request; it made: {:?}",
            seen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn timing_sigterm_drains_an_idle_operator_after_its_first_list() {
    let (url, seen) = fake_api_server("");
    let mut op = Operator::start(&url, &[]);
    // A watch on BenchmarkRuns starts only after their list succeeded: the cache is ready, so
    // this shutdown takes the draining path, not the "never listed" shortcut.
    wait_for_request(&seen, "BenchmarkRun watch", |r| {
        r.contains("benchmarkruns") && r.contains("watch=true")
    });
    std::thread::sleep(Duration::from_millis(200));
    op.stop_cleanly(PROMPT_EXIT);
    let log = op.log_text();
    assert!(log.contains("controller drained"), "{log}");
}

/// One BenchmarkRun; its content does not matter (the operator reconciles even a malformed
/// one, to write its Failed status), only that reconciling it needs the API server.
const ONE_RUN: &str = r#"{"apiVersion":"benchmatrix.dev/v1alpha1","kind":"BenchmarkRun","metadata":{"name":"stuck","namespace":"default","uid":"6f1c0a8e-0000-4000-8000-000000000001","resourceVersion":"1","generation":1},"spec":{}}"#;

#[test]
fn timing_sigterm_stops_a_reconcile_stuck_on_the_api_server_at_the_deadline() {
    let (url, seen) = fake_api_server(ONE_RUN);
    let mut op = Operator::start(&url, &["--shutdown-timeout", "1s"]);
    // Any request that is neither a list nor a watch comes from the reconcile, and hangs.
    wait_for_request(&seen, "reconcile", is_reconcile_request);
    let took = op.stop_cleanly(Duration::from_secs(1) + PROMPT_EXIT);
    assert!(
        took >= Duration::from_millis(900),
        "exited after {took:?}, before the 1s drain deadline: was the reconcile in flight?"
    );
    let log = op.log_text();
    assert!(log.contains("shutdown deadline"), "{log}");
}

/// `kubectl logs` reads the operator's stderr through a pipe: text-format lines there carry no
/// ANSI colour codes (they used to wrap every field in `ESC[2m ... ESC[0m`).
#[test]
fn text_logs_written_to_a_file_carry_no_colour_codes() {
    let mut op = Operator::start(
        &format!("https://127.0.0.1:{}", closed_port()),
        &["--log-format", "text"],
    );
    // Let the watchers fail at least once, so the log holds warnings with fields too.
    std::thread::sleep(Duration::from_millis(1500));
    op.sigterm();
    op.wait_exit(PROMPT_EXIT);
    let log = op.log_text();
    assert!(log.contains("controller starting"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escape codes in a log written to a file:\n{log:?}"
    );
}

#[test]
fn timing_sigterm_stops_a_namespaced_operator_when_no_api_server_answers() {
    let mut op = Operator::start(
        &format!("https://127.0.0.1:{}", closed_port()),
        &["--namespace", "bench-a,bench-b"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    op.stop_cleanly(PROMPT_EXIT);
    let log = op.log_text();
    assert!(
        log.contains("bench-a,bench-b"),
        "the watched namespaces are logged: {log}"
    );
}

#[test]
fn timing_sigterm_drains_every_controller_of_a_namespaced_operator() {
    let (url, seen) = fake_api_server("");
    let mut op = Operator::start(&url, &["--namespace=bench-a", "--namespace=bench-b"]);
    // One Controller per namespace, each watching only its own.
    for ns in ["bench-a", "bench-b"] {
        wait_for_request(&seen, &format!("BenchmarkRun watch in {ns}"), |r| {
            r.contains(&format!("/namespaces/{ns}/benchmarkruns")) && r.contains("watch=true")
        });
    }
    std::thread::sleep(Duration::from_millis(200));
    op.stop_cleanly(PROMPT_EXIT);
    let log = op.log_text();
    assert_eq!(log.matches("controller drained").count(), 2, "{log}");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|r| r.contains("/namespaces/bench-a/")
                || r.contains("/namespaces/bench-b/")
                // The CRD is cluster-scoped: the schema gate's one read outside them.
                || r.contains(CRD_PATH)
                // So are the nodes: the fit check's cache lists and watches them (the
                // chart's rbac.nodeRead grants it in a namespaced install too).
                || r.starts_with("GET /api/v1/nodes?")),
        "a request outside the watched namespaces: {:?}",
        seen.lock().unwrap()
    );
}
/// The admin server's address, from its start-up log line (`--metrics-addr 127.0.0.1:0`
/// binds any free port).
fn admin_addr(op: &Operator) -> String {
    op.wait_for_log("admin server listening", Duration::from_secs(30));
    let log = op.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("admin server listening"))
        .expect("the log line just seen");
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("addr="))
        .unwrap_or_else(|| panic!("no addr= in {line:?}"));
    addr.trim_matches('"').to_owned()
}

/// The status code of `GET path` on the operator's admin server.
fn admin_status(addr: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).expect("connect to the admin server");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

/// `/readyz` answers 503 until the controller's watches have listed their objects: an operator
/// that cannot reach its API server is alive (`/healthz`) but not ready.
#[test]
fn readyz_waits_for_the_first_list_of_benchmarkruns() {
    let op = Operator::start(&format!("https://127.0.0.1:{}", closed_port()), &[]);
    let addr = admin_addr(&op);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(admin_status(&addr, "/healthz"), 200);
    assert_eq!(
        admin_status(&addr, "/readyz"),
        503,
        "ready although no API server answered; log:\n{}",
        op.log_text()
    );

    let (url, seen) = fake_api_server("");
    let op = Operator::start(&url, &[]);
    let addr = admin_addr(&op);
    wait_for_request(&seen, "BenchmarkRun watch", |r| {
        r.contains("benchmarkruns") && r.contains("watch=true")
    });
    let start = Instant::now();
    while admin_status(&addr, "/readyz") != 200 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "not ready after the first list; log:\n{}",
            op.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A run that passes validation, so its reconcile observes its children (requests that hang).
const VALID_RUN: &str = r#"{"apiVersion":"benchmatrix.dev/v1alpha1","kind":"BenchmarkRun","metadata":{"name":"carried","namespace":"default","uid":"6f1c0a8e-0000-4000-8000-000000000002","resourceVersion":"1","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"configurations":[{"name":"a","mode":"single","replicas":1,"cpu":"1"}],"workload":{"endpoints":[{"name":"fast","path":"/fast"}],"phases":[{"name":"p","duration":"1s","load":[{"endpoint":"fast","connections":1}]}]}}}"#;

/// The API server's answer to `GET /version`.
const VERSION: &str = r#"{"major":"1","minor":"36","gitVersion":"v1.36.0","gitCommit":"0","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.25","compiler":"gc","platform":"linux/amd64"}"#;

/// An API server that can be stopped and started again on the same port, like a control plane
/// restart: while down, the port refuses connections and every open connection (watches,
/// requests in flight) is closed. Lists answer with `items` for BenchmarkRuns and empty lists
/// otherwise, at the current resource version; a watch from an older version than the current
/// one gets `410 Expired` (etcd compacted it meanwhile), a current one is held open with no
/// events; every other request but `/version` hangs, like `fake_api_server`'s.
struct RestartingApi {
    port: u16,
    up: Arc<std::sync::atomic::AtomicBool>,
    version: Arc<std::sync::atomic::AtomicU32>,
    seen: Seen,
}

impl RestartingApi {
    fn start(runs: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let api = RestartingApi {
            port: listener.local_addr().expect("addr").port(),
            up: Arc::new(true.into()),
            version: Arc::new(1.into()),
            seen: Arc::default(),
        };
        api.serve(listener, runs);
        api
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Closes the port and every open connection.
    fn stop(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop so it drops the listener now.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        std::thread::sleep(Duration::from_millis(200));
    }

    /// Listens again on the same port, at a newer resource version.
    fn restart(&self, runs: &'static str) {
        self.version
            .fetch_add(4, std::sync::atomic::Ordering::SeqCst);
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
        let listener = TcpListener::bind(("127.0.0.1", self.port)).expect("bind the same port");
        self.serve(listener, runs);
    }

    fn serve(&self, listener: TcpListener, runs: &'static str) {
        let (up, version, seen) = (self.up.clone(), self.version.clone(), self.seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if !up.load(std::sync::atomic::Ordering::SeqCst) {
                    return; // drops the listener: the port refuses connections
                }
                let (up, version, seen) = (up.clone(), version.clone(), seen.clone());
                std::thread::spawn(move || serve_restarting(stream, runs, &up, &version, &seen));
            }
        });
    }
}

fn serve_restarting(
    stream: TcpStream,
    runs: &str,
    up: &std::sync::atomic::AtomicBool,
    version: &std::sync::atomic::AtomicU32,
    seen: &Seen,
) {
    use std::sync::atomic::Ordering::SeqCst;
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    // Held connections end when the server goes down: the client sees them break.
    let hold = |writer: &TcpStream| {
        while up.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = writer.shutdown(std::net::Shutdown::Both);
    };
    while let Some((method, target)) = read_request(&mut reader, seen) {
        if !up.load(SeqCst) {
            return;
        }
        let path = target.split('?').next().unwrap_or_default();
        let current = version.load(SeqCst);
        let body = if path == "/version" {
            VERSION.to_owned()
        } else if method == "GET" && path.ends_with(CRD_PATH) {
            installed_crd()
        } else if method == "GET" && target.contains("watch=true") {
            let asked = target
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("resourceVersion="))
                .and_then(|v| v.parse::<u32>().ok());
            if asked.is_some_and(|v| v < current) {
                let event = format!(
                    r#"{{"type":"ERROR","object":{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"too old resource version: {} ({current})","reason":"Expired","code":410}}}}"#,
                    asked.unwrap_or(0)
                );
                let _ = write!(
                    writer,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{event}\n"
                );
                return;
            }
            let _ = write!(
                writer,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            );
            return hold(&writer);
        } else if method == "GET"
            && ["benchmarkruns", "deployments", "jobs", "pods"]
                .iter()
                .any(|r| path.ends_with(r))
        {
            let items = if path.ends_with("benchmarkruns") {
                runs
            } else {
                ""
            };
            format!(
                r#"{{"apiVersion":"v1","kind":"List","metadata":{{"resourceVersion":"{current}"}},"items":[{items}]}}"#
            )
        } else {
            return hold(&writer);
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Whether a request line is a reconcile's (neither a list, a watch nor the version probe).
fn is_reconcile_request(r: &str) -> bool {
    !(r.starts_with("GET ")
        && (r.contains("watch=true")
            || r.contains("limit=")
            || r.contains("/version")
            || r.contains(CRD_PATH)))
}

/// Issue: after a 27 s control-plane restart the operator took more than a minute to act
/// again (its watches backed off up to 30 s, then hit 410 Expired and backed off again). Now,
/// within 10 s of the API server answering again, it has re-listed and reconciles the run; the
/// outage is logged once at warn level, with its duration when it ends.
#[test]
fn timing_the_first_reconcile_after_an_api_server_outage_comes_within_10_s() {
    let api = RestartingApi::start(VALID_RUN);
    let op = Operator::start(&api.url(), &["--log-format", "text"]);
    wait_for_request(&api.seen, "first reconcile", is_reconcile_request);

    api.stop();
    let outage = Duration::from_secs(20);
    std::thread::sleep(outage);
    let before = api.seen.lock().unwrap().len();
    let back = Instant::now();
    api.restart(VALID_RUN);
    // Back means: the runs listed again (the watches resynced) and a reconcile made.
    let relisted = |since: &[String]| {
        since
            .iter()
            .any(|r| r.contains("benchmarkruns?") && r.contains("limit="))
            && since.iter().any(|r| is_reconcile_request(r))
    };
    let back_in = loop {
        if relisted(&api.seen.lock().unwrap()[before..]) {
            break back.elapsed();
        }
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "not back 30 s after the API server came back; requests since: {:?}\nlog:\n{}",
            &api.seen.lock().unwrap()[before..],
            op.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("re-listed and reconciling {back_in:?} after the API server came back");
    assert!(
        back_in < Duration::from_secs(10),
        "re-listed and reconciling only {back_in:?} after the API server answered again; requests since: {:?}\nlog:\n{}",
        &api.seen.lock().unwrap()[before..],
        op.log_text()
    );
    // One warning when the outage began, then one line with its duration when it ended: not a
    // line per failed watch or retry in between.
    op.wait_for_log("answers again", Duration::from_secs(5));
    let log = op.log_text();
    let outage_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("lost the API server's watches") || l.contains("answers again"))
        .collect();
    assert!(
        outage_lines.len() >= 2
            && outage_lines[0].contains("lost the API server's watches")
            && outage_lines[1].contains("answers again"),
        "the outage is logged once when it begins and once when it ends:\n{log}"
    );
    let lasted: f64 = outage_lines[1]
        .split("outage_secs=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("no outage_secs in {:?}", outage_lines[1]));
    assert!(
        (outage.as_secs_f64() - 1.0..outage.as_secs_f64() + 5.0).contains(&lasted),
        "the outage lasted {outage:?}; the log says {lasted} s"
    );
}
