//! Stream assembly throughput: SSE bytes in memory → `replay` → ChatResponse.
//!
//! - `large_argument/<size>`: one call whose argument (0.5, 1 and 2 MB) is streamed in 4-byte
//!   fragments. Throughput is reported in SSE bytes; a linear assembler keeps it flat as the
//!   size doubles (a quadratic one would halve it each time).
//! - `interleaved_16_calls/<size>`: 16 parallel calls whose fragments alternate chunk by chunk.
//! - `typical`: the small recorded-shape fixture `fixtures/openai/stream_single_call`.
//!
//! Run: `cargo bench --bench assemble -- --warm-up-time 1 --measurement-time 3`.

#[path = "../tests/support/stream.rs"]
mod stream;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolwire::providers::openai::OpenAi;
use toolwire::replay::replay;

const MB: usize = 1024 * 1024;

fn decode(provider: &OpenAi, body: &[u8]) -> usize {
    match replay(provider, body) {
        Ok(r) => r
            .response
            .tool_calls
            .iter()
            .map(|c| c.raw_arguments.len())
            .sum(),
        Err(e) => panic!("bench input does not decode: {e}"),
    }
}

fn large_argument(c: &mut Criterion) {
    let provider = OpenAi::new();
    let mut group = c.benchmark_group("large_argument");
    group.sample_size(10);
    for size in [MB / 2, MB, 2 * MB] {
        let body = stream::interleaved_calls(1, size, 4);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(label(size)),
            &body,
            |b, body| {
                b.iter(|| decode(&provider, black_box(body)));
            },
        );
    }
    group.finish();
}

fn interleaved_calls(c: &mut Criterion) {
    // Interleaving servers are OpenAI-compatible ones: OpenAI's own ends a call at the next
    // index.
    let provider = OpenAi::compatible();
    let mut group = c.benchmark_group("interleaved_16_calls");
    group.sample_size(10);
    for size in [MB / 2, MB] {
        let body = stream::interleaved_calls(16, size / 16, 4);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(label(size)),
            &body,
            |b, body| {
                b.iter(|| decode(&provider, black_box(body)));
            },
        );
    }
    group.finish();
}

fn typical(c: &mut Criterion) {
    let provider = OpenAi::new();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/openai/stream_single_call/response.sse"
    );
    let body = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut group = c.benchmark_group("typical");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("stream_single_call", |b| {
        b.iter(|| decode(&provider, black_box(&body)));
    });
    group.finish();
}

/// `0.5MB`, `1MB`, `2MB` of argument text.
fn label(size: usize) -> String {
    if size.is_multiple_of(MB) {
        format!("{}MB", size / MB)
    } else {
        format!("{:.1}MB", size as f64 / MB as f64)
    }
}

criterion_group!(benches, typical, large_argument, interleaved_calls);
criterion_main!(benches);
