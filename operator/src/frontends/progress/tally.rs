//! How far a run is and about how long it has left.
//!
//! The estimate starts from the plan: each measurement's load is its warm-up and phases, which
//! run for exactly their planned length. What the plan does not know is the runner's time
//! around each load (starting and stopping the replicas, the load generator's check that the
//! target answers): that is learnt from the measurements done, as their mean wall time beyond
//! the planned load.

use std::time::{Duration, Instant};

/// Measurements done and under way, and the clock.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Each part of one measurement's load (warm-up, phases) with its planned length.
    parts: Vec<(String, Duration)>,
    /// Their sum.
    load: Duration,
    done: usize,
    total: usize,
    run_started: Instant,
    /// Wall time of the measurements done (from their start event to their end), summed.
    finished_wall: Duration,
    finished: usize,
    /// Probes of capacity searches ended so far.
    probes: usize,
    current: Option<Current>,
}

#[derive(Debug, Clone)]
struct Current {
    started: Instant,
    /// How far into its planned load the measurement is.
    load_at: Duration,
}

impl Tally {
    /// A run of `total` measurements, each loading `parts`, starting `now`.
    pub fn new(parts: &[(String, Duration)], total: usize, now: Instant) -> Tally {
        Tally {
            parts: parts.to_vec(),
            load: parts.iter().map(|p| p.1).sum(),
            done: 0,
            total,
            run_started: now,
            finished_wall: Duration::ZERO,
            finished: 0,
            probes: 0,
            current: None,
        }
    }

    /// Probes of capacity searches ended so far.
    pub fn probes(&self) -> usize {
        self.probes
    }

    /// A probe of a capacity search ended `now`: its time counts towards the estimate like a
    /// measurement's, but the searches done are the status's to say.
    pub fn probe_ended(&mut self, now: Instant) {
        if let Some(c) = self.current.take() {
            self.finished_wall += now.saturating_duration_since(c.started);
            self.finished += 1;
        }
        self.probes += 1;
    }

    /// Measurements done (measured or failed).
    pub fn done(&self) -> usize {
        self.done
    }

    /// Measurements the run will make in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Time since the run started.
    pub fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.run_started)
    }

    /// The run's own count, which wins over this one's (see `Event::Measurements`).
    pub fn measurements(&mut self, done: usize, total: usize) {
        self.done = done;
        self.total = total.max(done);
    }

    /// A measurement started `now`.
    pub fn started(&mut self, now: Instant) {
        self.current = Some(Current {
            started: now,
            load_at: Duration::ZERO,
        });
    }

    /// The measurement under way is `elapsed_secs` into `phase` (at its end when `ended`).
    pub fn phase(&mut self, phase: &str, elapsed_secs: f64, ended: bool) {
        let Some(k) = self.parts.iter().position(|p| p.0 == phase) else {
            return;
        };
        let before: Duration = self.parts[..k].iter().map(|p| p.1).sum();
        let length = self.parts[k].1;
        let into = if ended {
            length
        } else {
            Duration::from_secs_f64(elapsed_secs.max(0.0)).min(length)
        };
        if let Some(c) = &mut self.current {
            c.load_at = c.load_at.max(before + into);
        }
    }

    /// The measurement under way is `elapsed` into its planned load, as far as anyone can tell
    /// without its phases' figures.
    pub fn load_elapsed(&mut self, elapsed: Duration) {
        let load = self.load;
        if let Some(c) = &mut self.current {
            c.load_at = c.load_at.max(elapsed.min(load));
        }
    }

    /// The planned length of `phase`, if the plan has it.
    pub fn phase_length(&self, phase: &str) -> Option<Duration> {
        self.parts.iter().find(|p| p.0 == phase).map(|p| p.1)
    }

    /// The measurement under way ended `now`.
    pub fn finished(&mut self, now: Instant) {
        if let Some(c) = self.current.take() {
            self.finished_wall += now.saturating_duration_since(c.started);
            self.finished += 1;
        }
        self.done += 1;
        self.total = self.total.max(self.done);
    }

    /// About how long the run has left at `now`: each measurement still to come takes its
    /// planned load plus the mean time the runner spent beyond the load so far; the one under
    /// way takes that minus the time it has run, but at least what is left of its load.
    pub fn eta(&self, now: Instant) -> Duration {
        let overhead = match self.finished {
            0 => Duration::ZERO,
            n => (self.finished_wall / n as u32).saturating_sub(self.load),
        };
        let each = self.load + overhead;
        let left = self.total.saturating_sub(self.done);
        match &self.current {
            None => each * left as u32,
            Some(c) => {
                let this = each
                    .saturating_sub(now.saturating_duration_since(c.started))
                    .max(self.load.saturating_sub(c.load_at));
                each * left.saturating_sub(1) as u32 + this
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    /// 1 s warm-up, 5 s and 8 s phases: 14 s of load per measurement, as the quickstart.
    fn quickstart(total: usize, t0: Instant) -> Tally {
        let parts =
            [("warmup", 1), ("fast-only", 5), ("mixed", 8)].map(|(n, d)| (n.to_string(), s(d)));
        Tally::new(&parts, total, t0)
    }

    #[test]
    fn the_estimate_is_the_planned_load_until_a_measurement_shows_the_overhead() {
        let t0 = Instant::now();
        let mut t = quickstart(20, t0);
        assert_eq!(t.eta(t0), s(20 * 14));
        // 3 s into the first measurement with only its warm-up done: 13 s of its load are
        // still to run, whatever the clock says.
        t.started(t0);
        t.phase("warmup", 1.0, true);
        assert_eq!(t.eta(t0 + s(3)), s(19 * 14 + 13));
        // Later than planned in the load: what is left of the load counts, never less.
        t.phase("mixed", 4.0, false);
        assert_eq!(t.eta(t0 + s(20)), s(19 * 14 + 4));
        // The first took 16 s: 2 s beyond its load, which every one to come now adds.
        t.finished(t0 + s(16));
        assert_eq!((t.done(), t.total()), (1, 20));
        assert_eq!(t.eta(t0 + s(16)), s(19 * 16));
        t.started(t0 + s(16));
        assert_eq!(t.eta(t0 + s(17)), s(18 * 16 + 15));
    }

    #[test]
    fn the_time_since_the_load_started_lowers_the_floor_of_the_estimate() {
        let t0 = Instant::now();
        let mut t = quickstart(20, t0);
        t.started(t0);
        // 12 s in, with no figures: at least the whole load is left of this measurement.
        assert_eq!(t.eta(t0 + s(12)), s(19 * 14 + 14));
        // Its load started 10 s ago: 4 s of it are left.
        t.load_elapsed(s(10));
        assert_eq!(t.eta(t0 + s(12)), s(19 * 14 + 4));
        // Never beyond the load, never backwards.
        t.load_elapsed(s(99));
        t.load_elapsed(s(3));
        assert_eq!(t.eta(t0 + s(30)), s(19 * 14));
    }

    #[test]
    fn a_phase_not_in_the_plan_moves_nothing_and_the_runs_count_wins() {
        let t0 = Instant::now();
        let mut t = quickstart(4, t0);
        t.started(t0);
        t.phase("nope", 9.0, false);
        assert_eq!(t.eta(t0), s(4 * 14));
        t.finished(t0 + s(14));
        // A failed cell dropped its remaining repetitions.
        t.measurements(1, 2);
        assert_eq!(t.eta(t0 + s(14)), s(14));
        t.measurements(1, 0);
        assert_eq!((t.total(), t.eta(t0 + s(14))), (1, Duration::ZERO));
        assert_eq!(t.phase_length("mixed"), Some(s(8)));
        assert_eq!(t.phase_length("nope"), None);
    }
}
