//! Comparisons as a forest plot: one row per figure (cell, phase, endpoint, p50/p99/rps or
//! capacity), its ratio new / base with the 95% interval where there is one, on a logarithmic
//! ratio axis (so +3% is as wide on a 20 ms cell as on a 400 ms one), the gate's lines at
//! `--max-regression`, each row in its verdict's colour. Used by `compare`, for the variants of
//! a run, and written alone as the picture a pull request's comment links.

use super::plot::clip;
use super::plot::{BAD, Doc, GOOD, NEUTRAL, Scale};
use crate::engine::results::variants::lower_is_better;
use crate::engine::verdict::gate;
use crate::resource::BenchmarkRunStatus;
use crate::resource::status::ChangeVerdict;

/// One row: a ratio new / base with its interval and verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    /// What is compared, e.g. "pool-x1 candidate · mixed/fast p99".
    pub label: String,
    /// new / base.
    pub ratio: f64,
    /// The 95% interval of the ratio, when known.
    pub interval: Option<(f64, f64)>,
    /// Lower figures are better (latency), else higher (throughput, capacity).
    pub lower_is_better: bool,
    /// The verdict's colour: worse, better or neither.
    pub verdict: Verdict,
    /// The verdict in words, for the row's tooltip.
    pub words: String,
}

/// The gate's lines: `--max-regression` in percent, and the ratios beyond which a latency
/// (above `up`) and a throughput or capacity (below `down`) fail it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// `--max-regression`, percent.
    pub pct: f64,
    /// A latency ratio above this fails.
    pub up: f64,
    /// A throughput or capacity ratio below this fails.
    pub down: f64,
}

impl Gate {
    /// The gate of a run's variants: worse by `pct` on both sides of the same log scale.
    pub fn of_variants(pct: f64) -> Gate {
        let up = 1.0 + pct / 100.0;
        Gate {
            pct,
            up,
            down: 1.0 / up,
        }
    }

    /// The gate of `compare`: the change of the medians beyond `pct` either way.
    pub fn of_compare(pct: f64) -> Gate {
        Gate {
            pct,
            up: 1.0 + pct / 100.0,
            down: (1.0 - pct / 100.0).max(1e-3),
        }
    }
}

/// A row's verdict, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Fails the gate, or regressed.
    Worse,
    /// Improved.
    Better,
    /// Within noise, or no verdict.
    Neither,
}

const W: f64 = 860.0;
const LABEL_X: f64 = 330.0;
const PLOT: (f64, f64) = (345.0, 760.0);
const TOP: f64 = 70.0;
const ROW: f64 = 22.0;

/// The rows of `status.variants`, judged by the gate at `max_regression` when given.
pub fn variant_rows(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Vec<ForestRow> {
    let mut rows = Vec::new();
    for c in &status.variants {
        for f in &c.figures {
            let verdict = match (max_regression, f.verdict) {
                (Some(m), _) if gate::regressed(f, m) => Verdict::Worse,
                (None, ChangeVerdict::Regression) => Verdict::Worse,
                (_, ChangeVerdict::Improvement) => Verdict::Better,
                _ => Verdict::Neither,
            };
            let stream = if f.phase.is_empty() {
                String::new()
            } else {
                format!(" · {}/{}", f.phase, f.endpoint)
            };
            rows.push(ForestRow {
                label: format!("{} {}{stream} {}", c.configuration, c.candidate, f.figure),
                ratio: f.ratio,
                interval: f.ratio_low.zip(f.ratio_high),
                lower_is_better: lower_is_better(&f.figure),
                verdict,
                words: format!("{:?} over {} rounds", f.verdict, c.rounds),
            });
        }
    }
    rows
}

/// The forest plot of a run's variants, or `None` without variants.
pub fn variants_chart(
    status: &BenchmarkRunStatus,
    max_regression: Option<f64>,
) -> Option<(String, String)> {
    let rows = variant_rows(status, max_regression);
    if status.variants.is_empty() {
        return None;
    }
    let title = "Each candidate against its base: ratio with 95% interval";
    Some((
        "forest.svg".into(),
        forest_plot(title, &rows, max_regression.map(Gate::of_variants)),
    ))
}

/// A tick's change: "+5%", "−33%", "0%".
fn tick(r: f64) -> String {
    let pct = ((r - 1.0) * 100.0).round();
    if pct > 0.0 {
        format!("+{pct:.0}%")
    } else if pct < 0.0 {
        format!("−{:.0}%", -pct)
    } else {
        "0%".into()
    }
}

/// A ratio as a change: "+5.0%", "−9.1%".
fn change(r: f64) -> String {
    let pct = (r - 1.0) * 100.0;
    if pct.abs() < 0.05 {
        "0%".into()
    } else if pct > 0.0 {
        format!("+{pct:.1}%")
    } else {
        format!("−{:.1}%", -pct)
    }
}

/// The ratio axis: covering every row, its interval and the gate's lines, with ticks at round
/// percentages.
fn axis(rows: &[ForestRow], gate: Option<Gate>) -> (Scale, Vec<f64>) {
    let mut lo: f64 = 0.95;
    let mut hi: f64 = 1.0 / 0.95;
    for r in rows {
        let (a, b) = r.interval.unwrap_or((r.ratio, r.ratio));
        lo = lo.min(a.min(r.ratio));
        hi = hi.max(b.max(r.ratio));
    }
    if let Some(g) = gate {
        hi = hi.max(g.up);
        lo = lo.min(g.down);
    }
    let (lo, hi) = ((lo / 1.03).max(1e-3), hi * 1.03);
    const CANDIDATES: [f64; 17] = [
        0.1, 0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0, 10.0,
    ];
    let scale = Scale {
        lo,
        hi,
        px_lo: PLOT.0,
        px_hi: PLOT.1,
        log: true,
    };
    // 1 first, then the others nearest it, each kept only 45 px clear of those kept: labels
    // that overlap read as one.
    let mut by_nearness: Vec<f64> = CANDIDATES
        .iter()
        .copied()
        .filter(|t| *t >= lo && *t <= hi)
        .collect();
    by_nearness.sort_by(|a, b| a.ln().abs().total_cmp(&b.ln().abs()));
    let mut ticks: Vec<f64> = Vec::new();
    for t in by_nearness {
        if ticks
            .iter()
            .all(|k| (scale.px(*k) - scale.px(t)).abs() >= 45.0)
        {
            ticks.push(t);
        }
    }
    ticks.sort_by(f64::total_cmp);
    (scale, ticks)
}

/// The forest plot SVG of `rows`; with `gate` (percent), the gate's lines. No rows: a chart
/// that says there was nothing to compare.
pub fn forest_plot(title: &str, rows: &[ForestRow], gate: Option<Gate>) -> String {
    if rows.is_empty() {
        return super::plot::note_chart(title, "no figure was compared in both runs");
    }
    let bottom = TOP + rows.len() as f64 * ROW;
    let mut doc = Doc::new(W, bottom + 70.0, title);
    let (x, ticks) = axis(rows, gate);
    for t in &ticks {
        doc.line(
            (x.px(*t), TOP - 6.0),
            (x.px(*t), bottom),
            "stroke=\"#e4e4e4\"",
        );
        doc.text(
            x.px(*t),
            bottom + 15.0,
            "text-anchor=\"middle\" font-size=\"11\"",
            &tick(*t),
        );
    }
    doc.line((PLOT.0, bottom), (PLOT.1, bottom), "stroke=\"#333\"");
    doc.text(
        (PLOT.0 + PLOT.1) / 2.0,
        bottom + 32.0,
        "text-anchor=\"middle\"",
        "new / base (log scale); latency: right is worse · throughput, capacity: left is worse",
    );
    doc.line(
        (x.px(1.0), TOP - 6.0),
        (x.px(1.0), bottom),
        "stroke=\"#333\"",
    );
    if let Some(m) = gate {
        gate_lines(&mut doc, &x, m, bottom);
    }
    for (i, r) in rows.iter().enumerate() {
        row(&mut doc, &x, TOP + i as f64 * ROW + ROW / 2.0, r);
    }
    let bars = if rows.iter().any(|r| r.interval.is_some()) {
        "bar: 95% interval of the ratio"
    } else {
        "points only: no interval of the ratio is known (single runs, or judged by a rank test)"
    };
    let key = format!("colour: regressed red · improved green · within noise grey; {bars}");
    doc.text(20.0, bottom + 56.0, "font-size=\"11\" fill=\"#444\"", &key);
    doc.finish()
}

fn gate_lines(doc: &mut Doc, x: &Scale, g: Gate, bottom: f64) {
    let attrs = format!("stroke=\"{BAD}\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"");
    let m = g.pct;
    for (at, text) in [
        (g.up, format!("gate +{m}% (latency)")),
        (g.down, format!("gate −{m}% (rps, capacity)")),
    ] {
        doc.line((x.px(at), TOP - 14.0), (x.px(at), bottom), &attrs);
        let anchor = if at > 1.0 { "start" } else { "end" };
        let dx = if at > 1.0 { 3.0 } else { -3.0 };
        doc.text(
            x.px(at) + dx,
            TOP - 16.0,
            &format!("text-anchor=\"{anchor}\" font-size=\"10\" fill=\"{BAD}\""),
            &text,
        );
    }
}

fn row(doc: &mut Doc, x: &Scale, cy: f64, r: &ForestRow) {
    let colour = match r.verdict {
        Verdict::Worse => BAD,
        Verdict::Better => GOOD,
        Verdict::Neither => NEUTRAL,
    };
    doc.text(
        LABEL_X,
        cy + 4.0,
        "text-anchor=\"end\"",
        &clip(&r.label, 52),
    );
    let interval = r.interval.map_or("no interval".to_owned(), |(a, b)| {
        format!("95% {} to {}", change(a), change(b))
    });
    let tip = format!("{}: {} ({interval}); {}", r.label, change(r.ratio), r.words);
    if let Some((a, b)) = r.interval {
        doc.line(
            (x.px(a), cy),
            (x.px(b), cy),
            &format!("stroke=\"{colour}\" stroke-width=\"2\""),
        );
        for e in [a, b] {
            doc.line(
                (x.px(e), cy - 4.0),
                (x.px(e), cy + 4.0),
                &format!("stroke=\"{colour}\" stroke-width=\"2\""),
            );
        }
    }
    doc.rect(
        (x.px(r.ratio) - 5.0, cy - 5.0),
        (10.0, 10.0),
        &format!("fill=\"{colour}\""),
        &tip,
    );
    doc.text(
        PLOT.1 + 8.0,
        cy + 4.0,
        &format!("font-size=\"11\" fill=\"{colour}\""),
        &change(r.ratio),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_at(ratio: f64) -> ForestRow {
        ForestRow {
            label: "a <b> & \"c\" ü".into(),
            ratio,
            interval: Some((ratio * 0.99, ratio * 1.01)),
            lower_is_better: true,
            verdict: Verdict::Worse,
            words: String::new(),
        }
    }

    #[test]
    fn equal_changes_are_equally_wide_whatever_the_base() {
        let rows = [row_at(1.03), row_at(0.8)];
        let (x, ticks) = axis(&rows, Some(Gate::of_variants(5.0)));
        assert!(ticks.contains(&1.0) && ticks.len() <= 9);
        let w1 = x.px(1.03) - x.px(1.0);
        let w2 = x.px(0.8 * 1.03) - x.px(0.8);
        assert!((w1 - w2).abs() < 1e-6);
        let svg = forest_plot("t", &rows, Some(Gate::of_variants(5.0)));
        assert!(
            svg.contains("gate +5% (latency)") && svg.contains("a &lt;b&gt; &amp; &quot;c&quot; ü")
        );
    }

    #[test]
    fn no_rows_say_so() {
        assert!(
            forest_plot("t", &[], None).contains("nothing")
                || forest_plot("t", &[], None).contains("no figure")
        );
    }
}
