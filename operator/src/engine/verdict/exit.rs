//! Every exit code benchmatrix gives, in one table: `benchmatrix run`, `report`, `compare`,
//! `metrics` and `kubectl benchmatrix` all take theirs from here, so a CI job reads the same
//! number the same way whichever command it ran. README.md ("Exit codes") quotes it.

/// The run measured every cell and passed its gate; a command did what it was asked.
pub const SUCCESS: u8 = 0;

/// Some cell failed while the others ran; the run left its question open (a capacity search
/// without a capacity, a sizing without a chosen configuration); a file could not be written;
/// `kubectl benchmatrix logs` found no pod.
pub const FAILED: u8 = 1;

/// Bad input: a file that cannot be read or is invalid, an `--out` that is not a writable
/// folder, a run or cell that does not exist, a run of that name already there, a spec the
/// cluster refuses, runs that share nothing to compare.
pub const BAD_INPUT: u8 = 2;

/// The gate failed: a threshold of `spec.thresholds`, or a candidate regressed beyond
/// `--max-regression`.
pub const GATE_FAILED: u8 = 3;

/// `--timeout` expired before the run finished.
pub const TIMEOUT: u8 = 4;

/// The cluster cannot be reached or asked (no kubeconfig, an API error such as a missing CRD
/// or a refused permission), or the run was deleted by someone else before it finished.
pub const CLUSTER: u8 = 5;

/// Stopped by SIGINT or SIGTERM: the shell's code for an interrupt.
pub const INTERRUPTED: u8 = 130;
