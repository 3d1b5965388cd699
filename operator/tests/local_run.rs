//! `benchmatrix run` end to end on this machine: real processes, real cgroups, real load.
//!
//! Tests named `timing_*` need the CPU to themselves (nextest runs them one at a time).

mod local_common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchmatrix::fixtures::{connections, endpoint, phase};
use benchmatrix::resource::{BenchmarkRun, Configuration, Mode};
use benchmatrix_loadgen::plan::Spread;
use local_common::{
    alive, cell, descendants_of, exe, figures, leftover_cgroups, quickstart, run, status, text,
};

/// What the seeds found, on a matrix short enough for CI: in the mixed phase /fast's p99 in a
/// single event loop is at least 10x that with a worker pool, and /slow's throughput is about
/// the same with or without a pool (the same 2 CPUs do the same heavy work).
#[test]
fn timing_short_matrix_shows_what_the_seeds_found() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = quickstart("1s", "3s", "8s")
        .with_cell(Configuration::named("single-x1").cpu("2"))
        .with_cell(Configuration::named("single-x2").replicas(2))
        .with_cell(Configuration::named("pool-x1").mode(Mode::Pool).cpu("2"))
        .with_cell(Configuration::named("pool-x2").mode(Mode::Pool).replicas(2))
        .with_spread(Spread::RoundRobin);
    let cells: Vec<&str> = matrix
        .spec
        .configurations
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let started = Instant::now();
    let (o, out) = run(dir.path(), &matrix.to_yaml());
    let took = started.elapsed();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        took < Duration::from_secs(60),
        "the short matrix took {took:?}"
    );

    let st = status(&out);
    assert_eq!(st["phase"].as_str(), Some("Succeeded"), "{st:?}");
    let (single_p99, _) = figures(cell(&st, "single-x1"), "mixed", "fast");
    let (pool_p99, _) = figures(cell(&st, "pool-x1"), "mixed", "fast");
    assert!(
        single_p99 >= 10.0 * pool_p99,
        "mixed /fast p99: single-x1 {single_p99} ms vs pool-x1 {pool_p99} ms\n{t}"
    );
    // /slow throughput is flat: the work is CPU-bound and every cell has the same 2 CPUs. It
    // is flat within the seeds' own range, 2.7 to 5.4 rps, which is 2.0x by construction: one
    // event loop can give /slow one core (single-x1), two loops two (single-x2), and where a
    // pool keeps /fast served, /fast takes its share of the CPU. Round-robin spread, as Node's
    // cluster does it, makes each cell repeatable; with the kernel's random pick both /slow
    // connections sometimes landed on one 1-CPU replica (pool-x2 at 0.6 rps, once).
    // Measured on a quiet 2-core box: 2.4, 4.9, 3.1, 2.3 rps (2.1x), the same in two runs.
    // The bound is the seeds' 2x with a quarter on top for the load generator's and the
    // runner's share of the same two cores.
    let slow: Vec<f64> = cells
        .iter()
        .map(|c| figures(cell(&st, c), "mixed", "slow").1)
        .collect();
    let (lo, hi) = slow
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    assert!(
        lo > 0.0 && hi < 2.5 * lo,
        "mixed /slow rps per cell {slow:?}\n{t}"
    );
    let [single_x1, single_x2, pool_x1, pool_x2] = slow[..] else {
        unreachable!()
    };
    // Between the one-replica cells, the strict 2x holds: same CPUs, one loop or a pool.
    assert!(
        single_x1.max(pool_x1) < 2.0 * single_x1.min(pool_x1),
        "mixed /slow rps per cell {slow:?}\n{t}"
    );
    // A pool does not make heavy work faster: no pool cell beats two plain loops at /slow.
    assert!(
        pool_x1 <= single_x2 * 1.1 && pool_x2 <= single_x2 * 1.1,
        "mixed /slow rps per cell {slow:?}\n{t}"
    );
    // Each two-replica cell spread its work evenly in every phase: each replica's own cgroup
    // shows about half the cell's CPU, and each one's /stats, read on its own address, shows
    // requests served.
    for name in ["single-x2", "pool-x2"] {
        let per = cell(&st, name)["target"]["perReplica"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{name}: no perReplica\n{t}"))
            .clone();
        assert_eq!(per.len(), 2, "{name}: {per:?}");
        for (k, phase) in ["fast-only", "mixed"].iter().enumerate() {
            let of = |r: &serde_yaml::Value, field: &str| {
                assert_eq!(r["phases"][k]["phase"].as_str(), Some(*phase));
                r["phases"][k][field].as_f64().unwrap_or(0.0)
            };
            let cpu: Vec<f64> = per.iter().map(|r| of(r, "cpuSecondsUsed")).collect();
            // Within the report's "uneven" bound: 25% of an even share.
            let share = cpu[0] / (cpu[0] + cpu[1]);
            assert!(
                (0.375..=0.625).contains(&share),
                "{name} {phase}: CPU per replica {cpu:?}\n{t}"
            );
            for r in &per {
                assert!(of(r, "requestsServed") > 0.0, "{name} {phase}: {r:?}");
            }
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## How the work spread over replicas") && !md.contains("Uneven:"),
        "{md}"
    );
    for c in &cells {
        let cs = cell(&st, c);
        let overhead = cs["overheadSeconds"].as_f64().unwrap();
        assert!(overhead < 2.0, "{c} overhead {overhead} s");
        assert_eq!(cs["enforcement"]["target"].as_str(), Some("cgroup-v1"));
    }

    // The report and the charts exist and parse.
    assert!(
        md.contains("### fast in phase mixed") && md.contains("## How each figure was measured")
    );
    let svgs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    for name in [
        "p99-mixed-fast.svg",
        // One throughput chart per phase: their loads differ, so their rates share no axis.
        "throughput-fast-only.svg",
        "throughput-mixed.svg",
        "latency-over-time-fast.svg",
        "report.html",
    ] {
        assert!(out.join(name).exists(), "missing {name}");
    }
    for svg in &svgs {
        let text = std::fs::read_to_string(svg).unwrap();
        assert_well_formed_svg(&text, svg);
        assert!(
            md.contains(svg.file_name().unwrap().to_str().unwrap()),
            "report links {svg:?}"
        );
    }
    // The comparison table is printed at the end.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("p99 vs best") && stdout.contains("pool-x2"),
        "{t}"
    );
    // Into a pipe, progress is a line as each cell starts, one per phase as it ends with the
    // phase's figures, and one as the cell ends: never a line per second.
    for (i, c) in cells.iter().enumerate() {
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{}/4] {c} | ", i + 1)))
            .collect();
        assert_eq!(lines.len(), 5, "{c}: {lines:#?}\n{t}");
        assert!(lines[0].contains("| starting "), "{lines:#?}");
        assert!(lines[1].contains("| warmup 1 s: fast "), "{lines:#?}");
        assert!(lines[2].contains("| fast-only 3 s: fast "), "{lines:#?}");
        assert!(
            lines[3].contains("| mixed 8 s: fast ") && lines[3].contains("; slow "),
            "{lines:#?}"
        );
        assert!(
            lines[3].contains(" rps, p50 ") && !lines[3].contains(" 0.0 ms"),
            "{lines:#?}"
        );
        assert!(lines[4].contains("| done (warm-up + phases "), "{lines:#?}");
    }
    // Shown with --no-capture, so the figures BENCHMARKS.md quotes for this matrix can be had
    // again: cargo nextest run -p benchmatrix --test local_run timing_short --no-capture
    if let Some(at) = stdout.find("phase ") {
        eprintln!("{}", &stdout[at..]);
    }
}

/// A cell with cpu "0.5": the target itself sees 1 CPU, and the cgroup's CPU accounting shows
/// it used about half a core per second even though the load would keep 2 cores busy.
#[test]
fn timing_half_cpu_cell_is_really_limited() {
    let dir = tempfile::tempdir().unwrap();
    // A pool of 2 workers and 4 /slow connections would use 2 cores if nothing limited it.
    let mut half = quickstart("1s", "2s", "6s").with_cell(
        Configuration::named("half")
            .mode(Mode::Pool)
            .cpu("0.5")
            .pool_size(2),
    );
    half.spec.workload.phases[1].load[1] = connections("slow", 4);
    let yaml = half.to_yaml();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    let target = &cell(&st, "half")["target"];
    assert_eq!(target["detectedCpus"].as_u64(), Some(1), "{target:?}");
    assert_eq!(target["cpuQuota"].as_f64(), Some(0.5), "{target:?}");
    let used = target["cpuSecondsUsed"].as_f64().unwrap();
    let cores = used / 8.0;
    assert!(
        (0.35..=0.6).contains(&cores),
        "used {used} CPU s in 8 s = {cores:.2} cores\n{target:?}"
    );
    assert!(
        target["throttledPeriods"].as_u64().unwrap() > 0,
        "{target:?}"
    );
}

/// One connection over two replicas leaves one of them idle, whatever the spread: the status
/// shows it per replica (from each one's cgroup) and the report calls the split uneven.
#[test]
fn timing_an_idle_replica_is_shown_and_called_uneven() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = BenchmarkRun::sample()
        .with_cell(Configuration::named("x2").replicas(2))
        .with_spread(Spread::RoundRobin)
        .with_phases([phase("one-conn", "2s", [connections("fast", 1)])])
        .to_yaml();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    let per = cell(&st, "x2")["target"]["perReplica"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no perReplica\n{t}"))
        .clone();
    let cpu: Vec<f64> = per
        .iter()
        .map(|r| r["phases"][0]["cpuSecondsUsed"].as_f64().unwrap())
        .collect();
    let served: Vec<f64> = per
        .iter()
        .map(|r| r["phases"][0]["requestsServed"].as_f64().unwrap_or(0.0))
        .collect();
    // The dealt-to replica worked the whole phase (its one loop kept busy by /fast); the other
    // only answered the /stats reads.
    assert!(
        cpu[0] > 0.5 && cpu[0] > 5.0 * cpu[1],
        "CPU per replica {cpu:?}\n{t}"
    );
    // (The target counts the /stats read that opened the phase, too.)
    assert!(served[0] > 20.0 && served[1] <= 2.0, "served {served:?}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Uneven: in x2 (one-conn)"), "{md}");
}

/// A target that never listens fails its cell with the reason; the other cells still run and
/// the exit code is 1.
/// A single-mode cell at a quarter CPU with a /slow stream: at every phase boundary a /slow
/// request holds each replica's event loop for about 1.5 s of wall time. The runner's
/// overhead per cell must not grow with it: /stats is read on the target's statistics port,
/// and the replicas are not waited for once the result is in. Before that each boundary's
/// /stats read waited out the 1 s probe timeout (the figures were lost too), and the cell's
/// overhead was 1.8 s; now it is about 0.2 s on a 2-core box.
#[test]
fn timing_a_busy_single_mode_cell_adds_little_runner_overhead() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = BenchmarkRun::sample()
        .with_cell(Configuration::named("single-x2").replicas(2).cpu("250m"))
        .with_spread(Spread::RoundRobin)
        .with_endpoints([endpoint("fast", "/fast"), endpoint("slow", "/slow")])
        .with_warmup("1s")
        .with_phases([phase(
            "mixed",
            "2s",
            [connections("fast", 2), connections("slow", 2)],
        )])
        .to_yaml();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    let cs = cell(&st, "single-x2");
    let overhead = cs["overheadSeconds"].as_f64().unwrap();
    assert!(overhead < 1.0, "overhead {overhead} s\n{t}");
    // Each replica's /stats answered at both ends of the phase, busy as it was.
    let per = cs["target"]["perReplica"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no perReplica\n{t}"));
    assert_eq!(per.len(), 2, "{per:?}");
    for r in per {
        let served = r["phases"][0]["requestsServed"].as_f64();
        assert!(served.is_some_and(|n| n > 0.0), "{r:?}\n{t}");
    }
}

#[test]
fn never_ready_cell_fails_and_the_others_run() {
    let dir = tempfile::tempdir().unwrap();
    // One program for every cell (spec.target.command is run-wide): the built-in target, except
    // in the cell whose mode is `threads`, which sleeps and never listens.
    let script = dir.path().join("target.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$BENCH_MODE\" = threads ]; then exec sleep 60; fi\nexec {} target\n",
            exe().display()
        ),
    )
    .unwrap();
    let yaml = quickstart("0s", "1s", "1s")
        .with_target_command(["sh", &script.display().to_string()])
        .with_ready_timeout("2s")
        .with_cell(Configuration::named("first"))
        .with_cell(Configuration::named("stuck").mode(Mode::Threads))
        .with_cell(Configuration::named("last").mode(Mode::Pool))
        .to_yaml();
    let (o, out) = run(dir.path(), &yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let st = status(&out);
    let stuck = cell(&st, "stuck");
    assert_eq!(stuck["phase"].as_str(), Some("Failed"), "{stuck:?}");
    assert_eq!(stuck["reason"].as_str(), Some("NeverReady"), "{stuck:?}");
    assert!(
        stuck["message"].as_str().unwrap().contains("not ready"),
        "{stuck:?}"
    );
    for name in ["first", "last"] {
        assert_eq!(cell(&st, name)["phase"].as_str(), Some("Succeeded"), "{t}");
        figures(cell(&st, name), "mixed", "fast");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Failed (NeverReady)"), "{md}");
}

/// Ctrl-C in the middle of a cell: children stopped, cgroups removed, the finished cell's
/// results and the interrupted cell's state written, exit code 130.
#[test]
fn ctrl_c_stops_children_removes_cgroups_and_keeps_results_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.yaml");
    // The second cell's phases are long; it will be interrupted.
    let yaml = quickstart("0s", "1s", "4s")
        .with_cell(Configuration::named("done-first").mode(Mode::Pool))
        .with_cell(Configuration::named("cut-short").replicas(2).cpu("0.5"))
        .with_run_slack("10s")
        .to_yaml();
    std::fs::write(&file, &yaml).unwrap();
    // The first cell takes 5 s; the second is interrupted once its replicas exist.
    let out = dir.path().join("out");
    let child = Command::new(exe())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until the second cell's target replicas are up (their cgroups exist).
    let second = Path::new("/sys/fs/cgroup/cpu")
        .join(format!("benchmatrix-{pid}"))
        .join("cut-short-r1");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !second.exists() {
        assert!(Instant::now() < deadline, "the second cell never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let descendants = descendants_of(pid);
    assert!(
        !descendants.is_empty(),
        "the runner has children while a cell runs"
    );
    // SAFETY: kill has no memory-safety preconditions; pid is our child.
    unsafe {
        libc::kill(pid as i32, libc::SIGINT);
    }
    let sent = Instant::now();
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert!(
        sent.elapsed() < Duration::from_secs(8),
        "stopping took {:?}",
        sent.elapsed()
    );
    assert_eq!(o.status.code(), Some(130), "{t}");
    std::thread::sleep(Duration::from_millis(200));
    for d in &descendants {
        assert!(!alive(*d), "child {d} survived Ctrl-C\n{t}");
    }
    assert!(
        leftover_cgroups(pid).is_empty(),
        "cgroups left: {:?}",
        leftover_cgroups(pid)
    );
    let st = status(&out);
    assert_eq!(st["phase"].as_str(), Some("Failed"));
    assert_eq!(cell(&st, "done-first")["phase"].as_str(), Some("Succeeded"));
    figures(cell(&st, "done-first"), "mixed", "fast");
    let cut = cell(&st, "cut-short");
    assert_eq!(cut["reason"].as_str(), Some("Interrupted"), "{cut:?}");
    assert!(out.join("report.md").exists());
}

fn assert_well_formed_svg(text: &str, path: &Path) {
    assert!(
        text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{path:?}"
    );
    assert!(text.trim_end().ends_with("</svg>"), "{path:?}");
    // Balanced elements: every opening tag that is not self-closing has its closing tag.
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let end = rest[start..]
            .find('>')
            .map(|e| start + e)
            .expect("unclosed tag");
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "{path:?}");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap().to_string());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?} in {path:?}");
}
