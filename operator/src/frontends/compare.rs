//! `benchmatrix compare BASE NEW`: what changed between two runs of a matrix, per cell, phase
//! and endpoint, with each change marked a regression, an improvement or within noise.
//!
//! How a change is judged:
//! - Both sides repeated (their figures carry the repetitions' values): [`noise::differ`], a
//!   Mann-Whitney U test with 5+ repetitions a side, otherwise non-overlapping min-max ranges,
//!   and in both cases a minimum practical change (`--min-change`, 5% by default). A side that
//!   ran once counts as one repetition of its single value.
//! - Neither side repeated: no spread is known, so a change counts only beyond
//!   [`SINGLE_RUN_NOISE`] (10%), and the row says "single run: no spread known".
//!
//! With one run, `benchmatrix compare RUN` shows its variants side by side instead
//! ([`crate::frontends::variants`]): paired rounds, the stronger evidence, where two runs
//! compared afterwards carry all the noise between them.
//!
//! Exit codes: 0 no regression beyond `--max-regression`, 2 bad input (also when nothing could
//! be compared: no cell measured in both runs), 3 a regression beyond `--max-regression`
//! (default [`crate::frontends::variants::DEFAULT_MAX_REGRESSION`], as every gate).

use crate::engine::verdict::exit;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::engine::results::noise::{self, Difference, Direction, Method};
use crate::frontends::report::{ABSENT, forest, svg, write_atomically};
use crate::resource::{BenchmarkRunStatus, CellPhase, CellResult, CellStatus};

/// Without repetitions on either side, a relative change must exceed this to count: a single
/// run's figures move this much between runs of the same code on a quiet machine, and a
/// closed loop's p99 far more (see the README's "Comparing runs").
pub const SINGLE_RUN_NOISE: f64 = 0.10;

/// Arguments of `benchmatrix compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline: a status.yaml, or a whole BenchmarkRun (`kubectl get bmr NAME -o yaml`).
    pub base: PathBuf,
    /// The run to judge against the baseline, in the same forms. Left out: BASE's own
    /// variants (spec.variants) side by side, each candidate against the base.
    pub new: Option<PathBuf>,
    /// How to judge, and where to write.
    #[command(flatten)]
    pub options: CompareOptions,
}

/// The options of a comparison, shared by `benchmatrix compare` and `kubectl benchmatrix
/// compare` (which takes runs on the cluster as well as files).
#[derive(Debug, Clone, clap::Args)]
pub struct CompareOptions {
    /// Folder to also write compare.md and the charts into.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit 3 only when a regression is worse than this many percent. Default 10, the one
    /// default of every gate (run, size, compare, the kubectl plugin, the GitHub Action): a
    /// change is only called a regression beyond the noise and --min-change, and two runs of
    /// identical code were measured to move by up to 9.6%, so 10 fails on a real regression,
    /// not on noise. 0: any regression fails.
    #[arg(
        long,
        default_value_t = crate::frontends::variants::DEFAULT_MAX_REGRESSION,
        value_name = "PCT"
    )]
    pub max_regression: f64,
    /// Smallest change of the medians, in percent, that counts when the runs were repeated.
    #[arg(long, default_value_t = noise::MIN_PRACTICAL_CHANGE * 100.0, value_name = "PCT")]
    pub min_change: f64,
}

/// One side of a comparison: a status and what to call it (its file, or the run it was read
/// from) in compare.md.
#[derive(Debug, Clone)]
pub struct Compared {
    /// e.g. `main/status.yaml` or `benchmarkrun bench/ci-gate`.
    pub label: String,
    /// The status, with cells.
    pub status: BenchmarkRunStatus,
}

/// One compared figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Median latency.
    P50,
    /// 99th percentile latency.
    P99,
    /// Successful requests per second.
    Rps,
    /// Target CPU seconds per 1,000 requests, for the whole cell.
    Cpu,
}

impl Figure {
    /// The figure's name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Figure::P50 => "p50 ms",
            Figure::P99 => "p99 ms",
            Figure::Rps => "rps",
            Figure::Cpu => "CPU s/1k req",
        }
    }

    fn lower_is_better(self) -> bool {
        self != Figure::Rps
    }
}

/// The outcome of one row.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// Worse beyond the noise.
    Regression,
    /// Better beyond the noise.
    Improvement,
    /// No change the evidence supports.
    WithinNoise,
    /// Only in the new run.
    Added,
    /// Only in the base run.
    Removed,
    /// Measured in the base run, failed in the new one (counts as a regression).
    Failed,
    /// No figure on one side (no successful request); nothing to compare.
    NotComparable,
}

impl Mark {
    fn text(&self) -> &'static str {
        match self {
            Mark::Regression => "regression",
            Mark::Improvement => "improvement",
            Mark::WithinNoise => "~ within noise",
            Mark::Added => "added",
            Mark::Removed => "removed",
            Mark::Failed => "failed (regression)",
            Mark::NotComparable => "not comparable",
        }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Cell name.
    pub cell: String,
    /// Phase name (empty for a whole-cell row).
    pub phase: String,
    /// Endpoint name (empty for a whole-cell row).
    pub endpoint: String,
    /// The figure compared (`None` for an added, removed or failed cell).
    pub figure: Option<Figure>,
    /// The base run's figure as shown.
    pub base: String,
    /// The new run's figure as shown.
    pub new: String,
    /// The base run's median (for the charts).
    pub base_value: Option<f64>,
    /// The new run's median (for the charts).
    pub new_value: Option<f64>,
    /// Relative change of the medians (0.1 = 10% higher).
    pub change: Option<f64>,
    /// How much worse, in percent of the base (negative when better); infinite from zero.
    pub worse_pct: Option<f64>,
    /// The verdict.
    pub mark: Mark,
    /// How it was decided.
    pub evidence: String,
}

/// One side's figure: its median and, when repeated, each repetition's value.
struct Side {
    median: f64,
    values: Option<Vec<f64>>,
}

/// Reads a status from `path`, or says why it is not one.
pub fn read_status(path: &Path) -> Result<BenchmarkRunStatus, String> {
    use crate::frontends::file_kind::{FileKind, RESULTS};
    // A file of the wrong kind says what compare expected, not which field it lacks.
    if let Ok(text) = std::fs::read_to_string(path) {
        match FileKind::of(&text) {
            FileKind::Results => {}
            other => {
                return Err(format!(
                    "{} is {}; compare expected {RESULTS}",
                    path.display(),
                    other.describe()
                ));
            }
        }
    }
    let status = crate::frontends::report::read_status_file(path)?;
    with_cells(status, &path.display().to_string())
}

/// `status` when it has cells to compare; else why not, naming it `label`.
pub fn with_cells(status: BenchmarkRunStatus, label: &str) -> Result<BenchmarkRunStatus, String> {
    if status.cells.is_empty() {
        return Err(format!(
            "{label} has no measured cells (a run refused or stopped before its first cell, \
             or a sizing run's results: `benchmatrix size` reads those); compare expected \
             {}",
            crate::frontends::file_kind::RESULTS
        ));
    }
    Ok(status)
}

/// Every row of the comparison of `base` with `new`: per cell (base order, then cells only
/// in `new`), per phase and endpoint p50, p99 and rps, then the cell's CPU per 1,000 requests.
pub fn compare(base: &BenchmarkRunStatus, new: &BenchmarkRunStatus, min_change: f64) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in &base.cells {
        match new.cells.iter().find(|n| n.name == b.name) {
            None => rows.push(cell_row(&b.name, Mark::Removed, "only in the base run")),
            Some(n) => rows.extend(compare_cell(b, n, min_change)),
        }
    }
    for n in &new.cells {
        if !base.cells.iter().any(|b| b.name == n.name) {
            rows.push(cell_row(&n.name, Mark::Added, "only in the new run"));
        }
    }
    rows
}

fn cell_row(cell: &str, mark: Mark, evidence: &str) -> Row {
    Row {
        cell: cell.to_owned(),
        phase: String::new(),
        endpoint: String::new(),
        figure: None,
        base: ABSENT.into(),
        new: ABSENT.into(),
        base_value: None,
        new_value: None,
        change: None,
        worse_pct: None,
        mark,
        evidence: evidence.to_owned(),
    }
}

fn compare_cell(base: &CellStatus, new: &CellStatus, min_change: f64) -> Vec<Row> {
    if let Some(row) = unmeasured(base, new) {
        return vec![row];
    }
    let mut rows = stream_rows(base, new, min_change);
    rows.extend(cpu_row(base, new, min_change));
    rows
}

/// The one row of a cell that was not measured in one run or either, saying which; `None` when
/// both runs measured it.
fn unmeasured(base: &CellStatus, new: &CellStatus) -> Option<Row> {
    let measured = |c: &CellStatus| c.phase == CellPhase::Succeeded;
    match (measured(base), measured(new)) {
        (true, false) => {
            let why = format!(
                "{}{}",
                new.phase,
                new.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
            Some(cell_row(
                &new.name,
                Mark::Failed,
                &format!("new run: {why}"),
            ))
        }
        (false, true) => Some(cell_row(
            &new.name,
            Mark::Improvement,
            &format!("base run: {}; measured now", base.phase),
        )),
        (false, false) => Some(cell_row(
            &new.name,
            Mark::NotComparable,
            "not measured in either run",
        )),
        (true, true) => None,
    }
}

/// Per phase and endpoint of either run, in the order they first appear: p50, p99 and rps
/// judged, or a row saying the stream is only in one run.
fn stream_rows(base: &CellStatus, new: &CellStatus, min_change: f64) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in base.results.iter().chain(&new.results) {
        let key = (r.phase.as_str(), r.endpoint.as_str());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (phase, endpoint) in keys {
        let find = |c: &'_ CellStatus| {
            c.results
                .iter()
                .find(|r| r.phase == phase && r.endpoint == endpoint)
                .cloned()
        };
        let stream_row = |mark: Mark, evidence: &str| Row {
            phase: phase.to_owned(),
            endpoint: endpoint.to_owned(),
            ..cell_row(&base.name, mark, evidence)
        };
        match (find(base), find(new)) {
            (Some(b), Some(n)) => {
                for figure in [Figure::P50, Figure::P99, Figure::Rps] {
                    let row = judge(
                        figure,
                        stream_side(&b, figure),
                        stream_side(&n, figure),
                        min_change,
                    );
                    rows.push(Row {
                        cell: base.name.clone(),
                        phase: phase.to_owned(),
                        endpoint: endpoint.to_owned(),
                        ..row
                    });
                }
            }
            (Some(_), None) => rows.push(stream_row(Mark::Removed, "only in the base run")),
            (None, Some(_)) => rows.push(stream_row(Mark::Added, "only in the new run")),
            (None, None) => {}
        }
    }
    rows
}

/// The cell's target CPU seconds per 1,000 requests over all phases, when either run has it;
/// not comparable when the request mix changed ([`mix_changed`]).
fn cpu_row(base: &CellStatus, new: &CellStatus, min_change: f64) -> Option<Row> {
    let mut cpu = judge(Figure::Cpu, cpu_side(base), cpu_side(new), min_change);
    if cpu.base_value.is_some()
        && cpu.new_value.is_some()
        && let Some(why) = mix_changed(base, new, min_change)
    {
        cpu = Row {
            mark: Mark::NotComparable,
            evidence: why,
            change: None,
            worse_pct: None,
            ..cpu
        };
    }
    (cpu.base_value.is_some() || cpu.new_value.is_some()).then(|| Row {
        cell: base.name.clone(),
        phase: "(all)".into(),
        endpoint: "(all)".into(),
        ..cpu
    })
}

/// A stream's figure: its median and, over repetitions, each one's value.
fn stream_side(r: &CellResult, figure: Figure) -> Option<Side> {
    let (median, key) = match figure {
        Figure::P50 => (r.latency_ms?.p50, "p50"),
        Figure::P99 => (r.latency_ms?.p99, "p99"),
        Figure::Rps => (r.rps, noise::RPS),
        Figure::Cpu => return None,
    };
    let values = crate::engine::results::trust::figure(r, key)
        .map(|s| s.values.clone())
        .filter(|v| !v.is_empty());
    Some(Side { median, values })
}

/// Why the cell's CPU per 1,000 requests cannot be compared between the runs: it follows the
/// request mix, so when a stream's share of the cell's requests moved by more than
/// `min_change` of itself, a cell that served fewer heavy requests (a closed loop stuck behind
/// them) would show less CPU per request without using its CPU any better, and one that
/// served more would show a regression that is none. The largest such move is named. None
/// when the mixes match.
fn mix_changed(base: &CellStatus, new: &CellStatus, min_change: f64) -> Option<String> {
    let shares = |c: &CellStatus| -> Vec<(String, f64)> {
        let total = crate::engine::results::repeat::total(&c.results, |r| r.requests);
        c.results
            .iter()
            .map(|r| {
                let share = if total > 0 {
                    r.requests as f64 / total as f64
                } else {
                    0.0
                };
                (format!("{}/{}", r.phase, r.endpoint), share)
            })
            .collect()
    };
    let (b, n) = (shares(base), shares(new));
    let share_in = |list: &[(String, f64)], key: &str| {
        list.iter().find(|(k, _)| k == key).map_or(0.0, |(_, s)| *s)
    };
    let mut worst: Option<(f64, String, f64, f64)> = None;
    for key in b.iter().chain(&n).map(|(k, _)| k) {
        let (was, now) = (share_in(&b, key), share_in(&n, key));
        let larger = was.max(now);
        if larger == 0.0 {
            continue;
        }
        let moved = (now - was).abs() / larger;
        if moved > min_change && worst.as_ref().is_none_or(|w| moved > w.0) {
            worst = Some((moved, key.clone(), was, now));
        }
    }
    let (_, key, was, now) = worst?;
    Some(format!(
        "the request mix changed ({key} {:.1}% -> {:.1}% of requests): CPU per request follows \
         the mix, so it is not compared",
        was * 100.0,
        now * 100.0
    ))
}

/// Target CPU seconds per 1,000 requests: per repetition where the cell was repeated, else for
/// the cell as a whole. Compared only when the request mix is the same ([`mix_changed`]).
fn cpu_side(c: &CellStatus) -> Option<Side> {
    let cpu = crate::engine::verdict::recommend::cpu_per_1000_requests(c)?;
    Some(Side {
        median: cpu.median,
        values: (!cpu.per_repetition.is_empty()).then_some(cpu.per_repetition),
    })
}

/// One figure's row, without its cell, phase and endpoint.
fn judge(figure: Figure, base: Option<Side>, new: Option<Side>, min_change: f64) -> Row {
    let show = |s: &Option<Side>| match s {
        None => ABSENT.to_owned(),
        Some(s) => {
            let median = number(s.median);
            match &s.values {
                Some(v) if v.len() > 1 => {
                    let spread = noise::spread_of(v);
                    let mark = if spread.unstable { "!" } else { "" };
                    format!(
                        "{median} ({}–{}){mark}",
                        number(spread.min),
                        number(spread.max)
                    )
                }
                _ => median,
            }
        }
    };
    let mut row = Row {
        figure: Some(figure),
        base: show(&base),
        new: show(&new),
        base_value: base.as_ref().map(|s| s.median),
        new_value: new.as_ref().map(|s| s.median),
        ..cell_row("", Mark::NotComparable, "no figure on one side")
    };
    let (Some(b), Some(n)) = (base, new) else {
        return row;
    };
    let lower = figure.lower_is_better();
    let (mark, evidence, change) = if b.values.is_none() && n.values.is_none() {
        let change = noise::relative_change(b.median, n.median);
        let beyond = change.is_none_or(|c| c.abs() > SINGLE_RUN_NOISE) && b.median != n.median;
        let mark = if !beyond {
            Mark::WithinNoise
        } else if (n.median < b.median) == lower {
            Mark::Improvement
        } else {
            Mark::Regression
        };
        (
            mark,
            format!(
                "single run: no spread known (a change counts beyond {:.0}%)",
                SINGLE_RUN_NOISE * 100.0
            ),
            change,
        )
    } else {
        let values = |s: &Side| s.values.clone().unwrap_or_else(|| vec![s.median]);
        let (bv, nv) = (values(&b), values(&n));
        let d = noise::differ(&bv, &nv, lower, min_change);
        let mark = match d.direction {
            Direction::Better => Mark::Improvement,
            Direction::Worse => Mark::Regression,
            Direction::WithinNoise => Mark::WithinNoise,
        };
        (mark, evidence(&d, bv.len(), nv.len()), d.change)
    };
    row.mark = mark;
    row.evidence = evidence;
    row.change = change;
    row.worse_pct = Some(match change {
        Some(c) if lower => c * 100.0,
        Some(c) => -c * 100.0,
        None if (n.median > b.median) == lower => f64::INFINITY,
        None => f64::NEG_INFINITY,
    });
    row
}

fn evidence(d: &Difference, nb: usize, nn: usize) -> String {
    let mut s = match (d.method, d.p_value) {
        (Method::RangeOverlap, _) | (_, None) => format!("min-max ranges ({nb} vs {nn})"),
        (_, Some(p)) => format!("Mann-Whitney p={p:.3} ({nb} vs {nn})"),
    };
    if let Some(note) = &d.note {
        s.push_str(&format!("; {note}"));
    }
    s
}

/// A figure to three significant digits or so: "0.123", "12.3", "1234".
fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// True when `row` fails the run: a regression (or a cell that failed anew) worse than
/// `max_regression` percent.
pub fn fails(row: &Row, max_regression: f64) -> bool {
    match row.mark {
        Mark::Failed => true,
        Mark::Regression => row.worse_pct.is_none_or(|w| w > max_regression),
        _ => false,
    }
}

/// The comparison as a Markdown table, with a closing line of counts and the gate's verdict.
pub fn markdown(rows: &[Row], max_regression: f64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "| configuration | phase | endpoint | figure | base | new | change | verdict | evidence |\n|---|---|---|---|---:|---:|---:|---|---|"
    );
    for r in rows {
        let change = match (r.change, r.figure) {
            (Some(c), _) => format!("{:+.1}%", c * 100.0),
            (None, Some(_)) if r.base_value == Some(0.0) => "from 0".into(),
            _ => ABSENT.into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {change} | {} | {} |",
            r.cell,
            r.phase,
            r.endpoint,
            r.figure.map_or("", Figure::label),
            r.base,
            r.new,
            r.mark.text(),
            r.evidence.replace('|', "\\|")
        );
    }
    let count = |m: Mark| rows.iter().filter(|r| r.mark == m).count();
    let failing = rows.iter().filter(|r| fails(r, max_regression)).count();
    let _ = writeln!(
        o,
        "\n{} regression(s), {} improvement(s), {} within noise, {} added, {} removed, {} failed.",
        count(Mark::Regression),
        count(Mark::Improvement),
        count(Mark::WithinNoise),
        count(Mark::Added),
        count(Mark::Removed),
        count(Mark::Failed)
    );
    if failing > 0 {
        let _ = writeln!(
            o,
            "**{failing} regression(s) beyond {max_regression}%** (`--max-regression`): exit 3."
        );
    }
    if rows
        .iter()
        .any(|r| r.base.ends_with('!') || r.new.ends_with('!'))
    {
        let _ = writeln!(
            o,
            "! unstable over repetitions (max/min above 2x): repeat more or lengthen the phase."
        );
    }
    o
}

/// Charts of the comparison: p99 and throughput per stream, base beside new.
pub fn charts(rows: &[Row]) -> Vec<(String, String)> {
    let series = vec!["base".to_owned(), "new".to_owned()];
    let chart = |figure: Figure, title: &str, y: &str| {
        let groups: Vec<svg::BarGroup> = rows
            .iter()
            .filter(|r| r.figure == Some(figure))
            .map(|r| svg::BarGroup {
                label: format!("{} {}/{}", r.cell, r.phase, r.endpoint),
                values: vec![r.base_value, r.new_value],
                repetitions: Vec::new(),
                missing: Vec::new(),
            })
            .collect();
        svg::bar_chart(title, y, &series, &groups)
    };
    vec![
        (
            "compare-p99.svg".to_owned(),
            chart(
                Figure::P99,
                "p99 latency, base vs new (lower is better)",
                "p99 latency (ms)",
            ),
        ),
        (
            "compare-throughput.svg".to_owned(),
            chart(
                Figure::Rps,
                "Throughput, base vs new (higher is better)",
                "requests per second",
            ),
        ),
    ]
}

/// Runs `benchmatrix compare`: the table on stdout, files under `--out`, and the exit code.
pub fn run(args: CompareArgs) -> ExitCode {
    let read = |p: &Path| {
        read_status(p)
            .map(|status| Compared {
                label: p.display().to_string(),
                status,
            })
            .map_err(|e| {
                eprintln!("benchmatrix compare: {e}");
                ExitCode::from(exit::BAD_INPUT)
            })
    };
    let Some(new) = &args.new else {
        return match read(&args.base) {
            Ok(run) => within::compare_within(&run, &args.options, "benchmatrix compare"),
            Err(code) => code,
        };
    };
    match (read(&args.base), read(new)) {
        (Ok(base), Ok(new)) => run_on(&base, &new, &args.options, "benchmatrix compare"),
        (Err(code), _) | (_, Err(code)) => code,
    }
}

/// Compares `new` with `base` as `options` say: prints the table, writes the files, and
/// returns the exit code (0, 2 for bad options, 3 for a regression beyond
/// `--max-regression`, 1 when `--out` cannot be written). `command` names the command in
/// messages.
pub fn run_on(
    base: &Compared,
    new: &Compared,
    options: &CompareOptions,
    command: &str,
) -> ExitCode {
    if !(options.max_regression >= 0.0 && options.min_change >= 0.0) {
        eprintln!("{command}: --max-regression and --min-change must be 0 or more");
        return ExitCode::from(exit::BAD_INPUT);
    }
    let rows = compare(&base.status, &new.status, options.min_change / 100.0);
    let table = markdown(&rows, options.max_regression);
    print!("{table}");
    if let Some(dir) = &options.out
        && let Err(e) = write_files(dir, (base, new), &rows, &table, options.max_regression)
    {
        eprintln!("{command}: cannot write into {}: {e}", dir.display());
        return ExitCode::from(crate::engine::verdict::exit::FAILED);
    }
    if nothing_compared(&rows) {
        eprintln!(
            "{command}: nothing to compare: no cell and stream was measured in both runs \
             (exit {})",
            exit::BAD_INPUT
        );
        return ExitCode::from(exit::BAD_INPUT);
    }
    if rows.iter().any(|r| fails(r, options.max_regression)) {
        ExitCode::from(exit::GATE_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// True when no row compared a figure of one run with the other's: every cell failed in both,
/// or the two matrices share no cell. A gate must not pass on that (a CI job whose runs all
/// failed would go green), so `compare` treats it as input that cannot be compared.
pub fn nothing_compared(rows: &[Row]) -> bool {
    !rows.iter().any(|r| {
        matches!(
            r.mark,
            Mark::Regression | Mark::Improvement | Mark::WithinNoise | Mark::Failed
        )
    })
}

fn write_files(
    dir: &Path,
    (base, new): (&Compared, &Compared),
    rows: &[Row],
    table: &str,
    max_regression: f64,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut md = format!(
        "# Comparison\n\n- base: `{}`\n- new: `{}`\n\n{table}\n",
        base.label, new.label
    );
    let forest = forest_chart(rows, max_regression);
    for (name, svg) in std::iter::once(forest).chain(charts(rows)) {
        write_atomically(&dir.join(&name), svg.as_bytes())?;
        md.push_str(&format!("![{name}]({name})\n\n"));
    }
    write_atomically(&dir.join("compare.md"), md.as_bytes())
}

pub mod within;

/// The forest plot of `compare`'s rows: every figure measured on both sides. `compare` keeps
/// no interval of the ratio (a single run has none; repeated runs are judged by a rank test),
/// so its rows are points, and the tooltip says how each was judged.
fn forest_chart(rows: &[Row], max_regression: f64) -> (String, String) {
    let forest: Vec<forest::ForestRow> = rows
        .iter()
        .filter_map(|r| {
            let (b, n) = (r.base_value?, r.new_value?);
            let figure = r.figure?;
            (b > 0.0 && n > 0.0).then(|| forest::ForestRow {
                label: if r.phase.is_empty() || r.phase == "(all)" {
                    format!("{} · {}", r.cell, figure.label())
                } else {
                    format!("{} · {}/{} {}", r.cell, r.phase, r.endpoint, figure.label())
                },
                ratio: n / b,
                interval: None,
                lower_is_better: figure != Figure::Rps,
                verdict: if fails(r, max_regression) {
                    forest::Verdict::Worse
                } else {
                    match r.mark {
                        Mark::Regression => forest::Verdict::Worse,
                        Mark::Improvement => forest::Verdict::Better,
                        _ => forest::Verdict::Neither,
                    }
                },
                words: r.evidence.clone(),
            })
        })
        .collect();
    let title = "New run against the base: ratio per figure";
    (
        "forest.svg".into(),
        forest::forest_plot(
            title,
            &forest,
            Some(forest::Gate::of_compare(max_regression)),
        ),
    )
}

#[cfg(test)]
mod tests;
