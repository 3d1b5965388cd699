//! `report.md`: per phase and endpoint latency and throughput tables, the target's resource
//! use, the runner's own overhead, and how every figure was measured.

use std::fmt::Write;

use super::{ABSENT, RawCell, phase_endpoints, result_of};
use crate::engine::results::noise;
use crate::resource::measure::{Capacity, FixedLoad, Sizing};
use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellRatio, Measure, Summary, ValidatedRun};

/// [`super::THIN`] as markdown shows it (a bare `*` could start emphasis).
const THIN_MD: &str = "\\*";

/// Context the status does not carry: where the run came from and on what machine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notes {
    /// The BenchmarkRun file (or resource) the report is about.
    pub source: String,
    /// A line about the machine, e.g. "2 CPUs, Linux 6.1".
    pub machine: String,
    /// How the workload was shaped, e.g. "warm-up 15s, then fast-only 30s, mixed 75s".
    pub workload: String,
    /// Extra sentences (e.g. a fallback notice), each a paragraph.
    pub extra: Vec<String>,
    /// The run's `--max-regression`, which marks its variants as the exit code judged them.
    pub max_regression: Option<f64>,
}

/// "warm-up 15s, then fast-only 30s, mixed 75s"; for a search, how each probe loads.
pub fn workload_line(v: &ValidatedRun) -> String {
    let cpu = v.spec().loadgen.cpu.as_str();
    match v.measure() {
        Measure::FixedLoad(FixedLoad { workload: w, .. }) => {
            let phases: Vec<String> = w
                .phases
                .iter()
                .map(|p| format!("{} {:?}", p.name, p.duration.0))
                .collect();
            format!(
                "warm-up {:?}, then {}; load generator cpu {cpu}",
                w.warmup.0,
                phases.join(", "),
            )
        }
        Measure::Capacity(Capacity {
            search: c,
            workload: w,
            ..
        })
        | Measure::Sizing(Sizing {
            search: c,
            workload: w,
            ..
        }) => {
            let mix = c.mix_or_default(&w.endpoint_names());
            let mix: Vec<String> = mix
                .iter()
                .map(|m| format!("{} {}", m.endpoint, m.weight))
                .collect();
            format!(
                "capacity search: each probe warm-up {:?}, then {} open loop at one total rate \
                 (mix {}), from {} rps x2 up to {} rps, bisected to {}, confirmed; load \
                 generator cpu {cpu}",
                w.warmup.0,
                c.probe_duration,
                mix.join(" : "),
                c.start_rate,
                c.max_rate,
                c.resolution,
            )
        }
    }
}

/// Resident memory when the target reported it, else the kubelet's working set, marked `ws`.
fn memory(rss: Option<u64>, working_set: Option<u64>) -> String {
    match (rss, working_set) {
        (Some(_), _) | (None, None) => bytes(rss),
        (None, Some(_)) => format!("{} ws", bytes(working_set)),
    }
}

fn bytes(b: Option<u64>) -> String {
    b.map(|b| format!("{:.1} MiB", b as f64 / 1048576.0))
        .unwrap_or_else(|| "-".into())
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

fn f1(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// Renders the whole report. `charts` are file names next to report.md.
pub fn render(
    status: &BenchmarkRunStatus,
    raw: &[RawCell],
    charts: &[String],
    notes: &Notes,
) -> String {
    let summary = super::ranking(status);
    let mut o = String::new();
    overview(&mut o, status, &summary, notes);
    o.push_str(&super::verdicts::render(&status.thresholds));
    o.push_str(&super::variants::report_section(
        status,
        notes.max_regression,
    ));
    images(&mut o, charts, |c| c == "forest.svg");
    o.push_str(&super::sizing::render(status));
    images(&mut o, charts, |c| c == "sizing-map.svg");
    o.push_str(&super::capacity::render(status));
    images(&mut o, charts, |c| c.starts_with("capacity"));
    o.push_str(&super::recommendation::render(status));
    cells_table(&mut o, status);
    latency_tables(&mut o, status, &summary, charts);
    target_resources(&mut o, status, raw);
    replica_spread(&mut o, status);
    interference(&mut o, &summary);
    o.push_str(&super::node_effect::render(status));
    o.push_str(&super::neighbours::render(status));
    failed_cells(&mut o, status);
    o.push_str(MEASUREMENT);
    o
}

/// The title and the bullet list under it (run, machine, workload, outcome, headline, spread),
/// the streams that need a longer phase, and the notes' extra paragraphs.
fn overview(o: &mut String, status: &BenchmarkRunStatus, summary: &Summary, notes: &Notes) {
    let _ = writeln!(o, "# Benchmark report\n");
    // The verdict the exit code gives, before anything else: never the phase alone.
    let v = super::headline::verdict(status, notes.max_regression);
    let _ = writeln!(o, "**verdict: {}** — {} (exit {})\n", v.word, v.why, v.code);
    if !notes.source.is_empty() {
        let _ = writeln!(o, "- run: `{}`", notes.source);
    }
    if !notes.machine.is_empty() {
        let _ = writeln!(o, "- machine: {}", notes.machine);
    }
    if !notes.workload.is_empty() {
        let _ = writeln!(o, "- workload: {}", notes.workload);
    }
    let _ = writeln!(
        o,
        "- run phase: {}{}",
        status.phase,
        status
            .message
            .as_deref()
            .map(|m| format!(" — {m}"))
            .unwrap_or_default()
    );
    if let Some(h) = crate::engine::verdict::end::run_headline(&status.cells, summary)
        .or_else(|| status.headline.clone())
    {
        let _ = writeln!(o, "- headline: {h}");
    }
    let _ = writeln!(o, "- spread: {}", spread_line(status));
    if !summary.needs_longer_phase.is_empty() {
        let _ = writeln!(
            o,
            "\n**Needs a longer phase.** These streams completed too few requests for their p99 \
             to mean anything, so they are not ranked; run their phases longer to compare them:\n"
        );
        for line in &summary.needs_longer_phase {
            let _ = writeln!(o, "- {line}");
        }
    }
    for e in &notes.extra {
        let _ = writeln!(o, "\n{e}");
    }
}

/// `## Cells`: each cell's outcome, how its CPU limit was enforced, and the runner's overhead.
fn cells_table(o: &mut String, status: &BenchmarkRunStatus) {
    let _ = writeln!(o, "\n## Cells\n");
    let _ = writeln!(
        o,
        "| configuration | outcome | CPU limit enforced by | runner overhead (s) | message |\n|---|---|---|---:|---|"
    );
    for c in &status.cells {
        let enf = c
            .enforcement
            .as_ref()
            .map(|e| {
                let mut s = format!("target: {}", e.target);
                if let Some(l) = &e.loadgen {
                    s.push_str(&format!("; load generator: {l}"));
                }
                s
            })
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "| {} | {}{} | {} | {} | {} |",
            c.name,
            c.phase,
            c.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            enf,
            f1(c.overhead_seconds),
            c.message.as_deref().unwrap_or("").replace('|', "\\|")
        );
    }
}

/// `## Latency and throughput`: a table per phase and endpoint, then the charts that belong to
/// no one table.
fn latency_tables(
    o: &mut String,
    status: &BenchmarkRunStatus,
    summary: &Summary,
    charts: &[String],
) {
    let _ = writeln!(o, "\n## Latency and throughput\n");
    for (phase, endpoint) in phase_endpoints(status) {
        latency_table(o, status, summary, charts, &phase, &endpoint);
    }
    images(o, charts, |c| !placed_elsewhere(c));
}

/// The answer charts, shown in their own sections rather than under the latencies.
fn placed_elsewhere(chart: &str) -> bool {
    chart.starts_with("p99-")
        || chart.starts_with("capacity")
        || chart == "sizing-map.svg"
        || chart == "forest.svg"
}

/// An image line for each of `charts` that `which` picks.
fn images(o: &mut String, charts: &[String], which: impl Fn(&str) -> bool) {
    for c in charts.iter().filter(|c| which(c)) {
        let _ = writeln!(o, "![{c}]({c})\n");
    }
}

/// One phase and endpoint: a row per cell that measured it, the notes on thin percentiles and
/// spread under it, and its p99 chart when there is one.
fn latency_table(
    o: &mut String,
    status: &BenchmarkRunStatus,
    summary: &Summary,
    charts: &[String],
    phase: &str,
    endpoint: &str,
) {
    let _ = writeln!(o, "### {endpoint} in phase {phase}\n");
    let _ = writeln!(
        o,
        "| configuration | requests | errors | samples | rps | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | p99 vs best |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let mut thin = false;
    for c in &status.cells {
        let Some(r) = result_of(status, &c.name, phase, endpoint) else {
            continue;
        };
        thin |= r.latency_ms.is_some() && !r.unsupported_percentiles.is_empty();
        let place = super::ranked(summary, &c.name, phase, endpoint);
        let vs_best = match place {
            Some(p) if p.p99_ratio.is_some() => super::ratio_text(p).unwrap_or_default(),
            Some(CellRatio {
                excluded: Some(why),
                ..
            }) => format!("not ranked: {why}"),
            _ => ABSENT.into(),
        };
        let pct = |p| {
            let text = super::percentile_text(r, p, THIN_MD);
            super::with_spread(text, r, noise::figure_key(p))
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            r.requests,
            r.errors,
            r.samples,
            super::with_spread(format!("{:.1}", r.rps), r, noise::RPS),
            pct(Percentile::P50),
            pct(Percentile::P90),
            pct(Percentile::P99),
            pct(Percentile::P999),
            super::max_text(r),
            vs_best
        );
    }
    if thin {
        let _ = writeln!(
            o,
            "\n{}",
            super::thin_note(&Percentile::ALL).replacen(super::THIN, THIN_MD, 1)
        );
    }
    spread_notes(o, status, phase, endpoint);
    let p99_chart = format!(
        "p99-{}-{}.svg",
        super::file_part(phase),
        super::file_part(endpoint)
    );
    if charts.contains(&p99_chart) {
        let _ = writeln!(o, "\n![p99 of {endpoint} in {phase}]({p99_chart})");
    }
    o.push('\n');
}

/// `## Target resources`: per cell what the target saw and used, with the average cores over
/// the measured phases and the worst event-loop lag from the raw results.
fn target_resources(o: &mut String, status: &BenchmarkRunStatus, raw: &[RawCell]) {
    let _ = writeln!(o, "## Target resources\n");
    let _ = writeln!(
        o,
        "| configuration | figures from | replicas | CPU quota/replica | detected CPUs | quota source | mode | pool size | idle RSS | peak RSS | CPU s used | avg cores | throttled periods | throttled s | loop lag max ms |\n|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for c in &status.cells {
        let Some(t) = &c.target else {
            continue;
        };
        let measured: f64 = raw
            .iter()
            .find(|r| r.cell == c.name)
            .map(|r| r.result.phases.iter().map(|p| p.duration_secs).sum())
            .unwrap_or(0.0);
        let avg = match (t.cpu_seconds_used, measured > 0.0) {
            (Some(s), true) => format!("{:.2}", s / measured),
            _ => "-".into(),
        };
        let lag = raw.iter().find(|r| r.cell == c.name).and_then(|r| {
            r.result
                .phases
                .iter()
                .flat_map(|p| p.target_stats.iter())
                .filter_map(|s| s.end.as_ref()?.loop_lag_max_ms)
                .reduce(f64::max)
        });
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            t.source.as_deref().unwrap_or("-"),
            opt(t.replicas),
            t.cpu_quota
                .map(|q| format!("{q:.2}"))
                .unwrap_or_else(|| "unlimited".into()),
            opt(t.detected_cpus),
            t.quota_source.as_deref().unwrap_or("-"),
            t.mode.as_deref().unwrap_or("-"),
            opt(t.pool_size),
            memory(t.idle_rss_bytes, t.working_set_idle_bytes),
            memory(t.peak_rss_bytes, t.working_set_peak_bytes),
            f1(t.cpu_seconds_used),
            avg,
            opt(t.throttled_periods),
            f1(t.throttled_seconds),
            f1(lag)
        );
    }
    // A `-` above is a figure that could not be had; the status says why, per cell, and so does
    // the report.
    let notes: Vec<(&str, &str)> = status
        .cells
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.target.as_ref()?.note.as_deref()?)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "\nFigures missing above, and why:\n");
        for (cell, note) in notes {
            let _ = writeln!(o, "- {cell}: {note}");
        }
    }
}

/// `## Interference`, when some endpoint was measured both alone and mixed with others: its
/// mixed p99 over its solo p99, per cell.
fn interference(o: &mut String, summary: &Summary) {
    if summary.interference.is_empty() {
        return;
    }
    let ms = |v: Option<f64>| v.map_or_else(|| ABSENT.into(), |v| format!("{v:.1}"));
    let _ = writeln!(o, "\n## Interference (mixed p99 over solo p99)\n");
    let _ = writeln!(
        o,
        "| configuration | endpoint | solo p99 ms | mixed p99 ms | ratio |\n|---|---|---:|---:|---|"
    );
    for i in &summary.interference {
        let ratio = match (i.ratio, &i.excluded) {
            (Some(r), _) => format!("{r:.1}x"),
            (None, Some(why)) => format!("not computed: {why}"),
            (None, None) => ABSENT.into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {ratio} |",
            i.cell,
            i.endpoint,
            ms(i.solo_p99_ms),
            ms(i.mixed_p99_ms)
        );
    }
}

/// A closing line counting the failed cells, whose rows are missing from the tables.
fn failed_cells(o: &mut String, status: &BenchmarkRunStatus) {
    let failed = status
        .cells
        .iter()
        .filter(|c| c.phase == CellPhase::Failed)
        .count();
    if failed > 0 {
        let _ = writeln!(
            o,
            "\n{failed} cell(s) failed; their rows are missing above and their reasons are in the Cells table."
        );
    }
}

/// The header line about repetitions: how many, or that no spread is known.
fn spread_line(status: &BenchmarkRunStatus) -> String {
    let most = status
        .cells
        .iter()
        .flat_map(|c| &c.results)
        .filter_map(|r| r.spread.as_ref().map(|s| s.repetitions))
        .max();
    match most {
        None => "none known: each cell ran once (`spec.repeat: 1`), so no difference between \
                 cells can be told from noise; set `spec.repeat: 5` or more for a test"
            .into(),
        Some(n) if (n as usize) < noise::MIN_FOR_TEST => format!(
            "figures are medians of up to {n} repetitions with their min–max range; cells \
             differ only when the ranges do not overlap (a test needs {}+ repetitions)",
            noise::MIN_FOR_TEST
        ),
        Some(n) => format!(
            "figures are medians of up to {n} repetitions with their min–max range and 95% \
             bootstrap CI (shown where it is narrower than the range); cells differ when a Mann-Whitney U test says so at {} and the \
             medians are at least {:.0}% apart",
            noise::ALPHA,
            noise::MIN_PRACTICAL_CHANGE * 100.0
        ),
    }
}

/// Under a latency table: which cells are within noise of the best, and which figures were
/// unstable with the advice to repeat more or lengthen the phase.
fn spread_notes(o: &mut String, status: &BenchmarkRunStatus, phase: &str, endpoint: &str) {
    let results: Vec<_> = status
        .cells
        .iter()
        .filter_map(|c| Some((c, super::result_of(status, &c.name, phase, endpoint)?)))
        .filter(|(_, r)| r.spread.is_some())
        .collect();
    if results.is_empty() {
        return;
    }
    let summary = super::ranking(status);
    let tied: Vec<&str> = results
        .iter()
        .filter(|(c, _)| {
            super::ranked(&summary, &c.name, phase, endpoint)
                .is_some_and(|p| p.within_noise_of.is_some())
        })
        .map(|(c, _)| c.name.as_str())
        .collect();
    if !tied.is_empty() {
        let _ = writeln!(
            o,
            "\n~ within noise: the p99 of {} do not differ over the repetitions, so they are \
             not ranked against each other.",
            tied.join(", ")
        );
    }
    let unstable: Vec<String> = results
        .iter()
        .filter_map(|(c, r)| {
            let spread = r.spread.as_ref()?;
            let names: Vec<&str> = spread
                .figures
                .iter()
                .filter(|(_, f)| f.unstable)
                .map(|(k, _)| k.as_str())
                .collect();
            (!names.is_empty()).then(|| format!("{} ({})", c.name, names.join(", ")))
        })
        .collect();
    if !unstable.is_empty() {
        let _ = writeln!(
            o,
            "\n{} unstable over repetitions in {}: the values spread more than 2x (max/min), \
             so they are shown but never ranked; repeat more or lengthen the phase.",
            super::UNSTABLE,
            unstable.join(", ")
        );
    }
}

/// A replica is called out as uneven when its CPU share differs from an even split by more than
/// this fraction of the even share.
pub const UNEVEN: f64 = 0.25;

/// Below this many CPU seconds per replica a phase is too light for shares to mean anything
/// (a few /stats reads, 10 ms accounting ticks).
const SHARE_FLOOR_SECS: f64 = 0.1;

/// Per cell with several replicas and per phase, how the work spread over them: CPU seconds and
/// requests per replica and each one's share, flagged when a replica's CPU share is far from an
/// even split.
fn replica_spread(o: &mut String, status: &BenchmarkRunStatus) {
    let cells: Vec<_> = status
        .cells
        .iter()
        .filter_map(|c| Some((c, c.target.as_ref()?)))
        .filter(|(_, t)| t.per_replica.len() > 1)
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## How the work spread over replicas\n");
    let _ = writeln!(
        o,
        "| configuration | phase | replica | CPU s used | CPU share | requests served | request share |\n|---|---|---|---:|---:|---:|---:|"
    );
    let mut uneven: Vec<String> = Vec::new();
    for (c, t) in cells {
        let n = t.per_replica.len() as f64;
        // Phases in the order the first replica lists them.
        for phase in t.per_replica[0].phases.iter().map(|p| p.phase.as_str()) {
            let rows: Vec<(&str, Option<f64>, Option<f64>)> = t
                .per_replica
                .iter()
                .map(|r| {
                    let p = r.phases.iter().find(|p| p.phase == phase);
                    (
                        r.replica.as_str(),
                        p.and_then(|p| p.cpu_seconds_used),
                        p.and_then(|p| p.requests_served),
                    )
                })
                .collect();
            let cpu_total = share_total(rows.iter().map(|r| r.1), SHARE_FLOOR_SECS * n);
            let req_total = share_total(rows.iter().map(|r| r.2), 0.0);
            let share = |v: Option<f64>, total: Option<f64>| Some(v? / total?);
            let pct = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.0}%", s * 100.0));
            let mut flagged = false;
            for &(replica, cpu, requests) in &rows {
                let cpu_share = share(cpu, cpu_total);
                flagged |= cpu_share.is_some_and(|s| (s * n - 1.0).abs() > UNEVEN);
                let _ = writeln!(
                    o,
                    "| {} | {phase} | {replica} | {} | {} | {} | {} |",
                    c.name,
                    f1(cpu),
                    pct(cpu_share),
                    requests.map_or("-".into(), |v| format!("{v:.0}")),
                    pct(share(requests, req_total)),
                );
            }
            if flagged {
                uneven.push(format!("{} ({phase})", c.name));
            }
        }
    }
    if !uneven.is_empty() {
        let _ = writeln!(
            o,
            "\nUneven: in {} a replica's CPU share is more than {:.0}% away from an even split, so \
             where the connections landed, not only the configuration, shaped those figures \
             (with few keep-alive connections, `spec.workload.spread: roundRobin` deals them \
             evenly).",
            uneven.join(", "),
            UNEVEN * 100.0
        );
    }
}

/// The sum that shares are taken of, or `None` when shares would mislead: a replica without a
/// reading (a /stats read that timed out, a restarted pod) would make the others look lopsided,
/// and a total under `floor` is noise.
fn share_total(values: impl Iterator<Item = Option<f64>>, floor: f64) -> Option<f64> {
    let values: Option<Vec<f64>> = values.map(|v| v.filter(|v| *v >= 0.0)).collect();
    values
        .map(|v| v.iter().sum::<f64>())
        .filter(|t| *t > 0.0 && *t >= floor)
}

/// How each figure was measured; part of every report.
const MEASUREMENT: &str = "
## How each figure was measured

- **Latency percentiles** (p50, p90, p99, p99.9, max): the load generator records every
  response time in an HDR histogram (microsecond unit, 3 significant figures) per phase and
  endpoint; percentiles are read from the histogram, never averaged across workers or replicas
  (histograms are merged). Closed-loop streams time each request from send to last byte of the
  answer; open-loop (rate) streams time from the intended send time, which corrects coordinated
  omission. Warm-up is driven but not reported.
- **samples, and what is ranked**: the successful requests of a stream, each of which has its
  latency in the histogram. A percentile pN needs 1/(1-N) samples (p50 2, p90 10, p99 100,
  p99.9 1000) to mean what its name says; from fewer it is marked `*` and never used to rank.
  A stream is ranked (`p99 vs best`, the headline, interference ratios) only with at least one
  success, errors under half of its requests, and at least 100 samples; the others say why
  they were not ranked. A stream with no successful request has no latency at all (`—`).
- **rps**: successful requests in the phase divided by the phase's measured duration. Errors
  (connect, timeout, non-2xx) are counted separately in `errors`.
- **CPU quota / detected CPUs / quota source / mode / pool size**: what the target itself reports
  on its `/stats` endpoint (its own reading of cgroup `cpu.max` or `cpu.cfs_quota_us`, or the
  affinity mask).
- **CPU s used, throttled periods, throttled s**: locally, read by the runner from each replica's
  cgroup (`cpuacct.usage` and `cpu.stat` on cgroup v1, `cpu.stat` on v2), summed over replicas,
  between the end of warm-up and the end of the last phase (sampled every 50 ms); in a cluster,
  from the kubelet of each target pod's node for any image (`/metrics/resource` every second for
  CPU, `/metrics/cadvisor` for throttling, its counters weighed by the CPU used, as its samples
  come only every 10-20 s),
  else from the target's `/stats`: `status.cells[].target.source` says which, and
  `cpuDifferencePercent` compares the kubelet's CPU seconds with the target's own when both
  exist. **avg cores** = CPU seconds / measured seconds.
- **idle RSS / peak RSS** marked `ws` (cluster, an image without `/stats`): the kubelet's
  memory working set of the target containers just before the measured phases and the highest
  sampled in them, summed over replicas.
- **idle RSS / peak RSS**: locally, `VmRSS` of each replica (from `/proc/PID/status`) once ready
  and before load, and `VmHWM` (the kernel's high-water mark) at the end, summed over replicas.
- **loop lag max**: the target's own measurement of how late a periodic timer fired on its event
  loop (its `/stats`, `loopLagMaxMs`, since start). With `service` spread and several local
  replicas on one port, `/stats` reaches whichever replica the kernel picks, so this is one
  replica's figure; with `roundRobin` (and in a cluster) each replica's `/stats` is read.
- **How connections reached the replicas** (`spec.workload.spread`): `service` (the default)
  sends every connection to one address and lets the kernel's SO_REUSEPORT hash (locally) or
  kube-proxy (in a cluster) pick a replica at random, so with a few keep-alive connections the
  replicas' shares can differ widely from run to run; `roundRobin` deals each stream's
  connections to the replicas' own addresses in turn (locally 127.0.0.2, 127.0.0.3, ... on the
  cell's port; in a cluster the pod IPs), as Node's cluster primary does.
- **CPU limit enforced by**: how the runner put the limit into force for this cell (cgroup v2
  `cpu.max`, cgroup v1 CFS quota with a 100 ms period, or CPU affinity as a weaker fallback when
  no cgroup was writable); requests equal limits. Locally every benchmark cgroup also gets 16
  times a normal process's CPU weight (`cpu.shares` 16384 / `cpu.weight` 1600), so up to its
  quota it wins against other programs on the machine; the quota decides how much it may use.
- **How the work spread over replicas**: per replica and phase, CPU seconds (locally from its own
  cgroup, read by the runner's 50 ms poll at each phase boundary, planned from the load
  generator's start and moved later by how late its phases began, as its per-second progress
  lines show; in a cluster from its `/stats`) and requests served (from its `/stats`, read on its
  own address: with `roundRobin` spread locally, and always in a cluster). A CPU share more than
  25% away from an even split is called out; no shares are shown when a replica has no reading
  or the phase used under 0.1 CPU seconds per replica.
- **repetitions and noise** (`spec.repeat` above 1): every figure is the median over the
  cell's successful repetitions, shown with its min–max range and, from 5 repetitions, a 95%
  bootstrap confidence interval of the median. The unit of evidence is a repetition, not a
  request. Two cells are ranked against each other only when their p99s differ: with 5 or more
  repetitions each, a two-sided Mann-Whitney U test at 0.05 and medians at least 5% apart;
  with fewer, non-overlapping min–max ranges. Otherwise the ratio is marked `~` (within noise).
  A figure whose repetitions spread more than 2x (max/min) is marked `!` (unstable) and never
  ranked. With `repeat: 1` no spread is known and cells are ranked as measured.
- **runner overhead**: wall time the runner spent on a cell outside the configured warm-up and
  phases: starting replicas, waiting for readiness, starting the load generator and its check
  that every address it loads answers, collecting results and stopping the replicas.
";

#[cfg(test)]
mod tests;
