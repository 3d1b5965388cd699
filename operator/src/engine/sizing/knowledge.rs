//! What the measurements so far say of each configuration: a bracket on its capacity (the
//! rate it held and the rate it failed, from its search and any check at a fixed rate), and
//! whether it is being measured.

use crate::resource::capacity::{CheckPurpose, RateCheck};
use crate::resource::{CellPhase, CellStatus};

/// One configuration as the sizing search sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Known {
    /// The highest rate it held (0 when none).
    pub held: f64,
    /// The lowest rate it failed (infinite when none).
    pub failed: f64,
    /// Its capacity search has run to its end.
    pub searched: bool,
    /// A capacity search was started (counts against the budget).
    pub search_started: bool,
    /// Being deployed, loaded, or in line for its next probe.
    pub busy: bool,
    /// Its measurement failed: nothing is known of it.
    pub failed_cell: bool,
    /// The confirmation at the target rate: None before it, Some(true) held, Some(false) not.
    pub confirmed: Option<bool>,
    /// A confirmation is open.
    pub confirming: bool,
    /// A rule-out probe at the target rate: None before it, Some(true) it held (the bounds were
    /// wrong), Some(false) it failed as they said.
    pub ruled_out: Option<bool>,
    /// A rule-out probe is open.
    pub ruling_out: bool,
    /// A check (confirmation or rule-out) ended without a verdict: it ran out of probes, or the
    /// load generator could not drive it. It is not asked again. A confirmation without a
    /// verdict is no confirmation (`confirmed` is Some(false)), and a rule-out without one rules
    /// nothing out; neither moves the bracket, as neither measured a capacity.
    pub undecided: bool,
}

impl Known {
    /// What `cell` says, for a search whose target rate is `target`.
    pub fn of(cell: &CellStatus, target: f64) -> Known {
        let mut k = Known {
            held: 0.0,
            failed: f64::INFINITY,
            searched: false,
            search_started: false,
            busy: matches!(cell.phase, CellPhase::Deploying | CellPhase::Running),
            failed_cell: cell.phase == CellPhase::Failed,
            confirmed: None,
            confirming: false,
            ruled_out: None,
            ruling_out: false,
            undecided: false,
        };
        let Some(cap) = &cell.capacity else {
            return k;
        };
        let search_probes = cap.probes.iter().filter(|p| p.check.is_none()).count();
        let open_check = cap.check.as_ref().is_some_and(|c| !c.done);
        k.search_started = search_probes > 0 || (k.busy && !open_check);
        k.searched = search_probes > 0 && cap.next_rate.is_none();
        if k.searched {
            if let Some(h) = cap.held_rate {
                k.held = h;
            }
            if let Some(f) = cap.failed_rate {
                k.failed = f;
            }
        }
        k.busy |= cell.phase == CellPhase::Pending && (cap.next_rate.is_some() || open_check);
        if let Some(check) = &cap.check {
            k.apply(check, target);
        }
        k
    }

    fn apply(&mut self, check: &RateCheck, target: f64) {
        let open = !check.done;
        let verdict = if check.passed() {
            Some(true)
        } else if check.refuted() {
            Some(false)
        } else {
            None
        };
        self.undecided = check.done && verdict.is_none();
        match check.purpose {
            CheckPurpose::Confirm => {
                self.confirming = open;
                self.confirmed = if self.undecided { Some(false) } else { verdict };
                match verdict {
                    Some(true) => self.held = self.held.max(target),
                    Some(false) => self.failed = self.failed.min(target),
                    None => {}
                }
            }
            CheckPurpose::RuleOut => {
                self.ruling_out = open;
                self.ruled_out = verdict;
                match verdict {
                    Some(true) => self.held = self.held.max(check.rate),
                    Some(false) => self.failed = self.failed.min(check.rate),
                    None => {}
                }
            }
        }
    }

    /// True when the bracket puts its capacity at or above `rate`.
    pub fn holds(&self, rate: f64) -> bool {
        self.held >= rate
    }

    /// True when the bracket puts its capacity below `rate`.
    pub fn falls_short(&self, rate: f64) -> bool {
        self.failed <= rate
    }

    /// The bracket's estimate of the capacity, for the model: its middle when both ends are
    /// known, else the known end; None without either.
    pub fn estimate(&self) -> Option<f64> {
        match (self.held > 0.0, self.failed.is_finite()) {
            (true, true) => Some((self.held + self.failed) / 2.0),
            (true, false) => Some(self.held),
            (false, true) => Some(self.failed / 2.0),
            (false, false) => None,
        }
    }
}
