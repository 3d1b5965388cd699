//! A capacity run's answer per configuration: the rate each held, with the search's resolution
//! as a whisker from held to failed (the capacity lies in between) and, over rounds, the
//! interval of the median; beside it the rate held per reserved CPU. It replaces the p99 bars
//! for capacity runs: each cell's p99 there is measured at its own held rate, so comparing
//! them across cells says nothing.

use super::plot::clip;
use super::plot::{self, BAD, Doc, GOOD, Scale};
use crate::engine::capacity::probe::rate_text;
use crate::resource::BenchmarkRunStatus;
use crate::resource::capacity::CapacityStatus;

const W: f64 = 760.0;
const LABEL_W: f64 = 150.0;
const A: (f64, f64) = (160.0, 440.0);
const B: (f64, f64) = (500.0, 740.0);
const TOP: f64 = 60.0;
const ROW: f64 = 30.0;

/// One row: a cell's name, its search and its reserved CPU.
type Row<'a> = (&'a str, &'a CapacityStatus, Option<f64>);

/// The chart file for a capacity run, or `None` when no cell searched. A cell that failed
/// before its search (never ready, say) gets a row that says so: a missing row would read as
/// a configuration nobody asked about.
pub fn chart(status: &BenchmarkRunStatus) -> Option<(String, String)> {
    if !status.cells.iter().any(|c| c.capacity.is_some()) {
        return None;
    }
    let failed: Vec<CapacityStatus> = status
        .cells
        .iter()
        .map(|c| CapacityStatus {
            message: format!(
                "failed: {}",
                c.reason
                    .as_deref()
                    .or(c.message.as_deref())
                    .unwrap_or("no search")
            ),
            ..CapacityStatus::default()
        })
        .collect();
    let rows: Vec<Row> = status
        .cells
        .iter()
        .zip(&failed)
        .map(|(c, f)| {
            (
                c.name.as_str(),
                c.capacity.as_ref().unwrap_or(f),
                c.reserved_cpu,
            )
        })
        .collect();
    Some(("capacity.svg".into(), draw(&rows)))
}

fn found(cap: &CapacityStatus) -> Option<f64> {
    cap.held_rate.filter(|_| cap.found)
}

fn draw(rows: &[Row]) -> String {
    let h = TOP + rows.len() as f64 * ROW + 60.0;
    let mut doc = Doc::new(W, h, "Capacity per configuration (higher is better)");
    let max = rows
        .iter()
        .flat_map(|(_, c, _)| [c.held_rate, c.failed_rate, c.held_rate_high])
        .flatten()
        .fold(0.0, f64::max);
    let max_per_cpu = rows
        .iter()
        .filter_map(|(_, c, cpu)| Some(found(c)? / cpu.filter(|v| *v > 0.0)?))
        .fold(0.0, f64::max);
    let bottom = TOP + rows.len() as f64 * ROW;
    let (xa, ta) = Scale::linear_from_zero(max, A.0, A.1);
    let (xb, tb) = Scale::linear_from_zero(max_per_cpu, B.0, B.1);
    plot::x_ticks(
        &mut doc,
        &xa,
        &ta,
        (TOP - 6.0, bottom),
        "rate held (rps); whisker: to the rate failed",
    );
    plot::x_ticks(
        &mut doc,
        &xb,
        &tb,
        (TOP - 6.0, bottom),
        "rate held per reserved CPU (rps/core)",
    );
    doc.text(A.0, TOP - 14.0, "font-weight=\"bold\"", "held rate");
    doc.text(B.0, TOP - 14.0, "font-weight=\"bold\"", "per reserved CPU");
    for (i, row) in rows.iter().enumerate() {
        draw_row(&mut doc, TOP + i as f64 * ROW + ROW / 2.0, row, (&xa, &xb));
    }
    if rows.iter().any(|(_, c, _)| c.held_rate_low.is_some()) {
        doc.text(20.0, h - 8.0, "font-size=\"11\" fill=\"#444\"", "bar: median held rate over the rounds · black line above it: its 95% interval · red whisker: to the median rate failed");
    }
    doc.finish()
}

fn draw_row(doc: &mut Doc, cy: f64, (name, cap, cpu): &Row, (xa, xb): (&Scale, &Scale)) {
    doc.text(LABEL_W, cy + 4.0, "text-anchor=\"end\"", &clip(name, 22));
    let Some(held) = found(cap) else {
        let why = if cap.message.starts_with("no capacity") {
            cap.message.clone()
        } else {
            format!("no capacity: {}", cap.message)
        };
        doc.rect(
            (A.0, cy - 9.0),
            (B.1 - A.0, 18.0),
            "fill=\"url(#hatch)\" stroke=\"#bbb\"",
            &why,
        );
        doc.text(
            A.0 + 6.0,
            cy + 4.0,
            &format!("fill=\"{BAD}\""),
            &clip(&why, 90),
        );
        return;
    };
    let tip = format!(
        "{name}: held {} rps{}",
        rate_text(held),
        cap.failed_rate
            .map_or(String::new(), |f| format!(", failed {} rps", rate_text(f)))
    );
    doc.rect(
        (xa.px(0.0), cy - 8.0),
        (xa.px(held) - xa.px(0.0), 16.0),
        &format!("fill=\"{GOOD}\""),
        &tip,
    );
    if let Some(f) = cap.failed_rate {
        doc.line(
            (xa.px(held), cy),
            (xa.px(f), cy),
            &format!("stroke=\"{BAD}\" stroke-width=\"2\""),
        );
        doc.line(
            (xa.px(f), cy - 6.0),
            (xa.px(f), cy + 6.0),
            &format!("stroke=\"{BAD}\" stroke-width=\"2\""),
        );
    }
    if let (Some(lo), Some(hi)) = (cap.held_rate_low, cap.held_rate_high) {
        // The interval over rounds, above the bar so it does not hide the whisker.
        doc.line(
            (xa.px(lo), cy - 11.0),
            (xa.px(hi), cy - 11.0),
            "stroke=\"#000\" stroke-width=\"1.5\"",
        );
    }
    match cpu.filter(|c| *c > 0.0) {
        Some(cores) => {
            let per = held / cores;
            let tip = format!(
                "{name}: {} rps per core ({cores} cores reserved)",
                rate_text((per * 10.0).round() / 10.0)
            );
            doc.rect(
                (xb.px(0.0), cy - 8.0),
                (xb.px(per) - xb.px(0.0), 16.0),
                &format!("fill=\"{}\"", plot::PALETTE[0]),
                &tip,
            );
        }
        None => doc.text(B.0 + 4.0, cy + 4.0, "fill=\"#777\"", "reserved CPU unknown"),
    }
}
