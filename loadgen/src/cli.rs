//! Command line (placeholder until this crate's issue lands).

/// Parses `args` (program name first) and runs.
pub fn main(_args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    std::process::ExitCode::from(2)
}
