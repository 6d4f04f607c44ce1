//! toolwire's turn reader beside the floor (`benches/support/floor.rs`: memchr lines, borrowed
//! serde structs, appended arguments) on the same generated OpenAI streams:
//!
//! - `one_call/144k`, `one_call/288k`: one call whose arguments (~144 KB, then twice that) are
//!   streamed in 4-character fragments (~7 and ~14 MB of SSE);
//! - `16_calls/8k`, `16_calls/16k`: 16 parallel calls of 8 KB (then 16 KB) each, their
//!   fragments interleaved chunk by chunk.
//!
//! `toolwire` reads through `replay::replay_reader` with events dropped, as `toolwire replay`
//! does. The interleaved workloads are read with the OpenAI-compatible dialect: OpenAI's own
//! endpoint never interleaves, and its dialect ends a call when the next index starts. Run: `cargo bench --bench turn -- --warm-up-time 1 --measurement-time 3`. The
//! whole-process comparison (time and peak memory of `toolwire replay` against the floor as a
//! program) is `benches/replay_vs_floor.sh`.
//!
//! `event_stream/144k` reads the same one-call workload as Bedrock sends it: binary
//! event-stream frames (every CRC checked), one `contentBlockDelta` per 4-character fragment,
//! beside `one_call/144k` for the cost of the framing.

#[path = "support/floor.rs"]
mod floor;
#[path = "../tests/support/stream.rs"]
mod stream;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolwire::eventstream::encode_frame;
use toolwire::providers::bedrock::Bedrock;
use toolwire::providers::openai::OpenAi;
use toolwire::replay::replay_reader;

/// The workloads: (group, label, calls, argument bytes per call).
pub const WORKLOADS: [(&str, &str, usize, usize); 4] = [
    ("one_call", "144k", 1, 144 * 1024),
    ("one_call", "288k", 1, 288 * 1024),
    ("16_calls", "8k", 16, 8 * 1024),
    ("16_calls", "16k", 16, 16 * 1024),
];

fn toolwire_args(provider: &OpenAi, body: &[u8]) -> usize {
    match replay_reader(provider, None, body, false) {
        Ok(r) => r
            .response
            .tool_calls
            .iter()
            .map(|c| c.raw_arguments.len())
            .sum(),
        Err(e) => panic!("bench input does not decode: {e}"),
    }
}

fn floor_args(body: &[u8]) -> usize {
    floor::floor(body).iter().map(String::len).sum()
}

fn against_the_floor(c: &mut Criterion) {
    for (group, label, calls, arg_len) in WORKLOADS {
        let provider = if calls == 1 {
            OpenAi::new()
        } else {
            OpenAi::compatible()
        };
        let body = stream::interleaved_calls(calls, arg_len, 4);
        assert_eq!(floor_args(&body), toolwire_args(&provider, &body));
        let mut g = c.benchmark_group(group);
        g.sample_size(10);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(BenchmarkId::new("floor", label), &body, |b, body| {
            b.iter(|| floor_args(black_box(body)));
        });
        g.bench_with_input(BenchmarkId::new("toolwire", label), &body, |b, body| {
            b.iter(|| toolwire_args(&provider, black_box(body)));
        });
        g.finish();
    }
}

/// One call of `arg_len` argument bytes in 4-character fragments, as ConverseStream frames.
fn bedrock_frames(arg_len: usize) -> Vec<u8> {
    let frame = |kind: &str, payload: String| {
        encode_frame(
            &[(":event-type", kind), (":message-type", "event")],
            payload.as_bytes(),
        )
    };
    let mut out = frame("messageStart", r#"{"role":"assistant"}"#.into());
    out.extend(frame(
        "contentBlockStart",
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_b","name":"f"}}}"#
            .into(),
    ));
    let args = format!("{{\"a\":\"{}\"}}", "x".repeat(arg_len));
    for piece in args.as_bytes().chunks(4) {
        let piece = serde_json::to_string(std::str::from_utf8(piece).unwrap()).unwrap();
        out.extend(frame(
            "contentBlockDelta",
            format!(r#"{{"contentBlockIndex":0,"delta":{{"toolUse":{{"input":{piece}}}}}}}"#),
        ));
    }
    out.extend(frame(
        "contentBlockStop",
        r#"{"contentBlockIndex":0}"#.into(),
    ));
    out.extend(frame("messageStop", r#"{"stopReason":"tool_use"}"#.into()));
    out
}

fn event_stream(c: &mut Criterion) {
    let provider = Bedrock::new();
    let arg_len = 144 * 1024;
    let body = bedrock_frames(arg_len);
    let args = |body: &[u8]| match replay_reader(&provider, None, body, false) {
        Ok(r) => r.response.tool_calls[0].raw_arguments.len(),
        Err(e) => panic!("bench input does not decode: {e}"),
    };
    assert_eq!(args(&body), arg_len + 8);
    let mut g = c.benchmark_group("event_stream");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_with_input(BenchmarkId::new("toolwire", "144k"), &body, |b, body| {
        b.iter(|| args(black_box(body)));
    });
    g.finish();
}

criterion_group!(benches, against_the_floor, event_stream);
criterion_main!(benches);
