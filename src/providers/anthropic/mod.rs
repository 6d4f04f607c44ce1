//! Anthropic Messages API (`POST /v1/messages`), native wire.
//!
//! Content blocks in, content blocks out. Each `tool_use` block is complete at its
//! `content_block_stop`, so the decoder completes the call right there
//! (the shared stream assembler's early completion); thinking blocks ride in the
//! canonical `extra` maps under the keys below and are sent back verbatim, signatures and all.
//! The quirk sheet follows.
#![doc = include_str!("../../../providers/anthropic.md")]

mod decode;
pub(crate) mod encode;
#[cfg(feature = "respond")]
pub mod gateway;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Result};
use crate::provider::{Auth, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Key of the `thinking` / `redacted_thinking` blocks, verbatim (an array of block objects):
/// on [`ChatResponse::extra`] (and so on the [`AssistantMessage`](crate::AssistantMessage)) for
/// the blocks that open the message, on [`ToolCall::extra`](crate::ToolCall) for blocks that
/// came between an earlier block and that call (interleaved thinking). Echoed in place.
pub const THINKING_BLOCKS: &str = "thinking_blocks";

/// Key (on [`ChatResponse::extra`], and so on the
/// [`AssistantMessage`](crate::AssistantMessage)) of the citations of the turn's text blocks:
/// an array of `{"at", "len", "citations"}`, one per text block that had citations, `at` and
/// `len` the byte span of that block in the turn's text, `citations` the block's list verbatim
/// (whole, or gathered from its `citations_delta` events). Echoed on the text block with that
/// span, so a citation survives the next turn
/// (<https://platform.claude.com/docs/en/build-with-claude/citations>).
pub const TEXT_CITATIONS: &str = "text_citations";

/// Key (on [`ToolCall::extra`](crate::ToolCall)) of a `tool_use` block's `caller`, verbatim:
/// `{"type": "direct"}`, or `{"type": "code_execution_20250825", "tool_id": …}` when code
/// Anthropic ran called the tool (programmatic tool calling,
/// <https://platform.claude.com/docs/en/agents-and-tools/tool-use/programmatic-tool-calling>).
/// Written back on the `tool_use` block when the turn is echoed.
pub const CALLER: &str = "caller";

/// Key (on [`ChatResponse::extra`]) of the `stop_sequence` that ended the turn.
pub const STOP_SEQUENCE: &str = "stop_sequence";

/// Key (on [`ChatResponse::extra`]) of `stop_details` (why a `refusal` happened), verbatim.
pub const STOP_DETAILS: &str = "stop_details";

/// Key (on [`ChatResponse::extra`]) of the prompt tokens written to the cache (part of
/// `usage.input_tokens`), when not zero.
pub const CACHE_CREATION_INPUT_TOKENS: &str = "cache_creation_input_tokens";

/// Key (on [`ChatResponse::extra`]) of the prompt tokens read from the cache (part of
/// `usage.input_tokens`), when not zero.
pub const CACHE_READ_INPUT_TOKENS: &str = "cache_read_input_tokens";

/// Key (on [`ChatResponse::extra`]) of the number of stream events (and content-block
/// deltas) of a type toolwire does not know, which were skipped.
pub const UNKNOWN_EVENTS: &str = "unknown_events";

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` sent when a request sets none: the Messages API requires the field. 4096 is
/// within every current Claude model's output limit and is what the Anthropic SDK examples
/// and most clients use for ordinary turns.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Whether Anthropic accepts a tool name: `^[a-zA-Z0-9_-]{1,64}$`. Other canonical names
/// (with a `.`) are mapped reversibly.
pub fn anthropic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "an Anthropic Messages body: `type: message`, `stop_reason`",
    fields: "`type: message`, `content`, `stop_reason`",
    rank: 6,
    looks: |o| {
        o.get("type").and_then(Value::as_str) == Some("message") || o.contains_key("stop_reason")
    },
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::Anthropic,
    base_url: "https://api.anthropic.com",
    key_vars: &["ANTHROPIC_API_KEY"],
    auth: Auth::Header("x-api-key"),
    capabilities: "tools, parallel calls, calls complete at content_block_stop, thinking blocks \
                   echoed with signatures, is_error results",
};

/// The Messages API wire.
#[derive(Debug, Clone, Copy)]
pub struct Anthropic {
    default_max_tokens: u32,
}

impl Anthropic {
    /// The Messages API with [`DEFAULT_MAX_TOKENS`].
    pub fn new() -> Self {
        Self {
            default_max_tokens: DEFAULT_MAX_TOKENS,
        }
    }

    /// The `max_tokens` sent when a request sets none.
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }
}

impl Default for Anthropic {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for Anthropic {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream, self.default_max_tokens)
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

    /// The `input_schema`: the schema as is, `"type": "object"` added at the root when it
    /// names no type (the API requires it); a strict tool also gets `additionalProperties:
    /// false` on every object that does not set it.
    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        Ok(encode::input_schema(tool))
    }
}
