//! A reader that goes away is no error: `benchmatrix crd | head -1` ends quietly.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe returns EPIPE, and `print!` turns that
//! into a panic ("failed printing to stdout: Broken pipe", exit 101). Restoring SIGPIPE's
//! default would end the process instead, but this one binary is also the operator, the
//! local runner and the kubectl plugin, which write to sockets: a peer that closes its end
//! must give them EPIPE to handle, not kill them. So SIGPIPE stays ignored and only the panic
//! of printing to a closed stdout or stderr is turned into a quiet exit, whichever command
//! (or thread) printed.

use std::sync::Once;

/// The exit status of a command whose reader went away: 128 + SIGPIPE, what a shell reports
/// for a program that SIGPIPE ended (`cat big | head -1`), so a pipeline sees the same.
pub const EXIT_BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// Installs the panic hook (once) that ends the process with [`EXIT_BROKEN_PIPE`] and no
/// message when the panic is a print to a closed pipe; every other panic is reported as before.
pub fn exit_quietly_on_broken_pipe() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if is_broken_pipe_print(panic_text(info)) {
                std::process::exit(EXIT_BROKEN_PIPE);
            }
            report(info);
        }));
    });
}

fn panic_text<'a>(info: &'a std::panic::PanicHookInfo<'_>) -> &'a str {
    let payload = info.payload();
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

/// True for std's panic on `print!`/`eprint!` to a pipe whose reader has closed: "failed
/// printing to stdout: Broken pipe (os error 32)".
fn is_broken_pipe_print(text: &str) -> bool {
    let epipe = std::io::Error::from_raw_os_error(libc::EPIPE).to_string();
    (text.starts_with("failed printing to stdout") || text.starts_with("failed printing to stderr"))
        && text.ends_with(&epipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_print_to_a_closed_pipe_is_quiet() {
        assert!(is_broken_pipe_print(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(is_broken_pipe_print(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(!is_broken_pipe_print(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_broken_pipe_print(
            "called `Option::unwrap()` on a `None` value"
        ));
    }
}
