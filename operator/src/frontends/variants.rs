//! The variants of one run side by side: each candidate against the base, per configuration,
//! from `status.variants` (the engine's paired comparison). Shared by the report, the lines a
//! finished run prints, `benchmatrix compare RUN` with one run, and the regression gate of
//! `benchmatrix run` and `kubectl benchmatrix run` (`--max-regression`), so that every place
//! reads one verdict the same way.
//!
//! Also `--base IMAGE --candidate IMAGE` of `kubectl benchmatrix run`: the two variants written
//! into the spec, so a CI job needs no YAML templating.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::frontends::compare::{CompareOptions, Compared, EXIT_BAD_INPUT};
use crate::frontends::report::write_atomically;

use crate::engine::results::noise::ALPHA;
use crate::resource::BenchmarkRunStatus;
use crate::resource::status::{ChangeVerdict, RatioFigure, VariantComparison};

/// Exit code of a run whose candidate regressed beyond `--max-regression` (as a failed
/// threshold, and as `benchmatrix compare`: the answer a CI gate asks for).
pub use crate::engine::verdict::exit::GATE_FAILED as EXIT_REGRESSION;

/// `--max-regression`, shared by `benchmatrix run` and `kubectl benchmatrix run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GateArgs {
    /// With spec.variants: exit 3 when a candidate's p50, p99 or throughput is worse than the
    /// base's by more than PCT percent (the median of the per-round ratios) and the paired
    /// test says so at 5% (Wilcoxon signed-rank, one-sided). Unset: variants are reported,
    /// not gated (thresholds with ofVariant gate them from the YAML).
    #[arg(long, value_name = "PCT")]
    pub max_regression: Option<f64>,
}

impl GateArgs {
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

/// How much worse the candidate is, in percent of the base: positive when worse (higher
/// latency, lower throughput), negative when better. For throughput it is measured the way
/// latency is (base over candidate), so that +10% means the same on both.
pub fn worse_pct(figure: &RatioFigure) -> f64 {
    if figure.figure == "rps" {
        (1.0 / figure.ratio - 1.0) * 100.0
    } else {
        (figure.ratio - 1.0) * 100.0
    }
}

/// True when `figure` is a regression beyond `max_regression` percent: worse by more than
/// that, and significantly so at 5%.
pub fn regressed(figure: &RatioFigure, max_regression: f64) -> bool {
    figure.p_worse < ALPHA && worse_pct(figure) > max_regression
}

/// Every figure of `variants` that regressed beyond `max_regression`, with its comparison.
pub fn regressions(
    variants: &[VariantComparison],
    max_regression: f64,
) -> Vec<(&VariantComparison, &RatioFigure)> {
    variants
        .iter()
        .flat_map(|c| c.figures.iter().map(move |f| (c, f)))
        .filter(|(_, f)| regressed(f, max_regression))
        .collect()
}

/// The run's exit code once the gate is applied: a run that ended 0, 1 (some cell failed) or
/// 3 (a threshold failed) ends 3 when a candidate regressed beyond `--max-regression`; an
/// interrupted or refused run keeps its code, as does any run without the option. The lines to
/// print say why (also beside a failed threshold, which has its own line).
pub fn gated_code(code: u8, status: &BenchmarkRunStatus, gate: &GateArgs) -> (u8, Vec<String>) {
    let Some(max) = gate.max_regression else {
        return (code, Vec::new());
    };
    if !matches!(code, 0 | 1 | EXIT_REGRESSION) {
        return (code, Vec::new());
    }
    if status.variants.is_empty() {
        return (
            code,
            vec![format!(
                "--max-regression {max}%: the run compared no variants (spec.variants), so \
                 nothing was gated"
            )],
        );
    }
    let found = regressions(&status.variants, max);
    if found.is_empty() {
        return (
            code,
            vec![format!(
                "no candidate regressed beyond {max}% (--max-regression)"
            )],
        );
    }
    let mut lines = vec![format!(
        "{} figure(s) regressed beyond {max}% (--max-regression): exit {EXIT_REGRESSION}",
        found.len()
    )];
    for (c, f) in found {
        lines.push(format!("  {}", figure_sentence(c, f)));
    }
    (EXIT_REGRESSION, lines)
}

/// "pool-x1: candidate vs base mixed/fast p99 +8.1% (ratio 1.081, 95% interval
/// 1.052–1.113, p=0.016, 6 rounds)".
pub fn figure_sentence(c: &VariantComparison, f: &RatioFigure) -> String {
    format!(
        "{}: {} {:+.1}% (ratio {:.3}, 95% interval {}, p={:.3}, {} rounds)",
        c.configuration,
        figure_name(c, f),
        worse_pct(f),
        f.ratio,
        interval(f),
        f.p_worse.min(f.p_better),
        c.rounds
    )
}

/// "candidate vs base mixed/fast p99".
fn figure_name(c: &VariantComparison, f: &RatioFigure) -> String {
    format!(
        "{} vs {} {}/{} {}",
        c.candidate, c.base, f.phase, f.endpoint, f.figure
    )
}

fn interval(f: &RatioFigure) -> String {
    match (f.ratio_low, f.ratio_high) {
        (Some(low), Some(high)) => format!("{low:.3}–{high:.3}"),
        _ => "needs 3 rounds".into(),
    }
}

fn value(figure: &str, v: f64) -> String {
    if figure == "rps" {
        format!("{v:.1} rps")
    } else {
        format!("{v:.2} ms")
    }
}

/// A figure's mark wherever it is shown (terminal, report.md, compare.md), by the rule the exit
/// code and the JUnit case follow: without `--max-regression`, the status's own verdict
/// (significant at 5% and beyond a 5% change); with it, a regression is what [`regressed`]
/// says, so a +4% figure gated at 3% is marked a regression and a +7% one gated at 10% is
/// marked as within the gate, never both ways at once.
pub fn mark(f: &RatioFigure, max_regression: Option<f64>) -> String {
    let Some(max) = max_regression else {
        return match f.verdict {
            ChangeVerdict::Regression => "regression".into(),
            ChangeVerdict::Improvement => "improvement".into(),
            ChangeVerdict::WithinNoise => "~ within noise".into(),
        };
    };
    if regressed(f, max) {
        format!("regression beyond {max}%")
    } else if f.verdict == ChangeVerdict::Improvement {
        "improvement".into()
    } else if f.p_worse < ALPHA && worse_pct(f) > 0.0 {
        format!("worse, within {max}% (--max-regression)")
    } else {
        "~ within noise".into()
    }
}

/// The side-by-side table: one row per configuration, candidate, stream and figure, with the
/// medians of both sides, the median per-round ratio, its interval, the paired test's p-value
/// (the smaller of the two directions) and its [`mark`] under `max_regression`. Empty when
/// the run has no variants.
pub fn table(variants: &[VariantComparison], max_regression: Option<f64>) -> String {
    if variants.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "| configuration | figure | base | candidate | ratio | 95% interval | p | verdict |\n\
         |---|---|---:|---:|---:|---|---:|---|\n",
    );
    for c in variants {
        for f in &c.figures {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.3} ({:+.1}%) | {} | {:.3} | {} |",
                c.configuration,
                figure_name(c, f),
                value(&f.figure, f.base),
                value(&f.figure, f.candidate),
                f.ratio,
                worse_pct(f),
                interval(f),
                f.p_worse.min(f.p_better),
                mark(f, max_regression)
            );
        }
    }
    o
}

/// `## Variants` of report.md: how the variants were measured, then [`table`] marked as the
/// run's `--max-regression` gate judged it. Empty without variants.
pub fn report_section(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> String {
    if status.variants.is_empty() {
        return String::new();
    }
    let rounds: Vec<String> = status
        .variants
        .iter()
        .map(|c| format!("{} {}", c.configuration, c.rounds))
        .collect();
    format!(
        "\n## Variants\n\nEach round measured a configuration's variants back to back on the \
         same nodes, in ABBA order; a figure's evidence is its per-round ratio (candidate / \
         base), so drift between rounds cancels out. Ratio: the median over the rounds, with a \
         95% bootstrap interval; p: exact Wilcoxon signed-rank test on the log ratios (the \
         smaller one-sided p); {}. Rounds: {}.\n\n{}",
        gate_rule(max_regression),
        rounds.join(", "),
        table(&status.variants, max_regression)
    )
}

/// How [`mark`] judged, in words for report.md.
fn gate_rule(max_regression: Option<f64>) -> String {
    match max_regression {
        None => "a regression or improvement is significant at 5% and beyond a 5% change".into(),
        Some(max) => format!(
            "a regression is significant at 5% and worse than {max}% (`--max-regression`, as \
             the exit code judged it); an improvement is significant at 5% and beyond a 5% change"
        ),
    }
}

/// The terminal's lines after a run with variants: one per figure, as [`figure_sentence`],
/// with its [`mark`] under `max_regression`.
pub fn closing_lines(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Vec<String> {
    if status.variants.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        "variants (candidate / base, paired rounds):".into(),
    ];
    for c in &status.variants {
        for f in &c.figures {
            lines.push(format!(
                "  {} [{}]",
                figure_sentence(c, f),
                mark(f, max_regression)
            ));
        }
    }
    lines
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

/// `benchmatrix compare RUN` (and the plugin's) with one run: its variants' [`table`] on
/// stdout and, with `--out`, in compare.md; exit 3 when a candidate figure regressed beyond
/// both `--max-regression` and `--min-change` (as two runs are judged), 2 when the run has no
/// variants to compare.
pub fn compare_within(run: &Compared, options: &CompareOptions, command: &str) -> ExitCode {
    if !(options.max_regression >= 0.0 && options.min_change >= 0.0) {
        eprintln!("{command}: --max-regression and --min-change must be 0 or more");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if run.status.variants.is_empty() {
        eprintln!(
            "{command}: {} compared no variants (spec.variants): give a second run to compare \
             it with",
            run.label
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if run.status.variants.iter().all(|c| c.figures.is_empty()) {
        // Every candidate's rounds failed on one side or the other: a gate that compared
        // nothing must not pass.
        eprintln!(
            "{command}: nothing to compare: {} has no round that both a base and a candidate \
             measured (exit {EXIT_BAD_INPUT})",
            run.label
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let limit = options.max_regression.max(options.min_change);
    let found = regressions(&run.status.variants, limit);
    let mut text = table(&run.status.variants, Some(limit));
    if found.is_empty() {
        let _ = writeln!(text, "\nNo candidate regressed beyond {limit}%.");
    } else {
        let _ = writeln!(
            text,
            "\n**{} figure(s) regressed beyond {limit}%** (`--max-regression`, \
             `--min-change`): exit {EXIT_REGRESSION}.",
            found.len()
        );
    }
    print!("{text}");
    if let Some(dir) = &options.out {
        let md = format!("# Variants\n\n- run: `{}`\n\n{text}", run.label);
        let written = std::fs::create_dir_all(dir)
            .and_then(|_| write_atomically(&dir.join("compare.md"), md.as_bytes()));
        if let Err(e) = written {
            eprintln!("{command}: cannot write into {}: {e}", dir.display());
            return ExitCode::from(crate::engine::verdict::exit::FAILED);
        }
    }
    if found.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REGRESSION)
    }
}

#[cfg(test)]
mod tests;
