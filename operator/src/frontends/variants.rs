//! The variants options of `benchmatrix run` and `kubectl benchmatrix run`: the regression
//! gate (`--max-regression`), judged by the engine (`engine::verdict::gate`, through
//! `Outcome::gated`) and said here, and `--base IMAGE --candidate IMAGE` of
//! `kubectl benchmatrix run`: the two variants written into the spec, so a CI job needs no YAML
//! templating.

use crate::engine::verdict::exit;
use crate::engine::verdict::gate::RegressionGate;
use crate::engine::verdict::outcome::Outcome;
use crate::frontends::report::variants::figure_sentence;
use crate::resource::BenchmarkRunStatus;

/// The one default of every regression gate: `benchmatrix run`, `size` and `compare`, the
/// plugin's `run` and `compare`, and the GitHub Action's `max-regression` input (action.yml
/// and scripts/action/run.sh say the same number; a test holds them to it).
///
/// Why 10%: a figure is called a regression only when its change is beyond the 5% minimum
/// practical change and the test says so at 5%, so the gate's own margin is what a CI job
/// fails on. Two separate runs of identical code were measured to move a figure by up to
/// 9.6% under a neighbour's load (BENCHMARKS.md, "Catching a regression"), and the Action
/// (the gate most jobs use) already failed at 10%; 5% or 0% would fail the two-run flow on
/// noise, while paired variants caught every +10% candidate measured. Ask for less with
/// `--max-regression 5` when the variants run side by side.
pub const DEFAULT_MAX_REGRESSION: f64 = 10.0;

/// `--max-regression`, shared by `benchmatrix run` and `kubectl benchmatrix run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GateArgs {
    /// With spec.variants: exit 3 when a candidate's p50, p99 or throughput is worse than the
    /// base's by more than PCT percent (the median of the per-round ratios) and the paired
    /// test says so at 5% (Wilcoxon signed-rank, one-sided). Default 10, the same for run,
    /// size, compare, the kubectl plugin and the GitHub Action: a regression is already only
    /// called beyond a 5% change, and two runs of identical code were measured to move by up
    /// to 9.6%, so 10 fails on a real regression, not on noise. A run without variants has
    /// nothing to gate unless this is given.
    #[arg(long, value_name = "PCT")]
    pub max_regression: Option<f64>,
}

impl GateArgs {
    /// The gate a run applies: `--max-regression` when given, else [`DEFAULT_MAX_REGRESSION`]
    /// for a run with variants (a run without them has nothing to gate, and says nothing of
    /// a gate nobody asked for).
    pub fn resolved(&self, has_variants: bool) -> GateArgs {
        GateArgs {
            max_regression: self
                .max_regression
                .or(has_variants.then_some(DEFAULT_MAX_REGRESSION)),
        }
    }

    /// The option's problem, said as `command: ...`, or None when it is usable.
    pub fn problem(&self) -> Option<String> {
        match self.max_regression {
            Some(p) if !(p.is_finite() && p >= 0.0) => {
                Some(format!("--max-regression must be 0 or more, not {p}"))
            }
            _ => None,
        }
    }
}

/// The lines a finished run prints for its gate (`--max-regression`): that nothing was
/// compared, that nothing regressed, or each figure that did, as [`figure_sentence`]. None
/// without the option, or after an interrupt or a refusal (see `Outcome::gated`).
pub fn gate_lines(gate: &RegressionGate) -> Vec<String> {
    match gate {
        RegressionGate::NotAsked => Vec::new(),
        RegressionGate::NothingCompared { max } => vec![format!(
            "--max-regression {max}%: the run compared no variants (spec.variants), so nothing \
             was gated"
        )],
        RegressionGate::Held { max } => vec![format!(
            "no candidate regressed beyond {max}% (--max-regression)"
        )],
        RegressionGate::Uncompared { max, comparisons } => {
            let mut lines = vec![format!(
                "--max-regression {max}%: {} comparison(s) of capacities have no round in which \
                 both variants found one, so the gate cannot pass them: exit {}",
                comparisons.len(),
                exit::GATE_FAILED
            )];
            for c in comparisons {
                lines.push(format!(
                    "  {}: {} vs {}: see each cell's capacity message",
                    c.configuration, c.candidate, c.base
                ));
            }
            lines
        }
        RegressionGate::Regressed { max, figures } => {
            let mut lines = vec![format!(
                "{} figure(s) regressed beyond {max}% (--max-regression): exit {}",
                figures.len(),
                exit::GATE_FAILED
            )];
            for (c, f) in figures {
                lines.push(format!("  {}", figure_sentence(c, f)));
            }
            lines
        }
    }
}

/// The exit code of a finished run under `gate` (`Outcome::gated`), after printing its gate's
/// [`gate_lines`] with `say`.
pub fn finish(status: &BenchmarkRunStatus, gate: &GateArgs, mut say: impl FnMut(&str)) -> u8 {
    let (outcome, judged) = Outcome::gated(status, gate.max_regression);
    for line in gate_lines(&judged) {
        say(&line);
    }
    outcome.code()
}

/// The YAML of a BenchmarkRun `text` with `spec.variants` set to a `base` and a `candidate`
/// image (`kubectl benchmatrix run --base IMAGE --candidate IMAGE`). Refused when the file
/// already names variants (which would it mean?) or when only one of the two is given.
pub fn with_images(text: &str, base: &str, candidate: &str) -> Result<String, String> {
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|e| format!("not a YAML object: {e}"))?;
    let spec = doc
        .get_mut("spec")
        .and_then(serde_yaml::Value::as_mapping_mut)
        .ok_or("has no spec to add --base and --candidate to")?;
    if spec.contains_key("variants") {
        return Err(
            "already sets spec.variants: give the images there, or drop --base and --candidate"
                .into(),
        );
    }
    for (flag, image) in [("--base", base), ("--candidate", candidate)] {
        if image.trim().is_empty() || image.chars().any(char::is_whitespace) {
            return Err(format!("{flag} {image:?} is not an image reference"));
        }
    }
    let variant = |name: &str, image: &str| {
        let mut m = serde_yaml::Mapping::new();
        m.insert("name".into(), name.into());
        m.insert("image".into(), image.into());
        serde_yaml::Value::Mapping(m)
    };
    spec.insert(
        "variants".into(),
        serde_yaml::Value::Sequence(vec![variant("base", base), variant("candidate", candidate)]),
    );
    serde_yaml::to_string(&doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
