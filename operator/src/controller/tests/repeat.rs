//! `spec.repeat` against the faked API server: every cell measured again after every other cell
//! (a b a b), each repetition with objects of its own, and the cell's figures merged from its
//! repetitions.

use serde_json::json;

use super::{Harness, healthy, sample, with_timeout};
use crate::api::{CellPhase, RunPhase};

#[tokio::test]
async fn repetitions_deploy_interleaved_with_objects_of_their_own_and_merge() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("twice", &["a", "b"]);
        run["spec"]["repeat"] = json!(2);
        h.fake.insert("benchmarkruns", run);
        let phases = h.drive("twice", &healthy).await;
        assert_eq!(
            phases,
            [RunPhase::Pending, RunPhase::Running, RunPhase::Succeeded]
        );

        // The Deployments in the order they were created, by cell and repetition label.
        let deployments: Vec<String> = h
            .fake
            .creations()
            .into_iter()
            .filter(|(resource, _)| resource == "deployments")
            .map(|(_, name)| name)
            .collect();
        assert_eq!(deployments.len(), 4, "{deployments:?}");
        let unique: std::collections::BTreeSet<&String> = deployments.iter().collect();
        assert_eq!(
            unique.len(),
            4,
            "each repetition has its own objects: {deployments:?}"
        );
        let order: Vec<(String, String)> = deployments
            .iter()
            .map(|name| {
                let cell = ["a", "b"]
                    .into_iter()
                    .find(|c| name.starts_with(&format!("twice-{c}-")))
                    .expect("a cell's child name");
                let repetition = if name.contains(&format!("twice-{cell}-r2-")) {
                    "2"
                } else {
                    "1"
                };
                (cell.to_owned(), repetition.to_owned())
            })
            .collect();
        let expected: Vec<(String, String)> = [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2")]
            .iter()
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .collect();
        assert_eq!(order, expected, "interleaved: {deployments:?}");
        let jobs = h
            .fake
            .creations()
            .into_iter()
            .filter(|(resource, _)| resource == "jobs")
            .count();
        assert_eq!(jobs, 4, "one load generator Job per repetition");

        let status = h.run("twice").status.unwrap();
        for cell in &status.cells {
            assert_eq!(cell.phase, CellPhase::Succeeded, "{cell:?}");
            assert_eq!(cell.repetitions.len(), 2, "{cell:?}");
            assert!(
                cell.repetitions
                    .iter()
                    .all(|r| r.phase == CellPhase::Succeeded && !r.results.is_empty())
            );
            let mixed_fast = cell
                .results
                .iter()
                .find(|r| r.phase == "mixed" && r.endpoint == "fast")
                .unwrap();
            let spread = mixed_fast.spread.as_ref().expect("a spread");
            assert_eq!(spread.repetitions, 2);
            assert_eq!(mixed_fast.requests, 1000, "500 requests in each repetition");
        }
        assert_eq!(
            status.cells[0].results[1].latency_ms.unwrap().p99,
            400.0,
            "the median of two equal repetitions"
        );
        assert!(
            h.fake.list("deployments").is_empty() && h.fake.list("jobs").is_empty(),
            "every repetition's objects are deleted"
        );
    })
    .await;
}
