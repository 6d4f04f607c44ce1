//! Lenient serde types of the Chat Completions wire: everything optional, unknown fields
//! ignored, `""` treated like absent by the caller. Strings and argument text borrow from the
//! payload, so a streamed chunk is read without copying what it carries.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::providers::lenient;

/// A streamed chunk or a whole response (`delta` vs `message`).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk<'a> {
    /// `None` when the payload has no `choices` list (then it is no Chat Completions chunk,
    /// unless it carries usage).
    #[serde(borrow, default, deserialize_with = "lenient::null_default")]
    pub choices: Option<Vec<Choice<'a>>>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    #[serde(default)]
    pub error: Option<Value>,
}

impl<'a> Chunk<'a> {
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
    pub(crate) fn choices(&self) -> &[Choice<'a>] {
        self.choices.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice<'a> {
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    #[serde(borrow, default)]
    pub delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    pub message: Option<Delta<'a>>,
    #[serde(borrow, default, deserialize_with = "lenient::text_ref")]
    pub finish_reason: Option<Cow<'a, str>>,
    /// The upstream model's own finish value beside the normalized one (OpenRouter).
    #[serde(borrow, default, deserialize_with = "lenient::text_ref")]
    pub native_finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Delta<'a> {
    /// Raw, read by `lenient::raw_content_text`: a string borrows, parts are parsed only when
    /// they come.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub reasoning_content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub reasoning: Option<&'a RawValue>,
    /// Structured reasoning entries kept verbatim (OpenRouter, MiniMax), read only when the
    /// dialect keeps them.
    #[serde(borrow, default)]
    pub reasoning_details: Option<&'a RawValue>,
    /// A list; one call object is read as a list of one (iFlytek Spark).
    #[serde(borrow, default, deserialize_with = "lenient::one_or_many")]
    pub tool_calls: Vec<ToolCallDelta<'a>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta<'a> {
    #[serde(default, deserialize_with = "lenient::int")]
    pub index: Option<i64>,
    #[serde(borrow, default, deserialize_with = "lenient::text_ref")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(borrow, default, deserialize_with = "lenient::text_ref")]
    pub name: Option<Cow<'a, str>>,
    /// A string on OpenAI; a JSON object on some GLM docs. Raw so an object keeps its bytes.
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub completion_tokens_details: Option<Details>,
    /// OpenAI, GLM and Qwen: `{"cached_tokens": n}`.
    #[serde(default, deserialize_with = "lenient::object")]
    pub prompt_tokens_details: Option<Details>,
    /// StepFun sends the cached count beside `prompt_tokens` instead.
    #[serde(default, deserialize_with = "lenient::count")]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Details {
    #[serde(default, deserialize_with = "lenient::count")]
    pub reasoning_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cached_tokens: Option<u64>,
}
