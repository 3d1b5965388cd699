//! The `benchmatrix-target` binary: the service under test on its own, so its image carries
//! nothing but the target. All behaviour lives in the library's `cli::main`, which
//! `benchmatrix target` also runs, so both entry points serve the same code.

fn main() -> std::process::ExitCode {
    benchmatrix_target::cli::main(std::env::args_os().collect())
}
