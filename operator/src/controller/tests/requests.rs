//! Endpoints with a method, headers and a body against the faked API server: a header kept in
//! a Secret reaches the load generator Job as a `secretKeyRef` env var, the plan ConfigMap
//! names only the variable, the operator never calls the Secrets API, and a bad header fails
//! the spec (SpecValid False) naming its field before anything is created.

use serde_json::json;

use super::{Harness, healthy, sample, with_timeout};
use crate::api::{RunPhase, conditions};

/// `sample`'s run with its `fast` endpoint made a POST with a bearer token from a Secret.
fn post_run(name: &str, headers: serde_json::Value) -> serde_json::Value {
    let mut run = sample(name, &["a", "b"]);
    run["spec"]["workload"]["endpoints"][0] = json!({
        "name": "fast", "path": "/orders", "method": "POST",
        "headers": headers,
        "body": "{\"item\": 1}",
        "successCodes": ["2xx", 409]
    });
    run
}

#[tokio::test]
async fn a_secret_header_reaches_the_job_env_and_never_the_config_map_or_the_secrets_api() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert(
            "benchmarkruns",
            post_run(
                "post",
                json!([
                    {"name": "Content-Type", "value": "application/json"},
                    {"name": "Authorization",
                     "valueFrom": {"secretKeyRef": {"name": "api-token", "key": "token"}}}
                ]),
            ),
        );
        h.reconcile("post").await.unwrap();
        h.simulate(&healthy);
        h.reconcile("post").await.unwrap();
        let jobs = h.fake.list("jobs");
        assert_eq!(jobs.len(), 1);
        let env = &jobs[0]["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(
            env,
            &json!([{"name": "BENCHMATRIX_HEADER_0_1",
                     "valueFrom": {"secretKeyRef": {"name": "api-token", "key": "token",
                                                    "optional": false}}}])
        );
        let cm = &h.fake.list("configmaps")[0];
        let plan = cm["data"]["plan-0.yaml"].as_str().unwrap();
        assert!(plan.contains("method: POST"), "{plan}");
        assert!(plan.contains("env: BENCHMATRIX_HEADER_0_1"), "{plan}");
        assert!(
            !plan.contains("api-token") && !plan.contains("secretKeyRef"),
            "{plan}"
        );

        let phases = h.drive("post", &healthy).await;
        assert_eq!(phases.last(), Some(&RunPhase::Succeeded));
        assert!(
            h.fake.calls().iter().all(|c| c.resource != "secrets"),
            "the operator reads no Secret"
        );
    })
    .await;
}

#[tokio::test]
async fn a_header_the_load_generator_owns_fails_the_spec_naming_the_field() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert(
            "benchmarkruns",
            post_run(
                "owned",
                json!([{"name": "Content-Length", "value": "5"},
                       {"name": "X-Tenant", "value": "a\r\nX-Injected: 1"}]),
            ),
        );
        h.reconcile("owned").await.unwrap();
        let status = h.run("owned").status.unwrap();
        assert_eq!(status.phase, RunPhase::Failed);
        let message = status.message.unwrap();
        for expected in [
            "spec.workload.endpoints[0].headers[0].name: Content-Length is written by the load generator",
            "spec.workload.endpoints[0].headers[1].value: must not contain a line break",
        ] {
            assert!(message.contains(expected), "{message}");
        }
        let valid = conditions::find(&status.conditions, conditions::SPEC_VALID).unwrap();
        assert_eq!(valid.status, "False");
        for kind in ["deployments", "services", "jobs", "configmaps"] {
            assert!(h.fake.list(kind).is_empty(), "{kind} created");
        }
    })
    .await;
}
