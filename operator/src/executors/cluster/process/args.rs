//! `benchmatrix operator`'s command line: every flag with its environment variable and its
//! default, and the checks that refuse a bad value before anything starts.

use std::net::SocketAddr;
use std::time::Duration;

use crate::executors::cluster::children::images;
use crate::executors::cluster::telemetry::logging::LogFormat;
use crate::run_metrics;

/// Arguments of `benchmatrix operator`.
#[derive(Debug, clap::Args)]
pub struct OperatorArgs {
    /// At most this many BenchmarkRuns run at once across the cluster; the others wait in phase
    /// Pending with a message saying they are queued (cells share the cluster's CPU).
    #[arg(long, env = "BENCHMATRIX_MAX_ACTIVE_RUNS", default_value_t = 1)]
    pub max_active_runs: usize,
    /// Address of the /healthz, /readyz and /metrics server.
    #[arg(
        long = "metrics-addr",
        alias = "admin-addr",
        env = "BENCHMATRIX_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub admin_addr: SocketAddr,
    /// Target image for runs whose spec.target.image is not set.
    #[arg(
        long,
        env = "BENCHMATRIX_TARGET_IMAGE",
        default_value = crate::resource::spec::DEFAULT_TARGET_IMAGE,
        value_parser = parse_image
    )]
    pub target_image: String,
    /// Load generator image for runs whose spec.loadgen.image is not set.
    #[arg(
        long,
        env = "BENCHMATRIX_LOADGEN_IMAGE",
        default_value = crate::resource::spec::DEFAULT_LOADGEN_IMAGE,
        value_parser = parse_image
    )]
    pub loadgen_image: String,
    /// Images runs may use, as glob patterns over the full image reference (nginx:1 is
    /// docker.io/library/nginx:1): `*` matches within one path segment, `**` across them, e.g.
    /// ghcr.io/acme/* or registry.local:5000/bench-*:*. Repeat the flag or separate with
    /// commas. A run whose target or load generator image (its own, or the defaults above)
    /// matches none fails with reason ImageNotAllowed. Not given: every image is allowed (an
    /// image that is no valid reference fails with InvalidImageReference either way).
    #[arg(
        long = "allowed-images",
        env = "BENCHMATRIX_ALLOWED_IMAGES",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub allowed_images: Vec<images::ImagePattern>,
    /// The Pod Security Standards level every pod the operator creates must meet, checked on
    /// the merged pod before anything of a run is created: restricted, baseline or privileged
    /// (no check). A namespace's pod-security.kubernetes.io/enforce label can make it stricter
    /// there, never looser. A run whose pods would not meet it fails with reason InvalidSpec.
    #[arg(
        long = "pod-security",
        env = "BENCHMATRIX_POD_SECURITY",
        default_value = "restricted",
        value_name = "LEVEL"
    )]
    pub pod_security: benchmatrix_pod_security::Level,
    /// Watch only this namespace for BenchmarkRuns (repeat the flag, or separate with commas,
    /// for several). Not given: every namespace, which needs a ClusterRole; with it, a Role in
    /// each named namespace is enough.
    #[arg(
        long = "namespace",
        env = "BENCHMATRIX_WATCH_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACE",
        value_parser = parse_namespace
    )]
    pub namespaces: Vec<String>,
    /// Log format.
    #[arg(
        long,
        env = "BENCHMATRIX_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// After SIGTERM, how long reconciles in flight may run before the process exits anyway
    /// (keep it below the pod's terminationGracePeriodSeconds, 30s by default). A second
    /// SIGTERM stops at once.
    #[arg(
        long,
        env = "BENCHMATRIX_SHUTDOWN_TIMEOUT",
        default_value = "20s",
        value_parser = parse_duration
    )]
    pub shutdown_timeout: ShutdownTimeout,
    /// Read each target container's CPU seconds, CFS throttling and memory working set from the
    /// kubelet of its node (`/metrics/resource` and `/metrics/cadvisor`, authorized as
    /// nodes/metrics), for any image. `false`: only what a target reports on its own /stats.
    #[arg(
        long,
        env = "BENCHMATRIX_KUBELET_METRICS",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub kubelet_metrics: bool,
    /// Do not verify the kubelets' serving certificates against the cluster CA (as
    /// metrics-server's --kubelet-insecure-tls): for clusters whose kubelets serve self-signed
    /// certificates, such as kind's. The token is still sent only to the address each Node
    /// reports.
    #[arg(long, env = "BENCHMATRIX_KUBELET_INSECURE_TLS")]
    pub kubelet_insecure_tls: bool,
    /// Take part in leader election through a coordination.k8s.io Lease, so that of several
    /// replicas only the holder reconciles (the others stand by with warm caches and take over
    /// when the Lease expires, or at once when the leader shuts down). Needs get, create and
    /// patch on leases in the operator's namespace.
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_ELECT",
        default_value_t = false,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub leader_elect: bool,
    /// The leader Lease's name (in the operator's own namespace, or --leader-lease-namespace).
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_LEASE",
        default_value = "benchmatrix-operator",
        value_parser = parse_namespace
    )]
    pub leader_lease: String,
    /// The leader Lease's namespace. Not given: the operator's own (the POD_NAMESPACE variable,
    /// else the service account's namespace, else the kubeconfig's).
    #[arg(long, env = "POD_NAMESPACE", value_parser = parse_namespace)]
    pub leader_lease_namespace: Option<String>,
    /// How long the leader Lease holds without renewal, in seconds (2 to 300): a standby takes
    /// over at most this long after a leader dies without releasing it. The leader renews a
    /// third of it before expiry.
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_LEASE_SECONDS",
        default_value_t = 15,
        value_parser = clap::value_parser!(u64).range(2..=300)
    )]
    pub leader_lease_seconds: u64,
    /// Export the figures of this many finished runs on /metrics (the ones that finished last;
    /// 0 to 100): each run adds a few series per cell, phase and endpoint, so the bound keeps
    /// the number of series bounded.
    #[arg(
        long,
        env = "BENCHMATRIX_EXPORTED_RUNS",
        default_value_t = run_metrics::DEFAULT_EXPORTED_RUNS,
        value_parser = run_metrics::parse_limit,
        value_name = "N"
    )]
    pub exported_runs: usize,
}

/// `--shutdown-timeout`: a duration written like "20s", "500ms" or "1m".
#[derive(Debug, Clone, Copy)]
pub struct ShutdownTimeout(pub Duration);

impl From<ShutdownTimeout> for Duration {
    fn from(t: ShutdownTimeout) -> Self {
        t.0
    }
}

/// A default image must be a valid reference: one that is not would fail every run that
/// leaves the image out, so the operator refuses to start instead. It is kept as written.
fn parse_image(s: &str) -> Result<String, String> {
    match s.parse::<images::ImageReference>() {
        Ok(_) => Ok(s.to_owned()),
        Err(e) => Err(format!("{s:?} is not a valid image reference: {e}")),
    }
}

/// A namespace name: a DNS-1123 label (lower-case letters, digits and '-', at most 63).
fn parse_namespace(s: &str) -> Result<String, String> {
    let valid = !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if valid {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a namespace name (lower-case letters, digits and '-', at most 63, \
             starting and ending with a letter or digit)"
        ))
    }
}

fn parse_duration(s: &str) -> Result<ShutdownTimeout, String> {
    s.parse::<benchmatrix_loadgen::duration::Duration>()
        .map(|d| ShutdownTimeout(d.0))
        .map_err(|e| format!("{e} (examples: 20s, 500ms, 1m)"))
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::OperatorArgs;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: OperatorArgs,
    }

    fn parse(flags: &[&str]) -> Result<OperatorArgs, String> {
        Line::try_parse_from(std::iter::once("operator").chain(flags.iter().copied()))
            .map(|l| l.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn allowed_images_and_namespaces_repeat_or_take_commas() {
        let args = parse(&[
            "--allowed-images=ghcr.io/acme/*",
            "--allowed-images",
            "registry.local:5000/bench-*:*,docker.io/library/nginx:*",
            "--namespace=bench-a",
            "--namespace",
            "bench-b,bench-c",
        ])
        .unwrap();
        let patterns: Vec<String> = args.allowed_images.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            patterns,
            [
                "ghcr.io/acme/*",
                "registry.local:5000/bench-*:*",
                "docker.io/library/nginx:*"
            ]
        );
        assert_eq!(args.namespaces, ["bench-a", "bench-b", "bench-c"]);
        let none = parse(&[]).unwrap();
        assert!(none.allowed_images.is_empty() && none.namespaces.is_empty());
    }

    #[test]
    fn the_pod_security_level_defaults_to_restricted_and_an_unknown_one_stops_the_start() {
        use benchmatrix_pod_security::Level;
        // The environment could set it for the whole test process; the flag wins over it.
        assert_eq!(
            parse(&["--pod-security=restricted"]).unwrap().pod_security,
            Level::Restricted
        );
        if std::env::var_os("BENCHMATRIX_POD_SECURITY").is_none() {
            assert_eq!(parse(&[]).unwrap().pod_security, Level::Restricted);
        }
        assert_eq!(
            parse(&["--pod-security", "baseline"]).unwrap().pod_security,
            Level::Baseline
        );
        for bad in ["Privileged", "none", ""] {
            let flag = format!("--pod-security={bad}");
            let err = parse(&[&flag]).unwrap_err();
            assert!(
                err.contains("expected one of privileged, baseline, restricted")
                    || err.contains("a value is required"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn bad_patterns_and_namespace_names_are_refused_with_a_reason() {
        let err = parse(&["--allowed-images=nginx:*"]).unwrap_err();
        assert!(err.contains("docker.io/library/nginx:*"), "{err}");
        for bad in ["Bench", "-a", "a_b", ""] {
            let flag = format!("--namespace={bad}");
            let err = parse(&[&flag]).unwrap_err();
            assert!(
                err.contains("not a namespace name") || err.contains("a value is required"),
                "{bad}: {err}"
            );
        }
        let long = "a".repeat(64);
        assert!(parse(&["--namespace", &long]).is_err());
    }

    #[test]
    fn default_images_must_be_valid_references_and_are_kept_as_written() {
        let err = parse(&["--target-image=ghcr.io/acme/../x:1"]).unwrap_err();
        assert!(
            err.contains(r#"path component ".." is not a valid name component"#),
            "{err}"
        );
        assert!(parse(&["--loadgen-image=ghcr.io/acme/lg:"]).is_err());
        let args = parse(&["--target-image=nginx:1.27"]).unwrap();
        assert_eq!(args.target_image, "nginx:1.27");
        let defaults = parse(&[]).unwrap();
        assert_eq!(
            defaults.loadgen_image,
            crate::resource::spec::DEFAULT_LOADGEN_IMAGE
        );
    }
}
