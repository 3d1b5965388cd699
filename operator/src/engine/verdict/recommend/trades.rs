//! Without a service level: no recommendation, and what each cell traded instead.
//!
//! Cells of one matrix that share a phase's load serve different mixes of it: one keeps the
//! heavy endpoint's latency down and serves it at a higher rate, another serves the cheap
//! endpoint faster and the heavy one less. Which is better depends on a service level the run
//! did not state, and no cost can settle it: the CPU used per request falls for the cell that
//! served fewer heavy requests, and the CPU reserved says nothing about how well a cell served.
//! So the sentence names no cell; it lists each one's p99 and rate on the streams where
//! endpoints competed, and says which cell reserves the least CPU when reservations differ, as
//! a fact about the configuration, not as a recommendation.

use super::{Recommendation, bounded, cpus, millis};
use crate::resource::status::Percentile;
use crate::resource::{CellPhase, CellResult, CellStatus};

const NO_SERVICE_LEVEL: &str =
    "No service level was given (spec.thresholds), so none is recommended";

/// The outcome of a run without thresholds: no cell, and a sentence with the trades.
pub(super) fn without_service_level(cells: &[CellStatus]) -> Recommendation {
    let passed_over = cells
        .iter()
        .filter(|c| c.phase != CellPhase::Succeeded)
        .map(|c| (c.name.clone(), format!("it did not succeed ({})", c.phase)))
        .collect();
    let served: Vec<&CellStatus> = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Succeeded)
        .collect();
    let sentence = if served.is_empty() {
        "No service level was given (spec.thresholds) and no configuration succeeded, so none \
         is recommended."
            .to_owned()
    } else {
        sentence(&served)
    };
    Recommendation::none(false, passed_over, sentence)
}

/// "No service level was given ...; <reservations>; what each cell traded: <cell>: <figures>;
/// <cell>: <figures>." for the cells that succeeded (at least one).
fn sentence(served: &[&CellStatus]) -> String {
    let reserved: Vec<(&str, f64)> = served
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.reserved_cpu?)))
        .collect();
    // A status from before reservations were recorded says nothing about them.
    let known = reserved.len() == served.len();
    let all_equal = reserved
        .windows(2)
        .all(|w| millis(w[0].1) == millis(w[1].1));
    let mut head = format!("{NO_SERVICE_LEVEL}; ");
    if known {
        head.push_str(&reservations(&reserved, all_equal));
    }
    head.push_str(if served.len() == 1 {
        "what it served: "
    } else {
        "what each cell traded: "
    });
    let parts = traded(served, known && !all_equal);
    bounded(&head, &parts, "; ", ".")
}

/// What the cells that succeeded reserve, from the reservation of every one of them, ending in
/// "; ": the one figure when they reserve the same, else which reserves the least and which the
/// most.
fn reservations(reserved: &[(&str, f64)], all_equal: bool) -> String {
    match reserved {
        [] => String::new(),
        [(_, cores)] => format!("the one cell that succeeded reserves {}; ", cpus(*cores)),
        [(_, cores), ..] if all_equal => {
            format!("every cell that succeeded reserves {}; ", cpus(*cores))
        }
        _ => {
            // First of the smallest and first of the largest, in matrix order.
            let least =
                reserved.iter().fold(
                    reserved[0],
                    |a, &b| if millis(b.1) < millis(a.1) { b } else { a },
                );
            let most =
                reserved.iter().fold(
                    reserved[0],
                    |a, &b| if millis(b.1) > millis(a.1) { b } else { a },
                );
            format!(
                "{} reserves the least CPU (CPU limit x replicas), {} (the most: {}, {}), which \
                 is cheaper to run but says nothing about how well it served; ",
                least.0,
                cpus(least.1),
                most.0,
                cpus(most.1)
            )
        }
    }
}

/// Each cell's figures on the [`traded_streams`], "<cell>: <figures>", the cell's reservation
/// beside its name `with_reservation`. The first cell names each stream; the others follow in
/// the same order.
fn traded(served: &[&CellStatus], with_reservation: bool) -> Vec<String> {
    let streams = traded_streams(served);
    served
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = match c.reserved_cpu {
                Some(cores) if with_reservation => format!("{} ({})", c.name, cpus(cores)),
                _ => c.name.clone(),
            };
            let figures: Vec<String> = streams
                .iter()
                .map(|(phase, endpoint)| {
                    let result = c
                        .results
                        .iter()
                        .find(|r| &r.phase == phase && &r.endpoint == endpoint);
                    let figures = stream_figures(result);
                    if i == 0 {
                        format!("{phase}/{endpoint} p99 {figures}")
                    } else {
                        figures
                    }
                })
                .collect();
            format!("{name}: {}", figures.join(", "))
        })
        .collect()
}

/// The streams to show: those of the phases that load more than one endpoint at once, where
/// a cell's way of serving trades one endpoint against another; every stream when no phase
/// does. In the order the cells' results first list them.
fn traded_streams(served: &[&CellStatus]) -> Vec<(String, String)> {
    let mut streams: Vec<(String, String)> = Vec::new();
    for r in served.iter().flat_map(|c| &c.results) {
        let key = (r.phase.clone(), r.endpoint.clone());
        if !streams.contains(&key) {
            streams.push(key);
        }
    }
    let shared = |phase: &str| streams.iter().filter(|(p, _)| p == phase).count() > 1;
    let traded: Vec<(String, String)> =
        streams.iter().filter(|(p, _)| shared(p)).cloned().collect();
    if traded.is_empty() { streams } else { traded }
}

/// A stream's p99 and rate, "19 ms at 230.0 rps": "—" for a p99 no request gave, and the sample
/// count beside a p99 that rests on too few samples to be compared.
fn stream_figures(result: Option<&CellResult>) -> String {
    let Some(r) = result else {
        return "— (not measured)".to_owned();
    };
    let p99 = match &r.latency_ms {
        None => "—".to_owned(),
        Some(l) if l.p99 >= 10.0 => format!("{:.0} ms", l.p99),
        Some(l) => format!("{:.1} ms", l.p99),
    };
    let thin = if r.latency_ms.is_some() && !r.supports(Percentile::P99) {
        format!(" (from {} samples)", r.samples)
    } else {
        String::new()
    };
    format!("{p99}{thin} at {:.1} rps", r.rps)
}
