//! The canonical response → the bytes the Responses API would send, for the mock provider: a
//! `response` object, or the event stream (`event: <type>` + `data: {json}` frames with a
//! `sequence_number`, `response.created` first, each output item announced, streamed and
//! finished, then `response.completed` / `response.incomplete`; no `[DONE]`), written by the
//! gateway's [`EventWriter`] speaking as OpenAI ([`EventWriter::native`]) from the answer's
//! events ([`segments`] cut by `split::cut`), and the body by the gateway's body writer. An
//! error without a status answering a stream is the `error` event and `response.failed` after
//! whatever the partial response holds.

use serde_json::Value;

use super::REASONING_ITEMS;
use super::gateway::{self, EventWriter};
use crate::error::{ApiError, Result};
use crate::provider::{ProviderKind, StreamWriter};
use crate::providers::split::{FINE, Segment, cut};
use crate::types::ChatResponse;

impl crate::provider::Respond for super::OpenAiResponses {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        if !stream {
            return gateway::native_body(response);
        }
        gateway::sendable(response)?;
        let mut out = Vec::new();
        let mut w = EventWriter::native(response);
        w.start(&mut out);
        w.events(&cut(&segments(response), response.usage, FINE), &mut out);
        w.finish(response, &mut out);
        Ok(out)
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        match error.status {
            // An error inside a 200 stream: after whatever the partial response had, the
            // `error` event and `response.failed` (as recorded in vercel/ai's
            // openai-error.1.chunks.txt).
            None if stream => {
                let partial = error.partial.as_deref().cloned().unwrap_or_default();
                let mut out = Vec::new();
                let mut w = EventWriter::native(&partial);
                w.start(&mut out);
                w.events(&cut(&segments(&partial), None, FINE), &mut out);
                w.fail(error, &mut out);
                (200, out)
            }
            _ => gateway::encode_error(error),
        }
    }
}

/// The reasoning items under `extra` as segments: each item's start, then its summary parts
/// and its `reasoning_text` content parts, in order.
fn reasoning<'a>(extra: &'a serde_json::Map<String, Value>, out: &mut Vec<Segment<'a>>) {
    let items = extra.get(REASONING_ITEMS).and_then(Value::as_array);
    for item in items.into_iter().flatten().filter(|i| i.is_object()) {
        item_segments(item, out);
    }
}

fn item_segments<'a>(item: &'a Value, out: &mut Vec<Segment<'a>>) {
    out.push(Segment::Item(item.get("id").and_then(Value::as_str)));
    for (key, kind) in [("summary", "summary_text"), ("content", "reasoning_text")] {
        let parts = item.get(key).and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) == Some(kind)
                && let Some(text) = part.get("text").and_then(Value::as_str)
            {
                out.push(Segment::Reasoning {
                    text,
                    signature: None,
                });
            }
        }
    }
}

/// The layout of a scripted answer as this wire streams it: its reasoning items before the
/// text (or its reasoning text as one item, when it has no items anywhere), its hosted calls'
/// items, the text, then each call after its own reasoning items.
fn segments(r: &ChatResponse) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    reasoning(&r.extra, &mut out);
    let mut calls = Vec::new();
    for call in &r.tool_calls {
        reasoning(&call.extra, &mut calls);
    }
    if let (Some(text), true) = (&r.reasoning, out.is_empty() && calls.is_empty()) {
        out.push(Segment::Item(Some("rs_toolwire_mock")));
        out.push(Segment::Reasoning {
            text,
            signature: None,
        });
    }
    for (index, call) in r.hosted_calls.iter().enumerate() {
        if call.wire == ProviderKind::OpenAiResponses.name() {
            out.push(Segment::Hosted {
                index,
                name: &call.name,
            });
        }
    }
    if let Some(text) = r.text.as_deref().filter(|t| !t.is_empty()) {
        out.push(Segment::Text(text));
    }
    for (index, call) in r.tool_calls.iter().enumerate() {
        reasoning(&call.extra, &mut out);
        out.push(Segment::Call {
            index,
            call,
            arguments: gateway::call_text(call, true),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    use crate::provider::Respond;
    use crate::providers::openai_responses::OpenAiResponses;
    use crate::providers::openai_responses::{CUSTOM_TOOL, ITEM_ID, OTHER_ITEMS, REFUSAL};
    use crate::replay::replay;
    use crate::types::{FinishReason, ToolCall, Usage};
    use serde_json::{Map, json};

    fn sample() -> ChatResponse {
        let reasoning = json!({"id": "rs_s1", "type": "reasoning", "encrypted_content": "enc-1",
            "summary": [{"type": "summary_text", "text": "Plan."}, {"type": "summary_text", "text": "Act."}]});
        let mut weather = ToolCall::new("call_s1", "get_weather", r#"{"city":"Lyon"}"#);
        weather.extra.insert(ITEM_ID.into(), json!("fc_s1"));
        weather
            .extra
            .insert(REASONING_ITEMS.into(), json!([reasoning]));
        let mut sql = ToolCall::free_form("call_s2", "run_sql", "SELECT \"x\"\n");
        sql.extra.insert(ITEM_ID.into(), json!("ctc_s2"));
        let mut r = ChatResponse {
            text: Some("Looking it up, one moment please.".into()),
            reasoning: Some("Plan.\n\nAct.".into()),
            tool_calls: vec![weather, sql],
            hosted_calls: Vec::new(),
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 40,
                output_tokens: 31,
                reasoning_tokens: Some(12),
                ..Default::default()
            }),
            raw_finish_reason: None,
            raw_usage: None,
            extra: Map::new(),
        };
        r.raw_finish_reason = Some("completed".into());
        r
    }

    #[test]
    fn decode_of_encode_is_identity() {
        let p = OpenAiResponses::new();
        let mut cut = sample();
        cut.tool_calls[1] = ToolCall::new_cut_short("call_s3", "get_weather", r#"{"city":"Ly"#);
        cut.tool_calls[1]
            .extra
            .insert(ITEM_ID.into(), json!("fc_s3"));
        cut.finish_reason = FinishReason::Length;
        cut.raw_finish_reason = Some("max_output_tokens".into());
        let mut refused = ChatResponse {
            finish_reason: FinishReason::ContentFilter,
            ..ChatResponse::default()
        };
        refused
            .extra
            .insert(REFUSAL.into(), json!("I can't help with that."));
        refused.raw_finish_reason = Some("content_filter".into());
        refused.extra.insert(
            OTHER_ITEMS.into(),
            json!([{"id": "mcpr_1", "type": "mcp_approval_request", "name": "f"}]),
        );
        refused.hosted_calls.push(
            crate::types::HostedCall::new("ws_1", "web_search", "openai-responses").with_blocks([
                json!({"id": "ws_1", "type": "web_search_call", "status": "completed"}),
            ]),
        );
        for r in [sample(), cut, refused] {
            for stream in [false, true] {
                let bytes = p.encode_response(&r, stream).unwrap();
                let back = crate::test_support::counts_only(replay(&p, &bytes).unwrap().response);
                assert_eq!(
                    back,
                    r,
                    "stream={stream}\n{}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    #[test]
    fn plain_reasoning_gets_an_item_and_calls_get_item_ids() {
        let p = OpenAiResponses::new();
        let mut r = ChatResponse {
            reasoning: Some("Think.".into()),
            tool_calls: vec![ToolCall::new("call_a", "f", "{}")],
            finish_reason: FinishReason::ToolCalls,
            ..ChatResponse::default()
        };
        r.settle_finish_reason();
        let back = replay(&p, &p.encode_response(&r, true).unwrap())
            .unwrap()
            .response;
        assert_eq!(back.reasoning.as_deref(), Some("Think."));
        assert_eq!(back.tool_calls[0].extra[ITEM_ID], "fc_toolwire_0");
        assert_eq!(
            back.tool_calls[0].extra[REASONING_ITEMS][0]["id"],
            "rs_toolwire_mock"
        );
        let text = String::from_utf8(p.encode_response(&r, true).unwrap()).unwrap();
        assert!(text.starts_with("event: response.created\ndata: "));
        assert!(!text.contains("[DONE]"));
    }

    #[test]
    fn errors_round_trip_as_bodies_and_as_events() {
        let p = OpenAiResponses::new();
        let mut e = ApiError::new(ProviderKind::OpenAiResponses, Some(429), "slow down");
        e.code = Some("rate_limit_exceeded".into());
        let (status, body) = p.encode_error(&e, true);
        assert_eq!(status, 429);
        let back = p.decode_error(Some(status), &body);
        assert_eq!(back.code, e.code);
        assert_eq!(back.message, "slow down");

        e.status = None;
        e.partial = Some(Box::new(ChatResponse {
            text: Some("Partial".into()),
            ..ChatResponse::default()
        }));
        let (status, body) = p.encode_error(&e, true);
        assert_eq!(status, 200);
        let err = replay(&p, &body).unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.code.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(err.partial().unwrap().text.as_deref(), Some("Partial"));
    }

    #[test]
    fn unsendable_responses_are_refused() {
        let p = OpenAiResponses::new();
        let r = ChatResponse {
            finish_reason: FinishReason::Error,
            ..ChatResponse::default()
        };
        assert!(p.encode_response(&r, true).is_err());
        let mut bad = ToolCall::new("c", "sh", "{}");
        bad.extra.insert(CUSTOM_TOOL.into(), json!(true));
        let r = ChatResponse {
            tool_calls: vec![bad],
            ..ChatResponse::default()
        };
        assert!(p.encode_response(&r, false).is_err());
    }

    /// One writer: the mock's stream is the gateway's writer speaking as OpenAI, in the shapes
    /// the streaming events reference documents
    /// (<https://platform.openai.com/docs/api-reference/responses-streaming>): a reasoning
    /// item's summary parts each announced and finished under its `summary_index`, its
    /// `reasoning_text` content under its `content_index`, a refusal as the message's next
    /// content part (`response.refusal.delta` / `.done`), a custom tool's call as
    /// `custom_tool_call` with `response.custom_tool_call_input.delta` / `.done`, the answer's
    /// item ids kept, a hosted call's item sent as it was, and a call cut off by the end of
    /// the turn without its `.done` events. Where the two writers differed, the documented
    /// shape won: `response.function_call_arguments.done` carries the function's `name`
    /// (`ResponseFunctionCallArgumentsDoneEvent`: item_id, name, output_index, arguments), an
    /// error body's `type` is the class of its status (the error object of
    /// <https://platform.openai.com/docs/guides/error-codes>), and the response object has
    /// its `parallel_tool_calls`, `tool_choice` and `tools`.
    #[test]
    fn the_mock_streams_as_openai_documents() {
        let p = OpenAiResponses::new();
        let mut r = sample();
        let thought = json!({"id": "rs_t", "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": "Raw thought."}]});
        r.tool_calls[1]
            .extra
            .insert(REASONING_ITEMS.into(), json!([thought]));
        let mut cut = ToolCall::new_cut_short("call_s3", "get_weather", r#"{"city":"Ly"#);
        cut.extra.insert(ITEM_ID.into(), json!("fc_s3"));
        r.tool_calls.push(cut);
        r.finish_reason = FinishReason::Length;
        r.extra.insert(REFUSAL.into(), json!("Not that part."));
        let web = json!({"id": "ws_1", "type": "web_search_call", "status": "completed"});
        r.hosted_calls.push(
            crate::types::HostedCall::new("ws_1", "web_search", "openai-responses")
                .with_blocks([web.clone()]),
        );
        let bytes = p.encode_response(&r, true).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let events = crate::test_support::chunks(&bytes);
        let of =
            |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
        let sequence: Vec<u64> = events
            .iter()
            .filter_map(|e| e["sequence_number"].as_u64())
            .collect();
        assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>());

        let parts = of("response.reasoning_summary_part.done");
        let summaries: Vec<(&Value, &Value)> = parts
            .iter()
            .map(|e| (&e["summary_index"], &e["part"]["text"]))
            .collect();
        assert_eq!(
            summaries,
            [(&json!(0), &json!("Plan.")), (&json!(1), &json!("Act."))]
        );
        assert_eq!(
            of("response.reasoning_summary_part.added").len(),
            2,
            "{text}"
        );
        let raw = of("response.reasoning_text.done");
        assert_eq!(
            (raw.len(), &raw[0]["content_index"], &raw[0]["text"]),
            (1, &json!(0), &json!("Raw thought."))
        );
        assert!(!of("response.reasoning_text.delta").is_empty());

        let refusal = of("response.refusal.done");
        assert_eq!(refusal[0]["refusal"], "Not that part.");
        assert_eq!(refusal[0]["content_index"], 1);

        let custom = of("response.custom_tool_call_input.done");
        assert_eq!(custom[0]["input"], "SELECT \"x\"\n");
        assert_eq!(custom[0]["item_id"], "ctc_s2");
        let added: Vec<&Value> = of("response.output_item.added")
            .into_iter()
            .map(|e| &e["item"])
            .collect();
        assert!(
            added
                .iter()
                .any(|i| i["type"] == "custom_tool_call" && i["id"] == "ctc_s2")
        );
        assert!(added.contains(&&web), "{text}");
        let done: Vec<&Value> = of("response.output_item.done")
            .into_iter()
            .map(|e| &e["item"])
            .collect();
        assert!(done.contains(&&web), "{text}");

        let arguments = of("response.function_call_arguments.done");
        assert_eq!(arguments.len(), 1, "the cut-off call has no .done: {text}");
        assert_eq!(arguments[0]["item_id"], "fc_s1");
        assert_eq!(arguments[0]["name"], "get_weather");
        assert!(!done.iter().any(|i| i["id"] == "fc_s3"), "{text}");
        assert!(
            of("response.function_call_arguments.delta")
                .iter()
                .any(|e| e["item_id"] == "fc_s3")
        );
        let last = events.last().unwrap();
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(last["response"]["tools"], json!([]));
        let output = last["response"]["output"].as_array().unwrap();
        assert!(!output.iter().any(|i| i["id"] == "fc_s3"));

        // The whole body holds the same items, the cut-off call `incomplete`.
        let body: Value = serde_json::from_slice(&p.encode_response(&r, false).unwrap()).unwrap();
        let items = body["output"].as_array().unwrap();
        assert!(items.contains(&web));
        let cut = items.iter().find(|i| i["id"] == "fc_s3").unwrap();
        assert_eq!(cut["status"], "incomplete");

        // An error body names the class of its status as its `type`, its code as `code`.
        let mut e = ApiError::new(ProviderKind::OpenAiResponses, Some(429), "slow down");
        e.code = Some("rate_limit_exceeded".into());
        let (_, body) = p.encode_error(&e, false);
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert_eq!(body["error"]["type"], "requests", "{body}");
    }
}
