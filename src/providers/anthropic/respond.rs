//! The canonical response → the bytes the Messages API would send, for the mock provider: a
//! `Message` body, or its event stream (`event:` + `data:` frames: `message_start`, one
//! `content_block_start` / `_delta`s / `_stop` run per block, a `ping` after the first block
//! starts, `message_delta` with the stop reason and usage, `message_stop`), written by the
//! gateway's [`EventWriter`] speaking as Anthropic ([`EventWriter::native`]) from the answer's
//! events ([`segments`] cut by `split::cut`). An error without a status answering a stream is
//! an `error` event after whatever the partial response holds.

use serde_json::{Map, Value, json};

use super::{
    CACHE_CREATION_INPUT_TOKENS, CACHE_READ_INPUT_TOKENS, STOP_DETAILS, STOP_SEQUENCE,
    THINKING_BLOCKS,
};
use crate::error::{ApiError, Error, Result};
use crate::provider::ProviderKind;
use crate::provider::StreamWriter;
use crate::providers::hosted::{Piece, interleave};
use crate::providers::shared::carry_id;
use crate::providers::split::{Cut, Segment, cut};

use super::gateway::EventWriter;
use crate::types::{ChatResponse, FinishReason, HostedCall, Usage};

/// Longest text or argument piece of one delta, in characters.
const PIECE_CHARS: usize = 24;

/// The signature sent on a thinking block made up from reasoning text that came without one.
const MOCK_SIGNATURE: &str = "dG9vbHdpcmUtbW9jay1zaWduYXR1cmU=";

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(ProviderKind::Anthropic, what)
}

impl crate::provider::Respond for super::Anthropic {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        if stream {
            native_stream(response)
        } else {
            whole_body(response)
        }
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        encode_error(error, stream)
    }
}

/// The wire `stop_reason`: the response's raw finish value when it still means the same
/// canonical reason, else the usual spelling of the canonical one; a reason this wire has no
/// name for goes out as it is (the stop reasons grow: `model_context_window_exceeded`,
/// `pause_turn`), never as `end_turn`. The one spelling of the mock and the gateway.
pub(super) fn stop_reason(r: &ChatResponse) -> Result<String> {
    if let Some(kept) = r.raw_finish_reason.as_deref() {
        let same = match (super::decode::finish_reason(kept), &r.finish_reason) {
            (FinishReason::Stop | FinishReason::ToolCalls, reason) => reason.is_normal_end(),
            (decoded, reason) => &decoded == reason,
        };
        if same {
            return Ok(kept.to_owned());
        }
    }
    Ok(match &r.finish_reason {
        FinishReason::Stop => "end_turn".into(),
        FinishReason::ToolCalls => "tool_use".into(),
        FinishReason::Length => "max_tokens".into(),
        FinishReason::ContentFilter => "refusal".into(),
        FinishReason::Pause => "pause_turn".into(),
        FinishReason::Other(s) => s.clone(),
        FinishReason::Error => {
            return Err(unsupported(
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

fn count(u: Option<u64>, extra: &Map<String, Value>, key: &str) -> Option<u64> {
    u.or_else(|| extra.get(key).and_then(Value::as_u64))
}

/// `usage` as the wire counts it: uncached input apart from the cache parts, each cache part
/// written when it is known (the canonical usage, else the response's `extra`).
pub(super) fn usage_json(u: &Usage, extra: &Map<String, Value>, output: bool) -> Value {
    let created = count(
        u.cache_creation_input_tokens,
        extra,
        CACHE_CREATION_INPUT_TOKENS,
    );
    let read = count(u.cached_input_tokens, extra, CACHE_READ_INPUT_TOKENS);
    let mut m = Map::new();
    m.insert(
        "input_tokens".into(),
        json!(
            u.input_tokens
                .saturating_sub(created.unwrap_or(0))
                .saturating_sub(read.unwrap_or(0))
        ),
    );
    if let Some(n) = created {
        m.insert("cache_creation_input_tokens".into(), json!(n));
    }
    if let Some(n) = read {
        m.insert("cache_read_input_tokens".into(), json!(n));
    }
    m.insert(
        "output_tokens".into(),
        json!(if output { u.output_tokens } else { 0 }),
    );
    Value::Object(m)
}

fn thinking_of(extra: &Map<String, Value>) -> Vec<Value> {
    extra
        .get(THINKING_BLOCKS)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Who an answer is written for: its `id` and `model`, and whether it was translated from
/// another wire (the gateway's answers) rather than scripted for this one (the mock's).
#[derive(Debug, Clone, Copy)]
pub(super) struct Stamp<'a> {
    /// The message id.
    pub(super) id: &'a str,
    /// The model name the client sees.
    pub(super) model: &'a str,
    /// Translated from another wire: call ids carry the call's provider state ([`carry_id`]),
    /// arguments that are not an object go out as `{}`, and reasoning that came without a
    /// signature keeps an empty one.
    pub(super) translated: bool,
    /// The key sealing the state call ids carry (translated answers).
    pub(super) seal: Option<&'a crate::seal::Seal>,
}

/// The mock's own values.
const MOCK: Stamp<'static> = Stamp {
    id: "msg_toolwire_mock",
    model: "toolwire-mock",
    translated: false,
    seal: None,
};

/// The response's blocks in wire order: thinking, text, then each call after its own thinking
/// blocks. Reasoning without blocks becomes one thinking block.
fn blocks(r: &ChatResponse, stamp: &Stamp<'_>) -> Vec<Value> {
    let mut out = thinking_of(&r.extra);
    if out.is_empty()
        && let Some(reasoning) = r.reasoning.as_deref().filter(|t| !t.is_empty())
    {
        let signature = if stamp.translated { "" } else { MOCK_SIGNATURE };
        out.push(json!({"type": "thinking", "thinking": reasoning, "signature": signature}));
    }
    // Text, with the server tool blocks of calls made on this wire in their places (another
    // wire's hosted calls have no blocks here).
    let own: Vec<HostedCall> = (r.hosted_calls.iter())
        .filter(|c| c.wire == ProviderKind::Anthropic.name())
        .cloned()
        .collect();
    for piece in interleave(r.text.as_deref(), &own) {
        match piece {
            Piece::Text(text) => out.push(json!({"type": "text", "text": text})),
            Piece::Hosted(call) => {
                out.extend(call.blocks.iter().filter(|b| b.is_object()).cloned())
            }
        }
    }
    for call in &r.tool_calls {
        out.extend(thinking_of(&call.extra));
        let id = if stamp.translated {
            carry_id(call, stamp.seal)
        } else {
            call.id.clone()
        };
        let input = call
            .arguments
            .clone()
            .filter(|a| a.is_object() || !stamp.translated)
            .unwrap_or_else(|| json!({}));
        out.push(json!({"type": "tool_use", "id": id, "name": call.name, "input": input}));
    }
    out
}

fn message(
    r: &ChatResponse,
    stamp: &Stamp<'_>,
    content: Vec<Value>,
    stop: Option<&str>,
    output: bool,
) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(stamp.id));
    m.insert("type".into(), json!("message"));
    m.insert("role".into(), json!("assistant"));
    m.insert("model".into(), json!(stamp.model));
    m.insert("content".into(), Value::Array(content));
    m.insert("stop_reason".into(), json!(stop));
    m.insert(
        "stop_sequence".into(),
        json!(r.extra.get(STOP_SEQUENCE).filter(|_| stop.is_some())),
    );
    if let (Some(details), Some(_)) = (r.extra.get(STOP_DETAILS), stop) {
        m.insert("stop_details".into(), details.clone());
    }
    let usage = r.usage.unwrap_or_default();
    m.insert("usage".into(), usage_json(&usage, &r.extra, output));
    Value::Object(m)
}

fn whole_body(r: &ChatResponse) -> Result<Vec<u8>> {
    for (i, call) in r.tool_calls.iter().enumerate() {
        if !call.is_complete() {
            return Err(unsupported(format!(
                "tool_calls[{i}] has unusable arguments; a whole Messages body only carries \
                 argument objects"
            )));
        }
    }
    Ok(body(r, &MOCK)?.to_string().into_bytes())
}

/// A whole `message` body: the one body writer of this wire, the mock's and the gateway's.
pub(super) fn body(r: &ChatResponse, stamp: &Stamp<'_>) -> Result<Value> {
    let stop = stop_reason(r)?;
    Ok(message(r, stamp, blocks(r, stamp), Some(&stop), true))
}

/// The layout of a scripted answer as this wire streams it: its opening thinking blocks (or
/// its reasoning as one signed block), the text with its server tool calls in their places,
/// then each call after its own thinking blocks.
fn segments(r: &ChatResponse) -> Vec<Segment<'_>> {
    fn thinking<'a>(extra: &'a Map<String, Value>, out: &mut Vec<Segment<'a>>) {
        let blocks = extra.get(THINKING_BLOCKS).and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            let field = |key: &str| block.get(key).and_then(Value::as_str);
            match field("type") {
                Some("thinking") => out.push(Segment::Reasoning {
                    text: field("thinking").unwrap_or(""),
                    signature: Some(field("signature").unwrap_or("")),
                }),
                Some("redacted_thinking") => {
                    out.push(Segment::Redacted(field("data").unwrap_or("")));
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    thinking(&r.extra, &mut out);
    if out.is_empty()
        && let Some(reasoning) = r.reasoning.as_deref().filter(|t| !t.is_empty())
    {
        out.push(Segment::Reasoning {
            text: reasoning,
            signature: Some(MOCK_SIGNATURE),
        });
    }
    // The text, with the server tool calls made on this wire in their places (another wire's
    // hosted calls have no blocks here).
    let own: Vec<HostedCall> = (r.hosted_calls.iter())
        .filter(|c| c.wire == ProviderKind::Anthropic.name())
        .cloned()
        .collect();
    let mut text = 0;
    for piece in interleave(r.text.as_deref(), &own) {
        match piece {
            Piece::Text(t) => {
                let from = text;
                text += t.len();
                out.push(Segment::Text(
                    r.text.as_deref().map_or("", |all| &all[from..text]),
                ));
            }
            Piece::Hosted(call) => {
                if let Some((index, c)) =
                    (r.hosted_calls.iter().enumerate()).find(|(_, c)| *c == call)
                {
                    out.push(Segment::Hosted {
                        index,
                        name: &c.name,
                    });
                }
            }
        }
    }
    for (index, call) in r.tool_calls.iter().enumerate() {
        thinking(&call.extra, &mut out);
        // An empty input streams no fragment after the empty one the writer opens with.
        let arguments = match call.raw_arguments.as_str() {
            "{}" => "",
            raw => raw,
        };
        out.push(Segment::Call {
            index,
            call,
            arguments,
        });
    }
    out
}

/// Pieces of text and arguments as this wire's mock streams them: up to 24 characters; every
/// `tool_use` has an id.
const CUT: Cut = Cut {
    text: PIECE_CHARS,
    arguments: PIECE_CHARS,
    every_id: true,
};

/// The stream of a scripted answer: its events ([`segments`], cut by the shared splitter)
/// written by the gateway's writer speaking as Anthropic itself.
fn native_stream(r: &ChatResponse) -> Result<Vec<u8>> {
    stop_reason(r)?;
    let mut out = Vec::new();
    let mut w = EventWriter::native(r, MOCK.id, MOCK.model);
    w.start(&mut out);
    w.events(&cut(&segments(r), r.usage, CUT), &mut out);
    w.finish(r, &mut out);
    Ok(out)
}

/// The error types Anthropic documents (<https://docs.claude.com/en/api/errors>).
const ERROR_TYPES: &[&str] = &[
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
];

/// The error type Anthropic names for an HTTP status (its errors page,
/// <https://docs.claude.com/en/api/errors>: 402 `billing_error`, 413 `request_too_large`, 504
/// `timeout_error`, 529 `overloaded_error`, `api_error` for any other fault of the server).
fn error_type(status: Option<u16>) -> &'static str {
    match status {
        Some(400) => "invalid_request_error",
        Some(401) => "authentication_error",
        Some(402) => "billing_error",
        Some(403) => "permission_error",
        Some(404) => "not_found_error",
        Some(413) => "request_too_large",
        Some(429) => "rate_limit_error",
        Some(504) => "timeout_error",
        Some(529) | None => "overloaded_error",
        _ => "api_error",
    }
}

/// The `error` object of `error`: its code when that is one of Anthropic's documented types
/// (an upstream Anthropic error, a scripted one), else the type its status names. The one error
/// writer of this wire: bodies, and the `error` event of a stream that fails.
pub(super) fn error_json(error: &ApiError) -> Value {
    let kind = error
        .code
        .as_deref()
        .filter(|c| ERROR_TYPES.contains(c))
        .unwrap_or_else(|| error_type(error.status));
    json!({"type": "error", "error": {"type": kind, "message": error.message}})
}

/// The status and body for `error`: `{"type": "error", "error": {"type", "message"},
/// "request_id"}`; without a status, answering a stream, an `error` event inside a 200 stream
/// after the content of its partial response.
pub(crate) fn encode_error(error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let mut body = error_json(error);
    match error.status {
        // The partial answer streamed as far as it got, then the `error` event (the
        // streaming guide's "Error events", <https://docs.anthropic.com/en/docs/build-with-claude/streaming>).
        None if stream => {
            let partial = error.partial.as_deref().cloned().unwrap_or_default();
            let mut out = Vec::new();
            let mut w = EventWriter::native(&partial, MOCK.id, MOCK.model);
            w.start(&mut out);
            w.events(&cut(&segments(&partial), partial.usage, CUT), &mut out);
            w.fail(error, &mut out);
            (200, out)
        }
        status => {
            body["request_id"] = json!("req_toolwire_mock");
            (status.unwrap_or(500), body.to_string().into_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    #[allow(unused_imports)]
    use crate::provider::Respond;
    use crate::providers::anthropic::Anthropic;
    use crate::replay::replay;
    use crate::types::ToolCall;

    fn sample() -> ChatResponse {
        let mut first = ToolCall::new("toolu_tw_1", "get_weather", r#"{"city":"Lyon"}"#);
        first.extra.insert(
            THINKING_BLOCKS.into(),
            json!([{"type": "thinking", "thinking": " Then the clock.", "signature": "c2lnLTI="}]),
        );
        let second = ToolCall::new("toolu_tw_2", "get_time", "{}");
        let mut r = ChatResponse {
            text: Some("Checking the weather and the time for you, one moment please.".into()),
            reasoning: Some("The user wants two facts. Then the clock.".into()),
            tool_calls: vec![first, second],
            hosted_calls: Vec::new(),
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 31,
                reasoning_tokens: None,
                cached_input_tokens: Some(30),
                ..Default::default()
            }),
            raw_finish_reason: None,
            raw_usage: None,
            extra: Map::new(),
        };
        r.extra.insert(
            THINKING_BLOCKS.into(),
            json!([{"type": "thinking", "thinking": "The user wants two facts.", "signature": "c2lnLTE="},
                   {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="}]),
        );
        r.raw_finish_reason = Some("tool_use".into());
        r.extra.insert(CACHE_READ_INPUT_TOKENS.into(), json!(30));
        r
    }

    /// One writer: the mock's stream is the gateway's writer speaking as Anthropic, with the
    /// `ping` after the first block's start and the input counts in `message_start`, as the
    /// streaming guide's example shows
    /// (<https://docs.anthropic.com/en/docs/build-with-claude/streaming>); the gateway's
    /// `message_delta` carries the stop sequence that ended the turn, as the body does.
    #[test]
    fn the_mock_streams_as_anthropic_and_the_gateway_keeps_the_stop_sequence() {
        let mut answer = sample();
        answer.tool_calls.clear();
        answer.finish_reason = FinishReason::Stop;
        answer.raw_finish_reason = Some("stop_sequence".into());
        answer.extra.insert(STOP_SEQUENCE.into(), json!("END"));
        let frames = |bytes: &[u8]| -> Vec<Value> {
            String::from_utf8_lossy(bytes)
                .split("\n\n")
                .filter_map(|f| f.split("data: ").nth(1))
                .map(|d| serde_json::from_str(d).unwrap())
                .collect()
        };
        let mock = frames(&Anthropic::new().encode_response(&answer, true).unwrap());
        assert_eq!(mock[0]["message"]["usage"]["input_tokens"], 10);
        assert_eq!(mock[0]["message"]["usage"]["cache_read_input_tokens"], 30);
        assert_eq!(mock[1]["type"], "content_block_start");
        assert_eq!(mock[2]["type"], "ping");
        assert_eq!(mock.iter().filter(|f| f["type"] == "ping").count(), 1);
        let mut gateway = Vec::new();
        let mut w = EventWriter::new("msg_1", "m");
        w.start(&mut gateway);
        w.events(
            &crate::providers::split::events(&answer, crate::providers::split::FINE),
            &mut gateway,
        );
        w.finish(&answer, &mut gateway);
        for stream in [mock, frames(&gateway)] {
            let delta = stream
                .iter()
                .find(|f| f["type"] == "message_delta")
                .unwrap();
            assert_eq!(delta["delta"]["stop_reason"], "stop_sequence");
            assert_eq!(delta["delta"]["stop_sequence"], "END");
        }
    }

    #[test]
    fn decode_of_encode_is_identity() {
        let anthropic = Anthropic::new();
        let mut text = sample();
        text.tool_calls.clear();
        text.extra.remove(THINKING_BLOCKS);
        text.reasoning = None;
        text.finish_reason = FinishReason::Stop;
        text.raw_finish_reason = Some("stop_sequence".into());
        text.extra.insert(STOP_SEQUENCE.into(), json!("END"));
        let mut refusal = ChatResponse {
            finish_reason: FinishReason::ContentFilter,
            ..ChatResponse::default()
        };
        refusal.raw_finish_reason = Some("refusal".into());
        refusal.extra.insert(
            STOP_DETAILS.into(),
            json!({"type": "refusal", "category": "cyber"}),
        );
        refusal.usage = Some(Usage::default());
        for r in [sample(), text, refusal] {
            for stream in [false, true] {
                let bytes = anthropic.encode_response(&r, stream).unwrap();
                let back =
                    crate::test_support::counts_only(replay(&anthropic, &bytes).unwrap().response);
                assert_eq!(
                    back,
                    r,
                    "stream={stream}\n{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    #[test]
    fn broken_calls_stream_as_they_are() {
        let mut r = sample();
        r.tool_calls[1] = ToolCall::new_cut_short("toolu_tw_3", "get_time", r#"{"zone":"Eu"#);
        r.finish_reason = FinishReason::Length;
        r.raw_finish_reason = Some("max_tokens".into());
        let anthropic = Anthropic::new();
        assert!(anthropic.encode_response(&r, false).is_err());
        let bytes = anthropic.encode_response(&r, true).unwrap();
        let back = crate::test_support::counts_only(replay(&anthropic, &bytes).unwrap().response);
        assert_eq!(back, r);
    }

    #[test]
    fn errors_round_trip() {
        let anthropic = Anthropic::new();
        let e = ApiError::new(ProviderKind::Anthropic, Some(529), "Overloaded");
        let (status, body) = anthropic.encode_error(&e, true);
        assert_eq!(status, 529);
        let back = anthropic.decode_error(Some(status), &body);
        assert_eq!(back.code.as_deref(), Some("overloaded_error"));
        assert_eq!(back.message, "Overloaded");

        let mut mid = ApiError::new(ProviderKind::Anthropic, None, "Overloaded");
        mid.partial = Some(Box::new(ChatResponse {
            text: Some("Half an ans".into()),
            ..ChatResponse::default()
        }));
        let (status, body) = anthropic.encode_error(&mid, true);
        assert_eq!(status, 200);
        let err = replay(&anthropic, &body).unwrap_err();
        assert_eq!(err.api().unwrap().code.as_deref(), Some("overloaded_error"));
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Half an ans"));
    }
}
