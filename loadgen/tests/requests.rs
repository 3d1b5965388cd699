//! What goes on the wire for an endpoint with a method, headers and a body, checked by a
//! loopback server that records every request it reads; and which answers count as success.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use benchmatrix_loadgen::load::{self, DEFAULT_OPEN_MAX_CONNECTIONS, RunConfig};
use benchmatrix_loadgen::plan::{self, PlanFile};
use benchmatrix_loadgen::result::RunResult;

/// One request as the server read it.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    method: String,
    path: String,
    /// (name, value) in the order sent.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive server that records each request (head and Content-Length body) and answers
/// `status`; to a HEAD it states a 5-byte body and sends none, as HTTP says it must.
struct Recorder {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicU64>,
}

impl Recorder {
    fn start(status: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let (log, count) = (seen.clone(), connections.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let log = log.clone();
                std::thread::spawn(move || serve(conn, status, &log));
            }
        });
        Recorder {
            addr,
            seen,
            connections,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut s: TcpStream, status: u16, log: &Mutex<Vec<Seen>>) {
    s.set_nodelay(true).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8(buf[..head_end - 4].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let mut start = lines.next().unwrap().split(' ');
        let (method, path) = (start.next().unwrap(), start.next().unwrap());
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(": ").expect("a header line");
                (n.to_owned(), v.to_owned())
            })
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        while buf.len() < head_end + length {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + length].to_vec();
        buf.drain(..head_end + length);
        let head_request = method == "HEAD";
        log.lock().unwrap().push(Seen {
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            body,
        });
        let reply = if head_request {
            format!("HTTP/1.1 {status} X\r\nContent-Length: 5\r\n\r\n")
        } else {
            format!("HTTP/1.1 {status} X\r\nContent-Length: 5\r\n\r\nhello")
        };
        if s.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn plan_text(addr: SocketAddr, endpoints: &str, load: &str) -> String {
    format!(
        "target: http://{addr}\nworkload:\n  timeout: 2s\n  endpoints:\n{endpoints}\n  phases: [{{name: p, duration: 1s, load: [{load}]}}]\n"
    )
}

const ORDER: &str = r#"    - name: order
      path: /orders?dry=1
      method: POST
      headers:
        - {name: Content-Type, value: application/json}
        - name: Authorization
          valueFrom: {env: ORDER_TOKEN}
        - {name: X-Tenant, value: "acme"}
      body: '{"item": "café", "qty": 2}'"#;

#[test]
fn timing_a_post_goes_out_as_written_on_every_request_with_the_value_from_the_environment() {
    let server = Recorder::start(201);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        plan_text(server.addr, ORDER, "{endpoint: order, connections: 2}"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_benchmatrix-loadgen"))
        .args(["--plan", plan.to_str().unwrap(), "-t", "1", "--json"])
        // As a Secret file often is: with a newline at the end, which is not sent.
        .env("ORDER_TOKEN", "Bearer s3cret-token\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stdout.contains("s3cret") && !stderr.contains("s3cret"),
        "the value is never printed"
    );
    let doc: RunResult = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let s = &doc.phases[0].streams[0];
    assert_eq!(s.errors, 0, "201 is a 2xx: {s:?}");
    assert!(s.requests > 20, "{s:?}");

    // A plan also reads /stats (GET) at the phase boundaries; the rest is the workload.
    let seen: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|r| r.path != "/stats")
        .collect();
    assert!(seen.len() as u64 >= s.requests, "{} seen", seen.len());
    let body = r#"{"item": "café", "qty": 2}"#;
    let expected_headers = [
        ("Host", server.addr.to_string()),
        ("User-Agent", "benchmatrix-loadgen".to_owned()),
        ("Accept", "*/*".to_owned()),
        ("Content-Type", "application/json".to_owned()),
        ("Authorization", "Bearer s3cret-token".to_owned()),
        ("X-Tenant", "acme".to_owned()),
        ("Content-Length", body.len().to_string()),
    ];
    // Every request, not only the first: the bytes are built once and sent as they are.
    for r in &seen {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/orders?dry=1");
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let expected: Vec<(&str, &str)> = expected_headers
            .iter()
            .map(|(n, v)| (*n, v.as_str()))
            .collect();
        assert_eq!(headers, expected);
        assert_eq!(r.body, body.as_bytes());
    }
    // The body is bytes: "é" is two of them.
    assert_eq!(seen[0].header("Content-Length"), Some("27"));
    // Keep-alive held: one connection per closed-loop connection.
    assert_eq!(s.connections_opened, 2, "{s:?}");
}

#[test]
fn a_value_missing_from_the_environment_exits_2_before_any_load() {
    let server = Recorder::start(200);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        plan_text(server.addr, ORDER, "{endpoint: order, connections: 2}"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_benchmatrix-loadgen"))
        .args(["--plan", plan.to_str().unwrap()])
        .env_remove("ORDER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "workload.endpoints[0].headers[1].valueFrom.env: environment variable ORDER_TOKEN is not set"
        ),
        "{stderr}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}

fn run_in_process(server: &Recorder, endpoints: &str, load: &str) -> RunResult {
    let plan: PlanFile = plan::parse_plan_file(&plan_text(server.addr, endpoints, load)).unwrap();
    let cfg = RunConfig {
        target: plan.target.parse().unwrap(),
        workload: plan.workload,
        threads: 1,
        replicas: Vec::new(),
        stats_addresses: Vec::new(),
        stats_path: None,
        open_max_connections: DEFAULT_OPEN_MAX_CONNECTIONS,
        share: Default::default(),
        header_values: Default::default(),
        preflight: None,
    };
    load::run(&cfg, &mut |_| {}).unwrap()
}

#[test]
fn timing_a_404_is_an_error_by_default_and_a_success_where_listed() {
    let server = Recorder::start(404);
    let endpoints = r#"    - {name: plain, path: /plain}
    - {name: listed, path: /listed, successCodes: ["2xx", 404]}
    - {name: range, path: /range, successCodes: ["400-403"]}"#;
    let r = run_in_process(
        &server,
        endpoints,
        "{endpoint: plain, connections: 1}, {endpoint: listed, connections: 1}, {endpoint: range, rate: 50}",
    );
    let by = |name: &str| {
        r.phases[0]
            .streams
            .iter()
            .find(|s| s.endpoint == name)
            .unwrap()
            .clone()
    };
    let plain = by("plain");
    assert!(plain.requests > 10, "{plain:?}");
    assert_eq!(plain.errors, plain.requests);
    assert_eq!(plain.errors_by_kind.status4xx, plain.requests);
    assert!(plain.latency_ms.is_none(), "no success, no latency figure");
    let listed = by("listed");
    assert!(listed.requests > 10, "{listed:?}");
    assert_eq!(listed.errors, 0, "{listed:?}");
    assert!(listed.latency_ms.is_some() && listed.rps > 0.0);
    // Open loop judges answers the same way; 404 is outside 400-403.
    let range = by("range");
    assert!(range.requests > 10, "{range:?}");
    assert_eq!(range.errors_by_kind.status4xx, range.requests);
}

#[test]
fn timing_head_answers_are_read_without_a_body_and_the_connection_kept() {
    let server = Recorder::start(200);
    let r = run_in_process(
        &server,
        "    - {name: h, path: /h, method: HEAD}",
        "{endpoint: h, connections: 2}",
    );
    let s = &r.phases[0].streams[0];
    // Waiting for the 5 stated bytes would time every request out at 2 s.
    assert!(s.requests > 50, "{s:?}");
    assert_eq!(s.errors, 0, "{s:?}");
    assert_eq!(s.connections_opened, 2, "{s:?}");
    let seen = server.seen();
    assert!(seen.iter().all(|r| r.method == "HEAD" && r.body.is_empty()));
    assert!(seen.iter().all(|r| r.header("Content-Length").is_none()));
}
