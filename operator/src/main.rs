//! The `benchmatrix` binary: every role in one executable (see `cli`).

fn main() -> std::process::ExitCode {
    benchmatrix::cli::main(std::env::args_os().collect())
}
