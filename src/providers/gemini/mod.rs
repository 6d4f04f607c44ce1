//! Google Gemini API (`generateContent` / `streamGenerateContent`), native wire.
//!
//! Provider data rides in the canonical `extra` maps under the keys below, so a response
//! pasted back into the history as an [`AssistantMessage`](crate::AssistantMessage) gives
//! Gemini back exactly what it needs. The quirk sheet follows.
#![doc = include_str!("../../../providers/gemini.md")]

mod decode;
pub(crate) use decode::error_object;
pub(crate) mod encode;
mod partial;
#[cfg(feature = "respond")]
mod respond;
#[cfg(feature = "respond")]
pub(crate) use respond::{encode_error, rpc_status};
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Error, Result};
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Key of a thought signature: on [`ToolCall::extra`](crate::ToolCall) for the signature that
/// came with that call's part, and on [`ChatResponse::extra`] for one that came on a text part
/// (often a final empty one). Echoed on the same part when the history is sent back.
pub const THOUGHT_SIGNATURE: &str = "thought_signature";

/// Key (on [`ChatResponse::extra`]) of a signature that came on a thought part; the reasoning
/// is then sent back as a thought part carrying it.
pub const REASONING_SIGNATURE: &str = "reasoning_signature";

/// Key (on [`ChatResponse::extra`]) of the candidate's `finishMessage`, verbatim: on
/// `MALFORMED_FUNCTION_CALL` it holds the model's failed call text.
pub const FINISH_MESSAGE: &str = "finish_message";

/// Key (on [`ChatResponse::extra`]) of `promptFeedback.blockReason` when the prompt itself was
/// blocked (no candidate; finish reason `content_filter`).
pub const BLOCK_REASON: &str = "block_reason";

/// Key (on [`ChatResponse::extra`]) of the answer's parts that are neither text nor a call
/// (`inlineData` an image model made, `fileData`; code Gemini ran, `executableCode` and
/// `codeExecutionResult`, is a [`crate::HostedCall`] instead), each verbatim as `{"<kind>": {...}}` with its `thoughtSignature` when it had one.
pub const OTHER_PARTS: &str = "other_parts";

/// The signature Google documents for calls that have no real one (injected, or made by
/// another provider); Gemini 3 requires one on the first call of each model turn.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Whether Gemini accepts a function name: a letter or `_` first, then letters, digits, `_`,
/// `.`, `:` or `-`, at most 64 characters. Other names are mapped reversibly.
pub fn gemini_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "a Gemini body: `candidates`",
    fields: "`candidates`, `promptFeedback`, `usageMetadata`",
    rank: 3,
    looks: |o| o.contains_key("candidates") || o.contains_key("promptFeedback"),
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::Gemini,
    base_url: "https://generativelanguage.googleapis.com",
    key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    auth: Auth::Header("x-goog-api-key"),
    capabilities: "tools, parallel calls, thought signatures, lowered or JSON Schema parameters, \
                   Vertex streamed arguments",
};

/// The Gemini wire.
#[derive(Debug, Clone, Copy)]
pub struct Gemini {
    schema_mode: SchemaMode,
}

impl Gemini {
    /// The Gemini API with lowered `parameters` (see the quirk sheet for why).
    pub fn new() -> Self {
        Self {
            schema_mode: SchemaMode::Lowered,
        }
    }

    /// The schema form used when a request does not choose one.
    pub fn with_schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = mode;
        self
    }
}

impl Default for Gemini {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for Gemini {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream, self.schema_mode)
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

    /// The lowered `parameters` (`null` when the tool takes none), or the schema unchanged in
    /// [`SchemaMode::JsonSchema`].
    fn encode_parameters(&self, tool: &ToolDefinition, mode: Option<SchemaMode>) -> Result<Value> {
        let mode = mode.unwrap_or(self.schema_mode);
        Ok(encode::parameters(tool, mode, "parameters")?.map_or(Value::Null, |(_, v)| v))
    }

    /// `POST /v1beta/models/{model}:countTokens` with the turn's whole `generateContent` body
    /// as its `generateContentRequest` (its `model` set, as that form requires), so the count
    /// covers the system instruction and the function declarations too
    /// (<https://ai.google.dev/api/tokens#method:-models.counttokens>).
    fn encode_count_tokens(&self, req: &ChatRequest) -> Result<Option<HttpRequest>> {
        let mut wire = encode::encode(req, false, self.schema_mode)?;
        wire.path = encode::count_tokens_path(&req.model)?;
        let mut inner = std::mem::take(&mut wire.body);
        if let Value::Object(map) = &mut inner {
            map.insert("model".into(), Value::String(encode::resource(&req.model)));
        }
        wire.body = serde_json::json!({ "generateContentRequest": inner });
        Ok(Some(wire))
    }

    /// `totalTokens` of a `CountTokensResponse` (absent when the input counts nothing: 0).
    fn decode_count_tokens(&self, body: &[u8]) -> Result<u64> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Counted {
            #[serde(default)]
            total_tokens: u64,
        }
        serde_json::from_slice::<Counted>(body)
            .map(|c| c.total_tokens)
            .map_err(|e| Error::decode(ProviderKind::Gemini, "countTokens body", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::replay;
    use crate::types::{Message, ToolResult};
    use serde_json::json;

    /// The "done when": replay a Gemini stream, put the answer and the results in the
    /// history, encode it: one model turn with the calls (signature on the first only, no
    /// synthetic ids), one user turn answering them in call order.
    #[test]
    fn replayed_stream_encodes_back_with_signatures_in_place() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/gemini/quirk_parallel_one_per_chunk/response.sse"
        );
        let body = std::fs::read(path).unwrap();
        let gemini = Gemini::new();
        let response = replay(&gemini, &body).unwrap().response;
        let calls = response.tool_calls.clone();
        let signature = calls[0].extra[THOUGHT_SIGNATURE].clone();
        // Through JSON, as `toolwire replay` prints it and a user pastes it back.
        let text = serde_json::to_string(&response).unwrap();
        let assistant: crate::AssistantMessage = serde_json::from_str(&text).unwrap();
        let mut messages = vec![
            Message::user("Find the tokio docs."),
            Message::Assistant(assistant),
        ];
        for call in calls.iter().rev() {
            messages.push(Message::Tool(ToolResult::ok(call, json!({"hits": 1}))));
        }
        let request = ChatRequest::new("gemini-3-pro-preview", messages);
        let body = gemini.encode(&request, true).unwrap().body;
        let model = body["contents"][1]["parts"].as_array().unwrap();
        assert_eq!(model.len(), 3);
        assert_eq!(model[0]["thoughtSignature"], signature);
        assert!(model[1].get("thoughtSignature").is_none());
        assert!(model.iter().all(|p| p["functionCall"].get("id").is_none()));
        assert_eq!(
            model[2]["functionCall"]["args"],
            json!({"query": "tokio timeout drop"})
        );
        let answers = body["contents"][2]["parts"].as_array().unwrap();
        assert_eq!(body["contents"][2]["role"], "user");
        assert_eq!(answers.len(), 3);
        assert!(
            answers
                .iter()
                .all(|p| p["functionResponse"]["name"] == "search_docs")
        );
    }

    #[test]
    fn names() {
        assert!(gemini_name("get_weather"));
        assert!(gemini_name("_x.y:z-1"));
        assert!(!gemini_name("1password"));
        assert!(!gemini_name("-dash"));
        assert!(!gemini_name(""));
    }
}
