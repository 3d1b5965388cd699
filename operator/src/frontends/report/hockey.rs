//! The capacity search of one cell as a picture ("the hockey stick"): each probe's SLO figure
//! against the rate offered, numbered in the order run, held filled and failed hollow, the
//! SLO's limit as a line, the held and failed rates marked, every round overlaid in its own
//! colour; under it, on the same x axis, the rate achieved against the rate offered (y = x
//! dashed), so a target that saturates shows as points falling off the diagonal. A search that
//! ended without an answer says why under the chart, in the status's own words.

use super::plot::{self, BAD, Doc, GOOD, NEUTRAL, PALETTE, Scale};
use crate::engine::capacity::probe::rate_text;
use crate::resource::capacity::{CapacityStatus, ProbeStatus, ProbeVerdict, SearchEnding};

const W: f64 = 760.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 200.0;
const TOP_Y: (f64, f64) = (50.0, 280.0);
const LOW_Y: (f64, f64) = (330.0, 450.0);
const H: f64 = 546.0;

/// The SLO figure the chart plots: (endpoint, figure, limit). The most binding one: the figure
/// that came closest to (or furthest past) its limit in any probe, as that is what stopped the
/// search. `None` when no probe measured any figure.
pub fn binding_figure(cap: &CapacityStatus) -> Option<(String, String, f64)> {
    let mut best: Option<((String, String, f64), f64)> = None;
    for f in cap.probes.iter().flat_map(|p| &p.figures) {
        let Some(m) = f.measured else { continue };
        let closeness = if f.limit > 0.0 { m / f.limit } else { 0.0 };
        if best.as_ref().is_none_or(|(_, c)| closeness > *c) {
            best = Some(((f.endpoint.clone(), f.figure.clone(), f.limit), closeness));
        }
    }
    best.map(|(k, _)| k)
}

/// The value of figure (endpoint, figure) in probe `p`.
fn figure_of(p: &ProbeStatus, endpoint: &str, figure: &str) -> Option<f64> {
    p.figures
        .iter()
        .find(|f| f.endpoint == endpoint && f.figure == figure)
        .and_then(|f| f.measured)
}

/// Why the search said less than a capacity, in words for under the chart; `None` when it
/// found one. The ending is the engine's ([`CapacityStatus::ended`]), the one the verdict
/// counts; a search still under way or beside busy neighbours says so from its probes.
pub fn ending_note(cap: &CapacityStatus) -> Option<String> {
    let why = match cap.ended() {
        Some(e) if e.found() => return None,
        Some(SearchEnding::LoadGeneratorBound) => "stopped by the load generator".to_owned(),
        Some(SearchEnding::OutOfProbes) => "stopped: the probe budget ran out".to_owned(),
        Some(e) => format!("no capacity ({})", e.words()),
        None if cap.found => return None,
        None if cap.searching() => "still searching".to_owned(),
        None => match cap.probes.iter().rev().find(|p| p.check.is_none()) {
            Some(p) if p.verdict == ProbeVerdict::NotBelieved => {
                "stopped beside busy neighbours".to_owned()
            }
            _ => "no capacity found".to_owned(),
        },
    };
    // The status's sentence often opens with "no capacity: " itself.
    let message = cap.message.trim_start_matches("no capacity: ");
    Some(format!("{why}: {message}"))
}

/// The colour of round `round` (1 without rounds).
fn round_colour(round: Option<u32>) -> &'static str {
    PALETTE[(round.unwrap_or(1).saturating_sub(1) as usize) % PALETTE.len()]
}

/// A probe's mark: filled when held, hollow when failed, grey when not a verdict on the target.
fn mark(doc: &mut Doc, at: (f64, f64), p: &ProbeStatus, tip: &str, placed: &mut Vec<(f64, f64)>) {
    let c = round_colour(p.round);
    let attrs = match p.verdict {
        ProbeVerdict::Held => format!("fill=\"{c}\" stroke=\"{c}\" stroke-width=\"2\""),
        ProbeVerdict::Failed => format!("fill=\"white\" stroke=\"{c}\" stroke-width=\"2\""),
        _ => format!("fill=\"white\" stroke=\"{NEUTRAL}\" stroke-dasharray=\"2 2\""),
    };
    doc.circle(at, 6.0, &attrs, tip);
    // Probes at one rate sit on top of each other: their numbers go to the first corner no
    // other number took, so each stays readable.
    let spots = [
        (8.0, -7.0),
        (8.0, 14.0),
        (-20.0, -7.0),
        (-20.0, 14.0),
        (20.0, 4.0),
        (-32.0, 4.0),
    ];
    let free = |(x, y): (f64, f64)| {
        placed
            .iter()
            .all(|(a, b)| (a - x).abs() > 13.0 || (b - y).abs() > 10.0)
    };
    let spot = spots
        .iter()
        .map(|(dx, dy)| (at.0 + dx, at.1 + dy))
        .find(|s| free(*s))
        .unwrap_or((at.0 + 8.0, at.1 - 7.0));
    placed.push(spot);
    doc.text(
        spot.0,
        spot.1,
        "font-size=\"10\" fill=\"#333\"",
        &p.probe.to_string(),
    );
}

/// The hockey stick SVG of `cell`'s search; a note chart when it has no probes.
pub fn hockey_stick(cell: &str, cap: &CapacityStatus) -> String {
    let title = format!("Capacity search of {cell}: SLO figure and throughput per offered rate");
    let probes: Vec<&ProbeStatus> = cap.probes.iter().collect();
    let Some((endpoint, figure, limit)) = binding_figure(cap) else {
        return plot::note_chart(
            &title,
            &format!("no probe measured an SLO figure: {}", cap.message),
        );
    };
    let max_rate = probes
        .iter()
        .map(|p| p.rate.max(p.achieved))
        .fold(0.0, f64::max);
    let (x, xt) = Scale::linear_from_zero(max_rate * 1.05, LEFT, W - RIGHT);
    // Room under the lower panel only for a note on why the search gave no answer.
    let h = if ending_note(cap).is_some() {
        H
    } else {
        H - 40.0
    };
    let mut doc = Doc::new(W, h, &title);
    let values: Vec<Option<f64>> = probes
        .iter()
        .map(|p| figure_of(p, &endpoint, &figure))
        .collect();
    let ymax = values.iter().flatten().fold(limit, |a, v| a.max(*v));
    let ymin = values.iter().flatten().fold(limit, |a, v| a.min(*v));
    // A p99 past saturation grows by orders of magnitude: a log axis keeps the knee readable.
    let (y, yt) = if ymin > 0.0 && ymax / ymin > 20.0 {
        Scale::log_covering(ymin, ymax, TOP_Y.1, TOP_Y.0)
    } else {
        Scale::linear_from_zero(ymax * 1.1, TOP_Y.1, TOP_Y.0)
    };
    let unit = if figure == "errorRate" { "" } else { " (ms)" };
    let scale_word = if y.log { ", log scale" } else { "" };
    plot::y_ticks(
        &mut doc,
        &y,
        &yt,
        (LEFT, W - RIGHT),
        &format!("{endpoint} {figure}{unit}{scale_word}"),
    );
    plot::x_ticks(&mut doc, &x, &xt, TOP_Y, "");
    slo_line(&mut doc, &y, limit, unit);
    rate_marks(&mut doc, &x, cap);
    let mut placed = Vec::new();
    for (p, v) in probes.iter().zip(&values) {
        let py = v.map_or(TOP_Y.0, |v| y.px(v));
        let tip = format!(
            "probe {} at {} rps: {} {}, achieved {} rps ({})",
            p.probe,
            rate_text(p.rate),
            figure,
            v.map_or("not measured".into(), plot_number),
            rate_text(p.achieved),
            p.why.as_deref().unwrap_or(&p.verdict.to_string())
        );
        mark(&mut doc, (x.px(p.rate), py), p, &tip, &mut placed);
    }
    achieved_panel(&mut doc, &x, &xt, &probes);
    legend(&mut doc, cap);
    if let Some(note) = ending_note(cap) {
        ending_text(&mut doc, &note);
    }
    doc.finish()
}

/// The SLO's limit as a dashed line across the upper panel, labelled.
fn slo_line(doc: &mut Doc, y: &Scale, limit: f64, unit: &str) {
    let ly = y.px(limit);
    doc.line(
        (LEFT, ly),
        (W - RIGHT, ly),
        &format!("stroke=\"{BAD}\" stroke-dasharray=\"6 4\""),
    );
    doc.text(
        W - RIGHT - 4.0,
        ly - 5.0,
        &format!("text-anchor=\"end\" fill=\"{BAD}\""),
        &format!(
            "SLO: below {}{}",
            plot_number(limit),
            unit.trim_start().replace(['(', ')'], " ").trim_end()
        ),
    );
}

/// Why the search gave no answer, under the lower panel: two lines at most, each within the
/// chart's width.
fn ending_text(doc: &mut Doc, note: &str) {
    let wrapped = super::wrap(note, 100);
    let lines: Vec<&str> = wrapped.lines().collect();
    for (i, line) in lines.iter().take(2).enumerate() {
        let more = if i == 1 && lines.len() > 2 {
            " …"
        } else {
            ""
        };
        doc.text(
            20.0,
            H - 24.0 + i as f64 * 15.0,
            &format!("fill=\"{BAD}\" font-weight=\"bold\" font-size=\"11\""),
            &format!("{line}{more}"),
        );
    }
}

/// The held and failed rates as vertical lines through both panels.
fn rate_marks(doc: &mut Doc, x: &Scale, cap: &CapacityStatus) {
    for (rate, colour, word, dy) in [
        (
            cap.held_rate,
            GOOD,
            if cap.rounds.len() > 1 {
                "held (median)"
            } else {
                "held"
            },
            0.0,
        ),
        (cap.failed_rate, BAD, "failed", 14.0),
    ] {
        let Some(r) = rate else { continue };
        let px = x.px(r);
        doc.line(
            (px, TOP_Y.0),
            (px, LOW_Y.1),
            &format!("stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\""),
        );
        doc.text(
            px + 3.0,
            TOP_Y.0 + 12.0 + dy,
            &format!("fill=\"{colour}\" font-size=\"11\""),
            &format!("{word} {} rps", rate_text(r)),
        );
    }
}

/// The lower panel: achieved against offered, with y = x.
fn achieved_panel(doc: &mut Doc, x: &Scale, xt: &[f64], probes: &[&ProbeStatus]) {
    let y = Scale {
        lo: x.lo,
        hi: x.hi,
        px_lo: LOW_Y.1,
        px_hi: LOW_Y.0,
        log: false,
    };
    let yt: Vec<f64> = [0.0, 0.5, 1.0].iter().map(|f| f * x.hi).collect();
    plot::y_ticks(doc, &y, &yt, (LEFT, W - RIGHT), "achieved (rps)");
    plot::x_ticks(
        doc,
        x,
        xt,
        LOW_Y,
        "offered rate (requests per second, all endpoints)",
    );
    doc.line(
        (x.px(0.0), y.px(0.0)),
        (x.px(x.hi), y.px(x.hi)),
        "stroke=\"#999\" stroke-dasharray=\"4 4\"",
    );
    doc.text(
        x.px(x.hi) - 4.0,
        y.px(x.hi) + 14.0,
        "text-anchor=\"end\" fill=\"#777\" font-size=\"10\"",
        "achieved = offered",
    );
    let mut placed = Vec::new();
    for p in probes {
        let tip = format!(
            "probe {}: offered {} rps, achieved {} rps",
            p.probe,
            rate_text(p.rate),
            rate_text(p.achieved)
        );
        mark(doc, (x.px(p.rate), y.px(p.achieved)), p, &tip, &mut placed);
    }
}

fn legend(doc: &mut Doc, cap: &CapacityStatus) {
    let mut entries = vec![
        (
            format!(
                "<circle cx=\"{{x}}\" cy=\"{{y}}\" r=\"5\" fill=\"{}\"/>",
                PALETTE[0]
            ),
            "held (filled)".to_owned(),
        ),
        (
            format!(
                "<circle cx=\"{{x}}\" cy=\"{{y}}\" r=\"5\" fill=\"white\" stroke=\"{}\" stroke-width=\"2\"/>",
                PALETTE[0]
            ),
            "failed (hollow)".to_owned(),
        ),
    ];
    if cap
        .probes
        .iter()
        .any(|p| !matches!(p.verdict, ProbeVerdict::Held | ProbeVerdict::Failed))
    {
        entries.push((format!("<circle cx=\"{{x}}\" cy=\"{{y}}\" r=\"5\" fill=\"white\" stroke=\"{NEUTRAL}\" stroke-dasharray=\"2 2\"/>"), "not a verdict on the target".to_owned()));
    }
    for r in &cap.rounds {
        entries.push((
            format!(
                "<rect x=\"{{x}}\" y=\"{{y}}\" width=\"10\" height=\"4\" fill=\"{}\"/>",
                round_colour(Some(r.round))
            ),
            format!("round {}", r.round),
        ));
    }
    entries.push(("".into(), "numbers: order run".into()));
    plot::legend(doc, (W - RIGHT + 16.0, TOP_Y.0 + 10.0), &entries);
}

/// A figure as the chart writes it: three significant digits or so.
pub fn plot_number(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}
