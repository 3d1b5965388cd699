//! Judging a finished run against `spec.thresholds`: one verdict per threshold and cell, the
//! `ThresholdsMet` condition, and the recommendation (the configuration that meets them all with
//! the least reserved CPU). What a threshold may say, and its checks against the matrix, are the
//! resource's (`crate::resource::thresholds`).
//!
//! Pure functions from documents to documents, shared by the operator and the local runner.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::engine::results::figure::figure;
use crate::engine::results::{noise, paired, variants};
use crate::resource::conditions::{self, Reason, status};
use crate::resource::thresholds::{Reference, describe, figure_text, glob_match, selected};
use crate::resource::{
    BenchmarkRunStatus, Bound, CellPhase, CellResult, CellStatus, Metric, Threshold,
    ThresholdResult, Verdict,
};

/// Judges a finished run in one step: writes `status.thresholds` (every verdict), the
/// `ThresholdsMet` condition (removed when the spec has no thresholds) and
/// `status.summary.recommendation`. Whether a threshold failed is what the condition then says
/// (and what the local runner reads from it for exit code 3). Call it after `status.cells` are
/// final and the summary is written.
pub fn judge_run(
    thresholds: &[Threshold],
    status: &mut BenchmarkRunStatus,
    observed_generation: Option<i64>,
    now: &Time,
) {
    status.thresholds = evaluate(thresholds, &status.cells);
    match condition(&status.thresholds) {
        Some((state, why, message)) => {
            conditions::set_condition(
                &mut status.conditions,
                conditions::THRESHOLDS_MET,
                state,
                why,
                message,
                observed_generation,
                now,
            );
        }
        None => status
            .conditions
            .retain(|c| c.type_ != conditions::THRESHOLDS_MET),
    }
    let recommendation =
        crate::engine::verdict::recommend::recommend(&status.cells, &status.thresholds);
    status
        .summary
        .get_or_insert_with(Default::default)
        .recommendation = Some(recommendation.sentence);
}

/// Why a cell has no figures, or None when it succeeded.
fn not_measured(cell: &CellStatus) -> Option<String> {
    match cell.phase {
        CellPhase::Succeeded => None,
        CellPhase::Failed => Some(format!(
            "cell {} failed{}{}",
            cell.name,
            cell.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            cell.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        CellPhase::Skipped => Some(format!(
            "cell {} was skipped after an earlier cell failed",
            cell.name
        )),
        other => Some(format!("cell {} has not finished ({other})", cell.name)),
    }
}

/// The figure `metric` of `cell` on (phase, endpoint), or why there is none.
fn cell_figure(
    cell: &CellStatus,
    phase: &str,
    endpoint: &str,
    metric: Metric,
) -> Result<(f64, bool), String> {
    if let Some(why) = not_measured(cell) {
        return Err(why);
    }
    let result = cell
        .results
        .iter()
        .find(|r| r.phase == phase && r.endpoint == endpoint)
        .ok_or_else(|| format!("cell {} has no result for {phase}/{endpoint}", cell.name))?;
    figure(result, metric).map_err(|why| format!("{}: {why}", cell.name))
}

/// The phase or endpoint a threshold names, or the only one the cells measured.
fn resolve(given: Option<&str>, cells: &[CellStatus], pick: fn(&CellResult) -> &str) -> String {
    if let Some(given) = given {
        return given.to_owned();
    }
    let mut seen: Vec<&str> = Vec::new();
    for r in cells.iter().flat_map(|c| &c.results) {
        if !seen.contains(&pick(r)) {
            seen.push(pick(r));
        }
    }
    match seen.as_slice() {
        [only] => (*only).to_owned(),
        _ => "?".to_owned(),
    }
}

/// The figures the thresholds judge on cell `cell`, as (phase, endpoint, metric): those of the
/// thresholds that select it, and those of relative thresholds that name it in `of` (their
/// verdict rests on its figure too). An unset phase or endpoint is the only one `results`
/// have, as when judging.
pub fn figures_judged(
    thresholds: &[Threshold],
    cell: &str,
    results: &[CellResult],
) -> Vec<(String, String, Metric)> {
    let only = |given: Option<&str>, pick: fn(&CellResult) -> &str| -> Option<String> {
        if let Some(given) = given {
            return Some(given.to_owned());
        }
        let mut seen: Vec<&str> = results.iter().map(pick).collect();
        seen.dedup();
        match seen.as_slice() {
            [one] => Some((*one).to_owned()),
            _ => None,
        }
    };
    thresholds
        .iter()
        .filter_map(|t| {
            let (metric, bound) = t.limit()?;
            let selects = t.cell.as_deref().is_none_or(|p| glob_match(p, cell));
            if !selects && bound.reference() != Some(cell) {
                return None;
            }
            let phase = only(t.phase.as_deref(), |r| &r.phase)?;
            let endpoint = only(t.endpoint.as_deref(), |r| &r.endpoint)?;
            Some((phase, endpoint, metric))
        })
        .collect()
}

/// Judges every threshold on every cell it selects, in threshold then matrix order. A cell
/// that failed, was skipped or has no sample for the figure fails the threshold, with the
/// reason in the message; a relative threshold also fails when its reference cell has no
/// figure. Latency limits pass strictly below, rps limits strictly above, relative limits at
/// the bound itself.
pub fn evaluate(thresholds: &[Threshold], cells: &[CellStatus]) -> Vec<ThresholdResult> {
    let names: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
    let mut out = Vec::new();
    for (index, t) in thresholds.iter().enumerate() {
        let phase = resolve(t.phase.as_deref(), cells, |r| &r.phase);
        let endpoint = resolve(t.endpoint.as_deref(), cells, |r| &r.endpoint);
        let threshold = describe(t, &phase, &endpoint);
        let Some((metric, bound)) = t.limit() else {
            continue;
        };
        for name in selected(t.cell.as_deref(), &names) {
            let cell = cells.iter().find(|c| c.name == name).expect("selected");
            if !judges_variant(t, &bound, cell) {
                continue;
            }
            let mut result = ThresholdResult {
                index: index as u32,
                threshold: threshold.clone(),
                figure: metric.key().to_owned(),
                cell: name.to_owned(),
                phase: phase.clone(),
                endpoint: endpoint.clone(),
                ..ThresholdResult::default()
            };
            let judged = judge(cell, cells, &phase, &endpoint, metric, &bound);
            match judged {
                Ok(j) => {
                    result.measured = Some(j.measured);
                    result.limit = Some(j.limit);
                    result.ratio = j.ratio;
                    result.verdict = if j.pass { Verdict::Pass } else { Verdict::Fail };
                    result.unstable = j.unstable;
                    result.message = j.message;
                }
                Err((measured, why)) => {
                    result.measured = measured;
                    result.verdict = Verdict::Fail;
                    result.message = why;
                }
            }
            out.push(result);
        }
    }
    out
}

/// True when threshold `t` (of bound `bound`) judges `cell` as far as variants go: of its
/// `variant` if it names one, and not the variant a bound is relative to.
fn judges_variant(t: &Threshold, bound: &Bound, cell: &CellStatus) -> bool {
    let variant = cell.variant.as_deref();
    t.variant
        .as_deref()
        .is_none_or(|want| variant == Some(want))
        && bound
            .reference_variant()
            .is_none_or(|of| variant.is_some_and(|v| v != of))
}

struct Judged {
    measured: f64,
    limit: f64,
    ratio: Option<f64>,
    pass: bool,
    unstable: bool,
    message: String,
}

fn judge(
    cell: &CellStatus,
    cells: &[CellStatus],
    phase: &str,
    endpoint: &str,
    metric: Metric,
    bound: &Bound,
) -> Result<Judged, (Option<f64>, String)> {
    if let Some(of) = bound.reference_variant() {
        let (at_most, factor) = match bound {
            Bound::AtMostOf { factor, .. } => (true, *factor),
            Bound::AtLeastOf { factor, .. } => (false, *factor),
            _ => unreachable!("only relative bounds have a reference variant"),
        };
        return judge_paired(cell, cells, phase, endpoint, metric, (at_most, factor, of));
    }
    let (measured, mut unstable) =
        cell_figure(cell, phase, endpoint, metric).map_err(|why| (None, why))?;
    let key = metric.key();
    let shown = figure_text(metric, measured);
    let (limit, pass, message) = match bound {
        Bound::Below(limit) => {
            let pass = measured < *limit;
            let word = if pass { "below" } else { "not below" };
            (
                *limit,
                pass,
                format!("{key} {shown}, {word} {}", figure_text(metric, *limit)),
            )
        }
        Bound::Above(limit) => {
            let pass = measured > *limit;
            let word = if pass { "above" } else { "not above" };
            (
                *limit,
                pass,
                format!("{key} {shown}, {word} {}", figure_text(metric, *limit)),
            )
        }
        Bound::AtMostOf { factor, of } | Bound::AtLeastOf { factor, of } => {
            let at_most = matches!(bound, Bound::AtMostOf { .. });
            let (limit, pass, message, base_unstable) = judge_against_cell(
                measured,
                cells,
                (phase, endpoint, metric),
                (at_most, *factor, of),
            )?;
            unstable |= base_unstable;
            (limit, pass, message)
        }
    };
    let message = if unstable {
        format!("{message} (unstable: the repetitions spread more than 2x)")
    } else {
        message
    };
    Ok(Judged {
        measured,
        limit,
        ratio: None,
        pass,
        unstable,
        message,
    })
}

/// What [`judge_against_cell`] finds: the limit, whether the figure passed, the message, and
/// whether the reference's figure was unstable.
type AgainstCell = (f64, bool, String, bool);

/// A bound relative to another cell `of`: `measured`, the figure `metric` of stream
/// `phase`/`endpoint`, against `factor` times the reference cell's own (at most that when
/// `at_most`, else at least). The limit, whether it passed, the message, and whether the
/// reference's figure was unstable; or why it cannot be judged (with the figure measured).
/// A limit relative to another cell is a question of its own: [`judge`] asks it of each such
/// threshold, as it asks a fixed limit's.
fn judge_against_cell(
    measured: f64,
    cells: &[CellStatus],
    (phase, endpoint, metric): (&str, &str, Metric),
    (at_most, factor, of): (bool, f64, &Reference),
) -> Result<AgainstCell, (Option<f64>, String)> {
    let key = metric.key();
    let shown = figure_text(metric, measured);
    let reference = cells
        .iter()
        .find(|c| matches!(of, Reference::Cell(name) if *name == c.name));
    let reference = reference.ok_or_else(|| {
        (
            Some(measured),
            format!("reference cell {of} is not in the run"),
        )
    })?;
    let (base, base_unstable) = cell_figure(reference, phase, endpoint, metric)
        .map_err(|why| (Some(measured), format!("reference {why}")))?;
    let limit = factor * base;
    let pass = if at_most {
        measured <= limit
    } else {
        measured >= limit
    };
    let word = bound_word(at_most, pass);
    Ok((
        limit,
        pass,
        format!(
            "{key} {shown}, {word} {factor} x {of}'s {} = {}",
            figure_text(metric, base),
            figure_text(metric, limit)
        ),
        base_unstable,
    ))
}

/// How a figure stands to a relative limit, in words: "at most" or "more than" it for an
/// upper limit (`at_most`), "at least" or "less than" for a lower one, as it `pass`ed or not.
/// One wording for a bound relative to a cell and one relative to a variant.
fn bound_word(at_most: bool, pass: bool) -> &'static str {
    match (at_most, pass) {
        (true, true) => "at most",
        (true, false) => "more than",
        (false, true) => "at least",
        (false, false) => "less than",
    }
}

/// A bound relative to a variant: `cell` against the cell of its configuration in variant
/// `of`, round by round, judged on the median of the per-round ratios (drift between rounds
/// cancels out of each ratio). `limit` is (at most?, factor, variant). The measured figure and
/// the limit reported are the medians over the rounds, for reading; the verdict is the ratio's.
fn judge_paired(
    cell: &CellStatus,
    cells: &[CellStatus],
    phase: &str,
    endpoint: &str,
    metric: Metric,
    (at_most, factor, of): (bool, f64, &str),
) -> Result<Judged, (Option<f64>, String)> {
    let reference = cells
        .iter()
        .find(|c| c.configuration == cell.configuration && c.variant.as_deref() == Some(of))
        .ok_or_else(|| (None, format!("{} has no cell in variant {of}", cell.name)))?;
    for c in [cell, reference] {
        if let Some(why) = not_measured(c) {
            return Err((None, why));
        }
    }
    let (base, candidate) = paired_rounds(cell, reference, (phase, endpoint, metric));
    let key = metric.key();
    let paired =
        paired::paired(&base, &candidate, !metric.higher_is_better()).ok_or_else(|| {
            (
                None,
                format!(
                    "no round measured {phase}/{endpoint} {key} above 0 in both {} and {}",
                    cell.name, reference.name
                ),
            )
        })?;
    let (measured, base_median) = (noise::median(&candidate), noise::median(&base));
    let pass = if at_most {
        paired.ratio <= factor
    } else {
        paired.ratio >= factor
    };
    let word = bound_word(at_most, pass);
    let interval = paired
        .interval
        .map(|(low, high)| format!(", 95% interval {low:.3}–{high:.3}"))
        .unwrap_or_default();
    Ok(Judged {
        measured,
        limit: factor * base_median,
        ratio: Some(paired.ratio),
        pass,
        unstable: false,
        message: format!(
            "{key} median ratio {:.3} over {} round(s){interval}, {word} {factor} x variant \
             {of} ({} {}, {} {})",
            paired.ratio,
            paired.ratios.len(),
            reference.name,
            figure_text(metric, base_median),
            cell.name,
            figure_text(metric, measured)
        ),
    })
}

/// The figure `metric` of stream `phase`/`endpoint` in each round both `reference` (the
/// base) and `cell` (the candidate) measured it: (the base's, the candidate's), round by
/// round in the candidate's order. Pairing the rounds is what makes the comparison paired, so it
/// is its own step, before [`judge_paired`] judges the pairs.
fn paired_rounds(
    cell: &CellStatus,
    reference: &CellStatus,
    (phase, endpoint, metric): (&str, &str, Metric),
) -> (Vec<f64>, Vec<f64>) {
    let per_round = |c: &CellStatus| -> Vec<(u32, Option<f64>)> {
        variants::rounds(c)
            .into_iter()
            .map(|(n, results)| {
                let value = results
                    .iter()
                    .find(|r| r.phase == phase && r.endpoint == endpoint)
                    .and_then(|r| figure(r, metric).ok())
                    .map(|(v, _)| v);
                (n, value)
            })
            .collect()
    };
    let theirs = per_round(reference);
    per_round(cell)
        .into_iter()
        .filter_map(|(n, mine)| {
            let (_, base) = theirs.iter().find(|(m, _)| *m == n)?;
            Some(((*base)?, mine?))
        })
        .unzip()
}

/// The `ThresholdsMet` condition for `results`: status, reason and a message naming the
/// failed verdicts. None when there is nothing to judge (the spec has no thresholds), so the
/// condition is never set and `kubectl wait --for=condition=ThresholdsMet` keeps waiting
/// rather than passing vacuously.
pub fn condition(results: &[ThresholdResult]) -> Option<(&'static str, Reason, String)> {
    if results.is_empty() {
        return None;
    }
    let failed: Vec<&ThresholdResult> = results
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .collect();
    if failed.is_empty() {
        return Some((
            status::TRUE,
            Reason::ThresholdsPassed,
            format!("all {} threshold verdicts passed", results.len()),
        ));
    }
    // A condition message is read in `kubectl describe`: name the first few in full.
    const NAMED: usize = 5;
    let mut message = format!(
        "{} of {} threshold verdicts failed: ",
        failed.len(),
        results.len()
    );
    let named: Vec<String> = failed
        .iter()
        .take(NAMED)
        .map(|r| format!("{} {} ({})", r.cell, r.threshold, r.message))
        .collect();
    message.push_str(&named.join("; "));
    if failed.len() > NAMED {
        message.push_str(&format!("; and {} more", failed.len() - NAMED));
    }
    Some((status::FALSE, Reason::ThresholdsFailed, message))
}

#[cfg(test)]
mod tests;
