//! Amazon Bedrock Converse API (`POST /model/{modelId}/converse`) and ConverseStream
//! (`POST /model/{modelId}/converse-stream`), native wire.
//!
//! One request shape for every model Bedrock serves: content blocks keyed by their kind
//! (`text`, `toolUse`, `toolResult`, `reasoningContent`, `image`, `document`), tools under
//! `toolConfig`, the model id in the path. The streamed answer is not Server-Sent Events but
//! the binary `application/vnd.amazon.eventstream` framing ([`crate::eventstream`]); each
//! frame's `:event-type` names the payload (`messageStart`, `contentBlockStart`,
//! `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata`), and exception frames
//! are API errors. A call is complete at its `contentBlockStop`. Reasoning blocks (with their
//! signatures) ride in the response's `extra` under [`REASONING_BLOCKS`] and are sent back
//! verbatim. The quirk sheet follows.
#![doc = include_str!("../../../providers/bedrock.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use serde_json::Value;

use crate::error::{ApiError, Result};
use crate::provider::{
    Auth, Framing, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder,
};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// Key (on [`ChatResponse::extra`], and so on the [`AssistantMessage`](crate::AssistantMessage))
/// of the `reasoningContent` blocks of the answer, verbatim (an array of the blocks' inner
/// objects: `{"reasoningText": {"text", "signature"}}` or `{"redactedContent": "…"}`). Sent
/// back first in the assistant message, as models that think before calling need.
pub const REASONING_BLOCKS: &str = "reasoning_blocks";

/// Key (on [`ChatResponse::extra`]) of `metrics` (`latencyMs`), verbatim.
pub const METRICS: &str = "metrics";

/// Key (on [`ChatResponse::extra`]) of `additionalModelResponseFields`, verbatim.
pub const ADDITIONAL_MODEL_RESPONSE_FIELDS: &str = "additional_model_response_fields";

/// Key (on [`ChatResponse::extra`]) of `trace` (guardrail traces), verbatim.
pub const TRACE: &str = "trace";

/// Key (on [`ChatResponse::extra`]) of the number of stream events, or content blocks, of a
/// kind toolwire does not know, which were skipped.
pub const UNKNOWN_EVENTS: &str = "unknown_events";

/// The region used when `AWS_REGION` is not set.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Whether Bedrock accepts a tool name (ToolSpecification `name`: `[a-zA-Z0-9_-]+`, 1 to 64).
/// Other canonical names (with a `.`) are mapped reversibly.
pub fn bedrock_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The base URL: the region comes from `AWS_REGION` when the client is built
/// ([`DEFAULT_REGION`] when unset), through the `${VAR:-default}` form the client expands.
pub const BASE_URL: &str = "https://bedrock-runtime.${AWS_REGION:-us-east-1}.amazonaws.com";

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "an AWS Bedrock Converse body: `output.message`, `stopReason`",
    fields: "`output.message`, `stopReason`",
    rank: 0,
    looks: |o| {
        o.get("output").is_some_and(|x| x.get("message").is_some()) && o.contains_key("stopReason")
    },
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::Bedrock,
    base_url: BASE_URL,
    key_vars: &["AWS_BEARER_TOKEN_BEDROCK"],
    auth: Auth::BearerOrSigV4("bedrock"),
    capabilities: "tools, parallel calls, binary event-stream framing, calls complete at \
                   contentBlockStop, reasoning echoed with signatures, images and documents in \
                   tool results, toolConfig kept for tool history",
};

/// The Converse wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bedrock;

impl Bedrock {
    /// The Converse API.
    pub fn new() -> Self {
        Self
    }
}

impl Provider for Bedrock {
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

    fn framing(&self) -> Framing {
        Framing::EventStream
    }

    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        decode::api_error(status, body)
    }

    /// The `inputSchema.json`: the schema as is, `"type": "object"` added at the root when it
    /// names no type.
    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        Ok(encode::input_schema(tool))
    }
}
