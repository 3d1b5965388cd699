//! The blocking HTTP GET the runner probes its replicas with (readiness, `/stats`). It lives
//! with the other platform helpers in the quota crate, so the target's tests talk to the
//! target through the very same client; this module keeps the runner's `http::get` name.

pub use benchmatrix_quota::http::{Response, get};
