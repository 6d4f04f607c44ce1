//! Lenient serde types of the Interactions API's answers: a whole `Interaction` body and the
//! stream's events. Everything optional, unknown fields ignored, `null` treated like absent.
//! Steps stay JSON values: unknown step types are kept verbatim, never refused.

use serde::Deserialize;
use serde_json::Value;

/// An `Interaction` resource (a whole body, or the `interaction` of a stream event).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Interaction {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// The turn's steps (API revision 2026-05-20 and later).
    #[serde(default)]
    pub steps: Option<Vec<Value>>,
    /// The launch-era list of output contents, read like steps.
    #[serde(default)]
    pub outputs: Option<Vec<Value>>,
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// The `usage` object, the fields toolwire reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub total_input_tokens: Option<u64>,
    #[serde(default)]
    pub total_output_tokens: Option<u64>,
    #[serde(default)]
    pub total_thought_tokens: Option<u64>,
    #[serde(default)]
    pub total_cached_tokens: Option<u64>,
}

/// One stream event (`data:` payload).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Event {
    #[serde(default)]
    pub event_type: Option<String>,
    #[serde(default)]
    pub index: Option<i64>,
    #[serde(default)]
    pub step: Option<Value>,
    #[serde(default)]
    pub delta: Option<Value>,
    #[serde(default)]
    pub interaction: Option<Interaction>,
    #[serde(default)]
    pub interaction_id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub error: Option<Value>,
}
