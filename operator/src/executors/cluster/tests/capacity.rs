//! A capacity search on a cluster: its probes share one target, each with a load generator
//! Job of its own that the next one waits for to be gone, and no probe reads another's result.

use super::*;
use benchmatrix_loadgen::result::StreamMode;

/// A run of one cell searched from 20 rps up to 80 (so three probes, each holding, end at the
/// upper bound), probes of 5 s after a 1 s warm-up.
fn capacity_run(name: &str) -> Value {
    let yaml = format!(
        r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: {name}, namespace: {NS}, generation: 1}}
spec:
  configurations: [{{name: a, cpu: 500m, memory: 128Mi}}]
  workload:
    endpoints: [{{name: fast, path: /fast}}]
    warmup: 1s
  capacity:
    slo: [{{endpoint: fast, p99: {{below: 100ms}}}}]
    startRate: 20
    maxRate: 80
    probeDuration: 5s
  timeouts: {{ready: 30s, runSlack: 20s}}
"#
    );
    let run: BenchmarkRun = serde_yaml::from_str(&yaml).unwrap();
    serde_json::to_value(run).unwrap()
}

/// A load generator's log for a probe of `rate` rps that held: every send on time and
/// answered, p99 `p99` ms. The rate is the Job's plan's, so each probe's document is its own.
fn probe_log(rate: f64, p99: f64) -> String {
    let latency = LatencyMs {
        p50: p99 / 3.0,
        p90: p99 / 2.0,
        p99,
        p999: p99,
        max: p99,
        mean: p99 / 3.0,
    };
    let requests = (rate * 5.0) as u64;
    let stream = StreamResult {
        endpoint: "fast".into(),
        mode: StreamMode::Open,
        requests,
        rps: rate,
        latency_ms: Some(latency),
        uncorrected_latency_ms: Some(latency),
        offered_rps: Some(rate),
        late_sends: Some(0),
        ..StreamResult::default()
    };
    let doc = RunResult {
        version: 1,
        target: "http://10.96.0.10:8080".into(),
        threads: 1,
        generators: 1,
        preflight_seconds: None,
        phases: vec![PhaseResult {
            name: "probe".into(),
            duration_secs: 5.0,
            streams: vec![stream],
            target_stats: vec![],
            started_unix_ms: None,
        }],
    };
    format!("{}\n", serde_json::to_string(&doc).unwrap())
}

/// The total rate the plan of the (one) Job in the fake asks for.
fn planned_rate(h: &Harness) -> f64 {
    let cm = &h.fake.list("configmaps")[0];
    let plan = cm["data"]["plan-0.yaml"].as_str().unwrap();
    let plan: benchmatrix_loadgen::plan::PlanFile = serde_yaml::from_str(plan).unwrap();
    plan.workload.phases[0]
        .load
        .iter()
        .map(|s| s.rate.unwrap())
        .sum()
}

#[tokio::test]
async fn a_search_on_a_cluster_keeps_its_target_and_gives_each_probe_a_job_of_its_own() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", capacity_run("cap"));
        let mut rates_loaded = Vec::new();
        for _ in 0..80 {
            h.reconcile("cap").await.unwrap();
            if h.phase("cap").is_finished() {
                break;
            }
            // The load generator answers at the rate its own plan asks: a document read
            // twice, or one Job's read for the next probe, would show in the probes' rates.
            let jobs = h.fake.list("jobs");
            let fresh = jobs.iter().any(|j| !j["status"]["succeeded"].is_number());
            if fresh {
                let rate = planned_rate(&h);
                rates_loaded.push(rate);
                h.simulate(&|_| Behaviour::Healthy(probe_log(rate, 20.0)));
            } else {
                h.simulate(&|_| Behaviour::Healthy(String::new()));
            }
            h.advance(1);
        }
        let status = h.run("cap").status.unwrap();
        assert_eq!(status.phase, RunPhase::Succeeded, "{status:#?}");
        let cap = status.cells[0].capacity.as_ref().unwrap();
        let probed: Vec<(f64, f64, Option<u32>)> = cap
            .probes
            .iter()
            .map(|p| (p.rate, p.achieved, p.settle_seconds))
            .collect();
        // Each probe recorded what its own Job measured, at its own rate; the second and third
        // ran on the first one's target after a second's settle.
        assert_eq!(
            probed,
            [
                (20.0, 20.0, None),
                (40.0, 40.0, Some(1)),
                (80.0, 80.0, Some(1))
            ]
        );
        assert_eq!(rates_loaded, [20.0, 40.0, 80.0]);
        assert!(
            cap.message.contains("held at the upper bound"),
            "{}",
            cap.message
        );
        assert_eq!(cap.targets, 1, "one target, removed at the end");

        // One Deployment for the three probes; a Job made for each, and deleted before the
        // next (the next has its name).
        let calls: Vec<String> = h.fake.calls().iter().map(|c| c.short()).collect();
        let count = |prefix: &str| calls.iter().filter(|c| c.starts_with(prefix)).count();
        let deployments: Vec<&String> = calls
            .iter()
            .filter(|c| c.starts_with("PATCH deployments/"))
            .collect();
        assert!(
            deployments.iter().all(|c| *c == deployments[0]),
            "one target: {deployments:?}"
        );
        assert_eq!(count("DELETE deployments/"), 1, "{calls:#?}");
        assert_eq!(count("DELETE jobs/"), 3, "after each probe: {calls:#?}");
        let job_applies: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.starts_with("PATCH jobs/"))
            .map(|(i, _)| i)
            .collect();
        let job_deletes: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.starts_with("DELETE jobs/"))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(job_applies.len(), 3, "{calls:#?}");
        assert!(job_deletes[0] < job_applies[1] && job_deletes[1] < job_applies[2]);
        assert!(h.fake.list("jobs").is_empty() && h.fake.list("deployments").is_empty());
    })
    .await;
}

/// A kept target whose last probe's Job is still there when its settle ends (its deletion was
/// lost: an operator that stopped after writing the status) gets it deleted again, and the
/// next probe starts only once it is gone: its Job would otherwise be the old one's.
#[tokio::test]
async fn the_next_probe_on_a_kept_target_waits_for_the_last_probes_job_to_go() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", capacity_run("cap"));
        // Up to the first probe's result: the target deployed, its Job run.
        for _ in 0..20 {
            h.reconcile("cap").await.unwrap();
            let status = h.run("cap").status.unwrap_or_default();
            let probes = status.cells.first().and_then(|c| c.capacity.as_ref());
            if probes.is_some_and(|c| !c.probes.is_empty()) {
                break;
            }
            h.simulate(&|_| Behaviour::Healthy(probe_log(20.0, 20.0)));
            h.advance(1);
        }
        assert!(h.fake.list("jobs").is_empty(), "deleted after its probe");
        // The old Job back, as if its deletion had never happened.
        let old = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "old", "namespace": NS},
            "status": {"succeeded": 1},
        });
        let name = h
            .fake
            .list("deployments")
            .first()
            .map(|d| d["metadata"]["name"].as_str().unwrap().to_owned())
            .unwrap();
        let mut old = old;
        old["metadata"]["name"] = json!(name);
        h.fake.insert("jobs", old);
        h.advance(5);
        h.reconcile("cap").await.unwrap();
        let status = h.run("cap").status.unwrap();
        assert_eq!(
            status.cells[0].phase,
            CellPhase::Deploying,
            "still settling"
        );
        assert!(
            h.fake.list("jobs").is_empty(),
            "the leftover Job is deleted again"
        );
        h.reconcile("cap").await.unwrap();
        let status = h.run("cap").status.unwrap();
        assert_eq!(status.cells[0].phase, CellPhase::Running, "{status:#?}");
        assert_eq!(planned_rate(&h), 40.0);
    })
    .await;
}
