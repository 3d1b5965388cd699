//! The human-readable summary printed by the one-off CLI.

use std::fmt::Write as _;

use crate::result::{LatencyMs, RunResult, StreamMode};

fn latency_line(l: &LatencyMs) -> String {
    format!(
        "p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  mean {:.3}",
        l.p50, l.p90, l.p99, l.p999, l.max, l.mean
    )
}

/// Renders a result as a few lines per phase and stream.
pub fn render(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "target {} ({} threads)", r.target, r.threads);
    for p in &r.phases {
        let _ = writeln!(out, "phase {} ({:.1} s)", p.name, p.duration_secs);
        for s in &p.streams {
            let mode = match s.mode {
                StreamMode::Closed => "closed loop",
                StreamMode::Open => "open loop",
            };
            let _ = writeln!(
                out,
                "  {} [{}]  requests {}  errors {}  rps {:.1}  connections opened {}",
                s.endpoint, mode, s.requests, s.errors, s.rps, s.connections_opened
            );
            let label = match s.mode {
                StreamMode::Open => "latency ms (from intended send)",
                StreamMode::Closed => "latency ms",
            };
            let _ = writeln!(out, "    {label}: {}", latency_line(&s.latency_ms));
            if let Some(u) = &s.uncorrected_latency_ms {
                let _ = writeln!(
                    out,
                    "    uncorrected (from actual send): {}",
                    latency_line(u)
                );
            }
            if let (Some(offered), Some(late)) = (s.offered_rps, s.late_sends) {
                let _ = writeln!(out, "    offered rate {offered:.1}/s, late sends {late}");
            }
            let kinds = s.errors_by_kind.nonzero();
            if !kinds.is_empty() {
                let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let _ = writeln!(out, "    errors by kind: {}", list.join(", "));
            }
            if s.in_flight_at_end > 0 {
                let _ = writeln!(
                    out,
                    "    cut in flight at phase end: {}",
                    s.in_flight_at_end
                );
            }
        }
        for t in &p.target_stats {
            match (&t.error, t.cpu_seconds_in_phase) {
                (Some(e), _) => {
                    let _ = writeln!(out, "  target {}: {e}", t.address);
                }
                (None, cpu) => {
                    let peak = t
                        .end
                        .as_ref()
                        .and_then(|e| e.rss_peak_bytes)
                        .map(|b| format!("{:.1} MiB", b / 1048576.0))
                        .unwrap_or_else(|| "?".into());
                    let cpu = cpu.map(|c| format!("{c:.2}")).unwrap_or_else(|| "?".into());
                    let _ = writeln!(out, "  target {}: cpu s {cpu}, rss peak {peak}", t.address);
                }
            }
        }
    }
    out
}
