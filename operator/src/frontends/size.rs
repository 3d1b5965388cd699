//! `benchmatrix size`: a sizing search's answer as text, and with `--manifests DIR` as the
//! Kubernetes objects a user applies: a strategic-merge patch for their Deployment (replicas,
//! CPU and memory requests and limits, the chosen env) and an `autoscaling/v2`
//! HorizontalPodAutoscaler whose CPU target is the one the search measured (see
//! `engine::sizing::hpa`). Reads statuses only, as every front-end.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::engine::capacity::probe::rate_text;
use crate::resource::BenchmarkRunStatus;
use crate::resource::sizing::{ChosenConfiguration, SizedState, SizingStatus};

/// Where the manifests go and what they name.
#[derive(Debug, Clone, clap::Args)]
pub struct ManifestArgs {
    /// Write deployment-patch.yaml and hpa.yaml for the chosen configuration into this folder.
    #[arg(long, value_name = "DIR")]
    pub manifests: Option<PathBuf>,
    /// The Deployment the manifests are for.
    #[arg(long, default_value = "my-service")]
    pub deployment: String,
    /// The container of that Deployment that serves the traffic.
    #[arg(long, default_value = "app")]
    pub container: String,
}

/// The answer in words: the target rate, the chosen configuration with its settings and
/// autoscaler target, then every configuration of the space with what the search knows of it.
pub fn text(s: &SizingStatus) -> String {
    let mut out = format!(
        "sizing: {} rps ({} x margin) at the service level: {:?}\n  {}\n",
        rate_text(s.target_rate),
        rate_text(s.traffic),
        s.outcome,
        s.message
    );
    if let Some(c) = &s.chosen {
        out.push_str(&chosen_text(c));
    }
    out.push('\n');
    let width = s
        .configurations
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0)
        .max("configuration".len());
    out.push_str(&format!(
        "{:<width$}  {:>8}  {:<10}  {:>8}  {:>8}  {:>8}  {:>9}  why\n",
        "configuration", "CPU", "state", "held", "failed", "bound", "predicted"
    ));
    let rate = |r: Option<f64>| r.map_or("-".to_owned(), rate_text);
    for c in &s.configurations {
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:<10}  {:>8}  {:>8}  {:>8}  {:>9}  {}\n",
            c.name,
            c.reserved_cpu,
            state_word(c.state),
            rate(c.held_rate),
            rate(c.failed_rate),
            rate(c.bound),
            rate(c.predicted),
            c.why.as_deref().unwrap_or("")
        ));
    }
    out.push_str("rates in requests per second over the mix; CPU reserved (limit x replicas)\n");
    for n in &s.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The chosen configuration, its settings and its autoscaler target, in lines.
pub fn chosen_text(c: &ChosenConfiguration) -> String {
    let env: Vec<String> = c
        .env
        .iter()
        .map(|v| format!("{}={}", v.name, v.value))
        .collect();
    let mut out = format!(
        "chosen: {}: {} replica(s) x {} CPU ({} reserved), {} memory each, mode {}{}\n  held {} \
         rps ({:.0}% above the traffic); {}\n",
        c.configuration,
        c.replicas,
        c.cpu,
        c.reserved_cpu,
        c.memory,
        c.mode,
        if env.is_empty() {
            String::new()
        } else {
            format!(", env {}", env.join(" "))
        },
        rate_text(c.held_rate),
        c.headroom * 100.0,
        c.confirmed
    );
    if let Some(h) = &c.hpa {
        out.push_str(&format!(
            "  autoscaler: CPU {:.0}% of the request at the held rate; target {}% (replicas {} \
             to {})\n",
            h.utilization_at_held * 100.0,
            h.target_utilization,
            h.min_replicas,
            h.max_replicas
        ));
    }
    out
}

/// The state of a configuration in one word, for tables.
pub fn state_word(s: SizedState) -> &'static str {
    match s {
        SizedState::Unmeasured => "unmeasured",
        SizedState::Measuring => "measuring",
        SizedState::Measured => "measured",
        SizedState::Pruned => "pruned",
        SizedState::RuledOut => "ruled out",
        SizedState::NotNeeded => "not needed",
        SizedState::Failed => "failed",
        SizedState::Chosen => "CHOSEN",
    }
}

/// The strategic-merge patch for `deployment`'s `container`: replicas, requests equal to
/// limits (the Guaranteed QoS the configuration was measured with), and the env the search
/// varied (the chosen configuration's `env`: the env axes, and BENCH_MODE only when the mode was
/// an axis), no key at all when it varied none, so the merge leaves the container's env alone.
pub fn deployment_patch(c: &ChosenConfiguration, deployment: &str, container: &str) -> String {
    let resources = json!({"cpu": c.cpu, "memory": c.memory});
    let env: Vec<_> = c
        .env
        .iter()
        .map(|v| json!({"name": v.name, "value": v.value}))
        .collect();
    let mut app = json!({
        "name": container,
        "resources": {"requests": resources, "limits": resources},
    });
    if !env.is_empty() {
        app["env"] = json!(env);
    }
    let patch = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": deployment},
        "spec": {
            "replicas": c.replicas,
            "template": {"spec": {"containers": [app]}},
        },
    });
    serde_yaml::to_string(&patch).unwrap_or_default()
}

/// The HorizontalPodAutoscaler of `deployment` at the measured target; None without one (the
/// target reported no CPU use).
pub fn hpa(c: &ChosenConfiguration, deployment: &str) -> Option<String> {
    let h = c.hpa.as_ref()?;
    let hpa = json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": deployment},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
            "minReplicas": h.min_replicas,
            "maxReplicas": h.max_replicas,
            "metrics": [{
                "type": "Resource",
                "resource": {"name": "cpu", "target": {
                    "type": "Utilization",
                    "averageUtilization": h.target_utilization,
                }},
            }],
        },
    });
    // Parsed back as the API's own type: a field misspelt here would fail the tests, not a
    // user's apply.
    let typed: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler =
        serde_json::from_value(hpa).ok()?;
    serde_yaml::to_string(&typed).ok()
}

/// Writes the manifests of `s`'s chosen configuration into `dir` (made if missing); the paths
/// written, or why nothing was.
pub fn write_manifests(
    s: &SizingStatus,
    dir: &Path,
    args: &ManifestArgs,
) -> Result<Vec<PathBuf>, String> {
    let Some(c) = &s.chosen else {
        return Err(format!(
            "no configuration was chosen ({:?}): no manifests written",
            s.outcome
        ));
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let mut files = vec![(
        dir.join("deployment-patch.yaml"),
        deployment_patch(c, &args.deployment, &args.container),
    )];
    if let Some(h) = hpa(c, &args.deployment) {
        files.push((dir.join("hpa.yaml"), h));
    }
    for (path, text) in &files {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// Prints the sizing of `status` and writes its manifests; the exit code: the run's verdict
/// ([`Outcome`](crate::engine::verdict::outcome::Outcome): 0 with a chosen configuration, 1
/// when nothing holds or the budget ran out), or 2 for a status without sizing or manifests
/// that cannot be written.
pub fn print(status: &BenchmarkRunStatus, args: &ManifestArgs, command: &str) -> u8 {
    use crate::engine::verdict::exit;
    let Some(s) = &status.sizing else {
        eprintln!(
            "{command}: these are the results of a run without spec.sizing: nothing to size; \
             expected the results of a sizing run (a BenchmarkRun with spec.sizing)"
        );
        return exit::BAD_INPUT;
    };
    print!("{}", text(s));
    if let Some(dir) = &args.manifests {
        match write_manifests(s, dir, args) {
            Ok(paths) => {
                for p in paths {
                    println!("wrote {}", p.display());
                }
            }
            Err(e) => {
                eprintln!("{command}: {e}");
                return exit::BAD_INPUT;
            }
        }
    }
    // The run's own verdict, as `run` and `kubectl benchmatrix run` give it for this status:
    // 1 when nothing was chosen (NothingHolds, OutOfBudget).
    crate::engine::verdict::outcome::Outcome::of(status).code()
}

#[cfg(test)]
mod tests;
