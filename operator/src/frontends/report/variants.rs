//! The variants of one run side by side, as text: each candidate against the base, per
//! configuration, from `status.variants` (the engine's paired comparison), marked as the
//! regression gate (`engine::verdict::gate`) judges them. Shared by report.md, the lines a
//! finished run prints and `benchmatrix compare RUN` with one run.

use std::fmt::Write as _;

use crate::engine::results::noise::ALPHA;
use crate::engine::results::variants::CAPACITY;
use crate::engine::verdict::gate::{regressed, worse_pct};
use crate::resource::BenchmarkRunStatus;
use crate::resource::status::{ChangeVerdict, RatioFigure, VariantComparison};

/// "pool-x1: candidate vs base mixed/fast p99 +8.1% (ratio 1.081, 95% interval
/// 1.052–1.113, p=0.016, 6 rounds)".
pub fn figure_sentence(c: &VariantComparison, f: &RatioFigure) -> String {
    if f.figure == CAPACITY {
        return format!(
            "{}: {} holds {:.1}% {} traffic than {} at the SLO (ratio {:.3}, 95% interval {}, \
             p={:.3}, {} rounds)",
            c.configuration,
            c.candidate,
            (1.0 - f.ratio).abs() * 100.0,
            if f.ratio < 1.0 { "less" } else { "more" },
            c.base,
            f.ratio,
            interval(f),
            f.p_worse.min(f.p_better),
            c.rounds
        );
    }
    format!(
        "{}: {} {:+.1}% (ratio {:.3}, 95% interval {}, p={:.3}, {} rounds)",
        c.configuration,
        figure_name(c, f),
        worse_pct(f),
        f.ratio,
        interval(f),
        f.p_worse.min(f.p_better),
        c.rounds
    )
}

/// "candidate vs base mixed/fast p99".
fn figure_name(c: &VariantComparison, f: &RatioFigure) -> String {
    if f.figure == CAPACITY {
        return format!("{} vs {} capacity at the SLO", c.candidate, c.base);
    }
    format!(
        "{} vs {} {}/{} {}",
        c.candidate, c.base, f.phase, f.endpoint, f.figure
    )
}

fn interval(f: &RatioFigure) -> String {
    match (f.ratio_low, f.ratio_high) {
        (Some(low), Some(high)) => format!("{low:.3}–{high:.3}"),
        _ => "needs 3 rounds".into(),
    }
}

fn value(figure: &str, v: f64) -> String {
    if figure == "rps" || figure == CAPACITY {
        format!("{v:.1} rps")
    } else {
        format!("{v:.2} ms")
    }
}

/// A figure's mark wherever it is shown (terminal, report.md, compare.md), by the rule the exit
/// code and the JUnit case follow: without `--max-regression`, the status's own verdict
/// (significant at 5% and beyond a 5% change); with it, a regression is what [`regressed`]
/// says, so a +4% figure gated at 3% is marked a regression and a +7% one gated at 10% is
/// marked as within the gate, never both ways at once.
pub fn mark(f: &RatioFigure, max_regression: Option<f64>) -> String {
    let Some(max) = max_regression else {
        return match f.verdict {
            ChangeVerdict::Regression => "regression".into(),
            ChangeVerdict::Improvement => "improvement".into(),
            ChangeVerdict::WithinNoise => "~ within noise".into(),
        };
    };
    if regressed(f, max) {
        format!("regression beyond {max}%")
    } else if f.verdict == ChangeVerdict::Improvement {
        "improvement".into()
    } else if f.p_worse < ALPHA && worse_pct(f) > 0.0 {
        format!("worse, within {max}% (--max-regression)")
    } else {
        "~ within noise".into()
    }
}

/// The side-by-side table: one row per configuration, candidate, stream and figure, with the
/// medians of both sides, the median per-round ratio, its interval, the paired test's p-value
/// (the smaller of the two directions) and its [`mark`] under `max_regression`. Empty when
/// the run has no variants.
pub fn table(variants: &[VariantComparison], max_regression: Option<f64>) -> String {
    if variants.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "| configuration | figure | base | candidate | ratio | 95% interval | p | verdict |\n\
         |---|---|---:|---:|---:|---|---:|---|\n",
    );
    for c in variants {
        if c.figures.is_empty() {
            let _ = writeln!(
                o,
                "| {} | {} vs {} | – | – | – | – | – | not compared: no round gave both a figure \
                 (see the cells' messages) |",
                c.configuration, c.candidate, c.base
            );
        }
        for f in &c.figures {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.3} ({:+.1}%) | {} | {:.3} | {} |",
                c.configuration,
                figure_name(c, f),
                value(&f.figure, f.base),
                value(&f.figure, f.candidate),
                f.ratio,
                worse_pct(f),
                interval(f),
                f.p_worse.min(f.p_better),
                mark(f, max_regression)
            );
        }
    }
    o
}

/// `## Variants` of report.md: how the variants were measured, then [`table`] marked as the
/// run's `--max-regression` gate judged it. Empty without variants.
pub fn report_section(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> String {
    if status.variants.is_empty() {
        return String::new();
    }
    let rounds: Vec<String> = status
        .variants
        .iter()
        .map(|c| format!("{} {}", c.configuration, c.rounds))
        .collect();
    format!(
        "\n## Variants\n\nEach round measured a configuration's variants back to back on the \
         same nodes, in ABBA order; a figure's evidence is its per-round ratio (candidate / \
         base), so drift between rounds cancels out. Ratio: the median over the rounds, with a \
         95% bootstrap interval; p: exact Wilcoxon signed-rank test on the log ratios (the \
         smaller one-sided p); {}. Rounds: {}.\n\n{}",
        gate_rule(max_regression),
        rounds.join(", "),
        table(&status.variants, max_regression)
    )
}

/// How [`mark`] judged, in words for report.md.
fn gate_rule(max_regression: Option<f64>) -> String {
    match max_regression {
        None => "a regression or improvement is significant at 5% and beyond a 5% change".into(),
        Some(max) => format!(
            "a regression is significant at 5% and worse than {max}% (`--max-regression`, as \
             the exit code judged it); an improvement is significant at 5% and beyond a 5% change"
        ),
    }
}

/// The terminal's lines after a run with variants: one per figure, as [`figure_sentence`],
/// with its [`mark`] under `max_regression`.
pub fn closing_lines(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Vec<String> {
    if status.variants.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        "variants (candidate / base, paired rounds):".into(),
    ];
    for c in &status.variants {
        for f in &c.figures {
            lines.push(format!(
                "  {} [{}]",
                figure_sentence(c, f),
                mark(f, max_regression)
            ));
        }
    }
    lines
}
