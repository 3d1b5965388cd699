//! What the load generator did with a probe's schedule: how many sends it offered, how many
//! went out late, and how many were still unanswered at the end. The figures that tell a
//! target that fell behind from a load generator that could not keep up.

use benchmatrix_loadgen::result::RunResult;

/// A probe's sends over every open-loop stream (summed over the load generators, whose
/// documents merge exactly).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sends {
    /// The sends the schedule asked for over the measured phase: offered rate x duration.
    pub offered: f64,
    /// Sends that started more than 2 ms after their intended time.
    pub late: u64,
    /// Requests unanswered (or never sent for want of a connection) when the phase ended.
    pub unanswered: u64,
    /// The highest p99 over the streams of the latency from each request's actual send (not
    /// its intended time), milliseconds: how fast the target answered what it was sent.
    pub sent_p99_ms: Option<f64>,
}

impl Sends {
    /// The sends of a result's open-loop streams; `None` when it has none (a closed-loop
    /// workload, or a load generator that did not report them).
    pub fn of(result: &RunResult) -> Option<Sends> {
        let mut sends = Sends::default();
        let mut open = false;
        for phase in &result.phases {
            for s in &phase.streams {
                let (Some(rate), Some(late)) = (s.offered_rps, s.late_sends) else {
                    continue;
                };
                open = true;
                sends.offered += rate * phase.duration_secs;
                sends.late += late;
                sends.unanswered += s.in_flight_at_end;
                if let Some(l) = &s.uncorrected_latency_ms {
                    sends.sent_p99_ms = Some(sends.sent_p99_ms.map_or(l.p99, |m| m.max(l.p99)));
                }
            }
        }
        open.then_some(sends)
    }

    /// The share of the offered sends that went out on time, 0 to 1.
    pub fn on_time(&self) -> f64 {
        if self.offered <= 0.0 {
            return 1.0;
        }
        (1.0 - self.late as f64 / self.offered).clamp(0.0, 1.0)
    }

    /// The share of the offered sends unanswered at the end: the backlog, 0 to 1.
    pub fn backlog(&self) -> f64 {
        if self.offered <= 0.0 {
            return 0.0;
        }
        (self.unanswered as f64 / self.offered).clamp(0.0, 1.0)
    }
}
