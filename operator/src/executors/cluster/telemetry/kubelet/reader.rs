//! Reading the kubelets: where each one listens, an authenticated HTTPS client per kubelet, and
//! a sampler per measured repetition that scrapes the kubelets of its target pods while the
//! load runs.
//!
//! The operator talks to each kubelet directly, as metrics-server and Prometheus do, with its
//! own service account token; the kubelet authorizes `/metrics/resource` and
//! `/metrics/cadvisor` as `nodes/metrics`. It never goes through the API server's
//! `nodes/proxy`, which would also grant exec into every pod of the node. The kubelet's serving
//! certificate is verified against the cluster CA, unless the operator runs with
//! `--kubelet-insecure-tls` (kubelets with self-signed certificates, as kind's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{Api, ResourceExt};

use super::figures::{ContainerFigures, Samples, Window, figures, sum_replicas};
use super::neighbours::{self, NodeSamples, node_scrape};
use super::parse::{ContainerId, cadvisor_readings, resource_readings};
use crate::resource::status::Neighbours;

/// How often the fresh endpoint (`/metrics/resource`) is scraped: its samples bracket the
/// window's ends within this.
const RESOURCE_EVERY: Duration = Duration::from_secs(1);
/// How often `/metrics/cadvisor` is scraped. cadvisor refreshes every ~10-15 s; faster scrapes
/// return the same samples and its text is large on a busy node.
const CADVISOR_EVERY: Duration = Duration::from_secs(3);
/// One scrape's bound: a kubelet that does not answer in time is tried again next tick.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(3);
/// The most bytes kept of one answer (a node with hundreds of containers answers cadvisor in
/// a few MiB).
const MAX_BODY_BYTES: usize = 32 << 20;
/// A sampler that nobody finished (its repetition failed, or the run was deleted) stops
/// itself this long after it started, on top of the load it was started for.
const SAMPLER_SLACK: Duration = Duration::from_secs(300);
/// The most scrape errors a sampler remembers (the first ones; the count goes on).
const MAX_ERRORS: usize = 3;

/// Where a kubelet listens, from its Node object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KubeletEndpoint {
    /// The node's name.
    pub node: String,
    /// Host (an IP address or a DNS name).
    pub host: String,
    /// `status.daemonEndpoints.kubeletEndpoint.Port`.
    pub port: u16,
}

impl KubeletEndpoint {
    /// The node's kubelet: its first InternalIP, else ExternalIP, else Hostname address (the
    /// order metrics-server prefers), and the port the node reports.
    pub fn of(node: &Node) -> Result<Self, String> {
        let name = node.name_any();
        let status = node.status.as_ref();
        let port = status
            .and_then(|s| s.daemon_endpoints.as_ref())
            .and_then(|d| d.kubelet_endpoint.as_ref())
            .map(|e| e.port)
            .filter(|p| (1..=65535).contains(p))
            .ok_or_else(|| format!("node {name} reports no kubelet port"))?;
        let addresses = status.and_then(|s| s.addresses.as_ref());
        let host = ["InternalIP", "ExternalIP", "Hostname"]
            .iter()
            .find_map(|kind| {
                addresses?
                    .iter()
                    .find(|a| a.type_ == *kind)
                    .map(|a| a.address.clone())
            })
            .ok_or_else(|| format!("node {name} reports no address"))?;
        Ok(Self {
            node: name,
            host,
            port: port as u16,
        })
    }

    fn url(&self, scheme: &str) -> String {
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// What one sampler is reading: one target container per replica, on the kubelet of its node.
#[derive(Clone, Debug)]
pub struct Targets {
    /// The replicas' containers.
    pub containers: Vec<ContainerId>,
    /// The kubelet of each container's node (same order).
    pub kubelets: Vec<KubeletEndpoint>,
}

/// What a sampler collected: samples per container, the node's and its pods' CPU counters per
/// node, and the first scrape errors.
#[derive(Default)]
struct Collected {
    samples: Vec<Samples>,
    nodes: std::collections::BTreeMap<String, NodeSamples>,
    errors: Vec<String>,
    failed_scrapes: usize,
}

/// What a finished sampler gives: the target's figures summed over its replicas, and what else
/// used the CPU of each of their nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The target containers' figures.
    pub figures: ContainerFigures,
    /// One entry per node of the target pods, in the order first met (not yet flagged busy).
    pub neighbours: Vec<Neighbours>,
}

struct Sampler {
    targets: Targets,
    collected: Arc<Mutex<Collected>>,
    task: tokio::task::JoinHandle<()>,
    /// When [`KubeletReader::scrape_last`] stopped the sampling task, if it has.
    stopped: Option<std::time::Instant>,
    /// Whether the last scrape, after the load, was taken whole.
    last_taken: bool,
}

/// How long a sampler stopped for its last scrape is kept for [`KubeletReader::finish`]; one
/// whose measurement ended otherwise (its cell failed) is dropped after that.
const STOPPED_KEPT: Duration = Duration::from_secs(600);

/// Reads kubelets: one client per kubelet, one sampler per repetition being measured.
pub struct KubeletReader {
    base: kube::Config,
    scheme: &'static str,
    clients: Mutex<HashMap<KubeletEndpoint, kube::Client>>,
    samplers: Mutex<HashMap<String, Sampler>>,
}

impl KubeletReader {
    /// A reader that authenticates as `base` does (the operator's in-cluster config: its
    /// token and the cluster CA) and verifies each kubelet's certificate against that CA
    /// unless `insecure_tls`.
    pub fn new(mut base: kube::Config, insecure_tls: bool) -> Self {
        base.accept_invalid_certs = insecure_tls;
        // The API server's name must not be checked against a kubelet's certificate.
        base.tls_server_name = None;
        Self {
            base,
            scheme: "https",
            clients: Mutex::default(),
            samplers: Mutex::default(),
        }
    }

    /// A reader of plain-HTTP "kubelets", for tests that serve metric text locally.
    pub fn plain_http(base: kube::Config) -> Self {
        Self {
            scheme: "http",
            ..Self::new(base, false)
        }
    }

    fn client(&self, at: &KubeletEndpoint) -> Result<kube::Client, String> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(at) {
            return Ok(c.clone());
        }
        let mut config = self.base.clone();
        config.cluster_url = at
            .url(self.scheme)
            .parse()
            .map_err(|e| format!("kubelet of node {} at {}: {e}", at.node, at.host))?;
        config.default_namespace = "default".into();
        config.read_timeout = Some(SCRAPE_TIMEOUT);
        config.connect_timeout = Some(SCRAPE_TIMEOUT);
        let client = kube::Client::try_from(config)
            .map_err(|e| format!("kubelet of node {}: {e}", at.node))?;
        clients.insert(at.clone(), client.clone());
        Ok(client)
    }

    /// GET `path` of a kubelet, as text.
    pub async fn get(&self, at: &KubeletEndpoint, path: &str) -> Result<String, String> {
        let client = self.client(at)?;
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let said = |e: kube::Error| {
            format!(
                "kubelet of node {} ({}:{}) {path}: {}",
                at.node,
                at.host,
                at.port,
                describe(&e)
            )
        };
        let text = tokio::time::timeout(SCRAPE_TIMEOUT * 2, client.request_text(request))
            .await
            .map_err(|_| format!("kubelet of node {} {path}: no answer in time", at.node))?
            .map_err(said)?;
        if text.len() > MAX_BODY_BYTES {
            return Err(format!(
                "kubelet of node {} {path}: answer larger than {} MiB",
                at.node,
                MAX_BODY_BYTES >> 20
            ));
        }
        Ok(text)
    }

    /// Whether a sampler runs (or ran, and was not finished) for `key`.
    pub fn is_sampling(&self, key: &str) -> bool {
        self.samplers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(key)
    }

    /// Starts sampling `targets` under `key` (a repetition's child name) for at most `load`
    /// plus a slack; a key already sampled is left as it is.
    pub fn start(self: &Arc<Self>, key: &str, targets: Targets, load: Duration) {
        let mut samplers = self.samplers.lock().unwrap_or_else(|e| e.into_inner());
        // Samplers nobody finished are dropped once they stopped by themselves.
        samplers.retain(|_, s| match s.stopped {
            Some(at) => at.elapsed() < STOPPED_KEPT,
            None => !s.task.is_finished(),
        });
        if samplers.contains_key(key) {
            return;
        }
        let collected = Arc::new(Mutex::new(Collected {
            samples: targets
                .containers
                .iter()
                .map(|_| Samples::default())
                .collect(),
            ..Collected::default()
        }));
        let reader = self.clone();
        let scraping = targets.clone();
        let into = collected.clone();
        let task = tokio::spawn(async move {
            let until = tokio::time::Instant::now() + load + SAMPLER_SLACK;
            let mut tick = tokio::time::interval(RESOURCE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last_cadvisor: Option<tokio::time::Instant> = None;
            while tokio::time::Instant::now() < until {
                tick.tick().await;
                let cadvisor = last_cadvisor.is_none_or(|t| t.elapsed() >= CADVISOR_EVERY);
                if cadvisor {
                    last_cadvisor = Some(tokio::time::Instant::now());
                }
                reader.scrape(&scraping, &into, cadvisor).await;
            }
        });
        samplers.insert(
            key.to_owned(),
            Sampler {
                targets,
                collected,
                task,
                stopped: None,
                last_taken: false,
            },
        );
    }

    /// Takes the sampler of `key`'s last scrape now, once the load has ended, and stops its
    /// sampling: [`KubeletReader::finish`] then reads what it holds without scraping again. It
    /// lets the scrape go beside the reads of the result instead of after them. A scrape cut
    /// short (the reconcile failed meanwhile) is taken again by `finish`.
    pub async fn scrape_last(&self, key: &str) {
        let (targets, collected) = {
            let mut samplers = self.samplers.lock().unwrap_or_else(|e| e.into_inner());
            let Some(s) = samplers.get_mut(key) else {
                return;
            };
            if s.last_taken {
                return;
            }
            s.task.abort();
            s.stopped.get_or_insert_with(std::time::Instant::now);
            (s.targets.clone(), s.collected.clone())
        };
        self.scrape(&targets, &collected, true).await;
        if let Some(s) = self
            .samplers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(key)
        {
            s.last_taken = true;
        }
    }

    /// Scrapes every kubelet of `targets` once and files the readings.
    async fn scrape(&self, targets: &Targets, into: &Mutex<Collected>, cadvisor: bool) {
        // Once per kubelet, however its replicas are ordered among the others' (a, b, a).
        let mut kubelets: Vec<&KubeletEndpoint> = Vec::new();
        for k in &targets.kubelets {
            if !kubelets.contains(&k) {
                kubelets.push(k);
            }
        }
        let mut paths = vec!["/metrics/resource"];
        if cadvisor {
            paths.push("/metrics/cadvisor");
        }
        // Every kubelet at once (the last scrape of a measurement is made while its reconcile
        // waits), each one's endpoints in turn: one connection per kubelet kept busy. Asked at
        // once, its second connection idled between cadvisor scrapes until the kubelet closed
        // it, and the next request on it failed (`SendRequest`) on the real cluster.
        let each = kubelets.into_iter().map(|kubelet| {
            let paths = &paths;
            async move {
                let mut answers = Vec::new();
                for path in paths {
                    let answer = self.get(kubelet, path).await;
                    answers.push((
                        kubelet,
                        *path,
                        answer,
                        chrono::Utc::now().timestamp_millis(),
                    ));
                }
                answers
            }
        });
        let mut answers: Vec<_> = futures::future::join_all(each)
            .await
            .into_iter()
            .flatten()
            .collect();
        // Each container's samples are kept in the order they were taken.
        answers.sort_by_key(|&(_, _, _, at)| at);
        for (kubelet, path, answer, now_ms) in answers {
            let mut c = into.lock().unwrap_or_else(|e| e.into_inner());
            match answer {
                Ok(text) => {
                    let readings = if path == "/metrics/resource" {
                        c.nodes
                            .entry(kubelet.node.clone())
                            .or_default()
                            .push(node_scrape(&text, now_ms));
                        resource_readings(&text, &targets.containers, now_ms)
                    } else {
                        cadvisor_readings(&text, &targets.containers, now_ms)
                    };
                    for (i, reading) in readings {
                        if targets.kubelets.get(i) == Some(kubelet)
                            && let Some(s) = c.samples.get_mut(i)
                        {
                            s.push(reading);
                        }
                    }
                }
                Err(e) => {
                    c.failed_scrapes += 1;
                    if c.errors.len() < MAX_ERRORS && !c.errors.contains(&e) {
                        c.errors.push(e);
                    }
                }
            }
        }
    }

    /// Ends the sampler of `key`: one last scrape of the fresh endpoint (so its samples reach
    /// past the window's end; cadvisor's would be seconds old anyway), then the figures over
    /// `window`, summed over the replicas, and each of their nodes' use by others than `own`
    /// (the measurement's pods as "namespace/name", besides the target pods sampled). None when
    /// nothing was sampled under `key` (the operator restarted during the load, or kubelet
    /// figures are off).
    pub async fn finish(&self, key: &str, window: Window, own: &[String]) -> Option<Sampled> {
        let sampler = {
            let mut samplers = self.samplers.lock().unwrap_or_else(|e| e.into_inner());
            let sampler = samplers.remove(key);
            // Samplers stopped for their last scrape whose measurement ended otherwise go
            // here too, not only when the next sampler starts.
            samplers.retain(|_, s| s.stopped.is_none_or(|at| at.elapsed() < STOPPED_KEPT));
            sampler?
        };
        if !sampler.last_taken {
            sampler.task.abort();
            self.scrape(&sampler.targets, &sampler.collected, true)
                .await;
        }
        let c = sampler.collected.lock().unwrap_or_else(|e| e.into_inner());
        let each: Vec<ContainerFigures> = c.samples.iter().map(|s| figures(s, window)).collect();
        let mut total = sum_replicas(&each);
        if c.failed_scrapes > 0 {
            total.missing.push(format!(
                "{} kubelet scrape(s) failed, first: {}",
                c.failed_scrapes,
                c.errors.join("; ")
            ));
        }
        let mut own: Vec<String> = own.to_vec();
        own.extend(
            sampler
                .targets
                .containers
                .iter()
                .map(|c| format!("{}/{}", c.namespace, c.pod)),
        );
        let mut nodes: Vec<&str> = Vec::new();
        for k in &sampler.targets.kubelets {
            if !nodes.contains(&k.node.as_str()) {
                nodes.push(&k.node);
            }
        }
        let neighbours = nodes
            .into_iter()
            .map(|node| match c.nodes.get(node).filter(|s| !s.is_empty()) {
                Some(samples) => neighbours::neighbours(node, samples, window, &own),
                None => Neighbours {
                    node: node.to_owned(),
                    missing: Some(
                        c.errors
                            .iter()
                            .find(|e| {
                                e.contains(&format!("node {node} "))
                                    || e.contains(&format!("node {node}:"))
                            })
                            .cloned()
                            .unwrap_or_else(|| {
                                "no node CPU samples from /metrics/resource".to_owned()
                            }),
                    ),
                    ..Neighbours::default()
                },
            })
            .collect();
        Some(Sampled {
            figures: total,
            neighbours,
        })
    }

    /// Stops and forgets the sampler of `key`, if any (its repetition ended without a result).
    pub fn forget(&self, key: &str) {
        if let Some(s) = self
            .samplers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
        {
            s.task.abort();
        }
    }
}

/// A kube error as one line, naming the usual causes of a kubelet refusing the operator.
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 401 || s.code == 403 => format!(
            "{} {} (the operator's ClusterRole needs get on nodes/metrics; the kubelet needs \
             webhook authentication and authorization)",
            s.code, s.message
        ),
        other => {
            let text = other.to_string();
            if text.contains("certificate") || text.contains("Certificate") {
                format!(
                    "{text} (a kubelet with a self-signed certificate needs the operator's \
                     --kubelet-insecure-tls)"
                )
            } else {
                text
            }
        }
    }
}

/// The target containers of `pods` (one per replica) and the kubelets of their nodes, read from
/// the Node objects; pods not yet on a node, or whose node cannot be read, are an error.
pub async fn targets_of(
    nodes: &Api<Node>,
    pods: &[Pod],
    container: &str,
) -> Result<Targets, String> {
    let mut containers = Vec::new();
    let mut kubelets = Vec::new();
    // One list (the verb the operator has for its fit check) rather than a get per node.
    let listed = nodes
        .list(&kube::api::ListParams::default())
        .await
        .map_err(|e| format!("listing the nodes: {e}"))?;
    for pod in pods {
        let name = pod.name_any();
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .ok_or_else(|| format!("pod {name} is on no node"))?;
        let object = listed
            .items
            .iter()
            .find(|n| n.name_any() == node)
            .ok_or_else(|| format!("node {node} of pod {name} is not in the node list"))?;
        let endpoint = KubeletEndpoint::of(object)?;
        let id = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.name == container))
            .and_then(|c| c.container_id.clone());
        containers.push(ContainerId::new(
            &pod.namespace().unwrap_or_default(),
            &name,
            container,
            id.as_deref(),
        ));
        kubelets.push(endpoint);
    }
    Ok(Targets {
        containers,
        kubelets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        DaemonEndpoint, NodeAddress, NodeDaemonEndpoints, NodeStatus,
    };

    fn node(addresses: &[(&str, &str)], port: Option<i32>) -> Node {
        Node {
            metadata: kube::api::ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            status: Some(NodeStatus {
                addresses: Some(
                    addresses
                        .iter()
                        .map(|(t, a)| NodeAddress {
                            type_: (*t).into(),
                            address: (*a).into(),
                        })
                        .collect(),
                ),
                daemon_endpoints: port.map(|p| NodeDaemonEndpoints {
                    kubelet_endpoint: Some(DaemonEndpoint { port: p }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_kubelet_is_found_at_the_address_and_port_its_node_reports() {
        let e = KubeletEndpoint::of(&node(
            &[("Hostname", "n1"), ("InternalIP", "10.0.0.2")],
            Some(10260),
        ))
        .unwrap();
        assert_eq!((e.host.as_str(), e.port), ("10.0.0.2", 10260));
        assert_eq!(e.url("https"), "https://10.0.0.2:10260");
        let v6 = KubeletEndpoint::of(&node(&[("InternalIP", "fd00::2")], Some(10250))).unwrap();
        assert_eq!(v6.url("https"), "https://[fd00::2]:10250");
        let by_name = KubeletEndpoint::of(&node(&[("Hostname", "n1")], Some(10250))).unwrap();
        assert_eq!(by_name.host, "n1");
        let err = KubeletEndpoint::of(&node(&[("InternalIP", "10.0.0.2")], None)).unwrap_err();
        assert!(err.contains("no kubelet port"), "{err}");
        let err = KubeletEndpoint::of(&node(&[], Some(10250))).unwrap_err();
        assert!(err.contains("no address"), "{err}");
    }
}

/// The sampler against a local "kubelet" whose counters grow at known rates.
#[cfg(test)]
mod sampler_tests {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use axum::extract::State;
    use axum::http::HeaderMap;
    use axum::routing::get;

    use super::*;
    use crate::executors::cluster::process::calls::KUBELET_CALLS;

    /// Two cores' worth of CPU per second, 10 CFS periods a second of which 4 throttled.
    const CPU_RATE: f64 = 2.0;
    /// Another pod on the node: 0.6 of a core.
    const BUSY_RATE: f64 = 0.6;

    /// Each request's path and Authorization header.
    type Requests = Arc<Mutex<Vec<(String, Option<String>)>>>;

    #[derive(Clone)]
    struct Kubelet {
        started: Instant,
        epoch_ms: i64,
        requests: Requests,
    }

    impl Kubelet {
        fn now(&self) -> (f64, i64) {
            let secs = self.started.elapsed().as_secs_f64();
            (secs, self.epoch_ms + (secs * 1000.0) as i64)
        }
        fn note(&self, path: &str, headers: &HeaderMap) {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            self.requests.lock().unwrap().push((path.to_owned(), auth));
        }
    }

    async fn resource(State(k): State<Kubelet>, headers: HeaderMap) -> String {
        k.note("/metrics/resource", &headers);
        let (secs, ms) = k.now();
        format!(
            "container_cpu_usage_seconds_total{{container=\"target\",namespace=\"ns\",pod=\"p\"}} {} {ms}\n\
             container_memory_working_set_bytes{{container=\"target\",namespace=\"ns\",pod=\"p\"}} {} {ms}\n\
             node_cpu_usage_seconds_total {} {ms}\n\
             pod_cpu_usage_seconds_total{{namespace=\"ns\",pod=\"p\"}} {} {ms}\n\
             pod_cpu_usage_seconds_total{{namespace=\"other\",pod=\"busy\"}} {} {ms}\n",
            CPU_RATE * secs,
            1_000_000 + (secs * 1000.0) as u64,
            (CPU_RATE + BUSY_RATE) * secs,
            CPU_RATE * secs,
            BUSY_RATE * secs,
        )
    }

    async fn cadvisor(State(k): State<Kubelet>, headers: HeaderMap) -> String {
        k.note("/metrics/cadvisor", &headers);
        let (secs, ms) = k.now();
        let periods = (secs * 10.0) as u64;
        format!(
            "container_cpu_cfs_periods_total{{container=\"target\",id=\"/kubepods/podu/abc\",namespace=\"ns\",pod=\"p\"}} {periods} {ms}\n\
             container_cpu_cfs_throttled_periods_total{{container=\"target\",id=\"/kubepods/podu/abc\",namespace=\"ns\",pod=\"p\"}} {} {ms}\n",
            periods * 4 / 10
        )
    }

    /// A local "kubelet" and the port it listens on.
    async fn serve_kubelet() -> (Kubelet, u16) {
        let kubelet = Kubelet {
            started: Instant::now(),
            epoch_ms: chrono::Utc::now().timestamp_millis(),
            requests: Arc::default(),
        };
        let app = axum::Router::new()
            .route("/metrics/resource", get(resource))
            .route("/metrics/cadvisor", get(cadvisor))
            .with_state(kubelet.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (kubelet, port)
    }

    fn at(node: &str, port: u16) -> KubeletEndpoint {
        KubeletEndpoint {
            node: node.into(),
            host: "127.0.0.1".into(),
            port,
        }
    }

    #[tokio::test]
    async fn each_kubelet_is_scraped_once_however_its_replicas_are_ordered() {
        let (one, p1) = serve_kubelet().await;
        let (two, p2) = serve_kubelet().await;
        let reader =
            KubeletReader::plain_http(kube::Config::new("http://127.0.0.1:1".parse().unwrap()));
        let targets = Targets {
            containers: ["a", "b", "c"]
                .map(|p| ContainerId::new("ns", p, "target", None))
                .to_vec(),
            kubelets: vec![at("n1", p1), at("n2", p2), at("n1", p1)],
        };
        let collected = Mutex::new(Collected {
            samples: vec![Samples::default(); 3],
            ..Collected::default()
        });
        reader.scrape(&targets, &collected, true).await;
        assert_eq!(
            one.requests.lock().unwrap().len(),
            2,
            "resource and cadvisor once each"
        );
        assert_eq!(two.requests.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn the_sampler_reads_the_kubelet_with_the_token_and_lines_figures_up_with_the_window() {
        let (kubelet, port) = serve_kubelet().await;

        let mut config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        config.auth_info.token = Some("operator-token".to_owned().into());
        let reader = Arc::new(KubeletReader::plain_http(config));
        let targets = Targets {
            containers: vec![ContainerId::new(
                "ns",
                "p",
                "target",
                Some("containerd://abc"),
            )],
            kubelets: vec![KubeletEndpoint {
                node: "n".into(),
                host: "127.0.0.1".into(),
                port,
            }],
        };
        reader.start("rep-1", targets, Duration::from_secs(10));
        assert!(reader.is_sampling("rep-1"));
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let window = Window {
            start_ms: kubelet.epoch_ms + 1000,
            end_ms: kubelet.epoch_ms + 3000,
        };
        let sampled = reader.finish("rep-1", window, &[]).await.expect("sampled");
        let figures = sampled.figures;
        assert!(!reader.is_sampling("rep-1"));
        let cpu = figures.cpu_seconds.expect("cpu");
        // Two seconds at two cores, interpolated between samples a second apart.
        assert!((cpu - 4.0).abs() < 0.1, "cpu {cpu}: {figures:?}");
        // The node's other use: the busy pod's 0.6 of a core, the target's pod left out.
        let [n] = sampled.neighbours.as_slice() else {
            panic!("one node: {:?}", sampled.neighbours)
        };
        let foreign = n.foreign_cpu.expect("foreign CPU");
        assert!((foreign - BUSY_RATE).abs() < 0.05, "{n:?}");
        assert_eq!(n.pods[0].pod, "other/busy");
        let idle = figures.memory_idle_bytes.unwrap();
        let peak = figures.memory_peak_bytes.unwrap();
        assert!(idle < peak, "{figures:?}");

        let requests = kubelet.requests.lock().unwrap().clone();
        for path in ["/metrics/resource", "/metrics/cadvisor"] {
            assert!(
                requests.iter().any(|(p, _)| p == path),
                "{path} read: {requests:?}"
            );
        }
        assert!(
            requests
                .iter()
                .all(|(_, auth)| auth.as_deref() == Some("Bearer operator-token")),
            "every scrape carries the operator's token: {requests:?}"
        );
        // Both paths are what the kubelet authorizes as the listed call.
        assert_eq!(KUBELET_CALLS.len(), 1);
        assert_eq!(KUBELET_CALLS[0].rbac_resource(), "nodes/metrics");
        assert_eq!(
            reader.finish("rep-1", window, &[]).await,
            None,
            "finished once"
        );
    }

    #[tokio::test]
    async fn an_unreachable_kubelet_gives_no_figures_and_says_why() {
        let reader = Arc::new(KubeletReader::plain_http(kube::Config::new(
            "http://127.0.0.1:1".parse().unwrap(),
        )));
        let targets = Targets {
            containers: vec![ContainerId::new("ns", "p", "target", None)],
            kubelets: vec![KubeletEndpoint {
                node: "gone".into(),
                host: "127.0.0.1".into(),
                port: 1,
            }],
        };
        reader.start("r", targets, Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sampled = reader
            .finish(
                "r",
                Window {
                    start_ms: 0,
                    end_ms: 1,
                },
                &[],
            )
            .await
            .unwrap();
        let f = sampled.figures;
        assert_eq!(f.cpu_seconds, None);
        let said = f.missing.join("; ");
        assert!(said.contains("kubelet of node gone"), "{said}");
        // The node's neighbours are missing for the same reason.
        assert_eq!(sampled.neighbours.len(), 1);
        let n = &sampled.neighbours[0];
        assert_eq!((n.node.as_str(), n.foreign_cpu), ("gone", None));
        assert!(
            n.missing
                .as_deref()
                .unwrap()
                .contains("kubelet of node gone"),
            "{n:?}"
        );
    }
}
