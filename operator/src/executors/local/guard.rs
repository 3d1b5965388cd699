//! A small process that outlives the runner by a moment, so that nothing the runner started
//! survives it, whatever ends the runner.
//!
//! Each child the runner starts gets `PR_SET_PDEATHSIG(SIGKILL)`, but only the child: the
//! server a `sh -c '... &'` wrapper starts, or a target's forked workers, would be left
//! listening if the runner were SIGKILLed. So the runner forks this guard before anything
//! else, tells it over a pipe which process groups it started and stopped (each child leads
//! its own group), and when that pipe closes without a clean goodbye, the runner is gone: the
//! guard SIGKILLs every group still registered and exits. A process that leaves its group on
//! purpose (setsid) is beyond its reach.

use std::fs::File;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;

/// The runner's end of the pipe and the guard's pid; `None` without a guard.
static GUARD: Mutex<Option<(File, libc::pid_t)>> = Mutex::new(None);

/// Forks the guard. Call it first thing, while the process has a single thread (the forked
/// guard then owns a consistent copy of the memory it uses). Without a guard (the fork
/// failed) children still get PDEATHSIG; a note says so.
pub fn start() {
    // A fork of a multi-threaded process may inherit a lock some other thread held; the guard
    // allocates, so it is only forked from a process with one thread.
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0);
    if threads != 1 {
        eprintln!(
            "benchmatrix run: note: no guard process ({threads} threads at start); a killed \
             runner may leave a wrapped target's children behind"
        );
        return;
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given. O_CLOEXEC keeps the
    // write end out of every program the runner executes, so only the runner holds it.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!(
            "benchmatrix run: note: no guard process ({}); a killed runner may leave a wrapped \
             target's children behind",
            std::io::Error::last_os_error()
        );
        return;
    }
    // SAFETY: the descriptors were just created and are owned here alone.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // SAFETY: the runner is single-threaded here (see above), so the child may run ordinary
    // code; it never returns from `guard_main`.
    match unsafe { libc::fork() } {
        -1 => eprintln!(
            "benchmatrix run: note: no guard process ({}); a killed runner may leave a wrapped \
             target's children behind",
            std::io::Error::last_os_error()
        ),
        0 => {
            drop(write_end);
            guard_main(File::from(read_end));
        }
        pid => {
            drop(read_end);
            *GUARD.lock().unwrap_or_else(|e| e.into_inner()) = Some((write_end, pid));
        }
    }
}

/// Registers the process group led by `leader`: should the runner die, the guard kills it.
pub fn watch(leader: u32) {
    send(&format!("+{leader}\n"));
}

/// Forgets the group led by `leader`, once the runner has stopped it.
pub fn unwatch(leader: u32) {
    send(&format!("-{leader}\n"));
}

/// A clean end: the guard exits without killing anything, and is reaped.
pub fn finish() {
    let taken = GUARD.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((mut pipe, pid)) = taken {
        let _ = pipe.write_all(b"done\n");
        drop(pipe);
        // SAFETY: waits for our own child; a null status pointer is allowed.
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

fn send(line: &str) {
    // Lines are far shorter than PIPE_BUF, so each write reaches the guard whole.
    if let Some((pipe, _)) = GUARD.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = pipe.write_all(line.as_bytes());
    }
}

/// The guard itself: follows the registrations until the pipe closes, then kills what is left
/// unless the runner said goodbye.
fn guard_main(pipe: File) -> ! {
    use std::io::{BufRead, BufReader};
    // Out of the runner's process group, so a Ctrl-C at the terminal (sent to the whole
    // foreground group) reaches the runner, which stops its children itself, and not the
    // guard; SIGTERM is ignored for the same reason: the runner's own SIGTERM path cleans up.
    // Its output goes nowhere, so a reader of the runner's output sees its end when the
    // runner ends.
    // SAFETY: setpgid, signal, open and dup2 have no memory-safety preconditions; the path is
    // a NUL-terminated literal.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        libc::setpgid(0, 0);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
    let mut groups: Vec<u32> = Vec::new();
    let mut clean = false;
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        if line == "done" {
            clean = true;
            break;
        }
        let (sign, pid) = line.split_at(line.len().min(1));
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        match sign {
            "+" => groups.push(pid),
            "-" => groups.retain(|&g| g != pid),
            _ => {}
        }
    }
    if !clean {
        for g in groups {
            // SAFETY: kill has no memory-safety preconditions. A plain call rather than the
            // runner's helpers: this forked copy needs nothing of the runner's modules.
            unsafe {
                libc::kill(-(g as libc::pid_t), libc::SIGKILL);
            }
        }
    }
    // SAFETY: ends this forked copy at once, without running the runner's exit handlers.
    unsafe { libc::_exit(0) }
}
