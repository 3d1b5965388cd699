//! What the runner shows while it works: which cell, which phase, live rps and p99 per
//! endpoint, taken from the load generator's `--progress-json` lines. On a terminal the live
//! line is redrawn in place; otherwise (CI logs, pipes) every update is a plain line.

use std::io::Write;

use serde::Deserialize;

/// One `--progress-json` line of the load generator (a consumer's view: unknown fields are
/// ignored, missing ones default, so a newer load generator does not break the display).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProgressLine {
    /// Phase being run ("warmup" during warm-up).
    pub phase: String,
    /// Seconds into that phase.
    pub elapsed_secs: f64,
    /// Live figures per stream.
    pub streams: Vec<ProgressStream>,
}

/// Live figures of one stream.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProgressStream {
    /// Endpoint name.
    pub endpoint: String,
    /// Requests completed so far in the phase.
    pub requests: u64,
    /// Requests per second over the last second.
    pub rps: f64,
    /// p99 latency so far, milliseconds.
    pub p99_ms: Option<f64>,
    /// Errors so far in the phase.
    pub errors: u64,
}

impl ProgressLine {
    /// Parses one stderr line of the load generator; `None` for ordinary log lines.
    pub fn parse(line: &str) -> Option<ProgressLine> {
        let t = line.trim();
        if !t.starts_with('{') {
            return None;
        }
        serde_json::from_str(t).ok()
    }
}

/// The live line for a cell, e.g.
/// `[2/4] pool-x1 | mixed 12s | fast 81.0 rps p99 48.2 ms | slow 2.7 rps p99 760 ms`.
pub fn format_live(index: usize, total: usize, cell: &str, p: &ProgressLine) -> String {
    let mut s = format!(
        "[{}/{}] {cell} | {} {:.0}s",
        index + 1,
        total,
        p.phase,
        p.elapsed_secs
    );
    for st in &p.streams {
        let p99 = st
            .p99_ms
            .map(|v| format!("{v:.1} ms"))
            .unwrap_or_else(|| "-".into());
        s.push_str(&format!(" | {} {:.1} rps p99 {p99}", st.endpoint, st.rps));
        if st.errors > 0 {
            s.push_str(&format!(" ({} errors)", st.errors));
        }
    }
    s
}

/// Writes progress to stdout, in place on a terminal.
#[derive(Debug)]
pub struct Display {
    tty: bool,
    live: bool,
    total: usize,
}

impl Display {
    /// A display for `total` cells; redraws in place when stdout is a terminal.
    pub fn new(total: usize) -> Display {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1;
        Display {
            tty,
            live: false,
            total,
        }
    }

    /// A line that stays (cell started, ready, finished, notices).
    pub fn line(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.live {
            let _ = write!(out, "\r\x1b[2K");
            self.live = false;
        }
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// A line about cell `index` that stays.
    pub fn cell(&mut self, index: usize, cell: &str, text: &str) {
        let t = format!("[{}/{}] {cell} | {text}", index + 1, self.total);
        self.line(&t);
    }

    /// A live update from the load generator.
    pub fn live(&mut self, index: usize, cell: &str, p: &ProgressLine) {
        let text = format_live(index, self.total, cell, p);
        if self.tty {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K{text}");
            let _ = out.flush();
            self.live = true;
        } else {
            self.line(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_progress_json_and_ignores_log_lines() {
        let l = r#"{"phase":"mixed","elapsedSecs":3,"streams":[{"endpoint":"fast","requests":240,"rps":81.5,"p99Ms":48.25,"errors":0},{"endpoint":"slow","requests":8,"rps":2.5,"p99Ms":null,"errors":1,"extra":true}]}"#;
        let p = ProgressLine::parse(l).expect("progress line");
        assert_eq!(p.phase, "mixed");
        assert_eq!(p.streams.len(), 2);
        assert_eq!(p.streams[0].p99_ms, Some(48.25));
        assert_eq!(
            format_live(1, 4, "pool-x1", &p),
            "[2/4] pool-x1 | mixed 3s | fast 81.5 rps p99 48.2 ms | slow 2.5 rps p99 - (1 errors)"
        );
        assert_eq!(ProgressLine::parse("INFO starting"), None);
        assert_eq!(ProgressLine::parse("{not json"), None);
    }
}
