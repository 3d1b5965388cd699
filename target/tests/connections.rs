//! Connection hygiene on a real process: half-open connections (slowloris) and idle keep-alive
//! connections are closed after their timeouts, the number of open connections is bounded,
//! and ordinary keep-alive traffic is not disturbed by any of it.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{Target, ms, try_get};

/// How one connection ended when the server was expected to close it.
#[derive(Debug, PartialEq)]
enum Fate {
    /// The server closed it (EOF or reset).
    Closed,
    /// Still open at the deadline.
    Open,
}

/// Reads from `s` until the server closes it or `deadline` passes; any bytes the server sends
/// first (an error response, say) are skipped.
fn wait_closed(s: &mut TcpStream, deadline: Instant) -> Fate {
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Fate::Open;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Fate::Closed,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Fate::Open;
            }
            Err(_) => return Fate::Closed,
        }
    }
}

/// One GET on an already open keep-alive connection: (status, body). Panics on I/O errors.
fn keep_alive_get(s: &mut TcpStream, path: &str) -> (u16, String) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    read_response(s)
}

/// Reads one HTTP/1.1 response with a Content-Length body (waiting up to 60 s: a loaded
/// machine can stretch seconds of CPU work a lot).
fn read_response(s: &mut TcpStream) -> (u16, String) {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut buf).expect("read a response head");
        assert!(n > 0, "connection closed before a response");
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad response head: {head:?}"));
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no content-length: {head:?}"));
    while raw.len() < head_end + length {
        let n = s.read(&mut buf).expect("read a response body");
        assert!(n > 0, "connection closed inside a response body");
        raw.extend_from_slice(&buf[..n]);
    }
    (
        status,
        String::from_utf8_lossy(&raw[head_end..head_end + length]).into_owned(),
    )
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_nodelay(true).unwrap();
    s
}

#[test]
fn half_open_connections_cannot_stop_healthz_and_are_closed_after_the_header_timeout() {
    let header_timeout = Duration::from_secs(1);
    let t = Target::start_with_env(
        &["--mode", "single"],
        &[
            ("BENCH_HEADER_TIMEOUT", "1s"),
            ("BENCH_IDLE_TIMEOUT", "30s"),
        ],
    );
    // 400 clients that start a request and never finish its head.
    let opened = Instant::now();
    let mut half_open: Vec<TcpStream> = (0..400)
        .map(|_| {
            let mut s = connect(t.addr);
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                .unwrap();
            s
        })
        .collect();

    let r = try_get(t.addr, "/healthz").expect("/healthz beside 400 half-open connections");
    assert_eq!(r.status, 200);
    assert!(
        r.elapsed < Duration::from_secs(2),
        "/healthz took {:.0} ms beside 400 half-open connections",
        ms(r.elapsed)
    );

    // The server, not the client, ends every one of them, soon after the header timeout.
    let deadline = opened + header_timeout + Duration::from_secs(4);
    let still_open = half_open
        .iter_mut()
        .map(|s| wait_closed(s, deadline))
        .filter(|fate| *fate == Fate::Open)
        .count();
    assert_eq!(
        still_open,
        0,
        "{still_open} of 400 half-open connections were still open {:.1} s after they were \
         opened (header timeout {header_timeout:?})",
        (deadline - opened).as_secs_f64()
    );
    // And it still serves, and says why it closed them.
    assert_eq!(try_get(t.addr, "/healthz").unwrap().status, 200);
    let metrics = try_get(t.addr, "/metrics").unwrap().body;
    assert_eq!(
        metric(&metrics, "connections_header_timeouts_total"),
        400.0,
        "{metrics}"
    );
}

/// The value of `benchmatrix_target_{name}` in Prometheus text.
fn metric(text: &str, name: &str) -> f64 {
    let prefix = format!("benchmatrix_target_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .parse()
        .unwrap()
}

#[test]
fn idle_keep_alive_connections_are_closed_after_the_idle_timeout() {
    let t = Target::start_with_env(&["--mode", "single"], &[("BENCH_IDLE_TIMEOUT", "1s")]);
    let mut s = connect(t.addr);
    assert_eq!(keep_alive_get(&mut s, "/healthz").0, 200);
    // Idle for less than the timeout: the connection still carries a request.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(keep_alive_get(&mut s, "/healthz").0, 200);
    // Idle beyond it: the server closes the connection.
    let idle_from = Instant::now();
    assert_eq!(
        wait_closed(&mut s, idle_from + Duration::from_secs(4)),
        Fate::Closed,
        "an idle keep-alive connection was still open 4 s after its last response (idle timeout 1 s)"
    );
    assert!(
        idle_from.elapsed() >= Duration::from_millis(900),
        "closed after only {:.0} ms of idleness",
        ms(idle_from.elapsed())
    );
}

#[test]
fn back_to_back_keep_alive_requests_outlast_both_timeouts() {
    let t = Target::start_with_env(
        &["--mode", "single", "--fast-ms", "2"],
        &[("BENCH_HEADER_TIMEOUT", "1s"), ("BENCH_IDLE_TIMEOUT", "1s")],
    );
    // A closed loop on one connection for longer than either timeout: neither may cut it,
    // because the connection is never idle and every head arrives whole.
    let mut s = connect(t.addr);
    let start = Instant::now();
    let mut served = 0;
    while start.elapsed() < Duration::from_millis(2_500) {
        let (status, _) = keep_alive_get(&mut s, "/fast");
        assert_eq!(status, 200, "request {served} on the connection");
        served += 1;
    }
    assert!(served > 10, "only {served} requests in 2.5 s");
}

#[test]
fn a_request_waiting_behind_a_busy_loop_is_not_timed_out() {
    // The loop is blocked by CPU work past the connection's idle deadline while a complete
    // request, sent well before that deadline, waits in the socket: the request was on time,
    // the server was not, so it must be answered rather than cut.
    let t = Target::start_with_env(
        &["--mode", "single"],
        &[("BENCH_HEADER_TIMEOUT", "1s"), ("BENCH_IDLE_TIMEOUT", "1s")],
    );
    let mut waiting = connect(t.addr);
    assert_eq!(keep_alive_get(&mut waiting, "/healthz").0, 200);
    let busy = common::get_in_background(t.addr, "/cpu?ms=2000");
    std::thread::sleep(Duration::from_millis(300));
    write!(waiting, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (status, body) = read_response(&mut waiting);
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    assert_eq!(busy.join().unwrap().unwrap().status, 200);
}

#[test]
fn connections_beyond_the_limit_get_503_with_retry_after() {
    let t = Target::start_with_env(&["--mode", "single"], &[("BENCH_MAX_CONNECTIONS", "20")]);
    let mut held: Vec<TcpStream> = (0..20).map(|_| connect(t.addr)).collect();
    // Each of the 20 serves a request, so all are surely accepted and counted.
    for s in &mut held {
        assert_eq!(keep_alive_get(s, "/healthz").0, 200);
    }
    let r = try_get(t.addr, "/healthz").expect("a refusal, not a hang");
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
    assert!(
        r.elapsed < Duration::from_secs(2),
        "refused after {:?}",
        r.elapsed
    );
    // A slot frees as soon as a connection closes.
    drop(held.pop());
    let start = Instant::now();
    loop {
        let r = try_get(t.addr, "/metrics").unwrap();
        if r.status == 200 {
            assert!(
                metric(&r.body, "connections_refused_total") >= 1.0,
                "{}",
                r.body
            );
            // This very connection is the 20th.
            assert_eq!(metric(&r.body, "connections_open"), 20.0, "{}", r.body);
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "still refused after a connection closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
