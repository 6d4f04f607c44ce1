//! Cohere v2 `/v2/chat` bodies and stream events → the canonical model.

use serde_json::Value;

use super::wire::{finish_reason, usage};
use super::{CITATIONS, FINISH_ERROR};
use crate::assemble::Assembler;
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error};
use crate::providers::shared::{foreign_body, stops_mid_json};
use crate::types::{ChatResponse, FinishReason, StreamEvent};

const KIND: ProviderKind = ProviderKind::Cohere;

/// The fields of a v2 chat body, which every body has.
const SHAPE: &str = super::BODY.fields;

/// The stream events a v2 chat stream is made of.
const EVENTS: &str = "`type` message-start, content-delta, tool-call-start, message-end, ...";

/// An error body: `{"id", "message": "<text>"}` (the message a string, not the assistant
/// message object of a chat body).
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    generic_error(KIND, status, body)
}

/// The decoder of one turn. A whole body goes through the same state.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    /// Each open content block's kind by its `index`: `thinking` blocks are reasoning.
    thinking_blocks: Vec<i64>,
    /// The call position of each open tool call, by the wire's `index`.
    open_calls: Vec<(i64, usize)>,
    citations: Vec<Value>,
    payloads: usize,
    shaped: bool,
}

/// `v[a][b]...`, `Null` when absent.
fn at<'v>(v: &'v Value, path: &[&str]) -> &'v Value {
    path.iter()
        .fold(v, |v, k| v.get(*k).unwrap_or(&Value::Null))
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            thinking_blocks: Vec::new(),
            open_calls: Vec::new(),
            citations: Vec::new(),
            payloads: 0,
            shaped: false,
        }
    }

    /// Arguments as text: a string as sent, an object (some gateways) as its JSON text.
    fn argument_text(v: &Value) -> Option<String> {
        match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// A call that arrived whole (a body's `tool_calls`): final at once, unless its text stops
    /// inside a JSON value (cut by the token limit), which the finish reason then settles.
    fn whole_call(&mut self, call: &Value, at_: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let name = at(call, &["function", "name"])
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::decode(KIND, at_, "a tool call without a function name"))?;
        let slot = self
            .turn
            .start_call(call.get("id").and_then(Value::as_str), name, out);
        let text = Self::argument_text(at(call, &["function", "arguments"])).unwrap_or_default();
        self.turn.append_arguments(slot, &text, out);
        if !stops_mid_json(&text) {
            self.turn.complete_call(slot, out);
        }
        Ok(())
    }

    /// One element of a message's `content`: `text`, or `thinking` (reasoning models).
    fn content_item(&mut self, item: &Value, out: &mut Vec<StreamEvent>) {
        match item {
            Value::String(text) => self.turn.text(text, out),
            _ => {
                if let Some(thinking) = item.get("thinking").and_then(Value::as_str) {
                    self.turn.reasoning(thinking, out);
                }
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    self.turn.text(text, out);
                }
            }
        }
    }

    fn finish(&mut self, end: &Value, out: &mut Vec<StreamEvent>) {
        // `usage`; the first v2 release sent the same counts under `meta`.
        let raw = end.get("usage").or_else(|| end.get("meta"));
        if let Some(raw) = raw.filter(|u| u.is_object())
            && let Some(counts) = usage(raw)
        {
            self.turn.usage(counts, out);
            self.turn.raw_usage(raw.clone());
        }
        if let Some(message) = end.get("error").and_then(Value::as_str) {
            self.turn
                .set_extra(FINISH_ERROR, Value::String(message.to_owned()));
        }
        let raw = end.get("finish_reason").and_then(Value::as_str);
        let reason = raw.map_or(FinishReason::Stop, finish_reason);
        self.turn.finish(reason, raw, out);
    }

    fn flush_extra(&mut self) {
        if !self.citations.is_empty() {
            let citations = std::mem::take(&mut self.citations);
            self.turn.set_extra(CITATIONS, Value::Array(citations));
        }
    }

    /// One stream event.
    fn event(&mut self, kind: &str, e: &Value, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = e.get("index").and_then(Value::as_i64).unwrap_or(0);
        let message = at(e, &["delta", "message"]);
        match kind {
            "message-start" | "content-end" | "citation-end" | "debug" => {}
            "content-start" => {
                let content = &message["content"];
                if content.get("type").and_then(Value::as_str) == Some("thinking") {
                    self.thinking_blocks.push(index);
                }
                self.content_item(content, out);
            }
            "content-delta" => {
                let content = &message["content"];
                let text = content.get("text").and_then(Value::as_str);
                let thinking = content.get("thinking").and_then(Value::as_str);
                match (thinking, text) {
                    (Some(t), _) => self.turn.reasoning(t, out),
                    (None, Some(t)) if self.thinking_blocks.contains(&index) => {
                        self.turn.reasoning(t, out);
                    }
                    (None, Some(t)) => self.turn.text(t, out),
                    (None, None) => {}
                }
            }
            "tool-plan-delta" => {
                if let Some(plan) = message.get("tool_plan").and_then(Value::as_str) {
                    self.turn.reasoning(plan, out);
                }
            }
            "tool-call-start" => {
                let call = &message["tool_calls"];
                let name = at(call, &["function", "name"]).as_str().unwrap_or("");
                let slot = self
                    .turn
                    .start_call(call.get("id").and_then(Value::as_str), name, out);
                if let Some(text) = Self::argument_text(at(call, &["function", "arguments"])) {
                    self.turn.append_arguments(slot, &text, out);
                }
                self.open_calls.retain(|(i, _)| *i != index);
                self.open_calls.push((index, slot));
            }
            "tool-call-delta" => {
                let Some(&(_, slot)) = self.open_calls.iter().find(|(i, _)| *i == index) else {
                    return Err(Error::decode(
                        KIND,
                        "tool-call-delta",
                        format!("arguments for tool call {index}, which was never started"),
                    ));
                };
                let piece = at(&message["tool_calls"], &["function", "arguments"]);
                if let Some(text) = Self::argument_text(piece) {
                    self.turn.append_arguments(slot, &text, out);
                }
            }
            "tool-call-end" => {
                if let Some(pos) = self.open_calls.iter().position(|(i, _)| *i == index) {
                    let (_, slot) = self.open_calls.remove(pos);
                    self.turn.complete_call(slot, out);
                }
            }
            "citation-start" => {
                if let Some(citation) = message.get("citations").filter(|c| !c.is_null()) {
                    self.citations.push(citation.clone());
                }
            }
            "message-end" => {
                self.flush_extra();
                self.finish(e.get("delta").unwrap_or(&Value::Null), out);
            }
            _ => {}
        }
        Ok(())
    }
}

const KNOWN: &[&str] = &[
    "message-start",
    "content-start",
    "content-delta",
    "content-end",
    "tool-plan-delta",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
    "citation-start",
    "citation-end",
    "message-end",
    "debug",
];

impl StreamDecoder for Decoder {
    fn feed(&mut self, name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let e: Value =
            serde_json::from_str(data).map_err(|err| Error::decode(KIND, "stream event", err))?;
        self.payloads += 1;
        let kind = e.get("type").and_then(Value::as_str).or(name).unwrap_or("");
        if !KNOWN.contains(&kind) {
            return Ok(()); // an event added later: nothing toolwire models
        }
        self.shaped = true;
        self.event(kind, &e, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.payloads > 0 && !self.shaped {
            return Err(Error::foreign_stream(KIND, self.payloads, EVENTS));
        }
        self.flush_extra();
        self.turn.end(out)
    }
}

/// A whole chat body (or an error body).
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let message = v.get("message");
    if message.is_some_and(Value::is_string) && v.get("finish_reason").is_none() {
        return Err(api_error(None, body).into());
    }
    let Some(message) = message.filter(|m| m.is_object()) else {
        return Err(foreign_body(KIND, SHAPE));
    };
    let mut d = Decoder::new();
    let mut sink = Vec::new();
    if let Some(plan) = message.get("tool_plan").and_then(Value::as_str) {
        d.turn.reasoning(plan, &mut sink);
    }
    match message.get("content") {
        Some(Value::Array(items)) => {
            for item in items {
                d.content_item(item, &mut sink);
            }
        }
        Some(Value::String(text)) => d.turn.text(text, &mut sink),
        _ => {}
    }
    if let Some(Value::Array(calls)) = message.get("tool_calls") {
        for (i, call) in calls.iter().enumerate() {
            d.whole_call(call, &format!("message.tool_calls[{i}]"), &mut sink)?;
        }
    }
    if let Some(Value::Array(citations)) = message.get("citations") {
        d.citations.extend(citations.iter().cloned());
    }
    d.flush_extra();
    d.finish(&v, &mut sink);
    d.turn.end(&mut sink)
}
