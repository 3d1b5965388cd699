//! The comparison table `benchmatrix run` and `benchmatrix report` print: a heading per phase
//! and endpoint with a row per cell under it, fitting [`TABLE_WIDTH`] columns. A repeated figure shows its median and
//! spread in one compact form, `82.2 ±0.6` (see [`super::with_compact_spread`]); report.md
//! keeps the full min–max range and CI.

use super::{
    ABSENT, SPREAD_NOTE, THIN, UNSTABLE_NOTE, any_spread, any_thin, any_unstable, max_text,
    percentile_text, phase_endpoints, ranked, ranking, ratio_text, result_of, thin_note,
    with_compact_spread,
};
use crate::engine::results::noise::{RPS, figure_key};
use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellRatio, Summary};

/// The widest line the table and its notes print: a terminal's default is 80, a wide one
/// 120; the rows of a many-cell, repeated run fit 120, and the notes are wrapped to it.
pub const TABLE_WIDTH: usize = 120;

/// Columns of a row: the configuration, then its figures.
const COLUMNS: usize = 8;

/// Before each row's configuration, under its phase and endpoint's heading; also before
/// each continuation line of a wrapped note.
const INDENT: &str = "  ";

/// The comparison table: a heading per phase and endpoint, under it one row per cell with
/// p99 relative to the best ranked cell of the group. Streams that were not ranked say why below the table.
///
/// A run that searched (`spec.capacity`) shows each cell's confirmation probe, at the rate that
/// cell held, and its capacity in the last column: the rates differ, so the cells' latencies are
/// not compared ([`crate::engine::capacity::rank`] ranks them by capacity).
pub fn comparison_table(status: &BenchmarkRunStatus) -> String {
    let summary = ranking(status);
    let searched = status.cells.iter().any(|c| c.capacity.is_some());
    let header: TableRow = [
        "configuration",
        "samples",
        "rps",
        "p50 ms",
        "p99 ms",
        "max ms",
        "errors",
        if searched { "capacity" } else { "p99 vs best" },
    ]
    .map(String::from);
    let (groups, not_ranked) = groups(status, &summary);
    let mut out = aligned(&header, &groups);
    for n in notes(status, &summary, not_ranked) {
        out.push_str(&wrap(&n, TABLE_WIDTH));
    }
    out
}

/// The percentiles the table shows.
const SHOWN: [Percentile; 2] = [Percentile::P50, Percentile::P99];

/// One line of the table, a text per column.
type TableRow = [String; COLUMNS];

/// A heading (phase and endpoint) and the rows of the cells under it.
type Group = (String, Vec<TableRow>);

/// A row per cell under each phase and endpoint's heading, and the streams that were not ranked
/// with why (said in a note below the table, the row saying only "not ranked").
fn groups(status: &BenchmarkRunStatus, summary: &Summary) -> (Vec<Group>, Vec<(String, String)>) {
    let mut groups = Vec::new();
    let mut not_ranked = Vec::new();
    for (phase, endpoint) in phase_endpoints(status) {
        let mut rows = Vec::new();
        for c in &status.cells {
            let Some(r) = result_of(status, &c.name, &phase, &endpoint) else {
                continue;
            };
            let place = ranked(summary, &c.name, &phase, &endpoint);
            let vs_best = match c.capacity.as_ref() {
                Some(cap) => super::capacity::capacity_text(cap),
                None => vs_best(place, &mut not_ranked, || {
                    format!("{} {phase}/{endpoint}", c.name)
                }),
            };
            let pct = |p| with_compact_spread(percentile_text(r, p, THIN), r, figure_key(p));
            rows.push([
                format!("{INDENT}{}", c.name),
                r.samples.to_string(),
                with_compact_spread(format!("{:.1}", r.rps), r, RPS),
                pct(Percentile::P50),
                pct(Percentile::P99),
                max_text(r),
                r.errors.to_string(),
                vs_best,
            ]);
        }
        groups.push((format!("{phase} / {endpoint}"), rows));
    }
    (groups, not_ranked)
}

/// The "p99 vs best" column of a stream at `place` in the ranking; a stream not ranked is
/// added to `not_ranked` under the name `stream` gives, with why.
fn vs_best(
    place: Option<&CellRatio>,
    not_ranked: &mut Vec<(String, String)>,
    stream: impl FnOnce() -> String,
) -> String {
    if let Some(x) = place.and_then(ratio_text) {
        return x;
    }
    match place {
        Some(CellRatio {
            excluded: Some(why),
            ..
        }) => {
            not_ranked.push((stream(), why.clone()));
            "not ranked".into()
        }
        _ => ABSENT.into(),
    }
}

/// The header and the groups with every column as wide as its widest text: the configuration
/// left-aligned, the figures right-aligned.
fn aligned(header: &TableRow, groups: &[Group]) -> String {
    let rows = || std::iter::once(header).chain(groups.iter().flat_map(|g| &g.1));
    let widths: Vec<usize> = (0..COLUMNS)
        .map(|i| rows().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let line = |r: &TableRow| {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, v)| {
                // `format!` pads by chars, so "—" and "±" line up like any digit.
                if i == 0 {
                    format!("{v:<w$}", w = widths[i])
                } else {
                    format!("{v:>w$}", w = widths[i])
                }
            })
            .collect();
        format!("{}\n", cells.join("  ").trim_end())
    };
    let mut out = line(header);
    for (heading, rows) in groups {
        out.push_str(heading);
        out.push('\n');
        for r in rows {
            out.push_str(&line(r));
        }
    }
    out
}

/// The notes under the table: what the marks mean (thin percentiles, spread, instability),
/// streams short of samples, streams not ranked and why, and cells not measured.
fn notes(
    status: &BenchmarkRunStatus,
    summary: &Summary,
    not_ranked: Vec<(String, String)>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if status.cells.iter().any(|c| c.capacity.is_some()) {
        notes.push(
            "capacity: the highest total rate each cell held at spec.capacity.slo; each row is \
             that cell's confirmation probe, at the rate it held, so latencies are not compared \
             across cells"
                .to_owned(),
        );
    }
    if any_thin(status, &SHOWN) {
        notes.push(thin_note(&SHOWN));
    }
    if any_spread(status) {
        notes.push(SPREAD_NOTE.to_string());
    }
    let keys = [
        RPS,
        figure_key(Percentile::P50),
        figure_key(Percentile::P99),
    ];
    if any_unstable(status, &keys) {
        notes.push(UNSTABLE_NOTE.to_string());
    }
    // Streams short of samples say how long a phase would collect them; the others why not.
    for line in &summary.needs_longer_phase {
        notes.push(format!("needs a longer phase: {line}"));
    }
    for (stream, why) in not_ranked {
        let prefix = format!("{stream}: ");
        if !summary
            .needs_longer_phase
            .iter()
            .any(|l| l.starts_with(&prefix))
        {
            notes.push(format!("not ranked: {prefix}{why}"));
        }
    }
    for c in status
        .cells
        .iter()
        .filter(|c| c.phase != CellPhase::Succeeded)
    {
        notes.push(format!(
            "not measured: {}: {}{}",
            c.name,
            c.phase,
            c.message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        ));
    }
    notes
}

/// `text` as lines of at most `width` characters, broken at spaces (a word longer than a
/// line is cut), each continuation indented by two spaces; every line ends in a newline.
pub fn wrap(text: &str, width: usize) -> String {
    let most = width - INDENT.len();
    let mut out = String::new();
    let mut line = String::new();
    let mut used = 0;
    // Nothing on the line yet but its indent.
    let mut fresh = true;
    for word in text.split(' ') {
        let chars: Vec<char> = word.chars().collect();
        let pieces: Vec<&[char]> = if chars.is_empty() {
            vec![&[]]
        } else {
            chars.chunks(most).collect()
        };
        for piece in pieces {
            if !fresh && used + 1 + piece.len() > width {
                out.push_str(&line);
                out.push('\n');
                line = INDENT.to_string();
                used = INDENT.len();
                fresh = true;
            }
            if !fresh {
                line.push(' ');
                used += 1;
            }
            line.extend(piece);
            used += piece.len();
            fresh = false;
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests;
