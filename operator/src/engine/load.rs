//! What a step's load generator runs, worked out once by the engine and carried by
//! [`Command::StartLoad`](super::machine::Command::StartLoad): the executors write it into the
//! load generator's plan as it is, and neither asks which kind of run it serves.

use std::time::Duration;

use super::Step;
use crate::resource::capacity::CapacitySpec;
use crate::resource::measure::{Capacity, Sizing};
use crate::resource::{BenchmarkRunStatus, Measure, Workload};

/// The load of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The warm-up and phases to run: the run's own workload for a fixed load; for a probe of
    /// a capacity search, its one open-loop phase at the probe's rate.
    pub workload: Workload,
    /// What makes the load a probe; `None` for a fixed load.
    pub probe: Option<Probe>,
}

/// A probe of a cell's capacity search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Its total rate, requests per second over every endpoint of the mix.
    pub rate: f64,
    /// The seconds it waited, settling, on the target the cell's previous probe ran on;
    /// `None` when its target was deployed for it.
    pub settled: Option<u32>,
}

impl Load {
    /// The load of step `at` of a run measuring `measure`, as `status` stands: a probe is at
    /// the rate the search (or a sizing check) asks of its cell next.
    pub fn of(measure: &Measure, status: &BenchmarkRunStatus, at: Step) -> Load {
        match measure {
            Measure::FixedLoad(fixed) => Load {
                workload: fixed.workload.clone(),
                probe: None,
            },
            Measure::Capacity(Capacity {
                search, workload, ..
            })
            | Measure::Sizing(Sizing {
                search, workload, ..
            }) => Load::probe(search, workload, status, at),
        }
    }

    /// The probe of `search` over `workload`'s endpoints that step `at` runs next.
    fn probe(
        search: &CapacitySpec,
        workload: &Workload,
        status: &BenchmarkRunStatus,
        at: Step,
    ) -> Load {
        let cell = status.cells.get(at.cell);
        let rate = cell.map_or(search.start_rate, |c| {
            super::capacity::probe_rate(search, c)
        });
        let settled = cell
            .and_then(|c| c.capacity.as_ref())
            .and_then(|c| c.settle_seconds);
        Load {
            workload: search.probe_workload(workload, rate),
            probe: Some(Probe { rate, settled }),
        }
    }

    /// How long the load is planned to take: its warm-up and phases.
    pub fn planned(&self) -> Duration {
        self.workload.planned_load()
    }

    /// Whether a load that nothing answered is a result all the same (the load generator then
    /// reports it instead of failing): a probe that nothing answered is a failed probe, judged
    /// from its result.
    pub fn no_success_is_a_result(&self) -> bool {
        self.probe.is_some()
    }

    /// Whether the step's target may outlive this load: a probe's target may be kept for its
    /// cell's next probe, so collecting the probe reads the target but leaves it running until
    /// the command that ends the probe says ([`Command::EndLoad`] keeps it, [`Command::Stop`]
    /// stops it).
    ///
    /// [`Command::EndLoad`]: super::machine::Command::EndLoad
    /// [`Command::Stop`]: super::machine::Command::Stop
    pub fn target_may_be_kept(&self) -> bool {
        self.probe.is_some()
    }

    /// The seconds this probe waited on the target the previous probe ran on, if it runs on a
    /// kept one.
    pub fn on_kept_target(&self) -> Option<u32> {
        self.probe.and_then(|p| p.settled)
    }
}
