//! Helpers shared by the workspace-level tests.

pub mod schema_check;
