//! The canonical response → the bytes Gemini would send, for the mock provider: a
//! `generateContent` body, or the `streamGenerateContent?alt=sse` stream (`data: {json}` frames
//! ending in CRLF CRLF, whole `functionCall` parts one per chunk, usage repeated on every chunk
//! as a running total, no `[DONE]`).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{BLOCK_REASON, FINISH_MESSAGE, REASONING_SIGNATURE, THOUGHT_SIGNATURE};
use crate::error::{ApiError, Error, Result};
use crate::provider::ProviderKind;
use crate::providers::hosted::{Piece, interleave};
use crate::providers::split::pieces;
use crate::types::{ChatResponse, FinishReason, HostedCall, ToolCall, Usage};

/// Longest text piece of one stream chunk, in characters.
const PIECE_CHARS: usize = 32;

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(ProviderKind::Gemini, what)
}

fn wire_finish(reason: &FinishReason) -> Result<String> {
    Ok(match reason {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP".into(),
        FinishReason::Length => "MAX_TOKENS".into(),
        FinishReason::ContentFilter => "SAFETY".into(),
        FinishReason::Pause => "pause_turn".into(),
        FinishReason::Other(s) => s.clone(),
        FinishReason::Error => {
            return Err(unsupported(
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

fn str_extra<'a>(extra: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    extra.get(key).and_then(Value::as_str)
}

fn call_part(call: &ToolCall) -> Value {
    let mut function_call = Map::new();
    if !call.has_synthetic_id() {
        function_call.insert("id".into(), json!(call.id));
    }
    function_call.insert("name".into(), json!(call.name));
    function_call.insert(
        "args".into(),
        call.arguments.clone().unwrap_or_else(|| json!({})),
    );
    let mut part = Map::new();
    part.insert("functionCall".into(), Value::Object(function_call));
    if let Some(sig) = str_extra(&call.extra, THOUGHT_SIGNATURE) {
        part.insert("thoughtSignature".into(), json!(sig));
    }
    Value::Object(part)
}

/// `usageMetadata` with the visible output scaled to `done/total` of the stream (thoughts come
/// first, so they are counted whole).
fn usage_json(u: &Usage, done: usize, total: usize) -> Value {
    let thoughts = u.reasoning_tokens.unwrap_or(0);
    let visible = u.output_tokens.saturating_sub(thoughts);
    let scaled = if total == 0 || done >= total {
        visible
    } else {
        let (done, total) = (done as u128, total as u128);
        u64::try_from(u128::from(visible) * done / total).unwrap_or(visible)
    };
    let mut m = Map::new();
    m.insert("promptTokenCount".into(), json!(u.input_tokens));
    m.insert("candidatesTokenCount".into(), json!(scaled));
    m.insert(
        "totalTokenCount".into(),
        json!(
            u.input_tokens
                .saturating_add(scaled)
                .saturating_add(thoughts)
        ),
    );
    if let Some(c) = u.cached_input_tokens {
        m.insert("cachedContentTokenCount".into(), json!(c));
    }
    if let Some(t) = u.reasoning_tokens {
        m.insert("thoughtsTokenCount".into(), json!(t));
    }
    Value::Object(m)
}

fn candidate(parts: Vec<Value>, finish: Option<(&str, Option<&str>)>) -> Value {
    let mut c = Map::new();
    let content = if parts.is_empty() {
        json!({})
    } else {
        json!({"parts": parts, "role": "model"})
    };
    c.insert("content".into(), content);
    if let Some((reason, message)) = finish {
        c.insert("finishReason".into(), json!(reason));
        if let Some(message) = message {
            c.insert("finishMessage".into(), json!(message));
        }
    }
    c.insert("index".into(), json!(0));
    Value::Object(c)
}

/// The body (or SSE stream) Gemini would send for `r`.
impl crate::provider::Respond for super::Gemini {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        encode_response(response, stream)
    }

    fn encode_error(&self, error: &ApiError, _stream: bool) -> (u16, Vec<u8>) {
        encode_error(error)
    }
}

pub(crate) fn encode_response(r: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
    // A scripted raw value goes out verbatim; else Gemini's spelling of the canonical one.
    let mapped = wire_finish(&r.finish_reason)?;
    let finish = r.raw_finish_reason.clone().unwrap_or(mapped);
    for (i, call) in r.tool_calls.iter().enumerate() {
        if !call.is_complete() {
            return Err(unsupported(format!(
                "tool_calls[{i}] has unusable arguments; Gemini only sends whole argument objects"
            )));
        }
    }
    let finish_message = str_extra(&r.extra, FINISH_MESSAGE);
    let text_signature = str_extra(&r.extra, THOUGHT_SIGNATURE);
    let reasoning_signature = str_extra(&r.extra, REASONING_SIGNATURE);

    if let Some(block) = str_extra(&r.extra, BLOCK_REASON) {
        let mut body = Map::new();
        body.insert("promptFeedback".into(), json!({"blockReason": block}));
        if let Some(u) = &r.usage {
            body.insert("usageMetadata".into(), usage_json(u, 1, 1));
        }
        let body = Value::Object(body).to_string();
        return Ok(if stream {
            format!("data: {body}\r\n\r\n").into_bytes()
        } else {
            body.into_bytes()
        });
    }

    if !stream {
        let mut parts = Vec::new();
        if let Some(reasoning) = &r.reasoning {
            let mut part = json!({"text": reasoning, "thought": true});
            if let (Some(sig), Value::Object(m)) = (reasoning_signature, &mut part) {
                m.insert("thoughtSignature".into(), json!(sig));
            }
            parts.push(part);
        }
        let text = r.text.as_deref().filter(|t| !t.is_empty());
        let own = own_hosted(r);
        let pieces = interleave(text, &own);
        let last_text = pieces.iter().rposition(|p| matches!(p, Piece::Text(_)));
        for (k, piece) in pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) => {
                    let mut part = json!({"text": t});
                    if let (Some(sig), Value::Object(m), true) =
                        (text_signature, &mut part, Some(k) == last_text)
                    {
                        m.insert("thoughtSignature".into(), json!(sig));
                    }
                    parts.push(part);
                }
                Piece::Hosted(call) => parts.extend(call.blocks.iter().cloned()),
            }
        }
        parts.extend(r.tool_calls.iter().map(call_part));
        if let (None, Some(sig)) = (text, text_signature) {
            parts.push(json!({"text": "", "thoughtSignature": sig}));
        }
        let mut body = Map::new();
        body.insert(
            "candidates".into(),
            json!([candidate(parts, Some((&finish, finish_message)))]),
        );
        if let Some(u) = &r.usage {
            body.insert("usageMetadata".into(), usage_json(u, 1, 1));
        }
        return Ok(Value::Object(body).to_string().into_bytes());
    }

    // The stream: thought pieces, text pieces, one call per chunk, then the final chunk.
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    if let Some(reasoning) = &r.reasoning {
        let thought = pieces(reasoning, PIECE_CHARS);
        let last = thought.len().saturating_sub(1);
        for (i, piece) in thought.into_iter().enumerate() {
            let mut part = json!({"text": piece, "thought": true});
            if let (true, Some(sig), Value::Object(m)) = (i == last, reasoning_signature, &mut part)
            {
                m.insert("thoughtSignature".into(), json!(sig));
            }
            chunks.push(vec![part]);
        }
    }
    // Text in pieces, the parts of code Gemini ran (this wire's hosted calls) each a chunk of
    // its own in its place.
    for piece in interleave(r.text.as_deref(), &own_hosted(r)) {
        match piece {
            Piece::Text(text) => chunks.extend(
                pieces(text, PIECE_CHARS)
                    .into_iter()
                    .map(|p| vec![json!({"text": p})]),
            ),
            Piece::Hosted(call) => chunks.extend(call.blocks.iter().map(|b| vec![b.clone()])),
        }
    }
    chunks.extend(r.tool_calls.iter().map(|c| vec![call_part(c)]));
    let mut last_part = json!({"text": ""});
    if let (Some(sig), Value::Object(m)) = (text_signature, &mut last_part) {
        m.insert("thoughtSignature".into(), json!(sig));
    }
    let total = chunks.len() + 1;
    let mut out = String::new();
    let frames = chunks
        .into_iter()
        .map(|parts| (parts, None))
        .chain(std::iter::once((
            vec![last_part],
            Some((finish.as_str(), finish_message)),
        )));
    for (k, (parts, end)) in frames.enumerate() {
        let mut chunk = Map::new();
        chunk.insert("candidates".into(), json!([candidate(parts, end)]));
        if let Some(u) = &r.usage {
            chunk.insert("usageMetadata".into(), usage_json(u, k + 1, total));
        }
        out.push_str("data: ");
        out.push_str(&Value::Object(chunk).to_string());
        out.push_str("\r\n\r\n");
    }
    Ok(out.into_bytes())
}

/// The hosted calls made on this wire (another wire's have no parts here).
fn own_hosted(r: &ChatResponse) -> Vec<HostedCall> {
    (r.hosted_calls.iter())
        .filter(|c| c.wire == crate::provider::ProviderKind::Gemini.name())
        .cloned()
        .collect()
}

/// The google.rpc status name for an HTTP status (Google API design guide's mapping); the
/// Interactions API's error bodies use the same names.
pub(crate) fn rpc_status(http: u16) -> &'static str {
    match http {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// A Duration the way protobuf JSON writes it: `"13s"`, `"0.5s"`.
pub(crate) fn format_delay(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        return format!("{}s", d.as_secs());
    }
    let fraction = format!("{:09}", d.subsec_nanos());
    format!("{}.{}s", d.as_secs(), fraction.trim_end_matches('0'))
}

/// The status and body Gemini would send for `error` (errors come before any stream starts,
/// as a plain JSON body, whether or not a stream was asked for).
pub(crate) fn encode_error(error: &ApiError) -> (u16, Vec<u8>) {
    let status = error.status.unwrap_or(500);
    let rpc = error
        .code
        .clone()
        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'))
        .unwrap_or_else(|| rpc_status(status).to_owned());
    let mut inner = Map::new();
    inner.insert("code".into(), json!(status));
    inner.insert("message".into(), json!(error.message));
    inner.insert("status".into(), json!(rpc));
    if let Some(delay) = error.retry_after {
        inner.insert(
            "details".into(),
            json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format_delay(delay)}]),
        );
    }
    let body = json!({"error": inner}).to_string().into_bytes();
    (status, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    #[allow(unused_imports)]
    use crate::provider::Respond;
    use crate::providers::gemini::Gemini;
    use crate::replay::replay;

    fn sample() -> ChatResponse {
        let mut first = ToolCall::new("call_0", "get_weather", r#"{"city":"Lyon"}"#);
        first
            .extra
            .insert(THOUGHT_SIGNATURE.into(), json!("c2lnLXR3LTE="));
        first
            .extra
            .insert(ToolCall::SYNTHETIC_ID.into(), json!(true));
        let second = ToolCall::new("tw-native-2", "get_time", r#"{"zone":"Europe/Paris"}"#);
        let mut r = ChatResponse {
            text: Some("Checking the weather and the time for you, one moment please.".into()),
            reasoning: Some("The user wants two facts.".into()),
            tool_calls: vec![first, second],
            hosted_calls: Vec::new(),
            finish_reason: FinishReason::ToolCalls,
            // What the mock provider sends for it, so a decode of the encoding is identical.
            raw_finish_reason: Some("STOP".into()),
            usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 31,
                reasoning_tokens: Some(12),
                ..Default::default()
            }),
            raw_usage: None,
            extra: Map::new(),
        };
        r.extra.insert(
            FINISH_MESSAGE.into(),
            json!("Model generated function call(s)."),
        );
        r.extra
            .insert(REASONING_SIGNATURE.into(), json!("cmVhc29uLXNpZw=="));
        r
    }

    #[test]
    fn decode_of_encode_is_identity() {
        let gemini = Gemini::new();
        let mut texts = sample();
        texts.tool_calls.clear();
        texts.finish_reason = FinishReason::Stop;
        texts
            .extra
            .insert(THOUGHT_SIGNATURE.into(), json!("dGV4dC1zaWc="));
        let mut blocked = ChatResponse {
            finish_reason: FinishReason::ContentFilter,
            ..ChatResponse::default()
        };
        blocked.extra.insert(BLOCK_REASON.into(), json!("SAFETY"));
        let mut malformed = ChatResponse {
            finish_reason: FinishReason::Other("MALFORMED_FUNCTION_CALL".into()),
            raw_finish_reason: Some("MALFORMED_FUNCTION_CALL".into()),
            ..ChatResponse::default()
        };
        malformed
            .extra
            .insert(FINISH_MESSAGE.into(), json!("Malformed function call: x"));
        for r in [sample(), texts, blocked, malformed] {
            for stream in [false, true] {
                let bytes = gemini.encode_response(&r, stream).unwrap();
                let back =
                    crate::test_support::counts_only(replay(&gemini, &bytes).unwrap().response);
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
    fn stream_framing_and_running_usage() {
        let bytes = Gemini::new().encode_response(&sample(), true).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("[DONE]"));
        let frames: Vec<&str> = text.split("\r\n\r\n").filter(|f| !f.is_empty()).collect();
        // 1 thought piece, 2 text pieces, 2 calls, 1 final chunk.
        assert_eq!(frames.len(), 6);
        assert!(frames.iter().all(|f| f.contains("\"usageMetadata\"")));
        assert!(frames[3].contains("c2lnLXR3LTE="));
        assert!(!frames[4].contains("thoughtSignature"));
        assert!(!frames[3].contains("\"id\""));
        assert!(frames[4].contains("\"id\":\"tw-native-2\""));
    }

    #[test]
    fn errors_round_trip() {
        let gemini = Gemini::new();
        let mut e = ApiError::new(ProviderKind::Gemini, Some(429), "quota exceeded");
        e.retry_after = Some(Duration::from_millis(13_500));
        let (status, body) = gemini.encode_error(&e, true);
        assert_eq!(status, 429);
        let back = gemini.decode_error(Some(status), &body);
        assert_eq!(back.code.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(back.message, "quota exceeded");
        assert_eq!(back.retry_after, e.retry_after);
        assert_eq!(format_delay(Duration::from_secs(13)), "13s");
        assert_eq!(format_delay(Duration::from_millis(500)), "0.5s");
    }

    #[test]
    fn unusable_calls_cannot_be_sent() {
        let mut r = sample();
        r.tool_calls[1] = ToolCall::new("x", "f", "{\"a\":");
        assert!(Gemini::new().encode_response(&r, false).is_err());
        r.finish_reason = FinishReason::Error;
        assert!(Gemini::new().encode_response(&r, true).is_err());
    }
}
