//! The `toolwire` command line: see `toolwire --help` and the README.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
