//! Chat Completions bodies and stream chunks → the canonical model.

use std::borrow::Cow;

use super::wire::{Choice, Chunk, Delta};
use super::{Dialect, ReasoningField};
use crate::assemble::{Fragment, Turn};
use crate::error::{Error, Result};
use crate::provider::{StreamDecoder, generic_error};
use crate::providers::lenient::content_text;
use crate::types::{ChatResponse, FinishReason, StreamEvent, Usage};

/// A decoded finish reason: `None` while the turn is still running.
pub(crate) fn finish_reason(dialect: &Dialect, wire: Option<&str>) -> Option<FinishReason> {
    let wire = wire?;
    if dialect.unfinished.contains(&wire) {
        return None;
    }
    if let Some((_, reason)) = dialect.finish_reasons.iter().find(|(w, _)| *w == wire) {
        return Some(reason.clone());
    }
    Some(FinishReason::from_canonical(wire))
}

fn usage(u: &super::wire::Usage) -> Usage {
    Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
        reasoning_tokens: u
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
    }
}

/// Applies one choice's delta (or message) to the turn: text, reasoning, every tool-call entry,
/// and only then its finish reason.
fn apply_choice(dialect: &Dialect, turn: &mut Turn, choice: &Choice, out: &mut Vec<StreamEvent>) {
    if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
        apply_delta(dialect, turn, delta, out);
    }
    if let Some(reason) = finish_reason(dialect, choice.finish_reason.as_deref()) {
        turn.finish(reason, out);
    }
}

fn apply_delta(dialect: &Dialect, turn: &mut Turn, delta: &Delta, out: &mut Vec<StreamEvent>) {
    for field in dialect.reasoning_fields {
        let value = match field {
            ReasoningField::ReasoningContent => delta.reasoning_content.as_ref(),
            ReasoningField::Reasoning => delta.reasoning.as_ref(),
        };
        // The first field that carries text wins: servers that send both repeat the same text.
        let text = value.map(content_text).unwrap_or_default();
        if !text.is_empty() {
            turn.reasoning(&text, out);
            break;
        }
    }
    if let Some(content) = &delta.content {
        turn.text(&content_text(content), out);
    }
    for (position, call) in delta.tool_calls.iter().enumerate() {
        let function = call.function.as_ref();
        let raw = function
            .and_then(|f| f.arguments.as_deref())
            .map(|r| r.get());
        let arguments: Option<Cow<'_, str>> = match raw {
            None | Some("null") => None,
            Some(text) if text.starts_with('"') => serde_json::from_str::<Cow<'_, str>>(text).ok(),
            Some(object) => Some(Cow::Borrowed(object)),
        };
        let calls = turn.call_count();
        turn.fragment(
            position,
            Fragment {
                index: call.index,
                id: call.id.as_deref(),
                name: function.and_then(|f| f.name.as_deref()),
                arguments: arguments.as_deref(),
            },
            out,
        );
        let indexed = call.index.is_some_and(|i| i >= 0);
        if dialect.calls_end_at_next_index && indexed && turn.call_count() > calls {
            turn.complete_calls_before(calls, out);
        }
    }
}

/// Parses one payload, turning an `{"error": …}` payload into [`Error::Api`].
fn parse_chunk(dialect: &Dialect, data: &str, what: &str) -> Result<Chunk> {
    let chunk: Chunk =
        serde_json::from_str(data).map_err(|e| Error::decode(dialect.info.kind, what, e))?;
    if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(generic_error(dialect.info.kind, None, data.as_bytes()).into());
    }
    Ok(chunk)
}

/// A whole (non-streamed) response body.
pub(crate) fn decode_body(dialect: &Dialect, body: &[u8]) -> Result<ChatResponse> {
    let text = std::str::from_utf8(body)
        .map_err(|e| Error::decode(dialect.info.kind, "response body", e))?;
    let chunk = parse_chunk(dialect, text, "response body")?;
    let mut turn = Turn::new(dialect.info.kind);
    let mut sink = Vec::new();
    let choice = chunk
        .choices
        .iter()
        .find(|c| c.index.unwrap_or(0) == 0)
        .ok_or_else(|| Error::decode(dialect.info.kind, "response body", "no choices"))?;
    if let Some(u) = &chunk.usage {
        turn.usage(usage(u), &mut sink);
    }
    if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
        apply_delta(dialect, &mut turn, delta, &mut sink);
    }
    let reason = finish_reason(dialect, choice.finish_reason.as_deref()).unwrap_or_default();
    turn.end_with(reason, &mut sink)
}

/// The stream decoder: one per turn.
#[derive(Debug)]
pub(crate) struct Decoder {
    dialect: &'static Dialect,
    turn: Turn,
    done: bool,
}

impl Decoder {
    pub(crate) fn new(dialect: &'static Dialect) -> Self {
        Self {
            dialect,
            turn: Turn::new(dialect.info.kind),
            done: false,
        }
    }
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, _event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk = match parse_chunk(self.dialect, data, "stream payload") {
            Err(Error::Api(mut api)) => {
                api.partial = Some(Box::new(self.turn.interrupt()));
                return Err(Error::Api(api));
            }
            other => other?,
        };
        for choice in chunk.choices.iter().filter(|c| c.index.unwrap_or(0) == 0) {
            apply_choice(self.dialect, &mut self.turn, choice, out);
        }
        if let Some(u) = &chunk.usage {
            self.turn.usage(usage(u), out);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.done && !self.turn.is_finished() {
            // `[DONE]` without a finish_reason: the server ended the turn normally.
            self.turn.finish(FinishReason::Stop, out);
        }
        self.turn.end(out)
    }
}
