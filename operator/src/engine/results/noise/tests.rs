use super::*;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

#[test]
fn the_median_and_range_of_planted_values() {
    let s = spread_of(&[3.0, 1.0, 2.0]);
    assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
    assert_eq!(s.values, [3.0, 1.0, 2.0], "values stay in measured order");
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    // Fewer than five: no interval.
    assert_eq!((s.ci_low, s.ci_high), (None, None));
    assert_eq!(spread_of(&[]).median, 0.0);
}

/// The mixed /fast p99 over three runs: autocannon's 183, 827, 825 ms spread 4.5x;
/// benchmatrix's 690, 715, 386 ms spread 1.85x.
#[test]
fn unstable_above_twice_with_care_for_zeros() {
    assert!(spread_of(&[183.0, 827.0, 825.0]).unstable);
    assert!(!spread_of(&[690.0, 715.0, 386.0]).unstable);
    assert!(
        !spread_of(&[10.0, 20.0]).unstable,
        "exactly 2x is not above"
    );
    assert!(!spread_of(&[0.0, 0.0, 0.0]).unstable, "all zero errors");
    assert!(spread_of(&[0.0, 0.0, 0.01]).unstable, "zero beside a value");
    assert!(!spread_of(&[5.0]).unstable);
}

/// The bootstrap distribution of the median of a resample of 1..=9 is known exactly:
/// P(median <= j) = P(Binomial(9, j/9) >= 5), which is 0.00145 for j = 1, 0.0304 for
/// j = 2, 0.9696 for j = 7 and 0.99855 for j = 8 (scipy.stats.binom 1.17.1). So the 2.5%
/// and 97.5% quantiles, the ends of the 95% interval, are 2 and 8.
#[test]
fn the_bootstrap_interval_matches_the_exact_resampling_distribution() {
    let values: Vec<f64> = (1..=9).map(f64::from).collect();
    let s = spread_of(&values);
    assert_eq!((s.ci_low, s.ci_high), (Some(2.0), Some(8.0)), "{s:?}");
    assert_eq!(s.median, 5.0);
    // Deterministic: the same values give the same interval.
    assert_eq!(spread_of(&values), s);
    // Five equal values: the interval is the value itself.
    let flat = spread_of(&[7.0; 5]);
    assert_eq!((flat.ci_low, flat.ci_high), (Some(7.0), Some(7.0)));
}

/// Reference values from scipy 1.17.1, `scipy.stats.mannwhitneyu(a, b,
/// alternative='two-sided', method=...)` (computed in a venv under /tmp).
#[test]
fn mann_whitney_matches_scipy() {
    // method='exact': U = 1, p = 0.008658008658008658 (= 4/462).
    let t = mann_whitney(
        &[12.1, 14.3, 11.8, 13.5, 12.9],
        &[15.2, 14.9, 16.8, 13.9, 17.1, 15.5],
    );
    assert!(t.exact);
    assert_eq!(t.u, 1.0);
    assert!(close(t.p_value, 0.008658008658008658, 1e-12), "{t:?}");
    // method='exact': U = 14, p = 0.8412698412698413.
    let t = mann_whitney(
        &[10.0, 10.4, 9.8, 10.1, 10.3],
        &[10.2, 9.9, 10.5, 10.05, 9.7],
    );
    assert_eq!(t.u, 14.0);
    assert!(close(t.p_value, 0.8412698412698413, 1e-12), "{t:?}");
    // Ties: method='asymptotic' (tie and continuity corrected): U = 13.5,
    // p = 0.03295011419483441.
    let t = mann_whitney(
        &[1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, 6.0],
        &[3.0, 4.0, 4.0, 5.0, 7.0, 8.0, 8.0, 9.0, 9.0],
    );
    assert!(!t.exact);
    assert_eq!(t.u, 13.5);
    assert!(close(t.p_value, 0.03295011419483441, 1e-6), "{t:?}");
    // method='asymptotic': U = 5, p = 0.13879173842360976.
    let t = mann_whitney(
        &[100.0, 102.0, 101.0, 103.0, 99.0],
        &[101.0, 101.0, 104.0, 106.0, 105.0],
    );
    assert_eq!(t.u, 5.0);
    assert!(close(t.p_value, 0.13879173842360976, 1e-6), "{t:?}");
}

#[test]
fn a_clear_shift_is_worse_or_better_by_direction() {
    let base = [12.1, 14.3, 11.8, 13.5, 12.9];
    let new = [15.2, 14.9, 16.8, 13.9, 17.1, 15.5];
    let d = differ(&base, &new, true, MIN_PRACTICAL_CHANGE);
    assert_eq!(d.direction, Direction::Worse, "{d:?}");
    assert_eq!(d.method, Method::MannWhitneyExact);
    assert!(close(d.p_value.unwrap(), 0.008658008658008658, 1e-12));
    // Median 12.9 -> 15.35.
    assert!(close(d.change.unwrap(), 15.35 / 12.9 - 1.0, 1e-12), "{d:?}");
    // Throughput: higher is better.
    assert_eq!(
        differ(&base, &new, false, 0.05).direction,
        Direction::Better
    );
    assert_eq!(differ(&new, &base, true, 0.05).direction, Direction::Better);
}

#[test]
fn overlapping_samples_are_within_noise_with_their_p_value() {
    let d = differ(
        &[10.0, 10.4, 9.8, 10.1, 10.3],
        &[10.2, 9.9, 10.5, 10.05, 9.7],
        true,
        MIN_PRACTICAL_CHANGE,
    );
    assert_eq!(d.direction, Direction::WithinNoise);
    assert!(close(d.p_value.unwrap(), 0.8412698412698413, 1e-12));
}

#[test]
fn a_significant_but_small_change_is_within_noise() {
    // Completely separated (exact p = 2/252 = 0.0079) but only 2% apart.
    let base = [100.0, 100.1, 100.2, 100.3, 100.4];
    let new = [102.0, 102.1, 102.2, 102.3, 102.4];
    let d = differ(&base, &new, true, MIN_PRACTICAL_CHANGE);
    assert!(close(d.p_value.unwrap(), 2.0 / 252.0, 1e-12), "{d:?}");
    assert_eq!(d.direction, Direction::WithinNoise);
    assert!(d.note.unwrap().contains("5% minimum practical change"));
    // With a 1% minimum the same data is a regression.
    assert_eq!(differ(&base, &new, true, 0.01).direction, Direction::Worse);
}

#[test]
fn with_fewer_than_five_only_separate_ranges_differ() {
    let d = differ(&[10.0, 12.0, 11.0], &[14.0, 15.0, 13.0], true, 0.05);
    assert_eq!(d.direction, Direction::Worse);
    assert_eq!(d.method, Method::RangeOverlap);
    assert_eq!(d.p_value, None);
    assert!(d.note.unwrap().contains("a test needs 5+ repetitions"));
    // Touching ranges overlap.
    let d = differ(&[10.0, 12.0, 11.0], &[12.0, 15.0, 13.0], true, 0.05);
    assert_eq!(d.direction, Direction::WithinNoise);
    // The benchmatrix p99s against autocannon's: overlapping, so no direction.
    let d = differ(&[690.0, 715.0, 386.0], &[183.0, 827.0, 825.0], true, 0.05);
    assert_eq!(d.direction, Direction::WithinNoise);
    // Five against four still uses ranges.
    let d = differ(
        &[1.0, 2.0, 3.0, 4.0, 5.0],
        &[9.0, 9.5, 9.7, 9.9],
        true,
        0.05,
    );
    assert_eq!(
        (d.direction, d.method),
        (Direction::Worse, Method::RangeOverlap)
    );
}

#[test]
fn zero_medians_have_no_relative_change_but_can_differ() {
    assert_eq!(relative_change(0.0, 0.0), Some(0.0));
    assert_eq!(relative_change(0.0, 1.0), None);
    let d = differ(&[0.0, 0.0], &[1.0, 2.0], true, 0.05);
    assert_eq!((d.direction, d.change), (Direction::Worse, None));
    assert_eq!(
        differ(&[], &[1.0], true, 0.05).direction,
        Direction::WithinNoise
    );
}

#[test]
fn the_exact_distribution_counts_every_arrangement() {
    // 2 and 2 values: 6 arrangements with U = 0, 1, 2, 2, 3, 4.
    assert_eq!(u_counts(2, 2), [1.0, 1.0, 2.0, 1.0, 1.0]);
    let c = u_counts(5, 6);
    assert_eq!(c.iter().sum::<f64>(), 462.0, "C(11, 5)");
}
