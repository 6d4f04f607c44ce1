//! DashScope bodies and stream events → the canonical model.
//!
//! A stream is `event:result` payloads, each a whole `{"output", "usage", "request_id"}` body,
//! ended by the event whose `finish_reason` is not the string `"null"` (there is no `[DONE]`),
//! or an `event:error` payload `{"code", "message", "request_id"}` sent with HTTP 200.
//!
//! # Incremental and cumulative output
//!
//! With `incremental_output: true` (what toolwire sends) each event carries only what is new.
//! With `false` (the default of some models and of older clients) each event repeats all text,
//! reasoning and tool-call arguments so far. The client knows the form from its request
//! ([`crate::Provider::decoder_for`]); only a captured body replayed without its request has
//! the form detected: the first time a field that already holds text
//! arrives again non-empty, a value that starts with everything received so far means
//! cumulative, anything else incremental, and the decision holds for the rest of the stream.
//! A cumulative value is then cut after the known prefix, so both forms feed [`Assembler`] the same
//! deltas and decode to the same response.
//!
//! Cost stays linear in the bytes received: each value is compared once against what is
//! already held (never more bytes than the value itself, which was just parsed), only the new
//! suffix is appended, and once a stream is known to be incremental nothing is kept twice.

use std::collections::HashMap;

use super::wire::{Choice, Output, Payload, Usage as WireUsage, content_text};
use crate::assemble::{Assembler, Fragment};
use crate::error::{Error, Result};
use crate::provider::{ProviderKind, generic_error};
use crate::providers::shared::foreign_body;
use crate::types::{ChatResponse, FinishReason, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::DashScope;

/// A decoded finish reason: `None` while the turn runs (`"null"`, `""`, null or absent).
pub(crate) fn finish_reason(wire: Option<&str>) -> Option<FinishReason> {
    match wire? {
        "" | "null" => None,
        other => Some(FinishReason::from_canonical(other)),
    }
}

fn usage(u: &WireUsage) -> Usage {
    Usage {
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        reasoning_tokens: u
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
        cached_input_tokens: u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens),
        ..Default::default()
    }
}

/// Whether a payload is an error body: it carries a `code` and no `output`.
fn is_error(payload: &Payload) -> bool {
    payload.output.is_none() && payload.code.as_deref().is_some_and(|c| !c.is_empty())
}

/// The first choice: `index` 0, or the first entry when the multimodal endpoint sends none.
fn first_choice(output: &Output) -> Option<&Choice> {
    output
        .choices
        .iter()
        .enumerate()
        .find(|(pos, c)| c.index.unwrap_or(*pos as i64) == 0)
        .map(|(_, c)| c)
}

/// Which form the stream's values take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Not known yet: no field has arrived twice.
    Unknown,
    /// Each event carries only what is new.
    Incremental,
    /// Each event repeats everything so far.
    Cumulative,
}

/// Where a tool-call entry is kept, the same rule [`Assembler`] keys fragments by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CallKey {
    Index(i64),
    Id(String),
    Position(usize),
}

#[derive(Debug, Default)]
struct SeenCall {
    id: Option<String>,
    args: String,
}

/// Turns the values of one stream into deltas, whichever form the stream uses.
#[derive(Debug)]
struct Deltas {
    form: Form,
    text: String,
    reasoning: String,
    calls: Vec<SeenCall>,
    keys: HashMap<CallKey, usize>,
}

/// Which value a delta is taken of.
#[derive(Debug, Clone, Copy)]
enum Field {
    Text,
    Reasoning,
    Call(usize),
}

impl Deltas {
    fn new(form: Form) -> Self {
        Self {
            form,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            keys: HashMap::new(),
        }
    }

    fn held(&mut self, field: Field) -> Option<&mut String> {
        match field {
            Field::Text => Some(&mut self.text),
            Field::Reasoning => Some(&mut self.reasoning),
            Field::Call(slot) => self.calls.get_mut(slot).map(|c| &mut c.args),
        }
    }

    /// The new part of `value`. Empty means nothing new in either form.
    fn delta<'v>(&mut self, field: Field, value: &'v str) -> Result<&'v str> {
        if value.is_empty() || self.form == Form::Incremental {
            return Ok(value);
        }
        let form = self.form;
        let Some(held) = self.held(field) else {
            return Ok(value);
        };
        if form == Form::Unknown {
            if held.is_empty() {
                held.push_str(value);
                return Ok(value);
            }
            if !value.starts_with(held.as_str()) {
                // An incremental stream: nothing needs to be kept any more.
                *self = Self::new(Form::Incremental);
                return Ok(value);
            }
            self.form = Form::Cumulative;
        }
        let Some(held) = self.held(field) else {
            return Ok(value);
        };
        if let Some(rest) = value.strip_prefix(held.as_str()) {
            held.push_str(rest);
            Ok(rest)
        } else if held.starts_with(value) {
            Ok("")
        } else {
            let what = match field {
                Field::Text => "text",
                Field::Reasoning => "reasoning",
                Field::Call(_) => "tool-call arguments",
            };
            Err(Error::decode(
                KIND,
                "stream payload",
                format!(
                    "cumulative output (incremental_output: false) changed {what} already received"
                ),
            ))
        }
    }

    /// The slot of a tool-call entry; a new non-empty id that comes with a name, at a key
    /// holding another call, starts a new one, as in [`Assembler::fragment`]. Only tracked while the
    /// form may be cumulative.
    fn call_slot(
        &mut self,
        position: usize,
        index: Option<i64>,
        id: Option<&str>,
        named: bool,
    ) -> Option<usize> {
        if self.form == Form::Incremental {
            return None;
        }
        let key = match (index, id) {
            (Some(i), _) if i >= 0 => CallKey::Index(i),
            (_, Some(id)) => CallKey::Id(id.to_owned()),
            _ => CallKey::Position(position),
        };
        if let Some(&slot) = self.keys.get(&key)
            && let Some(seen) = self.calls.get_mut(slot)
        {
            let same = match (&seen.id, id) {
                (Some(held), Some(id)) => held == id || !named,
                _ => true,
            };
            if same {
                if seen.id.is_none() {
                    seen.id = id.map(str::to_owned);
                }
                return Some(slot);
            }
        }
        self.calls.push(SeenCall {
            id: id.map(str::to_owned),
            args: String::new(),
        });
        let slot = self.calls.len() - 1;
        self.keys.insert(key, slot);
        Some(slot)
    }
}

/// Applies one payload's output to the turn: reasoning, text, every tool-call entry, and only
/// then the finish reason.
fn apply_output(
    turn: &mut Assembler,
    deltas: &mut Deltas,
    output: &Output,
    out: &mut Vec<StreamEvent>,
) -> Result<()> {
    let Some(choice) = first_choice(output) else {
        // `result_format: "text"`: the text and finish reason sit on `output` itself.
        if let Some(text) = &output.text {
            let text = content_text(text);
            turn.text(deltas.delta(Field::Text, &text)?, out);
        }
        let raw = output.finish_reason.as_deref();
        if let Some(reason) = finish_reason(raw) {
            turn.finish(reason, raw, out);
        }
        return Ok(());
    };
    if let Some(message) = &choice.message {
        if let Some(reasoning) = &message.reasoning_content {
            let reasoning = content_text(reasoning);
            turn.reasoning(deltas.delta(Field::Reasoning, &reasoning)?, out);
        }
        if let Some(content) = &message.content {
            let content = content_text(content);
            turn.text(deltas.delta(Field::Text, &content)?, out);
        }
        for (position, call) in message.tool_calls.iter().enumerate() {
            let id = call.id.as_deref().filter(|s| !s.is_empty());
            let function = call.function.as_ref();
            let arguments = function.and_then(|f| f.arguments_text());
            let name = function.and_then(|f| f.name.as_deref());
            let named = name.is_some_and(|n| !n.is_empty());
            let arguments = match (
                deltas.call_slot(position, call.index, id, named),
                &arguments,
            ) {
                (Some(slot), Some(args)) => Some(deltas.delta(Field::Call(slot), args)?),
                (_, args) => args.as_deref(),
            };
            turn.fragment(
                position,
                Fragment {
                    index: call.index,
                    id,
                    name,
                    arguments,
                },
                out,
            );
        }
    }
    let raw = choice.finish_reason.as_deref();
    if let Some(reason) = finish_reason(raw) {
        turn.finish(reason, raw, out);
    }
    Ok(())
}

fn parse(data: &[u8], what: &str) -> Result<Payload> {
    serde_json::from_slice(data).map_err(|e| Error::decode(KIND, what, e))
}

/// A whole (non-streamed) response body; an error body gives [`Error::Api`].
pub(crate) fn decode_body(body: &[u8]) -> Result<ChatResponse> {
    const SHAPE: &str = super::BODY.fields;
    let payload = parse(body, "response body")?;
    if is_error(&payload) {
        return Err(generic_error(KIND, None, body).into());
    }
    // An `output` object alone is not enough: Bedrock Converse has one too (`output.message`).
    let output = payload
        .output
        .as_ref()
        .filter(|o| !o.choices.is_empty() || o.text.is_some() || o.finish_reason.is_some())
        .ok_or_else(|| foreign_body(KIND, SHAPE))?;
    let mut turn = Assembler::new(KIND);
    let mut sink = Vec::new();
    let mut deltas = Deltas::new(Form::Incremental);
    if let Some(u) = &payload.usage {
        turn.usage(usage(u), &mut sink);
        turn.raw_usage(u.raw.clone());
    }
    apply_output(&mut turn, &mut deltas, output, &mut sink)?;
    // A body always ends the turn; a missing finish reason is a normal end.
    turn.end_with(FinishReason::Stop, None, &mut sink)
}

/// The stream decoder: one per turn.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    deltas: Deltas,
    /// Whether any result event arrived (an error before any has no partial response).
    started: bool,
    /// Payloads seen, and whether any had DashScope's shape (an `output` object).
    payloads: usize,
    shaped: bool,
}

impl Decoder {
    /// A decoder for a stream known to be incremental (`Some(true)`), cumulative
    /// (`Some(false)`), or of a form to detect (`None`: a captured body replayed on its own).
    pub(crate) fn new(incremental: Option<bool>) -> Self {
        let form = match incremental {
            Some(true) => Form::Incremental,
            Some(false) => Form::Cumulative,
            None => Form::Unknown,
        };
        Self {
            turn: Assembler::new(KIND),
            deltas: Deltas::new(form),
            started: false,
            payloads: 0,
            shaped: false,
        }
    }

    /// An error event: the provider's code and message, and what had arrived before it.
    fn error(&mut self, data: &str) -> Error {
        let mut api = generic_error(KIND, None, data.as_bytes());
        if self.started {
            api.partial = Some(Box::new(self.turn.interrupt()));
        }
        Error::Api(Box::new(api))
    }
}

impl crate::provider::StreamDecoder for Decoder {
    fn feed(&mut self, event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        // DashScope sends no `[DONE]`; one added by a proxy (or in another API's stream) ends
        // nothing.
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        if event == Some("error") {
            return Err(self.error(data));
        }
        let payload = parse(data.as_bytes(), "stream payload")?;
        if is_error(&payload) {
            return Err(self.error(data));
        }
        self.payloads += 1;
        self.shaped |= payload.output.is_some();
        if let Some(output) = &payload.output
            && !self.turn.is_finished()
        {
            self.started = true;
            apply_output(&mut self.turn, &mut self.deltas, output, out)?;
        }
        if let Some(u) = payload.usage {
            // Running totals on every event: the last one wins.
            self.turn.usage(usage(&u), out);
            self.turn.raw_usage(u.raw);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.payloads > 0 && !self.shaped {
            return Err(Error::foreign_stream(
                KIND,
                self.payloads,
                "an `output` object",
            ));
        }
        self.turn.end(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::StreamDecoder;

    #[test]
    fn a_known_incremental_stream_may_repeat_pieces() {
        let event = |text: &str, finish: &str| {
            format!(
                r#"{{"output":{{"choices":[{{"message":{{"role":"assistant","content":"{text}"}},"finish_reason":"{finish}"}}]}}}}"#
            )
        };
        let mut d = Decoder::new(Some(true));
        let mut out = Vec::new();
        for (text, finish) in [("ha", "null"), ("ha", "null"), ("!", "stop")] {
            d.feed(Some("result"), &event(text, finish), &mut out)
                .unwrap();
        }
        let response = d.finish(&mut out).unwrap();
        assert_eq!(response.text.as_deref(), Some("haha!"));
    }

    #[test]
    fn detects_cumulative_and_cuts_the_prefix() {
        let mut d = Deltas::new(Form::Unknown);
        assert_eq!(d.delta(Field::Text, "我是").unwrap(), "我是");
        assert_eq!(d.delta(Field::Text, "我是阿里").unwrap(), "阿里");
        assert_eq!(d.form, Form::Cumulative);
        assert_eq!(d.delta(Field::Text, "我是阿里").unwrap(), "");
        assert_eq!(d.delta(Field::Text, "").unwrap(), "");
        assert!(d.delta(Field::Text, "你是").is_err());
    }

    #[test]
    fn detects_incremental_and_stops_keeping_text() {
        let mut d = Deltas::new(Form::Unknown);
        assert_eq!(d.delta(Field::Reasoning, "用户").unwrap(), "用户");
        assert_eq!(d.delta(Field::Reasoning, "需要").unwrap(), "需要");
        assert_eq!(d.form, Form::Incremental);
        assert!(d.reasoning.is_empty());
        assert_eq!(d.delta(Field::Text, "需要").unwrap(), "需要");
        assert_eq!(d.call_slot(0, Some(0), Some("call_a"), true), None);
    }

    #[test]
    fn cumulative_calls_key_by_index_and_restart_on_a_new_id() {
        let mut d = Deltas::new(Form::Cumulative);
        let a = d.call_slot(0, Some(0), Some("call_a"), true).unwrap();
        assert_eq!(d.delta(Field::Call(a), "{\"x\":").unwrap(), "{\"x\":");
        let again = d.call_slot(0, Some(0), Some("call_a"), true).unwrap();
        assert_eq!(again, a);
        // A fresh id without a name continues the call.
        let fresh = d.call_slot(0, Some(0), Some("call_a2"), false).unwrap();
        assert_eq!(fresh, a);
        assert_eq!(d.delta(Field::Call(a), "{\"x\":1}").unwrap(), "1}");
        let b = d.call_slot(0, Some(0), Some("call_b"), true).unwrap();
        assert_ne!(a, b);
        assert_eq!(d.delta(Field::Call(b), "{}").unwrap(), "{}");
    }

    #[test]
    fn finish_reason_null_string_means_running() {
        assert_eq!(finish_reason(Some("null")), None);
        assert_eq!(finish_reason(Some("")), None);
        assert_eq!(finish_reason(None), None);
        assert_eq!(finish_reason(Some("stop")), Some(FinishReason::Stop));
        assert_eq!(
            finish_reason(Some("brand_new")),
            Some(FinishReason::Other("brand_new".into()))
        );
    }
}

#[cfg(test)]
mod fixture_tests {
    use crate::providers::dashscope::DashScope;
    use crate::replay::replay;

    /// The cumulative form of a turn gives the same events, not just the same response.
    #[test]
    fn cumulative_stream_decodes_like_the_incremental_one() {
        let provider = DashScope::new();
        let incremental =
            include_bytes!("../../../fixtures/dashscope/stream_text_then_call/response.sse");
        let cumulative =
            include_bytes!("../../../fixtures/dashscope/quirk_cumulative_output/response.sse");
        let a = replay(&provider, incremental).unwrap();
        let b = replay(&provider, cumulative).unwrap();
        assert_eq!(a.response, b.response);
        assert_eq!(a.events, b.events);
        assert_eq!(a.response.tool_calls.len(), 2);
    }
}
