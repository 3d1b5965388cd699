//! One reconcile of a run, and what it needs around it: [`reconcile`] (a fresh enough copy of
//! the run, the reads, one engine turn through `adapter`, the writes, and the error policy),
//! [`observe`] (the reads the engine's machine names), [`mod@write`] (the status by server-side
//! apply, then the children) and [`error`]; the [`gate`] every reconcile passes first (this
//! replica leads, the installed CRD is its own); and riding out an API server outage:
//! [`outage`] (telling it apart, saying so once) and [`backoff`] (short retries after it).

pub mod backoff;
pub mod error;
pub mod gate;
pub mod observe;
pub mod outage;
pub mod reconcile;
pub mod write;
