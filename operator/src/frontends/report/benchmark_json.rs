//! `--benchmark-json PATH` of both `run` commands: the headline figures of a finished run as
//! the JSON that github-action-benchmark reads with its tools `customSmallerIsBetter` and
//! `customBiggerIsBetter`, so each figure gets a chart across commits.
//!
//! Its documented format is an array of entries with `name`, `unit` and `value` (a number),
//! and optional `range` (the spread, text) and `extra` (text shown with the point). The tool
//! setting says whether smaller or bigger is better for a whole file, so the figures go in two
//! files: `PATH.smaller.json` (latency p50 and p99 in ms, the error rate in percent) and
//! `PATH.bigger.json` (successful requests per second), a `.json` at the end of PATH left out.
//!
//! One entry per measured cell, phase and endpoint and figure, named "phase/endpoint cell
//! figure" (the name is what the tracker keys its history on, so it must stay stable across
//! runs of the same spec). A percentile its samples cannot support is left out, as it is from
//! the ranking. With repetitions the value is the median and `range` the table's `±d`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::resource::rounding::round3;
use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellResult, CellStatus};

/// One entry of github-action-benchmark's custom format.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// What the figure is; the key of its history.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The figure.
    pub value: f64,
    /// How far the repetitions spread around it, "± d".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// Samples and repetitions behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
}

/// The entries of a finished run: smaller-is-better ones, then bigger-is-better ones.
pub fn entries(status: &BenchmarkRunStatus) -> (Vec<Entry>, Vec<Entry>) {
    let mut smaller = Vec::new();
    let mut bigger = Vec::new();
    for cell in status
        .cells
        .iter()
        .filter(|c| c.phase == CellPhase::Succeeded)
    {
        for r in &cell.results {
            let at = |figure: &str| format!("{}/{} {} {figure}", r.phase, r.endpoint, cell.name);
            let extra = Some(extra(cell, r));
            if let Some(latency) = &r.latency_ms {
                for (p, key) in [(Percentile::P50, "p50"), (Percentile::P99, "p99")] {
                    if r.supports(p) {
                        smaller.push(Entry {
                            name: at(key),
                            unit: "ms".into(),
                            value: round(latency.get(p)),
                            range: range(r, key),
                            extra: extra.clone(),
                        });
                    }
                }
            }
            if r.requests > 0 {
                smaller.push(Entry {
                    name: at("errors"),
                    unit: "%".into(),
                    value: round(100.0 * r.errors as f64 / r.requests as f64),
                    range: None,
                    extra: extra.clone(),
                });
            }
            bigger.push(Entry {
                name: at("rps"),
                unit: "req/s".into(),
                value: round(r.rps),
                range: range(r, "rps"),
                extra,
            });
        }
        // A capacity search's answer: the rate held at the SLO, only when one was found (held
        // at the upper bound or failed at the start is no capacity to chart).
        if let Some(cap) = cell.capacity.as_ref().filter(|c| c.found)
            && let Some(held) = cap.held_rate
        {
            bigger.push(Entry {
                name: format!("capacity {}", cell.name),
                unit: "req/s".into(),
                value: round(held),
                range: None,
                extra: Some(format!(
                    "held at the SLO; failed at {} req/s; {} probes",
                    cap.failed_rate.map_or("-".into(), |f| round(f).to_string()),
                    cap.probes.len()
                )),
            });
        }
    }
    (smaller, bigger)
}

/// The two files [`write_benchmark_json`] writes for `path`: smaller-is-better, then
/// bigger-is-better.
pub fn files(path: &Path) -> (PathBuf, PathBuf) {
    let text = path.as_os_str().to_string_lossy();
    let base = text.strip_suffix(".json").unwrap_or(&text);
    (
        PathBuf::from(format!("{base}.smaller.json")),
        PathBuf::from(format!("{base}.bigger.json")),
    )
}

/// Writes the two files of `status` for `path` (see [`files`]), atomically; returns them.
pub fn write_benchmark_json(
    path: &Path,
    status: &BenchmarkRunStatus,
) -> std::io::Result<(PathBuf, PathBuf)> {
    let (smaller, bigger) = entries(status);
    let (smaller_file, bigger_file) = files(path);
    for (file, entries) in [(&smaller_file, &smaller), (&bigger_file, &bigger)] {
        let mut text = serde_json::to_string_pretty(entries).map_err(std::io::Error::other)?;
        text.push('\n');
        super::write_atomically(file, text.as_bytes())?;
    }
    Ok((smaller_file, bigger_file))
}

/// "± d" of a repeated figure: every repetition within d of the median.
fn range(r: &CellResult, key: &str) -> Option<String> {
    let f = r.spread.as_ref()?.figures.get(key)?;
    let d = (f.median - f.min).max(f.max - f.median);
    Some(format!("± {}", round(d)))
}

fn extra(cell: &CellStatus, r: &CellResult) -> String {
    let repetitions = r.spread.as_ref().map_or(1, |s| s.repetitions);
    let mut text = format!("samples: {}\nrepetitions: {repetitions}", r.samples);
    if repetitions > 1 {
        text.push_str("\nvalues are medians over the repetitions");
    }
    if let Some(cpu) = cell.reserved_cpu {
        text.push_str(&format!("\nreserved CPU: {cpu}"));
    }
    text
}

/// Three decimals: more is noise in a chart, and the same status always gives the same file.
fn round(v: f64) -> f64 {
    round3(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished() -> BenchmarkRunStatus {
        let text = include_str!("../../../tests/fixtures/finished/ci-gate.yaml");
        crate::frontends::report::parse_status(text).unwrap()
    }

    #[test]
    fn smaller_and_bigger_figures_of_measured_cells_with_stable_names() {
        let (smaller, bigger) = entries(&finished());
        let names: Vec<&str> = smaller.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"mixed/fast pool-x1 p99"), "{names:?}");
        assert!(names.contains(&"mixed/fast single-x1 errors"), "{names:?}");
        // 40 samples: no p99 for mixed/slow, its p50 stays.
        assert!(!names.contains(&"mixed/slow pool-x1 p99"), "{names:?}");
        assert!(names.contains(&"mixed/slow pool-x1 p50"), "{names:?}");
        // The failed cell has no figure.
        assert!(!names.iter().any(|n| n.contains("pool-x2")), "{names:?}");
        let p99 = smaller
            .iter()
            .find(|e| e.name == "mixed/fast pool-x1 p99")
            .unwrap();
        assert_eq!((p99.value, p99.unit.as_str()), (31.6, "ms"));
        let errors = smaller
            .iter()
            .find(|e| e.name == "mixed/fast single-x1 errors")
            .unwrap();
        assert_eq!((errors.value, errors.unit.as_str()), (1.818, "%"));
        let rps: Vec<(&str, f64)> = bigger.iter().map(|e| (e.name.as_str(), e.value)).collect();
        assert_eq!(rps.len(), 6);
        assert!(rps.contains(&("mixed/fast pool-x1 rps", 52.0)), "{rps:?}");
        assert!(bigger.iter().all(|e| e.unit == "req/s"));
    }

    #[test]
    fn a_repeated_figure_carries_its_spread_as_range() {
        let text = include_str!("../../../tests/fixtures/compare/base.yaml");
        let status = crate::frontends::report::parse_status(text).unwrap();
        let (smaller, _) = entries(&status);
        let p99 = smaller
            .iter()
            .find(|e| e.name == "mixed/fast pool-x1 p99")
            .unwrap();
        // Repetitions 20, 23, 19, 22, 21: median 21, within 2 of it.
        assert_eq!(p99.range.as_deref(), Some("± 2"));
        assert!(
            p99.extra.as_deref().unwrap().contains("repetitions: 5"),
            "{p99:?}"
        );
    }

    #[test]
    fn the_two_files_are_named_after_the_path() {
        assert_eq!(
            files(Path::new("out/bench.json")),
            (
                PathBuf::from("out/bench.smaller.json"),
                PathBuf::from("out/bench.bigger.json")
            )
        );
        assert_eq!(
            files(Path::new("bench")).1,
            PathBuf::from("bench.bigger.json")
        );
    }
    #[test]
    fn a_found_capacity_is_charted_bigger_is_better_and_no_capacity_is_not() {
        use crate::resource::capacity::CapacityStatus;
        let cell = |name: &str, found: bool| CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            capacity: Some(CapacityStatus {
                found,
                held_rate: Some(47.5),
                failed_rate: Some(49.84),
                ..CapacityStatus::default()
            }),
            ..CellStatus::default()
        };
        let status = BenchmarkRunStatus {
            cells: vec![cell("a", true), cell("b", false)],
            ..BenchmarkRunStatus::default()
        };
        let (_, bigger) = entries(&status);
        let capacity: Vec<&Entry> = bigger
            .iter()
            .filter(|e| e.name.starts_with("capacity"))
            .collect();
        assert_eq!(capacity.len(), 1);
        assert_eq!(capacity[0].name, "capacity a");
        assert_eq!(capacity[0].value, 47.5);
        assert_eq!(capacity[0].unit, "req/s");
    }
}
