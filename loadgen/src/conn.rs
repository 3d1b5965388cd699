//! A lean HTTP/1.1 client connection: one request at a time over a keep-alive TCP stream.
//!
//! A general-purpose client (hyper) spends more CPU per request than the target does on a
//! trivial handler, which would make the load generator the bottleneck. This one writes
//! pre-built request bytes, parses only what framing needs (status line, `Content-Length`,
//! `Transfer-Encoding: chunked`, `Connection`), discards bodies in place, and reuses one fixed
//! buffer, so a request costs no allocation.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::result::ErrorKind;

/// Size of the per-connection read buffer; a response head must fit in it.
const BUF_SIZE: usize = 16 * 1024;

/// The parts of a response the connection loops use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// How the body of a response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// One open connection and its read buffer.
pub struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

/// Maps an I/O error during an exchange to the kind it is counted under.
fn io_kind(e: &io::Error) -> ErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            ErrorKind::Reset
        }
        K::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::Other,
    }
}

impl Conn {
    /// Opens a connection with Nagle's algorithm off (requests are single small writes).
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: vec![0u8; BUF_SIZE].into_boxed_slice(),
            start: 0,
            end: 0,
        })
    }

    /// Sends `request` (a complete HTTP/1.1 request) and reads the whole response;
    /// `bodiless_answer` says the answer has no body whatever its headers say (the request is
    /// a HEAD).
    pub async fn exchange(
        &mut self,
        request: &[u8],
        bodiless_answer: bool,
    ) -> Result<Response, ErrorKind> {
        // Bytes left from a previous response would mean the server sent more than it framed;
        // they cannot belong to this request.
        self.start = 0;
        self.end = 0;
        self.stream
            .write_all(request)
            .await
            .map_err(|e| io_kind(&e))?;
        loop {
            let (status, framing, keep_alive, head_len) = loop {
                match parse_head(&self.buf[self.start..self.end], bodiless_answer)? {
                    Some(head) => break head,
                    None => self.fill().await?,
                }
            };
            self.start += head_len;
            // 1xx answers are interim: the real one follows.
            if (100..200).contains(&status) {
                continue;
            }
            match framing {
                Framing::Length(n) => self.skip(n).await?,
                Framing::Chunked => self.skip_chunked().await?,
                Framing::UntilClose => {
                    self.start = self.end;
                    loop {
                        self.end = 0;
                        self.start = 0;
                        let n = self
                            .stream
                            .read(&mut self.buf)
                            .await
                            .map_err(|e| io_kind(&e))?;
                        if n == 0 {
                            break;
                        }
                    }
                    return Ok(Response {
                        status,
                        keep_alive: false,
                    });
                }
            }
            return Ok(Response { status, keep_alive });
        }
    }

    /// Reads more bytes after `end`, compacting first when the buffer is full.
    async fn fill(&mut self) -> Result<(), ErrorKind> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start == 0 {
                // A response head larger than the buffer: not something a benchmark target sends.
                return Err(ErrorKind::Other);
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|e| io_kind(&e))?;
        if n == 0 {
            return Err(ErrorKind::Reset);
        }
        self.end += n;
        Ok(())
    }

    /// Discards `n` body bytes.
    async fn skip(&mut self, mut n: usize) -> Result<(), ErrorKind> {
        loop {
            let avail = self.end - self.start;
            if avail >= n {
                self.start += n;
                return Ok(());
            }
            n -= avail;
            self.start = self.end;
            self.fill().await?;
        }
    }

    /// Returns the length of the next CRLF-terminated line (without the CRLF), reading as needed.
    async fn line(&mut self) -> Result<usize, ErrorKind> {
        let mut searched = 0;
        loop {
            let data = &self.buf[self.start..self.end];
            if let Some(i) = data[searched..].windows(2).position(|w| w == b"\r\n") {
                return Ok(searched + i);
            }
            searched = data.len().saturating_sub(1);
            let before = self.start;
            self.fill().await?;
            // fill() may have moved the data to the front of the buffer.
            if self.start != before {
                searched = 0;
            }
        }
    }

    /// Discards a chunked body, trailers included.
    async fn skip_chunked(&mut self) -> Result<(), ErrorKind> {
        loop {
            let len = self.line().await?;
            let line = &self.buf[self.start..self.start + len];
            let hex_end = line
                .iter()
                .position(|&b| b == b';' || b == b' ' || b == b'\t')
                .unwrap_or(len);
            let size = parse_hex(&line[..hex_end]).ok_or(ErrorKind::Other)?;
            self.start += len + 2;
            if size == 0 {
                // Trailer lines until an empty one.
                loop {
                    let len = self.line().await?;
                    self.start += len + 2;
                    if len == 0 {
                        return Ok(());
                    }
                }
            }
            self.skip(size + 2).await?;
        }
    }
}

fn parse_hex(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut v = 0usize;
    for &d in digits {
        let x = (d as char).to_digit(16)? as usize;
        v = v * 16 + x;
    }
    Some(v)
}

fn parse_decimal(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v = 0usize;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (d - b'0') as usize;
    }
    Some(v)
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Index of the `\r\n\r\n` that ends a head. A byte loop keyed on `\n` is several times
/// cheaper than comparing 4-byte windows, and this runs once per response.
#[inline]
fn find_blank_line(data: &[u8]) -> Option<usize> {
    let mut i = 3;
    while i < data.len() {
        let b = data[i];
        // `i` is a candidate for the terminator's last byte. What data[i] is rules out the
        // next candidates: the terminator ending at i + k needs data[i] to be its byte 3 - k.
        if b == b'\n' {
            if data[i - 1] == b'\r' && data[i - 2] == b'\n' && data[i - 3] == b'\r' {
                return Some(i - 3);
            }
            i += 2;
        } else if b == b'\r' {
            i += 1;
        } else {
            i += 4;
        }
    }
    None
}

/// Parses a response head: `Ok(None)` when incomplete, otherwise
/// `(status, framing, keep_alive, head length including the blank line)`. `bodiless` marks
/// the answer to a HEAD request, whose Content-Length describes a body it does not carry.
fn parse_head(
    data: &[u8],
    bodiless: bool,
) -> Result<Option<(u16, Framing, bool, usize)>, ErrorKind> {
    let Some(head_end) = find_blank_line(data) else {
        if data.len() >= 5 && !data.starts_with(b"HTTP/") {
            return Err(ErrorKind::Other);
        }
        return Ok(None);
    };
    let head = &data[..head_end];
    let mut lines = head.split(|&b| b == b'\n');
    let status_line = lines.next().unwrap_or_default();
    // "HTTP/1.1 200 OK"
    if status_line.len() < 12 || !status_line.starts_with(b"HTTP/1.") || status_line[8] != b' ' {
        return Err(ErrorKind::Other);
    }
    let http10 = status_line[7] == b'0';
    let status = parse_decimal(&status_line[9..12]).ok_or(ErrorKind::Other)? as u16;
    let mut framing = Framing::UntilClose;
    let mut keep_alive = !http10;
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(ErrorKind::Other);
        };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"content-length") {
            if framing != Framing::Chunked {
                framing = Framing::Length(parse_decimal(value).ok_or(ErrorKind::Other)?);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Chunked is the final coding when present; it wins over Content-Length.
            if value.len() >= 7 && value[value.len() - 7..].eq_ignore_ascii_case(b"chunked") {
                framing = Framing::Chunked;
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            if value.eq_ignore_ascii_case(b"close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case(b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    // These answers never carry a body, whatever their headers say.
    if bodiless || status == 204 || status == 304 || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    if framing == Framing::UntilClose {
        keep_alive = false;
    }
    Ok(Some((status, framing, keep_alive, head_end + 4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_parsed_for_framing() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\nhello";
        assert_eq!(
            parse_head(h, false).unwrap(),
            Some((200, Framing::Length(12), true, h.len() - 5))
        );
        let h =
            b"HTTP/1.1 503 Busy\r\ntransfer-encoding: gzip, chunked\r\nconnection: close\r\n\r\n";
        assert_eq!(
            parse_head(h, false).unwrap(),
            Some((503, Framing::Chunked, false, h.len()))
        );
        let h = b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert!(!parse_head(h, false).unwrap().unwrap().2);
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false).unwrap(),
            None
        );
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n", false).is_err());
        assert!(parse_head(b"HTTP/1.1 2x0 OK\r\n\r\n", false).is_err());
        // The answer to a HEAD states the length of a body it does not send.
        let h = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n";
        assert_eq!(
            parse_head(h, true).unwrap(),
            Some((200, Framing::Length(0), true, h.len()))
        );
    }

    #[test]
    fn blank_line_search_matches_the_naive_one() {
        let alphabet = [b'\r', b'\n', b'a'];
        // Every string of length up to 8 over {\r, \n, a}.
        for len in 0..=8u32 {
            for code in 0..3usize.pow(len) {
                let mut c = code;
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        let b = alphabet[c % 3];
                        c /= 3;
                        b
                    })
                    .collect();
                let naive = s.windows(4).position(|w| w == b"\r\n\r\n");
                assert_eq!(find_blank_line(&s), naive, "{s:?}");
            }
        }
    }

    #[test]
    fn hex_and_decimal() {
        assert_eq!(parse_hex(b"1aF"), Some(0x1af));
        assert_eq!(parse_hex(b""), None);
        assert_eq!(parse_hex(b"g"), None);
        assert_eq!(parse_decimal(b"123"), Some(123));
        assert_eq!(parse_decimal(b"1 2"), None);
    }

    /// Serves `replies` in order on one connection and checks the client reads each one whole.
    #[tokio::test]
    async fn reads_length_chunked_and_close_delimited_bodies() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let replies: [&[u8]; 4] = [
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n",
                b"HTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.1 500 Oops\r\n\r\nuntil close",
            ];
            let mut buf = [0u8; 1024];
            for r in replies {
                let _ = s.read(&mut buf).await.unwrap();
                // Dribble the reply in small pieces to exercise partial reads.
                for piece in r.chunks(7) {
                    s.write_all(piece).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut c = Conn::connect(addr).await.unwrap();
        let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let got: Vec<Response> = {
            let mut v = Vec::new();
            for _ in 0..4 {
                v.push(c.exchange(req, false).await.unwrap());
            }
            v
        };
        let statuses: Vec<(u16, bool)> = got.iter().map(|r| (r.status, r.keep_alive)).collect();
        assert_eq!(
            statuses,
            [(200, true), (404, true), (204, true), (500, false)]
        );
        server.await.unwrap();
    }
}
