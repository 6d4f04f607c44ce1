//! The canonical response → the bytes Cohere's `/v2/chat` would send, for the mock provider: a
//! chat body, or its event stream (`event:` + `data:` frames: `message-start`, the tool plan in
//! `tool-plan-delta`s or a text block's `content-start` / `-delta`s / `-end`, each call's
//! `tool-call-start` / `-delta`s / `-end`, each citation's `citation-start` / `-end`, and
//! `message-end` with the finish reason and usage).

use serde_json::{Map, Value, json};

use super::wire::{finish_reason, finish_wire, usage_json};
use super::{CITATIONS, FINISH_ERROR};
use crate::error::{ApiError, Result};
use crate::providers::split::pieces;
use crate::types::{ArgumentsErrorKind, ChatResponse, ToolCall};

/// Longest text or argument piece of one delta, in characters.
const PIECE_CHARS: usize = 8;

/// The message id every mock answer carries.
const MESSAGE_ID: &str = "c14c80c3-18eb-4519-9460-6c92edd8cfb4";

impl crate::provider::Respond for super::Cohere {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        Ok(if stream {
            stream_body(response).into_bytes()
        } else {
            whole_body(response).to_string().into_bytes()
        })
    }

    /// `{"id", "message"}`: Cohere's error bodies have no code.
    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        match error.status {
            None if stream => {
                // An error during generation: what came so far, then the turn ends in ERROR
                // with the message.
                let partial = error.partial.as_deref().cloned().unwrap_or_default();
                let mut frames = Frames::default();
                frames.content(&partial);
                frames.end("ERROR", Some(&error.message), None);
                (200, frames.out.into_bytes())
            }
            status => {
                let body = json!({"id": MESSAGE_ID, "message": error.message});
                (status.unwrap_or(500), body.to_string().into_bytes())
            }
        }
    }
}

/// The wire finish: the raw value kept when it still means the canonical reason.
fn finish(r: &ChatResponse) -> String {
    match r.raw_finish_reason.as_deref() {
        Some(raw) if finish_reason(raw) == r.finish_reason => raw.to_owned(),
        _ => finish_wire(&r.finish_reason).to_owned(),
    }
}

fn call_json(call: &ToolCall) -> Value {
    let mut m = Map::new();
    if !call.has_synthetic_id() {
        m.insert("id".into(), json!(call.id));
    }
    m.insert("type".into(), json!("function"));
    m.insert(
        "function".into(),
        json!({"name": call.name, "arguments": call.raw_arguments}),
    );
    Value::Object(m)
}

fn citations(r: &ChatResponse) -> Vec<Value> {
    match r.extra.get(CITATIONS) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

fn whole_body(r: &ChatResponse) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let mut content = Vec::new();
    if let Some(reasoning) = &r.reasoning {
        if r.tool_calls.is_empty() {
            content.push(json!({"type": "thinking", "thinking": reasoning}));
        } else {
            message.insert("tool_plan".into(), json!(reasoning));
        }
    }
    if let Some(text) = &r.text {
        content.push(json!({"type": "text", "text": text}));
    }
    if !content.is_empty() {
        message.insert("content".into(), Value::Array(content));
    }
    if !r.tool_calls.is_empty() {
        let calls = r.tool_calls.iter().map(call_json).collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let cites = citations(r);
    if !cites.is_empty() {
        message.insert("citations".into(), Value::Array(cites));
    }
    let mut body = Map::new();
    body.insert("id".into(), json!(MESSAGE_ID));
    body.insert("message".into(), Value::Object(message));
    body.insert("finish_reason".into(), json!(finish(r)));
    if let Some(u) = &r.usage {
        body.insert("usage".into(), usage_json(u));
    }
    Value::Object(body)
}

#[derive(Default)]
struct Frames {
    out: String,
    started: bool,
}

impl Frames {
    fn event(&mut self, v: Value) {
        let kind = v["type"].as_str().unwrap_or("").to_owned();
        self.out.push_str("event: ");
        self.out.push_str(&kind);
        self.out.push_str("\ndata: ");
        self.out.push_str(&v.to_string());
        self.out.push_str("\n\n");
    }

    fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.event(json!({"id": MESSAGE_ID, "type": "message-start", "delta": {"message": {
                "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}));
        }
    }

    /// One content block of `kind` (`text` or `thinking`) holding `text`, at `index`.
    fn block(&mut self, index: usize, kind: &str, text: &str) {
        self.event(json!({"type": "content-start", "index": index,
            "delta": {"message": {"content": {"type": kind, kind: ""}}}}));
        for piece in pieces(text, PIECE_CHARS) {
            self.event(json!({"type": "content-delta", "index": index,
                "delta": {"message": {"content": {kind: piece}}}}));
        }
        self.event(json!({"type": "content-end", "index": index}));
    }

    /// Reasoning (as the tool plan before calls, else a thinking block), text, citations and
    /// calls; a call without a complete text gets no `tool-call-end` (the stream was cut).
    fn content(&mut self, r: &ChatResponse) {
        self.start();
        let mut block = 0;
        if let Some(reasoning) = &r.reasoning {
            if r.tool_calls.is_empty() {
                self.block(block, "thinking", reasoning);
                block += 1;
            } else {
                for piece in pieces(reasoning, PIECE_CHARS) {
                    self.event(json!({"type": "tool-plan-delta",
                        "delta": {"message": {"tool_plan": piece}}}));
                }
            }
        }
        if let Some(text) = &r.text {
            self.block(block, "text", text);
        }
        for (i, citation) in citations(r).into_iter().enumerate() {
            self.event(json!({"type": "citation-start", "index": i,
                "delta": {"message": {"citations": citation}}}));
            self.event(json!({"type": "citation-end", "index": i}));
        }
        for (i, call) in r.tool_calls.iter().enumerate() {
            let mut opener = call_json(call);
            opener["function"]["arguments"] = json!("");
            self.event(json!({"type": "tool-call-start", "index": i,
                "delta": {"message": {"tool_calls": opener}}}));
            for piece in pieces(&call.raw_arguments, PIECE_CHARS) {
                self.event(json!({"type": "tool-call-delta", "index": i,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}}}));
            }
            let cut =
                (call.error.as_ref()).is_some_and(|e| e.kind == ArgumentsErrorKind::Truncated);
            if !cut {
                self.event(json!({"type": "tool-call-end", "index": i}));
            }
        }
    }

    fn end(&mut self, reason: &str, error: Option<&str>, usage: Option<Value>) {
        let mut delta = Map::new();
        if let Some(message) = error {
            delta.insert("error".into(), json!(message));
        }
        delta.insert("finish_reason".into(), json!(reason));
        if let Some(u) = usage {
            delta.insert("usage".into(), u);
        }
        self.event(json!({"type": "message-end", "delta": delta}));
    }
}

fn stream_body(r: &ChatResponse) -> String {
    let mut frames = Frames::default();
    frames.content(r);
    let error = r.extra.get(FINISH_ERROR).and_then(Value::as_str);
    frames.end(&finish(r), error, r.usage.as_ref().map(usage_json));
    frames.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Provider, Respond};
    use crate::providers::cohere::Cohere;
    use crate::test_support::{counts_only, samples, with_raw_finish};
    use crate::types::Usage;

    /// What decoding gives back: the sample with the counts the wire carries.
    fn expected(mut r: ChatResponse, wire: &[u8]) -> ChatResponse {
        r.usage = r.usage.map(|u| Usage {
            reasoning_tokens: None,
            ..u
        });
        with_raw_finish(&r, wire)
    }

    #[test]
    fn mock_answers_decode_back() {
        let p = Cohere::new();
        for (name, response) in samples() {
            let body = p.encode_response(&response, false).unwrap();
            let got = counts_only(p.decode(&body).unwrap());
            assert_eq!(got, expected(response.clone(), &body), "{name}: body");
            let sse = p.encode_response(&response, true).unwrap();
            let got = counts_only(crate::replay::replay(&p, &sse).unwrap().response);
            assert_eq!(got, expected(response, &sse), "{name}: stream");
        }
    }

    #[test]
    fn citations_and_finish_errors_round_trip() {
        let p = Cohere::new();
        let mut r = ChatResponse {
            text: Some("Paris is 22 °C.".into()),
            ..ChatResponse::default()
        };
        let citation = json!({"start": 9, "end": 14, "text": "22 °C", "type": "TEXT_CONTENT",
            "sources": [{"type": "tool", "id": "get_weather_1:0", "tool_output": {"temp_c": 22}}]});
        r.extra.insert(CITATIONS.into(), json!([citation]));
        for stream in [false, true] {
            let wire = p.encode_response(&r, stream).unwrap();
            let back = crate::replay::replay(&p, &wire).unwrap().response;
            assert_eq!(back.extra[CITATIONS], json!([citation]), "stream {stream}");
            assert_eq!(back.text, r.text);
        }
        let mut e = ApiError::new(crate::provider::ProviderKind::Cohere, None, "overloaded");
        e.partial = Some(Box::new(r.clone()));
        let (status, sse) = p.encode_error(&e, true);
        assert_eq!(status, 200);
        let back = crate::replay::replay(&p, &sse).unwrap().response;
        assert_eq!(back.finish_reason, crate::types::FinishReason::Error);
        assert_eq!(back.extra[FINISH_ERROR], "overloaded");
        assert_eq!(back.text, r.text);
        let e = ApiError::new(crate::provider::ProviderKind::Cohere, Some(429), "too many");
        let (status, body) = p.encode_error(&e, false);
        assert_eq!(status, 429);
        assert_eq!(p.decode_error(Some(status), &body).message, "too many");
    }
}
