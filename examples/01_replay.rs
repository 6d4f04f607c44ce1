//! Decode a captured provider stream offline and print its tool calls.
//!
//! `cargo run --example 01_replay -- openai fixtures/openai/stream_single_call/response.sse`

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(provider), Some(file)) = (args.next(), args.next()) else {
        eprintln!("usage: 01_replay PROVIDER FILE");
        return ExitCode::from(2);
    };
    match run(&provider, &file) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{file}: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(provider: &str, file: &str) -> Result<(), Box<dyn std::error::Error>> {
    let provider = toolwire::provider_for(provider.parse()?)?;
    let body = std::fs::read(file)?;
    let replay = toolwire::replay::replay(provider.as_ref(), &body)?;
    for call in &replay.response.tool_calls {
        match &call.error {
            None => println!("{} {}({})", call.id, call.name, call.raw_arguments),
            Some(problem) => println!("{} {} NOT RUNNABLE: {problem}", call.id, call.name),
        }
    }
    println!("finish: {}", replay.response.finish_reason);
    Ok(())
}
