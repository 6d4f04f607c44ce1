//! The canonical response → the bytes a Chat Completions server sends, for the mock provider.
//!
//! The shapes follow the recorded OpenAI streams in research A.3: a role-only first chunk,
//! content fragments, each tool call opened by a fragment carrying `index`, `id`, `type` and
//! `name` with empty `arguments`, then argument fragments keyed by `index` only, a chunk with an
//! empty delta and the `finish_reason`, a usage-only chunk with empty `choices`, and
//! `data: [DONE]`. Decoding what this writes gives back the response it was given.

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::error::ApiError;
use crate::types::{ChatResponse, FinishReason, ToolCall, Usage};

/// Characters per text fragment: about one token, like the real service.
const TEXT_PIECE: usize = 4;
/// Characters per argument fragment (research A.3 shows `{"`, `city`, `":"`, `New`, ` York`).
const ARGUMENT_PIECE: usize = 5;

/// Fields every chunk and body carries. The values are the mock's own.
fn envelope(object: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!("chatcmpl-toolwire-mock"));
    m.insert("object".into(), json!(object));
    m.insert("created".into(), json!(0));
    m.insert("model".into(), json!("toolwire-mock"));
    m
}

/// The wire `finish_reason` for a canonical one: the canonical names are the wire names.
fn finish_wire(reason: &FinishReason) -> &str {
    reason.as_str()
}

fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("prompt_tokens".into(), json!(u.input_tokens));
    m.insert("completion_tokens".into(), json!(u.output_tokens));
    m.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    if let Some(r) = u.reasoning_tokens {
        m.insert(
            "completion_tokens_details".into(),
            json!({"reasoning_tokens": r}),
        );
    }
    Value::Object(m)
}

/// The call's wire object; a minted id is left out, as the service that sent none did.
fn call_head(call: &ToolCall, index: usize, arguments: &str) -> Value {
    let mut m = Map::new();
    m.insert("index".into(), json!(index));
    if !call.has_synthetic_id() {
        m.insert("id".into(), json!(call.id));
    }
    m.insert("type".into(), json!("function"));
    m.insert(
        "function".into(),
        json!({"name": call.name, "arguments": arguments}),
    );
    Value::Object(m)
}

/// Splits `text` into pieces of at most `n` characters (never inside a character).
fn pieces(text: &str, n: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(cut);
        rest = tail;
        Some(head)
    })
}

/// A whole `chat.completion` body.
pub(crate) fn body(dialect: &Dialect, response: &ChatResponse) -> Vec<u8> {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(response.text));
    if let (Some(reasoning), Some(field)) = (&response.reasoning, dialect.reasoning_fields.first())
    {
        message.insert(field.name().into(), json!(reasoning));
    }
    if !response.tool_calls.is_empty() {
        let calls: Vec<Value> = response
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut v = call_head(c, i, &c.raw_arguments);
                if let Some(m) = v.as_object_mut() {
                    m.remove("index");
                }
                v
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut body = envelope("chat.completion");
    body.insert(
        "choices".into(),
        json!([{
            "index": 0,
            "message": message,
            "finish_reason": finish_wire(&response.finish_reason),
        }]),
    );
    if let Some(u) = &response.usage {
        body.insert("usage".into(), usage_json(u));
    }
    Value::Object(body).to_string().into_bytes()
}

/// Appends one `data:` event for a chunk whose only choice has `delta` and `finish_reason`.
fn push_chunk(out: &mut Vec<u8>, delta: Value, finish: Option<&str>) {
    let mut chunk = envelope("chat.completion.chunk");
    chunk.insert(
        "choices".into(),
        json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
    );
    push_data(out, &Value::Object(chunk).to_string());
}

fn push_data(out: &mut Vec<u8>, data: &str) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// The chunks carrying the turn's content: role, reasoning, text and tool calls, without the
/// finish. Also the prefix of an interrupted stream.
fn content_chunks(dialect: &Dialect, response: &ChatResponse, out: &mut Vec<u8>) {
    push_chunk(out, json!({"role": "assistant", "content": ""}), None);
    if let (Some(reasoning), Some(field)) = (&response.reasoning, dialect.reasoning_fields.first())
    {
        for piece in pieces(reasoning, TEXT_PIECE) {
            push_chunk(out, json!({ field.name(): piece }), None);
        }
    }
    if let Some(text) = &response.text {
        for piece in pieces(text, TEXT_PIECE) {
            push_chunk(out, json!({"content": piece}), None);
        }
    }
    for (i, call) in response.tool_calls.iter().enumerate() {
        push_chunk(out, json!({"tool_calls": [call_head(call, i, "")]}), None);
        for piece in pieces(&call.raw_arguments, ARGUMENT_PIECE) {
            push_chunk(
                out,
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            );
        }
    }
}

/// A whole SSE stream for `response`.
pub(crate) fn stream(dialect: &Dialect, response: &ChatResponse) -> Vec<u8> {
    let mut out = Vec::new();
    content_chunks(dialect, response, &mut out);
    push_chunk(
        &mut out,
        json!({}),
        Some(finish_wire(&response.finish_reason)),
    );
    if let Some(u) = &response.usage {
        let mut chunk = envelope("chat.completion.chunk");
        chunk.insert("choices".into(), json!([]));
        chunk.insert("usage".into(), usage_json(u));
        push_data(&mut out, &Value::Object(chunk).to_string());
    }
    push_data(&mut out, "[DONE]");
    out
}

/// `{"error": {...}}` as OpenAI sends it (research A.6). `type` repeats the code when there is
/// one and is left out otherwise, so reading the body back gives the same code.
fn error_json(error: &ApiError) -> Value {
    let mut e = Map::new();
    e.insert("message".into(), json!(error.message));
    if let Some(code) = &error.code {
        e.insert("type".into(), json!(code));
    }
    e.insert("param".into(), Value::Null);
    e.insert("code".into(), json!(error.code));
    json!({ "error": e })
}

/// The status and body for `error`. An error without a status in a stream is an error event
/// inside a 200 stream, after the content of its partial response if it has one; with a
/// status it is a JSON body, or SSE-framed for a stream on a dialect that frames them
/// ([`Dialect::sse_error_bodies`]).
pub(crate) fn error(dialect: &Dialect, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let body = error_json(error).to_string();
    match error.status {
        None if stream => {
            let mut out = Vec::new();
            if let Some(partial) = &error.partial {
                content_chunks(dialect, partial, &mut out);
            }
            push_data(&mut out, &body);
            (200, out)
        }
        Some(status) if stream && dialect.sse_error_bodies => {
            let mut out = Vec::new();
            push_data(&mut out, &body);
            (status, out)
        }
        status => (status.unwrap_or(500), body.into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    use crate::providers::openai::OpenAi;
    use crate::replay::replay;

    fn call(id: &str, name: &str, raw: &str) -> ToolCall {
        ToolCall::new(id, name, raw)
    }

    fn cases() -> Vec<(&'static str, ChatResponse)> {
        let usage = Some(Usage {
            input_tokens: 12,
            output_tokens: 30,
            reasoning_tokens: Some(4),
        });
        vec![
            (
                "text",
                ChatResponse {
                    text: Some("Hello, 北京 — it's 22 °C.".into()),
                    finish_reason: FinishReason::Stop,
                    usage,
                    ..ChatResponse::default()
                },
            ),
            (
                "parallel calls",
                ChatResponse {
                    reasoning: Some("Two cities, two calls.".into()),
                    tool_calls: vec![
                        call("call_tw_1", "get_weather", r#"{"city":"Paris","unit":"c"}"#),
                        call(
                            "call_tw_2",
                            "get_weather",
                            r#"{"city": "北京", "q": "a\"b"}"#,
                        ),
                    ],
                    finish_reason: FinishReason::ToolCalls,
                    usage,
                    ..ChatResponse::default()
                },
            ),
            (
                "zero-arg call",
                ChatResponse {
                    text: Some("Checking the time.".into()),
                    tool_calls: vec![call("call_tw_3", "clock", "")],
                    finish_reason: FinishReason::ToolCalls,
                    usage: None,
                    ..ChatResponse::default()
                },
            ),
        ]
    }

    #[test]
    fn decode_inverts_encode_response() {
        let p = OpenAi::new();
        for (name, response) in cases() {
            let body = p.encode_response(&response, false).unwrap();
            assert_eq!(p.decode(&body).unwrap(), response, "{name}: JSON body");
            let sse = p.encode_response(&response, true).unwrap();
            let replayed = replay(&p, &sse).unwrap();
            assert_eq!(replayed.response, response, "{name}: stream");
            let text = String::from_utf8(sse).unwrap();
            assert!(text.ends_with("data: [DONE]\n\n"), "{name}");
        }
    }

    #[test]
    fn stream_shape_follows_the_recordings() {
        let p = OpenAi::new();
        let (_, response) = &cases()[1];
        let sse = p.encode_response(response, true).unwrap();
        let events = crate::sse::parse_all(&sse).unwrap();
        let chunks: Vec<Value> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let opener = chunks
            .iter()
            .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_tw_2")
            .unwrap();
        let head = &opener["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(head["index"], 1);
        assert_eq!(head["function"]["name"], "get_weather");
        assert_eq!(head["function"]["arguments"], "");
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["prompt_tokens"], 12);
        let finish = &chunks[chunks.len() - 2]["choices"][0];
        assert_eq!(finish["finish_reason"], "tool_calls");
        assert_eq!(finish["delta"], json!({}));
    }

    #[test]
    fn minted_ids_stay_minted() {
        let p = OpenAi::new();
        let mut c = call("call_0", "clock", "{}");
        c.extra
            .insert(ToolCall::SYNTHETIC_ID.into(), Value::Bool(true));
        let response = ChatResponse {
            tool_calls: vec![c],
            finish_reason: FinishReason::ToolCalls,
            ..ChatResponse::default()
        };
        let sse = p.encode_response(&response, true).unwrap();
        assert!(!String::from_utf8_lossy(&sse).contains("call_0"));
        assert_eq!(replay(&p, &sse).unwrap().response, response);
    }

    #[test]
    fn errors_round_trip() {
        let p = OpenAi::new();
        let mut e = ApiError::new(crate::ProviderKind::OpenAi, Some(429), "Rate limit reached");
        e.code = Some("rate_limit_exceeded".into());
        let (status, body) = p.encode_error(&e, false);
        assert_eq!(status, 429);
        let back = p.decode_error(Some(status), &body);
        assert_eq!(back.code, e.code);
        assert_eq!(back.message, e.message);

        // Mid-stream: a 200 stream with the partial content, then the error event.
        let mut e = ApiError::new(crate::ProviderKind::OpenAi, None, "overloaded");
        e.partial = Some(Box::new(ChatResponse {
            tool_calls: vec![call("call_tw_9", "get_weather", r#"{"city":"Pa"#)],
            ..ChatResponse::default()
        }));
        let (status, sse) = p.encode_error(&e, true);
        assert_eq!(status, 200);
        let err = replay(&p, &sse).unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.message, "overloaded");
        let partial = err.partial().unwrap();
        assert_eq!(partial.tool_calls[0].raw_arguments, r#"{"city":"Pa"#);
        assert_eq!(
            partial.tool_calls[0].error.as_ref().unwrap().kind,
            crate::ArgumentsErrorKind::Truncated
        );
    }

    #[test]
    fn qwen_frames_stream_errors_with_their_status() {
        let qwen = OpenAi::with_dialect(&crate::providers::qwen::QWEN);
        let mut e = ApiError::new(crate::ProviderKind::Qwen, Some(400), "bad tool_choice");
        e.code = Some("invalid_parameter_error".into());
        let (status, body) = qwen.encode_error(&e, true);
        assert_eq!(status, 400);
        assert!(body.starts_with(b"data: {\"error\":"), "SSE-framed");
        let back = qwen.decode_error(Some(status), &body);
        assert_eq!(
            (back.code, back.message),
            (e.code.clone(), e.message.clone())
        );
        let (_, plain) = qwen.encode_error(&e, false);
        assert!(plain.starts_with(b"{"), "a JSON body without a stream");
        let (_, openai) = OpenAi::new().encode_error(&e, true);
        assert!(openai.starts_with(b"{"), "OpenAI sends JSON bodies");
    }
}
