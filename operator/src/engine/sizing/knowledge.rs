//! What the measurements so far say of each configuration: the stage its sizing has reached
//! ([`Known`]) and the bracket on its capacity that gives ([`Bracket`]: the rate it held and
//! the rate it failed, from its search and any check at a fixed rate).
//!
//! A configuration goes through the stages in one of two orders: searched, then (as the answer)
//! checked by a confirmation; or, pruned by its bound, checked by a rule-out probe (and, should
//! that hold, by a confirmation after it). Its measurement may fail at any stage.

use super::check::{self, Verdict};
use crate::resource::capacity::CheckPurpose;
use crate::resource::{CellPhase, CellStatus};

/// What is known of a configuration's capacity: the highest rate it held and the lowest rate
/// it failed, either or both unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bracket {
    /// The highest rate it held.
    pub held: Option<f64>,
    /// The lowest rate it failed.
    pub failed: Option<f64>,
}

impl Bracket {
    /// True when the bracket puts its capacity at or above `rate`.
    pub fn holds(&self, rate: f64) -> bool {
        self.held.is_some_and(|h| h >= rate)
    }

    /// True when the bracket puts its capacity below `rate`.
    pub fn falls_short(&self, rate: f64) -> bool {
        self.failed.is_some_and(|f| f <= rate)
    }

    /// True when either end is known.
    pub fn is_known(&self) -> bool {
        self.held.is_some() || self.failed.is_some()
    }

    /// The bracket's estimate of the capacity, for the model: its middle when both ends are
    /// known, else the known end (half the failed rate, when only that is); None without
    /// either.
    pub fn estimate(&self) -> Option<f64> {
        match (self.held, self.failed) {
            (Some(held), Some(failed)) => Some((held + failed) / 2.0),
            (Some(held), None) => Some(held),
            (None, Some(failed)) => Some(failed / 2.0),
            (None, None) => None,
        }
    }

    /// The bracket with a check's `verdict` at `rate` added: a hold raises its held end, a
    /// failure lowers its failed end, and no verdict moves neither (nothing was measured).
    fn with(self, verdict: Verdict, rate: f64) -> Bracket {
        match verdict {
            Verdict::Held => Bracket {
                held: Some(self.held.map_or(rate, |h| h.max(rate))),
                ..self
            },
            Verdict::Failed => Bracket {
                failed: Some(self.failed.map_or(rate, |f| f.min(rate))),
                ..self
            },
            Verdict::Undecided => self,
        }
    }
}

/// One configuration as the sizing search sees it: the stage its sizing has reached, and what
/// is known at that stage. `searched` is the bracket its capacity search found, once that
/// search has ended (a configuration only rule-out probes measured was never searched).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Known {
    /// Nothing measured, and nothing under way.
    Unmeasured,
    /// Its capacity search is under way: in line for its next probe, deployed or loaded.
    Searching,
    /// Its capacity search ended with this bracket.
    Searched(Bracket),
    /// A check at a fixed rate is under way: in line for its next probe, deployed or loaded.
    Checking {
        /// A confirmation or a rule-out probe.
        purpose: CheckPurpose,
        /// What its search found, if it was searched.
        searched: Option<Bracket>,
    },
    /// A check ended with `verdict`, which bounds the capacity at rate `at` (the target rate
    /// for a confirmation, the probed rate for a rule-out). A check without a verdict (out of
    /// probes, or load-generator bound) is not asked again: a confirmation without one is no
    /// confirmation, and a rule-out without one rules nothing out.
    Checked {
        /// A confirmation or a rule-out probe.
        purpose: CheckPurpose,
        /// How it ended.
        verdict: Verdict,
        /// The rate its verdict bounds the capacity at.
        at: f64,
        /// What its search found, if it was searched.
        searched: Option<Bracket>,
    },
    /// Its measurement failed: nothing more is asked of it.
    Failed {
        /// What its search found before, if that search had ended.
        searched: Option<Bracket>,
        /// A search of it was started (it counts against the budget).
        started: bool,
    },
}

impl Known {
    /// What `cell` says, for a search whose target rate is `target`.
    pub fn of(cell: &CellStatus, target: f64) -> Known {
        let under_way = matches!(cell.phase, CellPhase::Deploying | CellPhase::Running);
        let Some(cap) = &cell.capacity else {
            return match cell.phase {
                CellPhase::Failed => Known::Failed {
                    searched: None,
                    started: false,
                },
                _ if under_way => Known::Searching,
                _ => Known::Unmeasured,
            };
        };
        let probed = cap.probes.iter().any(|p| p.check.is_none());
        // A search has ended when it says how; a cell that succeeded (or was skipped) is not
        // searching either, whatever its status says of the ending.
        let ended = probed
            && (cap.ended().is_some()
                || matches!(cell.phase, CellPhase::Succeeded | CellPhase::Skipped));
        let searched = ended.then_some(Bracket {
            held: cap.held_rate,
            failed: cap.failed_rate,
        });
        if cell.phase == CellPhase::Failed {
            return Known::Failed {
                searched,
                started: probed,
            };
        }
        if let Some(c) = &cap.check {
            let purpose = c.purpose;
            return match check::verdict(&cap.probes, c) {
                None => Known::Checking { purpose, searched },
                Some(verdict) => Known::Checked {
                    purpose,
                    verdict,
                    at: match purpose {
                        CheckPurpose::Confirm => target,
                        CheckPurpose::RuleOut => c.rate,
                    },
                    searched,
                },
            };
        }
        match searched {
            Some(bracket) => Known::Searched(bracket),
            None if under_way || probed => Known::Searching,
            None => Known::Unmeasured,
        }
    }

    /// Being measured now: a search or a check under way.
    pub fn busy(&self) -> bool {
        matches!(self, Known::Searching | Known::Checking { .. })
    }

    /// A capacity search of it was started: it counts against `spec.sizing.budget`.
    pub fn search_started(&self) -> bool {
        match self {
            Known::Unmeasured => false,
            Known::Searching | Known::Searched(_) => true,
            Known::Checking { searched, .. } | Known::Checked { searched, .. } => {
                searched.is_some()
            }
            Known::Failed { started, .. } => *started,
        }
    }

    /// The bracket its capacity search found, once that search has ended.
    pub fn searched(&self) -> Option<Bracket> {
        match *self {
            Known::Searched(bracket) => Some(bracket),
            Known::Checking { searched, .. }
            | Known::Checked { searched, .. }
            | Known::Failed { searched, .. } => searched,
            Known::Unmeasured | Known::Searching => None,
        }
    }

    /// Everything its measurements say of its capacity: its search's bracket, with a check's
    /// verdict added.
    pub fn bracket(&self) -> Bracket {
        match *self {
            Known::Checked {
                verdict,
                at,
                searched,
                ..
            } => searched.unwrap_or_default().with(verdict, at),
            _ => self.searched().unwrap_or_default(),
        }
    }

    /// Its measurement failed.
    pub fn failed_cell(&self) -> bool {
        matches!(self, Known::Failed { .. })
    }

    /// A confirmation of it is under way.
    pub fn confirming(&self) -> bool {
        matches!(
            self,
            Known::Checking {
                purpose: CheckPurpose::Confirm,
                ..
            }
        )
    }

    /// A rule-out probe of it is under way.
    pub fn ruling_out(&self) -> bool {
        matches!(
            self,
            Known::Checking {
                purpose: CheckPurpose::RuleOut,
                ..
            }
        )
    }

    /// Its confirmation, once ended: Some(true) held, Some(false) failed or ended without a
    /// verdict (no confirmation); None before one.
    pub fn confirmed(&self) -> Option<bool> {
        match self {
            Known::Checked {
                purpose: CheckPurpose::Confirm,
                verdict,
                ..
            } => Some(*verdict == Verdict::Held),
            _ => None,
        }
    }

    /// Its rule-out probe, once ended with a verdict: Some(true) it held (its bound was
    /// wrong), Some(false) it failed as the bound said; None before one or without a verdict.
    pub fn ruled_out(&self) -> Option<bool> {
        match self {
            Known::Checked {
                purpose: CheckPurpose::RuleOut,
                verdict: Verdict::Held,
                ..
            } => Some(true),
            Known::Checked {
                purpose: CheckPurpose::RuleOut,
                verdict: Verdict::Failed,
                ..
            } => Some(false),
            _ => None,
        }
    }

    /// A check of it ended without a verdict.
    pub fn undecided(&self) -> bool {
        matches!(
            self,
            Known::Checked {
                verdict: Verdict::Undecided,
                ..
            }
        )
    }
}
