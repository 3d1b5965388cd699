//! The bound of runs whose measurements are probes, against the real engine: a capacity search
//! with rounds and variants, and a sizing search whose configurations spend every probe they
//! may (in their search, a rule-out, a confirmation). Each probe is told the longest words an
//! executor can tell, and the status is measured after every event.

use std::collections::BTreeMap;

use super::*;
use crate::engine::Sends;
use crate::engine::capacity::probe_rate;
use crate::engine::{Step, next_step};
use crate::resource::capacity::MAX_PROBES;
use crate::resource::capacity::{CapacityStatus, CheckPurpose};
use crate::resource::status::{NeighbourPod, Neighbours};
use crate::resource::validate::MAX_REPEAT;
use crate::resource::{CellPhase, Variant};

/// An endpoint name of 63 characters with what the API server escapes longer (`<`, `&`).
fn long_endpoint(i: usize) -> String {
    format!("e{i}-<&>{}", "y".repeat(57))
}

/// A run of `configurations` (each with its replicas and CPU), searched for capacity over two
/// endpoints of long names, both in the mix: two SLO figures of every endpoint of the mix
/// (four per probe), at most `max_probes` probes a search.
fn searched(configurations: &[(&str, u32, &str)], max_probes: u32) -> BenchmarkRun {
    let mut run = BenchmarkRun::sample()
        .named(&"r".repeat(63))
        .with_warmup("1s")
        .with_endpoints((0..2).map(|e| endpoint(&long_endpoint(e), &format!("/e{e}"))));
    run.spec.workload.phases.clear();
    for (name, replicas, cpu) in configurations {
        run = run.with_cell(Configuration::named(name).replicas(*replicas).cpu(cpu));
    }
    let capacity = format!(
        "slo: [{{p99: {{below: 100ms}}}}, {{errorRate: {{below: 0.01}}}}]\n\
         mix: [{{endpoint: {e0:?}, weight: 1}}, {{endpoint: {e1:?}, weight: 1}}]\n\
         startRate: 20\nmaxRate: 400\nresolution: 10%\nprobeDuration: 10s\n\
         maxProbes: {max_probes}",
        e0 = long_endpoint(0),
        e1 = long_endpoint(1),
    );
    run.spec.capacity = Some(serde_yaml::from_str(&capacity).unwrap());
    run
}

/// [`searched`] as a sizing search over `replicas` x `cpu` (one mode) for 30 rps and a 20%
/// margin (36 rps), confirmed by two probes, with two rule-outs.
fn sized(replicas: &str, cpu: &str, max_probes: u32) -> BenchmarkRun {
    let mut run = searched(&[], max_probes);
    let sizing = format!(
        "traffic: 30\nmargin: 20%\nbudget: 8\nconfirmations: 2\nruleOut: 2\n\
         search: {{replicas: [{replicas}], cpu: [{cpu}]}}"
    );
    run.spec.sizing = Some(serde_yaml::from_str(&sizing).unwrap());
    run
}

/// How the simulated target answers one probe.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    Held,
    Failed,
    /// Measured beside a busy neighbour: the engine probes the same rate again.
    NotBelieved,
}

/// The neighbours of a measurement on `replicas` nodes, every name longer than kept and one
/// node's figures missing at length; all busy when the probe is `busy` (so not believed).
fn neighbours(replicas: u32, busy: bool) -> Vec<Neighbours> {
    (0..replicas.max(2))
        .map(|i| Neighbours {
            node: format!("{}{i}", "n".repeat(62)),
            foreign_cpu: Some(1.234_567_890_123_456_7e300),
            window_seconds: Some(0.000_012_345_678_901_234_5),
            busy,
            pods: (0..9)
                .map(|_| NeighbourPod {
                    pod: words(500),
                    cpu: 1.234_567_890_123_456_7e300,
                })
                .collect(),
            more_pods: Some(u32::MAX),
            missing: (i == 1).then(|| words(5_000)),
        })
        .collect()
}

/// One probe of a cell of `replicas` replicas of `v`, measured as `answer` says: the probe's
/// phase with the longest figures a load generator writes, latencies far below or far above
/// every limit of the SLO, no error, every send on time and answered.
fn probe(v: &ValidatedRun, replicas: u32, answer: Answer, small: &str, big: &str) -> Measured {
    let capacity = v.spec().capacity.as_ref().unwrap();
    let at = capacity.probe_workload(&v.spec().workload, capacity.start_rate);
    let doc = document(&at, replicas, small, big);
    let latency = if answer == Answer::Failed {
        1_234_567.890_123_456_7
    } else {
        0.012_345_678_901_234_567
    };
    let mut results = results::cell_results(&doc);
    for r in &mut results {
        r.errors = 0;
        r.requests = 1_000_000;
        r.latency_ms = Some(LatencyMs {
            p50: latency,
            p90: latency,
            p99: latency,
            p999: latency,
            max: latency,
            mean: latency,
        });
    }
    Measured {
        results,
        target: results::target_stats(&doc),
        enforcement: Some(Enforcement {
            target: words(300),
            loadgen: Some(words(300)),
            detail: Some(words(5_000)),
        }),
        overhead_seconds: Some(1.234_567_890_123_456_7e300),
        message: words(5_000),
        histograms: results::histograms(&doc),
        sends: Some(Sends {
            offered: 1_000.0,
            late: 0,
            unanswered: 0,
            sent_p99_ms: Some(0.012_345_678_901_234_567),
        }),
        neighbours: neighbours(replicas, answer == Answer::NotBelieved),
        neighbours_missing: Some(words(5_000)),
    }
}

/// Drives `v` to its end through the real reducer and schedule, each probe answered by
/// `answer` (from the status before it and its cell): every step is deployed (unless its
/// target was kept), loaded against twice its replicas in pods of the longest names, on
/// nodes of their own, and measured. After every event the status is within the bound of its
/// moment. Returns the status at the end and the largest it was.
fn drive(
    v: &ValidatedRun,
    answer: &mut dyn FnMut(&BenchmarkRunStatus, usize) -> Answer,
) -> (BenchmarkRunStatus, usize) {
    let shape = Shape::of(v.spec());
    let (running, finished) = (
        status_bound(&shape, Moment::Running),
        status_bound(&shape, Moment::Finished),
    );
    let small = wide_histogram(2_000, 1_000.0, 2_000.0);
    let big = wide_histogram(200_000, 100.0, 1e6);
    // The part each cell's search takes of the bound: sharper than the whole status, which
    // counts every cell at its largest while only some of a real run's are.
    let search_bound = len(&capacity(&shape).unwrap());
    let mut largest = 0;
    let mut apply = |status: &mut BenchmarkRunStatus, event: Event, at: i64| {
        let now = time_from_secs(at);
        let ctx = Ctx::of(v, Some(i64::MAX), &now);
        engine::reduce(status, event, &ctx);
        let size = len(status);
        let bound = if status.phase.is_finished() {
            finished
        } else {
            running
        };
        assert!(size <= bound, "{size} > {bound} at {at}");
        for c in &status.cells {
            let search = c.capacity.as_ref().map_or(0, len);
            assert!(
                search <= search_bound,
                "{}: {search} > {search_bound}",
                c.name
            );
        }
        largest = largest.max(size);
    };
    let mut status = BenchmarkRunStatus::default();
    apply(&mut status, Event::admitted(v.cells()), 0);
    let mut t = 1;
    while let Some(Step { cell, .. }) = next_step(&status) {
        assert!(t < 100_000_000, "the run never ends");
        let replicas = v.cells()[cell].replicas;
        if status.cells[cell].phase == CellPhase::Pending {
            let message = words(5_000);
            apply(&mut status, Event::CellDeploying { cell, message }, t);
        }
        let target_pods = (0..2 * replicas)
            .map(|i| RecordedPod {
                name: format!("{}-{i:05}", "p".repeat(57)),
                node: Some(format!("{}{}", "n".repeat(62), i)),
                uid: "0123456789abcdef0123456789abcdef0123".into(),
                restarts: i32::MAX,
            })
            .collect();
        let message = words(5_000);
        let started = Event::LoadStarted {
            cell,
            message,
            target_pods,
        };
        apply(&mut status, started, t);
        let measured = Box::new(probe(v, replicas, answer(&status, cell), &small, &big));
        apply(&mut status, Event::CellMeasured { cell, measured }, t);
        t += 1_000;
    }
    apply(&mut status, Event::Finished { interrupted: false }, t);
    (status, largest)
}

/// The probes a cell has taken in what it measures now: its check at a fixed rate while one is
/// open (the latest probes of its purpose at its rate), else the current round of its search.
fn taken(cap: &CapacityStatus) -> (Option<CheckPurpose>, u32) {
    match cap.check.as_ref().filter(|k| !k.done) {
        Some(k) => {
            let n = cap
                .probes
                .iter()
                .rev()
                .take_while(|p| p.check == Some(k.purpose) && p.rate == k.rate)
                .count();
            (Some(k.purpose), n as u32)
        }
        None => (
            None,
            cap.round_probes().filter(|p| p.check.is_none()).count() as u32,
        ),
    }
}

/// A target whose cells hold `truth(cell)` rps, and which spends every probe it may: each
/// search round and check of a cell first meets busy neighbours (probes not believed, so the
/// engine probes again) until only the probes that decide it are left of `max_probes`. A
/// search needs `decisive[(cell, round)]` of them (counted in a first run where `decisive` is
/// empty and nothing is wasted), a check its wanted probes when they hold, else one.
fn wasteful<'a>(
    v: &'a ValidatedRun,
    truth: &'a dyn Fn(usize) -> f64,
    decisive: &'a BTreeMap<(usize, u32), u32>,
) -> impl FnMut(&BenchmarkRunStatus, usize) -> Answer + 'a {
    let spec = v.spec().capacity.as_ref().unwrap();
    move |status, c| {
        let cell = &status.cells[c];
        let rate = probe_rate(spec, cell);
        let holds = rate <= truth(c);
        let cap = cell.capacity.clone().unwrap_or_default();
        let (checking, taken) = taken(&cap);
        let needs = match (checking, &cap.check) {
            (Some(_), Some(k)) if holds => k.wanted,
            (Some(_), _) => 1,
            (None, _) => decisive
                .get(&(c, cap.current_round()))
                .copied()
                .unwrap_or(spec.max_probes),
        };
        if taken + needs < spec.max_probes {
            Answer::NotBelieved
        } else if holds {
            Answer::Held
        } else {
            Answer::Failed
        }
    }
}

/// Drives `v` twice with [`wasteful`]: once to count the probes each search round needs, then
/// spending every probe. Returns the second run's status and largest size.
fn spend_every_probe(
    v: &ValidatedRun,
    truth: &dyn Fn(usize) -> f64,
) -> (BenchmarkRunStatus, usize) {
    let none = BTreeMap::new();
    let (counted, _) = drive(v, &mut wasteful(v, truth, &none));
    let mut decisive = BTreeMap::new();
    for (c, cell) in counted.cells.iter().enumerate() {
        for p in cell.capacity.iter().flat_map(|cap| &cap.probes) {
            if p.check.is_none() {
                *decisive.entry((c, p.round.unwrap_or(1))).or_insert(0) += 1;
            }
        }
    }
    drive(v, &mut wasteful(v, truth, &decisive))
}

/// The probes of `c` of each kind: (search, confirmation, rule-out).
fn spent(c: &CellStatus) -> (usize, usize, usize) {
    let probes = c
        .capacity
        .as_ref()
        .map(|cap| cap.probes.as_slice())
        .unwrap_or_default();
    let of = |check: Option<CheckPurpose>| probes.iter().filter(|p| p.check == check).count();
    (
        of(None),
        of(Some(CheckPurpose::Confirm)),
        of(Some(CheckPurpose::RuleOut)),
    )
}

/// A capacity run of two configurations in two variants, repeated 3 times: every round of
/// every cell spends all of `maxProbes`, and finds a capacity (so that the cell goes on to its
/// next round and the variants are compared). The status never outgrows the bound, which the
/// cluster accepts.
#[test]
fn a_real_capacity_run_with_rounds_and_variants_stays_within_its_bound() {
    let max_probes = 12;
    let mut run = searched(
        &[
            (&format!("c0-{}", "x".repeat(17)), 3, "1"),
            (&format!("c1-{}", "x".repeat(17)), 2, "500m"),
        ],
        max_probes,
    )
    .repeated(3);
    run = run
        .with_variant(Variant::named(&"b".repeat(19)).env("V", "base"))
        .with_variant(Variant::named(&"c".repeat(19)).env("V", "candidate"));
    assert_eq!(refusal_of(&run), None, "the cluster accepts it");
    let v = ValidatedRun::new(run).unwrap();
    // Each cell's target holds a rate of its own.
    let truth = |c: usize| 40.0 + 7.0 * c as f64;
    let (status, largest) = spend_every_probe(&v, &truth);
    for c in &status.cells {
        let cap = c.capacity.as_ref().unwrap();
        assert_eq!(cap.rounds.len(), 3, "{}: {:?}", c.name, cap.message);
        assert!(cap.rounds.iter().all(|r| r.found), "{:#?}", cap.rounds);
        assert_eq!(spent(c), (3 * max_probes as usize, 0, 0), "{}", c.name);
    }
    assert_eq!(
        status.variants.len(),
        2,
        "one candidate in each configuration"
    );
    let shape = Shape::of(v.spec());
    assert_eq!(shape.probes_per_cell(), 3 * max_probes);
    let finished = status_bound(&shape, Moment::Finished);
    assert!(
        len(&status) * 3 > finished,
        "the bound is not far off: {} of {finished} ({largest})",
        len(&status)
    );
}

/// A sizing search over 4 configurations whose cells spend `maxProbes` in each thing they
/// measure. The seed (1 replica at 500m) spends them in its search, which fails below the
/// target: its bound rules out the configuration of 1 replica at 250m, not the one of 2 at
/// 250m, which spends them in its search and its confirmation. Then the configuration ruled
/// out spends them in its rule-out probe, holds it (the service breaks the model's
/// assumption), and spends them again in its own confirmation, becoming the answer. The status
/// never outgrows the bound, which the cluster accepts.
#[test]
fn a_real_sizing_run_that_spends_every_probe_stays_within_its_bound() {
    let max_probes = 20;
    let run = sized("1, 2", "250m, 500m", max_probes);
    assert_eq!(refusal_of(&run), None, "the cluster accepts it");
    let v = ValidatedRun::new(run).unwrap();
    let names: Vec<&str> = v.cells().iter().map(|c| c.name.as_str()).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    let seed = at("single-x1-cpu500m");
    let (searched, ruled_out) = (at("single-x2-cpu250m"), at("single-x1-cpu250m"));
    let truth = move |c: usize| match c {
        c if c == seed => 20.0,
        c if c == searched => 40.0,
        c if c == ruled_out => 50.0,
        _ => 80.0,
    };
    let (status, largest) = spend_every_probe(&v, &truth);
    let sizing = status.sizing.as_ref().unwrap();
    assert_eq!(
        sizing.chosen.as_ref().map(|c| c.configuration.as_str()),
        Some(names[ruled_out]),
        "{}",
        sizing.message
    );
    let m = max_probes as usize;
    assert_eq!(spent(&status.cells[seed]), (m, 0, 0), "searched");
    assert_eq!(
        spent(&status.cells[searched]),
        (m, m, 0),
        "searched, confirmed"
    );
    assert_eq!(
        spent(&status.cells[ruled_out]),
        (0, m, m),
        "ruled out, confirmed"
    );
    let shape = Shape::of(v.spec());
    assert_eq!(shape.probes_per_cell(), 2 * max_probes);
    let finished = status_bound(&shape, Moment::Finished);
    assert!(
        len(&status) * 3 > finished,
        "the bound is not far off: {} of {finished} ({largest})",
        len(&status)
    );
}

/// A capacity run of `cells` cells of one replica (names as long as allowed), over `endpoints`
/// endpoints of the longest names, all in the mix, with `figures` SLO figures of every one of
/// them, at most `max_probes` a search, repeated `repeat` times.
fn capacity_spec(
    cells: usize,
    endpoints: usize,
    figures: usize,
    max_probes: u32,
    repeat: u32,
) -> BenchmarkRun {
    let name = |e: usize| format!("e{e:02}-{}", "y".repeat(59));
    let mut run = spec(cells, repeat, 0, 0)
        .with_endpoints((0..endpoints).map(|e| endpoint(&name(e), &format!("/e{e}"))));
    run.spec.workload.phases.clear();
    let slo: Vec<String> = (0..figures)
        .map(|i| format!("{{p99: {{below: {}ms}}}}", 100 + i))
        .collect();
    let mix: Vec<String> = (0..endpoints)
        .map(|e| format!("{{endpoint: {}, weight: 1}}", name(e)))
        .collect();
    let capacity = format!(
        "slo: [{}]\nmix: [{}]\nstartRate: 1000\nprobeDuration: 10s\nmaxProbes: {max_probes}",
        slo.join(", "),
        mix.join(", ")
    );
    run.spec.capacity = Some(serde_yaml::from_str(&capacity).unwrap());
    run
}

/// A sizing run over a space of `configurations` of one replica at 1 CPU, one for each value
/// of an env axis (so each its own family, and the budget one search each), names as long as
/// allowed, one endpoint of the longest name, at most `max_probes` a search or check.
fn sizing_spec(configurations: usize, max_probes: u32) -> BenchmarkRun {
    let mut run = capacity_spec(0, 1, 1, max_probes, 1);
    let values: Vec<String> = (0..configurations).map(|i| format!("{i:0>16}")).collect();
    let sizing = format!(
        "traffic: 30\nbudget: {}\nsearch: {{replicas: [1], cpu: [\"1\"], env: {{LONGKNOB: [{}]}}}}",
        configurations,
        values.join(", ")
    );
    run.spec.sizing = Some(serde_yaml::from_str(&sizing).unwrap());
    run
}

/// The largest searches along each axis the schema bounds (maxProbes up to 40, 16 SLO figures
/// of each of 32 endpoints, 64 cells, repeat 20, a space of 64 configurations), with every
/// name as long as allowed: their largest status, built in full, is under the 1 MiB limit, and
/// one step more is refused, saying what fits in the run's own terms. So every spec the schema
/// admits is either refused or within the limit, by a bound the engine does not exceed (the
/// tests above). docs/book/src/kubernetes/running.md ("How large a run may be") quotes these
/// numbers.
#[test]
fn the_largest_accepted_searches_fit_and_one_more_is_refused() {
    // 64 cells of one endpoint and one SLO figure, searched once: 10 probes each.
    let (probes, refused) = largest_accepted(2, |m| capacity_spec(64, 1, 1, m as u32, 1));
    assert_eq!(probes, 10);
    assert!(
        refused.contains("(64 cells x 11 probes x 1 SLO figures)")
            && refused.ends_with(
                "it fits with spec.capacity.maxProbes 10 (now 11), or with only the first 62 \
                 of its 64 cells; or fewer figures in spec.capacity.slo or endpoints in \
                 spec.capacity.mix"
            ),
        "{refused}"
    );
    // The schema's most figures a probe records, 16 SLO figures of each of 32 endpoints: 10
    // probes.
    assert_eq!(
        largest_accepted(2, |m| capacity_spec(1, 32, 16, m as u32, 1)).0,
        10
    );
    // Searches of 40 probes in each of 20 rounds: one cell.
    let (cells, refused) = largest_accepted(1, |c| capacity_spec(c, 1, 1, MAX_PROBES, MAX_REPEAT));
    assert_eq!(cells, 1);
    assert!(
        refused.contains(
            "it fits with spec.repeat 15 (now 20), or with spec.capacity.maxProbes 29 (now 40)"
        ),
        "{refused}"
    );
    // A sizing space, where each configuration may spend maxProbes twice: 15 configurations at
    // 40 probes, 27 at the default 20. A space is not cut to its first configurations.
    for (max_probes, fit) in [(MAX_PROBES, 15), (20, 27)] {
        let (space, refused) = largest_accepted(1, |n| sizing_spec(n, max_probes));
        assert_eq!(space, fit, "maxProbes {max_probes}");
        assert!(
            refused.contains(&format!(
                "a space of at most {fit} configurations in spec.sizing.search (now {})",
                fit + 1
            )) && !refused.contains("only the first"),
            "{refused}"
        );
    }
}
