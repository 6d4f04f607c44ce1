//! Tool calls written as text: recogniser throughput on hostile and ordinary text, fed in
//! small fragments the way a stream delivers it. Throughput is reported in text bytes; a
//! linear recogniser keeps it flat as the size doubles (a quadratic one would halve it each
//! time), and memory stays bounded by what a call holds.
//!
//! - `unclosed_markers/<n>`: `n` would-be markers (`<tool_call><`, each decided as prose by
//!   the byte after it) in one answer, `auto` format; a million at the top size.
//! - `open_block/<size>`: one Hermes block that never closes (held until the end, then cut).
//! - `deep_nesting/<size>`: a Mistral `[ARGS]` value nested `[[[[…` to the given depth, streamed.
//! - `calls/<n>`: `n` ordinary Hermes calls with text between them.
//!
//! Run: `cargo bench --bench text_calls -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolwire::text_calls::{Piece, Recogniser, TextCallFormat, TextCalls};

/// Feeds `text` in 16-byte fragments (at character boundaries); the number of pieces out.
fn recognise(format: TextCallFormat, text: &str) -> usize {
    let mut r = Recogniser::new(&TextCalls::new(format, []));
    let mut out: Vec<Piece> = Vec::new();
    let mut count = 0;
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + 16).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        r.push(&text[start..end], &mut out);
        count += out.len();
        out.clear();
        start = end;
    }
    r.finish(&mut out);
    count + out.len()
}

fn bench(c: &mut Criterion, group: &str, format: TextCallFormat, inputs: Vec<(usize, String)>) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    for (n, text) in inputs {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| black_box(recognise(format, black_box(text))))
        });
    }
    g.finish();
}

fn hostile(c: &mut Criterion) {
    let markers = [250_000, 500_000, 1_000_000]
        .map(|n| (n, format!("{}x", "<tool_call><".repeat(n))))
        .to_vec();
    bench(c, "unclosed_markers", TextCallFormat::Auto, markers);
    let open = [1 << 20, 2 << 20, 4 << 20]
        .map(|n| {
            (
                n,
                format!(
                    "<tool_call>{{\"name\": \"f\", \"arguments\": {}",
                    "a".repeat(n)
                ),
            )
        })
        .to_vec();
    bench(c, "open_block", TextCallFormat::Hermes, open);
    let deep = [1 << 18, 1 << 19, 1 << 20]
        .map(|n| (n, format!("[TOOL_CALLS]f[ARGS]{}", "[".repeat(n))))
        .to_vec();
    bench(c, "deep_nesting", TextCallFormat::Mistral, deep);
}

fn ordinary(c: &mut Criterion) {
    let call = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 2}}\n</tool_call>\n";
    let calls = [1_000, 2_000, 4_000].map(|n| (n, call.repeat(n))).to_vec();
    bench(c, "calls", TextCallFormat::Hermes, calls);
}

criterion_group!(benches, hostile, ordinary);
criterion_main!(benches);
