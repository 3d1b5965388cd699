//! A small blocking HTTP/1.1 GET for probes against local processes: the local runner's
//! readiness checks and `/stats` snapshots, and the target's tests. Neither needs an async
//! client for a few requests, and keeping it blocking keeps the runner's own CPU use (which
//! competes with the target) negligible.
//!
//! The status line, headers and chunk sizes are parsed by `httparse`; the body ends where
//! `Content-Length` says, after the last chunk, or when the server closes the connection.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Most headers an answer may have; a probe's answers have a handful.
const MAX_HEADERS: usize = 64;

/// An answer: status code, headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Header names and values in the order received (values decoded lossily as UTF-8).
    pub headers: Vec<(String, String)>,
    /// Body, de-chunked when the server used chunked encoding.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// GETs `path` from `addr` with `Connection: close`. `timeout` bounds the whole exchange,
/// connect to last byte: a server that accepts and never answers, or answers a byte at a
/// time, costs at most `timeout` (an error of kind `TimedOut`).
pub fn get(addr: SocketAddr, path: &str, timeout: Duration) -> io::Result<Response> {
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    let timed_out = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no complete answer from {addr}{path} within {timeout:?}"),
        )
    };
    s.set_write_timeout(Some(remaining(deadline).ok_or_else(timed_out)?))?;
    s.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: benchmatrix-run\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )?;
    let mut reader = Reader {
        stream: s,
        buf: Vec::new(),
        eof: false,
        deadline,
    };
    let bad = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unparsable HTTP answer from {addr}{path}: {why}"),
        )
    };
    read_response(&mut reader).map_err(|e| match e {
        Failure::Io(e) if is_timeout(&e) => timed_out(),
        Failure::Io(e) => e,
        Failure::Invalid(why) => bad(why),
    })
}

/// Time left until `deadline`; `None` once it has passed (a zero timeout means "none" to the
/// socket, so it is never set).
fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// A read that hit the socket timeout: `WouldBlock` on Linux, `TimedOut` elsewhere.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

enum Failure {
    Io(io::Error),
    Invalid(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// The bytes received so far, and more on demand until the deadline.
struct Reader {
    stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
    deadline: Instant,
}

impl Reader {
    /// Reads once more into `buf`; `Ok(false)` at the end of the stream.
    fn fill(&mut self) -> Result<bool, Failure> {
        if self.eof {
            return Ok(false);
        }
        let mut chunk = [0u8; 8192];
        loop {
            let left =
                remaining(self.deadline).ok_or_else(|| io::Error::from(io::ErrorKind::TimedOut))?;
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                // A signal handler (the runner's Ctrl-C flag) interrupts a read with a
                // timeout even under SA_RESTART; the deadline still holds.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads until at least `n` bytes are buffered; an early end is invalid data.
    fn want(&mut self, n: usize, what: &str) -> Result<(), Failure> {
        while self.buf.len() < n {
            if !self.fill()? {
                return Err(Failure::Invalid(format!(
                    "the connection closed inside {what}"
                )));
            }
        }
        Ok(())
    }
}

fn read_response(r: &mut Reader) -> Result<Response, Failure> {
    let (status, headers, body_start) = loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut head = httparse::Response::new(&mut slots);
        match head.parse(&r.buf) {
            Ok(httparse::Status::Complete(len)) => {
                let status = head.code.unwrap_or(0);
                // An interim answer (100 Continue, 103 Early Hints) precedes the real one.
                if (100..200).contains(&status) && status != 101 {
                    r.buf.drain(..len);
                    continue;
                }
                let headers: Vec<(String, String)> = head
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                break (status, headers, len);
            }
            Ok(httparse::Status::Partial) => {
                if !r.fill()? {
                    return Err(Failure::Invalid(
                        "the connection closed inside the head".into(),
                    ));
                }
            }
            Err(e) => return Err(Failure::Invalid(e.to_string())),
        }
    };
    let response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let body = if status == 204 || status == 304 {
        Vec::new()
    } else if is_chunked(&response) {
        read_chunked(r, body_start)?
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len
            .trim()
            .parse()
            .map_err(|_| Failure::Invalid(format!("Content-Length {len:?}")))?;
        r.want(body_start + len, "the body")?;
        r.buf[body_start..body_start + len].to_vec()
    } else {
        while r.fill()? {}
        r.buf[body_start..].to_vec()
    };
    Ok(Response { body, ..response })
}

/// Whether chunked is the last transfer coding, which is what frames the body.
fn is_chunked(response: &Response) -> bool {
    response
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
        .flat_map(|(_, v)| v.split(','))
        .last()
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"))
}

/// The body of a chunked answer whose first chunk starts at `at`; trailers are not read (the
/// connection closes after them anyway).
fn read_chunked(r: &mut Reader, mut at: usize) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    loop {
        let (size_len, size) = loop {
            match httparse::parse_chunk_size(&r.buf[at..]) {
                Ok(httparse::Status::Complete(found)) => break found,
                Ok(httparse::Status::Partial) => r.want(r.buf.len() + 1, "a chunk size")?,
                Err(_) => return Err(Failure::Invalid("bad chunk size".into())),
            }
        };
        at += size_len;
        if size == 0 {
            return Ok(body);
        }
        let size = usize::try_from(size)
            .map_err(|_| Failure::Invalid(format!("chunk of {size} bytes")))?;
        let end = at
            .checked_add(size)
            .ok_or_else(|| Failure::Invalid(format!("chunk of {size} bytes")))?;
        r.want(end + 2, "a chunk")?;
        if &r.buf[end..end + 2] != b"\r\n" {
            return Err(Failure::Invalid("a chunk does not end with CRLF".into()));
        }
        body.extend_from_slice(&r.buf[at..end]);
        at = end + 2;
    }
}

#[cfg(test)]
mod tests;
