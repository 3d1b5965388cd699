//! Helpers for tests against a real target process: start it, wait for its "listening on"
//! line, talk plain HTTP/1.1 to it (one fresh connection per request, so which loop thread
//! accepts it is part of what is tested), and always kill it afterwards.

#![allow(dead_code)] // each test binary uses a different subset

pub mod openmetrics;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_benchmatrix-target");

/// A running target; killed on drop.
pub struct Target {
    pub child: Child,
    pub addr: SocketAddr,
    /// Lines printed to stdout after the listening line (the contract says there are none).
    pub extra_stdout: Arc<Mutex<Vec<String>>>,
}

impl Target {
    /// Starts the target on 127.0.0.1 with a free port and `args`.
    pub fn start(args: &[&str]) -> Target {
        let mut cmd = Command::new(BIN);
        cmd.args(["--host", "127.0.0.1", "--port", "0"]).args(args);
        Target::spawn(cmd)
    }

    /// Starts the target on 127.0.0.1 with a free port, `args` and the environment `env`
    /// (set after the test runner's own target variables are cleared).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Target {
        let mut cmd = Command::new(BIN);
        cmd.args(["--host", "127.0.0.1", "--port", "0"]).args(args);
        Target::spawn_with_env(cmd, env)
    }

    /// Spawns `cmd` (which must run the target) and waits for its listening line.
    pub fn spawn(cmd: Command) -> Target {
        Target::spawn_with_env(cmd, &[])
    }

    /// Spawns `cmd` with `env` and waits for its listening line.
    pub fn spawn_with_env(mut cmd: Command, env: &[(&str, &str)]) -> Target {
        // The environment of the test runner must not change the mode under test.
        for var in [
            "BENCH_MODE",
            "PORT",
            "BENCH_HOST",
            "BENCH_THREADS",
            "BENCH_POOL_SIZE",
            "BENCH_QUEUE_DEPTH",
            "BENCH_OFFLOAD",
            "BENCH_OFFLOAD_THRESHOLD_MS",
            "BENCH_FAST_MS",
            "BENCH_SLOW_MS",
            "BENCH_TASK_DEADLINE_MS",
            "BENCH_GRACE_PERIOD",
            "BENCH_HEADER_TIMEOUT",
            "BENCH_IDLE_TIMEOUT",
            "BENCH_MAX_CONNECTIONS",
            "BENCH_STATS_PORT",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the target");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let extra_stdout = Arc::new(Mutex::new(Vec::new()));
        let extra = Arc::clone(&extra_stdout);
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(|l| l.ok());
            let _ = tx.send(first);
            for line in lines.map_while(Result::ok) {
                extra.lock().unwrap().push(line);
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Some(line)) => line,
            other => {
                let _ = child.kill();
                panic!("target did not print its listening line: {other:?}");
            }
        };
        let addr = line
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .parse()
            .expect("address in the listening line");
        Target {
            child,
            addr,
            extra_stdout,
        }
    }

    /// GET `path` on a fresh connection.
    pub fn get(&self, path: &str) -> Reply {
        get(self.addr, path)
    }

    /// `/stats` as JSON.
    pub fn stats(&self) -> serde_json::Value {
        let r = self.get("/stats");
        assert_eq!(r.status, 200, "{}", r.body);
        serde_json::from_str(&r.body).expect("stats JSON")
    }

    /// Sends SIGTERM and waits (at most `limit`) for the exit status.
    pub fn terminate(&mut self, limit: Duration) -> ExitStatus {
        // SAFETY: kill with a pid we own.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.wait(limit)
    }

    /// Waits for exit, at most `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < limit,
                "target did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Longest a test's GET may take, connect to last byte: far above the slowest endpoint a
/// test asks for (`/cpu?ms=10000` queued behind others), so only a hang reaches it.
pub const GET_TIMEOUT: Duration = Duration::from_secs(60);

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// From connect to the end of the response.
    pub elapsed: Duration,
    /// When the connection was opened.
    pub started: Instant,
    /// When the whole response had arrived.
    pub finished: Instant,
}

impl Reply {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// GET `path` from `addr` on a new connection with `Connection: close`; panics on I/O errors.
pub fn get(addr: SocketAddr, path: &str) -> Reply {
    try_get(addr, path).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// GET `path` from `addr` on a new connection with `Connection: close`, through the
/// workspace's one blocking client (`benchmatrix_quota::http`, the one the local runner probes
/// targets with); at most [`GET_TIMEOUT`] for the whole exchange.
pub fn try_get(addr: SocketAddr, path: &str) -> std::io::Result<Reply> {
    let started = Instant::now();
    let r = benchmatrix_quota::http::get(addr, path, GET_TIMEOUT)?;
    let finished = Instant::now();
    Ok(Reply {
        status: r.status,
        headers: r.headers,
        body: String::from_utf8_lossy(&r.body).into_owned(),
        elapsed: finished - started,
        started,
        finished,
    })
}

/// GET on a background thread; join the handle for the reply (an error if the target died).
pub fn get_in_background(
    addr: SocketAddr,
    path: &str,
) -> std::thread::JoinHandle<std::io::Result<Reply>> {
    let path = path.to_string();
    std::thread::spawn(move || try_get(addr, &path))
}

/// Runs the binary with `args` and extra `env` to its exit (at most 20 s): (exit code, stderr).
pub fn run_to_exit(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the target");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{}` did not exit within 20 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), reader.join().unwrap())
}

/// Polls `/stats` until `ready` holds (at most `limit`), returning the last document.
pub fn wait_for_stats(
    t: &Target,
    limit: Duration,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = t.stats();
        if ready(&s) {
            return s;
        }
        assert!(start.elapsed() < limit, "stats never got there: {s}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Milliseconds, for messages.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
