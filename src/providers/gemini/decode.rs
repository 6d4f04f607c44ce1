//! `generateContent` bodies and `streamGenerateContent` chunks → the canonical model.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::partial::ArgsWriter;
use super::wire::{FunctionCall, Part, Response, UsageMetadata};
use super::{BLOCK_REASON, FINISH_MESSAGE, OTHER_PARTS, REASONING_SIGNATURE, THOUGHT_SIGNATURE};
use crate::assemble::{Assembler, Fragment};
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error, scalar_text};
use crate::providers::shared::foreign_body;
use crate::types::{ChatResponse, FinishReason, HostedCall, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::Gemini;

/// Gemini's `finishReason` in canonical terms: STOP is a normal end (tool calls settle it to
/// `tool_calls`), MAX_TOKENS is `length`, the safety family is `content_filter`, and the rest
/// (`MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `TOO_MANY_TOOL_CALLS`, `OTHER`, …) is
/// kept verbatim so callers can tell them apart.
pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Token counts: output counts thoughts too (they are generated and billed as output), with
/// the thoughts also reported as reasoning; `cachedContentTokenCount` (part of the prompt
/// count) is `cached_input_tokens`. `None` when the report has no counts (Vertex chunks carry
/// `usageMetadata` with only `trafficType`).
/// A part as the wire sent it: `{"<kind>": value}`, with its `thoughtSignature`.
fn whole_part(kind: &str, value: &Value, signature: Option<&str>) -> Value {
    let mut part = Map::new();
    part.insert(kind.to_owned(), value.clone());
    if let Some(signature) = signature {
        part.insert(
            "thoughtSignature".into(),
            Value::String(signature.to_owned()),
        );
    }
    Value::Object(part)
}

fn usage(u: &UsageMetadata) -> Option<Usage> {
    if u.prompt_token_count.is_none()
        && u.candidates_token_count.is_none()
        && u.thoughts_token_count.is_none()
        && u.total_token_count.is_none()
        && u.cached_content_token_count.is_none()
    {
        return None;
    }
    let thoughts = u.thoughts_token_count.unwrap_or(0);
    Some(Usage {
        input_tokens: u.prompt_token_count.unwrap_or(0),
        output_tokens: u
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(thoughts),
        reasoning_tokens: u.thoughts_token_count,
        cached_input_tokens: u.cached_content_token_count,
        ..Default::default()
    })
}

/// A call whose arguments are still streaming as `partialArgs`.
#[derive(Debug)]
struct OpenCall {
    index: i64,
    args: ArgsWriter,
}

/// The decoder of one turn; a whole body is decoded as a stream of one chunk (or of the chunks
/// of a JSON array, the form `streamGenerateContent` takes without `alt=sse`).
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    /// Parts that are neither text nor a call, verbatim (see [`OTHER_PARTS`]).
    other_parts: Vec<Value>,
    open: Option<OpenCall>,
    /// The code-execution call waiting for its result.
    open_code: Option<usize>,
    /// The grounding call of the turn, once metadata came.
    grounding: Option<usize>,
    saw_candidate: bool,
    /// Payloads seen, and whether any had the shape of a `GenerateContentResponse`.
    payloads: usize,
    shaped: bool,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            other_parts: Vec::new(),
            open: None,
            open_code: None,
            grounding: None,
            saw_candidate: false,
            payloads: 0,
            shaped: false,
        }
    }

    /// Applies one chunk: parts in order, then usage, then the finish reason.
    fn apply(&mut self, chunk: &Response, out: &mut Vec<StreamEvent>) -> Result<()> {
        let mut finish: Option<(FinishReason, Option<&str>)> = None;
        for candidate in chunk
            .candidates
            .iter()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            self.saw_candidate = true;
            if !self.turn.is_finished()
                && let Some(content) = &candidate.content
            {
                for part in &content.parts {
                    self.part(part, out)?;
                }
            }
            if let Some(metadata) = candidate
                .grounding_metadata
                .as_ref()
                .filter(|m| !m.is_null())
            {
                self.grounding(metadata, out);
            }
            if let Some(message) = &candidate.finish_message {
                self.turn
                    .set_extra(FINISH_MESSAGE, Value::String(message.clone()));
            }
            if let Some(reason) = &candidate.finish_reason {
                finish = Some((finish_reason(reason), Some(reason.as_str())));
            }
        }
        if let Some(kept) = &chunk.usage_metadata
            && let Some(u) = usage(kept)
        {
            self.turn.usage(u, out);
            self.turn.raw_usage(kept.raw.clone());
        }
        if chunk.candidates.is_empty()
            && let Some(reason) = chunk
                .prompt_feedback
                .as_ref()
                .and_then(|f| f.block_reason.as_ref())
        {
            // The prompt itself was blocked: no candidate at all.
            self.turn
                .set_extra(BLOCK_REASON, Value::String(reason.clone()));
            finish = Some((FinishReason::ContentFilter, None));
        }
        if let Some((reason, raw)) = finish {
            self.end_turn(reason, raw, out);
        }
        Ok(())
    }

    fn end_turn(&mut self, reason: FinishReason, raw: Option<&str>, out: &mut Vec<StreamEvent>) {
        if reason.is_normal_end() {
            // A call whose terminator never came ends with the turn (seen in a recorded
            // Vertex stream whose last call has no `{"functionCall":{}}` terminator).
            self.close_open(out);
        }
        self.turn.finish(reason, raw, out);
    }

    fn part(&mut self, part: &Part, out: &mut Vec<StreamEvent>) -> Result<()> {
        let signature = part.thought_signature.as_deref().filter(|s| !s.is_empty());
        if let Some(call) = &part.function_call {
            return self.function_call(call, signature, out);
        }
        if let Some(code) = &part.executable_code {
            self.code(code, signature, out);
            if part.text.is_none() {
                return Ok(());
            }
        }
        if let Some(result) = &part.code_execution_result {
            self.code_result(result, signature, out);
            if part.text.is_none() {
                return Ok(());
            }
        }
        let others = [
            ("inlineData", &part.inline_data),
            ("fileData", &part.file_data),
        ];
        let mut kept = false;
        for (key, value) in others {
            if let Some(value) = value {
                let mut other = Map::new();
                other.insert(key.to_owned(), value.clone());
                if let Some(signature) = signature {
                    other.insert(
                        "thoughtSignature".into(),
                        Value::String(signature.to_owned()),
                    );
                }
                self.other_parts.push(Value::Object(other));
                kept = true;
            }
        }
        if kept {
            // Rare (media models): the list is set again whole each time one comes.
            self.turn
                .set_extra(OTHER_PARTS, Value::Array(self.other_parts.clone()));
            if part.text.is_none() {
                return Ok(());
            }
        }
        let thought = part.thought == Some(true);
        if let Some(text) = &part.text {
            if thought {
                self.turn.reasoning(text, out);
            } else {
                self.turn.text(text, out);
            }
        }
        if let Some(signature) = signature {
            let key = if thought {
                REASONING_SIGNATURE
            } else {
                THOUGHT_SIGNATURE
            };
            self.turn
                .set_extra(key, Value::String(signature.to_owned()));
        }
        Ok(())
    }

    /// An `executableCode` part: code Gemini runs itself, a hosted call (the part kept whole,
    /// with its signature).
    fn code(&mut self, code: &Value, signature: Option<&str>, out: &mut Vec<StreamEvent>) {
        let block = whole_part("executableCode", code, signature);
        let id = code.get("id").and_then(Value::as_str).unwrap_or("");
        let call = HostedCall::new(id, "code_execution", KIND.name())
            .with_input(code.clone())
            .with_blocks([block]);
        let index = self.turn.start_hosted(call, out);
        self.open_code = Some(index);
    }

    /// A `codeExecutionResult` part: the result of the code before it (or a call of its own
    /// when no code came first).
    fn code_result(&mut self, result: &Value, signature: Option<&str>, out: &mut Vec<StreamEvent>) {
        let block = whole_part("codeExecutionResult", result, signature);
        let index = match self.open_code.take() {
            Some(index) => index,
            None => {
                let call = HostedCall::new("", "code_execution", KIND.name());
                self.turn.start_hosted(call, out)
            }
        };
        if let Some(call) = self.turn.hosted_mut(index) {
            call.blocks.push(block);
        }
        let status = match result.get("outcome").and_then(Value::as_str) {
            None | Some("OUTCOME_OK") => "completed",
            Some(_) => "failed",
        };
        self.turn
            .hosted_done(index, Some(result.clone()), status, out);
    }

    /// A candidate's `groundingMetadata` (Google Search, URL context, Maps grounding): a hosted
    /// call with the queries as input and the metadata as result. Nothing goes back to the
    /// wire for it (Gemini takes no grounding in a history). The last one of a stream wins.
    fn grounding(&mut self, metadata: &Value, out: &mut Vec<StreamEvent>) {
        let input = match metadata.get("webSearchQueries") {
            Some(q) => serde_json::json!({"queries": q}),
            None => Value::Object(Map::new()),
        };
        let index = match self.grounding {
            Some(index) => index,
            None => {
                let call = HostedCall::new("", "google_search", KIND.name());
                let index = self.turn.start_hosted(call, out);
                self.grounding = Some(index);
                index
            }
        };
        if let Some(call) = self.turn.hosted_mut(index) {
            call.input = input;
        }
        self.turn
            .hosted_done(index, Some(metadata.clone()), "completed", out);
    }

    fn function_call(
        &mut self,
        call: &FunctionCall,
        signature: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        let name = call.name.as_deref().filter(|n| !n.is_empty());
        let id = call.id.as_deref().filter(|i| !i.is_empty());
        let continues = call.will_continue == Some(true);
        let Some(name) = name else {
            // A piece of the call in progress, a separator, or its `{}` terminator.
            if self.open.is_none() {
                if call.partial_args.is_empty() && call.args.is_none() {
                    return Ok(());
                }
                return Err(Error::decode(
                    KIND,
                    "functionCall",
                    "arguments without a function name and no call in progress",
                ));
            }
            return self.extend_open(call, signature, continues, out);
        };
        self.close_open(out);
        let streamed = call.args.is_none() && (continues || !call.partial_args.is_empty());
        if streamed {
            let index = i64::try_from(self.turn.call_count()).unwrap_or(i64::MAX);
            let (args, opening) = ArgsWriter::open();
            self.turn.fragment(
                0,
                Fragment {
                    index: Some(index),
                    id,
                    name: Some(name),
                    arguments: Some(opening),
                },
                out,
            );
            self.open = Some(OpenCall { index, args });
            return self.extend_open(call, signature, continues, out);
        }
        let raw = match &call.args {
            None | Some(Value::Null) => "{}".to_owned(),
            // Defensive: some proxies send the arguments as a JSON string.
            Some(Value::String(text)) => text.clone(),
            Some(args) => args.to_string(),
        };
        let mut extra = Map::new();
        if let Some(signature) = signature {
            extra.insert(
                THOUGHT_SIGNATURE.into(),
                Value::String(signature.to_owned()),
            );
        }
        // A whole call is final as it arrives: it can run while the turn goes on.
        let position = self.turn.whole_call(id, name, &raw, extra, out);
        self.turn.complete_call(position, out);
        Ok(())
    }

    /// Keeps a signature on the call in progress (the first one it got).
    /// Applies a piece of the open call (its signature and partial arguments), closing it when
    /// the piece does not say more will follow.
    fn extend_open(
        &mut self,
        call: &FunctionCall,
        signature: Option<&str>,
        continues: bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        if let Some(signature) = signature {
            self.sign_open(signature);
        }
        self.partials(call, out)?;
        if !continues {
            // The piece that does not say more will follow ends the call: it is final here.
            if let Some(open) = &self.open {
                let position = usize::try_from(open.index).unwrap_or(usize::MAX);
                self.close_open(out);
                self.turn.complete_call(position, out);
            }
        }
        Ok(())
    }

    fn sign_open(&mut self, signature: &str) {
        let Some(open) = &self.open else { return };
        let position = usize::try_from(open.index).unwrap_or(usize::MAX);
        if let Some(extra) = self.turn.call_extra(position) {
            extra
                .entry(THOUGHT_SIGNATURE)
                .or_insert_with(|| Value::String(signature.to_owned()));
        }
    }

    fn partials(&mut self, call: &FunctionCall, out: &mut Vec<StreamEvent>) -> Result<()> {
        for arg in &call.partial_args {
            let Some(open) = &mut self.open else { break };
            let text = open
                .args
                .apply(arg)
                .map_err(|m| Error::decode(KIND, "functionCall.partialArgs", m))?;
            let index = open.index;
            self.push(index, &text, out);
        }
        Ok(())
    }

    fn close_open(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(open) = self.open.take() {
            let text = open.args.close();
            self.push(open.index, &text, out);
        }
    }

    fn push(&mut self, index: i64, text: &str, out: &mut Vec<StreamEvent>) {
        self.turn.fragment(
            0,
            Fragment {
                index: Some(index),
                id: None,
                name: None,
                arguments: Some(text),
            },
            out,
        );
    }

    /// Parses one chunk; an `{"error": …}` chunk is [`Error::Api`].
    fn chunk(&self, data: &[u8], what: &str) -> Result<Response> {
        let chunk: Response =
            serde_json::from_slice(data).map_err(|e| Error::decode(KIND, what, e))?;
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
            return Err(api_error(None, data).into());
        }
        Ok(chunk)
    }
}

/// The fields of a `GenerateContentResponse`, one of which every body has.
const SHAPE: &str = super::BODY.fields;

/// A whole body: one `GenerateContentResponse`, or a JSON array of them.
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let mut decoder = Decoder::new();
    let mut sink = Vec::new();
    let chunks: Vec<&Value> = match &value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for (i, item) in chunks.into_iter().enumerate() {
        if item.get("error").is_some_and(|e| !e.is_null()) {
            return Err(api_error(None, body).into());
        }
        let what = if value.is_array() {
            format!("response body[{i}]")
        } else {
            "response body".to_owned()
        };
        let chunk = Response::deserialize(item).map_err(|e| Error::decode(KIND, what, e))?;
        decoder.apply(&chunk, &mut sink)?;
    }
    if !decoder.turn.is_finished() {
        if !decoder.saw_candidate {
            let shaped = |v: &Value| {
                ["candidates", "promptFeedback", "usageMetadata"]
                    .iter()
                    .any(|k| v.get(k).is_some())
            };
            let shaped = match &value {
                Value::Array(items) => items.iter().any(shaped),
                other => shaped(other),
            };
            if !shaped {
                return Err(foreign_body(KIND, SHAPE));
            }
            return Err(Error::decode(KIND, "response body", "no candidates"));
        }
        // A whole body is complete by definition; a missing finishReason means STOP.
        decoder.end_turn(FinishReason::Stop, None, &mut sink);
    }
    decoder.turn.end(&mut sink)
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, _event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        // Gemini sends no `[DONE]`; a proxy that adds one ends nothing early.
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let chunk = match self.chunk(data.as_bytes(), "stream payload") {
            Err(Error::Api(mut api)) => {
                // An error inside a 200 stream: no HTTP status of its own.
                api.status = None;
                api.partial = Some(Box::new(self.turn.interrupt()));
                return Err(Error::Api(api));
            }
            other => other?,
        };
        self.payloads += 1;
        self.shaped |= chunk.is_generate_content();
        self.apply(&chunk, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.payloads > 0 && !self.shaped {
            return Err(Error::foreign_stream(
                KIND,
                self.payloads,
                "`candidates`, `usageMetadata` or `promptFeedback`",
            ));
        }
        // The last chunk carries finishReason; a stream that ends without one was cut off and
        // `end` reports it with the partial response (open calls `truncated`).
        self.turn.end(out)
    }
}

/// The `error` object of a Google error body (`generateContent` and the Interactions API
/// alike): `{"error": {…}}`, an array of them (the first), or SSE-framed (`data: {"error": …}`).
pub(crate) fn error_object(body: &[u8]) -> Option<Map<String, Value>> {
    let parsed: Value = serde_json::from_slice(body).ok().or_else(|| {
        String::from_utf8_lossy(body)
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
    })?;
    let root = match parsed {
        Value::Array(items) => items.into_iter().next()?,
        other => other,
    };
    match root {
        Value::Object(mut o) => match o.remove("error")? {
            Value::Object(error) => Some(error),
            _ => None,
        },
        _ => None,
    }
}

/// Gemini's error body: `{"error": {"code", "message", "status", "details"}}`, or an array of
/// them. `status` names the HTTP status when the caller knows it; else `error.code` is used.
/// `code` is Gemini's `status` (`RESOURCE_EXHAUSTED`), `retry_after` its RetryInfo
/// `retryDelay`.
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    let Some(error) = error_object(body) else {
        return generic_error(KIND, status, body);
    };
    let http = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (100..600).contains(c));
    let mut api = generic_error(KIND, status.or(http), body);
    api.code = error
        .get("status")
        .and_then(scalar_text)
        .or_else(|| error.get("code").and_then(scalar_text));
    if let Some(message) = error.get("message").and_then(Value::as_str)
        && !message.is_empty()
    {
        api.message = message.to_owned();
    }
    api.retry_after = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| {
            d.get("retryDelay")
                .and_then(Value::as_str)
                .and_then(parse_delay)
        });
    api
}

/// A protobuf Duration in JSON: `"13s"`, `"0.5s"`, `"34.4s"`.
pub(crate) fn parse_delay(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    fn stream(chunks: &[&str]) -> Result<ChatResponse> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(None, c, &mut out)?;
        }
        d.finish(&mut out)
    }

    #[test]
    fn calls_one_per_chunk_never_merge() {
        let r = stream(&[
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}],"role":"model"},"index":0}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":2}}}],"role":"model"},"index":0}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"thoughtsTokenCount":3}}"#,
        ])
        .unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].raw_arguments, r#"{"a":1}"#);
        assert_eq!(r.tool_calls[1].raw_arguments, r#"{"a":2}"#);
        assert_eq!(r.tool_calls[0].extra[THOUGHT_SIGNATURE], "c2ln");
        assert!(!r.tool_calls[1].extra.contains_key(THOUGHT_SIGNATURE));
        assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);
        assert!(r.tool_calls[0].has_synthetic_id());
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.reasoning_tokens),
            (5, 10, Some(3))
        );
    }

    #[test]
    fn malformed_function_call_keeps_message() {
        for content in [r#""content":{},"#, r#""content":{"parts":[]},"#, ""] {
            let body = format!(
                r#"{{"candidates":[{{{content}"finishReason":"MALFORMED_FUNCTION_CALL","index":0,"finishMessage":"Malformed function call: print(x)"}}]}}"#
            );
            let r = decode_body(body.as_bytes()).unwrap();
            assert!(r.tool_calls.is_empty());
            assert_eq!(r.finish_reason.as_str(), "MALFORMED_FUNCTION_CALL");
            assert_eq!(r.extra[FINISH_MESSAGE], "Malformed function call: print(x)");
        }
    }

    #[test]
    fn partial_args_cut_off_are_truncated() {
        let err = stream(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"g","willContinue":true}}]}}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.q","stringValue":"ab","willContinue":true}],"willContinue":true}}]}}]}"#,
        ])
        .unwrap_err();
        let partial = err.partial().unwrap();
        let call = &partial.tool_calls[0];
        assert_eq!(call.raw_arguments, r#"{"q":"ab"#);
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
    }

    #[test]
    fn errors_keep_status_and_retry_delay() {
        let body = br#"[{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}]"#;
        let e = api_error(None, body);
        assert_eq!(e.status, Some(429));
        assert_eq!(e.code.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(e.message, "slow down");
        assert_eq!(e.retry_after, Some(Duration::from_millis(500)));
        assert!(matches!(
            decode_body(body),
            Err(Error::Api(api)) if api.status == Some(429)
        ));
        assert_eq!(parse_delay("13s"), Some(Duration::from_secs(13)));
        assert_eq!(parse_delay("-1s"), None);
        assert_eq!(parse_delay("13"), None);
    }
}
