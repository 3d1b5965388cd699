//! Which cluster, as which user, in which namespace: kubectl's own rules, so that
//! `kubectl benchmatrix` talks to the cluster `kubectl` would.
//!
//! - The kubeconfig: `--kubeconfig FILE`, else the files in `$KUBECONFIG` (merged, the first
//!   to set a value wins), else `~/.kube/config`; with none of them, the pod's service account
//!   (in a pod, as a CI job on the cluster runs).
//! - The context: `--context NAME`, else the kubeconfig's current-context.
//! - The namespace: `-n/--namespace`, else (for `run`) the file's `metadata.namespace`, else
//!   the context's namespace, else `default`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// The connection flags every subcommand takes, before or after its name.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConnectionArgs {
    /// The namespace of the run (default: for `run`, the file's metadata.namespace; else the
    /// context's namespace, else "default").
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else the pod's service
    /// account).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

/// What the process's environment says about kubeconfigs; read once, passed in, so tests can
/// state it.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `$KUBECONFIG`: a list of files (`:`-separated).
    pub kubeconfig: Option<OsString>,
    /// `$HOME`, for `~/.kube/config`.
    pub home: Option<PathBuf>,
}

impl Environment {
    /// This process's environment.
    pub fn of_process() -> Environment {
        Environment {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

/// A client configuration and what to say about it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The client configuration; its `default_namespace` is the namespace to use unless a run
    /// file names one (see [`ConnectionArgs::namespace`]).
    pub config: kube::Config,
    /// The context used, when it came from a kubeconfig.
    pub context: Option<String>,
    /// Whether `-n` chose the namespace (a run file's namespace then must agree with it).
    pub namespace_from_flag: bool,
}

/// A cluster to talk to.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: kube::Client,
    /// The namespace `-n` or the context chose.
    pub namespace: String,
    /// Whether `-n` chose it.
    pub namespace_from_flag: bool,
    /// e.g. "context kind-bench, https://127.0.0.1:6443", for messages and report.md.
    pub describe: String,
}

/// Where `args` and `env` point, by kubectl's rules (see the module's documentation).
pub async fn target(args: &ConnectionArgs, env: &Environment) -> Result<Target, String> {
    let kubeconfig = match read_kubeconfig(args, env)? {
        Some(k) => k,
        None if args.context.is_some() => {
            return Err(format!(
                "--context {}: no kubeconfig to find it in ({})",
                args.context.as_deref().unwrap_or_default(),
                WHERE_KUBECONFIGS_ARE
            ));
        }
        None => {
            let mut config = kube::Config::incluster().map_err(|e| {
                format!(
                    "no kubeconfig ({WHERE_KUBECONFIGS_ARE}), and not in a pod with a service \
                     account ({e})"
                )
            })?;
            if let Some(ns) = &args.namespace {
                config.default_namespace = ns.clone();
            }
            return Ok(Target {
                config,
                context: None,
                namespace_from_flag: args.namespace.is_some(),
            });
        }
    };
    let context = args
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone());
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| match &context {
            Some(c) => format!("kubeconfig context {c:?}: {e}"),
            None => format!("kubeconfig: {e} (no current-context; pass --context)"),
        })?;
    if let Some(ns) = &args.namespace {
        config.default_namespace = ns.clone();
    }
    Ok(Target {
        config,
        context,
        namespace_from_flag: args.namespace.is_some(),
    })
}

const WHERE_KUBECONFIGS_ARE: &str = "--kubeconfig, $KUBECONFIG or ~/.kube/config";

/// The kubeconfig kubectl would read, or `None` when there is none at all.
fn read_kubeconfig(args: &ConnectionArgs, env: &Environment) -> Result<Option<Kubeconfig>, String> {
    let read = |p: &Path| Kubeconfig::read_from(p).map_err(|e| format!("kubeconfig: {e}"));
    if let Some(path) = &args.kubeconfig {
        return read(path).map(Some);
    }
    if let Some(list) = &env.kubeconfig {
        let paths: Vec<PathBuf> = std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            let mut merged: Option<Kubeconfig> = None;
            for p in &paths {
                // kubectl skips a listed file that does not exist; it fails on one it cannot
                // parse.
                if !p.exists() {
                    continue;
                }
                let next = read(p)?;
                merged = Some(match merged {
                    None => next,
                    Some(m) => m.merge(next).map_err(|e| format!("kubeconfig: {e}"))?,
                });
            }
            // None of the listed files exists: no kubeconfig at all (then the service account).
            return Ok(merged);
        }
    }
    match &env.home {
        Some(home) if home.join(".kube/config").is_file() => {
            read(&home.join(".kube/config")).map(Some)
        }
        _ => Ok(None),
    }
}

impl Target {
    /// Connects: a client for this target.
    pub fn connect(self) -> Result<Cluster, String> {
        let server = self.config.cluster_url.to_string();
        let namespace = self.config.default_namespace.clone();
        let describe = match &self.context {
            Some(c) => format!("context {c}, {server}"),
            None => format!("in-cluster, {server}"),
        };
        let client = kube::Client::try_from(self.config)
            .map_err(|e| format!("cannot make a client for {describe}: {e}"))?;
        Ok(Cluster {
            client,
            namespace,
            namespace_from_flag: self.namespace_from_flag,
            describe,
        })
    }
}

/// A cluster connected to on first use: `report` and `compare` of saved files, and a `run`
/// whose file is invalid, never need one.
pub enum Connection {
    /// Not connected yet.
    Pending(ConnectionArgs, Environment),
    /// Connected (tests start here, with a client of a faked API server).
    Ready(Cluster),
}

impl Connection {
    /// The cluster, connecting on the first call.
    pub async fn cluster(&mut self) -> Result<&Cluster, String> {
        if let Connection::Pending(args, env) = self {
            let cluster = target(args, env).await?.connect()?;
            *self = Connection::Ready(cluster);
        }
        match self {
            Connection::Ready(c) => Ok(c),
            Connection::Pending(..) => unreachable!("connected just above"),
        }
    }
}

#[cfg(test)]
mod tests;
