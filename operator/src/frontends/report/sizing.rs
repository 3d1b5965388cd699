//! The sizing search's answer (`spec.sizing`) in report.md: the chosen configuration with its
//! settings, then the searched space cheapest first, each configuration with what was measured,
//! the bound that pruned it and the model's prediction, the chosen one in bold.

use std::fmt::Write;

use crate::engine::capacity::probe::rate_text;
use crate::resource::BenchmarkRunStatus;
use crate::resource::sizing::SizedState;

/// The report's Sizing section; empty without `status.sizing`.
pub fn render(status: &BenchmarkRunStatus) -> String {
    let Some(s) = &status.sizing else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n## Sizing: {} rps at the SLO ({} rps of traffic plus the margin)\n",
        rate_text(s.target_rate),
        rate_text(s.traffic)
    );
    let _ = writeln!(o, "**{:?}**: {}\n", s.outcome, s.message);
    if let Some(c) = &s.chosen {
        let env: Vec<String> = c
            .env
            .iter()
            .map(|v| format!("{}={}", v.name, v.value))
            .collect();
        let _ = writeln!(
            o,
            "Chosen: **{}**, {} replicas x {} CPU ({} CPU reserved), {} memory each, mode {}{}; \
             held {} rps, {:.0}% above the traffic; {}.",
            c.configuration,
            c.replicas,
            c.cpu,
            c.reserved_cpu,
            c.memory,
            c.mode,
            if env.is_empty() {
                String::new()
            } else {
                format!(", env {}", env.join(" "))
            },
            rate_text(c.held_rate),
            c.headroom * 100.0,
            c.confirmed
        );
        if let Some(h) = &c.hpa {
            let _ = writeln!(
                o,
                "Autoscaler: CPU {:.0}% of the request at the held rate, so a target of {}% \
                 (replicas {} to {}); `benchmatrix size --manifests DIR` writes it.",
                h.utilization_at_held * 100.0,
                h.target_utilization,
                h.min_replicas,
                h.max_replicas
            );
        }
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "The space, cheapest first (CPU reserved: limit x replicas). *held* and *failed* were \
         measured; *bound* is the most a pruned configuration can hold by what was measured; \
         *predicted* is Amdahl's law fitted to the measured ones, shown beside them, never used \
         to prune.\n"
    );
    let _ = writeln!(
        o,
        "| configuration | CPU | state | held | failed | bound | predicted | why |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    let rate = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{} rps", rate_text(r)));
    for c in &s.configurations {
        let name = if c.state == SizedState::Chosen {
            format!("**{}**", c.name)
        } else {
            c.name.clone()
        };
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            c.reserved_cpu,
            crate::frontends::size::state_word(c.state),
            rate(c.held_rate),
            rate(c.failed_rate),
            rate(c.bound),
            rate(c.predicted),
            c.why.as_deref().unwrap_or("")
        );
    }
    for n in &s.notes {
        let _ = writeln!(o, "\nNote: {n}");
    }
    o
}
