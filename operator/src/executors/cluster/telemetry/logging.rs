//! One place that sets up logging: an env filter (RUST_LOG, default info) and either compact
//! human-readable lines or JSON lines for log collectors.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Compact human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber; a second call (tests) is a no-op.
///
/// Colours only on a terminal: `kubectl logs` and log collectors read a pipe, where ANSI codes
/// would show as `[2m...[0m` around every field.
pub fn init(format: LogFormat) {
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if !std::env::var("RUST_LOG").is_ok_and(|f| f.contains("kube")) {
        // kube's client logs every failed request at error level: during an API server outage
        // that is a line per watch every few seconds. The operator reports an outage once,
        // with the error, and its end with the duration (reconciler/outage.rs).
        if let Ok(quiet) = "kube_client::client::builder=off".parse() {
            filter = filter.add_directive(quiet);
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.compact().try_init(),
    };
}
