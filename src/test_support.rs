//! Test helpers shared by the providers' writer tests (`respond.rs`): sample responses every
//! writer must give back through its own decoder, and checks that a writer's streams have the
//! shapes the provider's fixtures record.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::replay::replay;
use crate::types::{ChatResponse, FinishReason, ToolCall, Usage};

fn minted(id: &str, name: &str, raw: &str) -> ToolCall {
    let mut c = ToolCall::new(id, name, raw);
    c.extra
        .insert(ToolCall::SYNTHETIC_ID.into(), Value::Bool(true));
    c
}

/// Responses every encoder must give back through its own decoder.
pub(crate) fn samples() -> Vec<(&'static str, ChatResponse)> {
    let usage = Some(Usage {
        input_tokens: 12,
        output_tokens: 30,
        reasoning_tokens: Some(4),
        ..Default::default()
    });
    let text = |text: &str, finish_reason| ChatResponse {
        text: Some(text.into()),
        finish_reason,
        usage,
        ..ChatResponse::default()
    };
    vec![
        (
            "text",
            text("Hello, 北京 — it's 22 °C.", FinishReason::Stop),
        ),
        (
            "parallel calls",
            ChatResponse {
                reasoning: Some("Two cities, two calls.".into()),
                tool_calls: vec![
                    ToolCall::new("call_tw_1", "get_weather", r#"{"city":"Paris","unit":"c"}"#),
                    ToolCall::new(
                        "call_tw_2",
                        "get_weather",
                        r#"{"city": "北京", "q": "a\"b"}"#,
                    ),
                ],
                finish_reason: FinishReason::ToolCalls,
                usage,
                ..ChatResponse::default()
            },
        ),
        (
            "zero-arg call",
            ChatResponse {
                text: Some("Checking the time.".into()),
                tool_calls: vec![ToolCall::new("call_tw_3", "clock", "")],
                finish_reason: FinishReason::ToolCalls,
                usage: Some(Usage {
                    input_tokens: 9,
                    output_tokens: 3,
                    reasoning_tokens: None,
                    ..Default::default()
                }),
                ..ChatResponse::default()
            },
        ),
        (
            // No usage either: nothing is invented for it.
            "minted ids",
            ChatResponse {
                tool_calls: vec![
                    minted("call_0", "clock", "{}"),
                    minted("call_1", "get_weather", r#"{"city":"Oslo"}"#),
                ],
                finish_reason: FinishReason::ToolCalls,
                ..ChatResponse::default()
            },
        ),
        (
            "cut short",
            ChatResponse {
                text: Some("Let me look.".into()),
                tool_calls: vec![ToolCall::new_cut_short(
                    "call_tw_4",
                    "get_weather",
                    r#"{"city":"Pa"#,
                )],
                finish_reason: FinishReason::Length,
                usage,
                ..ChatResponse::default()
            },
        ),
        (
            "content filter",
            text("I can't", FinishReason::ContentFilter),
        ),
        ("failed", text("The weather in", FinishReason::Error)),
        (
            "unknown finish",
            text("ok", FinishReason::Other("brand_new_reason".into())),
        ),
    ]
}

/// Decoding what `p` encodes gives back every sample, as a body and as a stream.
pub(crate) fn assert_round_trips(p: &dyn crate::provider::Respond) {
    let kind = p.info().kind;
    for (name, response) in samples() {
        let body = p.encode_response(&response, false).unwrap();
        let expected = with_raw_finish(&response, &body);
        assert_eq!(
            counts_only(p.decode(&body).unwrap()),
            expected,
            "{kind} {name}: body"
        );
        let sse = p.encode_response(&response, true).unwrap();
        let replayed = replay(p, &sse).unwrap();
        let expected = with_raw_finish(&response, &sse);
        assert_eq!(
            counts_only(replayed.response),
            expected,
            "{kind} {name}: stream"
        );
        assert!(sse.ends_with(b"data: [DONE]\n\n"), "{kind} {name}");
    }
}

/// A decoded response with its `raw_usage` dropped, for comparing with a scripted one (a
/// writer writes the counts; the raw report is the wire's own). Checks it came beside the
/// counts.
pub(crate) fn counts_only(mut decoded: ChatResponse) -> ChatResponse {
    assert_eq!(
        decoded.raw_usage.is_some(),
        decoded.usage.is_some(),
        "raw_usage comes exactly with usage"
    );
    decoded.raw_usage = None;
    decoded
}

/// `response` as it decodes from `wire`: its `raw_finish_reason` is the one `finish_reason`
/// value the mock provider wrote there.
pub(crate) fn with_raw_finish(response: &ChatResponse, wire: &[u8]) -> ChatResponse {
    let text = String::from_utf8_lossy(wire);
    let values: std::collections::BTreeSet<&str> = text
        .match_indices("\"finish_reason\":\"")
        .filter_map(|(at, key)| text[at + key.len()..].split('"').next())
        .filter(|v| !v.is_empty() && *v != "null")
        .collect();
    assert_eq!(values.len(), 1, "one finish value in {text}");
    ChatResponse {
        raw_finish_reason: values.first().map(|v| (*v).to_owned()),
        ..response.clone()
    }
}

/// The JSON chunks of a stream, `[DONE]` left out.
pub(crate) fn chunks(sse: &[u8]) -> Vec<Value> {
    crate::sse::parse_all(sse)
        .unwrap()
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect()
}

/// The key sets found in a stream, each with where it was: chunk, choice, delta, call,
/// function.
fn key_sets(chunks: &[Value]) -> BTreeSet<(&'static str, Vec<String>)> {
    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect();
        k.sort();
        k
    }
    let mut out = BTreeSet::new();
    for chunk in chunks {
        out.insert(("chunk", keys(chunk)));
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            out.insert(("choice", keys(choice)));
            let delta = &choice["delta"];
            out.insert(("delta", keys(delta)));
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                out.insert(("call", keys(call)));
                out.insert(("function", keys(&call["function"])));
            }
        }
    }
    out
}

/// Every object in the streams `p` writes for the samples has a key set that the
/// provider's stream fixtures show at the same place: the mock speaks the shapes the
/// fixtures document, field for field. Samples with minted ids or without usage are left
/// out: the services these fixtures record always send both.
pub(crate) fn assert_streams_match_fixtures(p: &dyn crate::provider::Respond, provider_dir: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(provider_dir);
    let mut seen = BTreeSet::new();
    for case in std::fs::read_dir(&dir).unwrap() {
        let path = case.unwrap().path().join("response.sse");
        if let Ok(body) = std::fs::read(&path) {
            let recorded: Vec<Value> = chunks(&body)
                .into_iter()
                .filter(|c| c.get("error").is_none())
                .collect();
            seen.extend(key_sets(&recorded));
        }
    }
    assert!(!seen.is_empty(), "no stream fixtures in {}", dir.display());
    for (name, response) in samples() {
        if response.usage.is_none() || response.tool_calls.iter().any(ToolCall::has_synthetic_id) {
            continue;
        }
        let ours = chunks(&p.encode_response(&response, true).unwrap());
        for (place, keys) in key_sets(&ours) {
            assert!(
                seen.contains(&(place, keys.clone())),
                "{provider_dir} {name}: no fixture has a {place} with keys {keys:?}"
            );
        }
    }
}

/// The stream `p` writes for the sample called `name`, as JSON chunks.
pub(crate) fn sample_chunks(p: &dyn crate::provider::Respond, name: &str) -> Vec<Value> {
    let (_, response) = samples().into_iter().find(|(n, _)| *n == name).unwrap();
    chunks(&p.encode_response(&response, true).unwrap())
}

/// A streamed turn the gateway writers' tests replay: text in two pieces, then two `search`
/// calls with ids `{prefix}a` and `{prefix}b`, each call's arguments in two fragments; and the
/// response it adds up to.
pub(crate) fn sample_stream(prefix: &str) -> (ChatResponse, Vec<crate::types::StreamEvent>) {
    use crate::types::StreamEvent;
    let calls = vec![
        ToolCall::new(format!("{prefix}a"), "search", r#"{"q":"rust"}"#),
        ToolCall::new(format!("{prefix}b"), "search", r#"{"q":"go"}"#),
    ];
    let response = ChatResponse::default()
        .with_text("Looking.")
        .with_tool_calls(calls.clone())
        .with_finish_reason(FinishReason::ToolCalls)
        .with_usage(Usage::new(3, 5));
    let mut events = vec![
        StreamEvent::TextDelta {
            text: "Look".into(),
        },
        StreamEvent::TextDelta {
            text: "ing.".into(),
        },
    ];
    for (i, c) in calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStarted {
            index: i,
            id: Some(c.id.clone()),
            name: c.name.clone(),
        });
        for piece in [&c.raw_arguments[..4], &c.raw_arguments[4..]] {
            events.push(StreamEvent::ToolCallDelta {
                index: i,
                fragment: piece.into(),
            });
        }
        events.push(StreamEvent::ToolCallComplete {
            index: i,
            call: c.clone(),
        });
    }
    (response, events)
}
