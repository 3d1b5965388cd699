//! A sizing check counting its probes: the noise rule on its failures, and probes of its own.

use super::*;
use crate::resource::capacity::{CapacityStatus, ProbeVerdict};
use crate::resource::conditions::time_from_secs;

/// A check as recorded, and how it ended (`None`: still open).
#[derive(Debug)]
struct Checked {
    check: RateCheck,
    verdict: Option<Verdict>,
}

/// A cell confirming its held rate at 24 rps with two probes, after the verdicts `probes`
/// (each held or failed, and whether close to the limit): the check after each, recorded.
fn confirm(probes: &[(ProbeVerdict, bool)]) -> Checked {
    confirm_after(0, probes)
}

/// [`confirm`] of a cell whose search took `searched` probes first.
fn confirm_after(searched: u32, probes: &[(ProbeVerdict, bool)]) -> Checked {
    let now = time_from_secs(100);
    let run = crate::resource::BenchmarkRun::sample();
    let ctx = Ctx::unvalidated(&run, None, &now);
    let spec: CapacitySpec =
        serde_yaml::from_str("slo: [{errorRate: {below: 0.01}}]\nstartRate: 12\n").unwrap();
    let mut c = CellStatus {
        name: "pool-x1".into(),
        capacity: Some(CapacityStatus {
            check: Some(RateCheck {
                purpose: CheckPurpose::Confirm,
                rate: 24.0,
                wanted: 2,
                ..RateCheck::default()
            }),
            ..CapacityStatus::default()
        }),
        ..CellStatus::default()
    };
    let cap = c.capacity.as_mut().unwrap();
    cap.probes = (1..=searched)
        .map(|probe| ProbeStatus {
            probe,
            rate: 36.0,
            verdict: ProbeVerdict::Held,
            ..ProbeStatus::default()
        })
        .collect();
    for (i, &(verdict, close)) in probes.iter().enumerate() {
        let cap = c.capacity.as_mut().unwrap();
        assert!(
            !cap.check.as_ref().unwrap().done,
            "decided before probe {i}"
        );
        cap.probes.push(ProbeStatus {
            probe: searched + i as u32 + 1,
            rate: 24.0,
            verdict,
            close,
            check: Some(CheckPurpose::Confirm),
            ..ProbeStatus::default()
        });
        counted(&mut c, &spec, &ctx, "said");
    }
    let cap = c.capacity.unwrap();
    let check = cap.check.unwrap();
    Checked {
        verdict: verdict(&cap.probes, &check),
        check,
    }
}

use ProbeVerdict::{Failed, Held};

#[test]
fn a_confirmation_believes_a_clear_failure_at_once() {
    let check = confirm(&[(Failed, false)]);
    assert_eq!(check.verdict, Some(Verdict::Failed), "{check:?}");
}

/// Near the limit noise decides: a close failure is probed again, and holding probes
/// outvote it; a second close failure is believed.
#[test]
fn a_confirmation_probes_a_close_failure_again_before_it_believes_it() {
    let outvoted = confirm(&[(Failed, true), (Held, false), (Held, false)]);
    assert_eq!(outvoted.verdict, Some(Verdict::Held), "{outvoted:?}");
    assert!(
        outvoted
            .check
            .message
            .ends_with("(a failure close to the limit was probed again)"),
        "{}",
        outvoted.check.message
    );
    let twice = confirm(&[(Failed, true), (Held, false), (Failed, true)]);
    assert_eq!(twice.verdict, Some(Verdict::Failed), "{twice:?}");
    let close_held = confirm(&[(Held, true), (Held, false)]);
    assert_eq!(close_held.verdict, Some(Verdict::Held), "{close_held:?}");
}

/// A search that used all of `maxProbes` (20 by default) leaves its sizing check its own
/// 20: the check is decided by its probes, not ended before its first.
#[test]
fn a_check_has_probes_of_its_own_after_a_search_that_used_all_of_its() {
    let nb = (ProbeVerdict::NotBelieved, false);
    let after = confirm_after(20, &[nb, (Held, false), nb, (Held, false)]);
    assert_eq!(after.verdict, Some(Verdict::Held), "{after:?}");
    let out = confirm_after(20, &[nb; 20]);
    assert_eq!(out.verdict, Some(Verdict::Undecided), "{out:?}");
    assert!(
        out.check.message.contains("ran out of probes"),
        "{}",
        out.check.message
    );
}
