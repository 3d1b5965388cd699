//! The two executors of the run engine: the Kubernetes operator ([`cluster`]) and the runner
//! on one machine ([`local`]). Each looks at what the engine's machine names, tells it what it
//! saw, and carries out its commands with its own I/O.

pub mod cluster;
pub mod local;
