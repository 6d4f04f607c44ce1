//! Lenient serde types of the DashScope native wire: every field optional, unknown fields
//! ignored, and a leaf of an unexpected type read as absent instead of failing the payload
//! (an unexpected field is never a decode failure).

use serde::Deserialize;
use serde_json::Value;

use crate::providers::lenient;
pub(crate) use crate::providers::lenient::content_text;
use serde_json::value::RawValue;

/// One SSE `data:` payload, a whole response body, or an error body.
#[derive(Debug, Deserialize)]
pub(crate) struct Payload {
    #[serde(default)]
    pub output: Option<Output>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    /// Set on error bodies (`{"code","message","request_id"}`); `""` on some success bodies.
    #[serde(default, deserialize_with = "lenient::text")]
    pub code: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Output {
    /// `result_format: "message"`.
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub choices: Vec<Choice>,
    /// `result_format: "text"`: the text and finish reason sit on `output` itself.
    #[serde(default)]
    pub text: Option<Value>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    /// Missing on the multimodal endpoint.
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    #[serde(default)]
    pub message: Option<Message>,
    /// The string `"null"` while the turn runs.
    #[serde(default, deserialize_with = "lenient::text")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    /// A string (text endpoint) or an array of `{"text": …}` parts (multimodal endpoint).
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub reasoning_content: Option<Value>,
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub tool_calls: Vec<ToolCall>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCall {
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    /// `""` on continuation fragments.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<Function>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Function {
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// A JSON string on every recorded stream; kept raw so an object keeps its bytes.
    #[serde(default)]
    pub arguments: Option<Box<RawValue>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens_details: Option<OutputDetails>,
    /// `{"cached_tokens": n}`: input tokens read from the context cache.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub cached_tokens: Option<u64>,
}

impl Function {
    /// The argument text: a JSON string decoded, an object or other JSON as its raw bytes,
    /// `null` as absent.
    pub(crate) fn arguments_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        let raw = self.arguments.as_deref()?.get();
        match raw {
            "null" => None,
            text if text.starts_with('"') => serde_json::from_str(text).ok(),
            other => Some(std::borrow::Cow::Borrowed(other)),
        }
    }
}
