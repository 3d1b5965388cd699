//! What wakes the local runner between turns of the run engine.
//!
//! The machine says when it wants to look again at the latest ([`Command::WakeIn`]: a ready
//! timeout, a load deadline). Between those, the runner sleeps until something it watches
//! changes in a way the machine should see: a process of the step ends (a replica, a process a
//! replica started, the load generator), the replicas answer their readiness path, the load
//! generator's output closes, or a signal arrives. Progress lines of the load generator wake
//! it too, but only for the display: they are no news to the machine.
//!
//! Each source is a thread that blocks on what it watches and sends one [`Wake`] into the
//! runner's channel: a process's end through a pidfd (poll(2) on it returns when the process
//! exits, zombie or not), readiness by probing as a kubelet's readiness probe does, the load
//! generator's output by reading it. The runner's own thread only waits on the channel.
//!
//! [`Command::WakeIn`]: crate::engine::machine::Command::WakeIn

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::process::ProcStat;
use crate::frontends::progress::ProgressLine;

/// Something the runner should look at.
#[derive(Debug)]
pub struct Wake {
    /// The step it is about (the runner's count of steps started), so a late wake from a step
    /// already stopped is told apart; signals belong to every step.
    pub step: u64,
    /// What happened.
    pub kind: WakeKind,
}

/// What happened.
#[derive(Debug)]
pub enum WakeKind {
    /// A watched process ended.
    Exited,
    /// Every replica answers its readiness path.
    Ready,
    /// A progress line of the load generator, for the display.
    Progress(ProgressLine),
    /// The load generator's output closed: it has ended, or is about to.
    OutputClosed,
    /// SIGINT or SIGTERM arrived.
    Signal,
}

/// The runner's end of the channel every source sends into.
#[derive(Debug)]
pub struct Wakes {
    tx: Sender<Wake>,
    rx: Receiver<Wake>,
}

impl Default for Wakes {
    fn default() -> Self {
        let (tx, rx) = channel();
        Wakes { tx, rx }
    }
}

impl Wakes {
    /// A sender for step `step`'s sources.
    pub fn waker(&self, step: u64) -> Waker {
        Waker {
            step,
            tx: self.tx.clone(),
        }
    }

    /// The next wake, or `None` once `until` has passed without one.
    pub fn next(&self, until: Instant) -> Option<Wake> {
        // The runner holds a sender itself, so the channel never disconnects: an error is the
        // timeout.
        self.rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .ok()
    }
}

/// What a source sends with: its step and the channel.
#[derive(Debug, Clone)]
pub struct Waker {
    step: u64,
    tx: Sender<Wake>,
}

impl Waker {
    /// Sends `kind`; false when the runner is gone (the source may stop).
    pub fn wake(&self, kind: WakeKind) -> bool {
        self.tx
            .send(Wake {
                step: self.step,
                kind,
            })
            .is_ok()
    }
}

/// A watcher thread that stops when this is dropped (or when what it watches happens).
#[derive(Debug)]
pub struct Watching {
    stop: Arc<AtomicBool>,
    /// Written to when dropped, so a thread blocked in poll(2) on it wakes at once.
    stop_fd: Option<Arc<OwnedFd>>,
}

impl Watching {
    fn new(stop_fd: Option<Arc<OwnedFd>>) -> Watching {
        Watching {
            stop: Arc::new(AtomicBool::new(false)),
            stop_fd,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.stop_fd {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to an eventfd this value owns a share of.
            unsafe {
                libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8);
            }
        }
    }
}

/// How often the fallback watch (no pidfd: a kernel before 5.3) reads /proc for an end.
const PROC_POLL: Duration = Duration::from_millis(20);

/// Wakes with [`WakeKind::Exited`] once process `pid` has ended (a zombie counts: it has).
pub fn on_exit(pid: u32, waker: Waker) -> Watching {
    let stop_fd = eventfd();
    let watching = Watching::new(stop_fd.clone());
    let stop = watching.stop.clone();
    let pidfd = pidfd_open(pid);
    std::thread::spawn(move || {
        let ended = match (pidfd, stop_fd) {
            (Some(pidfd), Some(stop_fd)) => wait_readable(&pidfd, &stop_fd),
            _ => poll_proc(pid, &stop),
        };
        if ended {
            waker.wake(WakeKind::Exited);
        }
    });
    watching
}

/// Blocks until `pidfd` is readable (its process ended: true) or `stop_fd` is (false).
fn wait_readable(pidfd: &OwnedFd, stop_fd: &OwnedFd) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop_fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a live array of two initialised pollfd, its length passed.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if fds[1].revents != 0 {
            return false;
        }
        if fds[0].revents != 0 {
            return true;
        }
    }
}

/// The fallback: reads /proc/`pid`/stat until the process is gone or a zombie.
fn poll_proc(pid: u32, stop: &AtomicBool) -> bool {
    while !stop.load(Ordering::SeqCst) {
        if ProcStat::read(pid).is_none_or(|s| s.ended()) {
            return true;
        }
        std::thread::sleep(PROC_POLL);
    }
    false
}

/// How often readiness is probed: a replica is seen ready up to this much late, which adds
/// to every cell's overhead (the kubelet's probes have a period too).
pub const READY_PROBE_PERIOD: Duration = Duration::from_millis(20);

/// A readiness probe run by a thread of its own until it passes; the runner reads its last
/// answer instead of probing again (a target may answer once and then not: the first answer
/// is the one that counts, as a kubelet's probe's is).
#[derive(Debug)]
pub struct ReadyWatch {
    last: Arc<Mutex<Result<(), String>>>,
    _watching: Watching,
}

impl ReadyWatch {
    /// The probe's last answer: `Ok` once it passed, else why not.
    pub fn last(&self) -> Result<(), String> {
        self.last
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|_| Err("the readiness probe failed".into()))
    }
}

/// Probes with `probe` every [`READY_PROBE_PERIOD`] and wakes with [`WakeKind::Ready`] the
/// first time it passes; then stops.
pub fn on_ready(
    probe: impl Fn() -> Result<(), String> + Send + 'static,
    waker: Waker,
) -> ReadyWatch {
    let watching = Watching::new(None);
    let stop = watching.stop.clone();
    let last = Arc::new(Mutex::new(Err("not probed yet".to_owned())));
    let answers = last.clone();
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let answer = probe();
            let passed = answer.is_ok();
            if let Ok(mut l) = answers.lock() {
                *l = answer;
            }
            if passed {
                waker.wake(WakeKind::Ready);
                return;
            }
            std::thread::sleep(READY_PROBE_PERIOD);
        }
    });
    ReadyWatch {
        last,
        _watching: watching,
    }
}

/// A pidfd of `pid`, or `None` where the kernel has none (before 5.3) or the process is gone.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a descriptor this process now owns alone.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// A new eventfd (close-on-exec), or `None` when none can be made.
fn eventfd() -> Option<Arc<OwnedFd>> {
    // SAFETY: eventfd returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    // SAFETY: a non-negative return is a descriptor this process now owns alone.
    (fd >= 0).then(|| Arc::new(unsafe { OwnedFd::from_raw_fd(fd) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_ends_wakes_its_watcher_at_once_and_a_dropped_watch_sends_nothing() {
        let wakes = Wakes::default();
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let started = Instant::now();
        let _watch = on_exit(child.id(), wakes.waker(7));
        let wake = wakes
            .next(Instant::now() + Duration::from_secs(5))
            .expect("woken");
        assert_eq!(wake.step, 7);
        assert!(matches!(wake.kind, WakeKind::Exited));
        // Woken by the end itself, not by a poll long after it.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        child.wait().unwrap();

        let mut long = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        drop(on_exit(long.id(), wakes.waker(8)));
        assert!(
            wakes
                .next(Instant::now() + Duration::from_millis(300))
                .is_none()
        );
        long.kill().unwrap();
        long.wait().unwrap();
    }

    #[test]
    fn readiness_wakes_once_when_the_probe_first_passes() {
        let wakes = Wakes::default();
        let since = Instant::now();
        let watch = on_ready(
            move || {
                if since.elapsed() > Duration::from_millis(100) {
                    Ok(())
                } else {
                    Err("starting".into())
                }
            },
            wakes.waker(1),
        );
        assert!(watch.last().is_err());
        let wake = wakes.next(Instant::now() + Duration::from_secs(5)).unwrap();
        assert!(matches!(wake.kind, WakeKind::Ready));
        assert_eq!(watch.last(), Ok(()));
        assert!(
            wakes
                .next(Instant::now() + Duration::from_millis(200))
                .is_none()
        );
    }
}
