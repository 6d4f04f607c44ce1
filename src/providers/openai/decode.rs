//! Chat Completions bodies and stream chunks → the canonical model.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::{Choice, Chunk, Delta};
use super::{Dialect, ReasoningField};
use crate::assemble::{Assembler, Fragment};
use crate::error::{Error, Result};
use crate::provider::{StreamDecoder, generic_error};
use crate::providers::lenient::{raw_content_text, string_token_lossy};
use crate::providers::shared::foreign_body;
use crate::text_calls::TextCalls;
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

/// `native_finish_reason` values (a gateway's copy of the upstream model's own finish value,
/// OpenRouter: https://openrouter.ai/announcements/standardized-finish-reasons) that mean the
/// output hit its token limit: OpenAI `length`, Anthropic and Bedrock `max_tokens`, Gemini
/// `MAX_TOKENS`, the Responses API's `max_output_tokens`.
const NATIVE_LENGTH: &[&str] = &["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"];

/// The response field that keeps a choice's `native_finish_reason` verbatim.
pub(crate) const NATIVE_FINISH_REASON: &str = "native_finish_reason";

/// A choice's finish: the decoded reason and the wire's own value, `None` while running. A
/// normal end whose native value says the token limit was hit is `length`: a router that
/// rewrites `length` to `tool_calls` leaves the cut call `truncated`, never runnable.
fn choice_finish<'c>(
    dialect: &Dialect,
    choice: &'c Choice<'_>,
) -> Option<(FinishReason, Option<&'c str>)> {
    let raw = choice.finish_reason.as_deref();
    let reason = finish_reason(dialect, raw)?;
    let native = choice.native_finish_reason.as_deref();
    if reason.is_normal_end() && native.is_some_and(|n| NATIVE_LENGTH.contains(&n)) {
        return Some((FinishReason::Length, raw));
    }
    Some((reason, raw))
}

/// Keeps a choice's `native_finish_reason` on the response.
fn keep_native(turn: &mut Assembler, choice: &Choice<'_>) {
    if let Some(native) = choice
        .native_finish_reason
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        turn.set_extra(NATIVE_FINISH_REASON, Value::String(native.to_owned()));
    }
}

/// The usage of a whole body read alone ([`crate::provider::Provider::decode_usage`]): its
/// `usage` field, the rest of the body skipped unread.
pub(super) fn body_usage(body: &[u8]) -> Option<Usage> {
    #[derive(serde::Deserialize)]
    struct Counted {
        #[serde(default, deserialize_with = "crate::providers::lenient::object")]
        usage: Option<super::wire::Usage>,
    }
    let counted: Counted = serde_json::from_slice(body).ok()?;
    counted.usage.as_ref().map(usage)
}

fn usage(u: &super::wire::Usage) -> Usage {
    Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
        reasoning_tokens: u
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
        cached_input_tokens: u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(u.cached_tokens),
        ..Default::default()
    }
}

/// Applies one choice's delta (or message) to the turn: text, reasoning, every tool-call entry,
/// and only then its finish reason. `buf` is reused for unescaped argument text. An error when
/// the text read is no JSON text (see `raw_content_text`).
fn apply_choice(
    dialect: &Dialect,
    turn: &mut Assembler,
    choice: &Choice<'_>,
    buf: &mut String,
    out: &mut Vec<StreamEvent>,
) -> serde_json::Result<()> {
    if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
        apply_delta(dialect, turn, delta, buf, out)?;
    }
    if !turn.is_finished() {
        keep_native(turn, choice);
    }
    if let Some((reason, raw)) = choice_finish(dialect, choice) {
        turn.finish(reason, raw, out);
    }
    Ok(())
}

fn apply_delta(
    dialect: &Dialect,
    turn: &mut Assembler,
    delta: &Delta<'_>,
    buf: &mut String,
    out: &mut Vec<StreamEvent>,
) -> serde_json::Result<()> {
    for field in dialect.reasoning_fields {
        let value = match field {
            ReasoningField::ReasoningContent => delta.reasoning_content,
            ReasoningField::Reasoning => delta.reasoning,
        };
        // The first field that carries text wins: servers that send both repeat the same text.
        let text = match value {
            Some(v) => raw_content_text(v, buf)?,
            None => Cow::Borrowed(""),
        };
        if !text.is_empty() {
            turn.reasoning(&text, out);
            break;
        }
    }
    if let (Some(field), Some(raw)) = (dialect.reasoning_details, delta.reasoning_details) {
        turn.extend_extra(field, serde_json::from_str(raw.get())?);
    }
    if let Some(content) = delta.content {
        if dialect.thinking_chunks && content.get().starts_with('[') {
            typed_chunks(turn, content, out)?;
        } else {
            turn.text(&raw_content_text(content, buf)?, out);
        }
    }
    for (position, call) in delta.tool_calls.iter().enumerate() {
        let function = call.function.as_ref();
        let raw = function.and_then(|f| f.arguments).map(|r| r.get());
        // A lone surrogate escape in the text reads as U+FFFD: the fragment is kept, never
        // dropped (serde_json refuses such a string).
        let arguments: Option<Cow<'_, str>> = match raw {
            None | Some("null") => None,
            Some(text) if text.starts_with('"') => match string_token_lossy(text, buf) {
                Some(text) => Some(Cow::Borrowed(text)),
                None => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
            },
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
    Ok(())
}

/// `content` as a list of typed chunks, in order: a `thinking` chunk's text chunks are
/// reasoning, any other chunk's `text` is answer text (Mistral's Magistral models:
/// `[{"type": "thinking", "thinking": [{"type": "text", "text"}]}, {"type": "text", "text"}]`).
fn typed_chunks(
    turn: &mut Assembler,
    content: &serde_json::value::RawValue,
    out: &mut Vec<StreamEvent>,
) -> serde_json::Result<()> {
    let chunks: Vec<Value> = serde_json::from_str(content.get())?;
    for chunk in &chunks {
        if chunk.get("type").and_then(Value::as_str) == Some("thinking") {
            match chunk.get("thinking") {
                Some(Value::Array(parts)) => {
                    for text in parts.iter().filter_map(text_of) {
                        turn.reasoning(text, out);
                    }
                }
                Some(Value::String(text)) => turn.reasoning(text, out),
                _ => {}
            }
        } else if let Some(text) = text_of(chunk) {
            turn.text(text, out);
        }
    }
    Ok(())
}

/// A typed chunk's `text`.
fn text_of(chunk: &Value) -> Option<&str> {
    chunk.get("text").and_then(Value::as_str)
}

/// Parses one payload, turning an `{"error": …}` payload into [`Error::Api`].
fn parse_chunk<'a>(dialect: &Dialect, data: &'a str, what: &str) -> Result<Chunk<'a>> {
    let chunk: Chunk<'a> =
        serde_json::from_str(data).map_err(|e| Error::decode(dialect.info.kind, what, e))?;
    if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(generic_error(dialect.info.kind, None, data.as_bytes()).into());
    }
    Ok(chunk)
}

/// A whole (non-streamed) response body.
pub(crate) fn decode_body(
    dialect: &Dialect,
    body: &[u8],
    text_calls: Option<&TextCalls>,
) -> Result<ChatResponse> {
    let text = std::str::from_utf8(body)
        .map_err(|e| Error::decode(dialect.info.kind, "response body", e))?;
    let kind = dialect.info.kind;
    let mut chunk = parse_chunk(dialect, text, "response body")?;
    if chunk.choices.is_none() {
        return Err(foreign_body(kind, super::BODY.fields));
    }
    let mut turn = Assembler::new(kind).with_text_calls(text_calls);
    let mut sink = Vec::new();
    if let Some(u) = chunk.usage.take() {
        turn.usage(usage(&u), &mut sink);
        turn.raw_usage(u.raw);
    }
    let choice = chunk
        .choices()
        .iter()
        .find(|c| c.index.unwrap_or(0) == 0)
        .ok_or_else(|| Error::decode(kind, "response body", "no choice at index 0"))?;
    if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
        apply_delta(dialect, &mut turn, delta, &mut String::new(), &mut sink)
            .map_err(|e| Error::decode(dialect.info.kind, "response body", e))?;
    }
    keep_native(&mut turn, choice);
    match choice_finish(dialect, choice) {
        Some((reason, raw)) => turn.end_with(reason, raw, &mut sink),
        // A whole body is a finished turn; a missing (or "not yet") reason is a normal end.
        None => turn.end_with(FinishReason::Stop, None, &mut sink),
    }
}

/// The stream decoder: one per turn.
#[derive(Debug)]
pub(crate) struct Decoder {
    dialect: &'static Dialect,
    turn: Assembler,
    done: bool,
    /// Payloads seen (`[DONE]` aside), and whether any had the shape of a chunk.
    payloads: usize,
    shaped: bool,
    /// Reused for argument text that arrives escaped.
    buf: String,
}

impl Decoder {
    pub(crate) fn new(dialect: &'static Dialect, text_calls: Option<&TextCalls>) -> Self {
        Self {
            dialect,
            turn: Assembler::new(dialect.info.kind).with_text_calls(text_calls),
            done: false,
            payloads: 0,
            shaped: false,
            buf: String::new(),
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
        let mut chunk = match parse_chunk(self.dialect, data, "stream payload") {
            Err(Error::Api(mut api)) => {
                api.partial = Some(Box::new(self.turn.interrupt()));
                return Err(Error::Api(api));
            }
            other => other?,
        };
        self.payloads += 1;
        self.shaped |= chunk.is_chat_chunk();
        for choice in chunk.choices().iter().filter(|c| c.index.unwrap_or(0) == 0) {
            apply_choice(self.dialect, &mut self.turn, choice, &mut self.buf, out)
                .map_err(|e| Error::decode(self.dialect.info.kind, "stream payload", e))?;
        }
        if let Some(u) = chunk.usage.take() {
            self.turn.usage(usage(&u), out);
            self.turn.raw_usage(u.raw);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        if self.payloads > 0 && !self.shaped {
            return Err(Error::foreign_stream(
                self.dialect.info.kind,
                self.payloads,
                "a `choices` list, or usage with prompt_tokens/completion_tokens",
            ));
        }
        if self.done && self.payloads == 0 {
            // `[DONE]` alone is no answer: a broken stream, never an empty success.
            return match self.turn.end(out) {
                Err(Error::Stream {
                    provider, partial, ..
                }) => Err(Error::Stream {
                    provider,
                    reason: "the stream ended at [DONE] without a single chunk".into(),
                    partial,
                }),
                other => other,
            };
        }
        if self.done && !self.turn.is_finished() {
            // `[DONE]` without a finish_reason: the server ended the turn normally.
            self.turn.finish(FinishReason::Stop, None, out);
        }
        self.turn.end(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::openai::OPENAI_COMPATIBLE;

    fn body(finish: &str, native: &str) -> String {
        format!(
            r#"{{"choices":[{{"index":0,"finish_reason":"{finish}","native_finish_reason":"{native}","message":{{"role":"assistant","tool_calls":[{{"index":0,"id":"c1","type":"function","function":{{"name":"f","arguments":"{{\"q\":\"ab"}}}}]}}}}]}}"#
        )
    }

    fn stream(payloads: &[&str]) -> Result<ChatResponse> {
        let mut d = Decoder::new(&OPENAI_COMPATIBLE, None);
        let mut out = Vec::new();
        for p in payloads {
            d.feed(None, p, &mut out)?;
        }
        d.finish(&mut out)
    }

    #[test]
    fn a_stream_of_no_known_shape_is_never_a_success() {
        let err = stream(&[r#"{"foo":1}"#, r#"{"type":"ping"}"#, "[DONE]"]).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        assert!(
            err.to_string().contains("another provider's stream"),
            "{err}"
        );
        let err = stream(&["[DONE]"]).unwrap_err();
        assert!(matches!(err, Error::Stream { .. }), "{err}");
        // One chunk with the shape is enough; unknown payloads beside it are ignored.
        let r = stream(&[r#"{"type":"ping"}"#, r#"{"choices":[]}"#, "[DONE]"]).unwrap();
        assert_eq!(r.finish_reason, FinishReason::Stop);
        let r = stream(&[r#"{"choices":[],"usage":{"prompt_tokens":3}}"#, "[DONE]"]).unwrap();
        assert_eq!(r.usage.unwrap().input_tokens, 3);
    }

    #[test]
    fn a_lone_surrogate_in_argument_text_is_kept_as_a_replacement_character() {
        let call = |args: &str| {
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c1","function":{{"name":"f","arguments":"{args}"}}}}]}}}}]}}"#
            )
        };
        let r = stream(&[
            &call(r#"{\"q\":\"a"#),
            &call(r#"\ud800b\"}"#),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        let c = &r.tool_calls[0];
        assert_eq!(c.raw_arguments, "{\"q\":\"a\u{FFFD}b\"}");
        assert!(c.error.is_none(), "{c:?}");
        assert_eq!(c.arguments.as_ref().unwrap()["q"], "a\u{FFFD}b");
    }

    #[test]
    fn text_that_is_no_json_text_fails_the_payload() {
        // Content and reasoning are read raw (a `RawValue` checks neither surrogates nor number
        // ranges): a lone surrogate or an out-of-range number must still be a typed error
        // naming the payload, as when the field was a `Value`, never a silently empty delta.
        for value in [
            r#""\ud800""#,
            r#""a\udc00b""#,
            "1e999",
            r#"[{"text":"a"},{"text":"\ud800"}]"#,
            r#"[{"text":"a"},1e999]"#,
            r#"{"text":"\udc00"}"#,
        ] {
            for field in ["content", "reasoning_content", "reasoning"] {
                let delta =
                    format!(r#"{{"choices":[{{"index":0,"delta":{{"{field}":{value}}}}}]}}"#);
                let err = stream(&[&delta, "[DONE]"]).unwrap_err();
                assert!(
                    matches!(err, Error::Decode { .. }),
                    "{field}: {value}: {err}"
                );
                assert!(err.to_string().contains("stream payload"), "{err}");
                let body =
                    format!(r#"{{"choices":[{{"index":0,"message":{{"{field}":{value}}}}}]}}"#);
                let err = decode_body(&OPENAI_COMPATIBLE, body.as_bytes(), None).unwrap_err();
                assert!(
                    matches!(err, Error::Decode { .. }),
                    "{field}: {value}: {err}"
                );
            }
        }
        // Valid text of every shape still reads.
        let r = stream(&[
            r#"{"choices":[{"index":0,"delta":{"reasoning":"r\u00e9","content":[{"text":"a"},{"text":"\ud83d\ude00"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":7,"reasoning_content":null}}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(r.text.as_deref(), Some("a\u{1F600}"));
        assert_eq!(r.reasoning.as_deref(), Some("r\u{e9}"));
    }

    #[test]
    fn a_native_token_limit_under_a_normal_end_is_length() {
        for native in NATIVE_LENGTH {
            for finish in ["tool_calls", "stop"] {
                let r =
                    decode_body(&OPENAI_COMPATIBLE, body(finish, native).as_bytes(), None).unwrap();
                assert_eq!(r.finish_reason, FinishReason::Length, "{finish}/{native}");
                assert_eq!(r.raw_finish_reason.as_deref(), Some(finish));
                assert_eq!(r.extra[NATIVE_FINISH_REASON], *native);
                let err = r.tool_calls[0].error.as_ref().unwrap();
                assert_eq!(err.kind, crate::types::ArgumentsErrorKind::Truncated);
            }
        }
        // Other native values, and reasons that are no normal end, are left alone.
        let r = decode_body(
            &OPENAI_COMPATIBLE,
            body("tool_calls", "STOP").as_bytes(),
            None,
        )
        .unwrap();
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let r = decode_body(
            &OPENAI_COMPATIBLE,
            body("content_filter", "MAX_TOKENS").as_bytes(),
            None,
        )
        .unwrap();
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
    }
}
