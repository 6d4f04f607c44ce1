//! The canonical response → the bytes Ollama would send, for the mock provider: one JSON
//! object, or newline-delimited JSON (thinking and text in small pieces, one line per call
//! with its arguments as an object, then the `done` line with `done_reason` and the counts).
//! An error without a status answering a stream is an `{"error": …}` line after the partial
//! response's lines.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Error, Result};
use crate::provider::ProviderKind;
use crate::providers::split::pieces;
use crate::types::{ChatResponse, FinishReason, ToolCall};

/// Longest text piece of one line, in characters.
const PIECE_CHARS: usize = 24;

/// A fixed timestamp, so the mock's bytes are reproducible.
const CREATED_AT: &str = "2025-01-01T00:00:00Z";

const MODEL: &str = "toolwire-mock";

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(ProviderKind::Ollama, what)
}

impl crate::provider::Respond for super::Ollama {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        encode_response(response, stream)
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        encode_error(error, stream)
    }
}

/// The wire `done_reason`: the one kept in `extra` when it still means the same canonical
/// reason, else the spelling of the canonical one.
fn done_reason(r: &ChatResponse) -> Result<String> {
    if let Some(kept) = r.raw_finish_reason.as_deref() {
        let decoded = super::decode::finish_reason(Some(kept));
        let same = if decoded.is_normal_end() {
            r.finish_reason.is_normal_end()
        } else {
            decoded == r.finish_reason
        };
        if same {
            return Ok(kept.to_owned());
        }
    }
    Ok(match &r.finish_reason {
        FinishReason::Stop | FinishReason::ToolCalls => "stop".into(),
        FinishReason::Length => "length".into(),
        FinishReason::Pause => "pause_turn".into(),
        FinishReason::Other(s) => s.clone(),
        FinishReason::ContentFilter | FinishReason::Error => {
            return Err(unsupported(format!(
                "a response that ended in `{}`: Ollama has no such done_reason",
                r.finish_reason
            )));
        }
    })
}

fn call_json(call: &ToolCall, index: usize) -> Value {
    let mut c = Map::new();
    if !call.has_synthetic_id() {
        c.insert("id".into(), json!(call.id));
    }
    c.insert(
        "function".into(),
        json!({
            "index": index,
            "name": call.name,
            "arguments": call.arguments.clone().unwrap_or_else(|| json!({})),
        }),
    );
    Value::Object(c)
}

/// One line (or the whole body): a message piece, and the end fields when `end` is given.
fn line(message: Map<String, Value>, end: Option<(&str, &ChatResponse)>) -> Value {
    let mut m = Map::new();
    m.insert("model".into(), json!(MODEL));
    m.insert("created_at".into(), json!(CREATED_AT));
    let mut msg = Map::new();
    msg.insert("role".into(), json!("assistant"));
    msg.insert("content".into(), json!(""));
    msg.extend(message);
    m.insert("message".into(), Value::Object(msg));
    match end {
        None => {
            m.insert("done".into(), json!(false));
        }
        Some((reason, r)) => {
            m.insert("done".into(), json!(true));
            m.insert("done_reason".into(), json!(reason));
            m.insert("total_duration".into(), json!(1_250_000_000u64));
            if let Some(u) = &r.usage {
                // The server leaves out counts that are zero.
                if u.input_tokens > 0 {
                    m.insert("prompt_eval_count".into(), json!(u.input_tokens));
                }
                if u.output_tokens > 0 {
                    m.insert("eval_count".into(), json!(u.output_tokens));
                }
            }
        }
    }
    Value::Object(m)
}

fn field(key: &str, value: impl Into<Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), value.into());
    m
}

/// The lines of a running turn: thinking pieces, text pieces, one line per call.
fn running_lines(r: &ChatResponse) -> Vec<Value> {
    let mut lines = Vec::new();
    for piece in pieces(r.reasoning.as_deref().unwrap_or(""), PIECE_CHARS) {
        lines.push(line(field("thinking", piece), None));
    }
    for piece in pieces(r.text.as_deref().unwrap_or(""), PIECE_CHARS) {
        lines.push(line(field("content", piece), None));
    }
    for (i, call) in r.tool_calls.iter().enumerate() {
        lines.push(line(field("tool_calls", json!([call_json(call, i)])), None));
    }
    lines
}

fn ndjson(lines: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

pub(crate) fn encode_response(r: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
    for (i, call) in r.tool_calls.iter().enumerate() {
        if !call.is_complete() {
            return Err(unsupported(format!(
                "tool_calls[{i}] has unusable arguments; Ollama sends only whole argument objects"
            )));
        }
    }
    let reason = done_reason(r)?;
    if !stream {
        let mut message = Map::new();
        if let Some(text) = &r.text {
            message.insert("content".into(), json!(text));
        }
        if let Some(thinking) = &r.reasoning {
            message.insert("thinking".into(), json!(thinking));
        }
        if !r.tool_calls.is_empty() {
            let calls: Vec<Value> = r
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| call_json(c, i))
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        return Ok(line(message, Some((&reason, r))).to_string().into_bytes());
    }
    let mut lines = running_lines(r);
    lines.push(line(Map::new(), Some((&reason, r))));
    Ok(ndjson(&lines))
}

/// The status and body for `error`: `{"error": message}`; without a status, answering a
/// stream, an error line after the partial response's lines (the status stays 200).
pub(crate) fn encode_error(error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let body = json!({"error": error.message});
    match error.status {
        None if stream => {
            let mut lines = error
                .partial
                .as_deref()
                .map(running_lines)
                .unwrap_or_default();
            lines.push(body);
            (200, ndjson(&lines))
        }
        status => (status.unwrap_or(500), body.to_string().into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    #[allow(unused_imports)]
    use crate::provider::Respond;
    use crate::providers::ollama::Ollama;
    use crate::replay::replay;
    use crate::types::Usage;

    fn sample() -> ChatResponse {
        let mut first = ToolCall::new(
            "call_k3x9q2ma",
            "get_weather",
            r#"{"unit":"celsius","city":"Lyon"}"#,
        );
        first.extra = Map::new();
        let mut second = ToolCall::new("call_1", "get_time", "{}");
        second
            .extra
            .insert(ToolCall::SYNTHETIC_ID.into(), json!(true));
        let mut r = ChatResponse {
            text: Some("Checking the weather and the time for you, one moment please.".into()),
            reasoning: Some("The user wants two facts.".into()),
            tool_calls: vec![first, second],
            hosted_calls: Vec::new(),
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 31,
                reasoning_tokens: None,
                ..Default::default()
            }),
            raw_finish_reason: None,
            raw_usage: None,
            extra: Map::new(),
        };
        r.raw_finish_reason = Some("stop".into());
        r
    }

    #[test]
    fn decode_of_encode_is_identity() {
        let ollama = Ollama::new();
        let mut cut = sample();
        cut.tool_calls.clear();
        cut.reasoning = None;
        cut.finish_reason = FinishReason::Length;
        cut.raw_finish_reason = Some("length".into());
        let mut load = ChatResponse {
            finish_reason: FinishReason::Other("load".into()),
            ..ChatResponse::default()
        };
        load.raw_finish_reason = Some("load".into());
        for r in [sample(), cut, load] {
            for stream in [false, true] {
                let bytes = ollama.encode_response(&r, stream).unwrap();
                let back =
                    crate::test_support::counts_only(replay(&ollama, &bytes).unwrap().response);
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
    fn errors_round_trip() {
        let ollama = Ollama::new();
        let e = ApiError::new(ProviderKind::Ollama, Some(404), "model \"nope\" not found");
        let (status, body) = ollama.encode_error(&e, true);
        assert_eq!(status, 404);
        assert_eq!(ollama.decode_error(Some(status), &body).message, e.message);

        let mut mid = ApiError::new(ProviderKind::Ollama, None, "the runner crashed");
        mid.partial = Some(Box::new(ChatResponse {
            text: Some("Half an ans".into()),
            ..ChatResponse::default()
        }));
        let (status, body) = ollama.encode_error(&mid, true);
        assert_eq!(status, 200);
        let err = replay(&ollama, &body).unwrap_err();
        assert_eq!(err.api().unwrap().message, "the runner crashed");
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Half an ans"));
    }
}
