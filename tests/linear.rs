//! Stream assembly is linear in the input: argument text is appended and parsed once, never
//! re-copied or re-parsed per fragment. Checked by counting the bytes allocated while decoding
//! (deterministic, unlike time): doubling the argument roughly doubles the allocations, and
//! they stay within a fixed multiple of the body size. A quadratic assembler (re-parsing or
//! re-copying the buffer on every fragment) would allocate gigabytes here.

#[path = "support/stream.rs"]
mod stream;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use toolwire::providers::openai::OpenAi;
use toolwire::replay::replay;

/// Counts the bytes this thread allocates (tests run on several threads).
struct Counting;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    let _ = ALLOCATED.try_with(|a| a.set(a.get().saturating_add(bytes)));
}

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated while decoding `body`, and the decoded calls' total argument length.
fn allocated_while_decoding(body: &[u8]) -> (usize, usize) {
    let provider = OpenAi::new();
    let before = ALLOCATED.with(Cell::get);
    let replay = replay(&provider, body).expect("the synthetic stream decodes");
    let after = ALLOCATED.with(Cell::get);
    let args: usize = replay
        .response
        .tool_calls
        .iter()
        .map(|c| {
            assert!(c.is_complete(), "{}: {:?}", c.id, c.error);
            c.raw_arguments.len()
        })
        .sum();
    (after - before, args)
}

fn check(calls: usize, arg_len: usize) {
    let small = stream::interleaved_calls(calls, arg_len, 4);
    let large = stream::interleaved_calls(calls, 2 * arg_len, 4);
    let (a_small, args_small) = allocated_while_decoding(&small);
    let (a_large, args_large) = allocated_while_decoding(&large);
    assert_eq!(args_small, calls * arg_len);
    assert_eq!(args_large, 2 * calls * arg_len);
    let ratio = a_large as f64 / a_small as f64;
    assert!(
        (1.6..2.4).contains(&ratio),
        "doubling the input multiplied allocations by {ratio:.2} ({a_small} -> {a_large} bytes)"
    );
    // Each 4-byte fragment is a ~230-byte SSE event whose parse allocates ~2.5 KB of
    // short-lived structs (and one retained event), so ~15x the body is expected; re-copying
    // the argument buffer per fragment would be hundreds of times the body.
    for (allocated, body) in [(a_small, small.len()), (a_large, large.len())] {
        assert!(
            allocated < 24 * body.max(1),
            "{allocated} bytes allocated for a {body}-byte body"
        );
    }
}

#[test]
fn one_large_argument_in_4_byte_fragments_allocates_linearly() {
    check(1, 32 * 1024);
}

#[test]
fn interleaved_parallel_calls_allocate_linearly() {
    check(16, 2 * 1024);
}
