use super::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

type Pair = (
    GuardedStream<tokio::io::DuplexStream>,
    tokio::io::DuplexStream,
    Arc<RequestClock>,
    Arc<ConnectionCounters>,
);

fn guarded(header_ms: u64, idle_ms: u64) -> Pair {
    let (server, client) = tokio::io::duplex(1024);
    let clock = Arc::new(RequestClock::default());
    let counters = Arc::new(ConnectionCounters::default());
    let timeouts = Timeouts {
        header: Duration::from_millis(header_ms),
        idle: Duration::from_millis(idle_ms),
    };
    let s = GuardedStream::new(server, Arc::clone(&clock), timeouts, Arc::clone(&counters));
    (s, client, clock, counters)
}

async fn read_err(s: &mut GuardedStream<tokio::io::DuplexStream>) -> io::ErrorKind {
    let mut buf = [0u8; 64];
    s.read(&mut buf).await.unwrap_err().kind()
}

/// `elapsed` is at least `ms` and not absurdly more (the machine may be busy).
fn about(elapsed: Duration, ms: u64) -> bool {
    elapsed >= Duration::from_millis(ms) && elapsed < Duration::from_millis(ms + 1_000)
}

#[tokio::test]
async fn a_silent_new_connection_gets_the_header_timeout() {
    let (mut s, _client, _, counters) = guarded(200, 60_000);
    let start = Instant::now();
    assert_eq!(read_err(&mut s).await, io::ErrorKind::TimedOut);
    assert!(about(start.elapsed(), 200), "{:?}", start.elapsed());
    assert_eq!(counters.header_timeouts.load(Relaxed), 1);
}

#[tokio::test]
async fn after_a_response_the_idle_timeout_runs_until_a_byte_then_the_header_one() {
    let (mut s, mut client, clock, counters) = guarded(200, 600);
    let mut buf = [0u8; 64];
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(s.read(&mut buf).await.unwrap() > 0);
    // The request is handled for longer than both timeouts: no deadline meanwhile.
    let request = clock.enter();
    let busy = tokio::time::timeout(Duration::from_millis(900), s.read(&mut buf)).await;
    assert!(
        busy.is_err(),
        "a deadline ran while a request was in flight"
    );
    drop(request);
    // Idle: closed after the idle timeout, not the header one.
    let idle_from = Instant::now();
    assert_eq!(read_err(&mut s).await, io::ErrorKind::TimedOut);
    assert!(about(idle_from.elapsed(), 600), "{:?}", idle_from.elapsed());
    assert_eq!(counters.idle_timeouts.load(Relaxed), 1);
    assert_eq!(counters.header_timeouts.load(Relaxed), 0);
}

#[tokio::test]
async fn a_read_waiting_while_a_request_runs_is_woken_when_it_ends() {
    let (mut s, _client, clock, counters) = guarded(60_000, 300);
    let request = clock.enter();
    let mut buf = [0u8; 64];
    let read = tokio::spawn(async move { s.read(&mut buf).await.map_err(|e| e.kind()) });
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(request);
    // Only a wake-up from the request's end lets the read arm the idle deadline.
    let ended = tokio::time::timeout(Duration::from_secs(3), read).await;
    assert_eq!(
        ended.expect("the idle deadline was never armed").unwrap(),
        Err(io::ErrorKind::TimedOut)
    );
    assert_eq!(counters.idle_timeouts.load(Relaxed), 1);
}

#[tokio::test]
async fn a_client_that_stops_reading_is_closed_after_the_idle_timeout() {
    let (mut s, _client, _, counters) = guarded(60_000, 300);
    // The client reads nothing: the 1 KiB pipe fills and the write stalls.
    let start = Instant::now();
    let written = tokio::time::timeout(Duration::from_secs(3), s.write_all(&[b'x'; 8192]))
        .await
        .expect("a write to a client that reads nothing never gave up");
    assert_eq!(written.unwrap_err().kind(), io::ErrorKind::TimedOut);
    assert!(about(start.elapsed(), 300), "{:?}", start.elapsed());
    assert_eq!(counters.idle_timeouts.load(Relaxed), 1);
}

#[tokio::test]
async fn a_slow_reader_that_keeps_reading_is_not_cut() {
    let (mut s, mut client, _, _) = guarded(60_000, 300);
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 256];
        let mut total = 0;
        while total < 8192 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            total += client.read(&mut buf).await.unwrap();
        }
    });
    // 8 KiB through a 1 KiB pipe at 256 bytes per 20 ms: ~640 ms, twice the timeout,
    // but never 300 ms without progress.
    s.write_all(&[b'x'; 8192]).await.unwrap();
    reader.await.unwrap();
}

#[tokio::test]
async fn a_head_started_while_idle_is_due_within_the_header_timeout() {
    let (mut s, mut client, clock, counters) = guarded(200, 5_000);
    let mut buf = [0u8; 64];
    drop(clock.enter());
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.write_all(b"GET / HT").await.unwrap();
    assert!(s.read(&mut buf).await.unwrap() > 0);
    let head_from = Instant::now();
    assert_eq!(read_err(&mut s).await, io::ErrorKind::TimedOut);
    assert!(about(head_from.elapsed(), 200), "{:?}", head_from.elapsed());
    assert_eq!(counters.header_timeouts.load(Relaxed), 1);
}

#[tokio::test]
async fn bytes_waiting_in_the_socket_win_over_an_expired_deadline() {
    let (mut s, mut client, _, _) = guarded(100, 100);
    let mut buf = [0u8; 64];
    // Register the deadline, then block this (only) thread past it with the request
    // already waiting, as CPU work on an event loop does.
    assert!(
        tokio::time::timeout(Duration::from_millis(10), s.read(&mut buf))
            .await
            .is_err()
    );
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.read(&mut buf).await.unwrap() > 0);
}
