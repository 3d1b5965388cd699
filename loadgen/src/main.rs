fn main() -> std::process::ExitCode {
    benchmatrix_loadgen::cli::main(std::env::args_os().collect())
}
