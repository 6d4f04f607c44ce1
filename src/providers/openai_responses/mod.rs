//! OpenAI Responses API (`POST /responses`), native wire.
//!
//! Provider data rides in the canonical `extra` maps under the keys below, so a response
//! pasted back into the history as an [`AssistantMessage`](crate::AssistantMessage) gives the
//! API back exactly what it needs: each call's item id, the reasoning items (with their
//! `encrypted_content`) in front of the item they preceded, and which calls were custom-tool
//! calls. The quirk sheet follows.
#![doc = include_str!("../../../providers/openai-responses.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
pub mod gateway;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Result};
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Key (on [`ToolCall::extra`](crate::ToolCall)) of the call's output item id (`fc_…`,
/// `ctc_…`): not the `call_id` that results answer, but the item's own id, echoed on the
/// `function_call` input item.
pub const ITEM_ID: &str = "item_id";

/// Key of the reasoning items, verbatim (`{"type": "reasoning", "id", "summary",
/// "encrypted_content"?}`): on a [`ToolCall::extra`](crate::ToolCall) for the items that came
/// right before that call, on [`ChatResponse::extra`] for those before the text (or after the
/// last call). Sent back in the same places.
pub const REASONING_ITEMS: &str = "reasoning_items";

/// Key (on [`ToolCall::extra`](crate::ToolCall)) set to `true` on a call to a custom
/// (free-form) tool: [`ToolCall::FREE_FORM`](crate::ToolCall::FREE_FORM). Its `raw_arguments`
/// is the text the model wrote, byte for byte; its canonical arguments are `{"input": "<that
/// text>"}`.
pub const CUSTOM_TOOL: &str = crate::ToolCall::FREE_FORM;

/// The schema keyword that makes a [`ToolDefinition`] a custom (free-form) tool on this wire:
/// its value is the tool's `format` (`{"type": "text"}`, or `{"type": "grammar", "syntax":
/// "lark" | "regex", "definition": "…"}`), sent as `{"type": "custom", "name", "description",
/// "format"}`. Give such a tool the parameters `{"type": "object", "properties": {"input":
/// {"type": "string"}}, "required": ["input"], "x-openai-custom-format": {…}}`: other
/// providers then see a function with one string argument.
pub const CUSTOM_FORMAT: &str = "x-openai-custom-format";

/// Key (on [`ChatResponse::extra`]) of a refusal the model wrote instead of text.
pub const REFUSAL: &str = "refusal";

/// Key (on [`ChatResponse::extra`]) of the finished output items that have no canonical form
/// (server-side tool calls such as `web_search_call`, `shell_call`, an MCP approval request),
/// verbatim and in order, so nothing the model produced is lost. Not sent back.
pub const OTHER_ITEMS: &str = "other_items";

/// Key (on [`ChatResponse::extra`]) of the number of stream events of types toolwire does not
/// know, which were skipped (absent when there were none).
pub const UNKNOWN_EVENTS: &str = "unknown_events";

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "an OpenAI Responses body: `output` items",
    fields: "an `output` list",
    rank: 4,
    looks: |o| o.get("output").is_some_and(Value::is_array),
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::OpenAiResponses,
    base_url: "https://api.openai.com/v1",
    key_vars: &["OPENAI_API_KEY"],
    auth: Auth::Bearer,
    capabilities: "tools (strict by choice), custom free-form tools, parallel calls, reasoning \
                   items round-tripped (encrypted_content with store false), calls complete at \
                   their done event",
};

/// The Responses API wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses;

impl OpenAiResponses {
    /// The Responses API at OpenAI (or at any server given as the base URL).
    pub fn new() -> Self {
        Self
    }
}

impl Provider for OpenAiResponses {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(body)
    }

    /// The body's `usage` alone.
    fn decode_usage(&self, body: &[u8]) -> Option<crate::types::Usage> {
        decode::body_usage(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new())
    }

    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        decode::api_error(status, body)
    }

    /// The strict-mode rewrite for a strict tool, the schema unchanged otherwise; for a custom
    /// tool, the `format` it is sent with.
    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        Ok(match encode::custom_format(tool) {
            Some(format) => format.clone(),
            None => encode::parameters(tool),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::replay;
    use crate::types::{Message, ToolResult};
    use serde_json::json;

    /// A replayed stream, pasted back as history, gives the API back what it needs: the
    /// reasoning item (with its encrypted content) right before its call, the call's item id
    /// and call_id, and a result answering the call_id.
    #[test]
    fn replayed_stream_encodes_back_in_place() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/openai-responses/quirk_reasoning_items/response.sse"
        );
        let body = std::fs::read(path).unwrap();
        let p = OpenAiResponses::new();
        let response = replay(&p, &body).unwrap().response;
        let call = response.tool_calls[0].clone();
        let text = serde_json::to_string(&response).unwrap();
        let assistant: crate::AssistantMessage = serde_json::from_str(&text).unwrap();
        let mut request = ChatRequest::new(
            "gpt-5.1-codex-max",
            vec![
                Message::user("Weather in Kyoto?"),
                Message::Assistant(assistant),
                Message::Tool(ToolResult::ok(&call, json!({"temp_c": 6}))),
            ],
        );
        request.extra_body.insert("store".into(), json!(false));
        let input = p.encode(&request, true).unwrap().body["input"].clone();
        let types: Vec<&str> = input
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.get("type").and_then(Value::as_str).unwrap_or("message"))
            .collect();
        assert_eq!(
            types,
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(
            input[1]["encrypted_content"],
            "gAAAAABtw-reasoning-state-9c1f0e7a2b"
        );
        assert_eq!(input[2]["id"], "fc_tw_rs_02");
        assert_eq!(input[2]["call_id"], "call_tw_rs_02");
        assert_eq!(input[3]["call_id"], "call_tw_rs_02");
    }

    #[test]
    fn a_custom_tool_is_its_format() {
        let tool = ToolDefinition::new("sh", "Run a shell line.")
            .unwrap()
            .with_parameters(
                json!({"type": "object", "properties": {"input": {"type": "string"}},
                CUSTOM_FORMAT: {"type": "text"}}),
            )
            .unwrap();
        let p = OpenAiResponses::new();
        assert_eq!(
            p.encode_parameters(&tool, None).unwrap(),
            json!({"type": "text"})
        );
        let req = ChatRequest::new("m", vec![Message::user("ls")]).with_tools([tool]);
        let body = p.encode(&req, false).unwrap().body;
        assert_eq!(
            body["tools"][0],
            json!({"type": "custom", "name": "sh", "description": "Run a shell line.", "format": {"type": "text"}})
        );
    }
}
