use super::*;
use crate::resource::LatencyMs;
use crate::resource::status::Percentile;

fn spec(yaml: &str) -> CapacitySpec {
    serde_yaml::from_str(yaml).unwrap()
}

/// A probe result of `endpoint` with `samples` successes, `errors` failures and p99 `p99` ms.
fn result(endpoint: &str, samples: u64, errors: u64, p99: f64) -> CellResult {
    CellResult {
        phase: PROBE_PHASE.into(),
        endpoint: endpoint.into(),
        requests: samples + errors,
        errors,
        samples,
        rps: samples as f64 / 10.0,
        latency_ms: Some(LatencyMs {
            p50: p99 / 2.0,
            p90: p99 * 0.8,
            p99,
            p999: p99,
            max: p99,
            mean: p99 / 2.0,
        }),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: None,
    }
}

fn sends(offered: f64, late: u64, unanswered: u64) -> Sends {
    Sends {
        offered,
        late,
        unanswered,
        sent_p99_ms: Some(20.0),
    }
}

const SLO: &str = "slo: [{endpoint: fast, p99: {below: 100ms}}, {errorRate: {below: 0.01}}]";

#[test]
fn a_probe_holds_when_every_figure_passes_the_sends_were_on_time_and_nothing_piled_up() {
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        100.0,
        &[result("fast", 1000, 0, 40.0)],
        Some(&sends(1000.0, 3, 4)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Held, "{p:?}");
    assert_eq!(p.why, None);
    assert_eq!(p.figures.len(), 2);
    assert!(p.figures.iter().all(|f| f.pass));
    assert_eq!(p.achieved, 100.0);
    assert_eq!(p.sent_on_time, Some(0.997));
    assert!(!p.close);
}

#[test]
fn an_slo_figure_over_its_limit_fails_the_probe_and_names_the_figure() {
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        62.0,
        &[result("fast", 620, 0, 118.0)],
        Some(&sends(620.0, 0, 5)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Failed);
    assert_eq!(
        p.why.as_deref(),
        Some("probe/fast p99 118.0 ms, not below 100.0 ms at 62 rps")
    );
    // 118 is 18% over 100: not close at the default 10%.
    assert!(!p.close);
}

#[test]
fn too_few_samples_for_the_percentile_fail_like_a_threshold() {
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        5.0,
        &[result("fast", 50, 0, 10.0)],
        Some(&sends(50.0, 0, 0)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Failed);
    let why = p.why.unwrap();
    assert!(why.contains("50 samples and needs 100"), "{why}");
    assert!(why.contains("probeDuration"), "{why}");
}

#[test]
fn a_backlog_at_the_end_is_the_target_falling_behind_even_with_late_sends() {
    // 200 rps for 10 s against a target that answers 100: 1000 unanswered, most sends late, and
    // what was sent answered slowly.
    let behind = Sends {
        sent_p99_ms: Some(900.0),
        ..sends(2000.0, 1500, 1000)
    };
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        200.0,
        &[result("fast", 1000, 0, 5000.0)],
        Some(&behind),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Failed);
    assert_eq!(
        p.why.as_deref(),
        Some("the target fell behind: 1000 of 2000 sends (50.0%) unanswered at the end at 200 rps")
    );
}

#[test]
fn late_sends_that_were_answered_are_judged_by_their_corrected_latency_alone() {
    // 15% of the sends a few ms late (a busy machine), every one answered: no shortfall; the
    // lateness is in the latency from the intended time, which passes.
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        25.0,
        &[result("fast", 125, 0, 80.0)],
        Some(&sends(125.0, 19, 1)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Held, "{p:?}");
    assert_eq!(p.sent_on_time, Some(0.848));
}

#[test]
fn requests_in_flight_within_the_slo_latency_are_no_backlog() {
    // 1000 rps with a 100 ms SLO: up to 100 in flight is normal; 200 more is 2% of 10000.
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        1000.0,
        &[result("fast", 9900, 0, 80.0)],
        Some(&sends(10_000.0, 0, 290)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Held, "{p:?}");
}

#[test]
fn a_shortfall_with_fast_answers_is_the_load_generators_not_the_targets() {
    // 5000 rps: a tenth of the sends never went out on time and 5000 were still waiting at the
    // end, but what the target was sent it answered in 20 ms.
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        5000.0,
        &[result("fast", 45_000, 0, 150.0)],
        Some(&sends(50_000.0, 5_000, 5_000)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::LoadgenBound, "{p:?}");
    assert!(p.why.unwrap().contains("spec.loadgen.generators"));
}

#[test]
fn a_figure_near_its_limit_is_close_and_a_busy_neighbour_is_not_believed() {
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        100.0,
        &[result("fast", 1000, 0, 95.0)],
        Some(&sends(1000.0, 0, 2)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Held);
    assert!(p.close);
    let busy = judge_probe(
        &spec(SLO),
        &["fast"],
        100.0,
        &[result("fast", 1000, 0, 40.0)],
        Some(&sends(1000.0, 0, 2)),
        Some("busy neighbour on node a".into()),
    );
    assert_eq!(busy.verdict, ProbeVerdict::NotBelieved);
}

#[test]
fn an_slo_figure_without_an_endpoint_is_judged_on_every_endpoint_of_the_mix() {
    let s = spec(
        "slo: [{p99: {below: 100ms}}]\nmix: [{endpoint: fast, weight: 19}, {endpoint: slow, weight: 1}]",
    );
    let p = judge_probe(
        &s,
        &["fast", "slow"],
        200.0,
        &[result("fast", 1900, 0, 20.0), result("slow", 100, 0, 300.0)],
        Some(&sends(2000.0, 0, 3)),
        None,
    );
    assert_eq!(p.figures.len(), 2);
    assert_eq!(p.verdict, ProbeVerdict::Failed);
    assert!(p.why.unwrap().starts_with("probe/slow p99 300.0 ms"));
}

/// Without an errorRate in the SLO, a target that answers half its requests with fast errors
/// does not hold: failed answers are not achieved sends, and the latency figures count only
/// successes. With an errorRate figure, that figure decides.
#[test]
fn a_target_shedding_load_does_not_hold_without_an_error_rate_in_the_slo() {
    let latency_only = "slo: [{endpoint: fast, p99: {below: 100ms}}]";
    let shedding = [result("fast", 500, 500, 5.0)];
    let p = judge_probe(
        &spec(latency_only),
        &["fast"],
        100.0,
        &shedding,
        Some(&sends(1000.0, 0, 0)),
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::Failed, "{p:?}");
    assert!(
        p.why
            .as_deref()
            .unwrap()
            .contains("50.0% of the answers failed"),
        "{p:?}"
    );
    let few = [result("fast", 995, 5, 5.0)];
    let p = judge_probe(
        &spec(latency_only),
        &["fast"],
        100.0,
        &few,
        Some(&sends(1000.0, 0, 0)),
        None,
    );
    assert_eq!(
        p.verdict,
        ProbeVerdict::Held,
        "0.5% failed is within 2%: {p:?}"
    );
    let lenient = "slo: [{endpoint: fast, p99: {below: 100ms}}, {errorRate: {below: 0.6}}]";
    let p = judge_probe(
        &spec(lenient),
        &["fast"],
        100.0,
        &shedding,
        Some(&sends(1000.0, 0, 0)),
        None,
    );
    assert_eq!(
        p.verdict,
        ProbeVerdict::Held,
        "the SLO's errorRate decides: {p:?}"
    );
}

#[test]
fn a_probe_without_send_counts_never_holds_and_blames_the_load_generator() {
    // Every figure passes, but whether a backlog grew is unknown: not held.
    let p = judge_probe(
        &spec(SLO),
        &["fast"],
        100.0,
        &[result("fast", 1000, 0, 40.0)],
        None,
        None,
    );
    assert_eq!(p.verdict, ProbeVerdict::LoadgenBound, "{p:?}");
    let why = p.why.unwrap();
    assert!(
        why.contains("no send counts") && why.contains("at 100 rps"),
        "{why}"
    );
    assert_eq!((p.sent_on_time, p.backlog), (None, None));
}

/// A throttled load generator (measured on a cluster with 20m of CPU for it: two thirds of the
/// sends late at 400 rps, every one answered) puts its lateness into the latency counted from
/// the intended send time: p99 158 ms. The target answered what it was sent in 12 ms, so the
/// probe is the load generator's, not a failure of the target at a rate it holds.
#[test]
fn a_percentile_failed_by_late_sends_the_target_answered_fast_is_the_load_generators() {
    // A 400 rps probe with p99 158.1 ms from the schedule, `late` of 4000 sends late and the
    // target's p99 from the actual send `sent_p99` ms.
    let at_400 = |late: u64, sent_p99: f64| {
        let sends = Sends {
            sent_p99_ms: Some(sent_p99),
            ..sends(4000.0, late, 3)
        };
        let results = [result("fast", 3966, 0, 158.1)];
        judge_probe(&spec(SLO), &["fast"], 400.0, &results, Some(&sends), None)
    };
    let p = at_400(2640, 12.0);
    assert_eq!(p.verdict, ProbeVerdict::LoadgenBound, "{p:?}");
    let why = p.why.unwrap();
    assert!(why.contains("66.0% of the sends late"), "{why}");
    assert!(why.contains("in p99 12.0 ms"), "{why}");
    // The same lateness where the target was slow to answer what it was sent: its failure.
    assert_eq!(at_400(2640, 140.0).verdict, ProbeVerdict::Failed);
    // Answered just within the limit from the actual send (95 ms, inside the 10% noise band):
    // the lateness cannot be shown to decide, so the failure is the target's.
    assert_eq!(at_400(2640, 95.0).verdict, ProbeVerdict::Failed);
    // Few late sends: the corrected latency is the target's to answer for.
    assert_eq!(at_400(40, 12.0).verdict, ProbeVerdict::Failed);
}
