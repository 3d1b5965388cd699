//! Before the warm-up clock starts: every address the load will go to must answer.
//!
//! A pod that passes its readiness probe says nothing about the path through a ClusterIP: the
//! Service's rules may not be programmed yet when the load generator starts, and its first
//! seconds would then be connection errors counted against the target. So each address
//! (the target's one address with `service` spread, each replica's with `roundRobin`) is sent
//! `GET <path>` on a fresh connection every [`RETRY_EVERY`] until it answers, for at most the
//! plan's `preflight.timeout`.
//!
//! What counts as an answer: a complete HTTP/1.x response head (status line and headers up to
//! the empty line) with a status below 500. A 4xx still proves the path to a server works;
//! a 5xx does not (a proxy with no backend, or a target saying it is not ready). A refused,
//! reset or closed connection, a resolution failure, a timeout or bytes that are not HTTP do
//! not count. The body is not read.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Pause between the starts of two tries at one address.
pub const RETRY_EVERY: Duration = Duration::from_millis(50);

/// Longest one try may take (connect, send, read the head), so that an address that drops
/// packets is tried again on a fresh connection instead of waiting out the whole bound.
pub const TRY_TIMEOUT: Duration = Duration::from_secs(1);

/// Largest response head read.
const MAX_HEAD: usize = 64 * 1024;

/// The words that start a load generator's error when an address never answered; the operator
/// and the local runner read them to give the cell cause `TargetUnreachable`.
pub const UNREACHABLE: &str = "target unreachable: ";

/// What to check and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Request path, sent as is (not under the target's base path, as a readiness probe).
    pub path: String,
    /// The `Host` header sent.
    pub host_header: String,
    /// How long every address together may take to answer.
    pub timeout: Duration,
}

/// Tries every `authority` ("HOST:PORT") at once until each has answered, and returns how long
/// that took; or, once `check.timeout` has passed, one sentence per address that did not answer
/// ("http://HOST:PORT did not answer GET /healthz within 5s: connection refused"), joined by
/// "; ".
pub fn wait_for(authorities: &[String], check: &Check) -> Result<Duration, String> {
    let started = Instant::now();
    let deadline = started + check.timeout;
    let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let tries: Vec<_> = authorities
            .iter()
            .map(|a| scope.spawn(move || wait_one(a, check, deadline)))
            .collect();
        tries
            .into_iter()
            .zip(authorities)
            .map(|(t, a)| {
                t.join()
                    .unwrap_or_else(|_| Err(format!("http://{a}: the check failed")))
            })
            .collect()
    });
    let failures: Vec<String> = outcomes.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() {
        Ok(started.elapsed())
    } else {
        Err(failures.join("; "))
    }
}

/// Tries `authority` until it answers or `deadline` passes; the error names it and the last
/// reason it did not answer.
fn wait_one(authority: &str, check: &Check, deadline: Instant) -> Result<(), String> {
    loop {
        let tried = Instant::now();
        let try_deadline = deadline.min(tried + TRY_TIMEOUT);
        let last = match try_once(authority, check, try_deadline) {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        let next = tried + RETRY_EVERY;
        if next >= deadline {
            // No time for another try: the bound is waited out, so "did not answer within"
            // means what it says.
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            return Err(format!(
                "http://{authority} did not answer GET {} within {}: {last}",
                check.path,
                crate::duration::Duration(check.timeout)
            ));
        }
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// One try on a fresh connection: `Ok` when a response head with a status below 500 arrived
/// before `deadline`.
fn try_once(authority: &str, check: &Check, deadline: Instant) -> Result<(), String> {
    let left = || {
        let d = deadline.saturating_duration_since(Instant::now());
        (!d.is_zero())
            .then_some(d)
            .ok_or_else(|| "no answer in time".to_string())
    };
    // Resolved on every try: a name that does not resolve yet may resolve later.
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} resolves to no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, left()?).map_err(|e| describe(&e))?;
    s.set_nodelay(true).ok();
    s.set_write_timeout(Some(left()?)).ok();
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: benchmatrix-loadgen\r\nConnection: close\r\n\r\n",
        check.path, check.host_header
    );
    s.write_all(request.as_bytes()).map_err(|e| describe(&e))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        s.set_read_timeout(Some(left()?))
            .map_err(|e| describe(&e))?;
        match s.read(&mut buf) {
            Ok(0) => {
                return Err("the connection was closed before a complete response head".into());
            }
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) => return Err(describe(&e)),
        }
        if head.len() > MAX_HEAD {
            return Err("the response head is larger than 64 KiB".into());
        }
    }
    match status_of(&head) {
        Some(status) if status < 500 => Ok(()),
        Some(status) => Err(format!("it answered HTTP {status}")),
        None => Err("it answered with something that is not an HTTP/1.x response".into()),
    }
}

/// The status code of an `HTTP/1.x NNN ...` status line.
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    if !words.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = words.next()?;
    (code.len() == 3)
        .then(|| code.parse().ok())
        .flatten()
        .filter(|c| (100..600).contains(c))
}

/// A socket error in a few plain words.
fn describe(e: &io::Error) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "connection refused".into(),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "connection reset".into(),
        K::TimedOut | K::WouldBlock => "no answer in time".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_status_lines_below_500_count() {
        assert_eq!(status_of(b"HTTP/1.1 200 OK\r\n\r\n"), Some(200));
        assert_eq!(status_of(b"HTTP/1.0 404 Not Found\r\n\r\n"), Some(404));
        assert_eq!(status_of(b"HTTP/1.1 503\r\n\r\n"), Some(503));
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n\r\n"), None);
        assert_eq!(status_of(b"HTTP/1.1 2000 OK\r\n\r\n"), None);
        assert_eq!(status_of(b"HTTP/2 200\r\n\r\n"), None);
    }

    #[test]
    fn the_marker_starts_the_engine_error() {
        let e = crate::load::RunError::Unreachable("http://x:1 did not answer".into());
        assert!(e.to_string().starts_with(UNREACHABLE), "{e}");
    }
}
