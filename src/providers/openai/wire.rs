//! Lenient serde types of the Chat Completions wire: everything optional, unknown fields
//! ignored, `""` treated like absent by the caller.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A streamed chunk or a whole response (`delta` vs `message`).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default, deserialize_with = "null_default")]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub index: Option<i64>,
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub message: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub reasoning_content: Option<Value>,
    #[serde(default)]
    pub reasoning: Option<Value>,
    #[serde(default, deserialize_with = "null_default")]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<i64>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// A string on OpenAI; a JSON object on some GLM docs. Raw so an object keeps its bytes.
    #[serde(default)]
    pub arguments: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens_details: Option<Details>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Details {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
