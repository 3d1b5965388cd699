use indicatif::{InMemoryTerm, ProgressDrawTarget};

use super::*;

use crate::fixtures::Buffer;

/// Two cells, pool-x1 and single-x1, two repetitions each, the quickstart's load (1 s
/// warm-up, 5 s and 8 s phases).
fn plan() -> Plan {
    Plan {
        cells: vec!["pool-x1".into(), "single-x1".into()],
        repeat: 2,
        load: [("warmup", 1), ("fast-only", 5), ("mixed", 8)]
            .map(|(n, d)| (n.to_string(), Duration::from_secs(d)))
            .to_vec(),
        searches: false,
    }
}

fn stream(
    endpoint: &str,
    requests: u64,
    errors: u64,
    rps: f64,
    p99: Option<f64>,
) -> StreamProgress {
    StreamProgress {
        endpoint: endpoint.into(),
        requests,
        errors,
        rps,
        p50_ms: p99.map(|v| v / 4.0),
        p99_ms: p99,
    }
}

fn phase(name: &str, secs: f64, streams: Vec<StreamProgress>) -> PhaseFigures {
    PhaseFigures {
        phase: name.into(),
        elapsed_secs: secs,
        streams,
    }
}

/// One measurement as the load generator reports it: a line per second of each phase, then
/// the phase's own; in the mixed phase every /slow request fails.
fn one_measurement(d: &mut Display, step: Step) {
    d.show(Update::Started {
        step,
        detail: "starting pool x 1 replica(s), cpu 2 each (cgroup-v2), port 4000",
    });
    let parts = [("warmup", 1), ("fast-only", 5), ("mixed", 8)];
    for (name, secs) in parts {
        for s in 1..=secs {
            let mut streams = vec![stream("fast", 80 * s, 0, 80.0, Some(48.25))];
            if name == "mixed" {
                streams.push(stream("slow", 175 * s, 175 * s, 0.0, None));
            }
            let figures = phase(name, s as f64, streams);
            d.show(Update::PhaseProgress {
                step,
                figures: &figures,
            });
        }
        let mut streams = vec![stream("fast", 80 * secs, 0, 80.04, Some(31.2))];
        if name == "mixed" {
            streams.push(stream("slow", 1398, 1398, 0.0, None));
        }
        let figures = phase(name, secs as f64, streams);
        d.show(Update::PhaseEnded {
            step,
            figures: &figures,
        });
    }
}

fn step(cell: usize, repetition: u32) -> Step {
    Step { cell, repetition }
}

#[test]
fn plain_lines_are_one_per_phase_with_its_figures_never_one_per_second() {
    let out = Buffer::default();
    let mut d = Display::plain(plan(), Box::new(out.clone()));
    let a = step(0, 1);
    one_measurement(&mut d, a);
    d.show(Update::Succeeded {
        step: a,
        detail: "warm-up + phases 14.0 s ran in 14.05 s",
    });
    let b = step(1, 1);
    d.show(Update::Started {
        step: b,
        detail: "starting single x 1 replica(s)",
    });
    d.show(Update::Failed {
        step: b,
        reason: "ReplicaExited",
        message: "replica 0 exited with status 1",
    });
    // The second cell failed: its other repetition is dropped.
    d.show(Update::Measurements { done: 2, total: 3 });
    d.show(Update::Finished);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..7],
        [
            "[1/4] pool-x1 rep 1/2 | starting pool x 1 replica(s), cpu 2 each (cgroup-v2), port 4000",
            "[1/4] pool-x1 rep 1/2 | warmup 1 s: fast 80.0 rps, p50 7.8 ms, p99 31.2 ms",
            "[1/4] pool-x1 rep 1/2 | fast-only 5 s: fast 80.0 rps, p50 7.8 ms, p99 31.2 ms",
            "[1/4] pool-x1 rep 1/2 | mixed 8 s: fast 80.0 rps, p50 7.8 ms, p99 31.2 ms; \
             slow no successful responses, 1398 errors",
            "[1/4] pool-x1 rep 1/2 | done (warm-up + phases 14.0 s ran in 14.05 s)",
            "[2/4] single-x1 rep 1/2 | starting single x 1 replica(s)",
            "[2/4] single-x1 rep 1/2 | FAILED (ReplicaExited): replica 0 exited with status 1",
        ]
    );
    assert!(lines[7].starts_with("2 measurements in "), "{text}");
    assert_eq!(lines.len(), 8, "{text}");
    assert!(!text.contains(" 0.0 ms"), "{text}");
}

#[test]
fn a_run_without_repetitions_names_the_cell_alone() {
    let out = Buffer::default();
    let plan = Plan {
        cells: vec!["a".into(), "b".into()],
        repeat: 1,
        ..plan()
    };
    let mut d = Display::plain(plan, Box::new(out.clone()));
    d.show(Update::Started {
        step: step(0, 1),
        detail: "starting",
    });
    assert_eq!(out.text(), "[1/2] a | starting\n");
}

/// A capacity run counts searches, not probes: each probe is named by its number under the
/// count of the search it belongs to, a probe's end leaves the count where it was (the status
/// says when a search is done), and the last line says how many probes the searches took.
#[test]
fn a_capacity_run_counts_its_searches_and_names_each_probe() {
    let out = Buffer::default();
    let plan = Plan {
        cells: vec!["a".into(), "b".into()],
        repeat: 1,
        searches: true,
        ..plan()
    };
    let mut d = Display::plain(plan, Box::new(out.clone()));
    let probe = |d: &mut Display, cell: usize, number: u32, done: usize| {
        d.show(Update::Measurements { done, total: 2 });
        d.show(Update::Started {
            step: step(cell, number),
            detail: "probing",
        });
        d.show(Update::Succeeded {
            step: step(cell, number),
            detail: "5s",
        });
    };
    probe(&mut d, 0, 1, 0);
    probe(&mut d, 0, 2, 0);
    probe(&mut d, 0, 3, 0);
    probe(&mut d, 1, 1, 1);
    d.show(Update::Measurements { done: 2, total: 2 });
    d.show(Update::Finished);
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..8],
        [
            "[1/2] a probe 1 | probing",
            "[1/2] a probe 1 | done (5s)",
            "[1/2] a probe 2 | probing",
            "[1/2] a probe 2 | done (5s)",
            "[1/2] a probe 3 | probing",
            "[1/2] a probe 3 | done (5s)",
            "[2/2] b probe 1 | probing",
            "[2/2] b probe 1 | done (5s)",
        ],
        "{text}"
    );
    assert!(
        lines[8].starts_with("2 capacity searches (4 probes) in "),
        "{text}"
    );
}

#[test]
fn a_terminal_sees_the_overall_bar_and_the_current_phase_live() {
    let term = InMemoryTerm::new(12, 200);
    let target = ProgressDrawTarget::term_like(Box::new(term.clone()));
    let mut d = Display::live(plan(), target);
    let a = step(0, 1);
    d.show(Update::Measurements { done: 0, total: 4 });
    d.show(Update::Started {
        step: a,
        detail: "starting pool x 1 replica(s)",
    });
    let screen = term.contents();
    assert!(screen.contains("0/4 measurements"), "{screen}");
    // Nothing measured yet: four times the planned 14 s of load.
    assert!(screen.contains("about 56s left"), "{screen}");
    assert!(
        screen.contains("\npool-x1 rep 1/2 · starting pool x 1 replica(s)"),
        "{screen}"
    );
    let live = phase(
        "mixed",
        3.0,
        vec![
            stream("fast", 240, 0, 81.0, Some(48.25)),
            stream("slow", 12, 12, 0.0, None),
        ],
    );
    d.show(Update::PhaseProgress {
        step: a,
        figures: &live,
    });
    let screen = term.contents();
    assert!(
        screen.contains(
            "pool-x1 rep 1/2 · mixed 3/8 s · fast 81.0 rps p99 48.2 ms · slow no successful \
             responses, 12 errors"
        ),
        "{screen}"
    );

    // Each measurement leaves one line above the bars, with its phases' figures.
    one_measurement(&mut d, a);
    d.show(Update::Succeeded {
        step: a,
        detail: "warm-up + phases 14.0 s ran in 14.05 s",
    });
    let screen = term.contents();
    assert!(
        screen.contains(
            "[1/4] pool-x1 rep 1/2 | fast-only fast 80.0 rps p99 31.2 ms; mixed fast 80.0 rps p99 \
             31.2 ms, slow no successful responses, 1398 errors"
        ),
        "{screen}"
    );
    assert!(screen.contains("1/4 measurements"), "{screen}");
    // The finished measurement's live line went with it.
    assert!(!screen.contains("mixed 8/8 s"), "{screen}");
    assert!(!screen.contains("p99 0.0"), "{screen}");
    assert!(
        !screen.contains("fast-only 5 s:"),
        "per-phase lines are for logs: {screen}"
    );

    d.show(Update::Finished);
    let screen = term.contents();
    assert!(
        !screen.contains("measurements ·"),
        "the bar is gone: {screen}"
    );
    assert!(screen.contains("1 measurement in "), "{screen}");
}

#[test]
fn what_a_measurement_is_doing_shows_live_and_is_no_line_of_its_own() {
    let a = step(0, 1);
    let out = Buffer::default();
    let mut plain = Display::plain(plan(), Box::new(out.clone()));
    plain.show(Update::Started {
        step: a,
        detail: "deploying 1 x pool replica(s)",
    });
    plain.show(Update::Doing {
        step: a,
        detail: "load generator running against http://10.96.0.12:8080",
    });
    assert_eq!(
        out.text(),
        "[1/4] pool-x1 rep 1/2 | deploying 1 x pool replica(s)\n"
    );

    let term = InMemoryTerm::new(12, 200);
    let mut live = Display::live(
        plan(),
        ProgressDrawTarget::term_like(Box::new(term.clone())),
    );
    live.show(Update::Started {
        step: a,
        detail: "deploying 1 x pool replica(s)",
    });
    live.show(Update::Doing {
        step: a,
        detail: "load generator running against http://10.96.0.12:8080",
    });
    let screen = term.contents();
    assert!(
        screen
            .contains("\npool-x1 rep 1/2 · load generator running against http://10.96.0.12:8080"),
        "{screen}"
    );
}

#[test]
fn parses_progress_json_and_ignores_log_lines() {
    let l = r#"{"phase":"mixed","elapsedSecs":3,"ended":false,"streams":[{"endpoint":"fast","requests":240,"rps":81.5,"p50Ms":12.0,"p99Ms":48.25,"errors":0},{"endpoint":"slow","requests":8,"rps":2.5,"p99Ms":null,"errors":1,"extra":true}]}"#;
    let p = ProgressLine::parse(l).expect("progress line");
    assert_eq!(p.figures.phase, "mixed");
    assert!(!p.ended);
    assert_eq!(p.figures.streams.len(), 2);
    assert_eq!(p.figures.streams[0].p99_ms, Some(48.25));
    assert_eq!(p.figures.streams[1].p50_ms, None);
    assert_eq!(
        format::live(&p.figures, Some(Duration::from_secs(8))),
        "mixed 3/8 s · fast 81.5 rps p99 48.2 ms · slow 2.5 rps p99 —, 1 error"
    );
    let end = ProgressLine::parse(r#"{"phase":"mixed","elapsedSecs":8,"ended":true}"#).unwrap();
    assert!(end.ended);
    assert_eq!(ProgressLine::parse("INFO starting"), None);
    assert_eq!(ProgressLine::parse("{not json"), None);
}

#[test]
fn durations_read_as_minutes_and_seconds() {
    let d = |s| format::duration(Duration::from_secs(s));
    assert_eq!(d(52), "52s");
    assert_eq!(d(292), "4m 52s");
    assert_eq!(d(3780), "1h 03m");
}
