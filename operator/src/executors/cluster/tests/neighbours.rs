//! A measurement whose node has a busy neighbour, read from a local "kubelet" the way the
//! operator reads a real one: the status flags it and a Warning Event names it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::routing::get;

use super::*;
use crate::executors::cluster::telemetry::kubelet::reader::KubeletReader;

/// The system's own use on the node (the kubelet, the runtime), in cores.
const SYSTEM: f64 = 0.05;

/// A kubelet whose counters grow at the rates of `pods` ("namespace/name", cores), the node's
/// at their sum plus [`SYSTEM`].
#[derive(Clone)]
struct Kubelet {
    started: Instant,
    epoch_ms: i64,
    pods: Arc<Mutex<Vec<(String, f64)>>>,
}

async fn resource(State(k): State<Kubelet>) -> String {
    let secs = k.started.elapsed().as_secs_f64();
    let ms = k.epoch_ms + (secs * 1000.0) as i64;
    let pods = k.pods.lock().unwrap().clone();
    let total: f64 = pods.iter().map(|(_, rate)| rate).sum::<f64>() + SYSTEM;
    let mut o = format!(
        "node_cpu_usage_seconds_total {} {ms}\n",
        1000.0 + total * secs
    );
    for (pod, rate) in pods {
        let (ns, name) = pod.split_once('/').unwrap();
        o.push_str(&format!(
            "pod_cpu_usage_seconds_total{{namespace=\"{ns}\",pod=\"{name}\"}} {} {ms}\n",
            rate * secs
        ));
    }
    o
}

async fn serve_kubelet() -> (Kubelet, u16) {
    let kubelet = Kubelet {
        started: Instant::now(),
        epoch_ms: chrono::Utc::now().timestamp_millis(),
        pods: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/metrics/resource", get(resource))
        .route("/metrics/cadvisor", get(|| async { String::new() }))
        .with_state(kubelet.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (kubelet, port)
}

/// Node `n1`, whose kubelet listens on 127.0.0.1:`port`.
fn kubelet_node(port: u16) -> Value {
    let mut n = node("n1", "4", "8Gi");
    n["status"]["addresses"] = json!([{"type": "InternalIP", "address": "127.0.0.1"}]);
    n["status"]["daemonEndpoints"] = json!({"kubeletEndpoint": {"Port": port}});
    n["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    n
}

/// A result document whose two phases ran from `start_ms`, 800 ms each.
fn timed_log(start_ms: i64) -> String {
    let log = canned_log(20.0);
    let line = log.lines().last().unwrap();
    let mut doc: RunResult = serde_json::from_str(line).unwrap();
    for (i, phase) in doc.phases.iter_mut().enumerate() {
        phase.started_unix_ms = Some(start_ms + 800 * i as i64);
        phase.duration_secs = 0.8;
    }
    format!("{}\n", serde_json::to_string(&doc).unwrap())
}

/// Plays the scheduler: every pod goes to node n1.
fn place_on_n1(h: &Harness) {
    for pod in h.fake.list("pods") {
        if pod["spec"]["nodeName"].is_null() {
            let name = pod["metadata"]["name"].as_str().unwrap().to_owned();
            h.fake
                .edit("pods", NS, &name, |p| p["spec"]["nodeName"] = json!("n1"));
        }
    }
}

#[tokio::test]
async fn a_measurement_beside_a_busy_pod_is_flagged_in_its_status_and_an_event() {
    with_timeout(async {
        let (kubelet, port) = serve_kubelet().await;
        let mut h = Harness::new();
        let mut ctx = Context::new(
            h.fake.client(),
            Writer::default().as_reader(),
            1,
            Arc::new(Metrics::default()),
        );
        let clock = h.now.clone();
        ctx.clock = Arc::new(move || conditions::time_from_secs(clock.load(Ordering::SeqCst)));
        ctx.kubelet = Some(Arc::new(KubeletReader::plain_http(kube::Config::new(
            "http://127.0.0.1:1".parse().unwrap(),
        ))));
        h.ctx = Arc::new(ctx);
        h.fake.insert("nodes", kubelet_node(port));
        h.fake.insert("benchmarkruns", sample("nb", &["a"]));

        // Until the load runs, every pod on n1.
        for _ in 0..20 {
            h.reconcile("nb").await.unwrap();
            let status = h.run("nb").status.unwrap_or_default();
            if status.cells[0].phase == CellPhase::Running {
                break;
            }
            h.simulate(&|_| Behaviour::Busy);
            place_on_n1(&h);
            h.advance(1);
        }
        let status = h.run("nb").status.unwrap();
        assert_eq!(status.cells[0].phase, CellPhase::Running, "{status:#?}");
        let target = target_pod_names(&h).remove(0);
        let child = h.fake.list("jobs")[0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        // On the node: the target at half a core, its load generator at 0.2 (the pod the
        // simulated Job controller will make), and someone else's busy loop at 0.6.
        *kubelet.pods.lock().unwrap() = vec![
            (format!("{NS}/{target}"), 0.5),
            (format!("{NS}/{child}-0-abcde"), 0.2),
            ("other/busy".into(), 0.6),
            ("kube-system/quiet".into(), 0.01),
        ];

        // The next look at the load starts the sampler; the phases run while it samples.
        h.reconcile("nb").await.unwrap();
        let start_ms = chrono::Utc::now().timestamp_millis() + 300;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        h.simulate(&|_| Behaviour::Healthy(timed_log(start_ms)));
        h.advance(1);
        h.reconcile("nb").await.unwrap();

        let status = h.run("nb").status.unwrap();
        let cell = &status.cells[0];
        assert_eq!(cell.phase, CellPhase::Succeeded, "{cell:#?}");
        assert_eq!(cell.nodes, ["n1"]);
        let [n] = cell.neighbours.as_slice() else {
            panic!("one node's neighbours: {cell:#?}")
        };
        assert_eq!(n.node, "n1");
        // 0.6 + 0.01 + the system's 0.05; the target's and its load generator's use left out.
        let foreign = n.foreign_cpu.expect("foreign CPU");
        assert!((foreign - 0.66).abs() < 0.03, "{n:#?}");
        assert!(n.busy, "above the default 250m: {n:#?}");
        assert_eq!(n.pods[0].pod, "other/busy");
        assert_eq!(n.missing, None);
        let message = cell.message.as_deref().unwrap();
        assert!(
            message.starts_with("busy neighbours (node n1: 0.6")
                && message.contains("most by other/busy")
                && message.contains("above spec.placement.neighbourCpuLimit 250m"),
            "{message}"
        );
        let events = h.fake.list("events");
        let busy = events
            .iter()
            .find(|e| e["reason"] == "BusyNeighbours")
            .unwrap_or_else(|| panic!("a BusyNeighbours Event: {events:#?}"));
        assert_eq!(busy["type"], "Warning");
        let note = busy["note"].as_str().unwrap();
        assert!(
            note.starts_with("cell a shared its node n1: 0.6") && note.contains("other/busy"),
            "{note}"
        );
    })
    .await;
}
