//! The load generator.

pub mod cli;
