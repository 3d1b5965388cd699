//! The built-in target service.

pub mod cli;
