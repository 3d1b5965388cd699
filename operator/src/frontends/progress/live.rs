//! The live display on a terminal, two lines redrawn in place (with `indicatif`):
//!
//! ```text
//! [=========>                    ] 7/20 measurements · 1m 42s elapsed · about 3m 16s left
//! pool-x1 rep 2/5 · mixed 3/8 s · fast 81.0 rps p99 48.2 ms · slow 2.7 rps p99 760.1 ms
//! ```
//!
//! Lines that stay (a measurement's result, notices) are printed above them.

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::format;

/// The overall bar and the current measurement's line.
pub struct Live {
    multi: MultiProgress,
    overall: ProgressBar,
    cell: ProgressBar,
}

impl Live {
    /// Two lines on `target`, the bar out of `total` measurements.
    pub fn new(target: ProgressDrawTarget, total: usize) -> Live {
        let multi = MultiProgress::with_draw_target(target);
        let overall = multi.add(ProgressBar::new(total as u64));
        // The templates are constants: a bad one is a bug that every test run would show.
        let style = ProgressStyle::with_template(
            "[{bar:30}] {pos}/{len} measurements · {elapsed_short} elapsed · {msg}",
        )
        .expect("the overall bar's template")
        .progress_chars("=> ")
        .with_key(
            "elapsed_short",
            |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&format::duration(s.elapsed()));
            },
        );
        overall.set_style(style);
        let cell = multi.add(ProgressBar::new_spinner());
        cell.set_style(
            ProgressStyle::with_template("{wide_msg}").expect("the cell line's template"),
        );
        // The elapsed time moves while nothing else does (replicas starting).
        overall.enable_steady_tick(Duration::from_secs(1));
        Live {
            multi,
            overall,
            cell,
        }
    }

    /// The overall bar: `done` of `total` measurements, about `eta` left.
    pub fn overall(&mut self, done: usize, total: usize, eta: Duration) {
        self.overall.set_length(total as u64);
        self.overall.set_position(done as u64);
        self.overall
            .set_message(format!("about {} left", format::duration(eta)));
    }

    /// The current measurement's line.
    pub fn cell(&mut self, text: &str) {
        self.cell.set_message(text.to_string());
    }

    /// A line that stays, above the bars.
    pub fn println(&mut self, text: &str) {
        // A terminal that went away takes the display with it; the run goes on.
        let _ = self.multi.println(text);
    }

    /// Removes the bars.
    pub fn clear(&mut self) {
        self.overall.finish_and_clear();
        self.cell.finish_and_clear();
        let _ = self.multi.clear();
    }
}
