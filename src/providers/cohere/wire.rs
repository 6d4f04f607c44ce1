//! The pieces of Cohere's v2 wire both directions read: finish reasons and usage.

#[cfg(feature = "respond")]
use serde_json::json;
use serde_json::{Map, Value};

use crate::types::{FinishReason, Usage};

/// Cohere's `finish_reason` in canonical terms: `COMPLETE` and `STOP_SEQUENCE` are a normal
/// end, `TOOL_CALL` is `tool_calls`, `MAX_TOKENS` is `length`, `ERROR` is `error`; anything
/// else (`TIMEOUT`, a value added later) is kept verbatim (a canonical name written by the
/// mock reads back as itself).
pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "COMPLETE" | "STOP_SEQUENCE" => FinishReason::Stop,
        "TOOL_CALL" => FinishReason::ToolCalls,
        "MAX_TOKENS" => FinishReason::Length,
        "ERROR" => FinishReason::Error,
        other => FinishReason::from_canonical(other),
    }
}

/// The wire's spelling of a canonical finish reason, for the mock provider.
#[cfg(feature = "respond")]
pub(crate) fn finish_wire(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "COMPLETE",
        FinishReason::ToolCalls => "TOOL_CALL",
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::Error => "ERROR",
        other => other.as_str(),
    }
}

/// A count at `usage.<group>.<field>`, if it is a non-negative integer.
fn count(usage: &Map<String, Value>, group: &str, field: &str) -> Option<u64> {
    usage.get(group)?.get(field)?.as_u64()
}

/// Canonical counts from a `usage` object: the tokens the model read and wrote (`tokens`),
/// else the billed ones (`billed_units`, which leave out the prompt template); `cached_tokens`
/// is the cached part of the input. `None` when the object holds no count at all.
pub(crate) fn usage(raw: &Value) -> Option<Usage> {
    let u = raw.as_object()?;
    let pick = |field: &str| count(u, "tokens", field).or_else(|| count(u, "billed_units", field));
    let (input, output) = (pick("input_tokens"), pick("output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        cached_input_tokens: u.get("cached_tokens").and_then(Value::as_u64),
        ..Usage::default()
    })
}

/// A `usage` object for canonical counts, billed units equal to the tokens (the mock).
#[cfg(feature = "respond")]
pub(crate) fn usage_json(u: &Usage) -> Value {
    let counts = json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens});
    let mut m = Map::new();
    m.insert("billed_units".into(), counts.clone());
    m.insert("tokens".into(), counts);
    if let Some(cached) = u.cached_input_tokens {
        m.insert("cached_tokens".into(), json!(cached));
    }
    Value::Object(m)
}
