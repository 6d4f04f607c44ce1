//! The fixture format: what a case folder holds and how a decode becomes its golden JSON.
//!
//! A case folder (`fixtures/<provider>/<case>/`, or any folder of a user's recordings) holds
//! `meta.toml` (`description` and `source` required; optional `provider`, `model`, `base_url`,
//! `stream`, `status`, `strict`, `schema_mode`, `recorded`, `incomplete`), and any of:
//! `request.json` → `wire_request.json` (encode), `response.sse` | `response.ndjson` (a
//! newline-delimited JSON stream) | `response.json` → `expected.json` (decode), `schema.json`
//! → `expected_schema.json` (parameters lowering, read from the body `encode` builds for a
//! request carrying the tool).
//! An expected error is `{"error": {"kind", "provider", "status", "code", "message"},
//! "partial": ChatResponse | null}`.
//!
//! Goldens are compared as canonical bytes ([`crate::conformance::canonical_text`]), so key
//! order counts.
//!
//! The recorder ([`crate::client`]) writes this format and [`crate::conformance`] checks it;
//! both read it from here, so neither depends on the other.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::provider::{HttpRequest, Provider, ProviderKind};
use crate::replay::replay_answer;
use crate::types::SchemaMode;

/// The cases every provider has, or lists in `fixtures/<provider>/SKIP` with a reason.
pub const CANONICAL_CASES: [&str; 10] = [
    "single_call",
    "stream_single_call",
    "stream_parallel_calls",
    "stream_text_then_call",
    "stream_malformed_args",
    "stream_truncated_args",
    "zero_arg_call",
    "tool_result_roundtrip",
    "schema_translation",
    "error_body",
];

/// A case's `meta.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Meta {
    /// What the case shows.
    pub description: String,
    /// Where the behaviour was seen: `recorded <date> <model>` or `reconstructed from <source>`.
    pub source: String,
    /// The provider, when the folder is not below `fixtures/<provider>/`.
    #[serde(default)]
    pub provider: Option<String>,
    /// The model (informational).
    #[serde(default)]
    pub model: Option<String>,
    /// Encode `request.json` in its streaming form (default: whether `response.sse` or
    /// `response.ndjson` exists).
    #[serde(default)]
    pub stream: Option<bool>,
    /// The HTTP status the response came with (default 200; 4xx/5xx bodies are error bodies).
    #[serde(default)]
    pub status: Option<u16>,
    /// `schema.json` is lowered as a strict tool.
    #[serde(default)]
    pub strict: Option<bool>,
    /// `schema.json` is lowered in this mode.
    #[serde(default)]
    pub schema_mode: Option<SchemaMode>,
    /// When the recording was made (informational).
    #[serde(default)]
    pub recorded: Option<String>,
    /// The server the case was recorded against, when not the provider's own endpoint: it
    /// picks the provider the way the client did
    /// ([`crate::providers::provider_for_base_url`]; an `openai` case recorded against another
    /// OpenAI-compatible server runs with the compatible dialect).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The recording stopped before the response ended (the caller dropped the stream):
    /// `expected.json` is what the cut bytes decode to (informational).
    #[serde(default)]
    pub incomplete: Option<bool>,
}

/// Reads a case's `meta.toml` (needs the `conformance` feature, which brings the TOML parser).
#[cfg(feature = "conformance")]
pub fn load_meta(dir: &Path) -> Result<Meta> {
    let path = dir.join("meta.toml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::input(path.display().to_string(), e.to_string()))?;
    let meta: Meta = toml::from_str(&text)
        .map_err(|e| Error::input(path.display().to_string(), e.to_string().trim().to_owned()))?;
    if meta.description.trim().is_empty() || meta.source.trim().is_empty() {
        return Err(Error::input(
            path.display().to_string(),
            "description and source must not be empty",
        ));
    }
    Ok(meta)
}

/// The provider a case folder belongs to: `meta.toml`'s `provider`, else the parent folder.
pub fn case_provider(dir: &Path, meta: Option<&Meta>) -> Option<ProviderKind> {
    if let Some(name) = meta.and_then(|m| m.provider.as_deref()) {
        return name.parse().ok();
    }
    dir.parent()?.file_name()?.to_str()?.parse().ok()
}

/// What a captured body decodes to: an error body when `status` is 4xx/5xx, else the answer to
/// `request` (when known: its decoder and its tool-name mapping apply).
pub fn decode_body(
    provider: &dyn Provider,
    request: Option<&HttpRequest>,
    body: &[u8],
    status: Option<u16>,
) -> Result<crate::types::ChatResponse> {
    match status {
        Some(s) if s >= 400 => Err(provider.decode_error(Some(s), body).into()),
        _ => replay_answer(provider, request, body).map(|r| r.response),
    }
}

/// The golden JSON of a decode: the response, or the error (with any partial response).
pub fn golden_json(result: &Result<crate::types::ChatResponse>) -> Value {
    match result {
        Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        Err(e) => error_json(e),
    }
}

/// The golden JSON of an error.
pub fn error_json(e: &Error) -> Value {
    let kind = e.kind_name();
    let (code, message) = match e.api() {
        Some(api) => (api.code.clone(), api.message.clone()),
        None => (None, e.to_string()),
    };
    json!({
        "error": {
            "kind": kind,
            "provider": e.provider().map(ProviderKind::name),
            "status": e.status(),
            "code": code,
            "message": message,
        },
        "partial": e.partial(),
    })
}
