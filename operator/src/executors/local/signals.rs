//! Ctrl-C and SIGTERM during `benchmatrix run`: the handler only raises a flag and writes a
//! byte to a pipe (the things a signal handler may safely do). Every wait in the runner sees
//! the flag; the runner's wait between engine turns is woken through the pipe
//! ([`wake_on_signal`]). The run then unwinds through the normal `Drop`s (children stopped,
//! cgroups removed) and writes the results so far.

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::wake::{WakeKind, Waker};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The pipe the handler writes to: its write end (-1 until [`install`]) and its read end,
/// taken once by [`wake_on_signal`].
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static PIPE_READ: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a live local. A full pipe (many
        // signals unread) drops the byte, which is fine: one wakes the runner.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Installs the SIGINT and SIGTERM handlers.
pub fn install() {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given. Non-blocking, so the
    // handler never blocks on a full pipe; close-on-exec, so no child inherits either end.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
        PIPE_READ.store(fds[0], Ordering::SeqCst);
        PIPE_WRITE.store(fds[1], Ordering::SeqCst);
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic and writes to a pipe, both
        // async-signal-safe; the sigaction struct is fully initialised (zeroed, then the
        // handler and an empty mask).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// True once SIGINT or SIGTERM has arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Wakes the runner through `waker` on every signal from now on (a signal that came before
/// wakes it at once). Does nothing without [`install`], or when called a second time.
pub fn wake_on_signal(waker: Waker) {
    let fd = PIPE_READ.swap(-1, Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    if interrupted() {
        waker.wake(WakeKind::Signal);
    }
    // SAFETY: `fd` is the pipe's read end, taken out of PIPE_READ above so no one else owns it.
    let mut pipe = unsafe { File::from_raw_fd(fd) };
    // The read end is non-blocking too (pipe2 sets the flag on both): make it block, so the
    // thread sleeps in read(2) until a signal.
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        while matches!(pipe.read(&mut byte), Ok(1)) {
            if !waker.wake(WakeKind::Signal) {
                return;
            }
        }
    });
}
