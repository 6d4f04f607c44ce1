//! The `toolwire` command line: see `toolwire --help` and the README.

mod cli;

/// With feature `jemalloc`, jemalloc rather than the system allocator: its background thread
/// gives the memory of a large request back to the system within seconds, where glibc's malloc
/// keeps tens of megabytes for good (measured in docs/server.md). The library leaves the
/// choice to the program that uses it. jemalloc does not build with MSVC.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
