//! A real Prometheus (Debian's `prometheus` package: .ci/run installs it) scrapes the figures
//! of a finished run and answers PromQL through its HTTP API:
//!
//! - the p99 it returns is the p99 the status holds (in seconds), also for a variant's cell
//!   selected by its `variant` label;
//! - a run with variants: the ratio of each candidate figure to the base's, and its interval
//!   and p-value, are those status.variants holds;
//! - every query of the chart's Grafana dashboard returns series;
//! - promtool's lint of the exposition finds nothing but the classic text parser's view of
//!   OpenMetrics counters (see [`promtool_lint_is_clean`]).
//!
//! What is scraped is `benchmatrix metrics --listen`, which serves a saved status with the
//! operator's own exporter (`operator/src/run_metrics.rs`): the families, labels and
//! encoder the operator's /metrics serves, without a cluster. Both processes are started by the
//! test on loopback ports, and killed when it ends; every wait is bounded.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benchmatrix::run_metrics::dashboard;

/// How long Prometheus may take to start and scrape the first time (it scrapes every second).
const FIRST_SCRAPE: Duration = Duration::from_secs(60);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/finished/ci-gate.yaml")
}

/// A real local run with two variants (base and candidate), the comment at its top says how.
fn paired_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/finished/paired.yaml")
}

/// A child process killed (and reaped) when dropped, so a failing test leaves none behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `benchmatrix metrics --listen 127.0.0.1:0 FILE...`, and the address it serves on.
fn exporter(files: &[PathBuf]) -> (Killed, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchmatrix"))
        .args(["metrics", "--listen", "127.0.0.1:0"])
        .args(files)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start benchmatrix metrics");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let killed = Killed(child);
    let addr = line
        .trim()
        .strip_prefix("serving on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .parse()
        .unwrap();
    (killed, addr)
}

/// A port free on loopback now (Prometheus takes no port 0 that it would tell us).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Prometheus scraping `target` every second, with its data in `dir`; its API address.
fn prometheus(dir: &Path, target: SocketAddr) -> (Killed, SocketAddr) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n  - job_name: benchmatrix\n    static_configs: [{{targets: ['{target}']}}]\n"
        ),
    )
    .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("prometheus is needed: install Debian's prometheus (scripts/test-deps.sh does)");
    (Killed(child), addr)
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The result vector of an instant query, or why there is none.
fn query(api: SocketAddr, promql: &str) -> Result<Vec<serde_json::Value>, String> {
    let path = format!("/api/v1/query?query={}", encode(promql));
    let r = benchmatrix_quota::http::get(api, &path, Duration::from_secs(5))
        .map_err(|e| format!("GET {path}: {e}"))?;
    let body: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| {
        format!(
            "{promql}: not JSON ({e}): {}",
            String::from_utf8_lossy(&r.body)
        )
    })?;
    if body["status"] != "success" {
        return Err(format!("{promql}: {body}"));
    }
    Ok(body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// Asks `promql` until it returns series or `limit` passes.
fn query_until_found(
    api: SocketAddr,
    promql: &str,
    limit: Duration,
    log: &Path,
) -> Vec<serde_json::Value> {
    let start = Instant::now();
    loop {
        match query(api, promql) {
            Ok(found) if !found.is_empty() => return found,
            answer => assert!(
                start.elapsed() < limit,
                "no series for {promql} after {limit:?} ({answer:?}); prometheus said:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ),
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn value(series: &serde_json::Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn prometheus_scrapes_the_p99_the_status_holds_and_every_dashboard_query_finds_series() {
    let dir = tempfile::tempdir().unwrap();
    let (_exporter, target) = exporter(&[fixture(), paired_fixture()]);
    let (_prometheus, api) = prometheus(dir.path(), target);
    let log = dir.path().join("prometheus.log");

    let status = benchmatrix::frontends::report::read_status_file(&fixture()).unwrap();
    let cell = status.cells.iter().find(|c| c.name == "pool-x1").unwrap();
    let result = cell
        .results
        .iter()
        .find(|r| r.phase == "mixed" && r.endpoint == "fast")
        .unwrap();
    let p99_ms = result.latency_ms.as_ref().unwrap().p99;

    let promql = r#"benchmatrix_run_latency_seconds{namespace="bench",run="ci-gate",cell="pool-x1",phase="mixed",endpoint="fast",percentile="p99"}"#;
    let found = query_until_found(api, promql, FIRST_SCRAPE, &log);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        (value(&found[0]) - p99_ms / 1000.0).abs() < 1e-12,
        "Prometheus says {} s, the status {p99_ms} ms",
        value(&found[0])
    );
    let up = query(api, r#"up{job="benchmatrix"}"#).unwrap();
    assert_eq!(value(&up[0]), 1.0, "{up:?}");

    // The dashboard's queries, with its variables at "All" and its range at an hour.
    for (title, expr) in dashboard::queries(&dashboard::dashboard()) {
        let expr = expr
            .replace("$namespace", ".*")
            .replace("$run", ".*")
            .replace("$__range", "1h");
        let found = query(api, &expr).unwrap_or_else(|e| panic!("{title}: {e}"));
        assert!(!found.is_empty(), "{title}: {expr} found no series");
    }
    let throttled = query(
        api,
        &dashboard::queries(&dashboard::dashboard())
            .into_iter()
            .find(|(t, _)| t.starts_with("Target CPU throttling"))
            .unwrap()
            .1
            .replace("$namespace", ".*")
            .replace("$run", ".*"),
    )
    .unwrap();
    let single = throttled
        .iter()
        .find(|s| s["metric"]["cell"] == "single-x1")
        .unwrap();
    // 30 of 130 periods throttled.
    assert!((value(single) - 30.0 / 130.0).abs() < 1e-9, "{single}");

    // The run with variants: a cell found by its variant label, and each ratio figure.
    let paired = benchmatrix::frontends::report::read_status_file(&paired_fixture()).unwrap();
    let candidate = paired
        .cells
        .iter()
        .find(|c| c.variant.as_deref() == Some("candidate"))
        .unwrap();
    let p99_ms = candidate.results[0].latency_ms.as_ref().unwrap().p99;
    let found = query(
        api,
        r#"benchmatrix_run_latency_seconds{run="paired",configuration="threads",variant="candidate",percentile="p99"}"#,
    )
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        (value(&found[0]) - p99_ms / 1000.0).abs() < 1e-12,
        "{found:?}"
    );
    let comparison = &paired.variants[0];
    assert_eq!(comparison.figures.len(), 3, "p50, p99, rps");
    for figure in &comparison.figures {
        let at = format!(
            r#"{{run="paired",configuration="{}",base="{}",candidate="{}",phase="{}",endpoint="{}",figure="{}"}}"#,
            comparison.configuration,
            comparison.base,
            comparison.candidate,
            figure.phase,
            figure.endpoint,
            figure.figure
        );
        let one = |family: &str| {
            let found = query(api, &format!("{family}{at}")).unwrap();
            assert_eq!(found.len(), 1, "{family}{at}: {found:?}");
            value(&found[0])
        };
        let same = |family: &str, want: f64| {
            let got = one(family);
            assert!(
                (got - want).abs() < 1e-12,
                "{family}{at}: {got}, status {want}"
            );
        };
        same("benchmatrix_run_variant_ratio", figure.ratio);
        same(
            "benchmatrix_run_variant_ratio_interval_low",
            figure.ratio_low.unwrap(),
        );
        same(
            "benchmatrix_run_variant_ratio_interval_high",
            figure.ratio_high.unwrap(),
        );
        same("benchmatrix_run_variant_p_worse", figure.p_worse);
        same("benchmatrix_run_variant_p_better", figure.p_better);
        let verdict = query(api, &format!("benchmatrix_run_variant_verdict{at} == 1")).unwrap();
        assert_eq!(verdict.len(), 1, "{verdict:?}");
        let word = match figure.verdict {
            benchmatrix::resource::status::ChangeVerdict::Regression => "regression",
            benchmatrix::resource::status::ChangeVerdict::Improvement => "improvement",
            benchmatrix::resource::status::ChangeVerdict::WithinNoise => "within_noise",
        };
        assert_eq!(verdict[0]["metric"]["verdict"], word, "{verdict:?}");
    }
}

/// promtool's lint (`promtool check metrics`) of what the exporter serves. It reads the
/// classic text format, where a counter's HELP names its sample (`x_total`); OpenMetrics names
/// the family (`x`), so it reports "no help text" for every counter. Anything else it says is
/// a real breach of the naming conventions.
#[test]
fn promtool_lint_is_clean() {
    let (_exporter, target) = exporter(&[fixture(), paired_fixture()]);
    let text = String::from_utf8(
        benchmatrix_quota::http::get(target, "/metrics", Duration::from_secs(5))
            .unwrap()
            .body,
    )
    .unwrap();
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is needed: install Debian's prometheus (scripts/test-deps.sh does)");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let problems: Vec<&str> = said
        .lines()
        .filter(|l| {
            let counter_help = l
                .strip_suffix(" no help text")
                .and_then(|name| name.strip_suffix("_total"))
                .is_some_and(|family| text.contains(&format!("# HELP {family} ")));
            !l.trim().is_empty() && !counter_help
        })
        .collect();
    assert!(problems.is_empty(), "promtool: {problems:#?}\n{text}");
    assert!(
        said.contains("no help text"),
        "the known report is gone: update this test: {said}"
    );
}
