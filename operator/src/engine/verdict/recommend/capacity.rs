//! The recommendation of a run that searched (`spec.capacity`): the configuration that holds
//! the most traffic at the SLO per reserved core.
//!
//! Without a traffic target, "cheapest" has one meaning that does not depend on how much
//! traffic there will be: the CPU reserved per request per second held. A cell that holds
//! 45 rps per core needs a third less CPU than one holding 30 for any traffic both could be
//! scaled to, so that is the ranking ([`crate::engine::capacity::rank`]). The SLO already
//! decided what each cell held; thresholds, where the run has them, must also pass.

use super::{Alternative, Recommendation, bounded, cpus};
use crate::engine::capacity::probe::rate_text;
use crate::engine::capacity::rank::{Ranked, Ranking, per_cpu_text};
use crate::resource::{ThresholdResult, Verdict};

/// The cell holding the most requests per second per reserved core among `ranking`'s, those
/// failing a threshold of `results` passed over.
pub(super) fn recommend(ranking: Ranking, results: &[ThresholdResult]) -> Recommendation {
    let mut passed_over = ranking.unranked;
    let mut qualified: Vec<(Ranked, usize)> = Vec::new();
    for r in ranking.ranked {
        let verdicts: Vec<&ThresholdResult> = results.iter().filter(|v| v.cell == r.cell).collect();
        match verdicts.iter().find(|v| v.verdict == Verdict::Fail) {
            Some(failed) => passed_over.push((r.cell, format!("it fails {}", failed.threshold))),
            None => qualified.push((r, verdicts.len())),
        }
    }
    let Some(((best, thresholds_met), rest)) = qualified.split_first() else {
        let why = passed_over
            .first()
            .map(|(cell, why)| format!(" ({cell}: {why})"))
            .unwrap_or_default();
        return Recommendation::none(
            true,
            passed_over,
            format!("No configuration has a capacity at the SLO{why}, so none is recommended."),
        );
    };
    let alternatives: Vec<Alternative> = rest
        .iter()
        .map(|(r, _)| Alternative {
            cell: r.cell.clone(),
            reserved_cpu: r.reserved_cpu,
            // For any traffic both hold, the CPU each needs is the traffic over its rate per
            // core: the best needs this much less.
            percent_less: (1.0 - r.per_cpu() / best.per_cpu()) * 100.0,
            margin: None,
        })
        .collect();
    let head = format!(
        "{} holds the most traffic per reserved CPU at the SLO: {} rps on {} (CPU limit x \
         replicas), {} rps per CPU",
        best.cell,
        rate_text(best.held),
        cpus(best.reserved_cpu),
        per_cpu_text(best.per_cpu())
    );
    let sentence = if alternatives.is_empty() {
        format!("{head}, the only configuration with a capacity.")
    } else {
        let others: Vec<String> = rest
            .iter()
            .zip(&alternatives)
            .map(|((r, _), a)| {
                format!(
                    "{} {} ({:.0}% less CPU for the same traffic)",
                    r.cell,
                    per_cpu_text(r.per_cpu()),
                    a.percent_less
                )
            })
            .collect();
        bounded(&format!("{head}; against "), &others, ", ", ".")
    };
    Recommendation {
        cell: Some(best.cell.clone()),
        reserved_cpu: Some(best.reserved_cpu),
        margin: None,
        service_level: true,
        thresholds_met: *thresholds_met,
        alternatives,
        passed_over,
        sentence,
    }
}
