//! Snapshots of the target's own `/stats` per replica, taken between phases.
//!
//! Plain blocking I/O with short timeouts: it runs on the coordinating thread while no load is
//! applied, and a target that has no `/stats`, or is slow to answer, costs at most the timeout
//! and is reported as a missing snapshot, never as a failed run.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::result::StatsSnapshot;

/// Longest a snapshot may take per replica.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Largest `/stats` answer read.
const MAX_BYTES: usize = 1 << 20;

/// Reads `path` from `authority` (`host:port`) and parses it as target statistics.
pub fn snapshot(authority: &str, path: &str) -> Result<StatsSnapshot, String> {
    let started = Instant::now();
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {authority}"))?;
    let mut s = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT)
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    s.set_read_timeout(Some(PROBE_TIMEOUT)).ok();
    s.set_write_timeout(Some(PROBE_TIMEOUT)).ok();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("cannot send to {authority}: {e}"))?;
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if started.elapsed() > PROBE_TIMEOUT {
            return Err(format!(
                "{authority}{path} did not answer within {PROBE_TIMEOUT:?}"
            ));
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                data.extend_from_slice(&buf[..n]);
                if data.len() > MAX_BYTES {
                    return Err(format!("{authority}{path} answer is larger than 1 MiB"));
                }
                // Not every server honours `Connection: close`; stop once the body is whole.
                if body_complete(&data) {
                    break;
                }
            }
            Err(e) => return Err(format!("reading {authority}{path}: {e}")),
        }
    }
    parse_stats_response(&data).map_err(|e| format!("{authority}{path}: {e}"))
}

/// True when `data` holds a head with `Content-Length` and that many body bytes.
fn body_complete(data: &[u8]) -> bool {
    let Some(head_end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|len| data.len() >= head_end + 4 + len)
}

/// Parses a whole HTTP/1.1 response (read until close) whose body is the stats JSON.
pub fn parse_stats_response(data: &[u8]) -> Result<StatsSnapshot, String> {
    let head_end = data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("incomplete HTTP answer")?;
    let head = String::from_utf8_lossy(&data[..head_end]);
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("malformed status line")?;
    if status != 200 {
        return Err(format!("no statistics (HTTP {status})"));
    }
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.trim_end().ends_with("chunked")
    });
    let raw = &data[head_end + 4..];
    let body = if chunked { dechunk(raw)? } else { raw.to_vec() };
    serde_json::from_slice(&body).map_err(|e| format!("not statistics JSON: {e}"))
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunked body")?;
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if raw.len() < size {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&raw[..size]);
        raw = raw.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_stats() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"mode\":\"pool\",\"cpuSecondsUsed\":1.5,\"cpuQuota\":null,\"unknownField\":3}";
        let s = parse_stats_response(plain).unwrap();
        assert_eq!(s.mode.as_deref(), Some("pool"));
        assert_eq!(s.cpu_seconds_used, Some(1.5));
        assert_eq!(s.cpu_quota, None);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"poo\r\n10\r\nlSize\":4,\"rssByt\r\n8\r\nes\":100}\r\n0\r\n\r\n";
        let s = parse_stats_response(chunked).unwrap();
        assert_eq!((s.pool_size, s.rss_bytes), (Some(4.0), Some(100.0)));
        assert!(
            parse_stats_response(b"HTTP/1.1 404 Not Found\r\n\r\n")
                .unwrap_err()
                .contains("404")
        );
        assert!(parse_stats_response(b"HTTP/1.1 200 OK\r\n\r\nhello").is_err());
    }
}
