//! `benchmatrix run --dry-run FILE`: what a run of a valid file would do, without doing it.
//!
//! By the time this is printed the file has passed every check a run makes before it starts
//! (the spec, Pod Security at `--pod-security`, the Secrets of `--secrets`), so "valid" here
//! means the same as for a run. What follows is what a user decides on before spending the
//! time: the cells, how many measurements, how long the load takes, and how large the run's
//! status can grow on a cluster.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::resource::size::{Shape, largest_status};
use crate::resource::sizing::SizingSpec;
use crate::resource::{Measure, ValidatedRun};
use benchmatrix_pod_security::Level;

/// The text `--dry-run` prints for `run`, read from `file`.
pub fn describe(run: &ValidatedRun, file: &Path, level: Level) -> String {
    let mut out = String::new();
    let cells = run.cells();
    let rounds = run.repeat().min_rounds();
    let max_rounds = run.repeat().max_rounds();
    let load = run.planned_load();
    let _ = writeln!(
        out,
        "{}: a valid BenchmarkRun; its pods meet Pod Security {level:?}",
        file.display(),
        level = level.name()
    );
    let _ = writeln!(out, "cells: {}", cells.len());
    for cell in cells {
        let _ = writeln!(
            out,
            "  {}: {} replica(s) x cpu {} memory {}",
            cell.name, cell.replicas, cell.cpu, cell.memory
        );
    }
    match run.measure() {
        Measure::FixedLoad(_) => fixed_rate(&mut out, run, rounds, max_rounds, load),
        Measure::Capacity(c) => searches(&mut out, run, c.search.max_probes, None, load),
        Measure::Sizing(s) => {
            searches(&mut out, run, s.search.max_probes, Some(&s.space), load);
        }
    }
    let _ = writeln!(
        out,
        "status: at most {} bytes on a cluster",
        largest_status(&Shape::of(run.spec()))
    );
    out
}

/// With `spec.capacity` every measurement is one probe of a cell's search, so what bounds the
/// time is the probes: `maxProbes` per cell searched and, with `spec.sizing` (its `space`),
/// only `budget` cells searched, plus the probes at the target that confirm the answer and rule
/// out cheaper configurations.
fn searches(
    out: &mut String,
    run: &ValidatedRun,
    max_probes: u32,
    space: Option<&SizingSpec>,
    probe: Duration,
) {
    let cells = run.cells().len() as u32;
    let (searched, checks) = match space {
        Some(sizing) => (
            sizing.budget.min(cells),
            sizing.confirmations + sizing.rule_out,
        ),
        // With repeat, each round of a cell is a whole search (sizing takes no repeat).
        None => (cells * run.repeat().max_rounds(), 0),
    };
    let most = searched * max_probes + checks;
    let what = if space.is_some() {
        format!(
            "sizing: at most {searched} of the {cells} configurations searched, up to \
             {max_probes} probes each, plus about {checks} probes at the target (confirmations \
             and rule-outs; a rule-out that holds brings its confirmations)"
        )
    } else {
        let rounds = match run.repeat().max_rounds() {
            1 => String::new(),
            n => format!(" ({cells} cells x {n} rounds)"),
        };
        format!("capacity: {searched} searches{rounds} of up to {max_probes} probes each")
    };
    let _ = writeln!(out, "{what}");
    let _ = writeln!(
        out,
        "load: {} per probe, about {} in all at most (plus each probe's start-up until ready; \
         searches usually stop well before their probe limit)",
        secs(probe),
        secs(probe * most)
    );
}

/// A matrix measured at the workload's own load: each cell `rounds` times, or up to
/// `max_rounds` with an adaptive repeat.
fn fixed_rate(out: &mut String, run: &ValidatedRun, rounds: u32, max_rounds: u32, load: Duration) {
    let cells = run.cells();
    let measurements = |r: u32| cells.len() as u64 * u64::from(r);
    if rounds == max_rounds {
        let _ = writeln!(
            out,
            "measurements: {} ({} per cell)",
            measurements(rounds),
            rounds
        );
    } else {
        let _ = writeln!(
            out,
            "measurements: {} to {} ({} to {} per cell, until precise)",
            measurements(rounds),
            measurements(max_rounds),
            rounds,
            max_rounds
        );
    }
    let total = |r: u32| load * (measurements(r) as u32);
    let _ = writeln!(
        out,
        "load: {} per measurement, {} in all{} (plus each cell's start-up until ready)",
        secs(load),
        secs(total(rounds)),
        if rounds == max_rounds {
            String::new()
        } else {
            format!(" to {}", secs(total(max_rounds)))
        }
    );
}

/// `95s` / `1h02m05s`: whole seconds, rounded up.
fn secs(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_lists_the_cells_measurements_load_and_status_size() {
        let run = ValidatedRun::parse(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: r}\n\
             spec:\n  target: {port: 8080}\n  repeat: 3\n  configurations:\n  \
             - {name: one, cpu: 500m, memory: 64Mi}\n  \
             - {name: two, replicas: 2, cpu: '1', memory: 128Mi}\n  workload:\n    \
             endpoints: [{name: e, path: /}]\n    warmup: 5s\n    \
             phases: [{name: p, duration: 55s, load: [{endpoint: e, connections: 1}]}]\n",
        )
        .unwrap();
        let text = describe(&run, Path::new("r.yaml"), Level::Restricted);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "r.yaml: a valid BenchmarkRun; its pods meet Pod Security \"restricted\""
        );
        assert_eq!(lines[1], "cells: 2");
        assert_eq!(lines[2], "  one: 1 replica(s) x cpu 500m memory 64Mi");
        assert_eq!(lines[3], "  two: 2 replica(s) x cpu 1 memory 128Mi");
        assert_eq!(lines[4], "measurements: 6 (3 per cell)");
        assert_eq!(
            lines[5],
            "load: 1m00s per measurement, 6m00s in all (plus each cell's start-up until ready)"
        );
        assert!(lines[6].starts_with("status: at most "), "{text}");
    }

    /// A capacity search's measurements are probes, and a sizing run searches at most its
    /// budget: the dry run bounds the time by those, not by one measurement per cell.
    #[test]
    fn a_sizing_run_is_bounded_by_its_budget_and_probe_limit() {
        let run =
            ValidatedRun::parse(include_str!("../../../../manifests/samples/sizing.yaml")).unwrap();
        let text = describe(&run, Path::new("sizing.yaml"), Level::Restricted);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "cells: 12");
        assert_eq!(
            lines[14],
            "sizing: at most 8 of the 12 configurations searched, up to 20 probes each, plus \
             about 4 probes at the target (confirmations and rule-outs; a rule-out that holds \
             brings its confirmations)"
        );
        // A probe is the 2 s warm-up and the 5 s probe; 8 x 20 + 4 probes.
        assert_eq!(
            lines[15],
            "load: 7s per probe, about 19m08s in all at most (plus each probe's start-up until \
             ready; searches usually stop well before their probe limit)"
        );
        assert!(lines[16].starts_with("status: at most "), "{text}");
    }

    /// Each round of a repeated search is a search of its own, up to maxProbes.
    #[test]
    fn a_repeated_search_is_bounded_by_its_rounds() {
        let yaml = include_str!("../../../../manifests/samples/capacity.yaml").replacen(
            "spec:\n",
            "spec:\n  repeat: 3\n",
            1,
        );
        let run = ValidatedRun::parse(&yaml).unwrap();
        let text = describe(&run, Path::new("capacity.yaml"), Level::Restricted);
        assert!(
            text.contains("capacity: 6 searches (2 cells x 3 rounds) of up to 20 probes each"),
            "{text}"
        );
        // A probe is the 2 s warm-up and the 10 s probe; 6 x 20 probes.
        assert!(
            text.contains("load: 12s per probe, about 24m00s in all at most"),
            "{text}"
        );
    }

    #[test]
    fn durations_read_in_whole_seconds() {
        assert_eq!(secs(Duration::from_millis(1500)), "2s");
        assert_eq!(secs(Duration::from_secs(3725)), "1h02m05s");
    }
}
