use super::*;

fn params() -> Params {
    Params {
        start: 10.0,
        max: 10_000.0,
        resolution: 0.05,
        max_probes: 40,
    }
}

fn seen(rate: f64, verdict: ProbeVerdict) -> Probed {
    Probed {
        rate,
        verdict,
        close: false,
    }
}

/// Runs a search to its end against `target`, which says how the n-th probe (from 0) at a
/// rate goes; returns the outcome and the probes.
fn drive(
    params: Params,
    mut target: impl FnMut(usize, f64) -> Probed,
) -> (SearchOutcome, Vec<Probed>) {
    let mut probes = Vec::new();
    loop {
        match next(params, &probes) {
            Next::Probe { rate, .. } => {
                assert!(probes.len() < 100, "the search does not end: {probes:?}");
                let probe = target(probes.len(), rate);
                probes.push(probe);
            }
            Next::Done(outcome) => return (outcome, probes),
        }
    }
}

/// A target that holds exactly up to `capacity`, every time.
fn holds_up_to(capacity: f64) -> impl FnMut(usize, f64) -> Probed {
    move |_, rate| {
        seen(
            rate,
            if rate <= capacity {
                ProbeVerdict::Held
            } else {
                ProbeVerdict::Failed
            },
        )
    }
}

#[test]
fn grows_then_bisects_to_the_resolution_and_confirms_the_rate_held() {
    for capacity in [10.0, 37.0, 100.0, 333.3, 1234.0, 9999.0] {
        let (outcome, probes) = drive(params(), holds_up_to(capacity));
        let SearchOutcome::Capacity { held, failed } = outcome else {
            panic!("capacity {capacity}: {outcome:?} after {probes:?}");
        };
        assert!(
            held <= capacity && failed > capacity,
            "{capacity}: {held}..{failed}"
        );
        assert!(
            failed <= held * 1.05,
            "{capacity}: {held}..{failed} wider than 5%"
        );
        // Grows x2 from the start rate until the first failure.
        let first_fail = probes
            .iter()
            .position(|p| p.verdict == ProbeVerdict::Failed)
            .unwrap();
        for (i, p) in probes[..first_fail].iter().enumerate() {
            assert_eq!(p.rate, 10.0 * 2f64.powi(i as i32), "{capacity}: {probes:?}");
        }
        // The last probe confirms the rate held, and there are two probes that held at it.
        assert_eq!(probes.last().unwrap().rate, held);
        assert_eq!(probes.iter().filter(|p| p.rate == held).count(), 2);
        // Bisection halves the bracket: a few probes, not a sweep.
        assert!(probes.len() <= 20, "{capacity}: {} probes", probes.len());
    }
}

#[test]
fn a_finer_resolution_takes_more_probes_and_lands_closer() {
    let coarse = drive(
        Params {
            resolution: 0.2,
            ..params()
        },
        holds_up_to(333.0),
    );
    let fine = drive(
        Params {
            resolution: 0.01,
            ..params()
        },
        holds_up_to(333.0),
    );
    assert!(fine.1.len() > coarse.1.len());
    let SearchOutcome::Capacity { held, failed } = fine.0 else {
        panic!("{:?}", fine.0)
    };
    assert!(failed <= held * 1.01 && held <= 333.0 && failed > 333.0);
}

#[test]
fn holding_at_the_upper_bound_is_no_capacity() {
    let (outcome, probes) = drive(
        Params {
            max: 300.0,
            ..params()
        },
        holds_up_to(1e9),
    );
    assert_eq!(outcome, SearchOutcome::HeldAtMax { max: 300.0 });
    // 10, 20, 40, 80, 160, then the bound itself rather than 320.
    let rates: Vec<f64> = probes.iter().map(|p| p.rate).collect();
    assert_eq!(rates, [10.0, 20.0, 40.0, 80.0, 160.0, 300.0]);
}

#[test]
fn failing_at_the_start_rate_is_no_capacity() {
    let (outcome, probes) = drive(params(), holds_up_to(5.0));
    assert_eq!(
        outcome,
        SearchOutcome::FailedAtStart {
            start: 10.0,
            failed: 10.0
        }
    );
    assert_eq!(probes.len(), 1);
}

#[test]
fn a_failed_confirmation_steps_down_and_searches_below() {
    // Holds up to 100 the first time a rate is probed, but 95 and above fail when probed again
    // (the target degrades): the confirmation at the first bracket fails twice (the tie is
    // broken by a third probe), and the search goes on below.
    let mut times: Vec<(f64, u32)> = Vec::new();
    let (outcome, probes) = drive(params(), move |_, rate| {
        let n = match times.iter_mut().find(|(r, _)| *r == rate) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                times.push((rate, 1));
                1
            }
        };
        let holds = rate <= 100.0 && (n == 1 || rate < 95.0);
        seen(
            rate,
            if holds {
                ProbeVerdict::Held
            } else {
                ProbeVerdict::Failed
            },
        )
    });
    let SearchOutcome::Capacity { held, failed } = outcome else {
        panic!("{outcome:?}: {probes:?}")
    };
    assert!(held < 95.0 && failed <= held * 1.05, "{held}..{failed}");
    // The rate first bracketed was probed three times: held, failed, failed.
    let first_confirmed = probes
        .windows(2)
        .find(|w| w[0].rate == w[1].rate)
        .map(|w| w[0].rate)
        .unwrap();
    let at: Vec<ProbeVerdict> = probes
        .iter()
        .filter(|p| p.rate == first_confirmed)
        .map(|p| p.verdict)
        .collect();
    assert_eq!(
        at,
        [
            ProbeVerdict::Held,
            ProbeVerdict::Failed,
            ProbeVerdict::Failed
        ]
    );
}

#[test]
fn a_close_verdict_is_repeated_before_it_is_believed() {
    let probes = [Probed {
        rate: 10.0,
        verdict: ProbeVerdict::Held,
        close: true,
    }];
    assert_eq!(
        next(params(), &probes),
        Next::Probe {
            rate: 10.0,
            why: "repeat: close to the limit"
        }
    );
    // Two that disagree: a third decides.
    let split = [
        probes[0],
        Probed {
            rate: 10.0,
            verdict: ProbeVerdict::Failed,
            close: true,
        },
    ];
    assert_eq!(
        next(params(), &split),
        Next::Probe {
            rate: 10.0,
            why: "repeat: two probes disagree"
        }
    );
    let mut decided = split.to_vec();
    decided.push(seen(10.0, ProbeVerdict::Held));
    assert_eq!(
        next(params(), &decided),
        Next::Probe {
            rate: 20.0,
            why: "grow"
        }
    );
    // A close failure that fails again is a failure.
    let failed = [
        Probed {
            rate: 10.0,
            verdict: ProbeVerdict::Failed,
            close: true,
        },
        seen(10.0, ProbeVerdict::Failed),
    ];
    assert!(matches!(
        next(params(), &failed),
        Next::Done(SearchOutcome::FailedAtStart { .. })
    ));
}

#[test]
fn a_probe_not_believed_is_probed_again_and_counts_for_nothing() {
    let probes = [
        seen(10.0, ProbeVerdict::Held),
        seen(20.0, ProbeVerdict::NotBelieved),
    ];
    assert_eq!(
        next(params(), &probes),
        Next::Probe {
            rate: 20.0,
            why: "repeat: the last probe was not believed"
        }
    );
}

#[test]
fn a_load_generator_bound_probe_ends_the_search_without_blaming_the_target() {
    let probes = [
        seen(10.0, ProbeVerdict::Held),
        seen(20.0, ProbeVerdict::Held),
        seen(40.0, ProbeVerdict::LoadgenBound),
    ];
    assert_eq!(
        next(params(), &probes),
        Next::Done(SearchOutcome::LoadgenBound {
            rate: 40.0,
            held: Some(20.0)
        })
    );
}

#[test]
fn a_search_that_runs_out_of_probes_says_what_it_had() {
    let (outcome, probes) = drive(
        Params {
            max_probes: 8,
            ..params()
        },
        holds_up_to(1234.0),
    );
    assert_eq!(probes.len(), 8);
    // 10 .. 640 held, then 1280 failed: held 640, failed 1280 when the probes ran out.
    assert_eq!(
        outcome,
        SearchOutcome::OutOfProbes {
            held: Some(640.0),
            failed: Some(1280.0)
        }
    );
}

#[test]
fn a_rate_held_above_a_failure_does_not_raise_the_capacity() {
    // Noise: 40 held, 20 failed (each once, not close). The capacity is below 20.
    let probes = [
        seen(10.0, ProbeVerdict::Held),
        seen(40.0, ProbeVerdict::Held),
        seen(20.0, ProbeVerdict::Failed),
    ];
    assert_eq!(
        next(params(), &probes),
        Next::Probe {
            rate: 15.0,
            why: "bisect"
        }
    );
}

/// The budget stops only a search that wants another probe: when the last allowed probe
/// decides it (the upper bound held, or the confirmation held), the outcome is that decision,
/// not "ran out of probes".
#[test]
fn the_last_allowed_probe_that_decides_the_search_ends_it_as_decided() {
    let (outcome, probes) = drive(
        Params {
            start: 10.0,
            max: 20.0,
            max_probes: 2,
            ..params()
        },
        holds_up_to(1_000.0),
    );
    assert_eq!(probes.len(), 2);
    assert_eq!(outcome, SearchOutcome::HeldAtMax { max: 20.0 });
    // At a resolution of 100%: 10 held, 20 failed (bracketed), then the third and last
    // allowed probe confirms 10.
    let (outcome, probes) = drive(
        Params {
            start: 10.0,
            max: 1_000.0,
            resolution: 1.0,
            max_probes: 3,
        },
        holds_up_to(12.0),
    );
    assert_eq!(probes.len(), 3, "{probes:?}");
    assert_eq!(
        outcome,
        SearchOutcome::Capacity {
            held: 10.0,
            failed: 20.0
        },
        "{probes:?}"
    );
}
