//! The most the engine writes into a status, so that the largest status a spec can lead to is
//! known before the run starts ([`crate::resource::size`]).
//!
//! Figures have a fixed shape; texts and histograms do not: a failure message carries a pod's
//! own words, and a widely spread latency distribution encodes to tens of KiB. So every text the
//! engine keeps is clipped to a length fixed here, and a stream's histogram is kept only while it
//! fits its share of [`HISTOGRAM_BUDGET`]. Lengths are counted as the API server writes the text
//! ([`json_len`]), which is what etcd stores.

use crate::resource::rounding::round3;
use crate::resource::{BenchmarkRunStatus, CellStatus};

/// Sentences: the run's and each cell's message, condition messages, how limits were enforced,
/// the recommendation and the headline. A failure message keeps the first 1 KiB of the pod's
/// words (Kubernetes cuts an Event's note at the same length).
pub const SENTENCE_MAX: usize = 1024;
/// The most pods a message about pods being waited for names (the rest are counted).
pub const WAITING_NAMES_AT_MOST: usize = 4;

/// A measured repetition's sentence about its timing, what the target reported about its
/// quota, and why a cell stopped repeating (with the figure it names).
pub const NOTE_MAX: usize = 256;

/// Why a stream was not ranked: the longest reason the summary gives, "unstable over
/// repetitions: p99 from 3600000.0 to 3600000.0 ms (3600000000.0x); repeat more or lengthen the
/// phase" after "solo: ", takes 121 bytes.
pub const EXCLUDED_MAX: usize = 128;

/// One word: reasons, enforcement mechanisms, the figure a threshold judges, a replica's label.
pub const WORD_MAX: usize = 64;

/// Most notes a sizing search keeps of where the service broke its assumptions.
pub const SIZING_NOTES_MAX: usize = 8;

/// The longest node name a measurement records (a DNS label's length; the rare longer name is
/// not recorded, see [`NODES_MAX`]).
pub const NODE_NAME_MAX: usize = 63;

/// The most nodes one measurement records. A measurement spread over more keeps the first
/// ones, and its variants are not pinned to them (see `engine::schedule::round_nodes`).
pub const NODES_MAX: usize = 8;

/// The most nodes a measurement of a cell of `replicas` replicas records: one per replica, at
/// most [`NODES_MAX`]. The ready pods a load starts against can be more than the replicas
/// (a replica being replaced, with the Deployment's surge) and span more nodes; the record keeps
/// the first ones, so that the status's size bound (`resource::size`) is exact.
pub fn nodes_recorded(replicas: u32) -> usize {
    (replicas as usize).min(NODES_MAX)
}

/// The most other pods a measurement's node lists (`neighbours[].pods`), largest first.
pub const NEIGHBOUR_PODS_MAX: usize = 3;

/// The longest `namespace/name` of a neighbouring pod kept whole; a longer one is clipped
/// (a pod name Kubernetes generates takes at most 63 characters).
pub const NEIGHBOUR_POD_MAX: usize = 96;

/// The most a neighbour figure (cores, seconds) may be: they are kept to 3 decimals below it,
/// so each takes at most 10 characters ("999999.999") rather than a number's 24.
pub const NEIGHBOUR_FIGURE_MAX: f64 = 999_999.999;

/// Lines naming cells, a phase and an endpoint (needsLongerPhase, each threshold's words and
/// verdict message) may be this much longer than the names: see [`line_max`].
pub const LINE_BEYOND_NAMES: usize = 192;

/// All the histograms a status holds at once, over every cell and stream (characters).
pub const HISTOGRAM_BUDGET: usize = 128 * 1024;

/// The most one stream's histogram may take: a latency spread over four decades with a
/// million samples encodes to about 15,000 characters.
pub const HISTOGRAM_SHARE_MAX: usize = 16 * 1024;

/// A share smaller than this holds no useful histogram, so none is kept (an empty one alone
/// takes about 50 characters; a narrow distribution's, a few hundred).
pub const HISTOGRAM_MIN: usize = 512;

/// Characters one stream's histogram may take in a run of `cells` cells of `streams` streams
/// each, or `None` when the share is too small to keep any.
pub fn histogram_share(cells: usize, streams: usize) -> Option<usize> {
    let share = (HISTOGRAM_BUDGET / cells.max(1) / streams.max(1)).min(HISTOGRAM_SHARE_MAX);
    (share >= HISTOGRAM_MIN).then_some(share)
}

/// The room lines naming names get: twice the longest cell name (a threshold relative to
/// another cell names two) plus the longest phase and endpoint names, as [`json_len`] counts.
pub fn names_room<'a>(
    cells: impl IntoIterator<Item = &'a str>,
    phases: impl IntoIterator<Item = &'a str>,
    endpoints: impl IntoIterator<Item = &'a str>,
) -> usize {
    let longest = |names: &mut dyn Iterator<Item = &'a str>| names.map(json_len).max().unwrap_or(0);
    2 * longest(&mut cells.into_iter())
        + longest(&mut phases.into_iter())
        + longest(&mut endpoints.into_iter())
}

/// The longest line naming names, for a run whose names take `room` ([`names_room`]).
pub fn line_max(room: usize) -> usize {
    room + LINE_BEYOND_NAMES
}

/// How many bytes `c` takes inside a JSON string as the API server writes it: Go's encoder
/// escapes `<`, `>`, `&`, U+2028, U+2029 and control characters other than \n, \r and \t as
/// `\u00XX` (6 bytes), where serde_json writes some of them shorter.
pub fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' => 2,
        '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The bytes of `text` inside a JSON string (quotes not counted) as the API server writes it.
pub fn json_len(text: &str) -> usize {
    text.chars().map(json_char_len).sum()
}

/// The bytes a whole serialized document takes as the API server writes it: `json` as
/// serde_json wrote it, with the characters Go escapes longer counted at their Go length.
/// (Numbers Go writes at most as long, apart from a negative number between -1e-5 and -1e-6,
/// which no figure is.)
pub fn api_len(json: &str) -> usize {
    json.len()
        + json
            .chars()
            .map(|c| match c {
                '<' | '>' | '&' => 5,
                '\u{2028}' | '\u{2029}' => 3,
                _ => 0,
            })
            .sum::<usize>()
        // serde_json writes \b and \f where Go writes \u0008 and \u000c.
        + 4 * (json.matches("\\b").count() + json.matches("\\f").count())
}

/// Ellipsis ending a clipped text.
const CUT: char = '…';

/// Cuts `text` so that [`json_len`] of it is at most `max`, ending it with "…" when it was cut.
pub fn clip(text: &mut String, max: usize) {
    if json_len(text) <= max {
        return;
    }
    let room = max.saturating_sub(CUT.len_utf8());
    let mut used = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        used += json_char_len(c);
        if used > room {
            break;
        }
        end = i + c.len_utf8();
    }
    text.truncate(end);
    if max >= CUT.len_utf8() {
        text.push(CUT);
    }
}

fn clip_opt(text: &mut Option<String>, max: usize) {
    if let Some(t) = text {
        clip(t, max);
    }
}

/// Clips every text of `status` to its limit above. The engine calls it after each event, so
/// whatever an executor reports, the status stays within what [`crate::resource::size`] counts.
pub fn clip_status(status: &mut BenchmarkRunStatus) {
    let room = {
        let results = || status.cells.iter().flat_map(|c| &c.results);
        names_room(
            status.cells.iter().map(|c| c.name.as_str()),
            results().map(|r| r.phase.as_str()),
            results().map(|r| r.endpoint.as_str()),
        )
    };
    let line = line_max(room);
    clip_opt(&mut status.message, SENTENCE_MAX);
    clip_opt(&mut status.headline, SENTENCE_MAX);
    if let Some(p) = &mut status.parallelism {
        clip(&mut p.message, SENTENCE_MAX);
    }
    for c in &mut status.conditions {
        clip(&mut c.reason, WORD_MAX);
        clip(&mut c.message, SENTENCE_MAX);
    }
    for cell in &mut status.cells {
        clip_cell(cell);
    }
    if let Some(s) = &mut status.sizing {
        clip(&mut s.message, SENTENCE_MAX);
        s.notes.truncate(SIZING_NOTES_MAX);
        for n in &mut s.notes {
            clip(n, NOTE_MAX);
        }
        for c in &mut s.configurations {
            clip_opt(&mut c.why, NOTE_MAX);
        }
        if let Some(c) = &mut s.chosen {
            clip(&mut c.confirmed, NOTE_MAX);
        }
    }
    if let Some(s) = &mut status.summary {
        for c in s.comparisons.iter_mut().flat_map(|c| &mut c.cells) {
            clip_opt(&mut c.excluded, EXCLUDED_MAX);
        }
        for i in &mut s.interference {
            clip_opt(&mut i.excluded, EXCLUDED_MAX);
        }
        for l in &mut s.needs_longer_phase {
            clip(l, line);
        }
        clip_opt(&mut s.recommendation, SENTENCE_MAX);
    }
    for t in &mut status.thresholds {
        clip(&mut t.threshold, line);
        clip(&mut t.figure, WORD_MAX);
        clip(&mut t.message, line);
    }
}

/// Clips every text of one cell of a status to its limit above: its reason and message, how
/// its limits were enforced, what its target reported, its neighbours, repetitions, precision
/// and capacity search. A cell is the unit a status repeats, so its clipping is one step
/// [`clip_status`] takes per cell.
fn clip_cell(cell: &mut CellStatus) {
    clip_opt(&mut cell.reason, WORD_MAX);
    clip_opt(&mut cell.message, SENTENCE_MAX);
    if let Some(e) = &mut cell.enforcement {
        clip(&mut e.target, WORD_MAX);
        clip_opt(&mut e.loadgen, WORD_MAX);
        clip_opt(&mut e.detail, SENTENCE_MAX);
    }
    if let Some(t) = &mut cell.target {
        clip_opt(&mut t.quota_source, NOTE_MAX);
        clip_opt(&mut t.mode, WORD_MAX);
        clip_opt(&mut t.source, WORD_MAX);
        clip_opt(&mut t.note, NOTE_MAX);
        for r in &mut t.per_replica {
            clip(&mut r.replica, WORD_MAX);
        }
    }
    clip_neighbours(&mut cell.neighbours);
    for r in &mut cell.repetitions {
        clip_neighbours(&mut r.neighbours);
        clip_opt(&mut r.reason, WORD_MAX);
        // Only a failed repetition (the last one of its cell) says more than its timing.
        let max = if r.phase == crate::resource::CellPhase::Failed {
            SENTENCE_MAX
        } else {
            NOTE_MAX
        };
        clip_opt(&mut r.message, max);
    }
    if let Some(p) = &mut cell.precision {
        clip_opt(&mut p.widest_figure, NOTE_MAX);
        clip(&mut p.message, NOTE_MAX);
    }
    if let Some(c) = &mut cell.capacity {
        clip(&mut c.message, SENTENCE_MAX);
        clip_opt(&mut c.limiting, NOTE_MAX);
        for p in &mut c.probes {
            clip_opt(&mut p.why, NOTE_MAX);
        }
        for r in &mut c.rounds {
            clip(&mut r.message, SENTENCE_MAX);
            clip_opt(&mut r.limiting, NOTE_MAX);
        }
        if let Some(k) = &mut c.check {
            clip(&mut k.message, SENTENCE_MAX);
        }
    }
}

/// A measurement's neighbours within their bounds: the reason a figure is missing, the pods
/// listed and their names (node names are bounded where the nodes are recorded).
fn clip_neighbours(all: &mut [crate::resource::status::Neighbours]) {
    let figure = |v: f64| round3(v.clamp(0.0, NEIGHBOUR_FIGURE_MAX));
    for n in all {
        clip_opt(&mut n.missing, NOTE_MAX);
        if n.missing.is_some() {
            // Why the figures are missing, or the figures: never both.
            n.foreign_cpu = None;
            n.window_seconds = None;
            n.busy = false;
            n.pods.clear();
            n.more_pods = None;
        }
        n.foreign_cpu = n.foreign_cpu.map(figure);
        n.window_seconds = n.window_seconds.map(figure);
        for p in &mut n.pods {
            p.cpu = figure(p.cpu);
        }
        if n.pods.len() > NEIGHBOUR_PODS_MAX {
            let beyond = (n.pods.len() - NEIGHBOUR_PODS_MAX) as u32;
            n.pods.truncate(NEIGHBOUR_PODS_MAX);
            n.more_pods = Some(n.more_pods.unwrap_or(0).saturating_add(beyond));
        }
        for p in &mut n.pods {
            clip(&mut p.pod, NEIGHBOUR_POD_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_what_the_api_server_writes_and_marks_the_cut() {
        let mut short = "fits".to_owned();
        clip(&mut short, 4);
        assert_eq!(short, "fits");
        let mut long = "a".repeat(20);
        clip(&mut long, 10);
        assert_eq!(long, format!("{}…", "a".repeat(7)));
        assert_eq!(json_len(&long), 10);
        // `<` is \u003c on the wire: two of them take 12 bytes, not 2.
        let mut html = "<<<<".to_owned();
        clip(&mut html, 15);
        assert_eq!(html, "<<…");
        assert!(json_len(&html) <= 15);
        // Never inside a character.
        let mut wide = "ééééé".to_owned();
        clip(&mut wide, 6);
        assert_eq!(wide, "é…");
    }

    #[test]
    fn the_api_length_of_a_document_counts_go_escapes() {
        let doc = serde_json::to_string(&serde_json::json!({"m": "a<b&c\u{8}"})).unwrap();
        assert_eq!(doc, r#"{"m":"a<b&c\b"}"#);
        assert_eq!(api_len(&doc), doc.len() + 5 + 5 + 4);
        assert_eq!(api_len(&doc), r#"{"m":""}"#.len() + json_len("a<b&c\u{8}"));
    }

    #[test]
    fn histograms_share_the_budget_or_are_not_kept() {
        assert_eq!(histogram_share(2, 3), Some(HISTOGRAM_SHARE_MAX));
        assert_eq!(histogram_share(4, 3), Some(HISTOGRAM_BUDGET / 12));
        assert_eq!(histogram_share(64, 4), Some(512));
        assert_eq!(histogram_share(64, 5), None);
    }
}
