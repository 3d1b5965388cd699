//! Each candidate variant against the base, per configuration, from the cells' rounds: the
//! figures of status.variants, and how precise their ratios are (for repetitions until
//! precise). The statistics are [`super::paired`]'s.

use super::noise::Direction;
use super::noise::{MIN_PRACTICAL_CHANGE, figure_key};
use super::paired::{self, Paired};
use crate::resource::status::{ChangeVerdict, Percentile, RatioFigure, VariantComparison};
use crate::resource::{CellPhase, CellResult, CellStatus, RepetitionStatus};

/// The figures a candidate is compared with the base on, per stream, and whether lower is
/// better for each.
const FIGURES: [(VariantFigure, bool); 3] = [
    (VariantFigure::Percentile(Percentile::P50), true),
    (VariantFigure::Percentile(Percentile::P99), true),
    (VariantFigure::Rps, false),
];

#[derive(Debug, Clone, Copy)]
enum VariantFigure {
    Percentile(Percentile),
    Rps,
}

impl VariantFigure {
    fn key(self) -> &'static str {
        match self {
            VariantFigure::Percentile(p) => figure_key(p),
            VariantFigure::Rps => super::noise::RPS,
        }
    }

    /// The figure of `r`, when it has one its samples support.
    fn of(self, r: &CellResult) -> Option<f64> {
        match self {
            VariantFigure::Percentile(p) if r.supports(p) => r.latency_ms.map(|l| l.get(p)),
            VariantFigure::Percentile(_) => None,
            VariantFigure::Rps => Some(r.rps),
        }
    }
}

/// The key of a capacity compared between variants (see `capacity_comparison`): the rate held
/// at the service level, where higher is better.
pub const CAPACITY: &str = "capacity";

/// Whether lower is better for a figure of `status.variants`, by its key (`p50` and `p99`:
/// latency; `rps` and `capacity`: throughput, where higher is better).
pub fn lower_is_better(key: &str) -> bool {
    key != CAPACITY
        && FIGURES
            .iter()
            .find(|(figure, _)| figure.key() == key)
            .is_none_or(|(_, lower)| *lower)
}

/// The cells of each configuration that has variants, in matrix order (its base first).
pub fn groups(cells: &[CellStatus]) -> Vec<Vec<usize>> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let Some(configuration) = c.configuration.as_ref().filter(|_| c.variant.is_some()) else {
            continue;
        };
        match out.iter_mut().find(|(name, _)| name == configuration) {
            Some((_, members)) => members.push(i),
            None => out.push((configuration.clone(), vec![i])),
        }
    }
    out.into_iter().map(|(_, members)| members).collect()
}

/// Each candidate against the base in every configuration of `cells`.
pub fn compare(cells: &[CellStatus]) -> Vec<VariantComparison> {
    groups(cells)
        .iter()
        .flat_map(|group| compare_group(cells, group))
        .collect()
}

/// Each candidate of one configuration (the cells `group`, base first) against its base.
pub fn compare_group(cells: &[CellStatus], group: &[usize]) -> Vec<VariantComparison> {
    let Some((&base, candidates)) = group.split_first() else {
        return Vec::new();
    };
    let base = &cells[base];
    candidates
        .iter()
        .map(|&i| comparison(base, &cells[i]))
        .collect()
}

/// `candidate` against `base` over the rounds both measured.
fn comparison(base: &CellStatus, candidate: &CellStatus) -> VariantComparison {
    if base.capacity.is_some() || candidate.capacity.is_some() {
        return capacity_comparison(base, candidate);
    }
    let base_rounds = rounds(base);
    let candidate_rounds = rounds(candidate);
    let both: Vec<(&[CellResult], &[CellResult])> = base_rounds
        .iter()
        .filter_map(|(n, b)| {
            let (_, c) = candidate_rounds.iter().find(|(m, _)| m == n)?;
            Some((*b, *c))
        })
        .collect();
    let streams: Vec<(&str, &str)> = both
        .first()
        .map(|(b, _)| {
            b.iter()
                .map(|r| (r.phase.as_str(), r.endpoint.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut figures = Vec::new();
    for &(phase, endpoint) in &streams {
        for &(figure, lower_is_better) in &FIGURES {
            figures.extend(ratio_figure(
                &both,
                phase,
                endpoint,
                figure,
                lower_is_better,
            ));
        }
    }
    VariantComparison {
        configuration: base.configuration.clone().unwrap_or_default(),
        base: base.variant.clone().unwrap_or_default(),
        candidate: candidate.variant.clone().unwrap_or_default(),
        rounds: both.len() as u32,
        figures,
    }
}

/// One figure of one stream over the rounds `both` measured; `None` when no round has it on
/// both sides (a percentile too few samples support, say).
fn ratio_figure(
    both: &[(&[CellResult], &[CellResult])],
    phase: &str,
    endpoint: &str,
    figure: VariantFigure,
    lower_is_better: bool,
) -> Option<RatioFigure> {
    let find = |results: &[CellResult]| {
        results
            .iter()
            .find(|r| r.phase == phase && r.endpoint == endpoint)
            .and_then(|r| figure.of(r))
    };
    let (base, candidate): (Vec<f64>, Vec<f64>) = both
        .iter()
        .filter_map(|(b, c)| Some((find(b)?, find(c)?)))
        .unzip();
    paired_figure(
        (phase, endpoint, figure.key()),
        &base,
        &candidate,
        lower_is_better,
    )
}

/// The figure `(phase, endpoint, key)` of a candidate against its base from their values in
/// the same rounds (`base[i]` and `candidate[i]` measured in one round); `None` when no round
/// has a ratio.
fn paired_figure(
    (phase, endpoint, key): (&str, &str, &str),
    base: &[f64],
    candidate: &[f64],
    lower_is_better: bool,
) -> Option<RatioFigure> {
    let p = paired::paired(base, candidate, lower_is_better)?;
    Some(RatioFigure {
        phase: phase.to_owned(),
        endpoint: endpoint.to_owned(),
        figure: key.to_owned(),
        base: super::noise::median(base),
        candidate: super::noise::median(candidate),
        verdict: verdict(&p, lower_is_better),
        ratio_low: p.interval.map(|i| i.0),
        ratio_high: p.interval.map(|i| i.1),
        ratio: p.ratio,
        p_worse: p.p_worse,
        p_better: p.p_better,
        ratios: p.ratios,
    })
}

/// Two cells that searched for capacity, compared on it alone: each round's held rate of the
/// candidate over the same round's of the base, in the rounds where both found a capacity.
/// Their latencies are not compared: each was measured at the rate its own cell held. A side
/// without a capacity (in any round) leaves the comparison without a figure, which the
/// regression gate does not take as a pass (`engine::verdict::gate`).
fn capacity_comparison(base: &CellStatus, candidate: &CellStatus) -> VariantComparison {
    // A side that ended without a capacity (some round found none) has no figure to pair:
    // pairing its other rounds would drop its worst one.
    let held = |c: &CellStatus| {
        c.capacity
            .as_ref()
            .filter(|cap| cap.found)
            .map(|cap| cap.held_by_round())
            .unwrap_or_default()
    };
    let candidate_held = held(candidate);
    let (base_rates, candidate_rates): (Vec<f64>, Vec<f64>) = held(base)
        .into_iter()
        .filter_map(|(round, b)| {
            let (_, c) = candidate_held.iter().find(|(r, _)| *r == round)?;
            Some((b, *c))
        })
        .unzip();
    let key = (crate::resource::capacity::PROBE_PHASE, "mix", CAPACITY);
    let figure = paired_figure(key, &base_rates, &candidate_rates, false);
    VariantComparison {
        configuration: base.configuration.clone().unwrap_or_default(),
        base: base.variant.clone().unwrap_or_default(),
        candidate: candidate.variant.clone().unwrap_or_default(),
        rounds: base_rates.len() as u32,
        figures: figure.into_iter().collect(),
    }
}

fn verdict(p: &Paired, lower_is_better: bool) -> ChangeVerdict {
    match p.direction(lower_is_better, MIN_PRACTICAL_CHANGE) {
        Direction::Worse => ChangeVerdict::Regression,
        Direction::Better => ChangeVerdict::Improvement,
        Direction::WithinNoise => ChangeVerdict::WithinNoise,
    }
}

/// A cell's measured rounds, by number: each successful repetition's results, or for a cell
/// measured once, its results as round 1.
pub fn rounds(c: &CellStatus) -> Vec<(u32, &[CellResult])> {
    if c.repetitions.is_empty() {
        return if c.phase == CellPhase::Succeeded {
            vec![(1, c.results.as_slice())]
        } else {
            Vec::new()
        };
    }
    RepetitionStatus::measured(&c.repetitions)
        .map(|r| (r.repetition, r.results.as_slice()))
        .collect()
}

/// The widest ratio interval among `comparisons`, in percent of its ratio, with the figure's
/// name ("candidate/base mixed/fast p99"); `None` for a figure without an interval yet (fewer
/// than 3 rounds), which is as if infinitely wide. `None` overall when there is no figure.
pub fn widest(comparisons: &[VariantComparison]) -> Option<(String, Option<f64>)> {
    let mut out: Option<(String, Option<f64>)> = None;
    for c in comparisons {
        for f in &c.figures {
            let width = match (f.ratio_low, f.ratio_high) {
                (Some(low), Some(high)) if f.ratio > 0.0 => Some((high - low) / f.ratio * 100.0),
                _ => None,
            };
            let name = format!(
                "{}/{} {}/{} {}",
                c.candidate, c.base, f.phase, f.endpoint, f.figure
            );
            let wider = match (&out, width) {
                (None, _) => true,
                (Some((_, Some(_))), None) => true,
                (Some((_, Some(w))), Some(v)) => v > *w,
                (Some((_, None)), _) => false,
            };
            if wider {
                out = Some((name, width));
            }
        }
    }
    out
}
