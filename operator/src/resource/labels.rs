//! The labels the operator puts on every object it makes for a run: how it finds a repetition's
//! pods again, how its watches are scoped, and how a client (`kubectl benchmatrix logs`) selects
//! them. A contract between the operator and whoever reads the cluster, so it lives with the
//! resource rather than in either.

/// Label naming the run an object belongs to.
pub const RUN_LABEL: &str = "benchmatrix.dev/run";
/// Label naming the cell an object belongs to.
pub const CELL_LABEL: &str = "benchmatrix.dev/cell";
/// Label naming the repetition of a cell an object belongs to (set from the second on, so a
/// repetition's selectors never match the pods of the one before it).
pub const REPETITION_LABEL: &str = "benchmatrix.dev/repetition";
/// Label saying whether a pod is the target or the load generator.
pub const ROLE_LABEL: &str = "benchmatrix.dev/role";
/// The standard managed-by label, used to scope the operator's watches.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of the managed-by label.
pub const MANAGED_BY: &str = "benchmatrix";
/// Role label value of target pods.
pub const ROLE_TARGET: &str = "target";
/// Role label value of load generator pods.
pub const ROLE_LOADGEN: &str = "loadgen";
