//! The bounds on every number a user hands the load generator or a `BenchmarkRun`, in one place.
//!
//! The load generator's command line and plan files, the local runner (`benchmatrix run`) and
//! the operator all check against these constants, and the CRD publishes them as schema maxima,
//! so a value is refused the same way, up front, wherever it is given. Each bound is generous
//! for a benchmark and small enough that accepting it cannot exhaust the machine (memory,
//! sockets, threads) or overflow a clock.

use crate::duration::Duration;

/// Most keep-alive connections of one closed-loop stream, and most connections one open-loop
/// stream may hold open (`-c` with `-R`).
///
/// Ten thousand concurrent connections (the classic C10k) is more than an HTTP benchmark of one
/// service needs; each connection holds a 16 KiB read buffer and a socket, so this bounds one
/// stream at about 160 MiB and stays well inside the roughly 28 000 ephemeral ports one source
/// address has towards one target address.
pub const MAX_CONNECTIONS_PER_STREAM: u32 = 10_000;

/// Most closed-loop connections of all the streams of one phase together: twice what one
/// stream may have, so a phase still fits the ephemeral port range towards one target address
/// and about 320 MiB of read buffers.
pub const MAX_CONNECTIONS_PER_PHASE: u32 = 20_000;

/// Highest open-loop rate of one stream, in requests per second.
///
/// Ten million requests per second is beyond what one HTTP service serves, even with the rate
/// shared by [`MAX_GENERATORS`] load generators. The open loop issues the sends that fell due
/// in one step and yields between steps, so a stream at this rate, or one whose target cannot
/// keep up, still ends by its deadline.
pub const MAX_RATE_PER_STREAM: f64 = 10_000_000.0;

/// Longest warm-up, phase, per-request timeout, readiness wait and run slack: 24 hours.
///
/// A benchmark phase longer than a day is a soak test this tool is not built for, and the
/// bound keeps every deadline computed from these far from clock overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

// Longest duration any field accepts: 365 days ("8760h"). It is defined beside the parser that
// refuses anything longer, since this module builds its own bounds from `Duration`: so the two
// modules depend on each other one way only.
pub use crate::duration::MAX_ANY_DURATION;

/// Most replicas of one configuration: 64 pods (or local processes), as the CRD has always
/// said; beyond that a single target's cell is a capacity test of the cluster, not of the
/// service.
pub const MAX_REPLICAS: u32 = 64;

/// Most cells one run may have: configurations (or those its axes or sizing's search space
/// expand to) times variants; a guard against an axes typo expanding to thousands.
pub const MAX_CELLS: usize = 64;

/// Largest fixed worker pool of the built-in target (`poolSize`): the target refuses
/// `BENCH_POOL_SIZE` above 1024, so a larger value would only fail once the cell had started.
pub const MAX_POOL_SIZE: u32 = 1024;

/// Most worker threads of one load generator (`-t`, `threads`, `spec.loadgen.threads`): each
/// is an OS thread with its own runtime, and no machine a benchmark runs on has more cores.
pub const MAX_THREADS: u32 = 256;

/// Most load generators sharing one workload (`generators`, `spec.loadgen.generators`).
pub const MAX_GENERATORS: u32 = 32;

/// Largest request body of one endpoint, in bytes: 64 KiB, plenty for the JSON documents an
/// API takes, and small enough that a cluster's plan ConfigMap (1 MiB, one plan per load
/// generator) holds it.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Most request headers of one endpoint.
pub const MAX_HEADERS: usize = 64;

/// Most bytes an endpoint's own headers take on the wire, values read from Secrets included:
/// 8 KiB, the smallest request-head limit of the common servers (nginx, Apache) being 8 KiB
/// per line and Node's 16 KiB for the whole head.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

// The per-phase bound must leave room for one stream at its bound.
const _: () = assert!(MAX_CONNECTIONS_PER_PHASE >= MAX_CONNECTIONS_PER_STREAM);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_durations_read_as_documented() {
        assert!(MAX_ANY_DURATION >= MAX_DURATION);
        assert_eq!(MAX_ANY_DURATION.to_string(), "8760h");
        assert_eq!(MAX_DURATION.to_string(), "24h");
    }
}
