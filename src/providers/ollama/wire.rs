//! Lenient serde types of Ollama's `/api/chat` answer: one JSON object per line when
//! streaming, one object otherwise. Everything optional, unknown fields ignored.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::providers::lenient;

/// One line of the stream, or the whole body: a piece of the message, and on the last one
/// `done: true` with `done_reason` and the counts.
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default, deserialize_with = "flag")]
    pub done: bool,
    #[serde(default, deserialize_with = "lenient::text")]
    pub done_reason: Option<String>,
    /// The `done` line's counts and timings, as sent (`null` read as absent): the usage
    /// report Ollama has no object for ([`Chunk::usage_fields`]). The counts are absent when
    /// zero (the server omits empty counts).
    #[serde(default)]
    pub total_duration: Option<Value>,
    #[serde(default)]
    pub load_duration: Option<Value>,
    #[serde(default)]
    pub prompt_eval_count: Option<Value>,
    #[serde(default)]
    pub prompt_eval_duration: Option<Value>,
    #[serde(default)]
    pub eval_count: Option<Value>,
    #[serde(default)]
    pub eval_duration: Option<Value>,
    /// `{"error": "…"}`: a failure, in place of a line (mid-stream) or of the body.
    #[serde(default)]
    pub error: Option<Value>,
}

impl Chunk {
    /// A count field read leniently (`"12"` is 12; anything else absent).
    pub(crate) fn count(field: Option<&Value>) -> Option<u64> {
        field.and_then(|v| lenient::count(v).ok().flatten())
    }

    /// The usage fields present, in the order Ollama's server writes them (`api/types.go`
    /// `Metrics`), each value as sent.
    pub(crate) fn usage_fields(&self) -> serde_json::Map<String, Value> {
        [
            ("total_duration", &self.total_duration),
            ("load_duration", &self.load_duration),
            ("prompt_eval_count", &self.prompt_eval_count),
            ("prompt_eval_duration", &self.prompt_eval_duration),
            ("eval_count", &self.eval_count),
            ("eval_duration", &self.eval_duration),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v.clone().filter(|v| !v.is_null())?)))
        .collect()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    #[serde(default, deserialize_with = "lenient::text")]
    pub content: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub thinking: Option<String>,
    #[serde(default, deserialize_with = "lenient::null_default")]
    pub tool_calls: Vec<ToolCall>,
}

/// A whole call: Ollama parses the model's call itself and sends it in one piece.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCall {
    /// `call_<8 chars>` on current servers; absent on older ones.
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<Function>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Function {
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// A JSON object, its keys in the order the model wrote them.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// `true` only for a JSON `true`; anything else is false.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)? == Value::Bool(true))
}
