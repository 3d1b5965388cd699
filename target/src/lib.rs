//! The built-in HTTP service under test.
//!
//! One binary, three concurrency modes (`single`, `threads`, `pool`), sized from the CPU quota
//! it actually has (never the host's core count), reporting what it detected and how it is
//! doing at `/stats` and `/metrics`. See README.md beside this crate.

pub mod app;
pub mod cli;
pub mod config;
pub mod connection;
pub mod error;
pub mod handlers;
pub mod listener;
pub mod metrics;
pub mod pool;
pub mod runtime;
pub mod server;
pub mod service;
pub mod shutdown;
pub mod stats;
pub mod work;
