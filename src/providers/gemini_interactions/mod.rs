//! Google's Interactions API (`POST /v1beta/interactions`), native wire.
//!
//! A turn is a list of typed steps (`thought`, `function_call`, `model_output`, server-tool
//! `*_call` / `*_result` steps, …); a streamed turn arrives as `step.start` / `step.delta` /
//! `step.stop` events between `interaction.created` and `interaction.completed`.
//!
//! Stateless by default: every request says `store: false` and carries the whole history.
//! Server-side state is one setting away (see [`PREVIOUS_INTERACTION_ID`]).
//!
//! Provider data rides in the canonical `extra` maps under the keys below, so a response
//! pasted back into the history as an [`AssistantMessage`](crate::AssistantMessage) gives the
//! API back exactly what it needs: the thought steps with their signatures, the server-tool
//! steps, in the order they came. The quirk sheet follows.
#![doc = include_str!("../../../providers/gemini-interactions.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Result};
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Key (on [`ToolCall::extra`](crate::ToolCall)) of the `signature` of the call's own
/// `function_call` step, when the step carried a non-empty one. Echoed on the step.
pub const SIGNATURE: &str = "signature";

/// Key (on [`ChatResponse::extra`]) of the turn's steps in order, verbatim, except that each
/// `function_call` step stands as `{"type": "function_call", "id": "<call id>"}` (the call
/// itself is in `tool_calls`). Present when the turn had a step the canonical fields cannot
/// carry on their own: a `thought` (its `signature` and `summary`), a server-tool step
/// (`google_search_call` / `google_search_result`, `code_execution_*`, `url_context_*`, …,
/// run by Google and never a tool call), or a `model_output` with more than plain text
/// (annotations, images). Sent back as it is when the history goes to this wire, with the
/// message's own calls and text in their places.
pub const STEPS: &str = "steps";

/// Key (on [`ChatResponse::extra`]) of the interaction's `id`, when the server gave one
/// (stored interactions; `store: false` answers may have none).
pub const INTERACTION_ID: &str = "interaction_id";

/// The request setting (a key of [`ChatRequest::extra_body`]) that continues a stored
/// interaction: its value is the previous answer's [`INTERACTION_ID`]. The request then sends
/// as `input` only the messages after its last assistant message (the server holds the rest);
/// system messages and tools are sent again (they are not inherited). The previous interaction
/// must have been stored: build the provider with [`GeminiInteractions::with_store`]`(true)`
/// (or set `"store": true` in `extra_body`).
pub const PREVIOUS_INTERACTION_ID: &str = "previous_interaction_id";

/// Key (on [`ChatResponse::extra`]) of the number of stream events of types toolwire does not
/// know, which were skipped (absent when there were none).
pub const UNKNOWN_EVENTS: &str = "unknown_events";

const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::GeminiInteractions,
    base_url: "https://generativelanguage.googleapis.com",
    key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    auth: Auth::Header("x-goog-api-key"),
    capabilities: "tools, parallel calls, streamed arguments, thought signatures, server-tool \
                   steps kept verbatim, stateless (store false) or previous_interaction_id",
};

/// The Interactions wire.
#[derive(Debug, Clone, Copy)]
pub struct GeminiInteractions {
    schema_mode: SchemaMode,
    store: bool,
}

impl GeminiInteractions {
    /// The Interactions API, stateless (`store: false`), with `parameters` lowered as for
    /// Gemini's `generateContent`.
    pub fn new() -> Self {
        Self {
            schema_mode: SchemaMode::Lowered,
            store: false,
        }
    }

    /// The schema form used when a request does not choose one.
    pub fn with_schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = mode;
        self
    }

    /// Whether Google keeps each interaction (`store`), so a later request can continue it
    /// with [`PREVIOUS_INTERACTION_ID`]. Off by default: toolwire sends the whole history.
    pub fn with_store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }
}

impl Default for GeminiInteractions {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for GeminiInteractions {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream, self.schema_mode, self.store)
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
        Ok(encode::parameters(tool, mode, "parameters")?.unwrap_or(Value::Null))
    }
}
