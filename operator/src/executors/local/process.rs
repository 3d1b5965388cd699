//! The runner's children as processes: how they are started tied to the runner, signalled as
//! a group, stopped, reaped, and how what they started is read from /proc. One copy of each,
//! shared by the replicas, the load generator, the guard and the cgroups.

use std::fs;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::guard;

/// Puts the child in its own process group, so a Ctrl-C at the terminal reaches only the
/// runner, which then stops children in order and still collects what was measured, and so
/// the child and everything it starts can be signalled as one; and asks the kernel to SIGKILL
/// the child should the runner die without cleaning up (SIGKILL, crash).
///
/// The kernel sends that signal when the *thread* that spawned the child exits, not the
/// process: spawn only from a thread that lives as long as the child (the runner spawns from
/// its main thread). The child's own children are not covered by it; register the child with
/// [`guard::watch`] so the guard ends its whole group if the runner dies.
pub fn tie_to_runner(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    let runner = std::process::id() as libc::pid_t;
    // SAFETY: runs in the forked child before exec; prctl and getppid are async-signal-safe
    // and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The runner may have died between the fork and the prctl, when no signal would
            // come any more: then this child has been reparented already and must not run.
            if libc::getppid() != runner {
                return Err(std::io::Error::other("the runner is gone"));
            }
            Ok(())
        });
    }
}

/// Sends `sig` to the process group led by `leader` (a child started with [`tie_to_runner`]).
/// The group id stays reserved while any member lives, so this cannot reach a stranger while
/// something of the group is left; once the group is empty it reaches no one.
pub fn signal_group(leader: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(-(leader as libc::pid_t), sig);
    }
}

/// Sends `sig` to the one process `pid`, for members of a cgroup, which need not lead a group.
pub fn signal_process(pid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// The child's exit status once it has ended, reaping it, so an exited child is never
/// mistaken for a live one the way a zombie's /proc entry would be; `None` while it runs (or
/// when it cannot be asked).
pub fn exit_status(child: &mut Child) -> Option<ExitStatus> {
    child.try_wait().ok().flatten()
}

/// Whether the child is known to be still running; one that cannot be asked counts as gone,
/// so a stop loop never waits on it.
pub fn is_running(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// Sends SIGTERM to every child's process group (each child leads its own, see
/// [`tie_to_runner`], so what a shell wrapper started is stopped with it), waits up to `grace`
/// for the children, then SIGKILLs what is left of each group, reaps the children and tells
/// the guard they are gone.
pub fn stop_children(children: &mut [&mut Child], grace: Duration) {
    for c in children.iter() {
        signal_group(c.id(), libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        let mut alive = 0;
        for c in children.iter_mut() {
            if is_running(c) {
                alive += 1;
            }
        }
        if alive == 0 || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for c in children.iter_mut() {
        signal_group(c.id(), libc::SIGKILL);
        let _ = c.kill();
        let _ = c.wait();
        guard::unwatch(c.id());
    }
}

/// The fields of /proc/PID/stat the runner uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The command name (field 2, without its parentheses; it may hold spaces and ')').
    pub command: String,
    /// The state letter (field 3): `R`, `S`, `Z` for a zombie, ...
    pub state: char,
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// CPU time used in clock ticks, user plus system (fields 14 and 15).
    pub cpu_ticks: u64,
    /// When the process started, in clock ticks after boot (field 22): with the pid, it tells
    /// a process from a later one that reuses the pid.
    pub start_ticks: u64,
}

impl ProcStat {
    /// Reads /proc/`pid`/stat; `None` when the process is gone (zombies still have one).
    pub fn read(pid: u32) -> Option<ProcStat> {
        ProcStat::parse(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parses the text of a /proc/PID/stat file. The command name may contain spaces and
    /// parentheses, so it runs from the first '(' to the last ')', and the other fields are
    /// counted after it.
    pub fn parse(stat: &str) -> Option<ProcStat> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let command = stat.get(open + 1..close)?.to_string();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // fields[0] is field 3 of stat(5).
        let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
        Some(ProcStat {
            command,
            state: fields.first()?.chars().next()?,
            ppid: u32::try_from(field(4)?).ok()?,
            cpu_ticks: field(14)? + field(15)?,
            start_ticks: field(22)?,
        })
    }

    /// Whether the process has ended and only waits to be reaped (`Z`, or `X`/`x` dead).
    pub fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// A process that must stay alive, remembered so that a later process reusing its pid is not
/// taken for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveProcess {
    /// Its pid.
    pub pid: u32,
    /// Its command name, for messages.
    pub command: String,
    start_ticks: u64,
}

impl LiveProcess {
    /// The process `pid` as it is now; `None` if it is gone or a zombie.
    pub fn read(pid: u32) -> Option<LiveProcess> {
        let stat = ProcStat::read(pid).filter(|s| !s.ended())?;
        Some(LiveProcess {
            pid,
            command: stat.command,
            start_ticks: stat.start_ticks,
        })
    }

    /// Whether this very process still runs (not exited, not reaped and replaced).
    pub fn running(&self) -> bool {
        LiveProcess::read(self.pid).is_some_and(|now| now.start_ticks == self.start_ticks)
    }
}

/// `root` and all its descendants (zombies included), found through each process' parent in
/// /proc/PID/stat; `root` first, then breadth first.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(stat) = ProcStat::read(pid) {
                parent_of.push((pid, stat.ppid));
            }
        }
    }
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        next += 1;
    }
    tree
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let ticks = ProcStat::read(pid)?.cpu_ticks;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / hz)
}

/// (VmRSS, VmHWM) in bytes of a live process, from /proc/PID/status.
pub fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((kb("VmRSS:")? * 1024, kb("VmHWM:")? * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        // A real line of /proc/PID/stat with the name "a) (b c" planted.
        let line = "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 987654 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = ProcStat::parse(line).unwrap();
        assert_eq!(s.command, "a) (b c");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 17);
        assert_eq!(s.cpu_ticks, 300);
        assert_eq!(s.start_ticks, 987654);
        assert!(!s.ended());
        let zombie = line.replace(") S 17", ") Z 17");
        assert!(ProcStat::parse(&zombie).unwrap().ended());
        assert_eq!(ProcStat::parse("4242 (cut"), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = ProcStat::read(std::process::id()).unwrap();
        // SAFETY: getppid has no preconditions.
        assert_eq!(me.ppid, unsafe { libc::getppid() } as u32);
        let live = LiveProcess::read(std::process::id()).unwrap();
        assert!(live.running());
    }

    #[test]
    fn reads_rss_of_a_live_process() {
        let (rss, hwm) = rss(std::process::id()).unwrap();
        assert!(rss > 0 && hwm >= rss);
    }

    #[test]
    fn cpu_of_a_busy_process() {
        // `exec` keeps the pid (and its CPU times) and leaves no orphaned grandchild behind.
        let mut child = Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 5",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(1500));
        let secs = cpu_secs(child.id()).expect("stat");
        let _ = child.kill();
        let _ = child.wait();
        assert!(secs > 0.05, "a busy loop used {secs} s");
    }

    #[test]
    fn the_process_tree_holds_forked_workers_and_grandchildren() {
        // A parent with two sleeping children, one of which has a child of its own: the shape of
        // a node:cluster primary whose memory must be counted with its workers'.
        let mut parent = Command::new("sh")
            .arg("-c")
            .arg("sleep 30 & sh -c 'sleep 30 & wait' & wait")
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut tree = process_tree(parent.id());
        while tree.len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            tree = process_tree(parent.id());
        }
        let _ = parent.kill();
        for pid in &tree[1..] {
            signal_process(*pid, libc::SIGKILL);
        }
        let _ = parent.wait();
        assert_eq!(tree[0], parent.id());
        assert_eq!(
            tree.len(),
            4,
            "parent, two children and a grandchild: {tree:?}"
        );
        assert!(!tree.contains(&std::process::id()));
    }

    /// A child that ignores SIGTERM and has a child of its own: stopping it with a short grace
    /// ends both (the whole group), and reaps the child.
    #[test]
    fn stopping_a_child_ends_its_whole_group() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; sleep 30 & wait"]);
        tie_to_runner(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut tree = process_tree(child.id());
        while tree.len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            tree = process_tree(child.id());
        }
        assert_eq!(tree.len(), 2, "{tree:?}");
        let sleeper = LiveProcess::read(tree[1]).unwrap();
        assert!(is_running(&mut child));
        let start = Instant::now();
        stop_children(&mut [&mut child], Duration::from_millis(300));
        assert!(start.elapsed() < Duration::from_secs(3));
        assert!(!is_running(&mut child));
        assert!(exit_status(&mut child).is_some_and(|s| !s.success()));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!sleeper.running(), "the grandchild in its group was killed");
    }
}
