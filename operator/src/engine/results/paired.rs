//! A candidate against its base, measured side by side: in each round the variants of one
//! configuration run back to back on the same nodes, and the round's ratio of a figure
//! (candidate / base) is the unit of evidence. What moves between rounds — a neighbour, heat,
//! the runner on another day — moves both sides of a ratio alike and cancels out of it; two
//! runs compared afterwards (`noise::differ`) carry all of it.
//!
//! - [`paired`]: the per-round ratios of one figure, their median with a 95% bootstrap
//!   confidence interval, and an exact Wilcoxon signed-rank test on their logarithms, in each
//!   direction. The test needs no normality, and its exact distribution holds for any number of
//!   rounds; its smallest one-sided p-value is 1/2^n, so 5 rounds can show a difference at 5%
//!   when every round agrees on its direction.
//! - [`Paired::direction`]: worse or better beyond a practical change, and significant; else
//!   within noise.
//!
//! Pure and deterministic, like `noise`: the bootstrap draws from a fixed seed.

use super::noise::{self, ALPHA, Direction};

/// Rounds from which a confidence interval of the median ratio is given (with fewer the
/// bootstrap can only return the extremes).
pub const MIN_ROUNDS_FOR_INTERVAL: usize = 3;

/// One figure of a candidate against its base, over the rounds both measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// candidate / base, one per round, in round order.
    pub ratios: Vec<f64>,
    /// The median ratio (the geometric middle: the median of the logarithms, exponentiated).
    pub ratio: f64,
    /// 95% bootstrap interval of the median ratio, from [`MIN_ROUNDS_FOR_INTERVAL`] rounds.
    pub interval: Option<(f64, f64)>,
    /// One-sided exact Wilcoxon signed-rank p-value that the candidate is worse: the chance of
    /// rounds at least this much worse if the two did not differ.
    pub p_worse: f64,
    /// The same, that the candidate is better.
    pub p_better: f64,
}

/// The per-round comparison of `candidate` with `base` (one value per round each, in the same
/// rounds). A round where either value is not a positive number is left out: no ratio exists.
/// `lower_is_better` tells which way is worse (latency: higher; throughput: lower). `None`
/// when no round has a ratio.
pub fn paired(base: &[f64], candidate: &[f64], lower_is_better: bool) -> Option<Paired> {
    let ratios: Vec<f64> = base
        .iter()
        .zip(candidate)
        .filter(|(b, c)| **b > 0.0 && **c > 0.0 && b.is_finite() && c.is_finite())
        .map(|(b, c)| c / b)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    // Worse is positive, whichever way the figure goes.
    let worse: Vec<f64> = if lower_is_better {
        logs.clone()
    } else {
        logs.iter().map(|l| -l).collect()
    };
    let (p_worse, p_better) = wilcoxon_signed_rank(&worse);
    let interval = (logs.len() >= MIN_ROUNDS_FOR_INTERVAL).then(|| {
        let (low, high) = noise::bootstrap_median_interval(&logs);
        (low.exp(), high.exp())
    });
    Some(Paired {
        ratios,
        ratio: noise::median(&logs).exp(),
        interval,
        p_worse,
        p_better,
    })
}

impl Paired {
    /// Worse (or better) when the test says so at [`ALPHA`] and the median ratio is beyond
    /// `min_change` (0.05 = 5%) in that direction; within noise otherwise: [`direction`].
    pub fn direction(&self, lower_is_better: bool, min_change: f64) -> Direction {
        direction(
            self.ratio,
            (self.p_worse, self.p_better),
            lower_is_better,
            min_change,
        )
    }

    /// The width of the ratio's confidence interval in percent of the ratio; `None` without
    /// an interval.
    pub fn width_percent(&self) -> Option<f64> {
        let (low, high) = self.interval?;
        Some((high - low) / self.ratio * 100.0)
    }
}

/// The one rule for "is the candidate worse?": worse (or better) when the one-sided p-value
/// of that direction (`p`: worse, better) is below [`ALPHA`] and the median `ratio`
/// (candidate / base) moved beyond `min_change` (0.05 = 5%) that way; within noise otherwise.
/// [`Paired::direction`] asks it while the engine compares variants, and the regression gate
/// (`engine::verdict::gate`) asks it of the figures the status stored.
pub fn direction(ratio: f64, p: (f64, f64), lower_is_better: bool, min_change: f64) -> Direction {
    let (p_worse, p_better) = p;
    let up = ratio > 1.0 + min_change;
    let down = ratio < 1.0 / (1.0 + min_change);
    let (worse_moved, better_moved) = if lower_is_better {
        (up, down)
    } else {
        (down, up)
    };
    if p_worse < ALPHA && worse_moved {
        Direction::Worse
    } else if p_better < ALPHA && better_moved {
        Direction::Better
    } else {
        Direction::WithinNoise
    }
}

/// The exact one-sided p-values of the Wilcoxon signed-rank test of `d` (differences, one per
/// pair): (P(W+ >= observed), P(W+ <= observed)) under the hypothesis that each difference is
/// as likely positive as negative. Zero differences are dropped (Wilcoxon's rule); tied
/// magnitudes share their mean rank, kept whole by doubling every rank. With no difference
/// left both p-values are 1.
pub fn wilcoxon_signed_rank(d: &[f64]) -> (f64, f64) {
    let mut nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    if nonzero.is_empty() {
        return (1.0, 1.0);
    }
    nonzero.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Doubled mid-ranks: a tie spanning ranks i+1..=j+1 gets i+j+2 each.
    let n = nonzero.len();
    let mut ranks = vec![0usize; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        for r in &mut ranks[i..=j] {
            *r = i + j + 2;
        }
        i = j + 1;
    }
    let observed: usize = ranks
        .iter()
        .zip(&nonzero)
        .filter(|(_, x)| **x > 0.0)
        .map(|(r, _)| r)
        .sum();
    // counts[s]: how many of the 2^n sign patterns give W+ = s (in doubled ranks).
    let total: usize = ranks.iter().sum();
    let mut counts = vec![0f64; total + 1];
    counts[0] = 1.0;
    for &r in &ranks {
        for s in (r..=total).rev() {
            counts[s] += counts[s - r];
        }
    }
    let patterns = 2f64.powi(n as i32);
    let at_least: f64 = counts[observed..].iter().sum();
    let at_most: f64 = counts[..=observed].iter().sum();
    (at_least / patterns, at_most / patterns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_distribution_gives_the_textbook_p_values() {
        // Five rounds, all worse: W+ = 15 of 15, the one pattern of 32.
        let (worse, better) = wilcoxon_signed_rank(&[0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(worse, 1.0 / 32.0);
        assert_eq!(better, 1.0);
        // Ranks 1..6 with signs + - + + + +: W+ = 21 - 2 = 19. A pattern reaches 19 when the
        // ranks it makes negative sum to 2 or less: none, {1} or {2}, so 3 of 64.
        let d = [0.01, -0.02, 0.03, 0.04, 0.05, 0.06];
        let (worse, _) = wilcoxon_signed_rank(&d);
        assert!((worse - 3.0 / 64.0).abs() < 1e-12, "{worse}");
        // Symmetric: the mirrored data swaps the two tails.
        let mirrored: Vec<f64> = d.iter().map(|x| -x).collect();
        assert_eq!(wilcoxon_signed_rank(&mirrored).1, worse);
        // Zeros are dropped; nothing left is no evidence.
        assert_eq!(wilcoxon_signed_rank(&[0.0, 0.0]), (1.0, 1.0));
    }

    #[test]
    fn tied_magnitudes_share_their_rank() {
        // |d| = 1, 1, 2: mid-ranks 1.5, 1.5, 3; signs + - +: W+ = 4.5. Patterns (W+): 0, 1.5,
        // 1.5, 3, 3, 4.5, 4.5, 6: P(W+ >= 4.5) = 3/8.
        let (worse, better) = wilcoxon_signed_rank(&[1.0, -1.0, 2.0]);
        assert_eq!(worse, 3.0 / 8.0);
        assert_eq!(better, 7.0 / 8.0);
    }

    #[test]
    fn a_candidate_slower_every_round_is_worse_and_its_ratio_is_the_geometric_middle() {
        let base = [20.0, 21.0, 19.5, 20.5, 20.2, 19.8];
        let slower: Vec<f64> = base.iter().map(|b| b * 1.10).collect();
        let p = paired(&base, &slower, true).unwrap();
        assert!((p.ratio - 1.10).abs() < 1e-9, "{}", p.ratio);
        assert_eq!(p.p_worse, 1.0 / 64.0);
        assert_eq!(p.direction(true, 0.05), Direction::Worse);
        // 10% slower is not worse beyond a 20% practical change.
        assert_eq!(p.direction(true, 0.20), Direction::WithinNoise);
        // The same numbers as throughput: more is better.
        assert_eq!(
            paired(&base, &slower, false)
                .unwrap()
                .direction(false, 0.05),
            Direction::Better
        );
    }

    #[test]
    fn drift_that_moves_both_sides_of_a_round_cancels_out() {
        // The machine gets 40% slower over the run; the candidate is the same code.
        let base = [20.0, 22.0, 24.0, 26.0, 28.0];
        let same: Vec<f64> = base.iter().map(|b| b * 1.001).collect();
        let drifted = [20.02, 21.97, 24.03, 25.98, 28.01];
        for candidate in [&same[..], &drifted[..]] {
            let p = paired(&base, candidate, true).unwrap();
            assert_eq!(p.direction(true, 0.03), Direction::WithinNoise, "{p:?}");
            let (low, high) = p.interval.unwrap();
            assert!(low <= p.ratio && p.ratio <= high);
            assert!(p.width_percent().unwrap() < 1.0, "{p:?}");
        }
    }

    #[test]
    fn rounds_without_a_ratio_are_left_out() {
        let p = paired(&[0.0, 10.0, 10.0], &[5.0, 11.0, f64::NAN], true).unwrap();
        assert_eq!(p.ratios, vec![1.1]);
        assert!(p.interval.is_none());
        assert!(paired(&[0.0], &[1.0], true).is_none());
    }
}
