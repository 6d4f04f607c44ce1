//! An Interactions answer → the canonical response: a whole `Interaction` body, or the SSE
//! stream of `interaction.*` and `step.*` events.
//!
//! Steps are read in their `index` order. A `function_call` step is a tool call: it starts at
//! `step.start` (id and name), its argument text arrives as `arguments_delta` fragments, and it
//! is final at its `step.stop`. `model_output` text is the answer's text, `thought` summaries
//! its reasoning. Every other step (server-tool calls and results, unknown kinds) is kept
//! verbatim under [`STEPS`], never a tool call.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{Event, Interaction, Usage as WireUsage};
use super::{INTERACTION_ID, SIGNATURE, STEPS, UNKNOWN_EVENTS};
use crate::assemble::Assembler;
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error, scalar_text};
use crate::providers::gemini::error_object;
use crate::providers::shared::foreign_body;
use crate::types::{ChatResponse, FinishReason, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::GeminiInteractions;

/// Most steps one turn may open (a bound on the decoder's memory besides the text itself).
const MAX_STEPS: usize = 10_000;

/// One step of the turn, by its `index`.
#[derive(Debug)]
enum Entry {
    /// A `function_call` step: the assembler's call at this slot.
    Call { slot: usize },
    /// Any other step, as received so far (deltas merged in).
    Step(Map<String, Value>),
}

/// The canonical finish reason for an interaction `status`.
fn finish_reason(status: &str) -> FinishReason {
    match status {
        "completed" => FinishReason::Stop,
        "requires_action" => FinishReason::ToolCalls,
        "incomplete" => FinishReason::Length,
        "failed" => FinishReason::Error,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Canonical counts from the `usage` object: output counts the thought tokens too (the
/// wire reports them apart, `total_output_tokens` being the visible output only).
fn usage(raw: &Value) -> Option<Usage> {
    let u = WireUsage::deserialize(raw).ok()?;
    if u.total_input_tokens.is_none()
        && u.total_output_tokens.is_none()
        && u.total_thought_tokens.is_none()
    {
        return None;
    }
    Some(Usage {
        input_tokens: u.total_input_tokens.unwrap_or(0),
        output_tokens: u
            .total_output_tokens
            .unwrap_or(0)
            .saturating_add(u.total_thought_tokens.unwrap_or(0)),
        reasoning_tokens: u.total_thought_tokens,
        cached_input_tokens: u.total_cached_tokens.filter(|&c| c > 0),
        ..Default::default()
    })
}

fn str_field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A step's `type`.
fn step_type(m: &Map<String, Value>) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// Whether a `model_output` step holds only plain text (no annotations, no media): the
/// canonical `text` carries all of it.
fn plain_output(m: &Map<String, Value>) -> bool {
    m.iter().all(|(k, v)| match k.as_str() {
        "type" => true,
        "content" => v.as_array().is_some_and(|items| {
            items.iter().all(|item| {
                item.as_object().is_some_and(|o| {
                    step_type(o) == "text" && o.keys().all(|k| k == "type" || k == "text")
                })
            })
        }),
        _ => false,
    })
}

/// The state of one turn.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    entries: BTreeMap<i64, Entry>,
    /// Whether reasoning text arrived already (thought steps are separated by a blank line).
    reasoned: bool,
    /// The thought step whose summary text came last (for the separator).
    reasoning_step: Option<i64>,
    id: Option<String>,
    status: Option<String>,
    raw_usage: Option<Value>,
    /// Payloads seen, and whether any was an Interactions event.
    payloads: usize,
    shaped: bool,
    unknown: usize,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self {
            turn: Assembler::new(KIND),
            entries: BTreeMap::new(),
            reasoned: false,
            reasoning_step: None,
            id: None,
            status: None,
            raw_usage: None,
            payloads: 0,
            shaped: false,
            unknown: 0,
        }
    }

    /// Reasoning text from the thought step at `index`.
    fn reasoning(&mut self, index: i64, text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if self.reasoned && self.reasoning_step != Some(index) {
            self.turn.reasoning("\n\n", out);
        }
        self.reasoned = true;
        self.reasoning_step = Some(index);
        self.turn.reasoning(text, out);
    }

    fn room(&self, index: i64) -> Result<()> {
        if self.entries.len() >= MAX_STEPS && !self.entries.contains_key(&index) {
            return Err(Error::decode(
                KIND,
                "stream",
                format!("more than {MAX_STEPS} steps in one turn"),
            ));
        }
        Ok(())
    }

    /// A step begins (or arrives whole, in a body): a call starts; text and summaries are
    /// applied; everything is kept for [`STEPS`].
    fn start(
        &mut self,
        index: i64,
        step: Value,
        whole: bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        self.room(index)?;
        let Value::Object(mut m) = step else {
            return Err(Error::decode(
                KIND,
                format!("step {index}"),
                "a step is not a JSON object",
            ));
        };
        match step_type(&m) {
            "function_call" => {
                let name = str_field(&m, "name").unwrap_or_default().to_owned();
                let slot = self.turn.start_call(str_field(&m, "id"), &name, out);
                if let Some(sig) = str_field(&m, "signature")
                    && let Some(extra) = self.turn.call_extra(slot)
                {
                    extra.insert(SIGNATURE.into(), Value::String(sig.to_owned()));
                }
                match m.get("arguments") {
                    // A step that arrived whole carries its arguments object (`{}` included,
                    // the compact JSON is the call's text); a streamed step's start carries
                    // `{}` as a placeholder before its `arguments_delta` fragments.
                    Some(Value::Object(args)) if whole || !args.is_empty() => {
                        let text = Value::Object(args.clone()).to_string();
                        self.turn.append_arguments(slot, &text, out);
                    }
                    Some(Value::String(text)) => self.turn.append_arguments(slot, text, out),
                    _ => {}
                }
                self.entries.insert(index, Entry::Call { slot });
            }
            "model_output" => {
                if let Some(Value::Array(items)) = m.get("content") {
                    for item in items {
                        if item.get("type").and_then(Value::as_str) == Some("text")
                            && let Some(text) = item.get("text").and_then(Value::as_str)
                        {
                            self.turn.text(text, out);
                        }
                    }
                }
                self.entries.insert(index, Entry::Step(m));
            }
            "thought" => {
                if let Some(Value::Array(items)) = m.get("summary") {
                    let texts: Vec<String> = items
                        .iter()
                        .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|i| i.get("text").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect();
                    for text in texts {
                        self.reasoning(index, &text, out);
                    }
                }
                if str_field(&m, "signature").is_none() {
                    // `"signature": ""` on a step start means none yet.
                    m.remove("signature");
                }
                self.entries.insert(index, Entry::Step(m));
            }
            // A launch-era `outputs` text item: plain text, no step around it.
            "text" if m.keys().all(|k| k == "type" || k == "text") => {
                if let Some(text) = m.get("text").and_then(Value::as_str) {
                    self.turn.text(text, out);
                }
                let mut step = Map::new();
                step.insert("type".into(), Value::String("model_output".into()));
                step.insert("content".into(), Value::Array(vec![Value::Object(m)]));
                self.entries.insert(index, Entry::Step(step));
            }
            _ => {
                if str_field(&m, "signature").is_none() {
                    m.remove("signature");
                }
                self.entries.insert(index, Entry::Step(m));
            }
        }
        Ok(())
    }

    /// A `step.delta`: applied to the step open at `index`.
    fn delta(&mut self, index: i64, delta: Value, out: &mut Vec<StreamEvent>) -> Result<()> {
        let Value::Object(mut d) = delta else {
            return Err(Error::decode(
                KIND,
                format!("step {index}"),
                "a step delta is not a JSON object",
            ));
        };
        let kind = step_type(&d).to_owned();
        if !self.entries.contains_key(&index) {
            // A delta without its `step.start`: open the step its kind implies.
            self.room(index)?;
            let opened = match kind.as_str() {
                "arguments_delta" => {
                    let slot = self.turn.start_call(str_field(&d, "id"), "", out);
                    Entry::Call { slot }
                }
                "text"
                | "text_annotation_delta"
                | "text_annotation"
                | "image"
                | "video"
                | "audio" => Entry::Step(step_of("model_output")),
                "thought_summary" | "thought_signature" => Entry::Step(step_of("thought")),
                other => Entry::Step(step_of(other)),
            };
            self.entries.insert(index, opened);
        }
        match self.entries.get_mut(&index) {
            Some(Entry::Call { slot }) => {
                let slot = *slot;
                match d.get("arguments") {
                    Some(Value::String(text)) => self.turn.append_arguments(slot, text, out),
                    Some(Value::Object(args)) => {
                        let text = Value::Object(args.clone()).to_string();
                        self.turn.append_arguments(slot, &text, out);
                    }
                    _ => {}
                }
                if let Some(id) = str_field(&d, "id") {
                    // An id first given here (never replaces one the start gave).
                    self.turn.fragment(
                        0,
                        crate::assemble::Fragment {
                            index: Some(i64::try_from(slot).unwrap_or(i64::MAX)),
                            id: Some(id),
                            name: None,
                            arguments: None,
                        },
                        out,
                    );
                }
                if let Some(sig) = str_field(&d, "signature").map(str::to_owned)
                    && let Some(extra) = self.turn.call_extra(slot)
                {
                    extra.insert(SIGNATURE.into(), Value::String(sig));
                }
            }
            Some(Entry::Step(step)) => match kind.as_str() {
                "text" => {
                    let text = str_field(&d, "text").unwrap_or_default().to_owned();
                    push_text(step, &text);
                    self.turn.text(&text, out);
                }
                "text_annotation_delta" | "text_annotation" => {
                    if let Some(Value::Array(added)) = d.remove("annotations") {
                        annotate(step, added);
                    }
                }
                "thought_summary" => {
                    let item = d.remove("content").unwrap_or(Value::Null);
                    let text = item
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    if !item.is_null() {
                        push_item(step, "summary", item);
                    }
                    self.reasoning(index, &text, out);
                }
                "thought_signature" => {
                    if let Some(sig) = d
                        .remove("signature")
                        .filter(|s| s.as_str().is_some_and(|s| !s.is_empty()))
                    {
                        step.insert("signature".into(), sig);
                    }
                }
                "image" | "video" | "audio" if step_type(step) == "model_output" => {
                    push_item(step, "content", Value::Object(d));
                }
                _ => {
                    // A server-tool step's payload (`arguments`, `result`, …) or a delta of a
                    // kind toolwire does not know: its fields join the step, verbatim.
                    d.remove("type");
                    for (k, v) in d {
                        step.insert(k, v);
                    }
                }
            },
            None => {}
        }
        Ok(())
    }

    /// A `step.stop`: a call is final now.
    fn stop(&mut self, index: i64, out: &mut Vec<StreamEvent>) {
        if let Some(Entry::Call { slot }) = self.entries.get(&index) {
            let slot = *slot;
            self.turn.complete_call(slot, out);
        }
    }

    /// The interaction's end: status, usage, or its error.
    fn terminal(
        &mut self,
        interaction: Interaction,
        body: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        if let Some(id) = interaction.id.filter(|s| !s.is_empty()) {
            self.id = Some(id);
        }
        if let Some(status) = interaction.status.filter(|s| !s.is_empty()) {
            self.status = Some(status);
        }
        if let Some(raw) = interaction.usage.filter(Value::is_object) {
            if let Some(u) = usage(&raw) {
                self.turn.usage(u, out);
            }
            self.raw_usage = Some(raw);
        }
        if let Some(error) = interaction.error.filter(|e| !e.is_null()) {
            return Err(self.failure(&error, body).into());
        }
        let status = self.status.clone();
        self.settle_extras();
        let reason = status.as_deref().map_or(FinishReason::Stop, finish_reason);
        self.turn.finish(reason, status.as_deref(), out);
        Ok(())
    }

    /// An error object of the stream (or a failed interaction) as an [`ApiError`] carrying the
    /// turn so far.
    fn failure(&mut self, error: &Value, body: &str) -> ApiError {
        let mut api = api_error_of(error, None, body);
        self.settle_extras();
        let mut partial = self.turn.interrupt();
        place_calls(&mut partial);
        api.partial = Some(Box::new(partial));
        api
    }

    /// Writes the response-level extras: the interaction id, the kept steps, unknown events.
    fn settle_extras(&mut self) {
        if let Some(id) = &self.id {
            self.turn
                .set_extra(INTERACTION_ID, Value::String(id.clone()));
        }
        if let Some(raw) = self.raw_usage.take() {
            self.turn.raw_usage(raw);
        }
        if self.unknown > 0 {
            self.turn
                .set_extra(UNKNOWN_EVENTS, Value::from(self.unknown));
        }
        let keep = self.entries.values().any(|e| match e {
            Entry::Call { .. } => false,
            Entry::Step(m) => step_type(m) != "model_output" || !plain_output(m),
        });
        if !keep {
            return;
        }
        let steps: Vec<Value> = self
            .entries
            .values()
            .map(|e| match e {
                Entry::Call { slot } => {
                    let mut m = Map::new();
                    m.insert("type".into(), Value::String("function_call".into()));
                    // The call's position for now; `place_calls` writes its final id (a
                    // minted one when the wire sent none) once the response exists.
                    m.insert("id".into(), Value::from(*slot));
                    Value::Object(m)
                }
                Entry::Step(m) => Value::Object(m.clone()),
            })
            .collect();
        self.turn.set_extra(STEPS, Value::Array(steps));
    }

    fn apply(&mut self, ty: &str, ev: Event, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let index = ev.index.unwrap_or(-1);
        match ty {
            "interaction.created" | "interaction.start" => {
                if let Some(i) = ev.interaction {
                    self.id = i.id.filter(|s| !s.is_empty()).or(self.id.take());
                    self.status = i.status.or(self.status.take());
                }
                Ok(())
            }
            "interaction.status_update"
            | "interaction.in_progress"
            | "interaction.requires_action" => {
                if let Some(status) = ev.status.filter(|s| !s.is_empty()) {
                    self.status = Some(status);
                }
                if self.id.is_none() {
                    self.id = ev.interaction_id.filter(|s| !s.is_empty());
                }
                Ok(())
            }
            "step.start" => match ev.step {
                Some(step) => self.start(index, step, false, out),
                None => Err(Error::decode(KIND, "step.start", "no `step`")),
            },
            "step.delta" => match ev.delta {
                Some(delta) => self.delta(index, delta, out),
                None => Err(Error::decode(KIND, "step.delta", "no `delta`")),
            },
            "step.stop" => {
                self.stop(index, out);
                Ok(())
            }
            "interaction.completed" | "interaction.complete" => {
                let interaction = ev.interaction.unwrap_or_default();
                self.terminal(interaction, data, out)
            }
            "error" => {
                let error = ev.error.unwrap_or(Value::Null);
                Err(self.failure(&error, data).into())
            }
            _ => {
                self.unknown += 1;
                Ok(())
            }
        }
    }

    /// The response once the turn is over (or the broken-stream error).
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if !self.turn.is_finished() {
            self.settle_extras();
        }
        match self.turn.end(out) {
            Ok(mut response) => {
                place_calls(&mut response);
                Ok(response)
            }
            Err(Error::Stream {
                provider,
                reason,
                partial,
            }) => Err(Error::Stream {
                provider,
                reason,
                partial: partial.map(|mut p| {
                    place_calls(&mut p);
                    p
                }),
            }),
            Err(e) => Err(e),
        }
    }
}

/// Writes each call's final id into its place in [`STEPS`] (which holds its position until
/// the response exists).
fn place_calls(response: &mut ChatResponse) {
    let ChatResponse {
        tool_calls, extra, ..
    } = response;
    let Some(Value::Array(steps)) = extra.get_mut(STEPS) else {
        return;
    };
    for step in steps {
        if let Some(slot) = step.get("id").and_then(Value::as_u64)
            && step.get("type").and_then(Value::as_str) == Some("function_call")
        {
            let id = usize::try_from(slot)
                .ok()
                .and_then(|s| tool_calls.get(s))
                .map(|c| c.id.clone())
                .unwrap_or_default();
            step["id"] = Value::String(id);
        }
    }
}

fn step_of(kind: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(kind.to_owned()));
    m
}

/// Appends `item` to the list `key` of a step.
fn push_item(step: &mut Map<String, Value>, key: &str, item: Value) {
    match step.get_mut(key) {
        Some(Value::Array(items)) => items.push(item),
        _ => {
            step.insert(key.into(), Value::Array(vec![item]));
        }
    }
}

/// Appends streamed text to a `model_output` step's last text content (one per run of text).
fn push_text(step: &mut Map<String, Value>, text: &str) {
    if let Some(Value::Array(items)) = step.get_mut("content")
        && let Some(Value::Object(last)) = items.last_mut()
        && step_type(last) == "text"
        && let Some(Value::String(all)) = last.get_mut("text")
    {
        all.push_str(text);
        return;
    }
    let mut item = Map::new();
    item.insert("type".into(), Value::String("text".into()));
    item.insert("text".into(), Value::String(text.to_owned()));
    push_item(step, "content", Value::Object(item));
}

/// Adds annotations to a `model_output` step's last text content.
fn annotate(step: &mut Map<String, Value>, added: Vec<Value>) {
    if !matches!(step.get("content"), Some(Value::Array(items)) if !items.is_empty()) {
        push_text(step, "");
    }
    if let Some(Value::Array(items)) = step.get_mut("content")
        && let Some(Value::Object(last)) = items.last_mut()
    {
        match last.get_mut("annotations") {
            Some(Value::Array(list)) => list.extend(added),
            _ => {
                last.insert("annotations".into(), Value::Array(added));
            }
        }
    }
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        self.payloads += 1;
        let ev: Event =
            serde_json::from_str(data).map_err(|e| Error::decode(KIND, "stream payload", e))?;
        let Some(ty) = ev
            .event_type
            .clone()
            .filter(|t| !t.is_empty())
            .or_else(|| event.filter(|e| !e.is_empty()).map(str::to_owned))
        else {
            if let Some(error) = ev.error.as_ref().filter(|e| e.is_object()) {
                // An error body sent as a stream payload.
                return Err(self.failure(&error.clone(), data).into());
            }
            return Ok(());
        };
        self.shaped = true;
        self.apply(&ty, ev, data, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.payloads > 0 && !self.shaped {
            return Err(Error::foreign_stream(
                KIND,
                self.payloads,
                "an `event_type` (`interaction.created`, `step.start`, …)",
            ));
        }
        self.end(out)
    }
}

/// A whole body: an `Interaction` (its `steps`, or the launch-era `outputs`), or an error body.
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let Value::Object(map) = &value else {
        return Err(Error::decode(KIND, "response body", "not a JSON object"));
    };
    let has = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    if has("error") && !has("steps") && !has("outputs") && !has("status") {
        return Err(api_error(None, body).into());
    }
    if !has("steps") && !has("outputs") && !map.get("status").is_some_and(Value::is_string) {
        return Err(foreign_body(KIND, "`steps`, `outputs` or `status`"));
    }
    let mut interaction =
        Interaction::deserialize(&value).map_err(|e| Error::decode(KIND, "response body", e))?;
    let text = String::from_utf8_lossy(body);
    let mut decoder = Decoder::new();
    let mut sink = Vec::new();
    let steps = interaction
        .steps
        .take()
        .or_else(|| interaction.outputs.take())
        .unwrap_or_default();
    for (i, step) in steps.into_iter().enumerate() {
        let index = i64::try_from(i).unwrap_or(i64::MAX);
        decoder.start(index, step, true, &mut sink)?;
        decoder.stop(index, &mut sink);
    }
    decoder.terminal(interaction, &text, &mut sink)?;
    decoder.end(&mut sink)
}

/// An error object (`{"code", "message", "status", "details"}`) as an [`ApiError`]: Google's
/// `status` name (`INVALID_ARGUMENT`) as the code when there is one, else `code` verbatim; the
/// message verbatim; a numeric `code` gives the HTTP status when none is known.
fn api_error_of(error: &Value, status: Option<u16>, body: &str) -> ApiError {
    let http = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (100..600).contains(c));
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("the interaction failed without a message");
    let mut api = ApiError::new(KIND, status.or(http), message);
    api.code = error
        .get("status")
        .and_then(scalar_text)
        .or_else(|| error.get("code").and_then(scalar_text));
    api.body = body.to_owned();
    api
}

/// An error body (any status): `{"error": {…}}` (or an array of them, or SSE-framed), else
/// whatever the common reader finds.
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    match error_object(body) {
        Some(error) => {
            let error = Value::Object(error);
            let mut api = api_error_of(&error, status, &String::from_utf8_lossy(body));
            if api.status.is_none() {
                api.status = generic_error(KIND, status, body).status;
            }
            api
        }
        None => generic_error(KIND, status, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (Vec<StreamEvent>, Result<ChatResponse>) {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for e in events {
            if let Err(e) = d.feed(None, e, &mut out) {
                return (out, Err(e));
            }
        }
        let r = d.finish(&mut out);
        (out, r)
    }

    const CALL_START: &str = r#"{"index":1,"step":{"id":"c1","signature":"","type":"function_call","name":"f","arguments":{}},"event_type":"step.start"}"#;
    const COMPLETED: &str = r#"{"interaction":{"status":"requires_action","usage":{"total_input_tokens":3,"total_output_tokens":4,"total_thought_tokens":2}},"event_type":"interaction.completed"}"#;

    #[test]
    fn a_call_is_final_at_its_step_stop_with_the_fragments_joined() {
        let (events, r) = run(&[
            CALL_START,
            r#"{"index":1,"delta":{"type":"arguments_delta","arguments":"{\"a\":"},"event_type":"step.delta"}"#,
            r#"{"index":1,"delta":{"type":"arguments_delta","arguments":"1}"},"event_type":"step.delta"}"#,
            r#"{"index":1,"event_type":"step.stop"}"#,
            COMPLETED,
        ]);
        let r = r.unwrap();
        let complete_at = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallComplete { .. }))
            .unwrap();
        assert!(complete_at < events.len() - 2, "{events:?}");
        assert_eq!(r.tool_calls[0].raw_arguments, "{\"a\":1}");
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.raw_finish_reason.as_deref(), Some("requires_action"));
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (3, 6));
        assert!(!r.extra.contains_key(STEPS));
    }

    #[test]
    fn a_stream_without_its_completion_is_broken() {
        let (_, r) = run(&[CALL_START]);
        match r {
            Err(Error::Stream {
                partial: Some(p), ..
            }) => {
                assert!(p.tool_calls[0].error.is_some());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_error_event_is_an_api_error_with_the_turn_so_far() {
        let (_, r) = run(&[
            r#"{"index":0,"step":{"type":"model_output"},"event_type":"step.start"}"#,
            r#"{"index":0,"delta":{"type":"text","text":"Hel"},"event_type":"step.delta"}"#,
            r#"{"event_type":"error","error":{"code":"resource_exhausted","message":"slow down"}}"#,
        ]);
        match r {
            Err(Error::Api(api)) => {
                assert_eq!(api.code.as_deref(), Some("resource_exhausted"));
                assert_eq!(api.message, "slow down");
                assert_eq!(api.partial.unwrap().text.as_deref(), Some("Hel"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn server_tool_steps_are_kept_and_never_calls() {
        let (_, r) = run(&[
            r#"{"index":0,"step":{"id":"s1","signature":"","type":"google_search_call"},"event_type":"step.start"}"#,
            r#"{"index":0,"delta":{"type":"google_search_call","arguments":{"queries":["q"]}},"event_type":"step.delta"}"#,
            r#"{"index":0,"event_type":"step.stop"}"#,
            r#"{"index":1,"step":{"call_id":"s1","type":"google_search_result"},"event_type":"step.start"}"#,
            r#"{"index":1,"delta":{"type":"google_search_result","result":[{"url":"u"}]},"event_type":"step.delta"}"#,
            r#"{"index":1,"event_type":"step.stop"}"#,
            r#"{"interaction":{"status":"completed"},"event_type":"interaction.completed"}"#,
        ]);
        let r = r.unwrap();
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.finish_reason, FinishReason::Stop);
        let steps = r.extra[STEPS].as_array().unwrap();
        assert_eq!(
            steps[0],
            serde_json::json!({"id": "s1", "type": "google_search_call", "arguments": {"queries": ["q"]}})
        );
        assert_eq!(steps[1]["result"][0]["url"], "u");
    }

    #[test]
    fn foreign_streams_and_bodies_are_refused() {
        let (_, r) = run(&[r#"{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}"#]);
        assert!(matches!(r, Err(Error::Decode { .. })), "{r:?}");
        let r = decode_body(br#"{"candidates":[]}"#);
        assert!(matches!(r, Err(Error::Decode { .. })), "{r:?}");
    }

    #[test]
    fn error_bodies_keep_google_status_and_message() {
        let api = api_error(
            None,
            br#"{"error":{"code":400,"message":"bad tool","status":"INVALID_ARGUMENT"}}"#,
        );
        assert_eq!(api.status, Some(400));
        assert_eq!(api.code.as_deref(), Some("INVALID_ARGUMENT"));
        assert_eq!(api.message, "bad tool");
    }
}
