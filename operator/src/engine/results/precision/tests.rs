use super::*;
use crate::resource::LatencyMs;
use crate::resource::status::{FigureSpread, Percentile, Spread};

#[test]
fn the_interval_of_a_known_sample_matches_the_textbook() {
    // logs 0, ln 2, ln 4 (values 1, 2, 4): mean ln 2, s = ln 2, n = 3, t = 4.303, so the
    // interval is 2 * exp(±4.303 * ln 2 / sqrt 3).
    let (low, high) = median_interval(&[1.0, 2.0, 4.0]).unwrap();
    let half = 4.303 * std::f64::consts::LN_2 / 3f64.sqrt();
    assert!((low - 2.0 * (-half).exp()).abs() < 1e-9, "{low}");
    assert!((high - 2.0 * half.exp()).abs() < 1e-9, "{high}");
    // Equal values are known exactly.
    assert_eq!(width_percent(&[5.0, 5.0, 5.0]), Some(0.0));
}

#[test]
fn the_same_spread_is_more_precise_with_more_values() {
    let three = width_percent(&[99.0, 100.0, 101.0]).unwrap();
    let six = width_percent(&[99.0, 100.0, 101.0, 99.0, 100.0, 101.0]).unwrap();
    assert!(six < three / 2.0, "three {three:.2}% six {six:.2}%");
    // About 1% apart over three values: within 5%, not within 2%.
    assert!((4.0..5.0).contains(&three), "{three}");
}

#[test]
fn no_interval_from_one_value_or_from_a_zero_among_others_and_all_zeros_are_exact() {
    assert_eq!(median_interval(&[3.0]), None);
    assert_eq!(median_interval(&[0.0, 3.0]), None);
    // No error in any repetition is an exact figure.
    assert_eq!(width_percent(&[0.0, 0.0, 0.0]), Some(0.0));
    assert_eq!(median_interval(&[f64::NAN, 3.0]), None);
}

/// The interval covers the true median about 95% of the time: 4,000 samples of three
/// lognormal values (median 100, sigma 0.1) from a fixed-seed generator.
#[test]
fn the_interval_covers_the_median_about_95_percent_of_the_time() {
    let mut seed = 0x1234_5678_u64;
    let mut uniform = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut normal = move || {
        // Box-Muller.
        let (u1, u2) = (uniform().max(1e-12), uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    };
    let trials = 4000;
    let covered = (0..trials)
        .filter(|_| {
            let values: Vec<f64> = (0..3).map(|_| 100.0 * (0.1 * normal()).exp()).collect();
            let (low, high) = median_interval(&values).unwrap();
            low <= 100.0 && 100.0 <= high
        })
        .count();
    let share = covered as f64 / trials as f64;
    assert!((0.935..0.965).contains(&share), "covered {share}");
}

fn stream(phase: &str, p99s: &[f64], rps: &[f64], samples: u64) -> CellResult {
    let spread = |values: &[f64]| FigureSpread {
        values: values.to_vec(),
        ..FigureSpread::default()
    };
    CellResult {
        phase: phase.into(),
        endpoint: "fast".into(),
        requests: samples,
        samples,
        latency_ms: Some(LatencyMs::default()),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: Some(Spread {
            figures: [
                ("p99".to_string(), spread(p99s)),
                ("rps".to_string(), spread(rps)),
            ]
            .into(),
            ..Spread::default()
        }),
        ..CellResult::default()
    }
}

#[test]
fn ranked_p99s_and_judged_figures_decide_and_streams_too_short_do_not() {
    let merged = [
        stream("steady", &[10.0, 10.1, 9.9], &[100.0, 80.0, 120.0], 3000),
        // Too few samples for a p99: repeating does not mend it, so it does not count.
        stream("short", &[10.0, 30.0, 90.0], &[1.0, 1.0, 1.0], 60),
    ];
    let a = assess(&merged, &[]);
    assert_eq!(a.figures.len(), 1);
    assert_eq!(a.figures[0].figure, "steady/fast p99");
    assert!(a.within(5.0));
    // A threshold on the steady stream's rps brings in its spread, which is wide.
    let judged = [("steady".to_string(), "fast".to_string(), Metric::Rps)];
    let a = assess(&merged, &judged);
    assert_eq!(a.figures.len(), 2);
    assert!(!a.within(5.0));
    assert_eq!(a.widest().unwrap().figure, "steady/fast rps");
}

#[test]
fn an_unstable_p99_counts_as_imprecise() {
    let merged = [stream(
        "mixed",
        &[183.0, 827.0, 400.0],
        &[5.0, 5.0, 5.0],
        3000,
    )];
    let a = assess(&merged, &[]);
    assert_eq!(a.figures.len(), 1);
    assert!(!a.within(50.0));
}
