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
        // The same words as `benchmatrix size` prints, as a block.
        let _ = writeln!(o, "```\n{}```\n", crate::frontends::size::chosen_text(c));
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
