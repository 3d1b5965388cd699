//! The search itself: from the probes so far, the next probe's rate or the outcome. A pure
//! function of the probes, replayed from the start each time, so the status is the search's
//! whole state (an operator restarting mid-search picks up where it was).
//!
//! Nighthawk's adaptive load controller, with noise handled:
//! - grow: from `start`, double the rate (at most `max`) while probes hold;
//! - bisect: between the highest rate held and the lowest failed, probe the middle, until
//!   the failed one is at most `resolution` above the held one;
//! - confirm: probe the held rate once more; it is the capacity when it holds again. When the
//!   confirmation fails the rate is a failure after all, and the search goes on below it.
//!
//! A rate's verdict is the noise rule's ([`Tally`]): the majority of its believed probes, one
//! deciding it unless its SLO figure was close to the limit (then it is probed again), two
//! that disagree decided by a third. A probe that is not believed (a busy neighbour) counts for
//! nothing, so the same rate is probed again. A load-generator-bound probe ends the search: it
//! says nothing of the target, and a higher rate would not either.

use super::tally::Tally;
use crate::resource::capacity::{CapacitySpec, CapacityStatus, ProbeVerdict};
use crate::resource::rounding::round2;

/// What the search is bounded by, from `spec.capacity`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// The first rate.
    pub start: f64,
    /// The highest rate probed.
    pub max: f64,
    /// Held and failed rates this close (failed / held - 1) end the bisection.
    pub resolution: f64,
    /// The most probes in all.
    pub max_probes: u32,
}

impl Params {
    /// The parameters of `spec`.
    pub fn of(spec: &CapacitySpec) -> Params {
        Params {
            start: spec.start_rate,
            max: spec.max_rate,
            resolution: spec.resolution.fraction(),
            max_probes: spec.max_probes,
        }
    }
}

/// One probe as the search sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probed {
    /// Its total rate.
    pub rate: f64,
    /// How it went.
    pub verdict: ProbeVerdict,
    /// Its SLO figure was close to the limit.
    pub close: bool,
}

/// What the search does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Probe this total rate; `why` says what the probe is for.
    Probe {
        /// Requests per second, over every endpoint.
        rate: f64,
        /// "grow", "bisect", "confirm", "repeat: close to the limit", ...
        why: &'static str,
    },
    /// The search is over.
    Done(SearchOutcome),
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SearchOutcome {
    /// The capacity: `held` held (confirmed), `failed` failed, within the resolution.
    Capacity {
        /// The rate held.
        held: f64,
        /// The lowest rate failed.
        failed: f64,
    },
    /// Every rate held up to the upper bound: no capacity found below it.
    HeldAtMax {
        /// The upper bound.
        max: f64,
    },
    /// The start rate failed: no capacity found above it.
    FailedAtStart {
        /// The start rate.
        start: f64,
        /// A rate that failed (the start rate).
        failed: f64,
    },
    /// The load generator could not send `rate` on time while the target kept up.
    LoadgenBound {
        /// The rate it could not drive.
        rate: f64,
        /// The highest rate held before it.
        held: Option<f64>,
    },
    /// The probes ran out before the search ended.
    OutOfProbes {
        /// The highest rate held below every failure, if any.
        held: Option<f64>,
        /// The lowest rate failed, if any.
        failed: Option<f64>,
    },
}

/// Rates are kept to hundredths of a request per second: finer says nothing, and equal rates
/// must compare equal when a probe is repeated.
fn round(rate: f64) -> f64 {
    round2(rate)
}

/// Each rate probed, with its believed probes (by [`Tally`], the noise rule), in the order
/// first probed.
fn tallies(probes: &[Probed]) -> Vec<(f64, Tally)> {
    let mut out: Vec<(f64, Tally)> = Vec::new();
    for p in probes {
        let rate = round(p.rate);
        let i = match out.iter().position(|(r, _)| *r == rate) {
            Some(i) => i,
            None => {
                out.push((rate, Tally::default()));
                out.len() - 1
            }
        };
        out[i].1.add(p.verdict, p.close);
    }
    out
}

/// The next step of the search of `spec` whose probes `cap` records: replayed from the probes
/// of its round under way (a sizing check's probes are not the search's). The status keeps no
/// next rate of its own: this is it, the same after a restart as before.
pub fn replay(spec: &CapacitySpec, cap: &CapacityStatus) -> Next {
    next(Params::of(spec), &probed(cap))
}

/// The probes of the round under way of the search `cap` records, as the search sees them.
pub fn probed(cap: &CapacityStatus) -> Vec<Probed> {
    cap.round_probes()
        .filter(|p| p.check.is_none())
        .map(|p| Probed {
            rate: p.rate,
            verdict: p.verdict,
            close: p.close,
        })
        .collect()
}

/// The next step of a search bounded by `params` that has run `probes`, in order.
pub fn next(params: Params, probes: &[Probed]) -> Next {
    // The probe budget stops only a search that asks for another probe: one whose last probe
    // decided it (a confirmation held, the upper bound held) ends as decided.
    match decide(params, probes) {
        Next::Probe { .. } if probes.len() as u32 >= params.max_probes => {
            let (held, failed) = bracket(probes);
            Next::Done(SearchOutcome::OutOfProbes { held, failed })
        }
        next => next,
    }
}

/// The highest held rate below every failure, and the lowest failed rate, of the decided
/// rates so far. A held rate above a failed one is noise the failure outweighs: the capacity
/// is below every failure.
fn bracket(probes: &[Probed]) -> (Option<f64>, Option<f64>) {
    let tallies = tallies(probes);
    let decided: Vec<(f64, bool)> = tallies
        .iter()
        .filter_map(|(r, t)| t.decided().map(|held| (*r, held)))
        .collect();
    let failed = decided
        .iter()
        .filter(|(_, held)| !held)
        .map(|(r, _)| *r)
        .reduce(f64::min);
    let held = decided
        .iter()
        .filter(|(r, held)| *held && failed.is_none_or(|f| *r < f))
        .map(|(r, _)| *r)
        .reduce(f64::max);
    (held, failed)
}

/// [`next`] without the probe budget.
fn decide(params: Params, probes: &[Probed]) -> Next {
    let tallies = tallies(probes);
    let (held, failed) = bracket(probes);
    if let Some(last) = probes.last()
        && last.verdict == ProbeVerdict::LoadgenBound
    {
        return Next::Done(SearchOutcome::LoadgenBound {
            rate: round(last.rate),
            held,
        });
    }
    // The last rate probed first gets the verdict it still lacks.
    if let Some(last) = probes.last() {
        let rate = round(last.rate);
        let tally = tallies.iter().find(|(r, _)| *r == rate).map(|(_, t)| *t);
        if tally.is_some_and(|t| t.decided().is_none()) {
            let why = match last.verdict {
                ProbeVerdict::NotBelieved => "repeat: the last probe was not believed",
                _ if tally.is_some_and(|t| t.held > 0 && t.held == t.failed) => {
                    "repeat: two probes disagree"
                }
                _ => "repeat: close to the limit",
            };
            return Next::Probe { rate, why };
        }
    }
    let start = round(params.start);
    let max = round(params.max);
    match (held, failed) {
        (None, None) => Next::Probe {
            rate: start,
            why: "start",
        },
        (Some(low), None) if low >= max => Next::Done(SearchOutcome::HeldAtMax { max }),
        (Some(low), None) => Next::Probe {
            rate: round((low * 2.0).min(max)),
            why: "grow",
        },
        (None, Some(high)) => Next::Done(SearchOutcome::FailedAtStart {
            start,
            failed: high,
        }),
        (Some(low), Some(high)) => {
            let mid = round((low + high) / 2.0);
            let converged = high <= low * (1.0 + params.resolution) || mid <= low || mid >= high;
            if !converged {
                return Next::Probe {
                    rate: mid,
                    why: "bisect",
                };
            }
            let confirmed = tallies
                .iter()
                .find(|(r, _)| *r == low)
                .is_some_and(|(_, t)| t.held + t.failed >= 2);
            if confirmed {
                Next::Done(SearchOutcome::Capacity {
                    held: low,
                    failed: high,
                })
            } else {
                Next::Probe {
                    rate: low,
                    why: "confirm",
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
