//! Whether a cell can ever be scheduled: its pods' requests against the allocatable CPU and
//! memory of the nodes `spec.placement` lets them use. Pure, so decide can call it before it
//! creates anything.
//!
//! What "a node it may use" means: a node whose labels match `spec.placement.nodeSelector` and
//! whose NoSchedule / NoExecute taints the run's tolerations tolerate (a cordoned node counts as
//! tainted `node.kubernetes.io/unschedulable:NoSchedule`). The target pods and the load
//! generator pods share that set, as both carry the same selector and tolerations.
//!
//! Where the load generator goes: `spec.placement.separateLoadgen` is a *preferred* pod
//! anti-affinity, so the scheduler puts the load generator apart from the target when another
//! node has room and alongside it otherwise. Neither is required, so the question is whether
//! every pod of the cell (the target replicas and the load generators, all running at once) can
//! be placed on the usable nodes together: on one node that is the sum of all requests; across
//! several it is a packing, solved exactly below (two pod sizes, so a small dynamic programme).
//!
//! The check is against allocatable resources, not what other pods leave free: it fails only a
//! cell that can never fit. A cell that fits an empty node but not the node's free room is left
//! to the scheduler, and its PodScheduled=False condition ends the cell (controller/decide).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};
use kube::ResourceExt;

use crate::resource::matrix::Cell;
use crate::resource::quantity::parse_quantity;
use crate::resource::{BenchmarkRunSpec, Quantity};

/// The taint the node controller puts on a cordoned node (`spec.unschedulable: true`).
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// What one pod asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodRequest {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
}

/// Everything a cell needs from the cluster at once.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRequests {
    /// One target replica's requests.
    pub target: PodRequest,
    /// Target replicas.
    pub replicas: u32,
    /// One load generator pod's requests.
    pub loadgen: PodRequest,
    /// Load generator pods (`spec.loadgen.generators`).
    pub loadgens: u32,
    /// `spec.placement.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// `spec.placement.tolerations`.
    pub tolerations: Vec<Toleration>,
}

impl CellRequests {
    /// The requests of `cell` of `run` (requests equal limits, see children/build.rs). `None` when
    /// a quantity does not parse, which validation has already refused.
    pub fn of(spec: &BenchmarkRunSpec, cell: &Cell) -> Option<Self> {
        Some(Self {
            target: pod_request(&cell.cpu, &cell.memory)?,
            replicas: cell.replicas,
            loadgen: pod_request(&spec.loadgen.cpu, &spec.loadgen.memory)?,
            loadgens: spec.loadgen.generators(),
            node_selector: spec.placement.node_selector.clone(),
            tolerations: spec.placement.tolerations.clone(),
        })
    }
}

fn pod_request(cpu: &Quantity, memory: &Quantity) -> Option<PodRequest> {
    Some(PodRequest {
        cpu_millis: cpu.cpu_millis().ok()?,
        memory_bytes: memory.bytes().ok()?,
    })
}

/// A node the cell may use, with its allocatable resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allocatable {
    pub(crate) name: String,
    pub(crate) cpu_millis: u64,
    pub(crate) memory_bytes: u64,
}

/// `Ok` when every pod of the cell can be placed on the nodes it may use at the same time;
/// otherwise why not, with the numbers. An empty node list, or a usable node whose allocatable
/// allocatable resources are missing or unreadable, gives `Ok`: nothing can be concluded, and the scheduler
/// will say.
pub fn fits(req: &CellRequests, nodes: &[Node]) -> Result<(), String> {
    if nodes.is_empty() {
        return Ok(());
    }
    let mut usable = Vec::new();
    let mut refusals = Vec::new();
    for node in nodes {
        match refusal(node, req) {
            Some(why) => refusals.push(format!("{}: {why}", node.name_any())),
            None => match allocatable(node) {
                Some(c) => usable.push(c),
                None => return Ok(()),
            },
        }
    }
    if usable.is_empty() {
        refusals.truncate(3);
        return Err(format!(
            "no node may run the cell's pods: none of the {} node(s) matches spec.placement ({})",
            nodes.len(),
            refusals.join("; ")
        ));
    }
    for (what, pod, count) in [
        ("target replica", req.target, req.replicas),
        ("load generator", req.loadgen, req.loadgens),
    ] {
        if count > 0 && !usable.iter().any(|n| holds(n, pod, 1)) {
            return Err(single_pod_message(what, pod, &usable));
        }
    }
    if can_pack(req, &usable) {
        return Ok(());
    }
    Err(packing_message(req, &usable))
}

/// Why `node` is not one the cell may use, or `None` when it is.
pub(crate) fn refusal(node: &Node, req: &CellRequests) -> Option<String> {
    let labels = node.labels();
    if let Some((k, v)) = req
        .node_selector
        .iter()
        .find(|(k, v)| labels.get(*k) != Some(*v))
    {
        return Some(format!("lacks label {k}={v}"));
    }
    let spec = node.spec.as_ref();
    let cordon = spec
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
        .then(|| Taint {
            key: UNSCHEDULABLE_TAINT.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
    spec.and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .chain(cordon.as_ref())
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !req.tolerations.iter().any(|tol| tolerates(tol, t)))
        .map(|t| {
            format!(
                "taint {}{}:{} not tolerated",
                t.key,
                t.value
                    .as_deref()
                    .filter(|v| !v.is_empty())
                    .map(|v| format!("={v}"))
                    .unwrap_or_default(),
                t.effect
            )
        })
}

/// The scheduler's toleration matching: an empty key with Exists tolerates every taint; else
/// the keys match and, for Equal (the default operator), the values; an empty effect matches
/// every effect.
fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    let effect_ok = tol
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    if !effect_ok {
        return false;
    }
    let key = tol.key.as_deref().unwrap_or("");
    match tol.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        _ => {
            key == taint.key
                && tol.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
    }
}

/// The node's allocatable CPU and memory, when both are there and readable.
pub(crate) fn allocatable(node: &Node) -> Option<Allocatable> {
    let alloc = node.status.as_ref()?.allocatable.as_ref()?;
    let cpu = parse_quantity(&alloc.get("cpu")?.0).ok()?;
    let memory = parse_quantity(&alloc.get("memory")?.0).ok()?;
    Some(Allocatable {
        name: node.name_any(),
        cpu_millis: (cpu * 1000.0).round() as u64,
        memory_bytes: memory.round() as u64,
    })
}

fn holds(node: &Allocatable, pod: PodRequest, count: u64) -> bool {
    pod.cpu_millis.saturating_mul(count) <= node.cpu_millis
        && pod.memory_bytes.saturating_mul(count) <= node.memory_bytes
}

/// Whether all target replicas and load generators fit the nodes together. Exact: for each
/// number of target replicas placed so far (capped at the replica count), the most load
/// generators that can go with them, node by node.
pub(crate) fn can_pack(req: &CellRequests, nodes: &[Allocatable]) -> bool {
    let replicas = req.replicas as usize;
    let loadgens = i64::from(req.loadgens);
    // best[a]: most load generators placed alongside `a` target replicas; -1: unreachable.
    let mut best = vec![-1i64; replicas + 1];
    best[0] = 0;
    for node in nodes {
        // most[a]: load generators this node holds next to `a` target replicas (None: `a` do
        // not fit on it).
        let most: Vec<Option<i64>> = (0..=replicas)
            .map(|a| {
                let a = a as u64;
                holds(node, req.target, a).then(|| {
                    let cpu_left = node.cpu_millis - req.target.cpu_millis * a;
                    let mem_left = node.memory_bytes - req.target.memory_bytes * a;
                    let by_cpu = cpu_left
                        .checked_div(req.loadgen.cpu_millis)
                        .unwrap_or(u64::MAX);
                    let by_mem = mem_left
                        .checked_div(req.loadgen.memory_bytes)
                        .unwrap_or(u64::MAX);
                    by_cpu.min(by_mem).min(loadgens as u64) as i64
                })
            })
            .collect();
        let mut next = best.clone();
        for (placed, &gens) in best.iter().enumerate() {
            if gens < 0 {
                continue;
            }
            for (here, extra) in most.iter().enumerate() {
                let Some(extra) = extra else { break };
                let a = (placed + here).min(replicas);
                next[a] = next[a].max((gens + extra).min(loadgens));
            }
        }
        best = next;
    }
    best[replicas] >= loadgens
}

fn single_pod_message(what: &str, pod: PodRequest, nodes: &[Allocatable]) -> String {
    let cpu = nodes.iter().max_by_key(|n| n.cpu_millis);
    let mem = nodes.iter().max_by_key(|n| n.memory_bytes);
    let (Some(cpu), Some(mem)) = (cpu, mem) else {
        return format!("one {what} fits no node");
    };
    format!(
        "one {what} needs {} CPU and {} memory on one node; the largest allocatable is {} CPU \
         (node {}) and {} memory (node {})",
        cores(pod.cpu_millis),
        bytes(pod.memory_bytes),
        cores(cpu.cpu_millis),
        cpu.name,
        bytes(mem.memory_bytes),
        mem.name
    )
}

fn packing_message(req: &CellRequests, nodes: &[Allocatable]) -> String {
    let r = u64::from(req.replicas);
    let g = u64::from(req.loadgens);
    let cpu = req.target.cpu_millis * r + req.loadgen.cpu_millis * g;
    let memory = req.target.memory_bytes * r + req.loadgen.memory_bytes * g;
    let parts = format!(
        "{r} target replica(s) x {} CPU/{} + {g} load generator(s) x {} CPU/{}",
        cores(req.target.cpu_millis),
        bytes(req.target.memory_bytes),
        cores(req.loadgen.cpu_millis),
        bytes(req.loadgen.memory_bytes)
    );
    if let [node] = nodes {
        let mut short = Vec::new();
        if cpu > node.cpu_millis {
            short.push(format!(
                "needs {} CPUs on one node; the largest allocatable is {} (node {})",
                cores(cpu),
                cores(node.cpu_millis),
                node.name
            ));
        }
        if memory > node.memory_bytes {
            short.push(format!(
                "needs {} memory on one node; the largest allocatable is {} (node {})",
                bytes(memory),
                bytes(node.memory_bytes),
                node.name
            ));
        }
        return format!("{} ({parts})", short.join("; "));
    }
    let mut listed: Vec<String> = nodes
        .iter()
        .take(5)
        .map(|n| {
            format!(
                "{} {} CPU/{}",
                n.name,
                cores(n.cpu_millis),
                bytes(n.memory_bytes)
            )
        })
        .collect();
    if nodes.len() > 5 {
        listed.push(format!("and {} more", nodes.len() - 5));
    }
    format!(
        "needs {} CPUs and {} memory at once ({parts}); the {} nodes it may use cannot hold \
         them together (allocatable: {})",
        cores(cpu),
        bytes(memory),
        nodes.len(),
        listed.join(", ")
    )
}

/// Millicores as cores: 3000 -> "3", 1500 -> "1.5", 1930 -> "1.93".
fn cores(millis: u64) -> String {
    let text = format!("{}.{:03}", millis / 1000, millis % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Bytes in the largest binary unit that keeps one decimal: "128Mi", "3.8Gi".
fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if n >= size {
            let value = n as f64 / size as f64;
            let text = format!("{value:.1}");
            return format!("{}{unit}", text.trim_end_matches(".0"));
        }
    }
    format!("{n}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, cpu: &str, memory: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                allocatable: Some(BTreeMap::from([
                    ("cpu".to_owned(), K8sQuantity(cpu.into())),
                    ("memory".to_owned(), K8sQuantity(memory.into())),
                ])),
                ..NodeStatus::default()
            }),
        }
    }

    fn cell(cpu: u64, replicas: u32, loadgen_cpu: u64, loadgens: u32) -> CellRequests {
        CellRequests {
            target: PodRequest {
                cpu_millis: cpu,
                memory_bytes: 256 << 20,
            },
            replicas,
            loadgen: PodRequest {
                cpu_millis: loadgen_cpu,
                memory_bytes: 256 << 20,
            },
            loadgens,
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
        }
    }

    #[test]
    fn the_quickstart_cell_needs_three_cpus_on_a_single_two_cpu_node() {
        let why = fits(&cell(2000, 1, 1000, 1), &[node("kind", "2", "8Gi")]).unwrap_err();
        assert!(
            why.contains("needs 3 CPUs on one node; the largest allocatable is 2 (node kind)"),
            "{why}"
        );
        // Two replicas of 1 CPU need the same 3 CPUs.
        assert!(fits(&cell(1000, 2, 1000, 1), &[node("kind", "2", "8Gi")]).is_err());
        // Half a CPU each fits.
        assert_eq!(
            fits(&cell(500, 1, 500, 1), &[node("kind", "2", "8Gi")]),
            Ok(())
        );
    }

    #[test]
    fn the_load_generator_may_go_to_another_node() {
        let nodes = [node("a", "2", "8Gi"), node("b", "2", "8Gi")];
        assert_eq!(fits(&cell(2000, 1, 1000, 1), &nodes), Ok(()));
        // Two 2-CPU replicas fill both nodes: no room left for the load generator.
        let why = fits(&cell(2000, 2, 1000, 1), &nodes).unwrap_err();
        assert!(why.contains("needs 5 CPUs"), "{why}");
        assert!(why.contains("cannot hold them together"), "{why}");
    }

    #[test]
    fn packing_is_exact_not_just_a_sum() {
        // 3 CPUs in total on two 1.5-CPU nodes, but no node holds a 2-CPU replica.
        let nodes = [node("a", "1500m", "8Gi"), node("b", "1500m", "8Gi")];
        let why = fits(&cell(2000, 1, 500, 1), &nodes).unwrap_err();
        assert!(why.contains("one target replica needs 2 CPU"), "{why}");
        // 4 x 1 CPU + 2 x 0.5 = 5 CPUs on 2.5 + 2.5: fits only as 2 + 0.5 on each.
        let nodes = [node("a", "2500m", "8Gi"), node("b", "2500m", "8Gi")];
        assert_eq!(fits(&cell(1000, 4, 500, 2), &nodes), Ok(()));
        // 3 x 1.5 + 1 x 1 = 5.5 CPUs on 3 + 3: only two replicas fit per node... and then
        // each node has 0 or 1.5 left; the load generator goes to the one with a single replica.
        let nodes = [node("a", "3", "8Gi"), node("b", "3", "8Gi")];
        assert_eq!(fits(&cell(1500, 3, 1000, 1), &nodes), Ok(()));
        // Memory counts too.
        let why = fits(&cell(100, 1, 100, 1), &[node("small", "8", "300Mi")]).unwrap_err();
        assert!(why.contains("needs 512Mi memory on one node"), "{why}");
    }

    #[test]
    fn only_nodes_matching_the_selector_and_tolerated_taints_count() {
        let mut big = node("big", "64", "256Gi");
        big.spec.as_mut().unwrap().taints = Some(vec![Taint {
            key: "dedicated".into(),
            value: Some("bench".into()),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }]);
        big.metadata.labels = Some(BTreeMap::from([("pool".into(), "bench".into())]));
        let small = node("small", "2", "8Gi");
        let mut req = cell(1500, 1, 1000, 1);
        let why = fits(&req, &[big.clone(), small.clone()]).unwrap_err();
        assert!(
            why.contains("needs 2.5 CPUs on one node") && why.contains("node small"),
            "the tainted node does not count: {why}"
        );
        req.tolerations = vec![Toleration {
            key: Some("dedicated".into()),
            operator: Some("Equal".into()),
            value: Some("bench".into()),
            effect: Some("NoSchedule".into()),
            ..Toleration::default()
        }];
        assert_eq!(fits(&req, &[big.clone(), small.clone()]), Ok(()));
        req.node_selector = BTreeMap::from([("pool".into(), "gpu".into())]);
        let why = fits(&req, &[big.clone(), small]).unwrap_err();
        assert!(why.contains("no node may run the cell's pods"), "{why}");
        assert!(why.contains("big: lacks label pool=gpu"), "{why}");
        // A PreferNoSchedule taint does not keep pods off.
        let mut soft = node("soft", "8", "8Gi");
        soft.spec.as_mut().unwrap().taints = Some(vec![Taint {
            key: "x".into(),
            effect: "PreferNoSchedule".into(),
            ..Taint::default()
        }]);
        assert_eq!(fits(&cell(4000, 1, 1000, 1), &[soft]), Ok(()));
        // A cordoned node is not usable; an Exists toleration with no key tolerates anything.
        let mut cordoned = node("cordoned", "8", "8Gi");
        cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
        let why = fits(&cell(1000, 1, 1000, 1), &[cordoned.clone()]).unwrap_err();
        assert!(why.contains(UNSCHEDULABLE_TAINT), "{why}");
        let mut any = cell(1000, 1, 1000, 1);
        any.tolerations = vec![Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        }];
        assert_eq!(fits(&any, &[cordoned]), Ok(()));
    }

    #[test]
    fn nothing_is_concluded_without_nodes_or_readable_allocatable_resources() {
        assert_eq!(fits(&cell(64000, 8, 1000, 1), &[]), Ok(()));
        let mut unknown = node("n", "2", "8Gi");
        unknown.status = None;
        assert_eq!(fits(&cell(64000, 8, 1000, 1), &[unknown]), Ok(()));
    }

    #[test]
    fn numbers_read_like_kubectl() {
        assert_eq!(cores(3000), "3");
        assert_eq!(cores(1500), "1.5");
        assert_eq!(cores(1930), "1.93");
        assert_eq!(cores(250), "0.25");
        assert_eq!(bytes(128 << 20), "128Mi");
        assert_eq!(bytes(8148204 * 1024), "7.8Gi");
    }
}
