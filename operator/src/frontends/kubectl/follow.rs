//! A run's progress on a cluster, from its status: each status the watch delivers becomes the
//! [`progress::Update`]s the local runner would have shown for the same steps, so the display
//! (a live bar on a terminal, a line per phase elsewhere) is the same one.
//!
//! A measurement is a cell's repetition: with `spec.repeat` above 1, each ends as an entry of
//! `cells[].repetitions`; without, as the cell's own phase. The status carries no live figures
//! while the load runs, so a phase's line is printed when its figures arrive, with the
//! measurement's result. Watch events may be coalesced (several status writes in one event, or
//! missed across a reconnect): whatever ended since the last status is shown in the order it
//! ended, each measurement with its start, its phases and its end.
//!
//! With `spec.capacity` each probe of a search is shown as the local runner shows it, from the
//! probes the status records (`cells[].capacity.probes`), and the count is of searches.

use std::borrow::Cow;
use std::time::Duration;

use crate::engine::Step;
use crate::engine::schedule::Measurements;
use crate::frontends::progress::{self, Display, PhaseFigures, StreamProgress};
use crate::resource::ValidatedRun;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellResult, CellStatus, Repeat, RunPhase};

/// Shown as a measurement's start when the status moved past its deployment before the
/// follower saw it.
pub const START_UNSEEN: &str = "started";

/// What has been shown of a run so far.
#[derive(Debug, Clone)]
pub struct Follower {
    repeat: Repeat,
    /// With spec.capacity: a measurement is a probe, and the count is of searches.
    searches: bool,
    /// Each phase's planned length (what a phase line says it ran for).
    phases: Vec<(String, Duration)>,
    /// Per cell: how many of its measurements' ends have been shown.
    shown_ends: Vec<usize>,
    /// Measurements ended and shown, over all cells.
    done: usize,
    /// The measurement shown as under way.
    current: Option<CurrentStep>,
    /// The last run-level message shown while the run waits (queued, refused).
    waiting: Option<String>,
}

#[derive(Debug, Clone)]
struct CurrentStep {
    step: Step,
    /// The cell message last shown for it.
    said: Option<String>,
    /// When its load started (the status's `loadStartTime`, seconds since the epoch).
    load_started: Option<i64>,
}

/// One measurement that ended, as the status records it.
struct Ended<'a> {
    cell: usize,
    repetition: u32,
    phase: CellPhase,
    reason: Option<&'a str>,
    message: Option<Cow<'a, str>>,
    results: &'a [CellResult],
    at: Option<i64>,
}

impl Follower {
    /// A follower of `run`, which has shown nothing yet.
    pub fn new(run: &ValidatedRun) -> Follower {
        let w = &run.spec().workload;
        Follower {
            repeat: run.repeat(),
            searches: run.measure().probes(),
            phases: w
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.duration.get()))
                .collect(),
            shown_ends: vec![0; run.cells().len()],
            done: 0,
            current: None,
            waiting: None,
        }
    }

    /// Measurements shown as ended.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Shows on `display` what changed in `status` since the last one.
    pub fn update(&mut self, status: &BenchmarkRunStatus, display: &mut Display) {
        if status.phase == RunPhase::Pending || status.cells.is_empty() {
            self.show_waiting(status, display);
        }
        if self.shown_ends.len() < status.cells.len() {
            self.shown_ends.resize(status.cells.len(), 0);
        }
        let count = Measurements::of(status, self.repeat);
        let mut ended = self.newly_ended(status);
        // In the order they ended (a coalesced update can hold several), matrix order on ties.
        ended.sort_by_key(|e| (e.at, e.cell, e.repetition));
        for e in ended {
            self.show_ended(&e, count, display);
        }
        let active = status
            .cells
            .iter()
            .enumerate()
            .find(|(_, c)| matches!(c.phase, CellPhase::Deploying | CellPhase::Running));
        if let Some((i, c)) = active {
            self.show_active(i, c, count, display);
        }
    }

    /// Queued behind other runs, or refused before any cell: the run's message says, once.
    fn show_waiting(&mut self, status: &BenchmarkRunStatus, display: &mut Display) {
        if let Some(m) = &status.message
            && self.waiting.as_ref() != Some(m)
        {
            display.line(m);
            self.waiting = Some(m.clone());
        }
    }

    /// Shows measurement `e` from its start (unless shown already) through its phases to its
    /// end; `count`: the run's measurements as its status counts them.
    fn show_ended(&mut self, e: &Ended, count: Measurements, display: &mut Display) {
        let step = Step {
            cell: e.cell,
            repetition: e.repetition,
        };
        let started = self.current.as_ref().is_some_and(|c| c.step == step);
        if !started {
            self.show_start(step, START_UNSEEN, count, display);
        }
        for figures in self.phase_figures(e.results) {
            display.show(progress::Update::PhaseEnded {
                step,
                figures: &figures,
            });
        }
        let message = e.message.as_deref().unwrap_or_default();
        if e.phase == CellPhase::Succeeded {
            display.show(progress::Update::Succeeded {
                step,
                detail: message,
            });
        } else {
            display.show(progress::Update::Failed {
                step,
                reason: e.reason.unwrap_or_default(),
                message,
            });
        }
        self.shown_ends[e.cell] += 1;
        self.done += 1;
        self.current = None;
    }

    /// Shows the measurement under way in cell `i` (`c`): its start when it is new, else its
    /// cell's message when that changed; and keeps when its load started, for [`Self::tick`].
    fn show_active(
        &mut self,
        i: usize,
        c: &CellStatus,
        count: Measurements,
        display: &mut Display,
    ) {
        let load_started = (c.phase == CellPhase::Running)
            .then(|| {
                c.load_start_time
                    .as_ref()
                    .map(crate::resource::conditions::secs_of)
            })
            .flatten();
        let step = Step {
            cell: i,
            repetition: self.repetition_under_way(c),
        };
        if self.current.as_ref().is_none_or(|cur| cur.step != step) {
            let detail = c.message.as_deref().unwrap_or("deploying");
            self.show_start(step, detail, count, display);
            self.current = Some(CurrentStep {
                step,
                said: c.message.clone(),
                load_started: None,
            });
        } else if let Some(cur) = &mut self.current
            && c.message.is_some()
            && cur.said != c.message
        {
            // e.g. "load generator running against ...", or a wait for the previous pods.
            display.show(progress::Update::Doing {
                step: cur.step,
                detail: c.message.as_deref().unwrap_or_default(),
            });
            cur.said = c.message.clone();
        }
        if let Some(cur) = &mut self.current {
            cur.load_started = load_started;
        }
    }

    /// Shows measurement `step` starting (`detail` says what starts), after the count of those
    /// done out of the total: the status's count of searches with spec.capacity (a probe is
    /// not a search done), else the measurements shown as ended.
    fn show_start(&self, step: Step, detail: &str, count: Measurements, display: &mut Display) {
        let done = if self.searches { count.done } else { self.done };
        display.show(progress::Update::Measurements {
            done,
            total: count.total,
        });
        display.show(progress::Update::Started { step, detail });
    }

    /// A second has passed (`now`: seconds since the epoch): tells the display how far the load
    /// under way is, so that the live estimate of the time left moves between status updates.
    pub fn tick(&mut self, now: i64, display: &mut Display) {
        if let Some(cur) = &self.current
            && let Some(started) = cur.load_started
        {
            let elapsed = Duration::from_secs(now.saturating_sub(started).max(0) as u64);
            display.show(progress::Update::LoadElapsed { elapsed });
        }
    }

    /// The measurements `status` records as ended that have not been shown.
    fn newly_ended<'a>(&self, status: &'a BenchmarkRunStatus) -> Vec<Ended<'a>> {
        let mut out = Vec::new();
        for (i, c) in status.cells.iter().enumerate() {
            let ends = ends_of(i, c, self.repeat.is_repeated());
            out.extend(ends.into_iter().skip(self.shown_ends[i]));
        }
        out
    }

    /// Which repetition of `cell` is under way: the one after those it recorded (of a search,
    /// the probe after those it recorded).
    fn repetition_under_way(&self, cell: &CellStatus) -> u32 {
        if let Some(cap) = &cell.capacity {
            cap.probes.len() as u32 + 1
        } else if self.repeat.is_repeated() {
            cell.repetitions.len() as u32 + 1
        } else {
            1
        }
    }

    /// A phase line's figures per measured phase, in the order the results hold them.
    fn phase_figures(&self, results: &[CellResult]) -> Vec<PhaseFigures> {
        let mut out: Vec<PhaseFigures> = Vec::new();
        for r in results {
            let stream =
                StreamProgress::over_phase(&r.endpoint, r.requests, r.errors, r.rps, r.latency_ms);
            match out.iter_mut().find(|p| p.phase == r.phase) {
                Some(p) => p.streams.push(stream),
                None => {
                    let planned = self
                        .phases
                        .iter()
                        .find(|(name, _)| *name == r.phase)
                        .map_or(0.0, |(_, d)| d.as_secs_f64());
                    out.push(PhaseFigures {
                        phase: r.phase.clone(),
                        elapsed_secs: planned,
                        streams: vec![stream],
                    });
                }
            }
        }
        out
    }
}

/// The measurements cell `i` records as ended, in the order measured.
fn ends_of(i: usize, c: &CellStatus, repeated: bool) -> Vec<Ended<'_>> {
    let secs = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.as_ref().map(crate::resource::conditions::secs_of)
    };
    if let Some(cap) = &c.capacity {
        return probe_ends(i, c, cap);
    }
    if repeated {
        return c
            .repetitions
            .iter()
            .map(|r| Ended {
                cell: i,
                repetition: r.repetition,
                phase: r.phase,
                reason: r.reason.as_deref(),
                message: r.message.as_deref().map(Cow::Borrowed),
                results: &r.results,
                at: secs(&r.completion_time),
            })
            .collect();
    }
    match c.phase {
        CellPhase::Succeeded | CellPhase::Failed => vec![Ended {
            cell: i,
            repetition: 1,
            phase: c.phase,
            reason: c.reason.as_deref(),
            message: c.message.as_deref().map(Cow::Borrowed),
            results: &c.results,
            at: secs(&c.completion_time),
        }],
        _ => Vec::new(),
    }
}

/// The probes cell `i` (`c`, searching as `cap` says) records as ended, in their order, each
/// in the words the local runner shows it in; then the cell's failure, when one ended its
/// search. A probe keeps no figures of its own in the status, so none are shown for it.
fn probe_ends<'a>(
    i: usize,
    c: &'a CellStatus,
    cap: &'a crate::resource::capacity::CapacityStatus,
) -> Vec<Ended<'a>> {
    let mut ends: Vec<Ended> = cap
        .probes
        .iter()
        .map(|p| Ended {
            cell: i,
            repetition: p.probe,
            phase: CellPhase::Succeeded,
            reason: None,
            message: Some(Cow::Owned(crate::engine::capacity::probe_words(p))),
            results: &[],
            at: None,
        })
        .collect();
    if c.phase == CellPhase::Failed {
        ends.push(Ended {
            cell: i,
            repetition: cap.probes.len() as u32 + 1,
            phase: c.phase,
            reason: c.reason.as_deref(),
            message: c.message.as_deref().map(Cow::Borrowed),
            results: &c.results,
            at: None,
        });
    }
    ends
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::engine::{self, Cause, Ctx, Event, Measured};
    use crate::fixtures::{Buffer, connections, endpoint, phase};
    use crate::resource::conditions::time_from_secs;
    use crate::resource::{BenchmarkRun, Configuration, Workload};
    use crate::resource::{CellResult, LatencyMs};

    /// Two cells of one CPU each; a warm-up of 1 s and one phase of 5 s.
    fn two_cells() -> ValidatedRun {
        let run = BenchmarkRun::sample()
            .named("two")
            .with_cell(Configuration::named("a").cpu("1"))
            .with_cell(Configuration::named("b").cpu("1"))
            .with_workload(Workload {
                endpoints: vec![endpoint("fast", "/fast")],
                phases: vec![phase("p", "5s", [connections("fast", 1)])],
                ..Workload::default()
            })
            .with_warmup("1s");
        ValidatedRun::new(run).unwrap()
    }

    /// The statuses the engine writes for `events`, one after each.
    fn statuses(run: &ValidatedRun, events: Vec<Event>) -> Vec<BenchmarkRunStatus> {
        let mut status = BenchmarkRunStatus::default();
        let mut out = Vec::new();
        for (i, e) in events.into_iter().enumerate() {
            let now = time_from_secs(1_800_000_000 + i as i64);
            engine::reduce(&mut status, e, &Ctx::of(run, Some(1), &now));
            out.push(status.clone());
        }
        out
    }

    fn measured() -> Box<Measured> {
        Box::new(Measured {
            results: vec![CellResult {
                phase: "p".into(),
                endpoint: "fast".into(),
                requests: 500,
                samples: 500,
                rps: 100.0,
                latency_ms: Some(LatencyMs {
                    p50: 2.0,
                    p99: 9.0,
                    ..LatencyMs::default()
                }),
                ..CellResult::default()
            }],
            message: "measured".into(),
            ..Measured::default()
        })
    }

    #[test]
    fn a_status_that_moved_on_unseen_still_shows_every_measurement_in_order() {
        let run = two_cells();
        let all = statuses(
            &run,
            vec![
                Event::admitted(run.cells()),
                Event::CellDeploying {
                    cell: 0,
                    message: "deploying a".into(),
                },
                Event::LoadStarted {
                    cell: 0,
                    message: "load on a".into(),
                    target_pods: vec![],
                },
                Event::CellMeasured {
                    cell: 0,
                    measured: measured(),
                },
                Event::CellDeploying {
                    cell: 1,
                    message: "deploying b".into(),
                },
                Event::CellFailed {
                    cell: 1,
                    cause: Cause::NeverReady,
                    message: "never ready".into(),
                    overhead_seconds: None,
                    enforcement: None,
                },
                Event::Finished { interrupted: false },
            ],
        );
        let plan = crate::frontends::progress::Plan::of(&run);

        // Only the last status arrives (a watch that reconnected late): both measurements are
        // shown, each with a start, in the order they ended; again, nothing new.
        let out = Buffer::default();
        let mut display = Display::plain(plan.clone(), Box::new(out.clone()));
        let mut f = Follower::new(&run);
        f.update(all.last().unwrap(), &mut display);
        f.update(all.last().unwrap(), &mut display);
        let text = out.text();
        assert_eq!(
            text,
            "[1/2] a | started\n\
             [1/2] a | p 5 s: fast 100.0 rps, p50 2.0 ms, p99 9.0 ms\n\
             [1/2] a | done (measured)\n\
             [2/2] b | started\n\
             [2/2] b | FAILED (NeverReady): never ready\n"
        );
        assert_eq!(f.done(), 2);

        // Every status in turn: the deployments' own words start each measurement.
        let out = Buffer::default();
        let mut display = Display::plain(plan, Box::new(out.clone()));
        let mut f = Follower::new(&run);
        for s in &all {
            f.update(s, &mut display);
        }
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "[1/2] a | deploying a");
        assert_eq!(lines[3], "[2/2] b | deploying b");
        assert_eq!(lines.len(), 5, "{text}");
    }

    /// A probe of `rate` rps with p99 `p99` ms, every send on time and answered.
    fn probe(rate: f64, p99: f64) -> Box<Measured> {
        let samples = (rate * 10.0) as u64;
        Box::new(Measured {
            results: vec![CellResult {
                phase: crate::resource::capacity::PROBE_PHASE.into(),
                endpoint: "fast".into(),
                requests: samples,
                samples,
                rps: rate,
                latency_ms: Some(LatencyMs {
                    p50: p99 / 2.0,
                    p90: p99,
                    p99,
                    p999: p99,
                    max: p99,
                    mean: p99 / 2.0,
                }),
                ..CellResult::default()
            }],
            sends: Some(crate::engine::Sends {
                offered: rate * 10.0,
                late: 0,
                unanswered: 0,
                sent_p99_ms: Some(p99),
            }),
            message: "measured".into(),
            ..Measured::default()
        })
    }

    /// With spec.capacity each probe is a line of its own, numbered as the local runner
    /// numbers it, and the count is of searches: two probes into the first search, the first
    /// of two is under way (the display counts the one under way).
    #[test]
    fn a_search_shows_each_probe_and_counts_searches() {
        let run = ValidatedRun::parse(include_str!("../../../../manifests/samples/capacity.yaml"))
            .unwrap();
        let all = statuses(
            &run,
            vec![
                Event::admitted(run.cells()),
                Event::CellDeploying {
                    cell: 0,
                    message: "deploying".into(),
                },
                Event::LoadStarted {
                    cell: 0,
                    message: "load".into(),
                    target_pods: vec![],
                },
                Event::CellMeasured {
                    cell: 0,
                    measured: probe(10.0, 30.0),
                },
                Event::LoadStarted {
                    cell: 0,
                    message: "load again".into(),
                    target_pods: vec![],
                },
                Event::CellMeasured {
                    cell: 0,
                    measured: probe(20.0, 500.0),
                },
            ],
        );
        let plan = crate::frontends::progress::Plan::of(&run);
        let out = Buffer::default();
        let mut display = Display::plain(plan, Box::new(out.clone()));
        let mut f = Follower::new(&run);
        for s in &all {
            f.update(s, &mut display);
        }
        let text = out.text();
        assert!(
            text.contains("[1/2] single-1cpu probe 1 | done (probe 1 at 10 rps held)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "[1/2] single-1cpu probe 2 | done (probe 2 at 20 rps failed: probe/fast p99 \
                 500.0 ms, not below 100.0 ms at 20 rps)\n"
            ),
            "{text}"
        );
        assert!(text.contains("[1/2] single-1cpu probe 3 | "), "{text}");
        assert!(text.lines().all(|l| l.starts_with("[1/2] ")), "{text}");
    }
}
