//! Watching a cell's load until it ends, then stopping the load generator and the replicas
//! with the last readings taken. The runner is woken by what ends and by the load generator's
//! progress lines; the readings at phase boundaries it takes when they are due.

use std::net::SocketAddr;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::CellContext;
use super::loadgen_setup::LoadTiming;
use crate::executors::local::cgroup::CpuUsage;
use crate::executors::local::loadgen::Loadgen;
use crate::executors::local::replica_set::ReplicaSet;
use crate::frontends::progress::{ProgressLine, Update};

/// Each replica's CPU reading at one moment, in replica order (`None`: unreadable).
pub type Readings = Vec<Option<CpuUsage>>;

/// A running load, as the runner watches it.
pub struct Watch {
    load_started: Instant,
    /// The boundaries are planned from the load generator's start, and moved later by how late
    /// its phases really began: each progress line says how many seconds into its phase it
    /// is, and start-up, lead times and /stats reads between phases add up.
    late_by: Duration,
    /// Each replica's CPU at the end of warm-up and of every phase but the last (whose end is
    /// read as the load ends, see [`stop`]); `None` for a boundary the load did not reach.
    pub cpu_at: Vec<Option<Readings>>,
    /// The load generator's exit status, once it has ended.
    pub exited: Option<ExitStatus>,
    /// Whether the load generator's output has closed. Its reader thread hands over every
    /// progress line before it says so, and writes every other line to the log; its exit is
    /// seen by another thread (a pidfd) and can come first, with the last phase's line still
    /// in the pipe.
    output_closed: bool,
    /// Wall time from the load generator's start to its end (or to now, while it runs).
    pub wall: Duration,
}

/// What one look at a running load found.
#[derive(Debug, Default)]
pub struct LoadLook {
    /// A replica exited or lost a process it had started: what happened, and when in the load.
    pub replica_exited: Option<String>,
    /// The load generator has ended and its output has closed.
    pub load_exited: bool,
}

impl Watch {
    /// A load generator started just now.
    pub fn new(timing: &LoadTiming) -> Watch {
        Watch {
            load_started: Instant::now(),
            late_by: Duration::ZERO,
            cpu_at: vec![None; timing.boundaries.len()],
            exited: None,
            output_closed: false,
            wall: Duration::ZERO,
        }
    }

    /// The load generator's output has closed: every progress line it wrote has been handed
    /// over, and every other line is in its log.
    pub fn output_closed(&mut self) {
        self.output_closed = true;
    }

    /// A progress line of the load generator: to the display, and, at a phase's start, how
    /// late the phase began (which moves the boundaries the readings are taken at).
    pub fn progress(&mut self, ctx: &mut CellContext, timing: &LoadTiming, p: &ProgressLine) {
        let figures = &p.figures;
        // A phase's last line comes after its workers have handed in their totals, later
        // than the phase's end by however long that took: it says nothing of lateness.
        if !p.ended
            && let Some(planned) = timing.planned_start(&figures.phase)
        {
            let began = self
                .load_started
                .elapsed()
                .saturating_sub(Duration::from_secs_f64(figures.elapsed_secs.max(0.0)));
            self.late_by = self.late_by.max(began.saturating_sub(planned));
        }
        show(ctx, p);
    }

    /// When the next CPU reading is due: the end of warm-up or of a phase but the last (whose
    /// end is read as the load ends, see [`stop`]), as late as the phases began.
    pub fn next_reading(&self, timing: &LoadTiming) -> Option<Instant> {
        let last = timing.boundaries.len().saturating_sub(1);
        let (_, &b) = self
            .cpu_at
            .iter()
            .zip(&timing.boundaries)
            .take(last)
            .find(|(at, _)| at.is_none())?;
        Some(self.load_started + b + self.late_by)
    }

    /// Takes the CPU readings that are due.
    pub fn take_readings(&mut self, set: &ReplicaSet, timing: &LoadTiming) {
        let elapsed = self.load_started.elapsed();
        let last = timing.boundaries.len().saturating_sub(1);
        for (at, &b) in self.cpu_at.iter_mut().zip(&timing.boundaries).take(last) {
            if at.is_none() && elapsed >= b + self.late_by {
                *at = Some(set.usage_each());
            }
        }
    }

    /// Looks once: the readings due, then a replica's exit and the load generator's end. A
    /// replica that exits ends the load: its figures would be another cell's.
    pub fn look(
        &mut self,
        set: &mut ReplicaSet,
        lg: &mut Loadgen,
        timing: &LoadTiming,
    ) -> LoadLook {
        let elapsed = self.load_started.elapsed();
        if self.exited.is_none() {
            self.wall = elapsed;
        }
        self.take_readings(set, timing);
        let mut look = LoadLook::default();
        if self.exited.is_none()
            && let Some(status) = lg.try_wait()
        {
            self.exited = Some(status);
            self.wall = elapsed;
        }
        // The load is over only once its output has closed too: collecting it ends the step,
        // and a progress line handed over after that is never shown (the last phase's line,
        // lost before the step's `done` line), nor a last word written to the log read.
        look.load_exited = self.exited.is_some() && self.output_closed;
        if let Some(why) = set.first_exit() {
            look.replica_exited = Some(if self.exited.is_some() {
                format!("{why} (as the load ended)")
            } else {
                let when = elapsed.saturating_sub(self.late_by);
                phase_note(why, when, timing)
            });
        }
        look
    }
}

/// One progress line of the load generator to the display.
fn show(ctx: &mut CellContext, p: &ProgressLine) {
    let (step, figures) = (ctx.step, &p.figures);
    ctx.display.show(if p.ended {
        Update::PhaseEnded { step, figures }
    } else {
        Update::PhaseProgress { step, figures }
    });
}

/// What was read of the replicas as the load ended.
pub struct EndReadings {
    /// Each replica's CPU at the end of the load.
    pub cpu_each: Readings,
    /// Each replica's name in the status.
    pub replica_names: Vec<String>,
    /// The address each replica's `/stats` was read on.
    pub stats_addrs: Vec<SocketAddr>,
    /// Peak resident memory of the replicas' processes, summed.
    pub peak_rss: u64,
    /// Seconds it took to stop the load generator and the replicas.
    pub stop_secs: f64,
}

/// Takes the last readings and stops the load generator and the replicas. With the result in
/// (`result_in`), nothing the replicas do from here on counts: they are frozen so the readings
/// get the CPU (see [`ReplicaSet::freeze`]), then killed. After a failure they run on, so a
/// target can still write its last words while it is stopped with the usual grace.
pub fn stop(set: ReplicaSet, lg: &mut Loadgen, result_in: bool) -> EndReadings {
    if result_in {
        set.freeze();
    }
    let cpu_each = set.usage_each();
    let replica_names = set.replica_names();
    let stats_addrs = set.stats_addrs.clone();
    let peak_rss = set.rss().1;
    let stopping = Instant::now();
    lg.stop();
    if result_in {
        set.kill_frozen();
    } else {
        set.stop();
    }
    EndReadings {
        cpu_each,
        replica_names,
        stats_addrs,
        peak_rss,
        stop_secs: stopping.elapsed().as_secs_f64(),
    }
}

/// Takes the last readings of a load whose replicas stay for the next one (a capacity probe's
/// kept target): the load generator is stopped, the replicas are read as they run, not frozen.
/// What they still do for the ended load (its last answers) falls outside the next load's
/// readings, which start at its warm-up's end.
pub fn read_running(set: &ReplicaSet, lg: &mut Loadgen) -> EndReadings {
    let stopping = Instant::now();
    lg.stop();
    EndReadings {
        cpu_each: set.usage_each(),
        replica_names: set.replica_names(),
        stats_addrs: set.stats_addrs.clone(),
        peak_rss: set.rss().1,
        stop_secs: stopping.elapsed().as_secs_f64(),
    }
}

/// `why` with the part of the load it happened in ("during phase mixed, 3.2 s into the load");
/// `elapsed` is counted on the plan's clock (the load generator's lateness taken off).
fn phase_note(why: String, elapsed: Duration, timing: &LoadTiming) -> String {
    format!(
        "{why} (during {}, {:.1} s into the load)",
        timing.part_at(elapsed),
        elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_exit_is_placed_in_the_part_of_the_load_it_happened_in() {
        let timing = LoadTiming {
            planned: Duration::from_secs(9),
            boundaries: [2, 5, 9].map(Duration::from_secs).to_vec(),
            phases: vec!["first".into(), "second".into()],
        };
        let at = |s: f64| phase_note("x".into(), Duration::from_secs_f64(s), &timing);
        assert_eq!(at(1.0), "x (during warm-up, 1.0 s into the load)");
        assert_eq!(at(2.0), "x (during phase first, 2.0 s into the load)");
        assert_eq!(at(6.5), "x (during phase second, 6.5 s into the load)");
        assert_eq!(
            at(9.5),
            "x (during the slack after the last phase, 9.5 s into the load)"
        );
    }
}
