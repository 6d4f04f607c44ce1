//! Structured partial arguments: the incremental reader against re-parsing on every fragment.
//!
//! - `partial_json_reader/<size>`: [`PartialJson`] fed a structured argument (a file path and
//!   an array of edits, each with a line number and a text with escapes) in 4-byte fragments,
//!   at 1, 2 and 4 MB. Linear work keeps the time per doubling at 2× (the acceptance bound is
//!   2.1×); throughput is reported in argument bytes.
//! - `reparse_every_fragment/<size>`: what a UI does without it (the Vercel AI SDK's
//!   `parsePartialJson`): after each fragment, close the open strings and containers of the
//!   whole buffer and parse it again. Quadratic, so it runs at 16, 32 and 64 KB (4× per
//!   doubling); 2 MB would take about 1000× the 64 KB time.
//! - `partial_json_reader_small/<size>`: the reader at those small sizes, for a side-by-side
//!   comparison.
//!
//! Run: `cargo bench --bench partial_json -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use toolwire::partial_json::PartialJson;

const KB: usize = 1024;
const MB: usize = 1024 * KB;
const FRAGMENT: usize = 4;

/// A structured argument about `size` bytes long: `{"path": …, "edits": [{"line": n, "text":
/// "…"}, …]}`.
fn argument(size: usize) -> String {
    let mut text = String::from(r#"{"path": "src/partial_json.rs", "edits": ["#);
    let mut line = 0;
    while text.len() + 120 < size {
        if line > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!(
            r#"{{"line": {line}, "text": "    let s = \"quoted\\n\" ; // édition {line}"}}"#
        ));
        line += 1;
    }
    text.push_str("]}");
    text
}

/// The argument in 4-byte fragments (cut only at character boundaries), made as they are read
/// so the bench touches no list of fragments.
fn fragments(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let mut end = (start + FRAGMENT).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let piece = text.get(start..end);
        start = end;
        piece
    })
}

/// Reads every fragment once; returns how many events came out.
fn read_incrementally(text: &str) -> usize {
    let mut reader = PartialJson::new();
    let mut events = Vec::new();
    let mut count = 0;
    for f in fragments(text) {
        reader.feed(f, &mut events);
        count += events.len();
        events.clear();
    }
    assert!(reader.finish(&mut events), "bench input is whole JSON");
    count
}

/// The buffer made parseable: open strings and containers closed (a dangling `\` or a
/// member without its value simply fails to parse, as it does in the baseline it models).
fn closed(buffer: &str) -> String {
    let mut stack = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for b in buffer.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    let mut text = buffer.to_owned();
    if in_string {
        if escaped {
            text.pop();
        }
        text.push('"');
    }
    text.extend(stack.iter().rev().map(|&b| char::from(b)));
    text
}

/// Re-parses the whole buffer after every fragment; returns how many parses succeeded.
fn reparse_every_fragment(text: &str) -> usize {
    let mut buffer = String::new();
    let mut parsed = 0;
    for f in fragments(text) {
        buffer.push_str(f);
        if serde_json::from_str::<Value>(&closed(&buffer)).is_ok() {
            parsed += 1;
        }
    }
    parsed
}

fn label(size: usize) -> String {
    if size >= MB {
        format!("{}MB", size / MB)
    } else {
        format!("{}KB", size / KB)
    }
}

fn group(c: &mut Criterion, name: &str, sizes: &[usize], run: fn(&str) -> usize) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for &size in sizes {
        let text = argument(size);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(label(size)),
            text.as_str(),
            |b, text| b.iter(|| run(black_box(text))),
        );
    }
    group.finish();
}

fn reader(c: &mut Criterion) {
    group(
        c,
        "partial_json_reader",
        &[MB, 2 * MB, 4 * MB],
        read_incrementally,
    );
}

fn small(c: &mut Criterion) {
    let sizes = [16 * KB, 32 * KB, 64 * KB];
    group(c, "partial_json_reader_small", &sizes, read_incrementally);
    group(c, "reparse_every_fragment", &sizes, reparse_every_fragment);
}

criterion_group!(benches, reader, small);
criterion_main!(benches);
