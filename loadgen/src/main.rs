//! The `benchmatrix-loadgen` binary: the load generator on its own, so its image carries nothing
//! but the generator. All behaviour lives in the library's `cli::main`, which `benchmatrix
//! loadgen` also runs, so both entry points accept the same flags and plans.

fn main() -> std::process::ExitCode {
    benchmatrix_loadgen::cli::main(std::env::args_os().collect())
}
