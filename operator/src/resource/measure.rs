//! What a run measures: one of three kinds, decided once when its spec validates.
//!
//! The v1alpha1 spec says the kind by which optional blocks it sets (`capacity`, `sizing`, or
//! neither), and validation refuses the combinations that mean nothing (`sizing` without
//! `capacity`, phases or thresholds beside `capacity`, `repeat` beside `sizing`). A
//! [`ValidatedRun`](super::ValidatedRun) holds the kind as a [`Measure`], so that the engine,
//! the executors and the front-ends ask it which kind of run they serve and get what that kind
//! needs, instead of each testing the spec's options again. A new kind of run is a new variant
//! here: every `match` on a `Measure` then names the places that must handle it.

use super::capacity::CapacitySpec;
use super::sizing::SizingSpec;
use super::thresholds::Threshold;
use super::{BenchmarkRunSpec, Repeat, Workload};

/// The kind of run, with what it measures.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// Each cell at the workload's own load, phase by phase, judged by thresholds; repeated and
    /// paired across variants as `spec.repeat` says.
    FixedLoad(FixedLoad),
    /// Each cell's capacity searched for: the highest total rate it holds at the SLO, probe by
    /// probe; with `spec.repeat` a whole search per round.
    Capacity(Capacity),
    /// The cheapest configuration of a space that holds a traffic, each configuration's
    /// capacity searched for as [`Measure::Capacity`] searches a cell's.
    Sizing(Sizing),
}

/// A run at the workload's own load (a spec without `capacity`).
#[derive(Debug, Clone, PartialEq)]
pub struct FixedLoad {
    /// `spec.workload`: its warm-up and phases are each measurement's load.
    pub workload: Workload,
    /// `spec.thresholds`, judged when the run ends.
    pub thresholds: Vec<Threshold>,
    /// `spec.repeat`: how many times each cell is measured.
    pub repeat: Repeat,
}

/// A capacity search per cell (`spec.capacity` without `spec.sizing`).
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// `spec.capacity`: the SLO, the mix and the bounds of the search.
    pub search: CapacitySpec,
    /// `spec.workload`: the endpoints the mix loads and the warm-up before each probe.
    pub workload: Workload,
    /// `spec.repeat`: the rounds of each cell's search.
    pub repeat: Repeat,
}

/// A sizing search over a space of configurations (`spec.sizing`, with `spec.capacity`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// `spec.sizing`: the space, the traffic to hold and the probes that confirm the answer.
    pub space: SizingSpec,
    /// `spec.capacity`: how each configuration's capacity is searched for.
    pub search: CapacitySpec,
    /// `spec.workload`: the endpoints the mix loads and the warm-up before each probe.
    pub workload: Workload,
}

impl Measure {
    /// The kind of run `spec` asks for. Only validation calls this: a spec with `sizing` but
    /// no `capacity` never validates, so it never reaches here.
    pub(super) fn of(spec: &BenchmarkRunSpec) -> Measure {
        match (&spec.capacity, &spec.sizing) {
            (Some(search), Some(space)) => Measure::Sizing(Sizing {
                space: space.clone(),
                search: search.clone(),
                workload: spec.workload.clone(),
            }),
            (Some(search), None) => Measure::Capacity(Capacity {
                search: search.clone(),
                workload: spec.workload.clone(),
                repeat: spec.repeat,
            }),
            (None, _) => Measure::FixedLoad(FixedLoad {
                workload: spec.workload.clone(),
                thresholds: spec.thresholds.clone(),
                repeat: spec.repeat,
            }),
        }
    }

    /// How many times each cell is measured: a sizing search measures each configuration as
    /// its checks ask, never by rounds.
    pub fn repeat(&self) -> Repeat {
        match self {
            Measure::FixedLoad(f) => f.repeat,
            Measure::Capacity(c) => c.repeat,
            Measure::Sizing(_) => Repeat::default(),
        }
    }

    /// The thresholds judged when the run ends: only a fixed load has any (a search's service
    /// level is its SLO).
    pub fn thresholds(&self) -> &[Threshold] {
        match self {
            Measure::FixedLoad(f) => &f.thresholds,
            Measure::Capacity(_) | Measure::Sizing(_) => &[],
        }
    }

    /// Whether each measurement of a cell is a probe of a capacity search (shown by its
    /// number, the count being of searches) rather than a repetition at the workload's load.
    pub fn probes(&self) -> bool {
        match self {
            Measure::FixedLoad(_) => false,
            Measure::Capacity(_) | Measure::Sizing(_) => true,
        }
    }

    /// The workload one measurement of a cell loads before the engine picks its rate: the
    /// run's own, or a probe's at the search's start rate. What a display plans each
    /// measurement's parts from.
    pub fn first_workload(&self) -> Workload {
        match self {
            Measure::FixedLoad(f) => f.workload.clone(),
            Measure::Capacity(Capacity {
                search, workload, ..
            })
            | Measure::Sizing(Sizing {
                search, workload, ..
            }) => search.probe_workload(workload, search.start_rate),
        }
    }
}
