//! Tables and charts rendered from a BenchmarkRun status (plus, when at hand, the load
//! generator's raw result per cell for the latency-over-time charts). Pure functions from
//! documents to text; `write_report` is the only one that writes to the disk, each file
//! through [`write_atomically`].

pub mod benchmark_json;
pub mod capacity;
mod capacity_chart;
mod charts;
pub mod ci;
pub mod files;
pub mod forest;
pub mod headline;
mod hockey;
mod html;
pub mod junit;
pub mod markdown;
pub mod neighbours;
pub mod node_effect;
pub mod plot;
pub mod recommendation;
pub mod sizing;
mod sizing_map;
pub mod svg;
mod table;
pub mod variants;
pub mod verdicts;

use std::path::{Path, PathBuf};

use benchmatrix_loadgen::result::RunResult;

use crate::resource::status::Percentile;
use crate::resource::{BenchmarkRunStatus, CellRatio, CellResult, Summary};

pub use charts::{charts, file_part};
pub use files::write_atomically;
pub use table::{TABLE_WIDTH, comparison_table, wrap};

/// Printed for a figure that does not exist (no successful request): never "0.0".
pub const ABSENT: &str = "—";

/// Appended to a percentile its samples cannot support (see [`Percentile::min_samples`]).
pub const THIN: &str = "*";

/// Arguments of `benchmatrix report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A status.yaml written by `benchmatrix run`, or a whole BenchmarkRun (its `.status` is used).
    pub status: PathBuf,
    /// Folder for report.md, report.html and the charts (default: the status file's folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Judge the run's variants as `run --max-regression PCT` does, so the report's verdict and
    /// exit code are the ones that run gave.
    #[arg(long, value_name = "PCT")]
    pub max_regression: Option<f64>,
}

/// Renders a saved status: report.md and charts into the output folder, the comparison table
/// to stdout. Exit 2 when the file is unreadable or not a status.
pub fn run(args: ReportArgs) -> std::process::ExitCode {
    const COMMAND: &str = "benchmatrix report";
    match read_status_file(&args.status) {
        Ok(status) => {
            let dir = args
                .status
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let out = args.out.unwrap_or_else(|| dir.clone());
            let raw = read_raw(&dir, &status);
            let source = args.status.display().to_string();
            render_gated(&status, (&source, &raw), &out, COMMAND, args.max_regression)
        }
        Err(e) => {
            eprintln!("{COMMAND}: {e}");
            std::process::ExitCode::from(crate::engine::verdict::exit::BAD_INPUT)
        }
    }
}

/// Reads a status file (bare, or a whole BenchmarkRun), or says why it is not one: "cannot
/// read FILE: ..." or "FILE is not a BenchmarkRun status: ...".
pub fn read_status_file(path: &Path) -> Result<BenchmarkRunStatus, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_status(&text).map_err(|e| format!("{} is not a BenchmarkRun status: {e}", path.display()))
}

/// What `benchmatrix report` does with the status read from `file`: [`render`] into `out`
/// (default: the file's folder), with the raw results `benchmatrix run` kept beside it.
pub fn render_saved(
    status: &BenchmarkRunStatus,
    file: &Path,
    out: Option<PathBuf>,
    command: &str,
) -> std::process::ExitCode {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let out = out.unwrap_or_else(|| dir.clone());
    let raw = read_raw(&dir, status);
    render(status, &file.display().to_string(), &raw, &out, command)
}

/// Writes `status` as `DIR/status.yaml` (the bare status), atomically, making the folder if
/// needed: the file `benchmatrix run` and `kubectl benchmatrix run` leave, which `report` and
/// `compare` read back.
pub fn write_status(dir: &Path, status: &BenchmarkRunStatus) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_yaml::to_string(status).map_err(std::io::Error::other)?;
    write_atomically(&dir.join("status.yaml"), text.as_bytes())
}

/// Writes report.md, report.html and the charts of `status` into `out` and prints its
/// verdict, then its comparison table: what `benchmatrix report` does once it has a status,
/// wherever it came from (`source`, a file or a run on a cluster, is named in report.md;
/// `command` in messages). Exits with the verdict's code, as the run did without a regression
/// gate; 1 when `out` cannot be written.
pub fn render(
    status: &BenchmarkRunStatus,
    source: &str,
    raw: &[RawCell],
    out: &Path,
    command: &str,
) -> std::process::ExitCode {
    render_gated(status, (source, raw), out, command, None)
}

/// [`render`] with the regression gate `--max-regression` (`None`: not asked).
pub fn render_gated(
    status: &BenchmarkRunStatus,
    (source, raw): (&str, &[RawCell]),
    out: &Path,
    command: &str,
    max_regression: Option<f64>,
) -> std::process::ExitCode {
    let notes = markdown::Notes {
        source: source.to_owned(),
        max_regression,
        ..Default::default()
    };
    match write_report(out, status, raw, &notes) {
        Ok(files) => {
            let verdict = headline::verdict(status, max_regression);
            println!("{}", verdict.line());
            print!("{}", comparison_table(status));
            println!("wrote {} file(s) in {}", files.len(), out.display());
            std::process::ExitCode::from(verdict.code)
        }
        Err(e) => {
            eprintln!("{command}: cannot write into {}: {e}", out.display());
            std::process::ExitCode::from(crate::engine::verdict::exit::FAILED)
        }
    }
}

/// What a finished run prints under its progress: the comparison table, how many repetitions
/// each cell took when they depended on its precision, then the gate's verdict and the
/// recommendation when the status has them, each wrapped to the table's width. Variants are
/// marked as `max_regression` (the run's `--max-regression`) judges them, as the exit code is.
pub fn closing_lines(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Vec<String> {
    let wrapped = |text: String| wrap(&text, TABLE_WIDTH).trim_end().to_string();
    let mut lines = vec![comparison_table(status).trim_end().to_string()];
    if let Some(line) = repetitions_line(status) {
        lines.push(wrapped(line));
    }
    lines.extend(variants::closing_lines(status, max_regression));
    lines.extend(capacity::closing_lines(status).into_iter().map(wrapped));
    if let Some(gate) = crate::resource::conditions::find(
        &status.conditions,
        crate::resource::conditions::THRESHOLDS_MET,
    ) {
        lines.push(String::new());
        lines.push(wrapped(format!("thresholds: {}", gate.message)));
    }
    if let Some(r) = status
        .summary
        .as_ref()
        .and_then(|s| s.recommendation.as_deref())
    {
        lines.push(wrapped(format!("recommendation: {r}")));
    }
    lines
}

/// What a finished run prints once its files are written into `out` (`written` of them
/// besides status.yaml): a blank line, the [`closing_lines`], then where the files went.
pub fn finished_lines(
    status: &BenchmarkRunStatus,
    out: &Path,
    written: usize,
    max_regression: Option<f64>,
) -> Vec<String> {
    let mut lines = vec![String::new()];
    lines.extend(closing_lines(status, max_regression));
    lines.push(format!(
        "\nwrote {} and {written} more file(s) in {}",
        out.join("status.yaml").display(),
        out.display()
    ));
    lines
}

/// "repetitions until precise: single-x1 3 (precise, widest mixed/fast p99 at 2.1%); pool-x1
/// 10 (max reached, mixed/fast p99 at 12.4%)", when cells repeated until precise; a cell none
/// of whose figures is ranked or judged is "precise: no figure is ranked or judged".
pub fn repetitions_line(status: &BenchmarkRunStatus) -> Option<String> {
    let cells: Vec<String> = status
        .cells
        .iter()
        .filter_map(|c| {
            let p = c.precision.as_ref()?;
            let widest = match (&p.widest_figure, p.widest_percent) {
                (Some(f), Some(pct)) => Some(format!("{f} at {pct:.1}%")),
                (Some(f), None) => Some(format!("{f} without an interval")),
                (None, _) => None,
            };
            let why = match (p.precise, widest) {
                (true, Some(w)) => format!("precise, widest {w}"),
                (true, None) => "precise: no figure is ranked or judged".into(),
                (false, Some(w)) => format!("max reached, {w}"),
                (false, None) => "max reached, no deciding figure".into(),
            };
            Some(format!("{} {} ({why})", c.name, p.repetitions))
        })
        .collect();
    (!cells.is_empty()).then(|| format!("repetitions until precise: {}", cells.join("; ")))
}

/// A status document, bare (`status.yaml` from `benchmatrix run`), inside a whole BenchmarkRun
/// (`kubectl get -o yaml`), or under a lone `status:` key. A document with none of a status's
/// own fields is refused, never read as an empty status: a report of nothing would look like a
/// run that measured nothing.
pub fn parse_status(text: &str) -> Result<BenchmarkRunStatus, String> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let serde_yaml::Value::Mapping(top) = &value else {
        return Err(format!("{EXPECTED}, found {}", yaml_kind(&value)));
    };
    if let Some(kind) = top.get("kind").and_then(serde_yaml::Value::as_str)
        && kind != "BenchmarkRun"
    {
        return Err(format!("it is a {kind}; {EXPECTED}"));
    }
    // A status has no field called `status`, `spec` or `kind`: any of them means a wrapper.
    let wrapped = ["status", "spec", "kind"]
        .iter()
        .any(|k| top.contains_key(*k));
    let inner = if wrapped {
        match top.get("status") {
            Some(inner @ serde_yaml::Value::Mapping(_)) => inner,
            Some(other) => return Err(format!("its `status` is {}; {EXPECTED}", yaml_kind(other))),
            None => {
                return Err(
                    "the BenchmarkRun has no status yet (the operator has not taken it up)".into(),
                );
            }
        }
    } else {
        &value
    };
    let has_own_field = ["phase", "cells"].iter().any(|k| inner.get(*k).is_some());
    if !has_own_field {
        return Err(format!("it has neither `phase` nor `cells`; {EXPECTED}"));
    }
    serde_yaml::from_value(inner.clone()).map_err(|e| e.to_string())
}

/// What [`parse_status`] reads, for its errors.
const EXPECTED: &str = "expected a BenchmarkRun (`kubectl get benchmarkrun NAME -o yaml`) or \
     its status (`status.yaml` from `benchmatrix run`), which has `phase` and `cells`";

/// A YAML value's kind, for an error.
fn yaml_kind(value: &serde_yaml::Value) -> &'static str {
    match value {
        serde_yaml::Value::Null => "empty",
        serde_yaml::Value::Bool(_) => "a boolean",
        serde_yaml::Value::Number(_) => "a number",
        serde_yaml::Value::String(_) => "a string",
        serde_yaml::Value::Sequence(_) => "a list",
        serde_yaml::Value::Mapping(_) => "a mapping",
        serde_yaml::Value::Tagged(_) => "a tagged value",
    }
}

/// The load generator's raw result of one cell (kept in `DIR/results/<cell>.json`).
#[derive(Debug, Clone)]
pub struct RawCell {
    /// Cell name.
    pub cell: String,
    /// The result document.
    pub result: RunResult,
    /// Which repetition of the cell it is from, `(k, n)`: repetition k of n; `None` when the
    /// run did not repeat, or it is not known.
    pub repetition: Option<(u32, u32)>,
}

/// Every (phase, endpoint) pair in the order the cells report them.
pub fn phase_endpoints(status: &BenchmarkRunStatus) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in &status.cells {
        for r in &c.results {
            let key = (r.phase.clone(), r.endpoint.clone());
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

/// The result of `cell` for (phase, endpoint), if that cell measured it.
pub fn result_of<'a>(
    status: &'a BenchmarkRunStatus,
    cell: &str,
    phase: &str,
    endpoint: &str,
) -> Option<&'a CellResult> {
    status
        .cells
        .iter()
        .find(|c| c.name == cell)?
        .results
        .iter()
        .find(|r| r.phase == phase && r.endpoint == endpoint)
}

/// The ranking the report shows: always derived from the cells by the same rules as the
/// status summary (so a status written by an older version is judged by today's rules).
pub fn ranking(status: &BenchmarkRunStatus) -> Summary {
    crate::engine::results::summarize(&status.cells)
}

/// `cell`'s place in the comparison of (phase, endpoint), if it took part.
pub fn ranked<'a>(
    summary: &'a Summary,
    cell: &str,
    phase: &str,
    endpoint: &str,
) -> Option<&'a CellRatio> {
    summary
        .comparisons
        .iter()
        .find(|c| c.phase == phase && c.endpoint == endpoint)?
        .cells
        .iter()
        .find(|c| c.cell == cell)
}

/// Percentile `p` of `r` in milliseconds to one decimal, followed by `mark` when its samples
/// cannot support it; [`ABSENT`] without a latency.
pub fn percentile_text(r: &CellResult, p: Percentile, mark: &str) -> String {
    match &r.latency_ms {
        None => ABSENT.into(),
        Some(l) if r.unsupported_percentiles.contains(&p) => format!("{:.1}{mark}", l.get(p)),
        Some(l) => format!("{:.1}", l.get(p)),
    }
}

/// The largest latency of `r` to one decimal, or [`ABSENT`].
pub fn max_text(r: &CellResult) -> String {
    r.latency_ms
        .map_or_else(|| ABSENT.into(), |l| format!("{:.1}", l.max))
}

/// Appended to a figure that was unstable over the repetitions (max/min above 2).
pub const UNSTABLE: &str = "!";

/// Prefix of a ratio to the best cell when the two do not differ beyond the noise.
pub const WITHIN_NOISE: &str = "~";

/// `text` (the figure's median as shown) followed by its spread over the repetitions, e.g.
/// `21.0 (19.0–23.0, CI 19.5–22.5)`, and [`UNSTABLE`] when it is; `text` alone when the cell
/// ran once or `key` (see [`crate::engine::results::noise::figure_key`]) has no spread. The CI is
/// shown only where it says more than the range: from few repetitions the bootstrap interval
/// of the median is often the range itself.
pub fn with_spread(text: String, r: &CellResult, key: &str) -> String {
    let Some(s) = crate::engine::results::trust::figure(r, key) else {
        return text;
    };
    let range = (format!("{:.1}", s.min), format!("{:.1}", s.max));
    let ci = match (s.ci_low, s.ci_high) {
        (Some(lo), Some(hi)) if (format!("{lo:.1}"), format!("{hi:.1}")) != range => {
            format!(", CI {lo:.1}–{hi:.1}")
        }
        _ => String::new(),
    };
    let mark = if s.unstable { UNSTABLE } else { "" };
    format!("{text} ({}–{}{ci}){mark}", range.0, range.1)
}

/// `text` followed by its spread in the terminal's compact form, `21.0 ±2.5`: every
/// repetition lies within that distance of the median (the larger of median − min and
/// max − median), and [`UNSTABLE`] when the figure is; `text` alone without a spread.
pub fn with_compact_spread(text: String, r: &CellResult, key: &str) -> String {
    let Some(s) = crate::engine::results::trust::figure(r, key) else {
        return text;
    };
    let within = (s.median - s.min).max(s.max - s.median);
    let mark = if s.unstable { UNSTABLE } else { "" };
    format!("{text} ±{within:.1}{mark}")
}

/// True when some result of `status` carries a spread over repetitions.
pub fn any_spread(status: &BenchmarkRunStatus) -> bool {
    status
        .cells
        .iter()
        .flat_map(|c| &c.results)
        .any(|r| r.spread.is_some())
}

/// True when one of the figures `shown` (keys of [`crate::resource::Spread::figures`]) of
/// `status` is unstable over the repetitions: the note explains a mark the table shows.
pub fn any_unstable(status: &BenchmarkRunStatus, shown: &[&str]) -> bool {
    status
        .cells
        .iter()
        .flat_map(|c| &c.results)
        .filter_map(|r| r.spread.as_ref())
        .flat_map(|s| shown.iter().filter_map(|k| s.figures.get(*k)))
        .any(|f| f.unstable)
}

/// The note under a table with [`UNSTABLE`] marks.
pub const UNSTABLE_NOTE: &str = "! unstable over repetitions (max/min above 2x): shown, never \
    ranked; repeat more or lengthen the phase";

/// The note under the terminal's table with spreads: what `±` and [`WITHIN_NOISE`] mean.
pub const SPREAD_NOTE: &str = "figures are medians over the repetitions; ±d: every repetition \
    within d of the median (report.md has the min–max and CI); ~ = p99 within noise of the \
    best, not ranked against it";

/// The ratio of `place` to the best cell as a table shows it: `3.1x`, `~1.1x` when within
/// noise of the best; `None` when it was not ranked.
pub fn ratio_text(place: &CellRatio) -> Option<String> {
    let x = place.p99_ratio?;
    let noise = if place.within_noise_of.is_some() {
        WITHIN_NOISE
    } else {
        ""
    };
    Some(format!("{noise}{x:.1}x"))
}

/// True when some result of `status` shows a percentile marked [`THIN`].
pub(crate) fn any_thin(status: &BenchmarkRunStatus, shown: &[Percentile]) -> bool {
    status.cells.iter().flat_map(|c| &c.results).any(|r| {
        r.latency_ms.is_some() && shown.iter().any(|p| r.unsupported_percentiles.contains(p))
    })
}

/// The note under a table with [`THIN`] marks.
pub fn thin_note(shown: &[Percentile]) -> String {
    let needs: Vec<String> = shown
        .iter()
        .map(|p| format!("{p} {}", p.min_samples()))
        .collect();
    format!(
        "{THIN} from fewer samples than the percentile needs ({}): shown, never ranked",
        needs.join(", ")
    )
}

/// Writes `report.md` and the charts into `dir`, each atomically (a failed write, such as on a
/// full disk, leaves the previous file whole); returns the files written.
pub fn write_report(
    dir: &Path,
    status: &BenchmarkRunStatus,
    raw: &[RawCell],
    notes: &markdown::Notes,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let charts = charts(status, raw);
    for (name, svg) in &charts {
        let p = dir.join(name);
        write_atomically(&p, svg.as_bytes())?;
        written.push(p);
    }
    let names: Vec<String> = charts.iter().map(|(n, _)| n.clone()).collect();
    let md = markdown::render(status, raw, &names, notes);
    let p = dir.join("report.md");
    write_atomically(&p, md.as_bytes())?;
    written.push(p);
    let verdict = headline::verdict(status, notes.max_regression);
    let p = dir.join("report.html");
    write_atomically(&p, html::render(status, &verdict, &md, &charts).as_bytes())?;
    written.push(p);
    Ok(written)
}

/// Reads the raw results that `benchmatrix run` keeps in `dir/results/<cell>.json`, for the
/// cells of `status`; cells without one are skipped. Each repetition overwrites the file, so
/// a measured cell's is its last repetition's; a failed cell's may be the failed one's.
pub fn read_raw(dir: &Path, status: &BenchmarkRunStatus) -> Vec<RawCell> {
    status
        .cells
        .iter()
        .filter_map(|c| {
            let text =
                std::fs::read_to_string(dir.join("results").join(format!("{}.json", c.name)))
                    .ok()?;
            let n = c.repetitions.len() as u32;
            Some(RawCell {
                cell: c.name.clone(),
                result: serde_json::from_str(&text).ok()?,
                repetition: (c.phase == crate::resource::CellPhase::Succeeded && n > 1)
                    .then_some((n, n)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::CellPhase;

    #[test]
    fn the_repetitions_line_says_why_each_cell_stopped() {
        use crate::resource::{CellPrecision, CellStatus};
        let cell = |name: &str, precise: bool, repetitions, widest: Option<(&str, Option<f64>)>| {
            CellStatus {
                name: name.into(),
                precision: Some(CellPrecision {
                    precise,
                    repetitions,
                    widest_figure: widest.map(|(f, _)| f.to_owned()),
                    widest_percent: widest.and_then(|(_, pct)| pct),
                    message: String::new(),
                }),
                ..CellStatus::default()
            }
        };
        let status = BenchmarkRunStatus {
            cells: vec![
                cell("single-x1", true, 3, Some(("mixed/fast p99", Some(2.14)))),
                cell("pool-x1", false, 10, Some(("mixed/fast p99", Some(12.4)))),
                cell("zero", true, 2, Some(("mixed/slow rps", None))),
                cell("unranked", true, 2, None),
                CellStatus {
                    name: "once".into(),
                    ..CellStatus::default()
                },
            ],
            ..BenchmarkRunStatus::default()
        };
        assert_eq!(
            repetitions_line(&status).unwrap(),
            "repetitions until precise: single-x1 3 (precise, widest mixed/fast p99 at 2.1%); \
             pool-x1 10 (max reached, mixed/fast p99 at 12.4%); zero 2 (precise, widest \
             mixed/slow rps without an interval); unranked 2 (precise: no figure is ranked or \
             judged)"
        );
        assert_eq!(repetitions_line(&BenchmarkRunStatus::default()), None);
    }

    #[test]
    fn parses_a_bare_status_and_one_inside_a_benchmark_run() {
        let bare = "phase: Succeeded\ncells:\n- name: a\n  phase: Failed\n  reason: NeverReady\n";
        let s = parse_status(bare).unwrap();
        assert_eq!(s.cells[0].name, "a");
        assert_eq!(s.cells[0].phase, CellPhase::Failed);
        let whole = format!(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nspec: {{}}\nstatus:\n{}",
            bare.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        assert_eq!(parse_status(&whole).unwrap(), s);
        let lone = format!(
            "status:\n{}",
            bare.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        assert_eq!(parse_status(&lone).unwrap(), s);
        assert!(parse_status("cells: 3").is_err());
    }

    #[test]
    fn a_document_that_is_not_a_status_is_refused_never_read_as_an_empty_one() {
        for (text, says) in [
            ("status: {}\n", "neither `phase` nor `cells`"),
            ("status:\n  foo: 1\n", "neither `phase` nor `cells`"),
            (
                "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nspec: {}\n",
                "no status yet",
            ),
            (
                "kind: Deployment\nstatus:\n  phase: Running\n",
                "it is a Deployment",
            ),
            ("status: 3\n", "its `status` is a number"),
            ("- phase: Succeeded\n", "found a list"),
            ("", "found empty"),
            ("headline: hi\n", "neither `phase` nor `cells`"),
        ] {
            let err = parse_status(text).expect_err(text);
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    /// Set in the child process of [`a_write_that_fails_midway_leaves_the_old_report`]: the
    /// folder to write the report into under a 1000-byte file size limit.
    const FSIZE_CHILD: &str = "BENCHMATRIX_TEST_FSIZE_CHILD_DIR";

    /// A disk that fills up midway, for real: the child process may write files of at most
    /// 1000 bytes (RLIMIT_FSIZE; writes beyond fail with EFBIG), and report.md is longer. The
    /// report that was there before must survive whole, and no partial file may be left.
    #[test]
    fn a_write_that_fails_midway_leaves_the_old_report() {
        if let Ok(dir) = std::env::var(FSIZE_CHILD) {
            // SAFETY: ignoring SIGXFSZ and lowering this process's own soft limit; the child
            // runs only this test.
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 1000,
                    rlim_max: libc::RLIM_INFINITY,
                };
                assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
            }
            let status = BenchmarkRunStatus::default();
            match write_report(Path::new(&dir), &status, &[], &markdown::Notes::default()) {
                Ok(files) => println!("CHILD wrote {files:?}"),
                Err(e) => println!("CHILD error: {e}"),
            }
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("report.md"), "old report\n").unwrap();
        // This test's own name, as the harness knows it: its module path without the crate.
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let name = format!("{module}::a_write_that_fails_midway_leaves_the_old_report");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &name, "--nocapture"])
            .env(FSIZE_CHILD, dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(
            stdout.contains("CHILD error:"),
            "the write did not fail: {stdout}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("report.md")).unwrap(),
            "old report\n"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.md"], "partial files left");
    }

    #[test]
    fn file_parts_are_safe() {
        assert_eq!(file_part("fast-only"), "fast-only");
        assert_eq!(file_part("a/b c"), "a_b_c");
    }
}
