//! The inverse of decoding, for the mock provider: the bodies DashScope would send.
//!
//! A stream is framed like the service frames it (`id:N`, `event:result`, `:HTTP_STATUS/200`,
//! `data:` without a space, no `[DONE]`), sends only deltas (`incremental_output: true`), has
//! the string `"null"` as finish reason until the last event, which carries the final
//! fragment and the finish reason, and reports running usage totals on every event.
//! Continuation fragments of a call have `"id": ""` and no name.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Result};
use crate::providers::split::pieces;
use crate::types::{ChatResponse, Usage};

/// The request id every mock body carries.
const REQUEST_ID: &str = "tw-mock-0000-0000-0000-000000000000";

/// How many characters one streamed fragment holds.
///
/// Fragments that repeat (`"abababab"` twice) are sent as they come, as the service would: a
/// client knows the stream is incremental from its request ([`Provider::decoder_for`]), and
/// only a replay without the request has to guess.
///
/// [`Provider::decoder_for`]: crate::provider::Provider::decoder_for
const PIECE: usize = 8;

fn usage_json(u: &Usage, output_tokens: u64) -> Value {
    let mut usage = Map::new();
    usage.insert("input_tokens".into(), json!(u.input_tokens));
    usage.insert("output_tokens".into(), json!(output_tokens));
    usage.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(output_tokens)),
    );
    if let Some(c) = u.cached_input_tokens {
        usage.insert("prompt_tokens_details".into(), json!({"cached_tokens": c}));
    }
    if let Some(r) = u.reasoning_tokens {
        usage.insert(
            "output_tokens_details".into(),
            json!({"reasoning_tokens": r}),
        );
    }
    Value::Object(usage)
}

fn call_json(index: usize, id: &str, name: Option<&str>, arguments: &str) -> Value {
    let mut function = Map::new();
    if let Some(name) = name {
        function.insert("name".into(), json!(name));
    }
    function.insert("arguments".into(), json!(arguments));
    json!({"index": index, "id": id, "type": "function", "function": function})
}

fn payload(message: Value, finish_reason: &str, usage: Option<Value>) -> Value {
    let mut body = Map::new();
    body.insert(
        "output".into(),
        json!({"choices": [{"message": message, "finish_reason": finish_reason}]}),
    );
    if let Some(u) = usage {
        body.insert("usage".into(), u);
    }
    body.insert("request_id".into(), json!(REQUEST_ID));
    Value::Object(body)
}

/// The body (or SSE stream) for `response`.
impl crate::provider::Respond for super::DashScope {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        encode_response(response, stream)
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        encode_error(error, stream)
    }
}

pub(crate) fn encode_response(response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
    let finish = response
        .raw_finish_reason
        .as_deref()
        .unwrap_or(response.finish_reason.as_str());
    if !stream {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert(
            "content".into(),
            json!(response.text.as_deref().unwrap_or("")),
        );
        if let Some(r) = &response.reasoning {
            message.insert("reasoning_content".into(), json!(r));
        }
        if !response.tool_calls.is_empty() {
            let calls = response
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| call_json(i, &c.id, Some(&c.name), &c.raw_arguments))
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let usage = response
            .usage
            .as_ref()
            .map(|u| usage_json(u, u.output_tokens));
        let body = payload(Value::Object(message), finish, usage);
        return Ok(body.to_string().into_bytes());
    }

    // One message per event, in the order the service streams them.
    let mut messages: Vec<Value> = Vec::new();
    for piece in pieces(response.reasoning.as_deref().unwrap_or(""), PIECE) {
        messages.push(json!({"content": "", "reasoning_content": piece, "role": "assistant"}));
    }
    for piece in pieces(response.text.as_deref().unwrap_or(""), PIECE) {
        messages.push(json!({"content": piece, "role": "assistant"}));
    }
    for (i, call) in response.tool_calls.iter().enumerate() {
        let args = pieces(&call.raw_arguments, PIECE);
        let first = args.first().copied().unwrap_or("");
        let start = call_json(i, &call.id, Some(&call.name), first);
        messages.push(json!({"content": "", "tool_calls": [start], "role": "assistant"}));
        for piece in args.iter().skip(1) {
            let more = call_json(i, "", None, piece);
            messages.push(json!({"content": "", "tool_calls": [more], "role": "assistant"}));
        }
    }
    if messages.is_empty() {
        messages.push(json!({"content": "", "role": "assistant"}));
    }
    let n = messages.len() as u64;
    let mut out = String::new();
    for (k, message) in messages.into_iter().enumerate() {
        let k = k as u64;
        let last = k + 1 == n;
        let usage = response.usage.as_ref().map(|u| {
            // Running totals that grow to the final count on the last event.
            let so_far = u.output_tokens.saturating_mul(k + 1) / n;
            usage_json(u, so_far)
        });
        let body = payload(message, if last { finish } else { "null" }, usage);
        out.push_str(&format!(
            "id:{}\nevent:result\n:HTTP_STATUS/200\ndata:{body}\n\n",
            k + 1
        ));
    }
    Ok(out.into_bytes())
}

/// The status and body for `error`: a plain `{"code", "message", "request_id"}` body, or in a
/// stream the same body as an `event:error` event sent with HTTP 200 (the real status only in
/// the `:HTTP_STATUS/` comment line).
pub(crate) fn encode_error(error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
    let status = error.status.unwrap_or(500);
    let mut body = Map::new();
    if let Some(code) = &error.code {
        body.insert("code".into(), json!(code));
    }
    body.insert("message".into(), json!(error.message));
    body.insert("request_id".into(), json!(REQUEST_ID));
    let body = Value::Object(body);
    if stream {
        let sse = format!("id:1\nevent:error\n:HTTP_STATUS/{status}\ndata:{body}\n\n");
        (200, sse.into_bytes())
    } else {
        (status, body.to_string().into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::provider::Respond;
    use crate::provider::{Provider, ProviderKind};
    use crate::providers::dashscope::DashScope;
    use crate::replay::replay;
    use crate::test_support::with_raw_finish;
    use crate::types::{FinishReason, ToolCall};

    fn sample() -> ChatResponse {
        let mut r = ChatResponse {
            text: Some("先查一下杭州和上海的天气。".into()),
            reasoning: Some("The user wants the weather in two cities.".into()),
            tool_calls: vec![
                ToolCall::new("call_tw_a1", "get_weather", r#"{"city":"杭州市"}"#),
                ToolCall::new("call_tw_a2", "get.time", r#"{"zone":"Asia/Shanghai"}"#),
            ],
            hosted_calls: Vec::new(),
            finish_reason: FinishReason::ToolCalls,
            // What the mock provider sends for it, so a decode of the encoding is identical.
            raw_finish_reason: Some("tool_calls".into()),
            usage: Some(Usage {
                input_tokens: 120,
                output_tokens: 57,
                reasoning_tokens: Some(11),
                ..Default::default()
            }),
            raw_usage: None,
            extra: Map::new(),
        };
        r.settle_finish_reason();
        r
    }

    #[test]
    fn repeating_fragments_decode_with_the_request() {
        // "abababab" twice: only the request tells this incremental stream from a cumulative one.
        let provider = DashScope::new();
        let response = ChatResponse {
            text: Some("abababababababababab".into()),
            finish_reason: FinishReason::Stop,
            ..ChatResponse::default()
        };
        let body = provider.encode_response(&response, true).unwrap();
        let parts = pieces(response.text.as_deref().unwrap(), PIECE);
        assert!(parts[1].starts_with(parts[0]), "the fragments repeat");
        let req = crate::ChatRequest::new("qwen-plus", vec![crate::Message::user("hi")]);
        let http = provider.encode(&req, true).unwrap();
        let decoded = crate::replay::replay_answer(&provider, Some(&http), &body).unwrap();
        assert_eq!(
            crate::test_support::counts_only(decoded.response),
            with_raw_finish(&response, &body)
        );
    }

    #[test]
    fn response_round_trips_as_json_and_as_stream() {
        let provider = DashScope::new();
        let response = sample();
        for stream in [false, true] {
            let body = provider.encode_response(&response, stream).unwrap();
            let decoded =
                crate::test_support::counts_only(replay(&provider, &body).unwrap().response);
            assert_eq!(decoded, response, "stream: {stream}");
        }
        let text = String::from_utf8(provider.encode_response(&response, true).unwrap()).unwrap();
        assert!(text.starts_with("id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"));
        assert!(
            text.contains(r#""id":"""#),
            "continuations carry an empty id"
        );
        assert!(!text.contains("[DONE]"));
    }

    #[test]
    fn truncated_and_empty_responses_round_trip() {
        let provider = DashScope::new();
        let mut cut = ChatResponse {
            tool_calls: vec![ToolCall::new_cut_short("call_tw_b1", "f", r#"{"q":"ab"#)],
            finish_reason: FinishReason::Length,
            ..ChatResponse::default()
        };
        cut.settle_finish_reason();
        let empty = ChatResponse {
            text: Some("ok".into()),
            ..ChatResponse::default()
        };
        for response in [cut, empty] {
            let body = provider.encode_response(&response, true).unwrap();
            assert_eq!(
                crate::test_support::counts_only(replay(&provider, &body).unwrap().response),
                with_raw_finish(&response, &body)
            );
        }
    }

    #[test]
    fn errors_round_trip() {
        let provider = DashScope::new();
        let mut error = ApiError::new(
            ProviderKind::DashScope,
            Some(400),
            "Role must be user or assistant and Content length must be greater than 0",
        );
        error.code = Some("InvalidParameter".into());

        let (status, body) = provider.encode_error(&error, false);
        assert_eq!(status, 400);
        let back = provider.decode_error(Some(status), &body);
        assert_eq!(back.code, error.code);
        assert_eq!(back.message, error.message);
        assert_eq!(back.status, Some(400));

        let (status, body) = provider.encode_error(&error, true);
        assert_eq!(status, 200);
        let err = replay(&provider, &body).unwrap_err();
        let api = err.api().expect("an API error");
        assert_eq!(api.code, error.code);
        assert_eq!(api.message, error.message);
        assert!(api.partial.is_none());
    }
}
