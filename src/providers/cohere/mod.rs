//! Cohere's v2 chat API (`POST /v2/chat`): its own messages (`tool_plan`, tool calls with
//! arguments as text, tool results as documents), citations, and a stream of typed events
//! (`tool-plan-delta`, `tool-call-start` / `-delta` / `-end`, `citation-start`, ...).
//! The quirk sheet follows.
#![doc = include_str!("../../../providers/cohere.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Result};
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// The response's `extra` key holding the citations of the answer, verbatim (each with its
/// `start`, `end`, `text`, `sources`, `type`), in the order they came.
pub const CITATIONS: &str = "citations";

/// The response's `extra` key holding the error message of a turn that ended in `ERROR`
/// (`message-end`'s `delta.error`).
pub const FINISH_ERROR: &str = "finish_error";

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "a Cohere v2 chat body: `message`, `finish_reason`",
    fields: "`message` (an object) and `finish_reason`",
    rank: 1,
    looks: |o| o.get("message").is_some_and(Value::is_object) && o.contains_key("finish_reason"),
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::Cohere,
    base_url: "https://api.cohere.com",
    key_vars: &["COHERE_API_KEY", "CO_API_KEY"],
    auth: Auth::Bearer,
    capabilities: "tools (auto, none, required), streamed arguments, tool plan as reasoning, \
                   citations, strict tools",
};

/// The `/v2/chat` wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cohere;

impl Cohere {
    /// Cohere's own endpoint.
    pub fn new() -> Self {
        Self
    }
}

impl Provider for Cohere {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new())
    }

    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        decode::api_error(status, body)
    }

    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        Ok(encode::parameters(tool))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;
    use crate::types::{Message, Part, ResponseFormat, ToolChoice};

    fn request() -> ChatRequest {
        ChatRequest::new("command-a-03-2025", vec![Message::user("hi")])
            .with_tools([ToolDefinition::new("get_weather", "").unwrap()])
    }

    fn body(req: &ChatRequest) -> Value {
        Cohere::new().encode(req, false).unwrap().body
    }

    fn unsupported(req: &ChatRequest) -> String {
        match Cohere::new().encode(req, false) {
            Err(e @ Error::Unsupported { .. }) => e.to_string(),
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }

    #[test]
    fn tool_choice_spellings() {
        let choice = |c| {
            body(&request().with_tool_choice(c))
                .get("tool_choice")
                .cloned()
        };
        assert_eq!(choice(ToolChoice::Auto), None);
        assert_eq!(choice(ToolChoice::None), Some(json!("NONE")));
        assert_eq!(choice(ToolChoice::Required), Some(json!("REQUIRED")));
        let named = request().with_tool_choice(ToolChoice::Tool("get_weather".into()));
        assert!(unsupported(&named).contains("REQUIRED or NONE"));
    }

    #[test]
    fn strict_tools_only_when_every_tool_is_strict() {
        let strict = |on: bool| ToolDefinition::new("a", "").unwrap().with_strict(on);
        let mut req = request();
        req.tools = vec![strict(true)];
        assert_eq!(body(&req)["strict_tools"], json!(true));
        req.tools = vec![strict(false)];
        assert!(body(&req).get("strict_tools").is_none());
        req.tools = vec![strict(true), ToolDefinition::new("b", "").unwrap()];
        assert!(unsupported(&req).contains("strict_tools"));
    }

    #[test]
    fn parallel_false_cannot_be_promised() {
        let mut req = request();
        req.parallel_tool_calls = Some(true);
        assert!(body(&req).get("parallel_tool_calls").is_none());
        req.parallel_tool_calls = Some(false);
        assert!(unsupported(&req).contains("parallel_tool_calls"));
    }

    #[test]
    fn user_parts_images_yes_files_no() {
        let image = Part::image_url("https://example.com/a.png");
        let req = ChatRequest::new("m", vec![Message::user(vec![Part::text("see"), image])]);
        assert_eq!(
            body(&req)["messages"][0]["content"],
            json!([{"type": "text", "text": "see"},
                   {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
        );
        let pdf = Part::file("application/pdf", "JVBERi0=", "a.pdf");
        let req = ChatRequest::new("m", vec![Message::user(vec![pdf])]);
        assert!(unsupported(&req).contains("messages[0].content[0]"));
    }

    #[test]
    fn answer_schema_and_thinking() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let mut req = request();
        req.response_format = Some(ResponseFormat::json_schema("answer", schema.clone()));
        req.thinking = Some(false);
        let b = body(&req);
        assert_eq!(
            b["response_format"],
            json!({"type": "json_object", "json_schema": schema})
        );
        assert_eq!(b["thinking"], json!({"type": "disabled"}));
    }

    #[test]
    fn a_foreign_stream_is_a_decode_error_and_event_names_are_a_fallback() {
        let p = Cohere::new();
        let mut d = p.decoder();
        let mut out = Vec::new();
        d.feed(None, r#"{"choices":[]}"#, &mut out).unwrap();
        let err = d.finish(&mut out).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        // The type from the event name when the payload has none.
        let mut d = p.decoder();
        d.feed(
            Some("content-delta"),
            r#"{"index":0,"delta":{"message":{"content":{"text":"hi"}}}}"#,
            &mut out,
        )
        .unwrap();
        d.feed(
            Some("message-end"),
            r#"{"delta":{"finish_reason":"COMPLETE"}}"#,
            &mut out,
        )
        .unwrap();
        let r = d.finish(&mut out).unwrap();
        assert_eq!(r.text.as_deref(), Some("hi"));
        assert_eq!(r.finish_reason, crate::types::FinishReason::Stop);
    }

    #[test]
    fn a_delta_for_a_call_never_started_is_a_decode_error() {
        let mut d = Cohere::new().decoder();
        let err = d
            .feed(
                None,
                r#"{"type":"tool-call-delta","index":3,"delta":{"message":{"tool_calls":{"function":{"arguments":"{"}}}}}"#,
                &mut Vec::new(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("never started"), "{err}");
    }
}
