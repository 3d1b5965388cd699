use super::*;
use std::net::TcpListener;
use std::thread::JoinHandle;

/// A server on a free local port that answers one connection by writing `parts` in order,
/// pausing `pause` between them, then closing; it returns the request it read.
fn serve(parts: Vec<&'static [u8]>, pause: Duration) -> (SocketAddr, JoinHandle<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let request = read_request(&mut c);
        for p in parts {
            c.write_all(p).unwrap();
            c.flush().unwrap();
            std::thread::sleep(pause);
        }
        request
    });
    (addr, server)
}

fn read_request(c: &mut TcpStream) -> String {
    let mut req = Vec::new();
    let mut b = [0u8; 1];
    while !req.ends_with(b"\r\n\r\n") && c.read(&mut b).unwrap() == 1 {
        req.push(b[0]);
    }
    String::from_utf8(req).unwrap()
}

#[test]
fn a_plain_answer_with_its_headers() {
    let (addr, server) = serve(
        vec![b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 5\r\n\r\nhello"],
        Duration::ZERO,
    );
    let r = get(addr, "/healthz", Duration::from_secs(2)).unwrap();
    let request = server.join().unwrap();
    assert!(
        request.starts_with("GET /healthz HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(request.contains("Connection: close\r\n"), "{request}");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello");
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("Content-Length"), Some("5"));
}

#[test]
fn a_chunked_answer_is_dechunked() {
    let (addr, server) = serve(
        vec![
            b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n",
        ],
        Duration::ZERO,
    );
    let r = get(addr, "/stats", Duration::from_secs(2)).unwrap();
    server.join().unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(r.body, b"abcde");
}

#[test]
fn an_answer_split_across_writes_is_put_back_together() {
    // Cuts inside the status line, a header, a chunk size, a chunk and its CRLF.
    let (addr, server) = serve(
        vec![
            b"HTTP/1.",
            b"1 200 OK\r\nTransfer-Enc",
            b"oding: chunked\r\n\r\n1",
            b"0\r\n0123456",
            b"789abcdef\r",
            b"\n0\r\n\r\n",
        ],
        Duration::from_millis(30),
    );
    let r = get(addr, "/", Duration::from_secs(5)).unwrap();
    server.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"0123456789abcdef");
}

#[test]
fn content_length_ends_the_body_though_the_connection_stays_open() {
    // The server keeps the connection open for 3 s after the body: the length, not the
    // close, says the answer is complete.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        read_request(&mut c);
        c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")
            .unwrap();
        std::thread::sleep(Duration::from_secs(3));
    });
    let start = Instant::now();
    let r = get(addr, "/", Duration::from_secs(10)).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(r.body, b"ok");
    server.join().unwrap();
}

#[test]
fn a_body_cut_short_is_an_error() {
    let (addr, server) = serve(
        vec![b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"],
        Duration::ZERO,
    );
    let e = get(addr, "/", Duration::from_secs(2)).unwrap_err();
    server.join().unwrap();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

#[test]
fn garbage_is_invalid_data() {
    let (addr, server) = serve(vec![b"garbage\r\n\r\n"], Duration::ZERO);
    let e = get(addr, "/", Duration::from_secs(2)).unwrap_err();
    server.join().unwrap();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

#[test]
fn a_server_that_never_answers_costs_the_timeout_and_no_more() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (_c, _) = l.accept().unwrap();
        // Holds the connection open, silent, until the client has given up.
        let _ = done_rx.recv_timeout(Duration::from_secs(30));
    });
    let start = Instant::now();
    let e = get(addr, "/healthz", Duration::from_millis(300)).unwrap_err();
    let took = start.elapsed();
    done_tx.send(()).unwrap();
    server.join().unwrap();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
}

#[test]
fn a_server_that_trickles_is_bounded_by_the_whole_exchange() {
    // One byte every 100 ms: each read succeeds, so only a deadline over the whole
    // exchange (not a per-read timeout) stops it.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        read_request(&mut c);
        for b in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
            .iter()
            .cycle()
            .take(25)
        {
            if c.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let start = Instant::now();
    let e = get(addr, "/", Duration::from_millis(500)).unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    server.join().unwrap();
}

#[test]
fn nothing_listening_is_an_error_at_once() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let start = Instant::now();
    assert!(get(addr, "/", Duration::from_secs(5)).is_err());
    assert!(start.elapsed() < Duration::from_secs(2));
}
