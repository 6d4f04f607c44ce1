//! Lenient serde types of the Messages API: a whole `Message` body and the stream's events.
//! Everything optional, unknown fields ignored, odd leaf types read as absent.

use serde::Deserialize;
use serde_json::Value;

use crate::providers::lenient;

/// A `Message`: a whole response body, or the one `message_start` carries.
#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    /// `"message"`, or `"error"` for an error body.
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub kind: Option<String>,
    /// Content blocks, kept as JSON: thinking blocks are echoed back verbatim.
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub content: Vec<Value>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_sequence: Option<String>,
    #[serde(default)]
    pub stop_details: Option<Value>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// Token counts. In a stream `message_start` carries the first counts and each
/// `message_delta` the running totals of the fields it names.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// These counts with the fields `later` names replaced.
    pub(super) fn merged(self, later: &Usage) -> Usage {
        Usage {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: later
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
        }
    }
}

/// One content block's fields, read from its JSON (`content_block_start`, or an element of a
/// whole body's `content`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Block {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub thinking: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub signature: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// A `tool_use` block's arguments object (`{}` at `content_block_start`).
    #[serde(default)]
    pub input: Option<Value>,
}

/// One stream event: `{"type": …}` plus the fields of that type.
#[derive(Debug, Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub kind: Option<String>,
    /// `message_start`.
    #[serde(default, deserialize_with = "lenient::object")]
    pub message: Option<Message>,
    /// The content block index of `content_block_*` events.
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    /// `content_block_start`.
    #[serde(default)]
    pub content_block: Option<Value>,
    /// `content_block_delta` and `message_delta`.
    #[serde(default, deserialize_with = "lenient::object")]
    pub delta: Option<Delta>,
    /// `message_delta`; kept verbatim too, laid over `message_start`'s.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
}

/// A `content_block_delta`'s delta, or a `message_delta`'s.
#[derive(Debug, Deserialize)]
pub(crate) struct Delta {
    #[serde(rename = "type", default, deserialize_with = "lenient::text")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub partial_json: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub thinking: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub signature: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub stop_sequence: Option<String>,
    #[serde(default)]
    pub stop_details: Option<Value>,
    /// A `citations_delta`'s one citation.
    #[serde(default)]
    pub citation: Option<Value>,
}
