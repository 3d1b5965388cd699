//! The human-readable summary printed by the one-off CLI.

use std::fmt::Write as _;

use crate::result::{LatencyMs, Percentile, ReplicaStats, RunResult, StreamMode, StreamResult};

/// Marks a percentile that its samples cannot support (see [`Percentile::min_samples`]).
const THIN: &str = "*";

/// The percentiles of `samples` samples, each marked [`THIN`] when they cannot support it; "—"
/// without a sample.
fn latency_line(l: Option<&LatencyMs>, samples: u64) -> String {
    let Some(l) = l else {
        return "— (no successful request)".into();
    };
    let mut parts: Vec<String> = Percentile::ALL
        .iter()
        .map(|&p| {
            let mark = if samples < p.min_samples() { THIN } else { "" };
            format!("{p} {:.3}{mark}", l.get(p))
        })
        .collect();
    parts.push(format!("max {:.3}", l.max));
    parts.push(format!("mean {:.3}", l.mean));
    parts.join("  ")
}

/// Renders a result as a few lines per phase and stream.
pub fn render(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "target {} ({} threads)", r.target, r.threads);
    if let Some(secs) = r.preflight_seconds {
        let _ = writeln!(
            out,
            "every address answered after {secs:.3} s (before the load)"
        );
    }
    for p in &r.phases {
        let _ = writeln!(out, "phase {} ({:.1} s)", p.name, p.duration_secs);
        for s in &p.streams {
            render_stream(&mut out, s);
        }
        for t in &p.target_stats {
            render_replica(&mut out, t);
        }
    }
    out
}

/// A stream's lines: its counts, its latency (and the uncorrected latency of an open loop),
/// then whatever else there is to say about it.
fn render_stream(out: &mut String, s: &StreamResult) {
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
    let samples = s.samples();
    let _ = writeln!(
        out,
        "    {label}, {samples} sample(s): {}",
        latency_line(s.latency_ms.as_ref(), samples)
    );
    if let Some(u) = &s.uncorrected_latency_ms {
        let _ = writeln!(
            out,
            "    uncorrected (from actual send): {}",
            latency_line(Some(u), samples)
        );
    }
    let thin = Percentile::unsupported_by(samples);
    if samples > 0 && !thin.is_empty() {
        let needs: Vec<String> = thin
            .iter()
            .map(|p| format!("{p} needs {}", p.min_samples()))
            .collect();
        let _ = writeln!(
            out,
            "    {THIN} from fewer samples than the percentile needs ({}): run a longer \
             phase to rely on it",
            needs.join(", ")
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

/// A replica's line: what reading its `/stats` said, or the CPU time and peak memory it used.
fn render_replica(out: &mut String, t: &ReplicaStats) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{PhaseResult, StreamResult};

    fn doc(requests: u64, errors: u64, latency: Option<LatencyMs>) -> RunResult {
        RunResult {
            target: "http://t".into(),
            phases: vec![PhaseResult {
                name: "p".into(),
                streams: vec![StreamResult {
                    endpoint: "slow".into(),
                    requests,
                    errors,
                    latency_ms: latency,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn no_sample_prints_a_dash_and_thin_percentiles_are_marked() {
        let none = render(&doc(7, 7, None));
        assert!(
            none.contains("0 sample(s): — (no successful request)"),
            "{none}"
        );
        assert!(!none.contains("p99 0.000"), "{none}");
        let l = LatencyMs {
            p50: 1.0,
            p90: 2.0,
            p99: 3.0,
            p999: 4.0,
            max: 4.0,
            mean: 1.5,
        };
        let few = render(&doc(50, 0, Some(l)));
        assert!(
            few.contains("p50 1.000  p90 2.000  p99 3.000*  p99.9 4.000*  max 4.000"),
            "{few}"
        );
        assert!(
            few.contains("(p99 needs 100, p99.9 needs 1000): run a longer phase"),
            "{few}"
        );
        let many = render(&doc(5000, 0, Some(l)));
        assert!(!many.contains('*'), "{many}");
    }
}
