//! Lenient serde types of the Chat Completions wire: everything optional, unknown fields
//! ignored, `""` treated like absent by the caller.

use serde::Deserialize;
use serde_json::Value;

use crate::providers::lenient;

/// A streamed chunk or a whole response (`delta` vs `message`).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    /// `None` when the payload has no `choices` list (then it is no Chat Completions chunk,
    /// unless it carries usage).
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub choices: Option<Vec<Choice>>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub error: Option<Value>,
}

impl Chunk {
    /// Whether the payload has the shape of a Chat Completions chunk: a `choices` list, or
    /// usage with prompt or completion counts (a usage-only last chunk).
    pub(crate) fn is_chat_chunk(&self) -> bool {
        self.choices.is_some()
            || self
                .usage
                .as_ref()
                .is_some_and(|u| u.prompt_tokens.is_some() || u.completion_tokens.is_some())
    }

    /// The choices, none when the list is absent.
    pub(crate) fn choices(&self) -> &[Choice] {
        self.choices.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub message: Option<Delta>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub finish_reason: Option<String>,
    /// The upstream model's own finish value beside the normalized one (OpenRouter).
    #[serde(default, deserialize_with = "lenient::text")]
    pub native_finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub reasoning_content: Option<Value>,
    #[serde(default)]
    pub reasoning: Option<Value>,
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// A string on OpenAI; a JSON object on some GLM docs. Raw so an object keeps its bytes.
    #[serde(default)]
    pub arguments: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub completion_tokens_details: Option<Details>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Details {
    #[serde(default, deserialize_with = "lenient::count")]
    pub reasoning_tokens: Option<u64>,
}
