//! Lenient serde types of the Responses API wire: everything optional, unknown fields ignored,
//! `""` treated like absent by the caller. Output items stay raw [`Value`]s until read, so a
//! reasoning item can be kept verbatim.

use serde::Deserialize;
use serde_json::Value;

use crate::providers::lenient;

/// One streamed event (`{"type": "response.…", …}`), every field any event type carries.
#[derive(Debug, Deserialize)]
pub(crate) struct Event {
    #[serde(default, deserialize_with = "lenient::text")]
    pub r#type: Option<String>,
    /// The output item of `response.output_item.added` / `.done`.
    #[serde(default)]
    pub item: Option<Value>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub output_index: Option<i64>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub item_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub summary_index: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    pub content_index: Option<i64>,
    /// Text, argument, input or reasoning delta.
    #[serde(default, deserialize_with = "lenient::text")]
    pub delta: Option<String>,
    /// The final arguments of `response.function_call_arguments.done`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub arguments: Option<String>,
    /// The final input of `response.custom_tool_call_input.done`.
    #[serde(default, deserialize_with = "lenient::text")]
    pub input: Option<String>,
    /// The response object of the lifecycle events (`response.created`, `.completed`, …).
    #[serde(default, deserialize_with = "lenient::object")]
    pub response: Option<ResponseObject>,
    /// The nested error of an `error` event (`{"type":"error","error":{…}}`).
    #[serde(default)]
    pub error: Option<Value>,
    /// The flat fields of an `error` event (`{"type":"error","code","message","param"}`).
    #[serde(default, deserialize_with = "lenient::text")]
    pub code: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub message: Option<String>,
}

/// A response object: a whole body, or the one the lifecycle events carry.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseObject {
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub output: Vec<Value>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "lenient::object_kept")]
    pub usage: Option<lenient::Kept<Usage>>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default, deserialize_with = "lenient::text")]
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "lenient::count")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub output_tokens_details: Option<OutputDetails>,
    #[serde(default, deserialize_with = "lenient::object")]
    pub input_tokens_details: Option<InputDetails>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InputDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "lenient::count")]
    pub reasoning_tokens: Option<u64>,
}

/// The fields toolwire reads from an output item (`message`, `reasoning`, `function_call`,
/// `custom_tool_call`, and the server-side tool calls it skips).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Item {
    #[serde(default, deserialize_with = "lenient::text")]
    pub r#type: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub call_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// A string on OpenAI; raw so a server that sends an object keeps its bytes.
    #[serde(default)]
    pub arguments: Option<Box<serde_json::value::RawValue>>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub input: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub status: Option<String>,
    /// Message parts (`output_text`, `refusal`) or reasoning parts (`reasoning_text`).
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub content: Vec<Value>,
    /// Reasoning summary parts (`summary_text`).
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub summary: Vec<Value>,
}

impl Item {
    /// The argument text: a JSON string's content, or the raw text of anything else (`None`
    /// for absent or `null`).
    pub(super) fn arguments_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self.arguments.as_deref().map(|r| r.get()) {
            None | Some("null") => None,
            Some(text) if text.starts_with('"') => serde_json::from_str(text).ok(),
            Some(other) => Some(std::borrow::Cow::Borrowed(other)),
        }
    }

    /// The texts of the parts of `parts` whose `type` is `kind`, read from `field`.
    pub(super) fn part_texts<'a>(
        parts: &'a [Value],
        kind: &'a str,
        field: &'a str,
    ) -> impl Iterator<Item = &'a str> + 'a {
        parts
            .iter()
            .filter(move |p| p.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(move |p| p.get(field).and_then(Value::as_str))
    }
}
