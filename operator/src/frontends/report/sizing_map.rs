//! The sizing search as a map: the searched space as a grid, replicas across and CPU per
//! replica up, one panel per mode (and env values); each configuration coloured by what
//! happened to it (held the target, fell short, pruned by the model with its bound, not
//! needed, chosen), with the rate it held written against the target. Beside it, the model's
//! predictions against what was measured, so a reader sees how far the model that pruned can
//! be trusted.

use super::hockey::plot_number;
use super::plot::clip;
use super::plot::{self, BAD, Doc, GOOD, Scale};
use crate::engine::capacity::probe::rate_text;
use crate::resource::BenchmarkRunStatus;
use crate::resource::sizing::{SizedConfiguration, SizedState, SizingStatus};

const CELL: (f64, f64) = (96.0, 50.0);
const PANEL_GAP: f64 = 30.0;
const AXIS_W: f64 = 60.0;
const W: f64 = 860.0;

/// A configuration's place in the grid, read from its name (`<mode>-x<replicas>-cpu<cpu>`
/// then `-<env><value>` pairs, as the sizing space names them).
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// Mode and env values: the panel.
    pub panel: String,
    /// Replicas.
    pub replicas: u32,
    /// The CPU label as written in the name ("500m", "1").
    pub cpu: String,
}

/// Where `name` goes in the grid; `None` for a name the space did not make.
pub fn place(name: &str) -> Option<Place> {
    let parts: Vec<&str> = name.split('-').collect();
    let i = (1..parts.len().saturating_sub(1)).find(|&i| {
        parts[i]
            .strip_prefix('x')
            .is_some_and(|r| r.parse::<u32>().is_ok())
            && parts[i + 1].starts_with("cpu")
    })?;
    let mut panel = parts[..i].join("-");
    if parts.len() > i + 2 {
        panel = format!("{panel} · {}", parts[i + 2..].join("-"));
    }
    Some(Place {
        panel,
        replicas: parts[i][1..].parse().ok()?,
        cpu: parts[i + 1][3..].to_owned(),
    })
}

/// The chart file of a sizing run, or `None` without `status.sizing`.
pub fn chart(status: &BenchmarkRunStatus) -> Option<(String, String)> {
    let s = status.sizing.as_ref()?;
    Some(("sizing-map.svg".into(), draw(s)))
}

/// Fill, label and whether the configuration held the target.
fn look(c: &SizedConfiguration, target: f64) -> (&'static str, &'static str) {
    let held = c.held_rate.is_some_and(|h| h >= target);
    match c.state {
        SizedState::Chosen => (GOOD, "chosen"),
        SizedState::Measured if held => ("#b8e6d3", "held"),
        SizedState::Measured => ("#f7d2a8", "short"),
        SizedState::Failed => ("#f2b8a0", "failed"),
        SizedState::Pruned => ("url(#hatch)", "pruned"),
        SizedState::RuledOut => ("url(#hatch)", "ruled out"),
        SizedState::NotNeeded => ("#eeeeee", "not needed"),
        SizedState::Measuring => ("#ffffff", "measuring"),
        SizedState::Unmeasured => ("#ffffff", "unmeasured"),
    }
}

/// The panels: (panel, replicas across, CPU labels up sorted by cores, configurations).
type Panel<'a> = (
    String,
    Vec<u32>,
    Vec<(String, f64)>,
    Vec<(Place, &'a SizedConfiguration)>,
);

fn panels(s: &SizingStatus) -> Vec<Panel<'_>> {
    let mut out: Vec<Panel> = Vec::new();
    for c in &s.configurations {
        let Some(p) = place(&c.name) else { continue };
        let i = match out.iter().position(|(name, ..)| *name == p.panel) {
            Some(i) => i,
            None => {
                out.push((p.panel.clone(), Vec::new(), Vec::new(), Vec::new()));
                out.len() - 1
            }
        };
        let (_, reps, cpus, cells) = &mut out[i];
        if !reps.contains(&p.replicas) {
            reps.push(p.replicas);
        }
        let per = c.reserved_cpu / f64::from(p.replicas.max(1));
        if !cpus.iter().any(|(l, _)| *l == p.cpu) {
            cpus.push((p.cpu.clone(), per));
        }
        cells.push((p, c));
    }
    for (_, reps, cpus, _) in &mut out {
        reps.sort_unstable();
        cpus.sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    out
}

fn draw(s: &SizingStatus) -> String {
    let panels = panels(s);
    let grid_h = panels.iter().map(|p| p.2.len()).max().unwrap_or(0) as f64 * CELL.1;
    let top = 70.0;
    let scatter_top = top + grid_h + 70.0;
    let h = scatter_top + 230.0;
    let title = format!(
        "Sizing: {} rps at the SLO ({} rps of traffic + margin): {:?}",
        rate_text(s.target_rate),
        rate_text(s.traffic),
        s.outcome
    );
    let mut doc = Doc::new(W, h, &title);
    doc.text(20.0, 44.0, "font-size=\"12\"", &clip(&s.message, 130));
    if panels.is_empty() {
        doc.text(
            20.0,
            top + 20.0,
            &format!("fill=\"{BAD}\""),
            "no configuration of the space was recorded",
        );
    }
    let mut x = 20.0;
    for p in &panels {
        x += draw_panel(&mut doc, (x, top), p, s.target_rate) + PANEL_GAP;
    }
    legend(&mut doc, (20.0, scatter_top + 10.0));
    scatter(&mut doc, (480.0, scatter_top), s);
    doc.finish()
}

/// One panel at `origin`; returns its width.
fn draw_panel(
    doc: &mut Doc,
    (x0, y0): (f64, f64),
    (name, reps, cpus, cells): &Panel,
    target: f64,
) -> f64 {
    doc.text(x0 + AXIS_W, y0 - 8.0, "font-weight=\"bold\"", name);
    for (j, (label, _)) in cpus.iter().enumerate() {
        doc.text(
            x0 + AXIS_W - 6.0,
            y0 + j as f64 * CELL.1 + CELL.1 / 2.0 + 4.0,
            "text-anchor=\"end\"",
            &format!("cpu {label}"),
        );
    }
    for (i, r) in reps.iter().enumerate() {
        let cx = x0 + AXIS_W + i as f64 * CELL.0 + CELL.0 / 2.0;
        doc.text(
            cx,
            y0 + cpus.len() as f64 * CELL.1 + 16.0,
            "text-anchor=\"middle\"",
            &if *r == 1 {
                "1 replica".to_owned()
            } else {
                format!("{r} replicas")
            },
        );
    }
    for (p, c) in cells {
        let (Some(i), Some(j)) = (
            reps.iter().position(|r| *r == p.replicas),
            cpus.iter().position(|(l, _)| *l == p.cpu),
        ) else {
            continue;
        };
        let at = (x0 + AXIS_W + i as f64 * CELL.0, y0 + j as f64 * CELL.1);
        configuration(doc, at, c, target);
    }
    AXIS_W + reps.len() as f64 * CELL.0
}

/// One configuration's square: its state and its figure against the target.
fn configuration(doc: &mut Doc, (x, y): (f64, f64), c: &SizedConfiguration, target: f64) {
    let (fill, word) = look(c, target);
    let chosen = c.state == SizedState::Chosen;
    let stroke = if chosen {
        "stroke=\"#000\" stroke-width=\"3\""
    } else {
        "stroke=\"#fff\" stroke-width=\"2\""
    };
    let tip = format!(
        "{}: {word}{}",
        c.name,
        c.why
            .as_deref()
            .map_or(String::new(), |w| format!(" ({w})"))
    );
    doc.rect(
        (x + 2.0, y + 2.0),
        (CELL.0 - 4.0, CELL.1 - 4.0),
        &format!("fill=\"{fill}\" {stroke}"),
        &tip,
    );
    let ink = if chosen {
        "fill=\"#fff\" font-weight=\"bold\""
    } else {
        "fill=\"#222\""
    };
    let cx = x + CELL.0 / 2.0;
    doc.text(cx, y + 20.0, &format!("text-anchor=\"middle\" {ink}"), word);
    let figure = match (c.held_rate, c.bound) {
        (Some(h), _) => format!("{} / {} rps", plot_number(h), plot_number(target)),
        (None, Some(b)) => format!("≤ {} rps", plot_number(b)),
        _ => match (c.failed_rate, c.predicted) {
            (Some(f), _) => format!("failed at {}", plot_number(f)),
            (None, Some(p)) => format!("model: {} rps", plot_number(p)),
            _ => String::new(),
        },
    };
    doc.text(
        cx,
        y + 36.0,
        &format!("text-anchor=\"middle\" font-size=\"11\" {ink}"),
        &figure,
    );
}

fn legend(doc: &mut Doc, at: (f64, f64)) {
    let swatch = |fill: &str, extra: &str| {
        format!(
            "<rect x=\"{{x}}\" y=\"{{y}}\" width=\"14\" height=\"10\" transform=\"translate(-7 -5)\" fill=\"{fill}\" {extra}/>"
        )
    };
    let entries = vec![
        (
            swatch(GOOD, "stroke=\"#000\" stroke-width=\"2\""),
            "chosen: the cheapest that holds".to_owned(),
        ),
        (
            swatch("#b8e6d3", ""),
            "measured, held the target".to_owned(),
        ),
        (
            swatch("#f7d2a8", ""),
            "measured, short of the target".to_owned(),
        ),
        (swatch("#f2b8a0", ""), "failed".to_owned()),
        (
            swatch("url(#hatch)", "stroke=\"#999\""),
            "pruned by the model (≤ its bound)".to_owned(),
        ),
        (
            swatch("#eeeeee", ""),
            "not needed: a cheaper one holds".to_owned(),
        ),
        (String::new(), "figures: held / target (rps)".to_owned()),
    ];
    plot::legend(doc, at, &entries);
}

/// Predicted against measured held rate, y = x dashed, the target as a line.
fn scatter(doc: &mut Doc, (x0, y0): (f64, f64), s: &SizingStatus) {
    let points: Vec<(&str, f64, f64)> = s
        .configurations
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.predicted?, c.held_rate?)))
        .collect();
    doc.text(
        x0,
        y0 - 4.0,
        "font-weight=\"bold\"",
        "model's prediction vs measured held rate",
    );
    if points.is_empty() {
        doc.text(
            x0,
            y0 + 30.0,
            "fill=\"#777\"",
            "no measured configuration has a prediction",
        );
        return;
    }
    let max = points
        .iter()
        .map(|p| p.1.max(p.2))
        .fold(s.target_rate, f64::max);
    let (x, t) = Scale::linear_from_zero(max, x0 + 50.0, x0 + 330.0);
    let y = Scale {
        px_lo: y0 + 180.0,
        px_hi: y0 + 10.0,
        ..x
    };
    plot::y_ticks(doc, &y, &t, (x.px_lo, x.px_hi), "measured (rps)");
    plot::x_ticks(doc, &x, &t, (y.px_hi, y.px_lo), "predicted (rps)");
    doc.line(
        (x.px(0.0), y.px(0.0)),
        (x.px(x.hi), y.px(x.hi)),
        "stroke=\"#999\" stroke-dasharray=\"4 4\"",
    );
    let ty = y.px(s.target_rate);
    doc.line(
        (x.px_lo, ty),
        (x.px_hi, ty),
        &format!("stroke=\"{BAD}\" stroke-dasharray=\"6 3\""),
    );
    doc.text(
        x.px_hi,
        ty - 4.0,
        &format!("text-anchor=\"end\" font-size=\"10\" fill=\"{BAD}\""),
        "target",
    );
    for (name, p, m) in points {
        let tip = format!(
            "{name}: predicted {}, held {} rps",
            plot_number(p),
            plot_number(m)
        );
        doc.circle(
            (x.px(p), y.px(m)),
            4.5,
            &format!("fill=\"{}\"", plot::PALETTE[0]),
            &tip,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_name_gives_its_place() {
        let p = place("pool-x2-cpu500m").unwrap();
        assert_eq!(
            (p.panel.as_str(), p.replicas, p.cpu.as_str()),
            ("pool", 2, "500m")
        );
        let p = place("single-x1-cpu1-gomaxprocs2").unwrap();
        assert_eq!(p.panel, "single · gomaxprocs2");
        assert_eq!(place("handwritten"), None);
    }
}
