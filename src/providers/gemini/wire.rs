//! Lenient serde types of the `generateContent` response (a whole body or one stream chunk):
//! everything optional, unknown fields ignored, `null` treated like absent.

use serde::Deserialize;
use serde_json::{Number, Value};

/// A `GenerateContentResponse`: a whole body, or one chunk of `streamGenerateContent`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Response {
    #[serde(default, deserialize_with = "crate::providers::lenient::null_default")]
    pub candidates: Vec<Candidate>,
    /// Kept verbatim too: the response's `raw_usage`.
    #[serde(default, deserialize_with = "crate::providers::lenient::object_kept")]
    pub usage_metadata: Option<crate::providers::lenient::Kept<UsageMetadata>>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    /// An error object sent in place of a chunk.
    #[serde(default)]
    pub error: Option<Value>,
}

impl Response {
    /// Whether the payload has the shape of a `GenerateContentResponse`: candidates, usage
    /// metadata or prompt feedback.
    pub(crate) fn is_generate_content(&self) -> bool {
        !self.candidates.is_empty()
            || self.usage_metadata.is_some()
            || self.prompt_feedback.is_some()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    /// `{}` or absent on `MALFORMED_FUNCTION_CALL` (vercel/ai#5039).
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub finish_message: Option<String>,
    /// Absent on Vertex.
    #[serde(default)]
    pub index: Option<i64>,
    /// Search, URL-context or Maps grounding, verbatim.
    #[serde(default)]
    pub grounding_metadata: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Content {
    #[serde(default, deserialize_with = "crate::providers::lenient::null_default")]
    pub parts: Vec<Part>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part {
    #[serde(default)]
    pub text: Option<String>,
    /// A thought-summary part.
    #[serde(default)]
    pub thought: Option<bool>,
    /// Opaque signature to echo back on this part.
    #[serde(default)]
    pub thought_signature: Option<String>,
    #[serde(default)]
    pub function_call: Option<FunctionCall>,
    /// Parts that are neither text nor a call (media an image or audio model made, code it
    /// ran), kept verbatim: the canonical answer has no place for them, and nothing is dropped.
    #[serde(default)]
    pub inline_data: Option<Value>,
    #[serde(default)]
    pub file_data: Option<Value>,
    #[serde(default)]
    pub executable_code: Option<Value>,
    #[serde(default)]
    pub code_execution_result: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// A JSON object; `null`/absent for a call without arguments.
    #[serde(default)]
    pub args: Option<Value>,
    /// Vertex streamed arguments (`streamFunctionCallArguments`).
    #[serde(default, deserialize_with = "crate::providers::lenient::null_default")]
    pub partial_args: Vec<PartialArg>,
    #[serde(default)]
    pub will_continue: Option<bool>,
}

/// One streamed argument value at a JSON path.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartialArg {
    #[serde(default)]
    pub json_path: Option<String>,
    #[serde(default)]
    pub string_value: Option<String>,
    #[serde(default)]
    pub number_value: Option<Number>,
    #[serde(default)]
    pub bool_value: Option<bool>,
    /// `"NULL_VALUE"` when the value is null.
    #[serde(default)]
    pub null_value: Option<Value>,
    #[serde(default)]
    pub will_continue: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default)]
    pub prompt_token_count: Option<u64>,
    #[serde(default)]
    pub candidates_token_count: Option<u64>,
    #[serde(default)]
    pub thoughts_token_count: Option<u64>,
    #[serde(default)]
    pub total_token_count: Option<u64>,
    #[serde(default)]
    pub cached_content_token_count: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
}
