//! Test servers with known behaviour: the ground truth the load loops are checked against.
//!
//! Thread-per-connection blocking servers, on purpose: `std::thread::sleep` keeps a 20 ms delay
//! within a fraction of a millisecond, and each behaviour is a few obvious lines.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use benchmatrix_loadgen::plan::{self, Endpoint, Phase, Spread, Stream, Workload};

/// What a test server does with each request.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// Answers 200 "ok" after `delay`.
    Ok { delay: Duration },
    /// Answers with this status at once.
    Status(u16),
    /// Reads the request, then resets the connection (RST, via SO_LINGER 0).
    Reset,
    /// Reads the request and never answers.
    Hang,
}

/// A running server; its threads live until the test process ends.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Connections accepted.
    pub connections: Arc<AtomicU64>,
    /// `/stats` requests answered.
    pub stats_reads: Arc<AtomicU64>,
    /// Requests read (complete heads).
    pub received: Arc<AtomicU64>,
    /// Answers fully written.
    pub answered: Arc<AtomicU64>,
    /// For `Ok`: microseconds from the end of reading each request to the end of writing its
    /// answer, as the server saw them (the delay plus the box's scheduling noise).
    pub service_micros: Arc<Mutex<Vec<u64>>>,
    paused: Arc<(Mutex<bool>, Condvar)>,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 with an ephemeral port. It also serves `/stats` (JSON with
    /// `requestsServed` and `cpuSecondsUsed`) unless `behaviour` is an error behaviour.
    pub fn start(behaviour: Behaviour) -> Self {
        Self::start_after(behaviour, Duration::ZERO)
    }

    /// Like [`TestServer::start`], but nothing listens on its address until `delay` has
    /// passed from now (connections before that are refused), as a target whose Service is
    /// not programmed yet.
    pub fn start_after(behaviour: Behaviour, delay: Duration) -> Self {
        let (listener, addr) = if delay.is_zero() {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            (Some(l), addr)
        } else {
            (None, SocketAddr::from(([127, 0, 0, 1], closed_port())))
        };
        let received = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let stats_reads = Arc::new(AtomicU64::new(0));
        let accepted = connections.clone();
        let answered = Arc::new(AtomicU64::new(0));
        let paused = Arc::new((Mutex::new(false), Condvar::new()));
        let service_micros = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            received: received.clone(),
            answered: answered.clone(),
            stats_reads: stats_reads.clone(),
            service: service_micros.clone(),
            paused: paused.clone(),
        };
        std::thread::spawn(move || {
            let listener = listener.unwrap_or_else(|| {
                std::thread::sleep(delay);
                TcpListener::bind(addr).expect("the reserved port is still free")
            });
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                accepted.fetch_add(1, Ordering::Relaxed);
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, behaviour, &shared));
            }
        });
        Self {
            addr,
            connections,
            stats_reads,
            received,
            answered,
            service_micros,
            paused,
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Freezes the server: requests are still accepted and read by the kernel, none is answered.
    pub fn pause(&self) {
        *self.paused.0.lock().unwrap() = true;
    }

    /// Lets it answer again.
    pub fn resume(&self) {
        *self.paused.0.lock().unwrap() = false;
        self.paused.1.notify_all();
    }

    /// Median of `service_micros`, in milliseconds.
    pub fn service_p50_ms(&self) -> f64 {
        let mut v = self.service_micros.lock().unwrap().clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 1000.0
    }
}

#[derive(Clone)]
struct Shared {
    received: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    stats_reads: Arc<AtomicU64>,
    service: Arc<Mutex<Vec<u64>>>,
    paused: Arc<(Mutex<bool>, Condvar)>,
}

fn serve(mut s: TcpStream, behaviour: Behaviour, shared: &Shared) {
    let (received, answered, paused) = (&shared.received, &shared.answered, &shared.paused);
    s.set_nodelay(true).ok();
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
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
        let path = String::from_utf8_lossy(&buf[..head_end])
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .to_owned();
        buf.drain(..head_end);
        // A frozen process reads nothing; the kernel keeps the bytes. Waiting here after the
        // read is the same from the client's side.
        {
            let mut p = paused.0.lock().unwrap();
            while *p {
                p = paused.1.wait(p).unwrap();
            }
        }
        if path == "/stats" && matches!(behaviour, Behaviour::Ok { .. }) {
            let n = answered.load(Ordering::SeqCst);
            let body = format!(
                "{{\"mode\":\"test\",\"requestsServed\":{n},\"cpuSecondsUsed\":{},\"rssPeakBytes\":1048576}}",
                n as f64 / 1000.0
            );
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if s.write_all(reply.as_bytes()).is_err() {
                return;
            }
            shared.stats_reads.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        received.fetch_add(1, Ordering::SeqCst);
        let read_at = std::time::Instant::now();
        let reply: &[u8] = match behaviour {
            Behaviour::Ok { delay } => {
                std::thread::sleep(delay);
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            }
            Behaviour::Status(500) => {
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops"
            }
            Behaviour::Status(404) => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            Behaviour::Status(_) => b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n",
            Behaviour::Reset => {
                socket2::SockRef::from(&s)
                    .set_linger(Some(Duration::ZERO))
                    .ok();
                return;
            }
            Behaviour::Hang => loop {
                std::thread::park();
            },
        };
        if s.write_all(reply).is_err() {
            return;
        }
        if matches!(behaviour, Behaviour::Ok { .. }) {
            let took = read_at.elapsed().as_micros() as u64;
            shared.service.lock().unwrap().push(took);
        }
        answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// A port on 127.0.0.1 where nothing listens.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

/// One phase "p" of `phase_secs` with `load` on endpoint "e" (path "/e"), a 5 s timeout.
pub fn workload(phase_secs: u64, load: Vec<Stream>, spread: Spread) -> Workload {
    Workload {
        endpoints: vec![Endpoint {
            name: "e".into(),
            path: "/e".into(),
            ..Default::default()
        }],
        warmup: plan::Duration::default(),
        phases: vec![Phase {
            name: "p".into(),
            duration: plan::Duration::from_secs(phase_secs),
            load,
        }],
        timeout: Some(plan::Duration::from_secs(5)),
        spread,
    }
}

/// A closed-loop stream of `connections` on endpoint "e".
pub fn closed(connections: u32) -> Stream {
    Stream {
        endpoint: "e".into(),
        connections: Some(connections),
        rate: None,
    }
}
