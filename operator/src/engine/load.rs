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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidatedRun;
    use crate::resource::capacity::CapacityStatus;
    use crate::resource::{CellStatus, validate};

    fn run(extra: &str) -> ValidatedRun {
        let run = validate::parse_benchmark_run(&format!(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: t}}
spec:
  configurations: [{{name: a, cpu: "1"}}]
  workload:
    endpoints: [{{name: fast, path: /fast}}, {{name: slow, path: /slow}}]
    warmup: 2s
{extra}"#
        ))
        .unwrap();
        ValidatedRun::new(run).unwrap()
    }

    const AT: Step = Step {
        cell: 0,
        repetition: 1,
    };

    /// A fixed load runs the workload as written, and is no probe.
    #[test]
    fn a_fixed_load_is_the_runs_own_workload() {
        let v =
            run("    phases: [{name: p, duration: 3s, load: [{endpoint: fast, connections: 2}]}]");
        let load = Load::of(v.measure(), &BenchmarkRunStatus::default(), AT);
        assert_eq!(load.workload, v.spec().workload);
        assert_eq!(load.probe, None);
        assert!(!load.no_success_is_a_result() && !load.target_may_be_kept());
        assert_eq!(load.planned(), std::time::Duration::from_secs(5));
    }

    /// A probe runs the mix at the rate the search asks of the cell next (the start rate
    /// before any), and says the settle it waited when its target was kept.
    #[test]
    fn a_probe_is_the_mix_at_the_searched_rate_and_says_its_settle() {
        let v = run(r#"  capacity:
    slo: [{endpoint: fast, p99: {below: 100ms}}]
    mix: [{endpoint: fast, weight: 3}, {endpoint: slow, weight: 1}]
    startRate: 40
    probeDuration: 5s"#);
        let rates = |load: &Load| -> Vec<f64> {
            let [phase] = load.workload.phases.as_slice() else {
                panic!("one phase: {load:?}")
            };
            phase.load.iter().filter_map(|s| s.rate).collect()
        };
        let first = Load::of(v.measure(), &BenchmarkRunStatus::default(), AT);
        assert_eq!(rates(&first), [30.0, 10.0]);
        assert_eq!(
            first.probe,
            Some(Probe {
                rate: 40.0,
                settled: None
            })
        );
        assert!(first.no_success_is_a_result() && first.target_may_be_kept());
        assert_eq!(first.planned(), std::time::Duration::from_secs(7));
        let status = BenchmarkRunStatus {
            cells: vec![CellStatus {
                // The first probe held at the start rate: the search asks for twice it.
                capacity: Some(CapacityStatus {
                    probes: vec![crate::resource::capacity::ProbeStatus {
                        probe: 1,
                        rate: 40.0,
                        verdict: crate::resource::capacity::ProbeVerdict::Held,
                        ..Default::default()
                    }],
                    settle_seconds: Some(3),
                    ..CapacityStatus::default()
                }),
                ..CellStatus::default()
            }],
            ..BenchmarkRunStatus::default()
        };
        let kept = Load::of(v.measure(), &status, AT);
        assert_eq!(rates(&kept), [60.0, 20.0]);
        assert_eq!(kept.on_kept_target(), Some(3));
    }
}
