//! OpenAI Chat Completions, and the shared implementation of every OpenAI-compatible wire.
//!
//! A compatible provider is a [`Dialect`] value handed to [`OpenAi::with_dialect`]; the quirk
//! sheet for OpenAI itself follows.
#![doc = include_str!("../../../providers/openai.md")]

pub(crate) mod decode;
mod dialect;
mod encode;
#[cfg(feature = "respond")]
pub mod gateway;
#[cfg(feature = "respond")]
mod respond;
mod wire;

pub use dialect::{
    AZURE_OPENAI, CallIds, Dialect, FilePart, InlineImage, MediaSupport, OPENAI, OPENAI_COMPATIBLE,
    ParallelCalls, ReasoningField, StructuredOutput, ThinkingSwitch, ToolChoiceSupport,
    openai_name,
};
#[cfg(feature = "respond")]
pub use respond::{
    DeltaRole, ErrorFields, IdleContent, OPENAI_RESPONSE, OpenAiResponder, ResponseShape,
    RunningFinish, StreamUsage, StreamedCalls,
};
use serde_json::Value;

use crate::error::Result;
use crate::provider::{HttpRequest, Provider, ProviderInfo, StreamDecoder};
use crate::types::{ChatRequest, ChatResponse, SchemaMode, ToolDefinition};

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "an OpenAI Chat Completions body: `choices`",
    fields: "`choices`",
    rank: 2,
    looks: |o| o.contains_key("choices"),
};

/// The Chat Completions wire, configured by a [`Dialect`].
#[derive(Debug, Clone, Copy)]
pub struct OpenAi {
    dialect: &'static Dialect,
}

impl OpenAi {
    /// OpenAI itself.
    pub fn new() -> Self {
        Self { dialect: &OPENAI }
    }

    /// Another OpenAI-compatible server (vLLM, Ollama, DeepSeek, a gateway).
    pub fn compatible() -> Self {
        Self {
            dialect: &OPENAI_COMPATIBLE,
        }
    }

    /// Any dialect of the wire.
    pub fn with_dialect(dialect: &'static Dialect) -> Self {
        Self { dialect }
    }

    /// The dialect in use.
    pub fn dialect(&self) -> &'static Dialect {
        self.dialect
    }
}

impl Default for OpenAi {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for OpenAi {
    fn info(&self) -> &ProviderInfo {
        &self.dialect.info
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(self.dialect, req, stream)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(self.dialect, body, None)
    }

    /// The body's `usage` alone.
    fn decode_usage(&self, body: &[u8]) -> Option<crate::types::Usage> {
        decode::body_usage(body)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new(self.dialect, None))
    }

    /// Reads tool calls written as text when the request asked for it.
    fn decode_for(&self, request: &HttpRequest, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(self.dialect, body, request.text_calls.as_ref())
    }

    fn decoder_for(&self, request: &HttpRequest) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new(
            self.dialect,
            request.text_calls.as_ref(),
        ))
    }

    fn encode_parameters(&self, tool: &ToolDefinition, _mode: Option<SchemaMode>) -> Result<Value> {
        encode::check_keys(self.dialect, tool)?;
        Ok(encode::parameters(tool))
    }
}
