//! The floor: the simplest correct program for reading a streamed OpenAI turn's tool calls.
//! Split SSE lines with `memchr`, parse each `data:` payload with serde_json into borrowed
//! structs, append each call's argument text. No limits, no events, no error recovery, no
//! name mapping: what any reader must at least do, so toolwire's path is measured against it.

use std::borrow::Cow;

use serde::Deserialize;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    tool_calls: Vec<Call<'a>>,
}

#[derive(Deserialize)]
struct Call<'a> {
    index: usize,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// Each call's argument text, by wire index.
pub(crate) fn floor(body: &[u8]) -> Vec<String> {
    let mut calls: Vec<String> = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        let Some(payload) = line.strip_prefix(b"data:") else {
            continue;
        };
        let payload = payload.strip_prefix(b" ").unwrap_or(payload);
        if payload == b"[DONE]" {
            break;
        }
        let Ok(chunk) = serde_json::from_slice::<Chunk<'_>>(payload) else {
            continue;
        };
        for choice in chunk.choices {
            for call in choice.delta.map(|d| d.tool_calls).unwrap_or_default() {
                if calls.len() <= call.index {
                    calls.resize(call.index + 1, String::new());
                }
                if let Some(args) = call.function.and_then(|f| f.arguments) {
                    calls[call.index].push_str(&args);
                }
            }
        }
    }
    calls
}
