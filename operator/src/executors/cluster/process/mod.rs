//! The operator as a process: leader election among its replicas ([`leader`]), its own HTTP
//! endpoints ([`admin`]), and every kind of API call it makes, as RBAC sees it ([`calls`]).

pub mod admin;
pub mod calls;
pub mod leader;
