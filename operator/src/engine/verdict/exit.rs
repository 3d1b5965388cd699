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

/// Every code above with what it means, in one line each: README.md's exit-code table is this
/// table (a test compares the two), so the doc a CI author reads is the code's.
pub const TABLE: [(u8, &str); 7] = [
    (
        SUCCESS,
        "the run measured every cell, answered its question and passed its gate; a command did \
         what it was asked",
    ),
    (
        FAILED,
        "some cell failed while the others ran; the run left its question open (a capacity \
         search that found no capacity, a sizing that chose no configuration); a file could not \
         be written; `kubectl benchmatrix logs` found no pod",
    ),
    (
        BAD_INPUT,
        "bad input: a file that cannot be read or is invalid, or of the wrong kind (`size` of a \
         run without `spec.sizing`), a spec only a cluster can run given to `benchmatrix run`, an \
         `--out` that is not a writable folder, a run or cell that does not exist, a run of that \
         name already there, a spec the cluster refuses, runs that share nothing to compare",
    ),
    (
        GATE_FAILED,
        "the gate failed: a threshold of `spec.thresholds`, or a candidate regressed beyond \
         `--max-regression`",
    ),
    (TIMEOUT, "`--timeout` expired before the run finished"),
    (
        CLUSTER,
        "the cluster cannot be reached or asked (no kubeconfig, an API error such as a missing \
         CRD or a refused permission), or the run was deleted by someone else before it finished",
    ),
    (
        INTERRUPTED,
        "stopped by SIGINT or SIGTERM (Ctrl-C): the shell's code for an interrupt",
    ),
];

/// [`TABLE`] as the Markdown table README.md holds between its `exit-codes` markers.
pub fn markdown_table() -> String {
    let mut out = String::from("| code | meaning |\n|---|---|\n");
    for (code, meaning) in TABLE {
        out.push_str(&format!("| {code} | {meaning} |\n"));
    }
    out
}

/// The book's page of exit codes (docs/book/src/reference/exit-codes.md): [`markdown_table`]
/// with what decides a run's code.
pub fn book_page() -> String {
    format!(
        "# Exit codes\n\n<!-- Generated from operator/src/engine/verdict/exit.rs by `make docs`; \
         tests/tests/readme.rs fails when it drifts. -->\n\nEvery command takes its exit code \
         from this one table, so a CI job reads a number the same way whichever command it ran. \
         A finished run's code is its verdict, decided from its status alone \
         (`engine/verdict/outcome.rs`): `run`, `size`, `report` and the kubectl plugin give the \
         same code for the same status. A run that measured every cell but left its question \
         open (a capacity search that found no capacity, a sizing that chose nothing) exits 1, \
         and its `Complete` condition's reason is `NoAnswer`.\n\n{}",
        markdown_table()
    )
}
