//! The canonical response → the bytes the Interactions API would send, for the mock provider:
//! an `Interaction` body, or its SSE stream (`event: <type>` and `data: {json}` lines):
//! `interaction.created`, `interaction.status_update`, `step.start` / `step.delta` /
//! `step.stop` per step, `interaction.completed`.
//!
//! The stream is written by one [`EventWriter`] (the wire's [`StreamWriter`]), driven by the
//! events of the response cut into pieces.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value, json};

use super::encode::model_steps;
use super::{INTERACTION_ID, SIGNATURE, STEPS};
use crate::error::{ApiError, Error, Result};
use crate::provider::{NameMap, ProviderKind, StreamWriter};
use crate::providers::gemini::{self, rpc_status};
use crate::providers::split::pieces;
use crate::types::{AssistantMessage, ChatResponse, FinishReason, StreamEvent, ToolCall, Usage};

const KIND: ProviderKind = ProviderKind::GeminiInteractions;

/// Longest text piece of one `step.delta`, in characters.
const PIECE_CHARS: usize = 32;

/// Longest argument piece of one `arguments_delta`, in characters.
const ARGUMENT_CHARS: usize = 12;

/// The model the mock's streams name.
const MODEL: &str = "gemini-3-flash-preview";

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(KIND, what)
}

/// The interaction `status` for a response: its raw value when scripted, else the wire's
/// spelling of the canonical reason.
fn wire_status(r: &ChatResponse) -> Result<String> {
    if let Some(raw) = &r.raw_finish_reason {
        return Ok(raw.clone());
    }
    Ok(match &r.finish_reason {
        FinishReason::Stop => "completed".into(),
        FinishReason::ToolCalls => "requires_action".into(),
        FinishReason::Length => "incomplete".into(),
        FinishReason::Pause => "pause_turn".into(),
        FinishReason::Other(s) => s.clone(),
        FinishReason::ContentFilter => {
            return Err(unsupported(
                "a response that ended in `content_filter`: the Interactions API has no such \
                 status (script its raw status instead)",
            ));
        }
        FinishReason::Error => {
            return Err(unsupported(
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

fn usage_json(u: &Usage) -> Value {
    let thoughts = u.reasoning_tokens.unwrap_or(0);
    let visible = u.output_tokens.saturating_sub(thoughts);
    let mut m = Map::new();
    m.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    m.insert("total_input_tokens".into(), json!(u.input_tokens));
    if let Some(c) = u.cached_input_tokens {
        m.insert("total_cached_tokens".into(), json!(c));
    }
    m.insert("total_output_tokens".into(), json!(visible));
    if let Some(t) = u.reasoning_tokens {
        m.insert("total_thought_tokens".into(), json!(t));
    }
    Value::Object(m)
}

/// The steps of a whole body: the model's steps as the encoder sends them back, with the
/// reasoning as a thought summary when no kept step carries it.
fn body_steps(r: &ChatResponse) -> Result<Vec<Value>> {
    for (i, call) in r.tool_calls.iter().enumerate() {
        if !call.is_complete() {
            return Err(unsupported(format!(
                "tool_calls[{i}] has unusable arguments; a whole Interactions body carries \
                 argument objects only"
            )));
        }
    }
    let message = AssistantMessage::from(r.clone());
    let mut steps = model_steps(&message, &NameMap::default(), 0)?;
    if !r.extra.contains_key(STEPS)
        && let Some(reasoning) = r.reasoning.as_deref().filter(|t| !t.is_empty())
    {
        steps.insert(
            0,
            json!({"type": "thought", "summary": [{"type": "text", "text": reasoning}]}),
        );
    }
    Ok(steps)
}

fn encode_body(r: &ChatResponse) -> Result<Vec<u8>> {
    let status = wire_status(r)?;
    let mut body = Map::new();
    if let Some(id) = r.extra.get(INTERACTION_ID).and_then(Value::as_str) {
        body.insert("id".into(), json!(id));
    }
    body.insert("status".into(), json!(status));
    if let Some(u) = &r.usage {
        body.insert("usage".into(), usage_json(u));
    }
    body.insert("steps".into(), Value::Array(body_steps(r)?));
    body.insert("object".into(), json!("interaction"));
    body.insert("model".into(), json!(MODEL));
    Ok(Value::Object(body).to_string().into_bytes())
}

/// The events of a response, in batches (one per step piece): reasoning, text, then each call
/// (its start, its argument pieces, its completion), then usage and the finish.
fn events_of(r: &ChatResponse) -> Vec<Vec<StreamEvent>> {
    let mut batches = Vec::new();
    if let Some(reasoning) = r.reasoning.as_deref() {
        for piece in pieces(reasoning, PIECE_CHARS) {
            batches.push(vec![StreamEvent::ReasoningDelta { text: piece.into() }]);
        }
    }
    if let Some(text) = r.text.as_deref() {
        for piece in pieces(text, PIECE_CHARS) {
            batches.push(vec![StreamEvent::TextDelta { text: piece.into() }]);
        }
    }
    for (index, call) in r.tool_calls.iter().enumerate() {
        let id = (!call.has_synthetic_id()).then(|| call.id.clone());
        batches.push(vec![StreamEvent::ToolCallStarted {
            index,
            id,
            name: call.name.clone(),
        }]);
        for piece in pieces(&call.raw_arguments, ARGUMENT_CHARS) {
            batches.push(vec![StreamEvent::ToolCallDelta {
                index,
                fragment: piece.into(),
            }]);
        }
        if call.error.is_none() {
            batches.push(vec![StreamEvent::ToolCallComplete {
                index,
                call: call.clone(),
            }]);
        }
    }
    let mut last = Vec::new();
    if let Some(usage) = r.usage {
        last.push(StreamEvent::Usage { usage });
    }
    last.push(StreamEvent::Finish {
        reason: r.finish_reason.clone(),
    });
    batches.push(last);
    batches
}

fn encode_stream(r: &ChatResponse) -> Result<Vec<u8>> {
    // Refuse what the wire cannot say before writing anything.
    wire_status(r)?;
    let mut writer = EventWriter::new(MODEL);
    if let Some(Value::Array(steps)) = r.extra.get(STEPS) {
        writer = writer.with_steps(steps.clone());
    }
    if let Some(id) = r.extra.get(INTERACTION_ID).and_then(Value::as_str) {
        writer.id = Some(id.to_owned());
    }
    let mut out = Vec::new();
    writer.start(&mut out);
    for batch in events_of(r) {
        writer.events(&batch, &mut out);
    }
    writer.finish(r, &mut out);
    Ok(out)
}

/// Which step is open in the stream.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    None,
    Text(i64),
    Thought(i64),
    Call(i64),
}

/// What a kept step stands for.
#[derive(Debug, PartialEq)]
enum Place<'a> {
    Text,
    Call(&'a str),
}

/// Writes a canonical stream as the Interactions API's events, step by step. Built with the
/// turn's kept [`STEPS`], it writes each kept step (thoughts with their signatures, server-tool
/// steps) verbatim where it stood: before the text or the call that followed it.
#[derive(Debug)]
pub(crate) struct EventWriter {
    id: Option<String>,
    model: String,
    next: i64,
    open: Open,
    kept: VecDeque<Value>,
    kept_thoughts: bool,
    annotations: Vec<Value>,
    /// Each call's step index, by its canonical index.
    calls: HashMap<usize, i64>,
    finished: bool,
}

impl EventWriter {
    /// A writer for a stream of `model`.
    pub(crate) fn new(model: &str) -> Self {
        Self {
            id: None,
            model: model.to_owned(),
            next: 0,
            open: Open::None,
            kept: VecDeque::new(),
            kept_thoughts: false,
            annotations: Vec::new(),
            calls: HashMap::new(),
            finished: false,
        }
    }

    /// The turn's kept steps, written in their places.
    pub(crate) fn with_steps(mut self, steps: Vec<Value>) -> Self {
        self.kept_thoughts = steps
            .iter()
            .any(|s| s.get("type").and_then(Value::as_str) == Some("thought"));
        self.kept = steps.into();
        self
    }

    fn event(&mut self, ty: &str, payload: Value, out: &mut Vec<u8>) {
        let mut m = match payload {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        m.insert("event_type".into(), json!(ty));
        out.extend_from_slice(format!("event: {ty}\ndata: {}\n\n", Value::Object(m)).as_bytes());
    }

    fn step_start(&mut self, step: Value, out: &mut Vec<u8>) -> i64 {
        let index = self.next;
        self.next += 1;
        self.event("step.start", json!({"index": index, "step": step}), out);
        index
    }

    fn delta(&mut self, index: i64, delta: Value, out: &mut Vec<u8>) {
        self.event("step.delta", json!({"index": index, "delta": delta}), out);
    }

    fn stop(&mut self, index: i64, out: &mut Vec<u8>) {
        self.event("step.stop", json!({"index": index}), out);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Text(i) => {
                let annotations = std::mem::take(&mut self.annotations);
                if !annotations.is_empty() {
                    self.delta(
                        i,
                        json!({"type": "text_annotation_delta", "annotations": annotations}),
                        out,
                    );
                }
                self.stop(i, out);
            }
            Open::Thought(i) | Open::Call(i) => self.stop(i, out),
        }
    }

    /// Writes the kept steps that stood before `place` and takes its own kept step (if the next
    /// placed step is it); stops at another placed step.
    fn kept_until(&mut self, place: &Place<'_>, out: &mut Vec<u8>) -> Option<Value> {
        while let Some(step) = self.kept.front() {
            let ty = step.get("type").and_then(Value::as_str).unwrap_or_default();
            let here = match ty {
                "model_output" => Some(Place::Text),
                "function_call" => Some(Place::Call(
                    step.get("id").and_then(Value::as_str).unwrap_or_default(),
                )),
                _ => None,
            };
            match here {
                Some(p) if &p == place => return self.kept.pop_front(),
                Some(_) => return None,
                None => {
                    if let Some(step) = self.kept.pop_front() {
                        self.write_step(step, out);
                    }
                }
            }
        }
        None
    }

    /// One kept step, whole: `step.start`, its payload as deltas, `step.stop`.
    fn write_step(&mut self, step: Value, out: &mut Vec<u8>) {
        let Value::Object(mut m) = step else {
            return;
        };
        let ty = m
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match ty.as_str() {
            "function_call" => {}
            "thought" => {
                let summary = m.remove("summary");
                let signature = m.remove("signature");
                let i = self.step_start(Value::Object(m), out);
                for item in summary
                    .and_then(|s| s.as_array().cloned())
                    .unwrap_or_default()
                {
                    self.delta(i, json!({"type": "thought_summary", "content": item}), out);
                }
                if let Some(sig) = signature {
                    self.delta(
                        i,
                        json!({"type": "thought_signature", "signature": sig}),
                        out,
                    );
                }
                self.stop(i, out);
            }
            "model_output" => {
                let content = m.remove("content");
                let i = self.step_start(Value::Object(m), out);
                for item in content
                    .and_then(|c| c.as_array().cloned())
                    .unwrap_or_default()
                {
                    let Value::Object(mut item) = item else {
                        continue;
                    };
                    if item.get("type").and_then(Value::as_str) == Some("text") {
                        let annotations = item.remove("annotations");
                        let text = item.get("text").cloned().unwrap_or(json!(""));
                        self.delta(i, json!({"type": "text", "text": text}), out);
                        if let Some(annotations) = annotations {
                            self.delta(
                                i,
                                json!({"type": "text_annotation_delta", "annotations": annotations}),
                                out,
                            );
                        }
                    } else {
                        self.delta(i, Value::Object(item), out);
                    }
                }
                self.stop(i, out);
            }
            _ => {
                // A server-tool step: its identity at the start, its payload in one delta.
                let mut payload = Map::new();
                payload.insert("type".into(), json!(ty));
                for key in ["arguments", "result"] {
                    if let Some(v) = m.remove(key) {
                        payload.insert(key.into(), v);
                    }
                }
                let i = self.step_start(Value::Object(m), out);
                if payload.len() > 1 {
                    self.delta(i, Value::Object(payload), out);
                }
                self.stop(i, out);
            }
        }
    }

    fn open_call(&mut self, index: usize, id: Option<&str>, name: &str, out: &mut Vec<u8>) -> i64 {
        self.close(out);
        if let Some(id) = id {
            self.kept_until(&Place::Call(id), out);
        }
        let step = json!({"id": id.unwrap_or_default(), "signature": "", "type": "function_call",
                          "name": name, "arguments": {}});
        let i = self.step_start(step, out);
        self.calls.insert(index, i);
        self.open = Open::Call(i);
        i
    }

    fn complete(&mut self, index: usize, call: &ToolCall, out: &mut Vec<u8>) {
        let i = match self.calls.get(&index) {
            Some(&i) => i,
            None => {
                let id = (!call.has_synthetic_id()).then_some(call.id.as_str());
                let i = self.open_call(index, id, &call.name, out);
                if !call.raw_arguments.is_empty() {
                    self.delta(
                        i,
                        json!({"type": "arguments_delta", "arguments": call.raw_arguments}),
                        out,
                    );
                }
                i
            }
        };
        if let Some(sig) = call.extra.get(SIGNATURE).and_then(Value::as_str) {
            self.delta(
                i,
                json!({"type": "arguments_delta", "arguments": "", "signature": sig}),
                out,
            );
        }
        self.stop(i, out);
        if self.open == Open::Call(i) {
            self.open = Open::None;
        }
    }
}

impl StreamWriter for EventWriter {
    fn start(&mut self, out: &mut Vec<u8>) {
        let mut interaction = Map::new();
        if let Some(id) = &self.id {
            interaction.insert("id".into(), json!(id));
        }
        interaction.insert("status".into(), json!("in_progress"));
        interaction.insert("object".into(), json!("interaction"));
        interaction.insert("model".into(), json!(self.model));
        self.event(
            "interaction.created",
            json!({"interaction": interaction}),
            out,
        );
        let mut update = Map::new();
        if let Some(id) = &self.id {
            update.insert("interaction_id".into(), json!(id));
        }
        update.insert("status".into(), json!("in_progress"));
        self.event("interaction.status_update", Value::Object(update), out);
    }

    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for e in events {
            match e {
                StreamEvent::TextDelta { text } => {
                    if !matches!(self.open, Open::Text(_)) {
                        self.close(out);
                        if let Some(kept) = self.kept_until(&Place::Text, out) {
                            self.annotations = kept
                                .get("content")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter_map(|c| c.get("annotations").and_then(Value::as_array))
                                .flatten()
                                .cloned()
                                .collect();
                        }
                        let i = self.step_start(json!({"type": "model_output"}), out);
                        self.open = Open::Text(i);
                    }
                    if let Open::Text(i) = self.open {
                        self.delta(i, json!({"type": "text", "text": text}), out);
                    }
                }
                StreamEvent::ReasoningDelta { text } => {
                    if self.kept_thoughts {
                        continue; // the kept thought steps carry it, with their signatures
                    }
                    if !matches!(self.open, Open::Thought(_)) {
                        self.close(out);
                        let i = self.step_start(json!({"type": "thought"}), out);
                        self.open = Open::Thought(i);
                    }
                    if let Open::Thought(i) = self.open {
                        self.delta(
                            i,
                            json!({"type": "thought_summary",
                                   "content": {"type": "text", "text": text}}),
                            out,
                        );
                    }
                }
                StreamEvent::ToolCallStarted { index, id, name }
                    if !self.calls.contains_key(index) =>
                {
                    self.open_call(*index, id.as_deref(), name, out);
                }
                StreamEvent::ToolCallDelta { index, fragment } => {
                    if let Some(&i) = self.calls.get(index) {
                        self.delta(
                            i,
                            json!({"type": "arguments_delta", "arguments": fragment}),
                            out,
                        );
                    }
                }
                StreamEvent::ToolCallComplete { index, call } => self.complete(*index, call, out),
                _ => {}
            }
        }
    }

    fn finish(&mut self, response: &ChatResponse, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.close(out);
        while let Some(step) = self.kept.pop_front() {
            self.write_step(step, out);
        }
        let status = wire_status(response).unwrap_or_else(|_| "failed".into());
        let mut interaction = Map::new();
        if let Some(id) = &self.id {
            interaction.insert("id".into(), json!(id));
        }
        interaction.insert("status".into(), json!(status));
        if let Some(u) = &response.usage {
            interaction.insert("usage".into(), usage_json(u));
        }
        interaction.insert("object".into(), json!("interaction"));
        interaction.insert("model".into(), json!(self.model));
        self.event(
            "interaction.completed",
            json!({"interaction": interaction}),
            out,
        );
    }

    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.close(out);
        let code = error
            .code
            .clone()
            .unwrap_or_else(|| rpc_status(error.status.unwrap_or(500)).to_owned());
        self.event(
            "error",
            json!({"error": {"code": code, "message": error.message}}),
            out,
        );
    }
}

impl crate::provider::Respond for super::GeminiInteractions {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        if stream {
            encode_stream(response)
        } else {
            encode_body(response)
        }
    }

    /// Google's error envelope, as `generateContent` writes it (errors come before any stream
    /// starts, as a plain JSON body).
    fn encode_error(&self, error: &ApiError, _stream: bool) -> (u16, Vec<u8>) {
        gemini::encode_error(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    use crate::provider::Respond;
    use crate::replay::replay;

    fn sample() -> ChatResponse {
        let mut call = ToolCall::new("c1", "get_weather", r#"{"city":"Paris","unit":"c"}"#);
        call.extra.insert(SIGNATURE.into(), json!("c2ln"));
        let mut r = ChatResponse {
            text: Some("Let me check the weather for you, right now.".into()),
            tool_calls: vec![call],
            finish_reason: FinishReason::ToolCalls,
            raw_finish_reason: Some("requires_action".into()),
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 20,
                reasoning_tokens: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        r.extra.insert(
            STEPS.into(),
            json!([{"type": "thought", "signature": "dGhv"},
                   {"type": "model_output"},
                   {"type": "function_call", "id": "c1"}]),
        );
        r
    }

    #[test]
    fn streams_and_bodies_decode_back_to_the_response() {
        let p = super::super::GeminiInteractions::new();
        let r = sample();
        for stream in [false, true] {
            let bytes = p.encode_response(&r, stream).unwrap();
            let back = replay(&p, &bytes).unwrap().response;
            assert_eq!(back.text, r.text, "stream {stream}");
            assert_eq!(
                back.tool_calls[0].raw_arguments,
                r.tool_calls[0].raw_arguments
            );
            assert_eq!(back.tool_calls[0].extra[SIGNATURE], "c2ln");
            assert_eq!(back.usage, r.usage);
            assert_eq!(back.finish_reason, FinishReason::ToolCalls);
            let steps = back.extra[STEPS].as_array().unwrap();
            assert_eq!(steps[0], json!({"type": "thought", "signature": "dGhv"}));
            assert_eq!(steps[2], json!({"type": "function_call", "id": "c1"}));
        }
        let text = String::from_utf8(p.encode_response(&r, true).unwrap()).unwrap();
        let fragments = text.matches("\"arguments_delta\"").count();
        assert!(fragments >= 3, "{text}");
    }

    #[test]
    fn errors_round_trip() {
        let p = super::super::GeminiInteractions::new();
        let mut e = ApiError::new(KIND, Some(429), "slow down");
        e.code = Some("RESOURCE_EXHAUSTED".into());
        let (status, body) = p.encode_error(&e, true);
        let back = p.decode_error(Some(status), &body);
        assert_eq!(back.code, e.code);
        assert_eq!(back.message, e.message);
        assert_eq!(back.status, Some(429));
    }
}
