//! The operator as a process: its command line ([`args`]), its start in named steps
//! ([`start`]), the wiring of its Controllers, their caches and the context they share
//! ([`wiring`]), its graceful shutdown ([`shutdown`]), leader election among its replicas
//! ([`leader`]), its own HTTP endpoints ([`admin`]), and every kind of API call it makes, as
//! RBAC sees it ([`calls`]).

pub mod admin;
pub mod args;
pub mod calls;
pub mod leader;
pub mod shutdown;
pub mod start;
pub mod wiring;
