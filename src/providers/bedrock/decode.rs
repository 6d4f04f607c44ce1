//! Converse bodies and ConverseStream event payloads → the canonical model.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::wire::{Event, Response, Usage as WireUsage};
use super::{ADDITIONAL_MODEL_RESPONSE_FIELDS, METRICS, REASONING_BLOCKS, TRACE, UNKNOWN_EVENTS};
use crate::assemble::Assembler;
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error};
use crate::providers::hosted::MAX_INPUT;
use crate::providers::lenient::Kept;
use crate::providers::shared::{foreign_body, stops_mid_json};
use crate::types::{ChatResponse, FinishReason, HostedCall, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::Bedrock;

/// Bedrock's `stopReason` in canonical terms: `end_turn` and `stop_sequence` are a normal end,
/// `tool_use` is `tool_calls`, `max_tokens` and `model_context_window_exceeded` are `length`,
/// `guardrail_intervened` and `content_filtered` are `content_filter`; any value added later
/// is kept verbatim.
pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "guardrail_intervened" | "content_filtered" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Canonical counts: every prompt token (uncached, read from and written to the cache) is
/// input, as the other wires count it; the cache parts are `cached_input_tokens`
/// (`cacheReadInputTokens`) and `cache_creation_input_tokens` (`cacheWriteInputTokens`).
fn usage(u: &WireUsage) -> Option<Usage> {
    if *u == WireUsage::default() {
        return None;
    }
    let input = [
        u.input_tokens,
        u.cache_read_input_tokens,
        u.cache_write_input_tokens,
    ]
    .into_iter()
    .flatten()
    .fold(0u64, u64::saturating_add);
    Some(Usage {
        input_tokens: input,
        output_tokens: u.output_tokens.unwrap_or(0),
        reasoning_tokens: None,
        cached_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_write_input_tokens,
    })
}

/// A content block between its first event and its `contentBlockStop`.
#[derive(Debug)]
enum Open {
    Text,
    /// `reasoningContent`: text and signature as they stream, or a redacted block.
    Reasoning {
        text: String,
        signature: String,
        redacted: Option<Value>,
    },
    /// A `toolUse` block: the call's position.
    Call {
        slot: usize,
    },
    /// A `toolUse` of `type: server_tool_use` (a call Bedrock runs, e.g. Nova's
    /// `nova_code_interpreter`): its position in `hosted_calls`, its input text so far and the
    /// start's block.
    Hosted {
        index: usize,
        input: String,
        block: Value,
    },
    /// The `toolResult` of such a call: its start, its text and JSON pieces so far.
    HostedResult {
        start: Value,
        text: String,
        json: Vec<Value>,
    },
    /// A block kind toolwire does not model: skipped.
    Other,
}

impl Open {
    fn name(&self) -> &'static str {
        match self {
            Self::Text => "text block",
            Self::Reasoning { .. } => "reasoningContent block",
            Self::Call { .. } => "toolUse block",
            Self::Hosted { .. } => "server_tool_use toolUse block",
            Self::HostedResult { .. } => "toolResult block",
            Self::Other => "block of another kind",
        }
    }
}

/// The decoder of one turn; a whole body goes through the same state, block by block.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    open: HashMap<i64, Open>,
    reasoning_blocks: Vec<Value>,
    stop: Option<String>,
    unknown: u64,
    /// Whether any payload had a known event kind (else: another wire's stream).
    known: bool,
    payloads: usize,
    /// The hosted calls by `toolUseId`, for their `toolResult` blocks.
    hosted_ids: HashMap<String, usize>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            open: HashMap::new(),
            reasoning_blocks: Vec::new(),
            stop: None,
            unknown: 0,
            known: false,
            payloads: 0,
            hosted_ids: HashMap::new(),
        }
    }

    /// Starts a call and announces its state: the reasoning blocks so far, echoed with the turn.
    fn start_call(&mut self, id: Option<&str>, name: &str, out: &mut Vec<StreamEvent>) -> usize {
        let slot = self.turn.start_call(id, name, out);
        let mut turn = serde_json::Map::new();
        if !self.reasoning_blocks.is_empty() {
            turn.insert(
                REASONING_BLOCKS.into(),
                Value::Array(self.reasoning_blocks.clone()),
            );
        }
        self.turn.call_state(slot, turn, out);
        slot
    }

    fn add_usage(&mut self, u: &Kept<WireUsage>, out: &mut Vec<StreamEvent>) {
        if let Some(counts) = usage(u) {
            self.turn.usage(counts, out);
            self.turn.raw_usage(u.raw.clone());
        }
    }

    /// One block of a whole body's `content`.
    fn whole_block(&mut self, block: &Value, at: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            self.turn.text(text, out);
        } else if let Some(call) = block.get("toolUse").filter(|c| is_server_tool(c)) {
            let index = self.start_hosted(call, block, out);
            self.turn.hosted_done(index, None, "input", out);
        } else if let Some(result) = block.get("toolResult") {
            self.hosted_result(result, block, out);
        } else if let Some(call) = block.get("toolUse") {
            let name = tool_name(call, at)?;
            let id = call.get("toolUseId").and_then(Value::as_str);
            let slot = self.start_call(id, name, out);
            let raw = input_text(call.get("input"));
            self.turn.append_arguments(slot, &raw, out);
            self.turn.complete_call(slot, out);
        } else if let Some(reasoning) = block.get("reasoningContent") {
            if let Some(text) = reasoning
                .pointer("/reasoningText/text")
                .and_then(Value::as_str)
            {
                self.turn.reasoning(text, out);
            }
            if let Some(signature) = reasoning
                .pointer("/reasoningText/signature")
                .and_then(Value::as_str)
            {
                self.turn.reasoning_signature(signature, out);
            }
            self.reasoning_blocks.push(reasoning.clone());
        } else {
            self.unknown = self.unknown.saturating_add(1);
        }
        Ok(())
    }

    /// A `toolUse` of `type: server_tool_use` starts a hosted call (`block` its wire block).
    fn start_hosted(&mut self, call: &Value, block: &Value, out: &mut Vec<StreamEvent>) -> usize {
        let id = call.get("toolUseId").and_then(Value::as_str).unwrap_or("");
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let input = match call.get("input") {
            Some(v @ Value::Object(_)) => v.clone(),
            _ => Value::Object(Map::new()),
        };
        let hosted = HostedCall::new(id, name, KIND.name())
            .with_input(input)
            .with_blocks([block.clone()]);
        let index = self.turn.start_hosted(hosted, out);
        self.hosted_ids.insert(id.to_owned(), index);
        index
    }

    /// A `toolResult` in the answer: always a hosted call's (a client's results are the
    /// user's); joins its call by `toolUseId`, or stands alone when none came before.
    fn hosted_result(&mut self, result: &Value, block: &Value, out: &mut Vec<StreamEvent>) {
        let id = result.get("toolUseId").and_then(Value::as_str);
        let index = match id.and_then(|id| self.hosted_ids.get(id).copied()) {
            Some(i) => i,
            None => {
                let kind = result.get("type").and_then(Value::as_str).unwrap_or("");
                let name = kind.strip_suffix("_result").unwrap_or(kind);
                let hosted = HostedCall::new(id.unwrap_or(""), name, KIND.name());
                self.turn.start_hosted(hosted, out)
            }
        };
        if let Some(call) = self.turn.hosted_mut(index) {
            call.blocks.push(block.clone());
        }
        let status = match result.get("status").and_then(Value::as_str) {
            Some("error") => "failed",
            _ => "completed",
        };
        let content = result.get("content").cloned().unwrap_or(Value::Null);
        self.turn.hosted_done(index, Some(content), status, out);
    }

    fn block_start(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "contentBlockStart")?;
        if self.open.contains_key(&index) {
            return Err(Error::decode(
                KIND,
                "contentBlockStart",
                format!("content block {index} started twice"),
            ));
        }
        let start = event.start.as_ref();
        let open = match start.and_then(|s| s.get("toolUse")) {
            Some(call) if is_server_tool(call) => {
                let block = serde_json::json!({"toolUse": call});
                Open::Hosted {
                    index: self.start_hosted(call, &block, out),
                    input: String::new(),
                    block,
                }
            }
            None if start.and_then(|s| s.get("toolResult")).is_some() => Open::HostedResult {
                start: start
                    .and_then(|s| s.get("toolResult"))
                    .cloned()
                    .unwrap_or(Value::Null),
                text: String::new(),
                json: Vec::new(),
            },
            Some(call) => {
                let name = tool_name(call, "contentBlockStart")?;
                let id = call.get("toolUseId").and_then(Value::as_str);
                Open::Call {
                    slot: self.start_call(id, name, out),
                }
            }
            None => {
                self.unknown = self.unknown.saturating_add(1);
                Open::Other
            }
        };
        self.open.insert(index, open);
        Ok(())
    }

    fn block_delta(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "contentBlockDelta")?;
        let Some(Value::Object(delta)) = &event.delta else {
            return Ok(());
        };
        let mismatch = |kind: &str, open: &Open| {
            Error::decode(
                KIND,
                "contentBlockDelta",
                format!(
                    "a {kind} delta for content block {index}, a {}",
                    open.name()
                ),
            )
        };
        if let Some(text) = delta.get("text") {
            let open = self.open.entry(index).or_insert(Open::Text);
            match open {
                Open::Text => self.turn.text(text.as_str().unwrap_or(""), out),
                other => return Err(mismatch("text", other)),
            }
        } else if let Some(call) = delta.get("toolUse") {
            let piece = call.get("input").and_then(Value::as_str).unwrap_or("");
            match self.open.get_mut(&index) {
                Some(Open::Call { slot }) => {
                    let slot = *slot;
                    if !piece.is_empty() {
                        self.turn.append_arguments(slot, piece, out);
                    }
                }
                Some(Open::Hosted { input, .. }) => {
                    if input.len().saturating_add(piece.len()) > MAX_INPUT {
                        return Err(Error::decode(
                            KIND,
                            "contentBlockDelta",
                            format!(
                                "the input of server tool block {index} passed {MAX_INPUT} bytes"
                            ),
                        ));
                    }
                    input.push_str(piece);
                }
                Some(other) => return Err(mismatch("toolUse", other)),
                None => {
                    return Err(Error::decode(
                        KIND,
                        "contentBlockDelta",
                        format!("a toolUse delta for content block {index}, which never started"),
                    ));
                }
            }
        } else if let Some(pieces) = delta.get("toolResult") {
            let Some(Open::HostedResult { text, json, .. }) = self.open.get_mut(&index) else {
                return Err(Error::decode(
                    KIND,
                    "contentBlockDelta",
                    format!("a toolResult delta for content block {index}, which is no toolResult"),
                ));
            };
            // One piece or a list of them, each `{"text"}` or `{"json"}`.
            let pieces = match pieces {
                Value::Array(list) => list.iter().collect(),
                one => vec![one],
            };
            for piece in pieces {
                if let Some(t) = piece.get("text").and_then(Value::as_str) {
                    if text.len().saturating_add(t.len()) > MAX_INPUT {
                        return Err(Error::decode(
                            KIND,
                            "contentBlockDelta",
                            format!("the toolResult of block {index} passed {MAX_INPUT} bytes"),
                        ));
                    }
                    text.push_str(t);
                } else if let Some(j) = piece.get("json") {
                    json.push(j.clone());
                }
            }
        } else if let Some(reasoning) = delta.get("reasoningContent") {
            let open = self.open.entry(index).or_insert(Open::Reasoning {
                text: String::new(),
                signature: String::new(),
                redacted: None,
            });
            let Open::Reasoning {
                text,
                signature,
                redacted,
            } = open
            else {
                return Err(mismatch("reasoningContent", open));
            };
            if let Some(piece) = reasoning.get("text").and_then(Value::as_str) {
                text.push_str(piece);
                self.turn.reasoning(piece, out);
            }
            if let Some(piece) = reasoning.get("signature").and_then(Value::as_str) {
                signature.push_str(piece);
                self.turn.reasoning_signature(piece, out);
            }
            if let Some(r) = reasoning.get("redactedContent") {
                *redacted = Some(r.clone());
            }
        } else {
            self.open.entry(index).or_insert(Open::Other);
            self.unknown = self.unknown.saturating_add(1);
        }
        Ok(())
    }

    fn block_stop(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "contentBlockStop")?;
        match self.open.remove(&index) {
            Some(Open::Reasoning {
                text,
                signature,
                redacted,
            }) => {
                let mut block = Map::new();
                if let Some(r) = redacted {
                    block.insert("redactedContent".into(), r);
                } else {
                    let mut inner = Map::new();
                    inner.insert("text".into(), Value::String(text));
                    if !signature.is_empty() {
                        inner.insert("signature".into(), Value::String(signature));
                    }
                    block.insert("reasoningText".into(), Value::Object(inner));
                }
                self.reasoning_blocks.push(Value::Object(block));
            }
            Some(Open::Call { slot }) => {
                // The block is over: the call is final now, unless its text stops inside a
                // JSON value (a token limit can close a block early): the stop reason then
                // decides, `truncated` under max_tokens, `malformed` otherwise.
                let cut = self.turn.call_arguments(slot).is_some_and(stops_mid_json);
                if !cut {
                    self.turn.complete_call(slot, out);
                }
            }
            Some(Open::Hosted {
                index,
                input,
                mut block,
            }) => {
                if !input.is_empty() {
                    let parsed: Value = serde_json::from_str(&input).map_err(|e| {
                        Error::decode(
                            KIND,
                            "contentBlockStop",
                            format!("the input of server tool block {index} is not JSON: {e}"),
                        )
                    })?;
                    if let Some(call) = block.get_mut("toolUse").and_then(Value::as_object_mut) {
                        call.insert("input".into(), parsed.clone());
                    }
                    if let Some(call) = self.turn.hosted_mut(index) {
                        call.input = parsed;
                        call.blocks = vec![block];
                    }
                }
                self.turn.hosted_done(index, None, "input", out);
            }
            Some(Open::HostedResult { start, text, json }) => {
                // The block as a body carries it: the start's fields, then the content.
                let mut result = match start {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                let mut content: Vec<Value> = Vec::new();
                if !text.is_empty() {
                    content.push(serde_json::json!({"text": text}));
                }
                content.extend(json.into_iter().map(|j| serde_json::json!({"json": j})));
                result.insert("content".into(), Value::Array(content));
                let block = serde_json::json!({"toolResult": result});
                self.hosted_result(&block["toolResult"], &block, out);
            }
            Some(Open::Text | Open::Other) | None => {}
        }
        Ok(())
    }

    fn message_stop(&mut self, event: &Event, out: &mut Vec<StreamEvent>) {
        if let Some(fields) = event
            .additional_model_response_fields
            .as_ref()
            .filter(|v| !v.is_null())
        {
            self.turn
                .set_extra(ADDITIONAL_MODEL_RESPONSE_FIELDS, fields.clone());
        }
        self.stop = event.stop_reason.clone();
        self.end_turn(out);
    }

    fn metadata(&mut self, event: &Event, out: &mut Vec<StreamEvent>) {
        if let Some(u) = &event.usage {
            self.add_usage(u, out);
        }
        self.keep(METRICS, event.metrics.as_ref());
        self.keep(TRACE, event.trace.as_ref());
    }

    fn keep(&mut self, key: &str, value: Option<&Value>) {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            self.turn.set_extra(key, v.clone());
        }
    }

    /// The turn is over: finishes with the stop reason the wire gave, or `stop` when none.
    fn end_turn(&mut self, out: &mut Vec<StreamEvent>) {
        let raw = self.stop.as_deref();
        let reason = raw.map_or(FinishReason::Stop, finish_reason);
        self.turn.finish(reason, raw, out);
    }

    fn flush_extra(&mut self) {
        if !self.reasoning_blocks.is_empty() {
            let blocks = std::mem::take(&mut self.reasoning_blocks);
            self.turn.set_extra(REASONING_BLOCKS, Value::Array(blocks));
        }
        if self.unknown > 0 {
            self.turn
                .set_extra(UNKNOWN_EVENTS, Value::from(self.unknown));
        }
    }
}

/// A `toolUse` Bedrock runs itself: `type: server_tool_use` (Nova's built-in tools).
fn is_server_tool(call: &Value) -> bool {
    call.get("type").and_then(Value::as_str) == Some("server_tool_use")
}

fn block_index(event: &Event, what: &str) -> Result<i64> {
    event
        .content_block_index
        .ok_or_else(|| Error::decode(KIND, what, "no contentBlockIndex"))
}

/// A `toolUse` block's name: required, since a call without one can never run.
fn tool_name<'a>(call: &'a Value, at: &str) -> Result<&'a str> {
    call.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::decode(KIND, at, "a toolUse block without a name"))
}

/// A whole `toolUse` block's `input` as argument text: the object as compact JSON (key order
/// kept), empty when absent or null (which means `{}`), a string as is.
fn input_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The fields of a Converse body, one of which every body has.
const SHAPE: &str = super::BODY.fields;

/// A whole Converse body (or an error body).
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let response: Response =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let message = response.output.as_ref().and_then(|o| o.message.as_ref());
    if message.is_none() && response.stop_reason.is_none() {
        if response.message.is_some() {
            return Err(api_error(None, body).into());
        }
        return Err(foreign_body(KIND, SHAPE));
    }
    let mut decoder = Decoder::new();
    let mut sink = Vec::new();
    if let Some(u) = &response.usage {
        decoder.add_usage(u, &mut sink);
    }
    for (i, block) in message
        .map(|m| m.content.as_slice())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        decoder.whole_block(block, &format!("output.message.content[{i}]"), &mut sink)?;
    }
    decoder.keep(METRICS, response.metrics.as_ref());
    decoder.keep(TRACE, response.trace.as_ref());
    decoder.keep(
        ADDITIONAL_MODEL_RESPONSE_FIELDS,
        response.additional_model_response_fields.as_ref(),
    );
    decoder.stop = response.stop_reason.clone();
    decoder.end_turn(&mut sink);
    decoder.flush_extra();
    decoder.turn.end(&mut sink)
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        self.payloads += 1;
        let event: Event =
            serde_json::from_str(data).map_err(|e| Error::decode(KIND, "stream event", e))?;
        let name = name.unwrap_or("");
        let known = matches!(
            name,
            "messageStart"
                | "contentBlockStart"
                | "contentBlockDelta"
                | "contentBlockStop"
                | "messageStop"
                | "metadata"
        );
        self.known |= known;
        match name {
            "messageStart" => {}
            "contentBlockStart" => self.block_start(&event, out)?,
            "contentBlockDelta" => self.block_delta(&event, out)?,
            "contentBlockStop" => self.block_stop(&event, out)?,
            "messageStop" => self.message_stop(&event, out),
            "metadata" => self.metadata(&event, out),
            _ => self.unknown = self.unknown.saturating_add(1),
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if !self.known && self.payloads > 0 {
            return Err(Error::foreign_stream(
                KIND,
                self.payloads,
                "frames with an :event-type of messageStart, contentBlockDelta, messageStop, …",
            ));
        }
        // `messageStop` carries the stop reason; a stream that ends before it was cut off, and
        // `end` reports it with the partial response (open calls `truncated`).
        self.flush_extra();
        self.turn.end(out)
    }
}

/// Bedrock's error body `{"message": "…"}` (the error's type travels in the
/// `x-amzn-ErrorType` header; a body that names it in `__type` or `code` gives the code,
/// `ValidationException` from `com.amazon.coral.validate#ValidationException` or
/// `ValidationException:http://…`). A stream's exception frame has the same payload; its
/// `:exception-type` header gives the code.
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    let mut err = generic_error(KIND, status, body);
    if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
        if let Some(m) = ["message", "Message"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
        {
            err.message = m.to_owned();
        }
        if let Some(code) = ["__type", "code", "Code"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
        {
            let code = code.rsplit('#').next().unwrap_or(code);
            let code = code.split(':').next().unwrap_or(code);
            err.code = Some(code.to_owned());
        }
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    fn stream(events: &[(&str, &str)]) -> Result<(Vec<StreamEvent>, ChatResponse)> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for (name, data) in events {
            d.feed(Some(name), data, &mut out)?;
        }
        let r = d.finish(&mut out)?;
        Ok((out, r))
    }

    const CALL_START: (&str, &str) = (
        "contentBlockStart",
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_a","name":"f"}}}"#,
    );

    #[test]
    fn a_call_completes_at_its_block_stop_and_usage_follows_the_stop() {
        let (events, r) = stream(&[
            ("messageStart", r#"{"role":"assistant"}"#),
            CALL_START,
            ("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"a\":"}}}"#),
            ("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"1}"}}}"#),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            ("messageStop", r#"{"stopReason":"tool_use"}"#),
            ("metadata", r#"{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"cacheReadInputTokens":4},"metrics":{"latencyMs":321}}"#),
        ])
        .unwrap();
        let complete = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
            .unwrap();
        let finish = events
            .iter()
            .position(|e| matches!(e, StreamEvent::Finish { .. }))
            .unwrap();
        assert!(complete < finish);
        assert_eq!(r.tool_calls[0].raw_arguments, r#"{"a":1}"#);
        assert_eq!(r.tool_calls[0].id, "tooluse_a");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (14, 5));
        assert_eq!(u.cached_input_tokens, Some(4));
        assert_eq!(r.extra[METRICS]["latencyMs"], 321);
        assert_eq!(r.raw_usage.unwrap()["totalTokens"], 15);
    }

    #[test]
    fn max_tokens_decides_a_call_cut_mid_json() {
        for (reason, kind) in [
            ("max_tokens", ArgumentsErrorKind::Truncated),
            ("tool_use", ArgumentsErrorKind::Malformed),
        ] {
            let stop = format!(r#"{{"stopReason":"{reason}"}}"#);
            let (_, r) = stream(&[
                CALL_START,
                (
                    "contentBlockDelta",
                    r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"a\":\"xy"}}}"#,
                ),
                ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
                ("messageStop", &stop),
            ])
            .unwrap();
            assert_eq!(
                r.tool_calls[0].error.as_ref().unwrap().kind,
                kind,
                "{reason}"
            );
        }
    }

    #[test]
    fn reasoning_streams_and_is_kept_with_its_signature() {
        let (_, r) = stream(&[
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Think"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"ing."}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"text":"Hi"}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":1}"#),
            ("messageStop", r#"{"stopReason":"end_turn"}"#),
        ])
        .unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("Thinking."));
        assert_eq!(r.text.as_deref(), Some("Hi"));
        assert_eq!(
            r.extra[REASONING_BLOCKS],
            serde_json::json!([{"reasoningText": {"text": "Thinking.", "signature": "c2ln"}}])
        );
    }

    #[test]
    fn mismatched_deltas_and_foreign_streams_are_decode_errors() {
        let err = stream(&[
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"a"}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{"}}}"#,
            ),
        ])
        .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        let err = stream(&[("chunk", r#"{"choices":[]}"#)]).unwrap_err();
        assert!(err.to_string().contains("another provider"), "{err}");
        let err = stream(&[("messageStart", r#"{"role":"assistant"}"#)]).unwrap_err();
        assert!(matches!(err, Error::Stream { .. }), "{err}");
    }

    #[test]
    fn error_bodies_keep_message_and_type() {
        let e = api_error(
            Some(400),
            br#"{"message":"The model returned the following errors: bad"}"#,
        );
        assert_eq!(e.message, "The model returned the following errors: bad");
        let e = api_error(
            Some(400),
            br#"{"__type":"com.amazon.coral.validate#ValidationException","message":"m"}"#,
        );
        assert_eq!(e.code.as_deref(), Some("ValidationException"));
        let err = decode_body(br#"{"message":"Too many requests"}"#).unwrap_err();
        assert_eq!(err.api().unwrap().message, "Too many requests");
    }

    #[test]
    fn a_server_tool_use_streams_as_a_hosted_call_and_the_client_call_stays_alone() {
        let (events, r) = stream(&[
            ("messageStart", r#"{"role":"assistant"}"#),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_s","name":"nova_code_interpreter","type":"server_tool_use"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"code\":\"1+1\"}"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":1,"start":{"toolResult":{"toolUseId":"tooluse_s","type":"nova_code_interpreter_result","status":"success"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"toolResult":[{"text":"{\"stdOut\":"}]}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"toolResult":[{"text":"\"2\"}"}]}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":1}"#),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_c","name":"f"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{}"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":2}"#),
            ("messageStop", r#"{"stopReason":"tool_use"}"#),
        ])
        .unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].name, "f");
        let h = &r.hosted_calls[0];
        assert_eq!(
            (h.name.as_str(), h.id.as_str()),
            ("nova_code_interpreter", "tooluse_s")
        );
        assert_eq!(h.input["code"], "1+1");
        assert_eq!(h.blocks[0]["toolUse"]["input"]["code"], "1+1");
        assert_eq!(h.blocks[0]["toolUse"]["type"], "server_tool_use");
        assert_eq!(
            h.blocks[1]["toolResult"]["content"][0]["text"],
            r#"{"stdOut":"2"}"#
        );
        assert_eq!(h.blocks[1]["toolResult"]["status"], "success");
        let hosted: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::HostedCall { status, .. } => Some(status.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(hosted, ["running", "input", "completed"]);
        let started = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
            .count();
        assert_eq!(started, 1);
    }
}
