//! The noise rule: how the believed probes at one rate become its verdict, written once for
//! the search and for a sizing check.
//!
//! Near an SLO limit noise decides. So one probe decides a rate unless its SLO figure was close
//! to the limit (within `spec.capacity.repeatWithin`): then the rate is probed again before the
//! verdict is believed, and probes that disagree are decided by their majority (a tie by one
//! more probe). A probe not believed (a busy neighbour) or load-generator bound says nothing of
//! the target and counts for nothing.
//!
//! The search ([`super::search`]) judges every rate it probed by this rule. A sizing check
//! (`engine::sizing::check`), whose every probe must hold, asks it only of its failures: a
//! clear failure refutes the check at once, a close one only once a second failure agrees,
//! and holding probes in between do not outvote it.

use crate::resource::capacity::ProbeVerdict;

/// The believed probes of one rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Believed probes that held.
    pub held: u32,
    /// Believed probes that failed.
    pub failed: u32,
    /// The last believed probe's figure was close to its limit.
    last_close: bool,
}

impl Tally {
    /// The tally of `probes`, each a verdict and whether its figure was close to its limit,
    /// in the order they ran.
    pub fn of(probes: impl IntoIterator<Item = (ProbeVerdict, bool)>) -> Tally {
        let mut tally = Tally::default();
        for (verdict, close) in probes {
            tally.add(verdict, close);
        }
        tally
    }

    /// Counts one more probe: `verdict`, `close` when its figure was close to its limit.
    pub fn add(&mut self, verdict: ProbeVerdict, close: bool) {
        match verdict {
            ProbeVerdict::Held => self.held += 1,
            ProbeVerdict::Failed => self.failed += 1,
            ProbeVerdict::LoadgenBound | ProbeVerdict::NotBelieved => return,
        }
        self.last_close = close;
    }

    /// Held (true) or failed (false) once the probes agree enough; `None`: probe it again.
    pub fn decided(&self) -> Option<bool> {
        let n = self.held + self.failed;
        if n == 0 || (n == 1 && self.last_close) || self.held == self.failed {
            return None;
        }
        Some(self.held > self.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProbeVerdict::{Failed, Held, LoadgenBound, NotBelieved};

    /// One clear probe decides; one close to the limit does not; two that disagree wait for a
    /// third; a probe not believed counts for nothing.
    #[test]
    fn one_clear_probe_decides_a_close_one_is_probed_again_and_the_majority_decides() {
        let decided = |probes: &[(ProbeVerdict, bool)]| Tally::of(probes.iter().copied()).decided();
        assert_eq!(decided(&[]), None);
        assert_eq!(decided(&[(Held, false)]), Some(true));
        assert_eq!(decided(&[(Failed, false)]), Some(false));
        assert_eq!(decided(&[(Held, true)]), None);
        assert_eq!(decided(&[(Failed, true)]), None);
        assert_eq!(decided(&[(Failed, true), (Held, false)]), None);
        assert_eq!(
            decided(&[(Failed, true), (Held, false), (Held, true)]),
            Some(true)
        );
        assert_eq!(decided(&[(Failed, true), (Failed, true)]), Some(false));
        assert_eq!(
            decided(&[(NotBelieved, false), (LoadgenBound, false)]),
            None
        );
        assert_eq!(decided(&[(Held, true), (NotBelieved, false)]), None);
    }
}
