//! The floor as a program, for whole-process comparisons with `toolwire replay`
//! (`benches/replay_vs_floor.sh`):
//!
//! - `cargo run --release --example floor -- FILE`: reads the whole file, rebuilds each call's
//!   arguments the simplest correct way, prints their total length;
//! - `cargo run --release --example floor -- --generate DIR`: writes the bench workloads
//!   (`one_call_144k.sse`, `one_call_288k.sse`, `16_calls_8k.sse`, `16_calls_16k.sse`).

#[path = "../benches/support/floor.rs"]
mod floor;
#[path = "../tests/support/stream.rs"]
mod stream;

use std::process::ExitCode;

const WORKLOADS: [(&str, usize, usize); 4] = [
    ("one_call_144k", 1, 144 * 1024),
    ("one_call_288k", 1, 288 * 1024),
    ("16_calls_8k", 16, 8 * 1024),
    ("16_calls_16k", 16, 16 * 1024),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, dir] if flag == "--generate" => {
            for (name, calls, arg_len) in WORKLOADS {
                let path = std::path::Path::new(dir).join(format!("{name}.sse"));
                if let Err(e) = std::fs::write(&path, stream::interleaved_calls(calls, arg_len, 4))
                {
                    eprintln!("floor: {}: {e}", path.display());
                    return ExitCode::from(2);
                }
            }
            ExitCode::SUCCESS
        }
        [file] => match std::fs::read(file) {
            Ok(body) => {
                let total: usize = floor::floor(&body).iter().map(String::len).sum();
                println!("{total}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("floor: {file}: {e}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("usage: floor FILE | floor --generate DIR");
            ExitCode::from(2)
        }
    }
}
