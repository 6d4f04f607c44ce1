//! Lenient serde types of the Converse API: a whole response body and the payloads of the
//! stream's event frames. Everything optional, unknown fields ignored (the stream's `p`
//! padding among them), odd leaf types read as absent. Content blocks stay JSON: their kind is
//! the one key they hold, and reasoning blocks are echoed back verbatim.

use serde::Deserialize;
use serde_json::Value;

use crate::providers::lenient;

/// A whole Converse response, or an error body (`{"message": …}`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Response {
    #[serde(default, deserialize_with = "lenient::object")]
    pub output: Option<Output>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_reason: Option<String>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    #[serde(default)]
    pub metrics: Option<Value>,
    #[serde(default)]
    pub additional_model_response_fields: Option<Value>,
    #[serde(default)]
    pub trace: Option<Value>,
    /// An error body's message (`message`, or `Message` from some gateways).
    #[serde(default, alias = "Message", deserialize_with = "lenient::text")]
    pub message: Option<String>,
}

/// `output`: the assistant message.
#[derive(Debug, Deserialize)]
pub(crate) struct Output {
    #[serde(default, deserialize_with = "lenient::object")]
    pub message: Option<OutputMessage>,
}

/// `output.message`.
#[derive(Debug, Deserialize)]
pub(crate) struct OutputMessage {
    /// Content blocks, kept as JSON.
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub content: Vec<Value>,
}

/// Token counts (`TokenUsage`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cache_write_input_tokens: Option<u64>,
}

/// One event frame's payload; which fields it has depends on its `:event-type`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    /// `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`.
    #[serde(default, deserialize_with = "lenient::int")]
    pub content_block_index: Option<i64>,
    /// `contentBlockStart`: `{"toolUse": {"toolUseId", "name"}}`.
    #[serde(default)]
    pub start: Option<Value>,
    /// `contentBlockDelta`: `{"text"}`, `{"toolUse": {"input"}}`, `{"reasoningContent": …}`.
    #[serde(default)]
    pub delta: Option<Value>,
    /// `messageStop`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_reason: Option<String>,
    /// `messageStop`.
    #[serde(default)]
    pub additional_model_response_fields: Option<Value>,
    /// `metadata`; kept verbatim too.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    /// `metadata`.
    #[serde(default)]
    pub metrics: Option<Value>,
    /// `metadata`.
    #[serde(default)]
    pub trace: Option<Value>,
}
