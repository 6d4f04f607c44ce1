//! The `toolwire` command line: see `toolwire --help` and DESIGN.md section 4.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
