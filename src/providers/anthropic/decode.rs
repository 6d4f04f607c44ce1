//! Messages API bodies and stream events → the canonical model.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{Block, Delta, Event, Message, Usage as WireUsage};
use super::{
    CACHE_CREATION_INPUT_TOKENS, CACHE_READ_INPUT_TOKENS, CALLER, STOP_DETAILS, STOP_SEQUENCE,
    TEXT_CITATIONS, THINKING_BLOCKS, UNKNOWN_EVENTS,
};
use crate::assemble::Assembler;
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error};
use crate::providers::lenient::Kept;
use crate::providers::shared::{foreign_body, stops_mid_json};
use crate::types::{ChatResponse, FinishReason, HostedCall, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::Anthropic;

/// Anthropic's `stop_reason` in canonical terms: `end_turn` and `stop_sequence` are a normal
/// end, `tool_use` is `tool_calls`, `max_tokens` and `model_context_window_exceeded` are
/// `length`, `refusal` is `content_filter`, `pause_turn` (a server-tool loop paused: send the
/// turn back to continue) is `pause`; any value added later is kept verbatim.
pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        "pause_turn" => FinishReason::Pause,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Canonical counts: every prompt token (uncached, written to and read from the cache) is
/// input, as the other wires count it; the cache parts, when the wire sends them, are
/// `cached_input_tokens` (`cache_read_input_tokens`) and `cache_creation_input_tokens` (and
/// stay in `extra` too, as before).
/// The usage of a whole body read alone ([`crate::provider::Provider::decode_usage`]): its
/// `usage` field, the rest of the body skipped unread.
pub(super) fn body_usage(body: &[u8]) -> Option<Usage> {
    #[derive(Deserialize)]
    struct Counted {
        #[serde(default, deserialize_with = "crate::providers::lenient::object")]
        usage: Option<WireUsage>,
    }
    let counted: Counted = serde_json::from_slice(body).ok()?;
    counted.usage.as_ref().and_then(usage)
}

fn usage(u: &WireUsage) -> Option<Usage> {
    if *u == WireUsage::default() {
        return None;
    }
    let input = [
        u.input_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens,
    ]
    .into_iter()
    .flatten()
    .fold(0u64, u64::saturating_add);
    Some(Usage {
        input_tokens: input,
        output_tokens: u.output_tokens.unwrap_or(0),
        reasoning_tokens: None,
        cached_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
    })
}

/// A content block between its `content_block_start` and `content_block_stop`.
#[derive(Debug)]
enum Open {
    /// A text block: where it starts in the turn's text, and its citations so far.
    Text {
        at: usize,
        citations: Vec<Value>,
    },
    Thinking {
        text: String,
        signature: String,
    },
    /// `redacted_thinking`: whole at its start, kept verbatim.
    Redacted(Value),
    /// A `tool_use` block: the call's position, whether argument text arrived, and the
    /// start's `input` as compact JSON (the arguments when no text arrives).
    Call {
        slot: usize,
        streamed: bool,
        input: String,
    },
    /// A `server_tool_use` / `mcp_tool_use` block: a call Anthropic runs (its position in
    /// `hosted_calls`), its input text so far, and the start's block.
    Hosted {
        index: usize,
        input: String,
        block: Value,
    },
    /// A block type toolwire does not model (citations, …): skipped.
    Other,
}

/// The wire's stop fields, kept verbatim for the response's `extra`.
#[derive(Debug, Default)]
struct Stop {
    reason: Option<String>,
    sequence: Option<String>,
    details: Option<Value>,
}

/// The decoder of one turn. A whole body is decoded through the same state, its blocks
/// applied as whole blocks.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    open: HashMap<i64, Open>,
    usage: WireUsage,
    /// The usage objects as sent, each laid over the ones before (see `add_usage`).
    raw_usage: Option<Map<String, Value>>,
    /// Thinking blocks that came before any other block: echoed first.
    thinking: Vec<Value>,
    /// Thinking blocks after another block, waiting for the call they precede.
    pending: Vec<Value>,
    content_seen: bool,
    stop: Stop,
    unknown_events: u64,
    /// The hosted calls by id, for their result blocks.
    hosted_ids: HashMap<String, usize>,
    /// Bytes of visible text so far (where the next text block starts).
    text_len: usize,
    /// The text blocks that carried citations: `{"at", "len", "citations"}` each.
    citations: Vec<Value>,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            open: HashMap::new(),
            usage: WireUsage::default(),
            raw_usage: None,
            thinking: Vec::new(),
            pending: Vec::new(),
            content_seen: false,
            stop: Stop::default(),
            unknown_events: 0,
            hosted_ids: HashMap::new(),
            text_len: 0,
            citations: Vec::new(),
        }
    }

    /// Visible text of the open (or a whole) text block.
    fn text(&mut self, text: &str, out: &mut Vec<StreamEvent>) {
        self.text_len += text.len();
        self.turn.text(text, out);
    }

    /// A text block that ended: its citations, if any, kept with the span of text they cite.
    fn cited(&mut self, at: usize, citations: Vec<Value>) {
        if !citations.is_empty() {
            let mut span = Map::new();
            span.insert("at".into(), Value::from(at));
            span.insert("len".into(), Value::from(self.text_len - at));
            span.insert("citations".into(), Value::Array(citations));
            self.citations.push(Value::Object(span));
        }
    }

    /// A `tool_use` block's `caller` (programmatic tool calling), onto its call.
    fn caller(&mut self, slot: usize, block: &Value) {
        if let Some(caller) = block.get(CALLER).filter(|c| c.is_object())
            && let Some(extra) = self.turn.call_extra(slot)
        {
            extra.insert(CALLER.into(), caller.clone());
        }
    }

    /// One usage object: a body's, `message_start`'s, or a `message_delta`'s. The raw report
    /// is the first object as sent with each later one laid over it key by key, a later
    /// `null` replacing nothing: what Anthropic's SDKs accumulate into the final message's
    /// `usage` (anthropic-sdk-python `accumulate_event`).
    fn add_usage(&mut self, u: &Kept<WireUsage>, out: &mut Vec<StreamEvent>) {
        self.usage = self.usage.merged(u);
        let Value::Object(fields) = &u.raw else {
            return;
        };
        match &mut self.raw_usage {
            None => self.raw_usage = Some(fields.clone()),
            Some(raw) => {
                for (k, v) in fields.iter().filter(|(_, v)| !v.is_null()) {
                    raw.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(counts) = usage(&self.usage) {
            self.turn.usage(counts, out);
            if let Some(raw) = &self.raw_usage {
                self.turn.raw_usage(Value::Object(raw.clone()));
            }
        }
    }

    fn record_stop(
        &mut self,
        reason: Option<&String>,
        sequence: Option<&String>,
        details: Option<&Value>,
    ) {
        if let Some(r) = reason {
            self.stop.reason = Some(r.clone());
        }
        if let Some(s) = sequence {
            self.stop.sequence = Some(s.clone());
        }
        if let Some(d) = details.filter(|d| !d.is_null()) {
            self.stop.details = Some(d.clone());
        }
    }

    /// A finished thinking block: first in the message when nothing else came before it,
    /// otherwise it rides on the next call.
    fn keep_thinking(&mut self, block: Value) {
        if self.content_seen {
            self.pending.push(block);
        } else {
            self.thinking.push(block);
        }
    }

    /// Starts a call; thinking blocks waiting since the last block ride on it.
    fn start_call(&mut self, id: Option<&str>, name: &str, out: &mut Vec<StreamEvent>) -> usize {
        let slot = self.turn.start_call(id, name, out);
        if !self.pending.is_empty()
            && let Some(extra) = self.turn.call_extra(slot)
        {
            let blocks = std::mem::take(&mut self.pending);
            extra.insert(THINKING_BLOCKS.into(), Value::Array(blocks));
        }
        let mut turn = Map::new();
        if !self.thinking.is_empty() {
            turn.insert(THINKING_BLOCKS.into(), Value::Array(self.thinking.clone()));
        }
        self.turn.call_state(slot, turn, out);
        slot
    }

    /// A block that arrived whole: an element of a body's `content` (or of `message_start`'s).
    fn whole_block(&mut self, value: &Value, at: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let block = Block::deserialize(value).unwrap_or_default();
        match block.kind.as_deref() {
            Some("text") => {
                self.content_seen = true;
                let at = self.text_len;
                self.text(block.text.as_deref().unwrap_or(""), out);
                self.cited(at, citations_of(value));
            }
            Some("thinking") => {
                self.turn
                    .reasoning(block.thinking.as_deref().unwrap_or(""), out);
                self.turn
                    .reasoning_signature(block.signature.as_deref().unwrap_or(""), out);
                self.keep_thinking(value.clone());
            }
            Some("redacted_thinking") => {
                self.turn.redacted_reasoning(redacted_data(value), out);
                self.keep_thinking(value.clone());
            }
            Some("tool_use") => {
                self.content_seen = true;
                let name = tool_name(&block, at)?;
                let slot = self.start_call(block.id.as_deref(), name, out);
                self.caller(slot, value);
                let raw = input_text(block.input.as_ref());
                self.turn.append_arguments(slot, &raw, out);
                self.turn.complete_call(slot, out);
            }
            Some(kind) if is_hosted_use(kind) => {
                let index = self.start_hosted(value, &block, out);
                self.turn.hosted_done(index, None, "input", out);
            }
            Some(kind) if is_hosted_result(kind) => self.hosted_result(value, kind, out),
            _ => self.content_seen = true,
        }
        Ok(())
    }

    /// A `server_tool_use` (or `mcp_tool_use`) block starts a hosted call.
    fn start_hosted(&mut self, value: &Value, block: &Block, out: &mut Vec<StreamEvent>) -> usize {
        let name = block.name.clone().unwrap_or_default();
        let input = match &block.input {
            Some(v @ Value::Object(_)) => v.clone(),
            _ => Value::Object(Map::new()),
        };
        let call = HostedCall::new(block.id.clone().unwrap_or_default(), name, KIND.name())
            .with_input(input)
            .with_blocks([value.clone()]);
        let index = self.turn.start_hosted(call, out);
        if let Some(id) = &block.id {
            self.hosted_ids.insert(id.clone(), index);
        }
        index
    }

    /// A `*_tool_result` block of a server tool: joins the call it answers (by
    /// `tool_use_id`), or stands alone as a call of its own when none came before.
    fn hosted_result(&mut self, value: &Value, kind: &str, out: &mut Vec<StreamEvent>) {
        let id = value.get("tool_use_id").and_then(Value::as_str);
        let result = value.get("content").cloned().unwrap_or(Value::Null);
        let index = match id.and_then(|id| self.hosted_ids.get(id).copied()) {
            Some(i) => i,
            None => {
                let name = kind.strip_suffix("_tool_result").unwrap_or(kind);
                let call = HostedCall::new(id.unwrap_or(""), name, KIND.name());
                self.turn.start_hosted(call, out)
            }
        };
        if let Some(call) = self.turn.hosted_mut(index) {
            call.blocks.push(value.clone());
        }
        let failed = result
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("_error"));
        let status = if failed { "failed" } else { "completed" };
        self.turn.hosted_done(index, Some(result), status, out);
    }

    fn message(&mut self, message: &Message, at: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        if let Some(u) = &message.usage {
            self.add_usage(u, out);
        }
        for (i, block) in message.content.iter().enumerate() {
            self.whole_block(block, &format!("{at}.content[{i}]"), out)?;
        }
        self.record_stop(
            message.stop_reason.as_ref(),
            message.stop_sequence.as_ref(),
            message.stop_details.as_ref(),
        );
        Ok(())
    }

    fn block_start(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "content_block_start")?;
        if self.open.contains_key(&index) {
            return Err(Error::decode(
                KIND,
                "content_block_start",
                format!("content block {index} started twice"),
            ));
        }
        let value = event.content_block.clone().unwrap_or(Value::Null);
        let block = Block::deserialize(&value).unwrap_or_default();
        let open = match block.kind.as_deref() {
            Some("text") => {
                self.content_seen = true;
                let at = self.text_len;
                self.text(block.text.as_deref().unwrap_or(""), out);
                Open::Text {
                    at,
                    citations: citations_of(&value),
                }
            }
            Some("thinking") => {
                let text = block.thinking.unwrap_or_default();
                self.turn.reasoning(&text, out);
                self.turn
                    .reasoning_signature(block.signature.as_deref().unwrap_or(""), out);
                Open::Thinking {
                    text,
                    signature: block.signature.unwrap_or_default(),
                }
            }
            Some("redacted_thinking") => {
                self.turn.redacted_reasoning(redacted_data(&value), out);
                Open::Redacted(value)
            }
            Some("tool_use") => {
                self.content_seen = true;
                let name = tool_name(&block, "content_block_start")?;
                let slot = self.start_call(block.id.as_deref(), name, out);
                self.caller(slot, &value);
                Open::Call {
                    slot,
                    streamed: false,
                    input: input_text(block.input.as_ref()),
                }
            }
            Some(kind) if is_hosted_use(kind) => {
                let index = self.start_hosted(&value, &block, out);
                Open::Hosted {
                    index,
                    input: String::new(),
                    block: value,
                }
            }
            Some(kind) if is_hosted_result(kind) => {
                self.hosted_result(&value, kind, out);
                Open::Other
            }
            _ => {
                self.content_seen = true;
                Open::Other
            }
        };
        self.open.insert(index, open);
        Ok(())
    }

    fn block_delta(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "content_block_delta")?;
        let Some(delta) = &event.delta else {
            return Ok(());
        };
        let kind = delta.kind.as_deref().unwrap_or("");
        let Some(open) = self.open.get_mut(&index) else {
            return Err(Error::decode(
                KIND,
                "content_block_delta",
                format!("a {kind} for content block {index}, which is not open"),
            ));
        };
        let text = |d: &Delta| match kind {
            "text_delta" => d.text.clone(),
            "thinking_delta" => d.thinking.clone(),
            "signature_delta" => d.signature.clone(),
            _ => d.partial_json.clone(),
        };
        let piece = text(delta).unwrap_or_default();
        match (kind, open) {
            ("text_delta", Open::Text { .. }) => self.text(&piece, out),
            ("citations_delta", Open::Text { citations, .. }) => {
                if let Some(c) = delta.citation.clone().filter(Value::is_object) {
                    citations.push(c);
                }
            }
            ("thinking_delta", Open::Thinking { text, .. }) => {
                text.push_str(&piece);
                self.turn.reasoning(&piece, out);
            }
            ("signature_delta", Open::Thinking { signature, .. }) => {
                signature.push_str(&piece);
                self.turn.reasoning_signature(&piece, out);
            }
            ("input_json_delta", Open::Call { slot, streamed, .. }) => {
                if !piece.is_empty() {
                    *streamed = true;
                    let slot = *slot;
                    self.turn.append_arguments(slot, &piece, out);
                }
            }
            ("input_json_delta", Open::Hosted { input, .. }) => {
                if input.len().saturating_add(piece.len()) > crate::providers::hosted::MAX_INPUT {
                    return Err(Error::decode(
                        KIND,
                        "content_block_delta",
                        format!(
                            "the input of server tool block {index} passed {} bytes",
                            crate::providers::hosted::MAX_INPUT
                        ),
                    ));
                }
                input.push_str(&piece);
            }
            (_, Open::Other) | ("citations_delta", _) => {}
            ("text_delta" | "thinking_delta" | "signature_delta" | "input_json_delta", open) => {
                return Err(Error::decode(
                    KIND,
                    "content_block_delta",
                    format!("a {kind} for content block {index}, a {}", open.name()),
                ));
            }
            _ => self.unknown_events = self.unknown_events.saturating_add(1),
        }
        Ok(())
    }

    fn block_stop(&mut self, event: &Event, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = block_index(event, "content_block_stop")?;
        match self.open.remove(&index) {
            Some(Open::Thinking { text, signature }) => {
                let mut block = Map::new();
                block.insert("type".into(), Value::String("thinking".into()));
                block.insert("thinking".into(), Value::String(text));
                block.insert("signature".into(), Value::String(signature));
                self.keep_thinking(Value::Object(block));
            }
            Some(Open::Redacted(block)) => self.keep_thinking(block),
            Some(Open::Call {
                slot,
                streamed,
                input,
            }) => {
                if !streamed {
                    // No argument text came (a tool without parameters streams one empty
                    // `partial_json`): the arguments are the start's `input`, `{}`.
                    self.turn.append_arguments(slot, &input, out);
                }
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
                // The input streamed as text: it replaces the start's `{}` in the block kept.
                if !input.is_empty() {
                    let parsed: Value = serde_json::from_str(&input).map_err(|e| {
                        Error::decode(
                            KIND,
                            "content_block_stop",
                            format!("the input of server tool block {index} is not JSON: {e}"),
                        )
                    })?;
                    if let Some(b) = block.as_object_mut() {
                        b.insert("input".into(), parsed.clone());
                    }
                    if let Some(call) = self.turn.hosted_mut(index) {
                        call.input = parsed;
                        call.blocks = vec![block];
                    }
                }
                self.turn.hosted_done(index, None, "input", out);
            }
            Some(Open::Text { at, citations }) => self.cited(at, citations),
            Some(Open::Other) | None => {}
        }
        Ok(())
    }

    fn message_delta(&mut self, event: &Event, out: &mut Vec<StreamEvent>) {
        if let Some(u) = &event.usage {
            self.add_usage(u, out);
        }
        if let Some(delta) = &event.delta {
            self.record_stop(
                delta.stop_reason.as_ref(),
                delta.stop_sequence.as_ref(),
                delta.stop_details.as_ref(),
            );
            if let Some(reason) = &delta.stop_reason {
                self.turn.finish(finish_reason(reason), Some(reason), out);
            }
        }
    }

    /// The turn is over (`message_stop`, or the end of a whole body): finishes with the stop
    /// reason the wire gave, or `stop` when it gave none.
    fn end_turn(&mut self, out: &mut Vec<StreamEvent>) {
        let raw = self.stop.reason.as_deref();
        let reason = raw.map_or(FinishReason::Stop, finish_reason);
        self.turn.finish(reason, raw, out);
    }

    /// Moves the provider data into the response's `extra`.
    fn flush_extra(&mut self) {
        let mut blocks = std::mem::take(&mut self.thinking);
        // Thinking after the last call has nothing to ride on: it goes first with the rest.
        blocks.append(&mut self.pending);
        if !blocks.is_empty() {
            self.turn.set_extra(THINKING_BLOCKS, Value::Array(blocks));
        }
        if !self.citations.is_empty() {
            let spans = std::mem::take(&mut self.citations);
            self.turn.set_extra(TEXT_CITATIONS, Value::Array(spans));
        }
        if let Some(s) = self.stop.sequence.take() {
            self.turn.set_extra(STOP_SEQUENCE, Value::String(s));
        }
        if let Some(d) = self.stop.details.take() {
            self.turn.set_extra(STOP_DETAILS, d);
        }
        for (key, count) in [
            (
                CACHE_CREATION_INPUT_TOKENS,
                self.usage.cache_creation_input_tokens,
            ),
            (CACHE_READ_INPUT_TOKENS, self.usage.cache_read_input_tokens),
        ] {
            if let Some(n) = count.filter(|n| *n > 0) {
                self.turn.set_extra(key, Value::from(n));
            }
        }
        if self.unknown_events > 0 {
            self.turn
                .set_extra(UNKNOWN_EVENTS, Value::from(self.unknown_events));
        }
    }

    /// One stream event.
    fn event(
        &mut self,
        name: Option<&str>,
        event: &Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        match event.kind.as_deref().or(name).unwrap_or("") {
            "message_start" => {
                if let Some(message) = &event.message {
                    self.message(message, "message_start.message", out)?;
                }
            }
            "content_block_start" => self.block_start(event, out)?,
            "content_block_delta" => self.block_delta(event, out)?,
            "content_block_stop" => self.block_stop(event, out)?,
            "message_delta" => self.message_delta(event, out),
            "message_stop" => self.end_turn(out),
            "ping" => {}
            _ => self.unknown_events = self.unknown_events.saturating_add(1),
        }
        Ok(())
    }
}

impl Open {
    fn name(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text block",
            Self::Thinking { .. } => "thinking block",
            Self::Redacted(_) => "redacted_thinking block",
            Self::Call { .. } => "tool_use block",
            Self::Hosted { .. } => "server_tool_use block",
            Self::Other => "block of another type",
        }
    }
}

/// A text block's `citations`, each an object, as sent (none when absent or not a list).
fn citations_of(block: &Value) -> Vec<Value> {
    let list = block.get("citations").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter(|c| c.is_object())
        .cloned()
        .collect()
}

/// A block of a call Anthropic runs itself: `server_tool_use` (web search, web fetch, code
/// execution, tool search) and `mcp_tool_use` (the MCP connector).
pub(super) fn is_hosted_use(kind: &str) -> bool {
    matches!(kind, "server_tool_use" | "mcp_tool_use")
}

/// The result block of such a call: `web_search_tool_result`, `web_fetch_tool_result`,
/// `code_execution_tool_result`, `bash_code_execution_tool_result`,
/// `tool_search_tool_result`, `mcp_tool_result`, … (a client `tool_result` never comes back).
pub(super) fn is_hosted_result(kind: &str) -> bool {
    kind != "tool_result" && kind.ends_with("_tool_result")
}

/// A `redacted_thinking` block's opaque `data`.
fn redacted_data(block: &Value) -> &str {
    block.get("data").and_then(Value::as_str).unwrap_or("")
}

fn block_index(event: &Event, what: &str) -> Result<i64> {
    event
        .index
        .ok_or_else(|| Error::decode(KIND, what, "no content block index"))
}

/// A `tool_use` block's name: required, since a call without one can never run.
fn tool_name<'a>(block: &'a Block, at: &str) -> Result<&'a str> {
    block
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::decode(KIND, at, "a tool_use block without a name"))
}

/// A `tool_use` block's `input` as argument text: the object as compact JSON (key order
/// kept), `{}` when absent or null, a string as is (some proxies send one).
fn input_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// A whole `Message` body (or an error body).
/// The fields of a Messages body, one of which every body has.
const SHAPE: &str = super::BODY.fields;

pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let message: Message =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    if message.kind.as_deref() == Some("error")
        || message.error.as_ref().is_some_and(|e| !e.is_null())
    {
        return Err(api_error(None, body).into());
    }
    // Every field is optional to the reader, so a body of another API would read as an empty
    // answer: a Messages body says `type: message`, or has content blocks or a stop reason.
    if message.kind.as_deref() != Some("message")
        && message.content.is_empty()
        && message.stop_reason.is_none()
    {
        return Err(foreign_body(KIND, SHAPE));
    }
    let mut decoder = Decoder::new();
    let mut sink = Vec::new();
    decoder.message(&message, "response body", &mut sink)?;
    // A whole body is complete by definition: no stop reason means a normal end.
    decoder.end_turn(&mut sink);
    decoder.flush_extra();
    decoder.turn.end(&mut sink)
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Event =
            serde_json::from_str(data).map_err(|e| Error::decode(KIND, "stream event", e))?;
        if event.kind.as_deref().or(name) == Some("error") {
            // An error event (`overloaded_error` mid-stream): typed, with what had arrived.
            let mut api = api_error(None, data.as_bytes());
            self.flush_extra();
            api.partial = Some(Box::new(self.turn.interrupt()));
            return Err(api.into());
        }
        self.event(name, &event, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        // `message_delta` carries the stop reason; a stream that ends before it was cut off
        // and `end` reports it with the partial response (open calls `truncated`).
        self.flush_extra();
        self.turn.end(out)
    }
}

/// Anthropic's error body `{"type": "error", "error": {"type", "message"}, "request_id"}`:
/// the code is `error.type` (`overloaded_error`, `rate_limit_error`, …), the message verbatim.
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    generic_error(KIND, status, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    fn stream(events: &[&str]) -> Result<(Vec<StreamEvent>, ChatResponse)> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for e in events {
            d.feed(None, e, &mut out)?;
        }
        let r = d.finish(&mut out)?;
        Ok((out, r))
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"msg_tw1","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}"#;

    #[test]
    fn a_call_completes_at_its_block_stop() {
        let (events, r) = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"g","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        let first_complete = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
            .unwrap();
        let second_start = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 1, .. }))
            .unwrap();
        assert!(first_complete < second_start, "{events:?}");
        assert_eq!(r.tool_calls[0].raw_arguments, r#"{"a":1}"#);
        assert_eq!(r.tool_calls[1].raw_arguments, "{}");
        assert!(r.tool_calls.iter().all(|c| c.is_complete()));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (15, 20));
        assert_eq!(r.raw_finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(r.extra[CACHE_READ_INPUT_TOKENS], 5);
    }

    #[test]
    fn max_tokens_decides_a_call_cut_mid_json() {
        let events = [
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":\"xy"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ];
        for (reason, kind) in [
            ("max_tokens", ArgumentsErrorKind::Truncated),
            ("tool_use", ArgumentsErrorKind::Malformed),
        ] {
            let delta = format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":9}}}}"#
            );
            let mut all = events.to_vec();
            all.push(&delta);
            all.push(r#"{"type":"message_stop"}"#);
            let (_, r) = stream(&all).unwrap();
            let call = &r.tool_calls[0];
            assert_eq!(call.error.as_ref().unwrap().kind, kind, "{reason}");
            assert_eq!(call.raw_arguments, r#"{"a":"xy"#);
        }
    }

    #[test]
    fn error_event_keeps_the_partial() {
        let err = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ])
        .unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.code.as_deref(), Some("overloaded_error"));
        assert_eq!(api.status, None);
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Hel"));
    }

    #[test]
    fn mismatched_and_unknown_deltas() {
        let err = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        ])
        .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        let (_, r) = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"sparkle_delta","x":1}}"#,
            r#"{"type":"future_event"}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ])
        .unwrap();
        assert_eq!(r.extra[UNKNOWN_EVENTS], 2);
        assert_eq!(r.finish_reason, FinishReason::Stop);
    }

    #[test]
    fn a_server_tool_is_a_hosted_call_with_events_never_a_tool_call() {
        let (events, r) = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_a","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_a","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        let statuses: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::HostedCall {
                    index: 0,
                    name,
                    status,
                } if name == "web_search" => Some(status.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(statuses, ["running", "input", "failed"]);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish_reason, FinishReason::Pause);
        let h = &r.hosted_calls[0];
        assert_eq!(h.input, serde_json::json!({"query": "x"}));
        assert_eq!(h.blocks.len(), 2);
        assert_eq!(h.blocks[0]["input"]["query"], "x");
        assert_eq!(
            h.result.as_ref().unwrap()["error_code"],
            "max_uses_exceeded"
        );
        // A server tool's input that is not JSON is a decode error, not a silent `{}`.
        let err = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_a","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ])
        .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
    }

    #[test]
    fn streamed_citations_and_a_caller_are_kept() {
        let (_, r) = stream(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi. "}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"a"}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"It is "}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"b"}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"so."}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_x"}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(r.text.as_deref(), Some("Hi. It is so."));
        assert_eq!(
            r.extra[TEXT_CITATIONS],
            serde_json::json!([{"at": 4, "len": 9, "citations": [
                {"type": "char_location", "cited_text": "a"},
                {"type": "char_location", "cited_text": "b"}]}])
        );
        assert_eq!(
            r.tool_calls[0].extra[CALLER],
            serde_json::json!({"type": "code_execution_20250825", "tool_id": "srvtoolu_x"})
        );
    }
}
