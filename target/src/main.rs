fn main() -> std::process::ExitCode {
    benchmatrix_target::cli::main(std::env::args_os().collect())
}
