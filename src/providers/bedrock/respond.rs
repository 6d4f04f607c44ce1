//! The canonical response → the bytes Bedrock would send, for the mock provider: a Converse
//! body, or a ConverseStream answer in event-stream frames (`messageStart`; per block its
//! `contentBlockStart` for a call, `contentBlockDelta`s and `contentBlockStop`; `messageStop`
//! with the stop reason; `metadata` with usage and metrics). An error without a status
//! answering a stream is an exception frame after whatever the partial response holds.

use serde_json::{Map, Value, json};

use super::decode::finish_reason;
use super::{METRICS, REASONING_BLOCKS};
use crate::error::{ApiError, Error, Result};
use crate::eventstream::encode_frame;
use crate::provider::ProviderKind;
use crate::providers::hosted::{Piece, interleave};
use crate::providers::split::pieces;
use crate::types::{ChatResponse, FinishReason, HostedCall, ToolCall, Usage};

/// Longest text or argument piece of one delta, in characters.
const PIECE_CHARS: usize = 24;

/// The signature sent on a reasoning block made up from reasoning text that came without one.
const MOCK_SIGNATURE: &str = "dG9vbHdpcmUtbW9jay1zaWduYXR1cmU=";

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(ProviderKind::Bedrock, what)
}

impl crate::provider::Respond for super::Bedrock {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        if stream {
            stream_body(response)
        } else {
            whole_body(response)
        }
    }

    /// ConverseStream is its own operation: `POST /model/{modelId}/converse-stream`
    /// (<https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html>).
    fn streams_at(&self, path: &str) -> bool {
        path.split('?')
            .next()
            .is_some_and(|p| p.ends_with("/converse-stream"))
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        encode_error(error, stream)
    }
}

/// The wire `stopReason`: the raw value when it still means the same canonical reason, else
/// the usual spelling of the canonical one.
fn stop_reason(r: &ChatResponse) -> Result<String> {
    if let Some(kept) = r.raw_finish_reason.as_deref() {
        let same = match (finish_reason(kept), &r.finish_reason) {
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
        FinishReason::ContentFilter => "content_filtered".into(),
        // Converse has no pause: the Messages value, verbatim, as before.
        FinishReason::Pause => "pause_turn".into(),
        FinishReason::Other(s) => s.clone(),
        FinishReason::Error => {
            return Err(unsupported(
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

/// `usage` as Bedrock counts it: uncached input apart from the cache parts.
fn usage_json(u: &Usage) -> Value {
    let read = u.cached_input_tokens;
    let write = u.cache_creation_input_tokens;
    let input = u
        .input_tokens
        .saturating_sub(read.unwrap_or(0))
        .saturating_sub(write.unwrap_or(0));
    let mut m = Map::new();
    m.insert("inputTokens".into(), json!(input));
    m.insert("outputTokens".into(), json!(u.output_tokens));
    m.insert(
        "totalTokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    if let Some(n) = read {
        m.insert("cacheReadInputTokens".into(), json!(n));
    }
    if let Some(n) = write {
        m.insert("cacheWriteInputTokens".into(), json!(n));
    }
    Value::Object(m)
}

fn metrics(r: &ChatResponse) -> Value {
    r.extra
        .get(METRICS)
        .cloned()
        .unwrap_or_else(|| json!({"latencyMs": 120}))
}

/// The reasoning blocks to send: the kept ones, or one signed block made from the reasoning.
fn reasoning_of(r: &ChatResponse) -> Vec<Value> {
    let kept: Vec<Value> = r
        .extra
        .get(REASONING_BLOCKS)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !kept.is_empty() {
        return kept;
    }
    match r.reasoning.as_deref().filter(|t| !t.is_empty()) {
        Some(text) => vec![json!({"reasoningText": {"text": text, "signature": MOCK_SIGNATURE}})],
        None => Vec::new(),
    }
}

/// The hosted calls made on this wire (another wire's have no blocks here).
fn own_hosted(r: &ChatResponse) -> Vec<HostedCall> {
    (r.hosted_calls.iter())
        .filter(|c| c.wire == ProviderKind::Bedrock.name())
        .cloned()
        .collect()
}

fn call_input(call: &ToolCall) -> Value {
    call.arguments.clone().unwrap_or_else(|| json!({}))
}

fn whole_body(r: &ChatResponse) -> Result<Vec<u8>> {
    for (i, call) in r.tool_calls.iter().enumerate() {
        if !call.is_complete() {
            return Err(unsupported(format!(
                "tool_calls[{i}] has unusable arguments; a whole Converse body only carries \
                 input objects"
            )));
        }
    }
    let stop = stop_reason(r)?;
    let mut content: Vec<Value> = reasoning_of(r)
        .into_iter()
        .map(|b| json!({"reasoningContent": b}))
        .collect();
    for piece in interleave(r.text.as_deref(), &own_hosted(r)) {
        match piece {
            Piece::Text(text) => content.push(json!({"text": text})),
            Piece::Hosted(call) => content.extend(call.blocks.iter().cloned()),
        }
    }
    for call in &r.tool_calls {
        content.push(json!({"toolUse": {
            "toolUseId": call.id,
            "name": call.name,
            "input": call_input(call),
        }}));
    }
    let mut body = Map::new();
    body.insert(
        "output".into(),
        json!({"message": {"role": "assistant", "content": content}}),
    );
    body.insert("stopReason".into(), json!(stop));
    if let Some(u) = &r.usage {
        body.insert("usage".into(), usage_json(u));
    }
    body.insert("metrics".into(), metrics(r));
    Ok(Value::Object(body).to_string().into_bytes())
}

/// Writes event frames.
#[derive(Default)]
struct Frames {
    out: Vec<u8>,
    index: usize,
}

impl Frames {
    fn event(&mut self, kind: &str, payload: &Value) {
        self.out.extend(encode_frame(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.to_string().as_bytes(),
        ));
    }

    fn delta(&mut self, delta: Value) {
        let index = self.index;
        self.event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": index, "delta": delta}),
        );
    }

    fn stop(&mut self) {
        let index = self.index;
        self.event("contentBlockStop", &json!({"contentBlockIndex": index}));
        self.index += 1;
    }

    fn reasoning(&mut self, block: &Value) {
        if let Some(redacted) = block.get("redactedContent") {
            self.delta(json!({"reasoningContent": {"redactedContent": redacted}}));
        } else {
            let text = block
                .pointer("/reasoningText/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            for piece in pieces(text, PIECE_CHARS) {
                self.delta(json!({"reasoningContent": {"text": piece}}));
            }
            if let Some(sig) = block
                .pointer("/reasoningText/signature")
                .and_then(Value::as_str)
            {
                self.delta(json!({"reasoningContent": {"signature": sig}}));
            }
        }
        self.stop();
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        for piece in pieces(text, PIECE_CHARS) {
            self.delta(json!({"text": piece}));
        }
        self.stop();
    }

    /// A call streamed from its raw text, so malformed and truncated arguments go out as
    /// they are.
    fn call(&mut self, call: &ToolCall) {
        let index = self.index;
        self.event(
            "contentBlockStart",
            &json!({"contentBlockIndex": index, "start": {"toolUse": {
                "toolUseId": call.id, "name": call.name}}}),
        );
        for piece in pieces(&call.raw_arguments, PIECE_CHARS) {
            self.delta(json!({"toolUse": {"input": piece}}));
        }
        self.stop();
    }

    fn content(&mut self, r: &ChatResponse) {
        self.event("messageStart", &json!({"role": "assistant"}));
        for block in reasoning_of(r) {
            self.reasoning(&block);
        }
        for piece in interleave(r.text.as_deref(), &own_hosted(r)) {
            match piece {
                Piece::Text(text) => self.text(text),
                Piece::Hosted(call) => call.blocks.iter().for_each(|b| self.hosted(b)),
            }
        }
        for call in &r.tool_calls {
            self.call(call);
        }
    }

    /// A hosted call's block as ConverseStream sends it: a server `toolUse` starts with its
    /// id, name and type and streams its input; a `toolResult` starts with its id, type and
    /// status and streams its content pieces.
    fn hosted(&mut self, block: &Value) {
        let index = self.index;
        if let Some(Value::Object(call)) = block.get("toolUse") {
            let mut start = call.clone();
            let input = start.remove("input").unwrap_or_else(|| json!({}));
            self.event(
                "contentBlockStart",
                &json!({"contentBlockIndex": index, "start": {"toolUse": start}}),
            );
            self.delta(json!({"toolUse": {"input": input.to_string()}}));
            self.stop();
        } else if let Some(Value::Object(result)) = block.get("toolResult") {
            let mut start = result.clone();
            let content = start.remove("content").unwrap_or_else(|| json!([]));
            self.event(
                "contentBlockStart",
                &json!({"contentBlockIndex": index, "start": {"toolResult": start}}),
            );
            let pieces: Vec<Value> = content.as_array().cloned().unwrap_or_default();
            if !pieces.is_empty() {
                self.delta(json!({"toolResult": pieces}));
            }
            self.stop();
        }
    }
}

fn stream_body(r: &ChatResponse) -> Result<Vec<u8>> {
    let stop = stop_reason(r)?;
    let mut frames = Frames::default();
    frames.content(r);
    frames.event("messageStop", &json!({"stopReason": stop}));
    let mut metadata = Map::new();
    if let Some(u) = &r.usage {
        metadata.insert("usage".into(), usage_json(u));
    }
    metadata.insert("metrics".into(), metrics(r));
    frames.event("metadata", &Value::Object(metadata));
    Ok(frames.out)
}

/// The exception Bedrock names for an HTTP status (Converse's errors).
fn exception(status: Option<u16>) -> &'static str {
    match status {
        Some(400) => "ValidationException",
        Some(403) => "AccessDeniedException",
        Some(404) => "ResourceNotFoundException",
        Some(408) => "ModelTimeoutException",
        Some(424) => "ModelErrorException",
        Some(429) => "ThrottlingException",
        Some(503) => "ServiceUnavailableException",
        None => "modelStreamErrorException",
        _ => "InternalServerException",
    }
}

/// The status and body for `error`: `{"message": …}` (the type goes in the
/// `x-amzn-ErrorType` header, which a body cannot carry: the mock writes it as `__type` too);
/// without a status, answering a stream, an exception frame after the partial response.
pub(crate) fn encode_error(error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let code = error
        .code
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| exception(error.status).to_owned());
    match error.status {
        None if stream => {
            let mut frames = Frames::default();
            let partial = error.partial.as_deref().cloned().unwrap_or_default();
            frames.content(&partial);
            let payload = json!({"message": error.message});
            frames.out.extend(encode_frame(
                &[
                    (":exception-type", &code),
                    (":content-type", "application/json"),
                    (":message-type", "exception"),
                ],
                payload.to_string().as_bytes(),
            ));
            (200, frames.out)
        }
        status => {
            let body = json!({"__type": code, "message": error.message});
            (status.unwrap_or(500), body.to_string().into_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Provider, Respond};
    use crate::providers::bedrock::Bedrock;
    use crate::replay::replay;

    fn sample() -> ChatResponse {
        let mut r = ChatResponse {
            text: Some("Checking the weather and the time for you, one moment please.".into()),
            reasoning: Some("The user wants two facts.".into()),
            tool_calls: vec![
                ToolCall::new("tooluse_tw_1", "get_weather", r#"{"city":"Lyon"}"#),
                ToolCall::new("tooluse_tw_2", "get_time", ""),
            ],
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 31,
                cached_input_tokens: Some(30),
                cache_creation_input_tokens: Some(2),
                ..Default::default()
            }),
            raw_finish_reason: Some("tool_use".into()),
            ..ChatResponse::default()
        };
        r.extra.insert(
            REASONING_BLOCKS.into(),
            json!([{"reasoningText": {"text": "The user wants two facts.", "signature": "c2lnLTE="}},
                   {"redactedContent": "cmVkYWN0ZWQ="}]),
        );
        r.extra.insert(METRICS.into(), json!({"latencyMs": 412}));
        r
    }

    #[test]
    fn decode_of_encode_is_identity() {
        let bedrock = Bedrock::new();
        let mut text = sample();
        text.tool_calls.clear();
        text.extra.remove(REASONING_BLOCKS);
        text.reasoning = None;
        text.finish_reason = FinishReason::ContentFilter;
        text.raw_finish_reason = Some("guardrail_intervened".into());
        for r in [sample(), text] {
            for stream in [false, true] {
                let bytes = bedrock.encode_response(&r, stream).unwrap();
                let back =
                    crate::test_support::counts_only(replay(&bedrock, &bytes).unwrap().response);
                let mut want = r.clone();
                if !stream {
                    // A whole body's input is an object: an empty raw text comes back `{}`.
                    for c in &mut want.tool_calls {
                        if c.raw_arguments.is_empty() {
                            c.raw_arguments = "{}".into();
                        }
                    }
                }
                assert_eq!(back, want, "stream={stream}");
            }
        }
    }

    #[test]
    fn broken_calls_stream_as_they_are() {
        let mut r = sample();
        r.tool_calls[1] = ToolCall::new_cut_short("tooluse_tw_3", "get_time", r#"{"zone":"Eu"#);
        r.finish_reason = FinishReason::Length;
        r.raw_finish_reason = Some("max_tokens".into());
        let bedrock = Bedrock::new();
        assert!(bedrock.encode_response(&r, false).is_err());
        let bytes = bedrock.encode_response(&r, true).unwrap();
        let back = crate::test_support::counts_only(replay(&bedrock, &bytes).unwrap().response);
        assert_eq!(back, r);
    }

    #[test]
    fn errors_round_trip() {
        let bedrock = Bedrock::new();
        let e = ApiError::new(ProviderKind::Bedrock, Some(429), "Too many requests");
        let (status, body) = bedrock.encode_error(&e, true);
        assert_eq!(status, 429);
        let back = bedrock.decode_error(Some(status), &body);
        assert_eq!(back.code.as_deref(), Some("ThrottlingException"));
        assert_eq!(back.message, "Too many requests");

        let mut mid = ApiError::new(ProviderKind::Bedrock, None, "The model stopped");
        mid.partial = Some(Box::new(ChatResponse {
            text: Some("Half an ans".into()),
            ..ChatResponse::default()
        }));
        let (status, body) = bedrock.encode_error(&mid, true);
        assert_eq!(status, 200);
        let err = replay(&bedrock, &body).unwrap_err();
        assert_eq!(
            err.api().unwrap().code.as_deref(),
            Some("modelStreamErrorException")
        );
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Half an ans"));
    }
}
