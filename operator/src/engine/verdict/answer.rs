//! Whether a finished run answered the question its kind asks: a fixed-load run's answer is its
//! figures (which thresholds and the gate then judge); a capacity run's is a capacity for every
//! configuration it measured; a sizing run's is a chosen configuration. A search that ended
//! without a capacity, or a sizing that chose nothing, measured without failing and still left
//! the question open: the run's end and its exit code must say so, whatever the cells' phases.
//!
//! Decided from the status alone, as [`super::outcome::Outcome`] is, so every command that
//! reads the same status (`run`, `size`, `report`, the plugin) gives the same verdict.

use crate::resource::capacity::SearchEnding;
use crate::resource::sizing::SizingOutcome;
use crate::resource::{BenchmarkRunStatus, CellPhase};

/// What a finished run found, against the question its kind asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A fixed-load run: every measured figure is the answer.
    Figures,
    /// Every capacity search found a capacity, or the sizing chose a configuration.
    Given,
    /// The question is left open; each entry says what is missing and how it ended.
    Missing(Vec<Unanswered>),
}

/// One question left open by a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswered {
    /// A measured cell's capacity search ended without a capacity (`None`: a status whose
    /// ending this version cannot read).
    Capacity {
        /// The cell.
        cell: String,
        /// How its search ended.
        ending: Option<SearchEnding>,
    },
    /// The sizing chose no configuration.
    Sizing {
        /// How it ended (NothingHolds, OutOfBudget, or a search that never ended).
        outcome: SizingOutcome,
    },
}

impl Unanswered {
    /// What is missing, in a few words: "pool-x1: no capacity (failed at the start rate)".
    pub fn words(&self) -> String {
        match self {
            Unanswered::Capacity { cell, ending } => format!(
                "{cell}: no capacity ({})",
                ending.map_or("ended without one", SearchEnding::words)
            ),
            Unanswered::Sizing { outcome } => format!(
                "sizing: no configuration chosen ({})",
                match outcome {
                    SizingOutcome::NothingHolds => "nothing in the space holds the traffic",
                    SizingOutcome::OutOfBudget => "out of budget",
                    _ => "the search did not end",
                }
            ),
        }
    }
}

impl Answer {
    /// The answer of a finished run's `status`. A sizing run is answered by its sizing alone
    /// (a configuration too small to hold the traffic ends its search without a capacity, and
    /// that is how sizing rules it out); a capacity run by the searches of its measured cells
    /// (a failed cell is a failure, not an open question).
    pub fn of(status: &BenchmarkRunStatus) -> Answer {
        if let Some(sizing) = &status.sizing {
            return if sizing.chosen.is_some() {
                Answer::Given
            } else {
                Answer::Missing(vec![Unanswered::Sizing {
                    outcome: sizing.outcome,
                }])
            };
        }
        let searched: Vec<_> = status
            .cells
            .iter()
            .filter(|c| c.phase == CellPhase::Succeeded)
            .filter_map(|c| Some((c, c.capacity.as_ref()?)))
            .collect();
        if searched.is_empty() {
            return Answer::Figures;
        }
        let missing: Vec<Unanswered> = searched
            .into_iter()
            .filter_map(|(c, cap)| {
                let ending = cap.ended();
                (!ending.is_some_and(SearchEnding::found)).then(|| Unanswered::Capacity {
                    cell: c.name.clone(),
                    ending,
                })
            })
            .collect();
        if missing.is_empty() {
            Answer::Given
        } else {
            Answer::Missing(missing)
        }
    }

    /// True when the run left its question open.
    pub fn is_missing(&self) -> bool {
        matches!(self, Answer::Missing(_))
    }

    /// What is missing in one line ("no answer: pool-x1: no capacity (...); ..."), or `None`.
    pub fn missing_line(&self) -> Option<String> {
        let Answer::Missing(open) = self else {
            return None;
        };
        let each: Vec<String> = open.iter().map(Unanswered::words).collect();
        Some(format!("no answer: {}", each.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::CellStatus;
    use crate::resource::capacity::CapacityStatus;

    fn searched(name: &str, phase: CellPhase, capacity: CapacityStatus) -> CellStatus {
        CellStatus {
            name: name.into(),
            phase,
            capacity: Some(capacity),
            ..CellStatus::default()
        }
    }

    fn ended(ending: SearchEnding) -> CapacityStatus {
        let mut cap = CapacityStatus::default();
        cap.set_ending(ending);
        cap
    }

    #[test]
    fn a_capacity_run_is_answered_only_when_every_measured_search_found_one() {
        for ending in SearchEnding::ALL {
            let status = BenchmarkRunStatus {
                cells: vec![
                    searched("a", CellPhase::Succeeded, ended(SearchEnding::Found)),
                    searched("b", CellPhase::Succeeded, ended(ending)),
                    // A failed cell is a failure (Outcome::SomeFailed), not an open question.
                    searched("c", CellPhase::Failed, CapacityStatus::default()),
                ],
                ..Default::default()
            };
            let answer = Answer::of(&status);
            if ending.found() {
                assert_eq!(answer, Answer::Given);
            } else {
                let line = answer.missing_line().unwrap();
                assert!(line.starts_with("no answer: b: no capacity ("), "{line}");
                assert!(line.contains(ending.words()), "{line}");
                assert!(!line.contains("c:"), "{line}");
            }
        }
    }

    #[test]
    fn a_sizing_is_answered_by_its_choice_not_by_the_searches_that_ruled_configurations_out() {
        use crate::resource::sizing::{ChosenConfiguration, SizingStatus};
        let small = searched(
            "single-x1",
            CellPhase::Succeeded,
            ended(SearchEnding::FailedAtStartRate),
        );
        let mut status = BenchmarkRunStatus {
            cells: vec![small],
            sizing: Some(SizingStatus {
                outcome: SizingOutcome::Chosen,
                chosen: Some(ChosenConfiguration::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(Answer::of(&status), Answer::Given);
        for outcome in [SizingOutcome::NothingHolds, SizingOutcome::OutOfBudget] {
            let sizing = status.sizing.as_mut().unwrap();
            sizing.outcome = outcome;
            sizing.chosen = None;
            assert_eq!(
                Answer::of(&status),
                Answer::Missing(vec![Unanswered::Sizing { outcome }])
            );
        }
    }

    #[test]
    fn a_run_without_searches_is_answered_by_its_figures() {
        let status = BenchmarkRunStatus {
            cells: vec![CellStatus {
                name: "a".into(),
                phase: CellPhase::Succeeded,
                ..CellStatus::default()
            }],
            ..Default::default()
        };
        assert_eq!(Answer::of(&status), Answer::Figures);
        assert_eq!(Answer::of(&status).missing_line(), None);
    }

    #[test]
    fn an_older_operators_status_is_read_from_its_sentence_and_an_unknown_ending_as_missing() {
        let older = |found: bool, message: &str| -> Option<SearchEnding> {
            let yaml = format!("found: {found}\nmessage: '{message}'\n");
            serde_yaml::from_str::<CapacityStatus>(&yaml)
                .unwrap()
                .ended()
        };
        assert_eq!(
            older(true, "capacity 45 rps: ..."),
            Some(SearchEnding::Found)
        );
        assert_eq!(
            older(false, "held at the upper bound, 200 rps: raise ..."),
            Some(SearchEnding::HeldAtUpperBound)
        );
        assert_eq!(
            older(false, "failed even at the start rate, 10 rps (...)"),
            Some(SearchEnding::FailedAtStartRate)
        );
        assert_eq!(
            older(false, "load-generator bound at 900 rps: ..."),
            Some(SearchEnding::LoadGeneratorBound)
        );
        assert_eq!(
            older(false, "round 2 of the search: ran out of probes (...)"),
            Some(SearchEnding::OutOfProbes)
        );
        // A search under way says what it does next: no ending yet.
        assert_eq!(older(false, "probe 3 held; next: 40 rps"), None);

        // A newer operator's ending this version does not know: read as missing, the rest kept.
        let newer: CapacityStatus =
            serde_yaml::from_str("found: false\nending: SaturatedDependency\nheldRate: 12\n")
                .unwrap();
        assert_eq!(newer.ending, None);
        assert_eq!(newer.held_rate, Some(12.0));
        // Written as it is read.
        let cap = ended(SearchEnding::LoadGeneratorBound);
        let text = serde_yaml::to_string(&cap).unwrap();
        assert!(text.contains("ending: LoadGeneratorBound"), "{text}");
        let back: CapacityStatus = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back.ended(), Some(SearchEnding::LoadGeneratorBound));
    }
}
