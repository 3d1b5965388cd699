//! `benchmatrix compare RUN` with one run: the run's own variants, base against candidate,
//! in paired rounds (the stronger evidence, where two runs compared afterwards carry all the
//! drift between them).

use std::fmt::Write as _;
use std::process::ExitCode;

use super::{CompareOptions, Compared};
use crate::engine::verdict::exit::{self, FAILED};
use crate::engine::verdict::gate::RegressionGate;
use crate::frontends::report::variants::table;
use crate::frontends::report::write_atomically;
use crate::frontends::variants::gate_lines;

/// `benchmatrix compare RUN` (and the plugin's) with one run: its variants' [`table`] on
/// stdout and, with `--out`, in compare.md; exit 3 when the run's own gate fails at
/// `--max-regression` (the same judgement and lines as `benchmatrix run --max-regression`),
/// 2 when the run has no variants to compare.
pub fn compare_within(run: &Compared, options: &CompareOptions, command: &str) -> ExitCode {
    if !(options.max_regression >= 0.0 && options.min_change >= 0.0) {
        eprintln!("{command}: --max-regression and --min-change must be 0 or more");
        return ExitCode::from(exit::BAD_INPUT);
    }
    if run.status.variants.is_empty() {
        eprintln!(
            "{command}: {} compared no variants (spec.variants): give a second run to compare \
             it with",
            run.label
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    if run.status.variants.iter().all(|c| c.figures.is_empty()) {
        // Every candidate's rounds failed on one side or the other: a gate that compared
        // nothing must not pass.
        eprintln!(
            "{command}: nothing to compare: {} has no round that both a base and a candidate \
             measured (exit {})",
            run.label,
            exit::BAD_INPUT
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    // Gated as `benchmatrix run` gates the same run: --max-regression alone (--min-change is
    // for two runs, whose noise the paired test of one run does not carry).
    let limit = options.max_regression;
    let gate = RegressionGate::judge(&run.status, Some(limit));
    let mut text = table(&run.status.variants, Some(limit));
    text.push('\n');
    for line in gate_lines(&gate) {
        let _ = writeln!(text, "{line}");
    }
    print!("{text}");
    if let Some(dir) = &options.out {
        let md = format!("# Variants\n\n- run: `{}`\n\n{text}", run.label);
        let written = std::fs::create_dir_all(dir)
            .and_then(|_| write_atomically(&dir.join("compare.md"), md.as_bytes()));
        if let Err(e) = written {
            eprintln!("{command}: cannot write into {}: {e}", dir.display());
            return ExitCode::from(FAILED);
        }
    }
    if gate.failed() {
        ExitCode::from(exit::GATE_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
