//! The search over configurations, as a pure function of what the cells measured so far:
//! which configuration to search (or check at a fixed rate) next, or the answer.
//!
//! The strategy is model-guided pruning, cheapest first:
//! 1. **Seeds.** Each family (mode x env values) first searches its configuration with the
//!    fewest replicas and the most CPU.
//! 2. **Cheapest first.** The configurations in order of reserved CPU (limit x replicas): one
//!    whose bound (`model::upper_bound`) is below the target rate is pruned unmeasured; the
//!    first that is not is searched for capacity, and its result tightens the bounds of the
//!    rest. The first configuration in that order that holds the target rate is the answer:
//!    everything cheaper was measured below it or bounded below it.
//! 3. **Confirmation.** The answer is probed `confirmations` times at the target rate; a failure
//!    sends the walk on past it (one close to the SLO's limit is probed again first, see
//!    [`super::check`]).
//! 4. **Rule-out.** Up to `ruleOut` of the cheaper configurations that were pruned, those the
//!    fitted model predicts closest to holding first, are probed once at the target rate and
//!    must fail. One that holds was pruned wrongly: it becomes a candidate and is confirmed.
//!
//! The cost: the seeds, then about one search per cost level below the answer whose
//! configurations the bounds cannot exclude yet, plus a probe per confirmation and rule-out.
//! On the simulated 48-configuration space of BENCHMARKS.md that is 6 to 12 searches (median
//! 8). Bayesian optimisation or a bandit would spend searches on learning a space whose order
//! (more resources, no less capacity) is known; successive halving needs a cheap low-fidelity
//! measurement, and a short probe near the SLO is not one.

use super::check::Verdict;
use super::knowledge::Known;
use super::model::{self, Fit, MeasuredPoint, Point};
use crate::engine::capacity::probe::rate_text;
use crate::resource::CellStatus;
use crate::resource::EnvVar;
use crate::resource::capacity::CheckPurpose;
use crate::resource::matrix::Cell;
use crate::resource::rounding::{round2, round3};
use crate::resource::sizing::{
    ChosenConfiguration, SizedConfiguration, SizedState, SizingOutcome, SizingSpec, SizingStatus,
};

/// What to measure next.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// Search this configuration's capacity.
    Search(usize),
    /// Probe this configuration at a fixed rate.
    Check {
        /// The configuration.
        cell: usize,
        /// Confirm the answer, or rule a cheaper one out.
        purpose: CheckPurpose,
        /// The total rate.
        rate: f64,
        /// Believed probes wanted.
        wanted: u32,
    },
}

/// The search's next actions, and its status.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// New measurements to start (none while every slot is busy).
    pub actions: Vec<Measure>,
    /// status.sizing as it stands after them.
    pub status: SizingStatus,
}

/// The next step of the search of `spec` over `cells` (the space's configurations), from what
/// `measured` (their statuses) holds, with `slots` measurements allowed at once.
pub fn decide(
    spec: &SizingSpec,
    cells: &[Cell],
    measured: &[CellStatus],
    slots: usize,
) -> Decision {
    Walk::new(spec, cells, measured, slots).run()
}

/// Each of `cells` (the space of `spec`, in matrix order) as a point of the model: its family
/// (the matrix lists each family's replicas x cpu configurations together), replicas and CPU
/// cores: the model's view of the space, which [`Walk::new`] fits once.
fn points_of(spec: &SizingSpec, cells: &[Cell]) -> Vec<Point> {
    let per_family = (spec.search.replicas.len() * spec.search.cpu.len()).max(1);
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| Point {
            family: i / per_family,
            replicas: c.replicas,
            cpu: c.cpu.cpu_cores().unwrap_or(0.0),
        })
        .collect()
}

/// The starting state of each of `cells`, before the walk: unmeasured, with its reserved CPU
/// (`costs`) and the rates its search held and failed at (`known`), when any: what the status
/// says before the walk decides anything.
fn unmeasured_states(cells: &[Cell], costs: &[f64], known: &[Known]) -> Vec<SizedConfiguration> {
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| SizedConfiguration {
            name: c.name.clone(),
            reserved_cpu: round3(costs[i]),
            state: SizedState::Unmeasured,
            held_rate: known[i].bracket().held,
            failed_rate: known[i].bracket().failed,
            bound: None,
            predicted: None,
            why: None,
        })
        .collect()
}

struct Walk<'a> {
    spec: &'a SizingSpec,
    cells: &'a [Cell],
    target: f64,
    known: Vec<Known>,
    points: Vec<Point>,
    costs: Vec<f64>,
    states: Vec<SizedConfiguration>,
    bounds: Vec<Option<(f64, usize)>>,
    fit: Fit,
    notes: Vec<String>,
    actions: Vec<Measure>,
    free: usize,
    searched: u32,
}

impl<'a> Walk<'a> {
    fn new(spec: &'a SizingSpec, cells: &'a [Cell], measured: &[CellStatus], slots: usize) -> Self {
        let target = spec.target_rate();
        let known: Vec<Known> = cells
            .iter()
            .map(|c| {
                measured.get(c.index).map_or_else(
                    || Known::of(&CellStatus::default(), target),
                    |s| Known::of(s, target),
                )
            })
            .collect();
        let points = points_of(spec, cells);
        let costs: Vec<f64> = cells
            .iter()
            .map(|c| c.reserved_cpu().unwrap_or(f64::INFINITY))
            .collect();
        let facts: Vec<MeasuredPoint> = known
            .iter()
            .enumerate()
            .filter(|(_, k)| k.bracket().is_known())
            .map(|(i, k)| MeasuredPoint {
                index: i,
                at: points[i],
                bracket: k.bracket(),
            })
            .collect();
        let name = |i: usize| cells[i].name.clone();
        let broken = model::broken(&facts, &name);
        let untrusted: Vec<usize> = broken.iter().map(|(_, i)| *i).collect();
        let mut notes: Vec<String> = broken.into_iter().map(|(s, _)| s).collect();
        notes.dedup();
        let estimates: Vec<(Point, f64)> = known
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.bracket().estimate().map(|e| (points[i], e)))
            .collect();
        let fit = Fit::of(&estimates);
        let bounds = points
            .iter()
            .map(|p| model::upper_bound(p, &facts, &untrusted))
            .collect();
        let busy = known.iter().filter(|k| k.busy()).count();
        let searched = known.iter().filter(|k| k.search_started()).count() as u32;
        let states = unmeasured_states(cells, &costs, &known);
        Walk {
            spec,
            cells,
            target,
            known,
            points,
            costs,
            states,
            bounds,
            fit,
            notes,
            actions: Vec::new(),
            free: slots.max(1).saturating_sub(busy),
            searched,
        }
    }

    /// Configurations cheapest first (fewer replicas, then matrix order, among equals).
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.cells.len()).collect();
        order.sort_by(|&a, &b| {
            self.costs[a]
                .total_cmp(&self.costs[b])
                .then(self.points[a].replicas.cmp(&self.points[b].replicas))
                .then(a.cmp(&b))
        });
        order
    }

    fn run(mut self) -> Decision {
        self.mark_known();
        let order = self.order();
        let out_of_budget = self.seed(&order);
        let (answer, pending, out_of_budget) = if out_of_budget {
            (None, true, true)
        } else {
            self.walk(&order)
        };
        let answer = answer.filter(|_| !pending);
        let ruling = match answer {
            Some(a) if !out_of_budget => self.rule_out(&order, a),
            _ => false,
        };
        let outcome = self.outcome(out_of_budget, ruling, answer);
        let final_ = outcome.is_final();
        self.settle_states(outcome);
        let chosen = answer.filter(|_| final_).map(|a| self.chosen(a));
        if let Some(a) = answer.filter(|_| final_) {
            self.states[a].state = SizedState::Chosen;
        }
        let message = self.message(outcome, answer);
        let next = self.next_names();
        // Cheapest first, as the walk saw them.
        let states = order.iter().map(|&i| self.states[i].clone()).collect();
        Decision {
            actions: self.actions,
            status: SizingStatus {
                traffic: self.spec.traffic,
                target_rate: round2(self.target),
                outcome,
                message,
                next,
                searched: self.searched,
                chosen,
                configurations: states,
                notes: self.notes,
            },
        }
    }

    /// Before the walk: each configuration's predicted capacity, and the state its cell's
    /// measurement so far says (measuring, failed, or measured): what is known, written before
    /// [`Walk::run`] decides what to measure next from it.
    fn mark_known(&mut self) {
        for i in 0..self.cells.len() {
            self.states[i].predicted = self.fit.predict(&self.points[i]).map(round2);
            let k = self.known[i];
            if k.busy() {
                self.states[i].state = SizedState::Measuring;
            } else if k.failed_cell() {
                self.states[i].state = SizedState::Failed;
                self.states[i].why = Some("its measurement failed: nothing is known of it".into());
            } else if k.searched().is_some() {
                self.states[i].state = SizedState::Measured;
            }
        }
    }

    /// Where the search stands after the walk: out of budget, still ruling out, confirming
    /// or searching while anything is measured or about to be, else chosen (`answer`) or
    /// nothing holds. `out_of_budget` and `ruling` are what the walk and the rule-out said.
    fn outcome(&self, out_of_budget: bool, ruling: bool, answer: Option<usize>) -> SizingOutcome {
        let busy = self.known.iter().any(Known::busy);
        let open = busy || !self.actions.is_empty();
        if out_of_budget && !open {
            SizingOutcome::OutOfBudget
        } else if open {
            if ruling {
                SizingOutcome::RulingOut
            } else if self.known.iter().any(Known::confirming)
                || self.actions.iter().any(|a| {
                    matches!(
                        a,
                        Measure::Check {
                            purpose: CheckPurpose::Confirm,
                            ..
                        }
                    )
                })
            {
                SizingOutcome::Confirming
            } else {
                SizingOutcome::Searching
            }
        } else if answer.is_some() {
            SizingOutcome::Chosen
        } else {
            SizingOutcome::NothingHolds
        }
    }

    /// Once the walk's `outcome` is known: when it is final, every configuration still
    /// unmeasured is marked not needed (with why), and each pruned or ruled-out one shows
    /// the bound that excluded it: the walk's conclusion written back, after [`Walk::run`] has
    /// reached it.
    fn settle_states(&mut self, outcome: SizingOutcome) {
        let final_ = outcome.is_final();
        for i in 0..self.cells.len() {
            let s = &mut self.states[i];
            if final_ && s.state == SizedState::Unmeasured {
                s.state = SizedState::NotNeeded;
                s.why.get_or_insert_with(|| match outcome {
                    SizingOutcome::Chosen => "not needed: a cheaper configuration holds".into(),
                    _ => "not measured: the search ended before it".into(),
                });
            }
            if let Some((b, _)) = self.bounds[i]
                && matches!(s.state, SizedState::Pruned | SizedState::RuledOut)
            {
                s.bound = Some(round2(b));
            }
        }
    }

    /// The names of the configurations measured now or next: those busy, then those the
    /// actions start, for status.sizing's `next`.
    fn next_names(&self) -> Vec<String> {
        self.known
            .iter()
            .enumerate()
            .filter(|(_, k)| k.busy())
            .map(|(i, _)| i)
            .chain(self.actions.iter().map(|a| match a {
                Measure::Search(i) | Measure::Check { cell: i, .. } => *i,
            }))
            .map(|i| self.cells[i].name.clone())
            .collect()
    }

    /// Step 1: each family's seed, before anything else is searched in it. True when the
    /// budget is spent before a seed could start.
    fn seed(&mut self, order: &[usize]) -> bool {
        let families = self.spec.families();
        let per_family = self.cells.len() / families.max(1);
        for f in 0..families {
            let members: Vec<usize> = (f * per_family..(f + 1) * per_family).collect();
            // A seed whose measurement failed seeds nothing, and is not tried again: the walk
            // goes on with what else the family has.
            if members.iter().any(|&i| {
                let k = &self.known[i];
                k.search_started() || k.busy() || k.failed_cell()
            }) {
                continue;
            }
            // A family whose cheapest configuration costs more than a confirmed answer is not
            // needed at all.
            let cheapest = members
                .iter()
                .map(|&i| self.costs[i])
                .fold(f64::INFINITY, f64::min);
            if let Some(best) = order
                .iter()
                .find(|&&i| self.known[i].confirmed() == Some(true))
                && self.costs[*best] <= cheapest
            {
                continue;
            }
            let Some(&seed) = members.iter().min_by(|&&a, &&b| {
                self.points[a]
                    .replicas
                    .cmp(&self.points[b].replicas)
                    .then(self.points[b].cpu.total_cmp(&self.points[a].cpu))
            }) else {
                continue;
            };
            if self.free == 0 {
                // Seeds go first: nothing else starts until they have.
                return false;
            }
            if !self.search(seed, "seed: bounds its family") {
                return true;
            }
        }
        false
    }

    /// Starts a search of `i` if the budget and a slot allow; false when the budget is spent.
    fn search(&mut self, i: usize, why: &str) -> bool {
        if self.searched >= self.spec.budget {
            return false;
        }
        if self.free == 0 {
            return true;
        }
        self.searched += 1;
        self.free -= 1;
        self.actions.push(Measure::Search(i));
        self.states[i].state = SizedState::Measuring;
        self.states[i].why = Some(why.to_owned());
        true
    }

    /// Step 2 and 3: (the answer, whether a cheaper configuration is still open, whether the
    /// budget ran out).
    fn walk(&mut self, order: &[usize]) -> (Option<usize>, bool, bool) {
        let target = self.target;
        // A search under way may yet find something cheaper than what a check is confirming.
        let mut pending = self.known.contains(&Known::Searching)
            || self.actions.iter().any(|a| matches!(a, Measure::Search(_)));
        for &i in order {
            let k = self.known[i];
            if k.busy() || k.failed_cell() {
                pending |= k == Known::Searching;
                if k.confirming() && !pending {
                    return (None, false, false);
                }
                continue;
            }
            if k.searched().is_some() || k.ruled_out() == Some(true) || k.confirmed().is_some() {
                if let Some(end) = self.weigh_measured(i, pending) {
                    return end;
                }
                continue;
            }
            if k.undecided() {
                // Its rule-out probe ended without a verdict: pruned by its bound alone.
                self.states[i].state = SizedState::Pruned;
                self.states[i].why = Some(format!(
                    "ruled out by its bound; its probe at the target, {} rps, ended without a \
                     verdict",
                    rate_text(target)
                ));
                continue;
            }
            if let Known::Checked {
                purpose: CheckPurpose::RuleOut,
                verdict: Verdict::Failed,
                at,
                ..
            } = k
            {
                self.states[i].state = SizedState::RuledOut;
                self.states[i].why = Some(format!(
                    "failed at the target, {} rps, as its bound said",
                    rate_text(at)
                ));
                continue;
            }
            if let Some((bound, from)) = self.bounds[i]
                && bound < target
            {
                self.states[i].state = SizedState::Pruned;
                self.states[i].why = Some(format!(
                    "holds at most {} rps (from {}), below {}",
                    rate_text(bound),
                    self.cells[from].name,
                    rate_text(target)
                ));
                continue;
            }
            if self.free == 0 {
                return (None, true, false);
            }
            if !self.search(i, "the cheapest configuration not ruled out") {
                return (None, pending, true);
            }
            pending = true;
        }
        (None, pending, false)
    }

    /// Step 2 and 3 for configuration `i`, already searched or probed: a candidate ends the
    /// walk (the answer once confirmed, else its confirmation starts; while a cheaper
    /// configuration is still `pending`, it waits), as [`Walk::walk`]'s answer; one that
    /// falls short of the target says why, and the walk goes on (None).
    fn weigh_measured(&mut self, i: usize, pending: bool) -> Option<(Option<usize>, bool, bool)> {
        let target = self.target;
        let k = self.known[i];
        let b = k.bracket();
        // A search whose bracket straddles the target (held below it, failed above it)
        // is decided by the confirmation at the target itself.
        let candidate = b.holds(target) || (k.searched().is_some() && !b.falls_short(target));
        if candidate && k.confirmed() != Some(false) {
            if pending {
                self.states[i].why = Some(format!(
                    "held {} rps; cheaper configurations are still measured",
                    rate_or_zero(b.held)
                ));
                return Some((None, true, false));
            }
            return Some(match k.confirmed() {
                Some(true) => (Some(i), false, false),
                _ => {
                    self.confirm(i);
                    (None, false, false)
                }
            });
        }
        if k.undecided() && k.confirmed() == Some(false) {
            self.states[i].why = Some(format!(
                "held {} rps in its search, but its confirmation at {} rps ended without a \
                 verdict (out of probes, or load-generator bound): not chosen unconfirmed",
                rate_or_zero(b.held),
                rate_text(target)
            ));
            return None;
        }
        if let Some(failed) = b.failed.filter(|f| *f <= target) {
            self.states[i].why = Some(match k.confirmed() {
                Some(false) => format!(
                    "held {} rps in its search, but the confirmation at {} rps failed",
                    rate_or_zero(b.held),
                    rate_text(target)
                ),
                _ => format!(
                    "failed at {} rps, below {}",
                    rate_text(failed),
                    rate_text(target)
                ),
            });
            return None;
        }
        // A rule-out probe that held at the target makes it a candidate (above); one
        // that has no verdict yet leaves nothing to do here.
        None
    }

    fn confirm(&mut self, i: usize) {
        if self.known[i].confirming() {
            return;
        }
        if self.free == 0 {
            return;
        }
        self.free -= 1;
        self.actions.push(Measure::Check {
            cell: i,
            purpose: CheckPurpose::Confirm,
            rate: round2(self.target),
            wanted: self.spec.confirmations,
        });
        self.states[i].state = SizedState::Measuring;
        self.states[i].why = Some(format!(
            "the cheapest that held: confirming at {} rps",
            rate_text(self.target)
        ));
    }

    /// Step 4: the rule-out probes of the configurations cheaper than `answer` that the bounds
    /// pruned, those the model predicts closest to holding first (a wrong bound is likeliest
    /// there). True while one is open or started.
    fn rule_out(&mut self, order: &[usize], answer: usize) -> bool {
        let mut before: Vec<usize> = order
            .iter()
            .copied()
            .take_while(|&i| i != answer)
            .filter(|&i| {
                matches!(
                    self.states[i].state,
                    SizedState::Pruned | SizedState::RuledOut
                ) || self.known[i].ruling_out()
            })
            .collect();
        let likely = |i: usize| {
            self.states[i]
                .predicted
                .or(self.bounds[i].map(|(b, _)| b))
                .unwrap_or(0.0)
        };
        // Most likely first; among equals the most expensive (stable sort keeps cost order).
        before.reverse();
        before.sort_by(|&a, &b| likely(b).total_cmp(&likely(a)));
        let wanted = self.spec.rule_out as usize;
        let mut open = false;
        for &i in before.iter().take(wanted) {
            let k = self.known[i];
            if k.ruling_out() {
                open = true;
                continue;
            }
            // Probed already: its verdict stands (a rule-out that held became a candidate and
            // was confirmed, or failed its confirmation).
            if k.ruled_out().is_some() || k.confirmed().is_some() || k.undecided() {
                continue;
            }
            if self.free == 0 {
                open = true;
                continue;
            }
            self.free -= 1;
            open = true;
            self.actions.push(Measure::Check {
                cell: i,
                purpose: CheckPurpose::RuleOut,
                rate: round2(self.target),
                wanted: 1,
            });
            self.states[i].state = SizedState::Measuring;
            self.states[i].why = Some(format!(
                "ruled out by its bound: probing it once at the target, {} rps",
                rate_text(self.target)
            ));
        }
        open
    }

    /// The env the chosen configuration's Deployment patch sets: what the search varied and
    /// nothing else. BENCH_MODE only when the mode was an axis of the search (the user's service
    /// then reads it, or the search could not have told its modes apart); otherwise it is the
    /// built-in target's knob, and a user's Deployment has no use for it.
    fn chosen_env(&self, c: &Cell) -> Vec<EnvVar> {
        let mode_varied = self.spec.search.mode.len() > 1;
        mode_varied
            .then(|| EnvVar::new("BENCH_MODE", c.mode.to_string()))
            .into_iter()
            .chain(c.env.iter().cloned())
            .collect()
    }

    fn chosen(&self, i: usize) -> ChosenConfiguration {
        let c = &self.cells[i];
        // Confirmed at the target rate: it held that at least.
        let held = self.known[i].bracket().held.unwrap_or(self.target);
        ChosenConfiguration {
            configuration: c.name.clone(),
            mode: c.mode.to_string(),
            replicas: c.replicas,
            cpu: c.cpu.as_str().to_owned(),
            memory: c.memory.as_str().to_owned(),
            env: self.chosen_env(c),
            reserved_cpu: round3(self.costs[i]),
            held_rate: held,
            headroom: round3(held / self.spec.traffic - 1.0),
            confirmed: format!(
                "{} of {} probes held {} rps",
                self.spec.confirmations,
                self.spec.confirmations,
                rate_text(self.target)
            ),
            hpa: None,
        }
    }

    fn message(&self, outcome: SizingOutcome, answer: Option<usize>) -> String {
        let target = rate_text(self.target);
        let searched = format!(
            "{} of {} configurations searched",
            self.searched,
            self.cells.len()
        );
        match outcome {
            SizingOutcome::Chosen => {
                let a = answer.unwrap_or_default();
                let pruned = self
                    .states
                    .iter()
                    .filter(|s| matches!(s.state, SizedState::Pruned | SizedState::RuledOut))
                    .count();
                format!(
                    "{} holds {} rps (traffic {} + {}): {} reserved, held {} rps; {searched}, \
                     {pruned} ruled out by bounds",
                    self.cells[a].name,
                    target,
                    rate_text(self.spec.traffic),
                    self.spec.margin,
                    cores(self.costs[a]),
                    rate_or_zero(self.known[a].bracket().held)
                )
            }
            SizingOutcome::NothingHolds => self.nothing_holds(&target, &searched),
            SizingOutcome::OutOfBudget => format!(
                "out of budget (spec.sizing.budget {}) before the cheapest configuration that \
                 holds {target} rps was found: raise it; {searched}",
                self.spec.budget
            ),
            SizingOutcome::Searching => format!("searching for {target} rps; {searched}"),
            SizingOutcome::Confirming => format!("confirming at {target} rps; {searched}"),
            SizingOutcome::RulingOut => {
                format!("probing cheaper configurations at the target, {target} rps; {searched}")
            }
        }
    }

    /// [`Walk::message`] when nothing holds `target` (in words; `searched` says how many
    /// configurations were): the evidence is of another kind than an answer's, the best rate
    /// held, the largest configuration tried and what bounds the largest of the space.
    fn nothing_holds(&self, target: &str, searched: &str) -> String {
        let measured: Vec<usize> = (0..self.cells.len())
            .filter(|&i| self.known[i].searched().is_some())
            .collect();
        let best = measured
            .iter()
            .filter_map(|&i| Some((i, self.known[i].bracket().held?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let largest = measured
            .iter()
            .copied()
            .max_by(|&a, &b| self.costs[a].total_cmp(&self.costs[b]));
        let biggest =
            (0..self.cells.len()).max_by(|&a, &b| self.costs[a].total_cmp(&self.costs[b]));
        let biggest = biggest.map_or(String::new(), |b| {
            let at_most = match (self.bounds[b], self.known[b].bracket().failed) {
                (_, Some(f)) => format!("failed at {} rps", rate_text(f)),
                (Some((bound, _)), None) => format!("holds at most {} rps", rate_text(bound)),
                (None, None) => "was not bounded".into(),
            };
            format!(
                "; the largest in the space, {} ({} reserved), {at_most}",
                self.cells[b].name,
                cores(self.costs[b])
            )
        });
        format!(
            "no configuration holds {target} rps: {}; the largest tried was {}{biggest}; \
             {searched}",
            best.map_or(
                "none held even the first rate probed".into(),
                |(b, held)| {
                    format!(
                        "the best held {} rps ({})",
                        rate_text(held),
                        self.cells[b].name
                    )
                }
            ),
            largest.map_or("none".into(), |l| format!(
                "{} ({} reserved)",
                self.cells[l].name,
                cores(self.costs[l])
            )),
        )
    }
}

/// A rate held in words, 0 when none was (as the status has always said it).
fn rate_or_zero(rate: Option<f64>) -> String {
    rate_text(rate.unwrap_or(0.0))
}

fn cores(c: f64) -> String {
    format!("{} CPU", round3(c))
}
