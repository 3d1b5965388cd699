//! `benchmatrix size` end to end on this machine, against a service whose capacity is known:
//! each replica of the queue service (`local_common::QUEUE_SERVICE`, `BASE_MS` 20) serves one
//! request at a time for 20 ms, so it holds at most 50 requests per second and r replicas 50 r.
//! For a traffic of 60 rps plus 20% (72) the cheapest configuration of replicas 1, 2 and 4 is
//! two replicas: the search must find it, confirm it, leave four replicas unmeasured, and write
//! the settings.
//!
//! Tests named `timing_*` need the CPU to themselves (nextest runs them one at a time).

mod local_common;

use std::process::Command;

use local_common::{QUEUE_SERVICE, cell, exe, status, text};

#[test]
fn timing_the_sizing_search_finds_the_replicas_a_known_service_needs_and_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("service.py");
    std::fs::write(&script, QUEUE_SERVICE).unwrap();
    let file = dir.path().join("run.yaml");
    std::fs::write(
        &file,
        format!(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {{name: sizing}}
spec:
  target:
    command: [python3, "{script}"]
    env: [{{name: BASE_MS, value: "20"}}]
  workload:
    endpoints: [{{name: work, path: /work}}]
    warmup: 1s
  capacity:
    slo: [{{endpoint: work, p99: {{below: 100ms}}}}, {{errorRate: {{below: 0.01}}}}]
    resolution: 10%
    startRate: 50
    maxRate: 400
    probeDuration: 3s
  sizing:
    traffic: 60
    search: {{replicas: [1, 2, 4], cpu: [500m]}}
    confirmations: 2
"#,
            script = script.display()
        ),
    )
    .unwrap();
    let (out, sized) = (dir.path().join("out"), dir.path().join("sized"));
    let o = Command::new(exe())
        .arg("size")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--manifests")
        .arg(&sized)
        .args(["--deployment", "queue"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let st = status(&out);
    let sizing = &st["sizing"];
    assert_eq!(sizing["outcome"].as_str(), Some("Chosen"), "{t}");
    let chosen = &sizing["chosen"];
    assert_eq!(
        chosen["configuration"].as_str(),
        Some("single-x2-cpu500m"),
        "{t}"
    );
    assert_eq!(chosen["replicas"].as_u64(), Some(2), "{t}");
    // It held the target (72 rps) in every confirmation probe, below two replicas' 100.
    let held = chosen["heldRate"].as_f64().unwrap();
    assert!((72.0..=101.0).contains(&held), "held {held}\n{t}");
    let check = &cell(&st, "single-x2-cpu500m")["capacity"]["check"];
    assert_eq!(check["purpose"].as_str(), Some("Confirm"), "{t}");
    assert_eq!(check["rate"].as_f64(), Some(72.0), "{t}");
    // Both of its probes held: the status counts them from the probes it records.
    let confirmations = cell(&st, "single-x2-cpu500m")["capacity"]["probes"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|p| p["check"].as_str() == Some("Confirm") && p["verdict"].as_str() == Some("Held"))
        .count();
    assert_eq!(confirmations, 2, "{t}");
    assert!(check["held"].is_null(), "counted, not kept: {t}");
    // One replica fell short in its own search; four were never needed.
    let one = cell(&st, "single-x1-cpu500m");
    assert!(
        one["capacity"]["failedRate"].as_f64().unwrap() < 72.0,
        "{t}"
    );
    let four = cell(&st, "single-x4-cpu500m");
    assert_eq!(four["phase"].as_str(), Some("Skipped"), "{t}");
    assert!(four["capacity"].is_null(), "{t}");
    assert_eq!(sizing["searched"].as_u64(), Some(2), "{t}");
    // The settings: two replicas of 500m, requests equal to limits.
    let patch = std::fs::read_to_string(sized.join("deployment-patch.yaml")).unwrap();
    let patch: serde_yaml::Value = serde_yaml::from_str(&patch).unwrap();
    assert_eq!(patch["metadata"]["name"].as_str(), Some("queue"));
    assert_eq!(patch["spec"]["replicas"].as_u64(), Some(2));
    let resources = &patch["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(resources["requests"]["cpu"].as_str(), Some("500m"));
    assert_eq!(resources["limits"]["cpu"].as_str(), Some("500m"));
    assert!(
        t.contains("chosen: single-x2-cpu500m: 2 replica(s) x 500m CPU"),
        "{t}"
    );
}
