//! Property tests of stream decoding.
//!
//! 1. Chunking never matters: every `fixtures/*/*/response.sse` and `response.ndjson` (all
//!    providers, found at run time) decodes to the same events and response (or the same
//!    error) whether the body arrives whole, one byte at a time, or cut at random points biased
//!    towards the middle of UTF-8 characters and `\r\n` pairs (cut in two at every byte, the
//!    SSE events are the same: a unit test in `src/replay.rs`, the SSE parser being internal).
//! 2. The events agree with the response: each call's argument deltas concatenate to its
//!    `raw_arguments`, every call completes before `Finish` (at the end of the turn, or earlier
//!    where the wire marks its end), its last completion is its final state, a call completes
//!    twice only when text came after its first completion (and then it is never runnable),
//!    and `Finish` carries the response's finish reason. No call is completed runnable with
//!    arguments other than its final ones.
//! 3. Nothing panics: arbitrary bytes, arbitrary JSON payloads and random OpenAI-shaped chunk
//!    sequences give `Ok` or a typed `Err`, the same for any chunking.
//!
//! 4. Tool calls written as text come out the same in any chunking: every `text_calls_*` case
//!    (read as the answer to its request) decodes the same one byte at a time and cut in
//!    two at every 7th byte, and, what matters more, with its answer text re-streamed in two pieces at every
//!    character boundary and one character per chunk: the same calls, text and finish, and
//!    events that tell the same story.
//!
//! The runners use a fixed seed so the suite is deterministic; case counts are modest so the
//! file runs in seconds.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use toolwire::conformance::{self, error_json};
use toolwire::replay::{Replay, replay, replay_answer, replay_chunks};
use toolwire::{
    ChatRequest, ChatResponse, HttpRequest, Provider, ProviderKind, StreamEvent, ToolCall,
    provider_for,
};

/// What a decode produced, comparable across chunkings: the events and response, or the error
/// as its golden JSON (kind, provider, status, code, message, partial response).
#[derive(Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // a test value, compared and dropped
enum Outcome {
    Ok(Replay),
    Err(Value),
}

fn decode<'a>(provider: &dyn Provider, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    match replay_chunks(provider, chunks) {
        Ok(r) => Outcome::Ok(r),
        Err(e) => {
            // Displaying an error must not panic either.
            let _ = e.to_string();
            Outcome::Err(error_json(&e))
        }
    }
}

/// `body` cut at the (sorted, deduplicated) `cuts`.
fn pieces<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        let cut = cut.min(body.len());
        if cut > start {
            out.push(&body[start..cut]);
            start = cut;
        }
    }
    out.push(&body[start..]);
    out
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Every stream fixture whose provider is built in, with that provider.
fn stream_fixtures() -> Vec<(PathBuf, Box<dyn Provider>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for case in conformance::case_dirs(&root).expect("fixtures/ is readable") {
        let Some(body) = conformance::STREAM_FILES
            .iter()
            .map(|name| case.join(name))
            .find(|p| p.is_file())
        else {
            continue;
        };
        let meta = conformance::load_meta(&case).ok();
        let Some(kind) = conformance::case_provider(&case, meta.as_ref()) else {
            panic!("{}: cannot tell the provider", case.display());
        };
        // A provider whose module has not landed yet has nothing to decode with; its
        // conformance test fails on its own.
        if let Ok(provider) = provider_for(kind) {
            out.push((body, provider));
        }
    }
    assert!(!out.is_empty(), "no stream fixtures found");
    out
}

/// Byte positions where a cut is most likely to expose a bug: inside a UTF-8 character,
/// between `\r` and `\n`, and right before or after a line end.
fn tricky_cuts(body: &[u8]) -> Vec<usize> {
    (1..body.len())
        .filter(|&i| {
            let (prev, cur) = (body[i - 1], body[i]);
            (cur & 0xC0) == 0x80 || prev == b'\r' || prev == b'\n' || cur == b'\r' || cur == b'\n'
        })
        .collect()
}

/// Checks that the events tell the same story as the response.
fn check_events(name: &str, replay: &Replay) -> Result<(), String> {
    let Replay {
        events, response, ..
    } = replay;
    let calls = &response.tool_calls;
    let mut raw: Vec<String> = vec![String::new(); calls.len()];
    let mut late = vec![false; calls.len()];
    let mut started = vec![false; calls.len()];
    let mut completed: Vec<Option<&ToolCall>> = vec![None; calls.len()];
    let mut finish = None;
    let slot = |index: usize, what: &str| {
        if index < calls.len() {
            Ok(index)
        } else {
            Err(format!(
                "{name}: {what} for call {index}, but the response has {} calls",
                calls.len()
            ))
        }
    };
    for (pos, event) in events.iter().enumerate() {
        let call_event = matches!(
            event,
            StreamEvent::ToolCallStarted { .. }
                | StreamEvent::ToolCallDelta { .. }
                | StreamEvent::ToolCallComplete { .. }
                | StreamEvent::Finish { .. }
        );
        if finish.is_some() && call_event {
            return Err(format!("{name}: {event:?} after Finish"));
        }
        match event {
            StreamEvent::ToolCallStarted { index, .. } => {
                let i = slot(*index, "ToolCallStarted")?;
                if started[i] {
                    return Err(format!("{name}: call {i} started twice"));
                }
                started[i] = true;
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                let i = slot(*index, "ToolCallDelta")?;
                if !started[i] {
                    return Err(format!(
                        "{name}: argument delta for call {i} before its start"
                    ));
                }
                // A wire that sends text for a call it already ended.
                late[i] |= completed[i].is_some();
                raw[i].push_str(fragment);
            }
            StreamEvent::ToolCallComplete { index, call } => {
                let i = slot(*index, "ToolCallComplete")?;
                if let Some(first) = completed[i] {
                    // Announced again: only because text came after the first completion,
                    // and then as its final, never runnable, state.
                    if !late[i] || first == call || call.is_complete() {
                        return Err(format!("{name}: call {i} completed twice"));
                    }
                }
                if call.is_complete() && call.raw_arguments != calls[i].raw_arguments {
                    return Err(format!(
                        "{name}: call {i} completed runnable with {:?}, its final text is {:?}",
                        call.raw_arguments, calls[i].raw_arguments
                    ));
                }
                completed[i] = Some(call);
            }
            StreamEvent::Finish { reason } => {
                if reason != &response.finish_reason {
                    return Err(format!(
                        "{name}: Finish says {reason}, the response says {}",
                        response.finish_reason
                    ));
                }
                finish = Some(pos);
            }
            _ => {}
        }
    }
    for (i, call) in calls.iter().enumerate() {
        if !started[i] {
            return Err(format!("{name}: call {i} has no start event"));
        }
        if completed[i] != Some(call) {
            return Err(format!(
                "{name}: call {i}'s last completion is not its final state"
            ));
        }
        if raw[i] != call.raw_arguments {
            return Err(format!(
                "{name}: call {i}: deltas {:?} do not add up to raw_arguments {:?}",
                raw[i], call.raw_arguments
            ));
        }
        if late[i] && call.is_complete() {
            return Err(format!(
                "{name}: call {i} got text after its completion and is still runnable"
            ));
        }
    }
    if finish.is_none() {
        return Err(format!("{name}: a decoded stream has no Finish event"));
    }
    Ok(())
}

#[test]
fn fixture_events_agree_with_the_response() {
    for (path, provider) in stream_fixtures() {
        let body = std::fs::read(&path).expect("readable fixture");
        let name = path.display().to_string();
        if let Outcome::Ok(r) = decode(provider.as_ref(), [body.as_slice()]) {
            if let Err(problem) = check_events(&name, &r) {
                panic!("{problem}");
            }
            // `replay` (the entry point the CLI uses) agrees with the chunked path.
            let direct = replay(provider.as_ref(), &body).expect("decodes like replay_chunks");
            assert_eq!(direct, r, "{name}: replay and replay_chunks differ");
        }
    }
}

/// One byte at a time decodes like the whole body. (Every two-piece cut gives the same SSE
/// events: the unit test `replay::tests::fixtures_give_the_same_sse_events_at_every_single_cut`,
/// as the SSE parser is internal.)
#[test]
fn fixtures_decode_the_same_one_byte_at_a_time() {
    for (path, provider) in stream_fixtures() {
        let body = std::fs::read(&path).expect("readable fixture");
        let whole = decode(provider.as_ref(), [body.as_slice()]);
        let bytes = decode(provider.as_ref(), body.chunks(1));
        assert!(
            bytes == whole,
            "{}: one byte at a time differs",
            path.display()
        );
    }
}

#[test]
fn fixtures_decode_the_same_at_random_cuts() {
    for (path, provider) in stream_fixtures() {
        let body = std::fs::read(&path).expect("readable fixture");
        let whole = decode(provider.as_ref(), [body.as_slice()]);
        let tricky = tricky_cuts(&body);
        let any_cut = 0..=body.len();
        let cut = if tricky.is_empty() {
            any_cut.boxed()
        } else {
            prop_oneof![any_cut, proptest::sample::select(tricky)].boxed()
        };
        let strategy = proptest::collection::vec(cut, 0..24);
        runner(64)
            .run(&strategy, |mut cuts| {
                cuts.sort_unstable();
                cuts.dedup();
                let split = decode(provider.as_ref(), pieces(&body, &cuts));
                prop_assert_eq!(&split, &whole, "cuts {:?}", cuts);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Every built-in provider, for the no-panic properties.
fn providers() -> Vec<Box<dyn Provider>> {
    ProviderKind::ALL
        .into_iter()
        .filter_map(|k| provider_for(k).ok())
        .collect()
}

/// Decodes `body` whole, as JSON (via `replay`), and in the given pieces: nothing panics, and
/// an SSE decode does not depend on the chunking.
fn no_panic(body: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
    for provider in providers() {
        let p = provider.as_ref();
        if let Err(e) = replay(p, body) {
            let _ = e.to_string();
        }
        let _ = p.decode(body);
        let _ = p.decode_error(Some(500), body);
        let whole = decode(p, [body]);
        let split = decode(p, pieces(body, cuts));
        prop_assert_eq!(
            &split,
            &whole,
            "{}: chunking changed the result",
            p.info().kind
        );
        if let Outcome::Ok(r) = &whole {
            check_events("generated stream", r).map_err(TestCaseError::fail)?;
        }
    }
    Ok(())
}

fn cuts_for(len: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..=len.max(1), 0..8).prop_map(|mut c| {
        c.sort_unstable();
        c.dedup();
        c
    })
}

#[test]
fn garbage_bytes_never_panic() {
    let strategy = proptest::collection::vec(any::<u8>(), 0..400).prop_flat_map(|body| {
        let len = body.len();
        (Just(body), cuts_for(len))
    });
    runner(256)
        .run(&strategy, |(body, cuts)| no_panic(&body, &cuts))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Field names the decoders look for, so random JSON reaches their code paths.
const KEYS: &[&str] = &[
    "choices",
    "delta",
    "message",
    "tool_calls",
    "index",
    "id",
    "type",
    "function",
    "name",
    "arguments",
    "finish_reason",
    "usage",
    "error",
    "content",
    "reasoning_content",
    "reasoning",
    "prompt_tokens",
    "completion_tokens",
    "code",
    "candidates",
    "parts",
    "functionCall",
    "args",
    "output",
    "content_block",
    "partial_json",
    "stop_reason",
    "input",
    "thinking",
    "done",
    "done_reason",
    "eval_count",
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[{}\"\\\\a-z:,\u{4e2d}\u{1F600} ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            proptest::sample::select(KEYS).prop_map(str::to_owned),
            "[a-z_]{1,8}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((key, inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An SSE body of `payloads`, optionally ended by `[DONE]`.
fn sse_body(payloads: &[String], done: bool) -> Vec<u8> {
    let mut body = String::new();
    for p in payloads {
        body.push_str("data: ");
        body.push_str(p);
        body.push_str("\n\n");
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body.into_bytes()
}

#[test]
fn random_json_payloads_never_panic() {
    let strategy = (proptest::collection::vec(arb_json(), 0..6), any::<bool>())
        .prop_map(|(values, done)| {
            let payloads: Vec<String> = values.iter().map(Value::to_string).collect();
            sse_body(&payloads, done)
        })
        .prop_flat_map(|body| {
            let len = body.len();
            (Just(body), cuts_for(len))
        });
    runner(256)
        .run(&strategy, |(body, cuts)| no_panic(&body, &cuts))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A JSON field that may be absent (`None`), null, empty or set.
fn maybe(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!(""))),
        value.prop_map(Some),
    ]
}

/// One OpenAI-shaped tool-call entry with every field optional and hostile values allowed.
fn arb_tool_call() -> impl Strategy<Value = Value> {
    let index = maybe(prop_oneof![
        (-2i64..4).prop_map(|i| json!(i)),
        any::<i64>().prop_map(|i| json!(i))
    ]);
    let id = maybe(prop_oneof![
        Just(json!("call_a")),
        Just(json!("call_b")),
        Just(json!("call_0"))
    ]);
    let name = maybe(prop_oneof![
        Just(json!("f")),
        Just(json!("g")),
        "[a-z.]{1,6}".prop_map(Value::String)
    ]);
    let args = maybe(prop_oneof![
        "[{}\"\\\\:,a-z0-9\u{e9}\u{4e2d} ]{0,10}".prop_map(Value::String),
        Just(json!({"x": 1})),
        Just(json!(3)),
    ]);
    (index, id, name, args).prop_map(|(index, id, name, args)| {
        let mut call = Map::new();
        let mut function = Map::new();
        if let Some(v) = index {
            call.insert("index".into(), v);
        }
        if let Some(v) = id {
            call.insert("id".into(), v);
        }
        if let Some(v) = name {
            function.insert("name".into(), v);
        }
        if let Some(v) = args {
            function.insert("arguments".into(), v);
        }
        call.insert("function".into(), Value::Object(function));
        Value::Object(call)
    })
}

/// One OpenAI-shaped chunk: a choice with text, reasoning, tool calls and a finish reason, any
/// of them absent, plus sometimes usage or an error.
fn arb_chunk() -> impl Strategy<Value = String> {
    let finish = maybe(
        proptest::sample::select(vec![
            "stop",
            "tool_calls",
            "length",
            "content_filter",
            "null",
            "weird",
        ])
        .prop_map(|s| json!(s)),
    );
    let content = maybe("[a-z \u{4e2d}]{0,6}".prop_map(Value::String));
    let reasoning = maybe("[a-z ]{0,6}".prop_map(Value::String));
    let calls = maybe(proptest::collection::vec(arb_tool_call(), 0..3).prop_map(Value::Array));
    let usage = maybe(Just(json!({"prompt_tokens": 3, "completion_tokens": 4})));
    let error = prop_oneof![8 => Just(None), 1 => Just(Some(json!({"message": "boom", "type": "server_error"})))];
    (finish, content, reasoning, calls, usage, error).prop_map(
        |(finish, content, reasoning, calls, usage, error)| {
            let mut delta = Map::new();
            for (k, v) in [
                ("content", content),
                ("reasoning_content", reasoning),
                ("tool_calls", calls),
            ] {
                if let Some(v) = v {
                    delta.insert(k.into(), v);
                }
            }
            let mut choice = Map::new();
            choice.insert("index".into(), json!(0));
            choice.insert("delta".into(), Value::Object(delta));
            if let Some(f) = finish {
                choice.insert("finish_reason".into(), f);
            }
            let mut chunk = Map::new();
            chunk.insert("choices".into(), json!([Value::Object(choice)]));
            if let Some(u) = usage {
                chunk.insert("usage".into(), u);
            }
            if let Some(e) = error {
                chunk.insert("error".into(), e);
            }
            Value::Object(chunk).to_string()
        },
    )
}

#[test]
fn random_chunk_sequences_never_panic() {
    let strategy = (proptest::collection::vec(arb_chunk(), 0..10), any::<bool>())
        .prop_map(|(payloads, done)| sse_body(&payloads, done))
        .prop_flat_map(|body| {
            let len = body.len();
            (Just(body), cuts_for(len))
        });
    runner(256)
        .run(&strategy, |(body, cuts)| no_panic(&body, &cuts))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn random_json_lines_never_panic() {
    // Newline-delimited JSON (Ollama's framing): random objects, one per line.
    let strategy = proptest::collection::vec(arb_json(), 0..6)
        .prop_map(|values| {
            let mut body = String::new();
            for v in values {
                body.push_str(&v.to_string());
                body.push('\n');
            }
            body.into_bytes()
        })
        .prop_flat_map(|body| {
            let len = body.len();
            (Just(body), cuts_for(len))
        });
    runner(256)
        .run(&strategy, |(body, cuts)| no_panic(&body, &cuts))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// One Anthropic-shaped stream event: any event type (known or not), any block or delta type,
/// indexes that may collide, be missing or point at no block.
fn arb_anthropic_event() -> impl Strategy<Value = (String, Value)> {
    let kind = proptest::sample::select(vec![
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "mystery",
    ]);
    let index = maybe((-1i64..4).prop_map(|i| json!(i)));
    let block = proptest::sample::select(vec![
        json!({"type": "text", "text": "hi"}),
        json!({"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
        json!({"type": "tool_use", "id": "toolu_b", "name": "", "input": {"x": 1}}),
        json!({"type": "thinking", "thinking": "", "signature": ""}),
        json!({"type": "redacted_thinking", "data": "abc"}),
        json!({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}),
        json!(null),
    ]);
    let delta = (
        proptest::sample::select(vec![
            "text_delta",
            "input_json_delta",
            "thinking_delta",
            "signature_delta",
            "odd_delta",
        ]),
        "[{}\"\\\\:,a-z0-9\u{e9} ]{0,8}",
    )
        .prop_map(|(t, piece)| {
            json!({"type": t, "text": piece, "partial_json": piece, "thinking": piece,
                   "signature": piece})
        });
    let stop = maybe(
        proptest::sample::select(vec![
            "end_turn",
            "tool_use",
            "max_tokens",
            "pause_turn",
            "refusal",
        ])
        .prop_map(|s| json!(s)),
    );
    (kind, index, block, delta, stop).prop_map(|(kind, index, block, delta, stop)| {
        let mut event = Map::new();
        event.insert("type".into(), json!(kind));
        if let Some(i) = index {
            event.insert("index".into(), i);
        }
        match kind {
            "message_start" => {
                event.insert(
                    "message".into(),
                    json!({"content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}),
                );
            }
            "content_block_start" => {
                event.insert("content_block".into(), block);
            }
            "content_block_delta" => {
                event.insert("delta".into(), delta);
            }
            "message_delta" => {
                event.insert(
                    "delta".into(),
                    json!({"stop_reason": stop, "stop_sequence": null}),
                );
                event.insert("usage".into(), json!({"output_tokens": 7}));
            }
            "error" => {
                event.insert(
                    "error".into(),
                    json!({"type": "overloaded_error", "message": "Overloaded"}),
                );
            }
            _ => {}
        }
        (kind.to_owned(), Value::Object(event))
    })
}

#[test]
fn random_anthropic_event_sequences_never_panic() {
    let strategy = proptest::collection::vec(arb_anthropic_event(), 0..14)
        .prop_map(|events| {
            let mut body = String::new();
            for (name, event) in events {
                body.push_str(&format!("event: {name}\ndata: {event}\n\n"));
            }
            body.into_bytes()
        })
        .prop_flat_map(|body| {
            let len = body.len();
            (Just(body), cuts_for(len))
        });
    runner(256)
        .run(&strategy, |(body, cuts)| no_panic(&body, &cuts))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_response_survives_a_json_round_trip() {
    // The golden format: what `toolwire replay` prints reads back as the same response.
    for (path, provider) in stream_fixtures() {
        let body = std::fs::read(&path).expect("readable fixture");
        if let Outcome::Ok(r) = decode(provider.as_ref(), [body.as_slice()]) {
            let text = serde_json::to_string(&r.response).expect("serializes");
            let back: ChatResponse = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, r.response, "{}", path.display());
        }
    }
}

#[path = "support/stream.rs"]
mod stream;

#[test]
fn large_interleaved_arguments_are_byte_exact() {
    // 16 parallel calls, 4 KB of argument each, in 4-byte fragments that alternate between the
    // calls: every argument comes out byte for byte, and chunking still does not matter. Servers
    // that interleave are OpenAI-compatible ones (OpenAI's own ends a call at the next index).
    let (calls, arg_len) = (16, 4 * 1024);
    let body = stream::interleaved_calls(calls, arg_len, 4);
    let provider = toolwire::providers::openai::OpenAi::compatible();
    let whole = decode(&provider, [body.as_slice()]);
    let Outcome::Ok(r) = &whole else {
        panic!("the synthetic stream does not decode: {whole:?}");
    };
    assert_eq!(r.response.tool_calls.len(), calls);
    for (i, call) in r.response.tool_calls.iter().enumerate() {
        assert_eq!(call.raw_arguments, stream::argument(i, arg_len), "call {i}");
        assert!(call.is_complete(), "call {i}: {:?}", call.error);
    }
    check_events("interleaved", r).unwrap_or_else(|e| panic!("{e}"));
    let split = decode(&provider, body.chunks(1000));
    assert!(split == whole, "1000-byte chunks decode differently");
}

/// Where each call's `ToolCallComplete` and each call's `ToolCallStarted` come in the events.
fn completion_order(provider: &dyn Provider, case: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(case)
        .join("response.sse");
    let body = std::fs::read(&path).expect("readable fixture");
    let r = replay(provider, &body).expect("the fixture decodes");
    r.events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, .. } => Some(format!("start {index}")),
            StreamEvent::ToolCallComplete { index, .. } => Some(format!("complete {index}")),
            StreamEvent::Finish { .. } => Some("finish".to_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn calls_are_final_where_the_wire_ends_them() {
    use toolwire::providers::gemini::Gemini;
    use toolwire::providers::openai::OpenAi;
    let order = |p: &dyn Provider, case: &str| completion_order(p, case).join(", ");
    // OpenAI's own endpoint: a call is final when the next index starts.
    assert_eq!(
        order(&OpenAi::new(), "openai/stream_parallel_calls"),
        "start 0, start 1, complete 0, complete 1, finish"
    );
    assert_eq!(
        order(&OpenAi::new(), "openai/quirk_several_entries_one_chunk"),
        "start 0, start 1, complete 0, start 2, complete 1, complete 2, finish"
    );
    // Any other OpenAI-compatible server: at the end of the turn.
    assert_eq!(
        order(
            &OpenAi::compatible(),
            "openai/quirk_several_entries_one_chunk"
        ),
        "start 0, start 1, start 2, complete 0, complete 1, complete 2, finish"
    );
    // Gemini: a whole call is final as it arrives; streamed arguments at their last piece.
    assert_eq!(
        order(&Gemini::new(), "gemini/quirk_parallel_one_per_chunk"),
        "start 0, complete 0, start 1, complete 1, start 2, complete 2, finish"
    );
    // Gemini Interactions: a call is final at its `step.stop`.
    let interactions = toolwire::providers::gemini_interactions::GeminiInteractions::new();
    assert_eq!(
        order(&interactions, "gemini-interactions/stream_parallel_calls"),
        "start 0, complete 0, start 1, complete 1, finish"
    );
    let partial = order(&Gemini::new(), "gemini/quirk_partial_args");
    assert!(
        partial.starts_with("start 0, complete 0"),
        "gemini/quirk_partial_args: {partial}"
    );
}

/// A JSON object's text, with strings that hold braces, quotes, escapes and non-ASCII text.
fn arb_object_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<i32>().prop_map(|n| json!(n)),
        "[{}\\[\\]\"\\\\a-z北京 ]{0,8}".prop_map(Value::String),
    ];
    let value = leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z{}]{1,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::collection::btree_map("[a-z]{1,4}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()).to_string())
}

/// `text` cut at `cuts` (positions moved back to character boundaries).
fn split_text(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for c in cuts.into_iter().chain([text.len()]) {
        if c > start {
            out.push(text[start..c].to_owned());
            start = c;
        }
    }
    out
}

/// An OpenAI stream of calls whose fragments come in the given order of call indexes (each
/// call's first entry carries its id and name, with empty arguments or its first piece).
fn interleaved_stream(pieces: &[Vec<String>], order: &[usize], empty_first: bool) -> Vec<u8> {
    let chunk = |entry: Value| {
        let payload = json!({"choices": [{"index": 0, "delta": {"tool_calls": [entry]},
                                          "finish_reason": null}]});
        format!("data: {payload}\n\n")
    };
    let mut next = vec![0usize; pieces.len()];
    let mut body = String::new();
    for &call in order {
        let n = next[call];
        let entry = if n == 0 {
            let first = if empty_first {
                ""
            } else {
                pieces[call][0].as_str()
            };
            json!({"index": call, "id": format!("call_{call}"), "type": "function",
                   "function": {"name": format!("tool_{call}"), "arguments": first}})
        } else {
            let piece = &pieces[call][n - usize::from(empty_first)];
            json!({"index": call, "function": {"arguments": piece}})
        };
        next[call] += 1;
        body += &chunk(entry);
    }
    body += "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    body += "data: [DONE]\n\n";
    body.into_bytes()
}

/// OpenAI's own endpoint completes a call when the next index starts; whatever the
/// interleaving of several calls' fragments, no call is completed with arguments other than
/// the text the wire sent for it, and every call comes out exactly.
#[test]
fn random_interleavings_never_complete_a_call_early_with_other_arguments() {
    let call = (
        arb_object_text(),
        proptest::collection::vec(any::<usize>(), 0..6),
    );
    let strategy = (
        proptest::collection::vec(call, 1..5),
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 64),
    );
    let provider = toolwire::providers::openai::OpenAi::new();
    runner(256)
        .run(&strategy, |(calls, empty_first, picks)| {
            let texts: Vec<&String> = calls.iter().map(|(text, _)| text).collect();
            let pieces: Vec<Vec<String>> =
                calls.iter().map(|(t, cuts)| split_text(t, cuts)).collect();
            // Calls start in index order (a later index starts after the earlier ones did);
            // after that, fragments interleave as `picks` says.
            let counts: Vec<usize> = pieces
                .iter()
                .map(|p| p.len() + usize::from(empty_first))
                .collect();
            let mut left = counts.clone();
            let mut order = Vec::new();
            let mut opened = 0;
            let mut pick = picks.iter().cycle();
            while left.iter().any(|&n| n > 0) {
                let live: Vec<usize> = (0..left.len())
                    .filter(|&c| left[c] > 0 && c <= opened)
                    .collect();
                let c = live[usize::from(*pick.next().unwrap_or(&0)) % live.len()];
                opened = opened.max(c + 1);
                left[c] -= 1;
                order.push(c);
            }
            let body = interleaved_stream(&pieces, &order, empty_first);
            let r = match decode(&provider, [body.as_slice()]) {
                Outcome::Ok(r) => r,
                Outcome::Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            };
            prop_assert_eq!(r.response.tool_calls.len(), texts.len());
            for (i, call) in r.response.tool_calls.iter().enumerate() {
                prop_assert_eq!(&call.raw_arguments, texts[i], "call {}", i);
                prop_assert!(call.is_complete(), "call {}: {:?}", i, call.error);
            }
            check_events("interleaved", &r).map_err(TestCaseError::fail)?;
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A Gemini Interactions stream of calls (one `function_call` step each, its arguments as
/// `arguments_delta` fragments interleaved across steps in the given order of call indexes).
fn interactions_stream(pieces: &[Vec<String>], order: &[usize]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut event = |ty: &str, mut payload: Value| {
        payload["event_type"] = json!(ty);
        body.extend_from_slice(format!("event: {ty}\ndata: {payload}\n\n").as_bytes());
    };
    event(
        "interaction.created",
        json!({"interaction": {"id": "v1_p", "status": "in_progress"}}),
    );
    for (i, _) in pieces.iter().enumerate() {
        event(
            "step.start",
            json!({"index": i, "step": {"id": format!("c{i}"), "signature": "",
                   "type": "function_call", "name": "f", "arguments": {}}}),
        );
    }
    let mut next = vec![0; pieces.len()];
    for &c in order {
        let piece = &pieces[c][next[c]];
        next[c] += 1;
        event(
            "step.delta",
            json!({"index": c, "delta": {"type": "arguments_delta", "arguments": piece}}),
        );
    }
    for (i, _) in pieces.iter().enumerate() {
        event("step.stop", json!({"index": i}));
    }
    event(
        "interaction.completed",
        json!({"interaction": {"id": "v1_p", "status": "requires_action"}}),
    );
    body
}

/// Gemini Interactions: whatever the fragments of each call's `arguments_delta` and however
/// the steps interleave and the bytes are cut, each call's `ToolCallDelta` fragments are its
/// fragments in order and its `raw_arguments` their exact concatenation.
#[test]
fn interactions_arguments_are_their_fragments_in_order() {
    let call = (
        arb_object_text(),
        proptest::collection::vec(any::<usize>(), 0..6),
    );
    let strategy = (
        proptest::collection::vec(call, 1..4),
        proptest::collection::vec(any::<u8>(), 32),
        proptest::collection::vec(any::<usize>(), 0..8),
    );
    let provider = toolwire::providers::gemini_interactions::GeminiInteractions::new();
    runner(128)
        .run(&strategy, |(calls, picks, cuts)| {
            let parts: Vec<Vec<String>> =
                calls.iter().map(|(t, cuts)| split_text(t, cuts)).collect();
            let mut left: Vec<usize> = parts.iter().map(Vec::len).collect();
            let mut order = Vec::new();
            let mut pick = picks.iter().cycle();
            while left.iter().any(|&n| n > 0) {
                let live: Vec<usize> = (0..left.len()).filter(|&c| left[c] > 0).collect();
                let c = live[usize::from(*pick.next().unwrap_or(&0)) % live.len()];
                left[c] -= 1;
                order.push(c);
            }
            let body = interactions_stream(&parts, &order);
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let r = match decode(&provider, pieces(&body, &cuts)) {
                Outcome::Ok(r) => r,
                Outcome::Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
            };
            prop_assert_eq!(r.response.tool_calls.len(), parts.len());
            for (i, call) in r.response.tool_calls.iter().enumerate() {
                let fragments: Vec<&str> = r
                    .events
                    .iter()
                    .filter_map(|e| match e {
                        StreamEvent::ToolCallDelta { index, fragment } if *index == i => {
                            Some(fragment.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                let sent: Vec<&str> = parts[i]
                    .iter()
                    .map(String::as_str)
                    .filter(|p| !p.is_empty())
                    .collect();
                prop_assert_eq!(&fragments, &sent, "call {}", i);
                prop_assert_eq!(&call.raw_arguments, &calls[i].0, "call {}", i);
                prop_assert!(call.is_complete(), "call {}: {:?}", i, call.error);
                prop_assert_eq!(&call.id, &format!("c{i}"));
            }
            check_events("interactions", &r).map_err(TestCaseError::fail)?;
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A case's name, provider, the request its answer is read for, and its stream.
type TextCallCase = (String, Box<dyn Provider>, HttpRequest, Vec<u8>);

/// Every `text_calls_*` case: its provider (as its `base_url` picks it), the request its
/// answer is read for, and its stream.
fn text_call_cases() -> Vec<TextCallCase> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for case in conformance::case_dirs(&root).expect("fixtures/ is readable") {
        let name = case
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with("text_calls_") {
            continue;
        }
        let Some(body) = conformance::STREAM_FILES
            .iter()
            .map(|f| case.join(f))
            .find(|p| p.is_file())
        else {
            continue;
        };
        let meta = conformance::load_meta(&case).expect("meta.toml reads");
        let kind = conformance::case_provider(&case, Some(&meta)).expect("a provider");
        let provider = toolwire::providers::provider_for_base_url(kind, meta.base_url.as_deref())
            .expect("a built-in provider");
        let request: ChatRequest =
            serde_json::from_slice(&std::fs::read(case.join("request.json")).expect("request"))
                .expect("request.json is a ChatRequest");
        assert!(
            request.text_calls.is_some(),
            "{name}: request.json sets text_calls"
        );
        let http = provider
            .encode(&request, true)
            .expect("the request encodes");
        let body = std::fs::read(&body).expect("readable fixture");
        out.push((name, provider, http, body));
    }
    assert!(out.len() >= 30, "text_calls_* cases found: {}", out.len());
    out
}

/// What a turn read for its request gave: events and response, or the error's golden JSON.
type Answer = Result<(Vec<StreamEvent>, ChatResponse), Value>;

fn answer<'a>(
    provider: &dyn Provider,
    request: &HttpRequest,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Answer {
    let mut reader = toolwire::turn::TurnReader::for_request(provider, request);
    let mut events = Vec::new();
    for chunk in chunks {
        reader
            .push(chunk, &mut events)
            .map_err(|e| error_json(&e))?;
    }
    let response = reader.finish(&mut events).map_err(|e| error_json(&e))?;
    Ok((events, response))
}

/// The answer text and finish reason a Chat Completions stream carries.
fn content_and_finish(body: &[u8]) -> (String, String) {
    let mut text = String::new();
    let mut finish = String::from("stop");
    for line in String::from_utf8_lossy(body).lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let choice = &chunk["choices"][0];
        if let Some(c) = choice["delta"]["content"].as_str() {
            text.push_str(c);
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
    }
    (text, finish)
}

/// A Chat Completions stream whose content arrives in these pieces.
fn content_stream(pieces: &[&str], finish: &str) -> Vec<u8> {
    let mut body = String::new();
    for piece in pieces {
        let chunk =
            json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    body.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    body.into_bytes()
}

/// Events with adjacent text deltas, and adjacent argument deltas of one call, joined: what
/// any chunking must agree on.
fn joined(events: &[StreamEvent]) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(StreamEvent::TextDelta { text: a }), StreamEvent::TextDelta { text: b }) => {
                a.push_str(b)
            }
            (
                Some(StreamEvent::ToolCallDelta {
                    index: i,
                    fragment: a,
                }),
                StreamEvent::ToolCallDelta {
                    index: j,
                    fragment: b,
                },
            ) if i == j => a.push_str(b),
            _ => out.push(e.clone()),
        }
    }
    out
}

fn same_story(name: &str, how: &str, got: &Answer, want: &Answer) {
    match (got, want) {
        (Ok((ge, gr)), Ok((we, wr))) => {
            assert_eq!(gr, wr, "{name}: {how}: another response");
            assert_eq!(joined(ge), joined(we), "{name}: {how}: other events");
        }
        _ => assert!(got == want, "{name}: {how}: {got:?} != {want:?}"),
    }
}

#[test]
fn text_calls_are_the_same_in_any_chunking() {
    for (name, provider, request, body) in text_call_cases() {
        let provider = provider.as_ref();
        let whole = answer(provider, &request, [body.as_slice()]);
        // `replay_answer` (what `toolwire replay --text-calls` runs) reads it the same.
        let r = replay_answer(provider, Some(&request), &body).expect("the case decodes");
        assert!(
            whole
                .as_ref()
                .is_ok_and(|(e, resp)| *e == r.events && *resp == r.response),
            "{name}: replay_answer differs"
        );
        check_events(&name, &r).unwrap_or_else(|p| panic!("{p}"));
        // No marker reaches the text.
        let text = r.response.text.clone().unwrap_or_default();
        if !r.response.tool_calls.is_empty() {
            for marker in [
                "<tool_call>",
                "</tool_call>",
                "<function=",
                "[TOOL_CALLS]",
                "[ARGS]",
                "<|python_tag|>",
                "<arg_key>",
                "<|tool_call_begin|>",
                "<｜tool▁call▁begin｜>",
                "<｜tool▁sep｜>",
            ] {
                assert!(
                    !text.contains(marker),
                    "{name}: {marker} in the text {text:?}"
                );
            }
        }
        // Bytes: one at a time, and cut in two at every 7th byte (byte cuts only move SSE
        // framing; the text cuts below are what move markers).
        same_story(
            &name,
            "one byte at a time",
            &answer(provider, &request, body.chunks(1)),
            &whole,
        );
        for cut in (1..body.len()).step_by(7) {
            let split = answer(provider, &request, [&body[..cut], &body[cut..]]);
            assert!(split == whole, "{name}: cut at byte {cut} differs");
        }
        // Text: the answer re-streamed in two pieces at every character boundary, and one
        // character per chunk; markers and names split every way (Chat Completions cases).
        if !body.starts_with(b"data:") {
            continue;
        }
        let (content, finish) = content_and_finish(&body);
        let base = answer(
            provider,
            &request,
            [content_stream(&[&content], &finish).as_slice()],
        );
        same_story(&name, "the text in one piece", &base, &whole);
        for (i, _) in content.char_indices().skip(1) {
            let pieces = [&content[..i], &content[i..]];
            let split = answer(
                provider,
                &request,
                [content_stream(&pieces, &finish).as_slice()],
            );
            same_story(&name, &format!("text cut at {i}"), &split, &whole);
        }
        let chars: Vec<String> = content.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        let singles = answer(
            provider,
            &request,
            [content_stream(&chars, &finish).as_slice()],
        );
        same_story(&name, "one character per chunk", &singles, &whole);
    }
}

/// The setting travels to the reading side on the wires that carry open models, and every
/// other wire refuses it (it would silently do nothing there).
#[test]
fn only_open_model_wires_take_text_calls() {
    use toolwire::{Error, Message, TextCallFormat, ToolDefinition};
    let tool = ToolDefinition::new("get_weather", "")
        .and_then(|t| t.with_parameters(json!({"type": "object"})))
        .expect("a valid tool");
    let req = ChatRequest::new("m", vec![Message::user("hi")])
        .with_tools([tool])
        .with_text_calls(TextCallFormat::Glm);
    for kind in [
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::Qwen,
    ] {
        let provider = provider_for(kind).expect("built in");
        let http = provider.encode(&req, true).expect("encodes");
        let calls = http.text_calls.expect("carried to the reading side");
        assert_eq!(calls.format(), TextCallFormat::Glm);
        assert!(calls.schema("get_weather").is_some());
    }
    for kind in [
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::DashScope,
        ProviderKind::OpenAiResponses,
        ProviderKind::Cohere,
        ProviderKind::Bedrock,
        ProviderKind::GeminiInteractions,
    ] {
        let provider = provider_for(kind).expect("built in");
        let err = provider.encode(&req, true).expect_err("refused");
        assert!(matches!(err, Error::Unsupported { .. }), "{kind}: {err}");
    }
}
