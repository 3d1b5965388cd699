//! Cells ranked by capacity per reserved CPU: the comparison of a run that searched.
//!
//! A searched cell's results are its confirmation probe, at the rate that cell held. Rates
//! differ from cell to cell, so latencies are not compared across them (a cell that held
//! less traffic would look faster); the traffic held is. What a configuration costs is what
//! it reserves (CPU limit x replicas, `cells[].reservedCpu`), so cells rank by the rate held
//! per reserved core: the most traffic for the CPU a cluster schedules and bills.

use crate::engine::capacity::probe::rate_text;
use crate::resource::{CellPhase, CellStatus};

/// A cell whose search found its capacity, with what it reserves.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The cell.
    pub cell: String,
    /// The total rate it held at the SLO, requests per second.
    pub held: f64,
    /// The CPU it reserves, cores.
    pub reserved_cpu: f64,
}

impl Ranked {
    /// Requests per second held per reserved core.
    pub fn per_cpu(&self) -> f64 {
        self.held / self.reserved_cpu
    }
}

/// The cells of a run that searched: those ranked, best first, and those that could not be,
/// each with why.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranking {
    /// Cells with a capacity and a reservation, the most requests per reserved core first
    /// (ties: the higher rate held, then the earlier cell).
    pub ranked: Vec<Ranked>,
    /// Cells that searched (or were to) without a capacity to rank, with why.
    pub unranked: Vec<(String, String)>,
}

/// The capacity ranking of `cells`; `None` when no cell searched (the run has no
/// `spec.capacity`, or it was refused before any cell started).
pub fn rank(cells: &[CellStatus]) -> Option<Ranking> {
    if cells.iter().all(|c| c.capacity.is_none()) {
        return None;
    }
    let mut ranking = Ranking::default();
    for c in cells {
        match ranked(c) {
            Ok(r) => ranking.ranked.push(r),
            Err(why) => ranking.unranked.push((c.name.clone(), why)),
        }
    }
    // Stable: at an equal rate per core and an equal rate, the earlier cell stays first.
    ranking.ranked.sort_by(|a, b| {
        b.per_cpu()
            .total_cmp(&a.per_cpu())
            .then(b.held.total_cmp(&a.held))
    });
    Some(ranking)
}

/// `c` as a ranked cell, or why it is not one.
fn ranked(c: &CellStatus) -> Result<Ranked, String> {
    if c.phase != CellPhase::Succeeded {
        return Err(format!("it did not succeed ({})", c.phase));
    }
    let Some(cap) = &c.capacity else {
        return Err("it was not searched".into());
    };
    let held = match (cap.found, cap.held_rate) {
        (true, Some(h)) if h > 0.0 => h,
        _ => return Err(format!("no capacity found: {}", cap.message)),
    };
    match c.reserved_cpu.filter(|r| *r > 0.0) {
        Some(reserved_cpu) => Ok(Ranked {
            cell: c.name.clone(),
            held,
            reserved_cpu,
        }),
        None => Err("its reserved CPU is not recorded (cells[].reservedCpu)".into()),
    }
}

/// Requests per second per core as the headline and sentences show it: one decimal below
/// 100, whole above.
pub fn per_cpu_text(per_cpu: f64) -> String {
    if per_cpu >= 100.0 {
        format!("{per_cpu:.0}")
    } else {
        format!("{per_cpu:.1}")
    }
}

/// One line for `kubectl get` and the report's head: the best cell's capacity per reserved
/// CPU and how many times less the last ranked cell holds per core, e.g. `capacity:
/// pool-x2 103 rps per reserved CPU (412 rps held; single-x1 3.1x less)`. `None` when no
/// cell searched.
pub fn headline(ranking: &Ranking) -> Option<String> {
    let Some(best) = ranking.ranked.first() else {
        let why = ranking
            .unranked
            .first()
            .map(|(cell, why)| format!(": {cell}: {why}"))
            .unwrap_or_default();
        return Some(format!("capacity: no cell has one{why}"));
    };
    let mut line = format!(
        "capacity: {} {} rps per reserved CPU ({} rps held",
        best.cell,
        per_cpu_text(best.per_cpu()),
        rate_text(best.held)
    );
    if let Some(worst) = ranking.ranked.last().filter(|w| w.cell != best.cell) {
        line.push_str(&format!(
            "; {} {:.1}x less",
            worst.cell,
            best.per_cpu() / worst.per_cpu()
        ));
    }
    line.push(')');
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::capacity::CapacityStatus;

    fn cell(name: &str, held: Option<f64>, reserved: f64) -> CellStatus {
        CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            reserved_cpu: Some(reserved),
            capacity: Some(CapacityStatus {
                found: held.is_some(),
                held_rate: held,
                message: if held.is_some() {
                    "found".into()
                } else {
                    "failed at the start rate, 10 rps".into()
                },
                ..CapacityStatus::default()
            }),
            ..CellStatus::default()
        }
    }

    #[test]
    fn cells_rank_by_the_rate_held_per_reserved_core_not_by_the_rate_alone() {
        // single-x2 holds the most traffic, but on 4 cores; pool-x1 holds more per core.
        let cells = [
            cell("single-x2", Some(120.0), 4.0),
            cell("pool-x1", Some(90.0), 2.0),
            cell("single-x1", Some(50.0), 2.0),
            cell("broken", None, 2.0),
        ];
        let r = rank(&cells).unwrap();
        let order: Vec<&str> = r.ranked.iter().map(|c| c.cell.as_str()).collect();
        assert_eq!(order, ["pool-x1", "single-x2", "single-x1"]);
        assert_eq!(r.ranked[0].per_cpu(), 45.0);
        assert_eq!(
            r.unranked,
            [(
                "broken".to_owned(),
                "no capacity found: failed at the start rate, 10 rps".to_owned()
            )]
        );
        assert_eq!(
            headline(&r).unwrap(),
            "capacity: pool-x1 45.0 rps per reserved CPU (90 rps held; single-x1 1.8x less)"
        );
    }

    #[test]
    fn a_run_without_a_search_has_no_capacity_ranking_and_one_without_a_capacity_says_why() {
        let plain = CellStatus {
            name: "a".into(),
            phase: CellPhase::Succeeded,
            ..CellStatus::default()
        };
        assert_eq!(rank(std::slice::from_ref(&plain)), None);
        let r = rank(&[cell("a", None, 1.0)]).unwrap();
        assert_eq!(
            headline(&r).unwrap(),
            "capacity: no cell has one: a: no capacity found: failed at the start rate, 10 rps"
        );
        // A failed cell is not ranked, whatever its search held.
        let mut failed = cell("b", Some(80.0), 1.0);
        failed.phase = CellPhase::Failed;
        let r = rank(&[failed]).unwrap();
        assert!(r.ranked.is_empty());
        assert!(r.unranked[0].1.starts_with("it did not succeed"), "{r:?}");
    }
}
