//! The Grafana dashboard of the figures of finished runs, generated from the families
//! [`super::FAMILIES`] lists, so a query can only name a metric this module writes. `benchmatrix
//! dashboard` prints it; the chart ships it as charts/benchmatrix/dashboards/benchmatrix.json
//! (a test keeps the file equal to this output), in a ConfigMap the kube-prometheus-stack's
//! Grafana sidecar picks up.
//!
//! It shows, for the runs chosen in its `namespace` and `run` variables: the runs over time
//! (each run's verdict from when it finished, and a table of the recent ones), the p99 per
//! cell, phase and endpoint with the target's CPU throttling beside it, the throughput and
//! error ratio, CPU seconds per 1,000 requests, and for runs with variants each candidate's
//! ratio to the base with its interval, p-value and verdict.

use serde_json::{Value, json};

use super::{F, FAMILIES};

/// The dashboard's uid: its address in Grafana, kept stable so links and provisioning survive
/// a new version of it.
pub const UID: &str = "benchmatrix-runs";

/// The PromQL name of family `f`.
fn m(f: F) -> String {
    FAMILIES[f as usize].sample_name()
}

/// The selector every query applies: the runs chosen in the dashboard's variables.
const RUNS: &str = r#"namespace=~"$namespace",run=~"$run""#;

/// The dashboard as Grafana's JSON model, pretty-printed with a final newline.
pub fn dashboard_json() -> String {
    let mut text = serde_json::to_string_pretty(&dashboard()).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// The dashboard as a JSON value.
pub fn dashboard() -> Value {
    json!({
        "uid": UID,
        "title": "benchmatrix: finished runs",
        "description": "Latency, throughput, errors and CPU throttling of the BenchmarkRuns the benchmatrix operator exports (its --exported-runs that finished last).",
        "tags": ["benchmatrix", "benchmark"],
        "editable": true,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-7d", "to": "now"},
        "refresh": "1m",
        "timezone": "",
        "templating": {"list": [
            {
                "name": "datasource", "label": "Prometheus", "type": "datasource",
                "query": "prometheus", "current": {}, "hide": 0,
            },
            variable("namespace", &format!("label_values({}, namespace)", m(F::ExitCode))),
            variable(
                "run",
                &format!(r#"label_values({}{{namespace=~"$namespace"}}, run)"#, m(F::ExitCode)),
            ),
        ]},
        "panels": panels(),
        "annotations": {"list": []},
        "links": [],
    })
}

/// A query variable over a label, several values or all of them (`.*`, which also matches a
/// local status's missing namespace).
fn variable(name: &str, query: &str) -> Value {
    json!({
        "name": name, "label": name, "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": format!("{name}-values")},
        "definition": query,
        "refresh": 2, "includeAll": true, "multi": true, "allValue": ".*",
        "current": {"selected": true, "text": ["All"], "value": ["$__all"]},
        "sort": 1, "hide": 0,
    })
}

/// One query of a panel.
struct Query {
    expr: String,
    legend: String,
    /// An instant query in table form (for a table panel), else a range query.
    table: bool,
}

fn range(expr: String, legend: &str) -> Query {
    Query {
        expr,
        legend: legend.to_owned(),
        table: false,
    }
}

fn instant(expr: String) -> Query {
    Query {
        expr,
        legend: String::new(),
        table: true,
    }
}

/// Where a panel sits: grid column, row, width, height (Grafana's grid is 24 wide).
type Place = (u32, u32, u32, u32);

fn panel(
    id: u32,
    kind: &str,
    title: &str,
    place: Place,
    unit: &str,
    description: &str,
    queries: Vec<Query>,
) -> Value {
    let (x, y, w, h) = place;
    let targets: Vec<Value> = queries
        .iter()
        .zip('A'..)
        .map(|(q, ref_id)| {
            json!({
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": q.expr,
                "legendFormat": q.legend,
                "instant": q.table,
                "range": !q.table,
                "format": if q.table { "table" } else { "time_series" },
                "refId": ref_id.to_string(),
            })
        })
        .collect();
    json!({
        "id": id,
        "type": kind,
        "title": title,
        "description": description,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "right", "showLegend": true}},
        "targets": targets,
    })
}

/// Every panel of the dashboard, row by row from the top: the runs over time, p99 latency
/// beside CPU throttling, throughput beside errors, CPU cost beside the largest latency, and
/// the variants' ratios to their base.
fn panels() -> Vec<Value> {
    [
        run_panels(),
        latency_panels(),
        traffic_panels(),
        cost_panels(),
        variant_panels(),
    ]
    .concat()
}

/// The top row (panels 1 and 2): each run's exit code over time, and a table of the recent
/// runs. Its own function so [`panels`] reads as a list of rows.
fn run_panels() -> Vec<Value> {
    vec![
        panel(
            1,
            "timeseries",
            "Runs over time: exit code",
            (0, 0, 12, 8),
            "none",
            "Each run from when it finished: 0 every cell measured, 1 a cell failed, 2 refused, 3 a threshold failed, 130 interrupted.",
            vec![range(
                format!("{}{{{RUNS}}}", m(F::ExitCode)),
                "{{namespace}}/{{run}}",
            )],
        ),
        panel(
            2,
            "table",
            "Recent runs",
            (12, 0, 12, 8),
            "none",
            "When each run finished (seconds since the epoch), how long it took, its exit code, and its threshold verdicts.",
            vec![
                instant(format!("{}{{{RUNS}}}", m(F::Completed))),
                instant(format!("{}{{{RUNS}}}", m(F::Duration))),
                instant(format!("{}{{{RUNS}}}", m(F::ExitCode))),
            ],
        ),
    ]
}

/// The second row (panels 3 and 4): the p99 of each stream, with the target's CPU
/// throttling beside it to show whether the quota made the latency.
fn latency_panels() -> Vec<Value> {
    let latency = format!(r#"{}{{{RUNS},percentile="p99"}}"#, m(F::Latency));
    let throttled = format!(
        "{}{{{RUNS}}} / {}{{{RUNS}}}",
        m(F::ThrottledPeriods),
        m(F::Periods)
    );
    vec![
        panel(
            3,
            "timeseries",
            "p99 latency per cell, phase and endpoint",
            (0, 8, 12, 9),
            "s",
            "The p99 of each stream (the median over the cell's repetitions). A stream with too few samples for a p99 has none.",
            vec![range(latency, "{{run}} {{cell}} {{phase}}/{{endpoint}}")],
        ),
        panel(
            4,
            "timeseries",
            "Target CPU throttling per cell",
            (12, 8, 12, 9),
            "percentunit",
            "Share of the CFS periods in which the target was throttled by its CPU quota over the measured phases: beside the p99, it shows whether the quota made the latency.",
            vec![range(throttled, "{{run}} {{cell}}")],
        ),
    ]
}

/// The third row (panels 5 and 6): successful requests per second and the error ratio of
/// each stream.
fn traffic_panels() -> Vec<Value> {
    let errors = format!("{}{{{RUNS}}} / {}{{{RUNS}}}", m(F::Errors), m(F::Requests));
    vec![
        panel(
            5,
            "timeseries",
            "Throughput (successful requests per second)",
            (0, 17, 12, 8),
            "reqps",
            "Successful requests per second of each stream.",
            vec![range(
                format!("{}{{{RUNS}}}", m(F::Rps)),
                "{{run}} {{cell}} {{phase}}/{{endpoint}}",
            )],
        ),
        panel(
            6,
            "timeseries",
            "Error ratio",
            (12, 17, 12, 8),
            "percentunit",
            "Failed requests over requests completed, per stream.",
            vec![range(errors, "{{run}} {{cell}} {{phase}}/{{endpoint}}")],
        ),
    ]
}

/// The fourth row (panels 7 and 8): the target's CPU seconds per 1,000 requests, and the
/// largest latency of each stream.
fn cost_panels() -> Vec<Value> {
    let cpu_per_request = format!(
        "1000 * {}{{{RUNS}}} / on(namespace, run, cell) sum by (namespace, run, cell) ({}{{{RUNS}}})",
        m(F::CpuUsed),
        m(F::Requests)
    );
    vec![
        panel(
            7,
            "timeseries",
            "Target CPU seconds per 1,000 requests",
            (0, 25, 12, 8),
            "s",
            "CPU the target used over the measured phases for each 1,000 requests it completed: what a request costs in each configuration.",
            vec![range(cpu_per_request, "{{run}} {{cell}}")],
        ),
        panel(
            8,
            "timeseries",
            "Largest latency per cell, phase and endpoint",
            (12, 25, 12, 8),
            "s",
            "The slowest request of each stream.",
            vec![range(
                format!("{}{{{RUNS}}}", m(F::LatencyMax)),
                "{{run}} {{cell}} {{phase}}/{{endpoint}}",
            )],
        ),
    ]
}

/// The bottom row (panels 9 and 10), for runs with `spec.variants`: each candidate's p99
/// ratio to the base with its interval, and a table of every figure's ratio, p-value and
/// verdict.
fn variant_panels() -> Vec<Value> {
    vec![
        panel(
            9,
            "timeseries",
            "Candidate / base: p99 ratio with its 95% interval",
            (0, 33, 12, 9),
            "none",
            "Runs with spec.variants: the median over the rounds of each candidate's p99 divided by the base's, measured back to back in each round, with the low and high ends of its 95% bootstrap interval. Above 1 the candidate is slower; an interval wholly above 1 is a slowdown the rounds support.",
            [
                (F::VariantRatio, ""),
                (F::VariantRatioLow, " low"),
                (F::VariantRatioHigh, " high"),
            ]
            .into_iter()
            .map(|(family, end)| Query {
                expr: format!(r#"{}{{{RUNS},figure="p99"}}"#, m(family)),
                legend: format!("{{{{run}}}} {{{{configuration}}}} {{{{candidate}}}} {{{{phase}}}}/{{{{endpoint}}}}{end}"),
                table: false,
            })
            .collect(),
        ),
        panel(
            10,
            "table",
            "Candidate / base: every figure",
            (12, 33, 12, 9),
            "none",
            "Runs with spec.variants: per configuration, candidate, phase, endpoint and figure (p50, p99, rps), the median ratio to the base and the one-sided Wilcoxon signed-rank p-value that the candidate is worse, and the verdict (a regression is significant at 5% and beyond a 5% change).",
            vec![
                instant(format!("{}{{{RUNS}}}", m(F::VariantRatio))),
                instant(format!("{}{{{RUNS}}}", m(F::VariantPWorse))),
                // The verdict held: one series per figure, its `verdict` label the answer.
                instant(format!("{}{{{RUNS}}} == 1", m(F::VariantVerdict))),
            ],
        ),
    ]
}

/// Every query of `dashboard` (a dashboard's JSON model), with its panel's title.
pub fn queries(dashboard: &Value) -> Vec<(String, String)> {
    dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or_default().to_owned();
            p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(move |t| Some((title.clone(), t["expr"].as_str()?.to_owned())))
        })
        .collect()
}

/// The metric names a PromQL expression names: its identifiers that start with
/// `benchmatrix_` (every metric of this project does; functions and labels do not).
pub fn metric_names(expr: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(at) = expr[i..].find("benchmatrix_") {
        let start = i + at;
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let end = expr[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(expr.len(), |e| start + e);
        if boundary {
            names.push(&expr[start..end]);
        }
        i = end;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_names_only_metrics_the_exporter_writes() {
        let exported: Vec<String> = FAMILIES.iter().map(|f| f.sample_name()).collect();
        let queries = queries(&dashboard());
        assert!(queries.len() >= 8, "{queries:?}");
        for (title, expr) in &queries {
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{title}: {expr} names no metric");
            for name in names {
                assert!(
                    exported.iter().any(|e| e == name),
                    "{title}: {expr} names {name}, which the operator does not export"
                );
            }
            assert!(
                expr.contains(r#"run=~"$run""#),
                "{title}: {expr} ignores the run variable"
            );
        }
    }

    #[test]
    fn the_panels_asked_for_are_there_and_throttling_sits_beside_latency() {
        let d = dashboard();
        let panel = |title: &str| {
            d["panels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["title"].as_str().unwrap().starts_with(title))
                .unwrap_or_else(|| panic!("no panel {title}"))
                .clone()
        };
        let p99 = panel("p99 latency");
        let throttling = panel("Target CPU throttling");
        assert_eq!(p99["gridPos"]["y"], throttling["gridPos"]["y"], "same row");
        assert_eq!(p99["fieldConfig"]["defaults"]["unit"], "s");
        for title in ["Runs over time", "Recent runs", "Throughput", "Error ratio"] {
            panel(title);
        }
        // The variants' ratio is drawn with both ends of its interval.
        let ratio: Vec<String> = panel("Candidate / base: p99 ratio")["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["expr"].as_str().unwrap().to_owned())
            .collect();
        for family in [F::VariantRatio, F::VariantRatioLow, F::VariantRatioHigh] {
            let name = m(family);
            assert!(
                ratio.iter().any(|e| metric_names(e) == [name.as_str()]),
                "{name} not drawn: {ratio:?}"
            );
        }
        panel("Candidate / base: every figure");
        // No two panels overlap on Grafana's grid.
        let boxes: Vec<(u64, u64, u64, u64)> = d["panels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let g = &p["gridPos"];
                let n = |k: &str| g[k].as_u64().unwrap();
                (n("x"), n("y"), n("w"), n("h"))
            })
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            assert!(a.0 + a.2 <= 24);
            for b in &boxes[i + 1..] {
                let apart =
                    a.0 + a.2 <= b.0 || b.0 + b.2 <= a.0 || a.1 + a.3 <= b.1 || b.1 + b.3 <= a.1;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn metric_names_are_found_whole() {
        assert_eq!(
            metric_names(r#"1000 * benchmatrix_a_total{x="y"} / on(a) sum(benchmatrix_b)"#),
            ["benchmatrix_a_total", "benchmatrix_b"]
        );
        assert!(metric_names("not_benchmatrix_x").is_empty());
    }
}
