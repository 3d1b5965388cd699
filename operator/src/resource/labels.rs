//! The labels the operator puts on every object it makes for a run: how it finds a repetition's
//! pods again, how its watches are scoped, and how a client (`kubectl benchmatrix logs`) selects
//! them. A contract between the operator and whoever reads the cluster, so it lives with the
//! resource rather than in either.

/// Label naming the run an object belongs to.
pub const RUN_LABEL: &str = "benchmatrix.dev/run";
/// Label holding the UID of the run an object belongs to. A run deleted and created again under
/// the same name is another run with another UID: its objects, and every selector and cache
/// filter the operator reads pods by, carry this one, so pods an earlier run of the name left
/// behind (still terminating, or finished with their logs) are never taken for this run's.
pub const RUN_UID_LABEL: &str = "benchmatrix.dev/run-uid";
/// Label naming the cell an object belongs to.
pub const CELL_LABEL: &str = "benchmatrix.dev/cell";
/// Label naming the repetition of a cell an object belongs to, from the first on (1-based), so
/// a repetition's selectors never match the pods of another.
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
