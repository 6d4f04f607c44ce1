//! `/api/chat` lines (or a whole body) → the canonical model.

use serde_json::{Map, Value};

use super::wire::{Chunk, ToolCall};
use crate::assemble::Assembler;
use crate::error::{ApiError, Error, Result};
use crate::provider::{ProviderKind, StreamDecoder, generic_error};
use crate::providers::shared::{foreign_body, stops_mid_json};
use crate::text_calls::TextCalls;
use crate::types::{ChatResponse, FinishReason, StreamEvent, Usage};

const KIND: ProviderKind = ProviderKind::Ollama;

/// Ollama's `done_reason` in canonical terms: `stop` (and a missing or empty reason on a
/// `done` line) is a normal end, `length` is `length`; `load`, `unload` and anything else are
/// kept verbatim.
pub(crate) fn finish_reason(wire: Option<&str>) -> FinishReason {
    match wire {
        None | Some("" | "stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// A call's `arguments` as text: the object as compact JSON with its keys in the order they
/// came, `{}` when absent or null, a string as is (some servers send one).
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The decoder of one turn, fed one line at a time.
#[derive(Debug)]
pub(crate) struct Decoder {
    turn: Assembler,
    /// A JSON object spread over several lines (a pretty-printed body pasted into `replay`),
    /// gathered until its braces balance.
    pending: Option<Spread>,
    /// Whether any line had Ollama's shape (a `message` or `done: true`).
    shaped: bool,
}

/// The lines of one JSON value written over several lines, and how deep the scan is in it.
#[derive(Debug, Default)]
struct Spread {
    text: String,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Spread {
    /// Appends a line; whether the value is complete. Each byte is scanned once.
    fn push(&mut self, line: &str) -> bool {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
        for b in line.bytes() {
            match (self.in_string, self.escaped, b) {
                (true, true, _) => self.escaped = false,
                (true, false, b'\\') => self.escaped = true,
                (true, false, b'"') => self.in_string = false,
                (true, false, _) => {}
                (false, _, b'"') => self.in_string = true,
                (false, _, b'{' | b'[') => self.depth += 1,
                (false, _, b'}' | b']') => self.depth = self.depth.saturating_sub(1),
                (false, _, _) => {}
            }
        }
        self.depth == 0 && !self.in_string
    }
}

impl Decoder {
    pub(crate) fn new(text_calls: Option<&TextCalls>) -> Self {
        Self {
            turn: Assembler::new(KIND).with_text_calls(text_calls),
            pending: None,
            shaped: false,
        }
    }

    fn call(&mut self, call: &ToolCall, at: usize, out: &mut Vec<StreamEvent>) -> Result<()> {
        let function = call.function.as_ref();
        let Some(name) = function
            .and_then(|f| f.name.as_deref())
            .filter(|n| !n.is_empty())
        else {
            return Err(Error::decode(
                KIND,
                format!("message.tool_calls[{at}]"),
                "a tool call without a function name",
            ));
        };
        let raw = arguments_text(function.and_then(|f| f.arguments.as_ref()));
        let slot = self
            .turn
            .whole_call(call.id.as_deref(), name, &raw, Map::new(), out);
        // Ollama parsed the call before sending it: it is whole, so final at once (unless a
        // server sent the arguments as text that stops mid-JSON: the done reason decides).
        if !stops_mid_json(&raw) {
            self.turn.complete_call(slot, out);
        }
        Ok(())
    }

    /// Applies one line: thinking, text, calls, then (on the `done` line) usage and the end.
    fn apply(&mut self, chunk: &Chunk, out: &mut Vec<StreamEvent>) -> Result<()> {
        if self.turn.is_finished() {
            return Ok(());
        }
        if let Some(message) = &chunk.message {
            self.turn
                .reasoning(message.thinking.as_deref().unwrap_or(""), out);
            self.turn
                .text(message.content.as_deref().unwrap_or(""), out);
            for (i, call) in message.tool_calls.iter().enumerate() {
                self.call(call, i, out)?;
            }
        }
        if chunk.done {
            let input = Chunk::count(chunk.prompt_eval_count.as_ref());
            let output = Chunk::count(chunk.eval_count.as_ref());
            if input.is_some() || output.is_some() {
                let usage = Usage {
                    input_tokens: input.unwrap_or(0),
                    output_tokens: output.unwrap_or(0),
                    reasoning_tokens: None,
                    ..Default::default()
                };
                self.turn.usage(usage, out);
                // Ollama has no usage object: its counts and timings stand in for one.
                self.turn.raw_usage(Value::Object(chunk.usage_fields()));
            }
            let raw = chunk.done_reason.as_deref().filter(|r| !r.is_empty());
            self.turn.finish(finish_reason(raw), raw, out);
        }
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn feed(&mut self, _event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if let Some(spread) = &mut self.pending {
            if !spread.push(data) {
                return Ok(());
            }
            let text = std::mem::take(&mut spread.text);
            self.pending = None;
            return self.feed(None, &text, out);
        }
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            // An object that goes on in the next lines: pretty-printed, not NDJSON.
            Err(e) if e.is_eof() && data.starts_with('{') => {
                let mut spread = Spread::default();
                if spread.push(data) {
                    return Err(Error::decode(KIND, "stream line", e));
                }
                self.pending = Some(spread);
                return Ok(());
            }
            Err(e) => return Err(Error::decode(KIND, "stream line", e)),
        };
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
            // `{"error": …}` after the stream started: the status stays 200.
            let mut api = api_error(None, data.as_bytes());
            api.partial = Some(Box::new(self.turn.interrupt()));
            return Err(api.into());
        }
        self.shaped |= chunk.message.is_some() || chunk.done;
        self.apply(&chunk, out)
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        // The `done: true` line ends the turn; a stream without it was cut off.
        if self.pending.take().is_some() {
            return Err(Error::Decode {
                provider: KIND,
                what: "response body".into(),
                message: "the body ends inside a JSON object".into(),
                partial: Some(Box::new(self.turn.interrupt())),
            });
        }
        self.turn.end(out)
    }
}

/// A whole body: one JSON object (`"stream": false`), or the lines of a stream.
pub(crate) fn decode_body(body: &[u8], text_calls: Option<&TextCalls>) -> Result<ChatResponse> {
    let text = std::str::from_utf8(body).map_err(|e| Error::decode(KIND, "response body", e))?;
    let mut decoder = Decoder::new(text_calls);
    let mut sink = Vec::new();
    let mut lines = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        lines += 1;
        decoder
            .feed(None, line, &mut sink)
            .map_err(|e| e.at_line(i + 1))?;
    }
    if lines == 0 {
        return Err(Error::decode(KIND, "response body", "the body is empty"));
    }
    if !decoder.shaped && decoder.pending.is_none() {
        return Err(foreign_body(KIND, super::BODY.fields));
    }
    decoder.finish(&mut sink)
}

/// Ollama's error body: `{"error": "text"}`, the message verbatim (no code).
pub(crate) fn api_error(status: Option<u16>, body: &[u8]) -> ApiError {
    generic_error(KIND, status, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArgumentsErrorKind;

    fn lines(lines: &[&str]) -> Result<(Vec<StreamEvent>, ChatResponse)> {
        let mut d = Decoder::new(None);
        let mut out = Vec::new();
        for l in lines {
            d.feed(None, l, &mut out)?;
        }
        let r = d.finish(&mut out)?;
        Ok((out, r))
    }

    #[test]
    fn whole_calls_complete_at_once_with_key_order_kept() {
        let (events, r) = lines(&[
            r#"{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Two cities."},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_ab12cd34","function":{"index":0,"name":"get_weather","arguments":{"unit":"celsius","city":"Paris"}}}]},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_time","arguments":{}}}]},"done":false}"#,
            r#"{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":12}"#,
        ])
        .unwrap();
        let complete_0 = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
            .unwrap();
        let start_1 = events
            .iter()
            .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 1, .. }))
            .unwrap();
        assert!(complete_0 < start_1);
        assert_eq!(
            r.tool_calls[0].raw_arguments,
            r#"{"unit":"celsius","city":"Paris"}"#
        );
        assert_eq!(r.tool_calls[1].raw_arguments, "{}");
        assert!(r.tool_calls[1].has_synthetic_id());
        assert_eq!(r.reasoning.as_deref(), Some("Two cities."));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.raw_finish_reason.as_deref(), Some("stop"));
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens), (40, 12));
    }

    #[test]
    fn errors_and_cuts() {
        let err = lines(&[
            r#"{"message":{"role":"assistant","content":"Hal"},"done":false}"#,
            r#"{"error":"an error was encountered while running the model"}"#,
        ])
        .unwrap_err();
        assert_eq!(err.api().unwrap().status, None);
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Hal"));

        let err = lines(&[r#"{"message":{"role":"assistant","content":"Hal"},"done":false}"#])
            .unwrap_err();
        assert!(matches!(err, Error::Stream { .. }), "{err}");

        let err = lines(&[
            r#"{"message":{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]},"done":false}"#,
        ])
        .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");

        let (_, r) = lines(&[
            r#"{"message":{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":"}}]},"done":false}"#,
            r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length","eval_count":3}"#,
        ])
        .unwrap();
        let call = &r.tool_calls[0];
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
        assert_eq!(r.finish_reason, FinishReason::Length);
    }

    #[test]
    fn a_pretty_printed_body_is_gathered() {
        let body = "{\n  \"message\": {\n    \"role\": \"assistant\",\n    \"content\": \"a { \\\" }\"\n  },\n  \"done\": true\n}\n";
        let r = decode_body(body.as_bytes(), None).unwrap();
        assert_eq!(r.text.as_deref(), Some("a { \" }"));
        let err = decode_body(b"{\n  \"message\": {\n", None).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
    }

    #[test]
    fn a_whole_body_is_one_line() {
        let r = decode_body(
            br#"{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done_reason":"load","done":true}"#,
            None,
        )
        .unwrap();
        assert_eq!(r.text.as_deref(), Some("Hi"));
        assert_eq!(r.finish_reason.as_str(), "load");
        assert_eq!(r.usage, None);
        assert!(decode_body(b"  \n", None).is_err());
    }
}
