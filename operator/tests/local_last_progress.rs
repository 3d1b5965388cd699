//! The load generator writes its last phase's progress line just before it exits, and the
//! local runner reads that line on one thread while another sees the exit: on a busy machine
//! the exit can reach the runner first. These tests make that order certain, with a load
//! generator whose last line of output comes only once the runner has seen it end and reaped
//! it, and check that the line is still shown, in its place, before the step's `done` line.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use benchmatrix::executors::local::runner::Runner;
use benchmatrix::fixtures::{connections, phase};
use benchmatrix::frontends::progress::{Display, Plan};
use benchmatrix::resource::{BenchmarkRun, CellPhase, Configuration, ValidatedRun};

/// The `benchmatrix` binary, which serves the target and the load generator.
fn real() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_benchmatrix"))
}

/// Plain progress lines, kept for the test to read.
#[derive(Clone, Default)]
struct Shown(Arc<Mutex<Vec<u8>>>);

impl Write for Shown {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shown {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A program to serve as benchmatrix in `dir`: the target is the real one; the load generator
/// is the real one behind a shell that passes its stderr on line by line, except the last
/// line, which it holds until the runner has reaped the shell (its /proc entry is gone only
/// then), and writes after. The shell is the process the runner watches; the holder keeps the
/// runner's end of the output open until it has written the line.
fn late_last_line(dir: &Path) -> PathBuf {
    let script = dir.join("benchmatrix-late-last-line");
    let fifo = dir.join("loadgen-stderr.fifo");
    let text = format!(
        r#"#!/bin/sh
real='{real}'
[ "$1" = loadgen ] || exec "$real" "$@"
me=$$
fifo='{fifo}'
rm -f "$fifo"
mkfifo "$fifo"
(
  held=
  while IFS= read -r line; do
    [ -n "$held" ] && printf '%s\n' "$held" >&2
    held=$line
  done
  # At most 10 s, so a runner that never reaps the shell cannot leave this behind.
  n=0
  while [ -e "/proc/$me" ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n + 1)); done
  [ -n "$held" ] && printf '%s\n' "$held" >&2
) <"$fifo" &
"$real" "$@" 2>"$fifo"
"#,
        real = real().display(),
        fifo = fifo.display(),
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn the_last_phase_line_that_comes_after_the_load_generator_exited_is_shown_before_done() {
    let dir = tempfile::tempdir().unwrap();
    let run = BenchmarkRun::sample()
        .named("late")
        .with_cell(Configuration::named("a").cpu("1"))
        .with_warmup("0s")
        .with_phases([
            phase("first", "1s", [connections("fast", 1)]),
            phase("last", "1s", [connections("fast", 1)]),
        ]);
    let v = ValidatedRun::new(run).unwrap();
    let shown = Shown::default();
    let display = Display::plain(Plan::of(&v), Box::new(shown.clone()));
    let status = Runner::with_display(
        v,
        PathBuf::from("late.yaml"),
        dir.path().join("out"),
        Default::default(),
        display,
    )
    .unwrap()
    .with_program(late_last_line(dir.path()))
    .run_to_end();
    let text = shown.text();

    let cell = &status.cells[0];
    assert_eq!(cell.phase, CellPhase::Succeeded, "{cell:?}\n{text}");
    // The figures come from the result document, not the progress lines: they are whole
    // however late the line is.
    let phases: Vec<&str> = cell.results.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(phases, ["first", "last"], "{text}");
    // One line as the cell starts, one per phase, one as it ends: in that order.
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[1/1] a | "))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:#?}\n{text}");
    assert!(lines[0].contains("| starting "), "{lines:#?}");
    assert!(lines[1].contains("| first 1 s: fast "), "{lines:#?}");
    assert!(lines[2].contains("| last 1 s: fast "), "{lines:#?}");
    assert!(lines[3].contains("| done (warm-up + phases "), "{lines:#?}");
}
