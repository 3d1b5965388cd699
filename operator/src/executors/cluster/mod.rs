//! `benchmatrix operator`: the BenchmarkRun controller. Its rooms, each using only the rooms
//! listed after it:
//!
//! - [`process`]: the operator as a process: its flags (`args`), the start in named steps
//!   (`start`), the wiring of the Controllers, their caches and the context they share
//!   (`wiring`), shutdown, leader election, the admin endpoints, and every API call it makes.
//! - [`reconciler`]: one reconcile: it makes sure it decides from a fresh enough copy of the run
//!   (`reconcile`), reads what the engine's machine names (`observe`), takes one engine turn on
//!   it (`adapter`), writes the status by server-side apply, and only then applies and deletes
//!   the children it asked for (`write`); the gate every reconcile passes first; telling an API
//!   server outage apart, and the short retries after it.
//! - [`adapter`]: one engine turn, pure: the objects observed become the machine's facts, its
//!   commands become objects to apply or delete.
//! - [`children`]: the objects the operator makes (`build`, `template`), the images it allows,
//!   Pod Security on every pod before any is made, and the caches of the children the
//!   reconciles read (`child_caches`).
//! - [`placement`]: where and when cells run: the admission queue, whether a cell fits the
//!   nodes, the node sets of a parallel run, the node cache, the target pods a load runs against.
//! - [`telemetry`]: the operator's own metrics, the kubelets' figures of the target containers,
//!   the runs' Events (published behind the reconciles), and its logs.
//!
//! Watches: BenchmarkRuns (through `DeserializeGuard`, so one malformed object cannot stall the
//! watch), the Deployments, Services and Jobs they own, and pods labelled with a run (image pulls,
//! readiness, OOM). The Deployments, Services, Jobs and pods are cached as they are watched
//! (`children/child_caches.rs`), for the reads while a target comes up and while its load runs.
//!
//! Scope: every namespace by default (one Controller over the cluster, which needs a
//! ClusterRole), or the namespaces named with `--namespace` (one Controller per namespace, each
//! watching only its own, so a Role in each is enough). The Controllers share one context, so
//! `--max-active-runs` counts runs across every watched namespace.

pub mod adapter;
pub mod children;
pub mod placement;
pub mod process;
pub mod reconciler;
pub mod telemetry;

pub use process::args::OperatorArgs;
pub use process::calls::{API_CALLS, ApiCall};
pub use process::start::main;

#[cfg(test)]
pub(crate) mod tests;
