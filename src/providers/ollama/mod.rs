//! Ollama's native chat API (`POST /api/chat`). Ollama's OpenAI-compatible endpoint is
//! `openai` with a base URL; this is the server's own wire.
//!
//! Newline-delimited JSON, no key, calls that arrive whole (Ollama parses the model's call
//! itself) with their arguments as JSON objects: each call is complete the moment its line
//! arrives. The quirk sheet follows.
#![doc = include_str!("../../../providers/ollama.md")]

mod decode;
mod encode;
#[cfg(feature = "respond")]
mod respond;
mod wire;

use crate::error::{ApiError, Result};
use crate::provider::{
    Auth, Framing, HttpRequest, Provider, ProviderInfo, ProviderKind, StreamDecoder,
};
use crate::types::{ChatRequest, ChatResponse};

/// What this API's whole response body looks like, for the foreign-body error
/// (`providers::BUILTINS` collects it).
pub(crate) const BODY: crate::providers::shared::BodyShape = crate::providers::shared::BodyShape {
    api: "an Ollama /api/chat body: `message`, `done`",
    fields: "`message`, `done`",
    rank: 7,
    looks: |o| o.contains_key("message") && o.contains_key("done"),
};
const INFO: ProviderInfo = ProviderInfo {
    kind: ProviderKind::Ollama,
    base_url: "http://localhost:11434",
    key_vars: &[],
    auth: Auth::Bearer,
    capabilities: "tools (whole calls, complete at once), thinking (think), NDJSON streams, no key",
};

/// The `/api/chat` wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ollama;

impl Ollama {
    /// The native API of a local Ollama server.
    pub fn new() -> Self {
        Self
    }
}

impl Provider for Ollama {
    fn info(&self) -> &ProviderInfo {
        &INFO
    }

    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
        encode::encode(req, stream)
    }

    /// A body of one JSON object, or the lines of a stream.
    fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(body, None)
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new(None))
    }

    /// Reads tool calls written as text when the request asked for it.
    fn decode_for(&self, request: &HttpRequest, body: &[u8]) -> Result<ChatResponse> {
        decode::decode_body(body, request.text_calls.as_ref())
    }

    fn decoder_for(&self, request: &HttpRequest) -> Box<dyn StreamDecoder> {
        Box::new(decode::Decoder::new(request.text_calls.as_ref()))
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        decode::api_error(status, body)
    }
}
