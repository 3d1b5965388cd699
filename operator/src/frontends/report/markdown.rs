//! `report.md`: per phase and endpoint latency and throughput tables, the target's resource
//! use, the runner's own overhead, and how every figure was measured.

use std::fmt::Write;

use super::{ABSENT, RawCell, phase_endpoints, result_of};
use crate::engine::results::noise;
use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, CellPhase, CellRatio, Summary};

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
}

/// "warm-up 15s, then fast-only 30s, mixed 75s".
pub fn workload_line(run: &BenchmarkRun) -> String {
    let w = &run.spec.workload;
    let phases: Vec<String> = w
        .phases
        .iter()
        .map(|p| format!("{} {:?}", p.name, p.duration.0))
        .collect();
    format!(
        "warm-up {:?}, then {}; load generator cpu {}",
        w.warmup.0,
        phases.join(", "),
        run.spec.loadgen.cpu.as_str()
    )
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
    o.push_str(&super::recommendation::render(status));
    cells_table(&mut o, status);
    latency_tables(&mut o, status, &summary, charts);
    target_resources(&mut o, status, raw);
    replica_spread(&mut o, status);
    interference(&mut o, &summary);
    failed_cells(&mut o, status);
    o.push_str(MEASUREMENT);
    o
}

/// The title and the bullet list under it (run, machine, workload, outcome, headline, spread),
/// the streams that need a longer phase, and the notes' extra paragraphs.
fn overview(o: &mut String, status: &BenchmarkRunStatus, summary: &Summary, notes: &Notes) {
    let _ = writeln!(o, "# Benchmark report\n");
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
        "- outcome: {}{}",
        status.phase,
        status
            .message
            .as_deref()
            .map(|m| format!(" — {m}"))
            .unwrap_or_default()
    );
    if let Some(h) = crate::engine::results::headline(summary).or_else(|| status.headline.clone()) {
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
    for c in charts.iter().filter(|c| !c.starts_with("p99-")) {
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
  CPU, `/metrics/cadvisor` for throttling, scaled from the span its 10-15 s samples covered),
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
mod tests {
    use super::*;
    use crate::resource::{CellResult, CellStatus, LatencyMs, TargetStats};

    #[test]
    fn renders_tables_ratios_and_measurement_notes() {
        let cell = |name: &str, p99: f64, rps: f64| CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            results: vec![CellResult {
                phase: "mixed".into(),
                endpoint: "fast".into(),
                requests: 100,
                errors: 0,
                samples: 100,
                rps,
                latency_ms: Some(LatencyMs {
                    p50: 1.0,
                    p90: 2.0,
                    p99,
                    p999: p99,
                    max: p99,
                    mean: 1.0,
                }),
                unsupported_percentiles: vec![Percentile::P999],
                spread: None,
            }],
            target: Some(TargetStats {
                replicas: Some(1),
                detected_cpus: Some(2),
                ..Default::default()
            }),
            overhead_seconds: Some(0.42),
            ..Default::default()
        };
        let status = BenchmarkRunStatus {
            cells: vec![
                cell("single-x1", 1600.0, 3.0),
                cell("pool-x1", 48.0, 80.0),
                CellStatus {
                    name: "broken".into(),
                    phase: CellPhase::Failed,
                    reason: Some("NeverReady".into()),
                    message: Some("not ready | in 5s".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let md = render(
            &status,
            &[],
            &["p99-mixed-fast.svg".into()],
            &Notes::default(),
        );
        assert!(
            md.contains("| single-x1 | 100 | 0 | 100 | 3.0 | 1.0 | 2.0 | 1600.0 | 1600.0\\* |"),
            "{md}"
        );
        assert!(md.contains("33.3x"), "{md}");
        assert!(md.contains("| pool-x1 | 100 | 0 | 100 | 80.0 |"));
        assert!(md.contains("![p99 of fast in mixed](p99-mixed-fast.svg)"));
        assert!(md.contains("Failed (NeverReady)") && md.contains("not ready \\| in 5s"));
        assert!(md.contains("| 0.42 |"));
        assert!(md.contains("## How each figure was measured"));
        let table = super::super::comparison_table(&status);
        assert!(
            table.contains("single-x1") && table.contains("33.3x"),
            "{table}"
        );
        assert!(table.contains("not measured: broken: Failed"), "{table}");
    }

    /// The matrix of the issue: in pool-x8 /slow completed no request, in pool-x4 one.
    fn short_phase_status() -> BenchmarkRunStatus {
        let result = |requests: u64, p: f64| CellResult {
            phase: "mixed".into(),
            endpoint: "slow".into(),
            requests,
            errors: 0,
            samples: requests,
            rps: requests as f64 / 2.0,
            latency_ms: (requests > 0).then_some(LatencyMs {
                p50: p,
                p90: p,
                p99: p,
                p999: p,
                max: p,
                mean: p,
            }),
            unsupported_percentiles: Percentile::unsupported_by(requests),
            spread: None,
        };
        let cell = |name: &str, r: CellResult| CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            results: vec![r],
            ..Default::default()
        };
        let mut status = BenchmarkRunStatus {
            cells: vec![
                cell("pool-x8", result(0, 0.0)),
                cell("pool-x4", result(1, 1990.0)),
                cell("pool-x2", result(400, 700.0)),
            ],
            ..Default::default()
        };
        status.summary = Some(crate::engine::results::summarize(&status.cells));
        status
    }

    /// The row of `cell` among the figures in `md`, not its row in the table of cells (which
    /// says its phase, Succeeded).
    fn figures_row(md: &str, cell: &str) -> String {
        md.lines()
            .find(|l| l.starts_with(&format!("| {cell} |")) && !l.contains("Succeeded"))
            .unwrap_or_else(|| panic!("no row for {cell} in {md}"))
            .to_owned()
    }

    #[test]
    fn absent_figures_print_a_dash_and_thin_percentiles_are_marked() {
        let status = short_phase_status();
        let md = render(&status, &[], &[], &Notes::default());
        let row = |cell: &str| figures_row(&md, cell);
        let x8 = row("pool-x8");
        assert_eq!(
            x8,
            "| pool-x8 | 0 | 0 | 0 | 0.0 | — | — | — | — | — | not ranked: 0 samples; p99 needs 100 |"
        );
        let x4 = row("pool-x4");
        assert!(x4.contains("1990.0\\*"), "{x4}");
        assert!(!x4.contains("x |"), "pool-x4 has a ratio: {x4}");
        assert!(md.contains("pool-x8 mixed/slow: 0 samples"), "{md}");
        let table = super::super::comparison_table(&status);
        let line = |cell: &str| {
            table
                .lines()
                .find(|l| l.contains(cell))
                .unwrap_or_else(|| panic!("no {cell} in {table}"))
                .to_owned()
        };
        // p50, p99 and max: no figure, no zero.
        assert_eq!(line("pool-x8").matches('—').count(), 3, "{table}");
        assert!(line("pool-x8").ends_with("not ranked"), "{table}");
        assert!(line("pool-x4").contains("1990.0*"), "{table}");
        assert!(line("pool-x2").contains("1.0x"), "{table}");
        assert!(
            table.contains(
                "needs a longer phase: pool-x4 mixed/slow: 1 sample; p99 needs 100 \
                 (a phase of about 200 s at 0.5/s)"
            ),
            "{table}"
        );
        assert!(!table.contains("not ranked: pool-x4"), "{table}");
    }

    /// mixed/fast of cells repeated five times: pool-x1 and pool-x2 overlap, single-x1 is
    /// far slower, and `lucky`'s p99 spread 15x.
    fn repeated_status() -> BenchmarkRunStatus {
        use crate::engine::results::noise::spread_of;
        let cell = |name: &str, p99s: &[f64], rps: f64| {
            let p99 = spread_of(p99s);
            let mut figures = std::collections::BTreeMap::new();
            figures.insert("rps".to_owned(), spread_of(&[rps; 5]));
            let median = p99.median;
            figures.insert("p99".to_owned(), p99);
            CellStatus {
                name: name.into(),
                phase: CellPhase::Succeeded,
                results: vec![CellResult {
                    phase: "mixed".into(),
                    endpoint: "fast".into(),
                    requests: 1000,
                    errors: 0,
                    samples: 1000,
                    rps,
                    latency_ms: Some(LatencyMs {
                        p50: 1.0,
                        p90: 2.0,
                        p99: median,
                        p999: median,
                        max: median,
                        mean: 1.0,
                    }),
                    unsupported_percentiles: vec![],
                    spread: Some(crate::resource::Spread {
                        repetitions: 5,
                        figures,
                        merged_latency_ms: None,
                    }),
                }],
                ..Default::default()
            }
        };
        BenchmarkRunStatus {
            cells: vec![
                cell("single-x1", &[400.0, 410.0, 395.0, 420.0, 405.0], 5.0),
                cell("pool-x1", &[20.0, 23.0, 19.0, 22.0, 21.0], 80.0),
                cell("pool-x2", &[21.5, 20.5, 22.5, 19.5, 24.0], 82.0),
                cell("lucky", &[3.0, 30.0, 2.0, 3.5, 2.5], 90.0),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn repeated_cells_show_their_spread_noise_and_instability() {
        let status = repeated_status();
        let md = render(&status, &[], &[], &Notes::default());
        let row = |cell: &str| figures_row(&md, cell);
        let x2 = row("pool-x2");
        // Five repetitions' CI is their range here: shown once.
        assert!(x2.contains("| 21.5 (19.5–24.0) |"), "{x2}");
        assert!(x2.contains("| 82.0 (82.0–82.0) |"), "{x2}");
        assert!(x2.ends_with("| ~1.0x |"), "{x2}");
        assert!(row("pool-x1").ends_with("| ~1.0x |"), "{md}");
        assert!(row("single-x1").ends_with("| 19.3x |"), "{md}");
        let lucky = row("lucky");
        assert!(lucky.contains("| 3.0 (2.0–30.0"), "{lucky}");
        assert!(lucky.contains(")! |"), "{lucky}");
        assert!(
            lucky.ends_with(
                "| not ranked: unstable over repetitions: p99 from 2.0 to 30.0 ms \
                 (15.0x); repeat more or lengthen the phase |"
            ),
            "{lucky}"
        );
        assert!(
            md.contains("~ within noise: the p99 of pool-x1, pool-x2 do not differ"),
            "{md}"
        );
        assert!(
            md.contains("! unstable over repetitions in lucky (p99): ")
                && md.contains("repeat more or lengthen the phase."),
            "{md}"
        );
        assert!(
            md.contains("- spread: figures are medians of up to 5 repetitions"),
            "{md}"
        );
        assert!(
            md.contains("- headline: mixed/fast: no clear winner, within noise: pool-x1"),
            "{md}"
        );
        let table = super::super::comparison_table(&status);
        let line = |cell: &str| table.lines().find(|l| l.contains(cell)).unwrap().to_owned();
        assert!(line("pool-x2").ends_with("~1.0x"), "{table}");
        // The terminal's compact spread: every repetition within 2.5 of the median.
        assert!(line("pool-x2").contains(" 21.5 ±2.5 "), "{table}");
        assert!(line("lucky").ends_with("not ranked"), "{table}");
        assert!(
            table.contains("not ranked: lucky mixed/fast: unstable"),
            "{table}"
        );
        assert!(table.contains(super::super::UNSTABLE_NOTE), "{table}");
    }

    #[test]
    fn the_resource_table_says_where_figures_come_from_and_shows_the_working_set() {
        let mut status = short_phase_status();
        status.cells[0].target = Some(TargetStats {
            source: Some("kubelet".into()),
            cpu_seconds_used: Some(14.9),
            working_set_idle_bytes: Some(2 << 20),
            working_set_peak_bytes: Some(3 << 20),
            ..TargetStats::default()
        });
        let md = render(&status, &[], &[], &Notes::default());
        let name = &status.cells[0].name;
        let row = md
            .lines()
            .skip_while(|l| !l.starts_with("## Target resources"))
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no resource row in {md}"));
        assert!(row.starts_with(&format!("| {name} | kubelet |")), "{row}");
        assert!(row.contains("| 2.0 MiB ws | 3.0 MiB ws |"), "{row}");
        assert!(row.contains("| 14.90 |"), "{row}");
    }

    #[test]
    fn a_single_run_says_no_spread_is_known() {
        let md = render(&short_phase_status(), &[], &[], &Notes::default());
        assert!(
            md.contains("- spread: none known: each cell ran once (`spec.repeat: 1`)"),
            "{md}"
        );
        assert!(!md.contains("~ within noise") && !md.contains("~1"), "{md}");
    }

    #[test]
    fn shows_each_replicas_share_and_calls_out_an_uneven_split() {
        let share = |replica: &str, cpu: [f64; 2], requests: Option<[f64; 2]>| {
            crate::resource::ReplicaShare {
                replica: replica.into(),
                phases: ["fast-only", "mixed"]
                    .iter()
                    .enumerate()
                    .map(|(k, p)| crate::resource::ReplicaPhaseShare {
                        phase: (*p).into(),
                        cpu_seconds_used: Some(cpu[k]),
                        requests_served: requests.map(|r| r[k]),
                    })
                    .collect(),
            }
        };
        let cell = |name: &str, per_replica| CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            target: Some(TargetStats {
                replicas: Some(2),
                per_replica,
                ..Default::default()
            }),
            ..Default::default()
        };
        let partial = |replica: &str, cpu: Option<f64>| crate::resource::ReplicaShare {
            replica: replica.into(),
            phases: vec![crate::resource::ReplicaPhaseShare {
                phase: "mixed".into(),
                cpu_seconds_used: cpu,
                requests_served: None,
            }],
        };
        let status = BenchmarkRunStatus {
            cells: vec![
                // One replica's /stats read failed: no shares, no verdict.
                cell("unread", vec![partial("a", Some(3.0)), partial("b", None)]),
                // Too little CPU for shares to mean anything.
                cell(
                    "idle",
                    vec![partial("a", Some(0.01)), partial("b", Some(0.03))],
                ),
                // Both /fast connections on one replica: it did all of fast-only's work.
                cell(
                    "lopsided",
                    vec![share("r0", [3.0, 8.0], None), share("r1", [0.0, 8.0], None)],
                ),
                cell(
                    "even",
                    vec![
                        share("127.0.0.2:9", [1.5, 8.0], Some([240.0, 100.0])),
                        share("127.0.0.3:9", [1.5, 8.2], Some([245.0, 98.0])),
                    ],
                ),
            ],
            ..Default::default()
        };
        let md = render(&status, &[], &[], &Notes::default());
        assert!(md.contains("## How the work spread over replicas"), "{md}");
        assert!(
            md.contains("| lopsided | fast-only | r0 | 3.00 | 100% | - | - |"),
            "{md}"
        );
        assert!(
            md.contains("| even | mixed | 127.0.0.3:9 | 8.20 | 51% | 98 | 49% |"),
            "{md}"
        );
        assert!(
            md.contains("Uneven: in lopsided (fast-only) a replica"),
            "{md}"
        );
        assert!(
            !md.contains("lopsided (mixed)") && !md.contains("even ("),
            "{md}"
        );
        assert!(
            md.contains("| unread | mixed | a | 3.00 | - | - | - |"),
            "{md}"
        );
        assert!(
            md.contains("| idle | mixed | b | 0.03 | - | - | - |"),
            "{md}"
        );
        assert!(!md.contains("unread (") && !md.contains("idle ("), "{md}");
    }
}
