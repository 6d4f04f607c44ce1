//! The canonical response → the bytes the Responses API would send, for the mock provider: a
//! `response` object, or the event stream (`event: <type>` + `data: {json}` frames with a
//! `sequence_number`, `response.created` first, each output item announced, streamed and
//! finished, then `response.completed` / `response.incomplete`; no `[DONE]`).

use serde_json::{Map, Value, json};

use super::{CUSTOM_TOOL, ITEM_ID, OTHER_ITEMS, REASONING_ITEMS, REFUSAL};
use crate::error::{ApiError, Error, Result};
use crate::provider::ProviderKind;
use crate::providers::split::pieces;
use crate::types::{ArgumentsErrorKind, ChatResponse, FinishReason, ToolCall, Usage};

/// Characters per text fragment: about one token, like the real service.
const TEXT_PIECE: usize = 4;
/// Characters per argument fragment.
const ARGUMENT_PIECE: usize = 5;

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(ProviderKind::OpenAiResponses, what)
}

impl crate::provider::Respond for super::OpenAiResponses {
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>> {
        let items = output(response)?;
        let (status, details) = status(&response.finish_reason)?;
        let mut writer = Writer::default();
        if !stream {
            let done: Vec<Value> = items.iter().map(Out::done_item).collect();
            let body = response_object(status, details, done, response.usage.as_ref());
            return Ok(body.to_string().into_bytes());
        }
        writer.lifecycle();
        let mut done = Vec::new();
        for (i, item) in items.iter().enumerate() {
            writer.item(i, item);
            if !item.cut_off() {
                done.push(item.done_item());
            }
        }
        let terminal = if status == "completed" {
            "response.completed"
        } else {
            "response.incomplete"
        };
        let body = response_object(status, details, done, response.usage.as_ref());
        writer.event(terminal, json!({"response": body}));
        Ok(writer.out.into_bytes())
    }

    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        let mut e = Map::new();
        e.insert("message".into(), json!(error.message));
        if let Some(code) = &error.code {
            e.insert("type".into(), json!(code));
        }
        e.insert("param".into(), Value::Null);
        e.insert("code".into(), json!(error.code));
        let e = Value::Object(e);
        match error.status {
            // An error inside a 200 stream: after whatever the partial response had, the
            // `error` event and `response.failed` (as recorded in vercel/ai's
            // openai-error.1.chunks.txt).
            None if stream => {
                let mut writer = Writer::default();
                writer.lifecycle();
                if let Some(partial) = &error.partial
                    && let Ok(items) = output(partial)
                {
                    for (i, item) in items.iter().enumerate() {
                        writer.item(i, item);
                    }
                }
                writer.event("error", error_event(error));
                let mut body = response_object("failed", None, Vec::new(), None);
                if let Value::Object(m) = &mut body {
                    m.insert("error".into(), failed_error(error));
                }
                writer.event("response.failed", json!({"response": body}));
                (200, writer.out.into_bytes())
            }
            status => (
                status.unwrap_or(500),
                json!({"error": e}).to_string().into_bytes(),
            ),
        }
    }
}

/// The fields of the `error` event of a stream that fails, as documented
/// (<https://platform.openai.com/docs/api-reference/responses-streaming/error>): `code`,
/// `message` and `param` at the event's top level. The one writer of the mock's and the
/// gateway's failing streams, with [`failed_error`].
pub(super) fn error_event(error: &ApiError) -> Value {
    json!({"code": error.code, "message": error.message, "param": null})
}

/// The `error` of the `response.failed` that ends a failing stream: `code` (required by the
/// Response object's schema; `server_error` when the failure has none) and `message`.
pub(super) fn failed_error(error: &ApiError) -> Value {
    let code = error.code.as_deref().unwrap_or("server_error");
    json!({"code": code, "message": error.message})
}

/// `status` and `incomplete_details` for a finish reason: `completed` for a normal end, else
/// `incomplete` with the reason (the Response object's `incomplete_details.reason`,
/// <https://platform.openai.com/docs/api-reference/responses/object>), a reason this wire has
/// no name for going out as it is rather than as `completed`. The one reading of the mock and
/// the gateway.
pub(super) fn status(reason: &FinishReason) -> Result<(&'static str, Option<Value>)> {
    let incomplete = |why: &str| ("incomplete", Some(json!({"reason": why})));
    Ok(match reason {
        FinishReason::Stop | FinishReason::ToolCalls => ("completed", None),
        FinishReason::Length => incomplete("max_output_tokens"),
        FinishReason::ContentFilter => incomplete("content_filter"),
        FinishReason::Pause => incomplete("pause_turn"),
        FinishReason::Other(why) => incomplete(why),
        FinishReason::Error => {
            return Err(unsupported(
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

/// `usage`, each detail written only when known: a count the upstream did not give is left out,
/// never written as 0. The one usage writer of the mock and the gateway.
pub(super) fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("input_tokens".into(), json!(u.input_tokens));
    if let Some(cached) = u.cached_input_tokens {
        m.insert(
            "input_tokens_details".into(),
            json!({"cached_tokens": cached}),
        );
    }
    m.insert("output_tokens".into(), json!(u.output_tokens));
    if let Some(r) = u.reasoning_tokens {
        m.insert(
            "output_tokens_details".into(),
            json!({"reasoning_tokens": r}),
        );
    }
    m.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    Value::Object(m)
}

fn response_object(
    status: &str,
    details: Option<Value>,
    output: Vec<Value>,
    usage: Option<&Usage>,
) -> Value {
    json!({
        "id": "resp_toolwire_mock",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": null,
        "incomplete_details": details,
        "model": "toolwire-mock",
        "output": output,
        "usage": usage.map(usage_json),
    })
}

/// One output item to send.
#[derive(Debug)]
enum Out<'a> {
    /// A reasoning item, verbatim.
    Reasoning(Value),
    /// An item with no canonical form (a server-side tool call), verbatim.
    Other(Value),
    /// The text (and a refusal).
    Message {
        text: Option<&'a str>,
        refusal: Option<&'a str>,
    },
    /// A call, with its item id.
    Call { call: &'a ToolCall, item_id: String },
}

impl Out<'_> {
    /// A call the turn cut off: streamed without its `.done` events, `incomplete` in a body.
    fn cut_off(&self) -> bool {
        matches!(self, Out::Call { call, .. }
            if call.error.as_ref().is_some_and(|e| e.kind == ArgumentsErrorKind::Truncated))
    }

    /// The item as `response.output_item.done` (and a whole body) carries it.
    fn done_item(&self) -> Value {
        match self {
            Out::Reasoning(item) | Out::Other(item) => item.clone(),
            Out::Message { text, refusal } => {
                let mut content = Vec::new();
                if let Some(text) = text {
                    content.push(json!({"type": "output_text", "annotations": [], "text": text}));
                }
                if let Some(refusal) = refusal {
                    content.push(json!({"type": "refusal", "refusal": refusal}));
                }
                message_item("completed", content)
            }
            Out::Call { call, item_id } => {
                let status = if self.cut_off() {
                    "incomplete"
                } else {
                    "completed"
                };
                call_item(call, item_id, status, &call_text(call))
            }
        }
    }
}

fn message_item(status: &str, content: Vec<Value>) -> Value {
    json!({"type": "message", "id": "msg_toolwire_mock", "status": status,
           "role": "assistant", "content": content})
}

fn is_custom(call: &ToolCall) -> bool {
    call.extra.get(CUSTOM_TOOL) == Some(&Value::Bool(true))
}

/// What the call's item carries: its argument text, or a custom call's input.
fn call_text(call: &ToolCall) -> String {
    if is_custom(call) {
        return call
            .arguments
            .as_ref()
            .and_then(|a| a.get("input"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
    }
    call.raw_arguments.clone()
}

fn call_item(call: &ToolCall, item_id: &str, status: &str, text: &str) -> Value {
    let mut m = Map::new();
    let custom = is_custom(call);
    m.insert(
        "type".into(),
        json!(if custom {
            "custom_tool_call"
        } else {
            "function_call"
        }),
    );
    m.insert("id".into(), json!(item_id));
    m.insert("status".into(), json!(status));
    m.insert(
        (if custom { "input" } else { "arguments" }).into(),
        json!(text),
    );
    // A minted id is left out, as the server that sent none did.
    if !call.has_synthetic_id() {
        m.insert("call_id".into(), json!(call.id));
    }
    m.insert("name".into(), json!(call.name));
    Value::Object(m)
}

fn items_of<'a>(extra: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = Value> + 'a {
    extra
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
        .cloned()
}

/// The output items for `r`, in order: the reasoning items before the text (or one carrying
/// the reasoning text as its summary, when the response has no reasoning items at all), the
/// message, then each call after its own reasoning items.
fn output(r: &ChatResponse) -> Result<Vec<Out<'_>>> {
    let mut items: Vec<Out<'_>> = items_of(&r.extra, REASONING_ITEMS)
        .map(Out::Reasoning)
        .collect();
    let any_items = !items.is_empty()
        || r.tool_calls
            .iter()
            .any(|c| c.extra.contains_key(REASONING_ITEMS));
    if let (Some(reasoning), false) = (&r.reasoning, any_items) {
        items.push(Out::Reasoning(json!({
            "type": "reasoning", "id": "rs_toolwire_mock",
            "summary": [{"type": "summary_text", "text": reasoning}],
        })));
    }
    items.extend(items_of(&r.extra, OTHER_ITEMS).map(Out::Other));
    // Hosted calls made on this wire, as their items (before the message: the writer sends
    // one message item).
    items.extend(
        (r.hosted_calls.iter())
            .filter(|c| c.wire == ProviderKind::OpenAiResponses.name())
            .flat_map(|c| c.blocks.iter().filter(|b| b.is_object()).cloned())
            .map(Out::Other),
    );
    let text = r.text.as_deref().filter(|t| !t.is_empty());
    let refusal = r.extra.get(REFUSAL).and_then(Value::as_str);
    if text.is_some() || refusal.is_some() {
        items.push(Out::Message { text, refusal });
    }
    for (i, call) in r.tool_calls.iter().enumerate() {
        if is_custom(call)
            && call
                .arguments
                .as_ref()
                .and_then(|a| a.get("input"))
                .and_then(Value::as_str)
                .is_none()
        {
            return Err(unsupported(format!(
                "tool_calls[{i}] is a custom-tool call without a string `input` argument"
            )));
        }
        items.extend(items_of(&call.extra, REASONING_ITEMS).map(Out::Reasoning));
        let item_id = call
            .extra
            .get(ITEM_ID)
            .and_then(Value::as_str)
            .map_or_else(|| format!("fc_toolwire_{i}"), str::to_owned);
        items.push(Out::Call { call, item_id });
    }
    Ok(items)
}

/// Writes the event stream.
#[derive(Debug, Default)]
struct Writer {
    out: String,
    sequence: u64,
}

impl Writer {
    /// One event: `fields` plus `type` and `sequence_number`.
    fn event(&mut self, ty: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("type".into(), json!(ty));
        m.insert("sequence_number".into(), json!(self.sequence));
        if let Value::Object(fields) = fields {
            m.extend(fields);
        }
        self.sequence += 1;
        self.out.push_str("event: ");
        self.out.push_str(ty);
        self.out.push_str("\ndata: ");
        self.out.push_str(&Value::Object(m).to_string());
        self.out.push_str("\n\n");
    }

    fn lifecycle(&mut self) {
        let body = response_object("in_progress", None, Vec::new(), None);
        self.event("response.created", json!({"response": body.clone()}));
        self.event("response.in_progress", json!({"response": body}));
    }

    /// Announces, streams and (unless cut off) finishes item `i`.
    fn item(&mut self, i: usize, item: &Out<'_>) {
        match item {
            Out::Reasoning(done) => self.reasoning(i, done),
            Out::Other(done) => self.event(
                "response.output_item.added",
                json!({"output_index": i, "item": done}),
            ),
            Out::Message { text, refusal } => self.message(i, *text, *refusal),
            Out::Call { call, item_id } => self.call(i, call, item_id, item.cut_off()),
        }
        if !item.cut_off() {
            self.event(
                "response.output_item.done",
                json!({"output_index": i, "item": item.done_item()}),
            );
        }
    }

    fn reasoning(&mut self, i: usize, done: &Value) {
        let id = done.get("id").cloned().unwrap_or(Value::Null);
        let mut added = done.clone();
        if let Value::Object(m) = &mut added {
            m.insert("summary".into(), json!([]));
            m.remove("content");
        }
        self.event(
            "response.output_item.added",
            json!({"output_index": i, "item": added}),
        );
        let parts = |key: &str, kind: &str| -> Vec<String> {
            done.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some(kind))
                .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned))
                .collect()
        };
        for (j, text) in parts("summary", "summary_text").iter().enumerate() {
            let part = |t: &str| json!({"type": "summary_text", "text": t});
            let at = json!({"item_id": id, "output_index": i, "summary_index": j});
            self.event(
                "response.reasoning_summary_part.added",
                merge(&at, json!({"part": part("")})),
            );
            for piece in pieces(text, TEXT_PIECE) {
                self.event(
                    "response.reasoning_summary_text.delta",
                    merge(&at, json!({"delta": piece})),
                );
            }
            self.event(
                "response.reasoning_summary_text.done",
                merge(&at, json!({"text": text})),
            );
            self.event(
                "response.reasoning_summary_part.done",
                merge(&at, json!({"part": part(text)})),
            );
        }
        for (j, text) in parts("content", "reasoning_text").iter().enumerate() {
            let at = json!({"item_id": id, "output_index": i, "content_index": j});
            for piece in pieces(text, TEXT_PIECE) {
                self.event(
                    "response.reasoning_text.delta",
                    merge(&at, json!({"delta": piece})),
                );
            }
            self.event(
                "response.reasoning_text.done",
                merge(&at, json!({"text": text})),
            );
        }
    }

    fn message(&mut self, i: usize, text: Option<&str>, refusal: Option<&str>) {
        self.event(
            "response.output_item.added",
            json!({"output_index": i, "item": message_item("in_progress", Vec::new())}),
        );
        let parts = [
            text.map(|t| ("output_text", "text", "response.output_text", t)),
            refusal.map(|r| ("refusal", "refusal", "response.refusal", r)),
        ];
        for (j, (kind, field, events, value)) in parts.into_iter().flatten().enumerate() {
            let at = json!({"item_id": "msg_toolwire_mock", "output_index": i, "content_index": j});
            let part = |v: &str| {
                let mut p = json!({"type": kind});
                if let Value::Object(m) = &mut p {
                    if kind == "output_text" {
                        m.insert("annotations".into(), json!([]));
                    }
                    m.insert(field.into(), json!(v));
                }
                p
            };
            self.event(
                "response.content_part.added",
                merge(&at, json!({"part": part("")})),
            );
            for piece in pieces(value, TEXT_PIECE) {
                self.event(
                    &format!("{events}.delta"),
                    merge(&at, json!({"delta": piece})),
                );
            }
            let mut done = Map::new();
            done.insert(field.into(), json!(value));
            self.event(&format!("{events}.done"), merge(&at, Value::Object(done)));
            self.event(
                "response.content_part.done",
                merge(&at, json!({"part": part(value)})),
            );
        }
    }

    fn call(&mut self, i: usize, call: &ToolCall, item_id: &str, cut_off: bool) {
        self.event(
            "response.output_item.added",
            json!({"output_index": i, "item": call_item(call, item_id, "in_progress", "")}),
        );
        let text = call_text(call);
        let (events, field) = if is_custom(call) {
            ("response.custom_tool_call_input", "input")
        } else {
            ("response.function_call_arguments", "arguments")
        };
        let at = json!({"item_id": item_id, "output_index": i});
        for piece in pieces(&text, ARGUMENT_PIECE) {
            self.event(
                &format!("{events}.delta"),
                merge(&at, json!({"delta": piece})),
            );
        }
        if !cut_off {
            let mut done = Map::new();
            done.insert(field.into(), json!(text));
            if !is_custom(call) {
                done.insert("name".into(), json!(call.name));
            }
            self.event(&format!("{events}.done"), merge(&at, Value::Object(done)));
        }
    }
}

/// `a`'s fields followed by `b`'s.
fn merge(a: &Value, b: Value) -> Value {
    let mut m = a.as_object().cloned().unwrap_or_default();
    if let Value::Object(b) = b {
        m.extend(b);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    use crate::provider::Respond;
    use crate::providers::openai_responses::OpenAiResponses;
    use crate::replay::replay;

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
}
