//! Tool calls the model made, with their raw argument text kept byte for byte.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The error message of a call that arrived without a name.
const NO_NAME: &str = "the call has no name, so it cannot be run";

/// Why a call's arguments could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ArgumentsErrorKind {
    /// The turn ended (e.g. `length`) before the arguments were complete.
    Truncated,
    /// The text is not a JSON object, or the call has no name (nothing could run it).
    Malformed,
}

/// A problem with a call's arguments. The call keeps its raw text and is never executed.
///
/// Non-exhaustive: build it with [`ArgumentsError::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ArgumentsError {
    /// Truncated or malformed.
    pub kind: ArgumentsErrorKind,
    /// What is wrong and where (from the JSON parser).
    pub message: String,
}

impl ArgumentsError {
    /// An error of `kind` saying what is wrong and where.
    pub fn new(kind: ArgumentsErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            ArgumentsErrorKind::Truncated => "truncated",
            ArgumentsErrorKind::Malformed => "malformed",
        };
        write!(f, "{kind} arguments: {}", self.message)
    }
}

impl std::error::Error for ArgumentsError {}

/// One tool call.
///
/// `raw_arguments` is exactly the text the model produced; `arguments` is its parse (or `None`
/// when it is not a complete JSON object, with `error` saying why). Provider data that must be
/// echoed back on a later request (a Gemini thought signature, whether the id was minted by
/// toolwire) rides in `extra` and serializes as extra top-level fields.
///
/// Non-exhaustive: build it with [`ToolCall::new`] (or [`ToolCall::new_cut_short`]), which
/// parses the raw text, and [`ToolCall::with_extra`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's call id, or a deterministic one toolwire minted (see [`ToolCall::SYNTHETIC_ID`]).
    pub id: String,
    /// Canonical tool name.
    pub name: String,
    /// The argument text exactly as produced.
    pub raw_arguments: String,
    /// The parsed arguments object; `None` when `error` is set.
    pub arguments: Option<Value>,
    /// Why the arguments cannot be used, if they cannot.
    pub error: Option<ArgumentsError>,
    /// Provider data echoed back on later requests; flattened into the JSON object.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    /// `extra` key set to `true` when toolwire minted the id (the provider sent none).
    pub const SYNTHETIC_ID: &'static str = "synthetic_id";

    /// `extra` key of a call the wire marked final before the turn ended, holding argument
    /// text that arrived after that point (kept, never merged into `raw_arguments`).
    pub const LATE_ARGUMENTS: &'static str = "late_arguments";

    /// A call whose raw text is parsed now: empty text means `{}`; anything that is not a JSON
    /// object is `malformed`. A call with an empty name is never complete: it is `malformed`
    /// ("the call has no name"), its raw text kept, and is never executed.
    pub fn new(id: impl Into<String>, name: impl Into<String>, raw: impl Into<String>) -> Self {
        Self::build(id.into(), name.into(), raw.into(), false)
    }

    fn build(id: String, name: String, raw_arguments: String, cut_short: bool) -> Self {
        // A call cut off before any argument text arrived is not a zero-argument call.
        let parsed = if cut_short && raw_arguments.trim().is_empty() {
            Err((
                ArgumentsError {
                    kind: ArgumentsErrorKind::Truncated,
                    message: "the turn ended before any argument text arrived".into(),
                },
                true,
            ))
        } else {
            parse_inner(&raw_arguments)
        };
        let (arguments, error) = match parsed {
            // A call without a name cannot be run whatever its arguments: `malformed`, with the
            // raw text kept (an argument error, when there is one, says more and wins).
            Ok(_) if name.is_empty() => (
                None,
                Some(ArgumentsError {
                    kind: ArgumentsErrorKind::Malformed,
                    message: NO_NAME.into(),
                }),
            ),
            Ok(v) => (Some(v), None),
            Err((mut e, eof)) => {
                if cut_short && eof {
                    e.kind = ArgumentsErrorKind::Truncated;
                }
                (None, Some(e))
            }
        };
        Self {
            id,
            name,
            raw_arguments,
            arguments,
            error,
            extra: Map::new(),
        }
    }

    /// Like [`ToolCall::new`], but text that ends before the JSON is complete is `truncated`:
    /// used when the turn stopped early (`length`, a broken stream).
    pub fn new_cut_short(
        id: impl Into<String>,
        name: impl Into<String>,
        raw: impl Into<String>,
    ) -> Self {
        Self::build(id.into(), name.into(), raw.into(), true)
    }

    /// Adds one provider field to echo back, flattened into the JSON object.
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Whether the call can be executed: its arguments parsed into an object.
    pub fn is_complete(&self) -> bool {
        self.error.is_none() && self.arguments.is_some()
    }

    /// Whether toolwire minted this call's id.
    pub fn has_synthetic_id(&self) -> bool {
        self.extra.get(Self::SYNTHETIC_ID) == Some(&Value::Bool(true))
    }

    /// The arguments deserialized into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ArgumentsError> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        let value = self.arguments.clone().unwrap_or(Value::Object(Map::new()));
        serde_json::from_value(value).map_err(|e| ArgumentsError {
            kind: ArgumentsErrorKind::Malformed,
            message: e.to_string(),
        })
    }
}

/// Parses argument text once: empty (or all whitespace) and JSON `null` are `{}`, otherwise it
/// must be one JSON object; anything else is `malformed`.
pub fn parse_arguments(raw: &str) -> Result<Value, ArgumentsError> {
    parse_inner(raw).map_err(|(e, _)| e)
}

/// The parse, plus whether a failure was the text ending early.
fn parse_inner(raw: &str) -> Result<Value, (ArgumentsError, bool)> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let malformed = |message| ArgumentsError {
        kind: ArgumentsErrorKind::Malformed,
        message,
    };
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        // JSON null is no arguments, like empty text (Groq sends the text `null` for a tool
        // without parameters); the raw text stays as sent.
        Ok(Value::Null) => Ok(Value::Object(Map::new())),
        Ok(other) => Err((
            malformed(format!(
                "arguments must be a JSON object, got {}",
                crate::types::json_kind(&other)
            )),
            false,
        )),
        Err(e) => Err((malformed(e.to_string()), e.is_eof())),
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    /// Input needs only `id`, `name` and `raw_arguments`; `arguments` and `error` are derived
    /// from the raw text when absent, so a call printed by `toolwire replay` pastes back as is.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            id: String,
            name: String,
            raw_arguments: String,
            #[serde(default)]
            arguments: Option<Value>,
            #[serde(default)]
            error: Option<ArgumentsError>,
            #[serde(flatten)]
            extra: Map<String, Value>,
        }
        let raw = Raw::deserialize(d)?;
        let mut call = ToolCall::new(raw.id, raw.name, raw.raw_arguments);
        call.extra = raw.extra;
        if let Some(err) = raw.error {
            call.error = Some(err);
            call.arguments = None;
        } else if call.error.is_none()
            && let Some(args) = raw.arguments
        {
            call.arguments = Some(args);
        }
        Ok(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_empty_object() {
        let call = ToolCall::new("c", "f", "");
        assert_eq!(call.arguments, Some(serde_json::json!({})));
        assert!(call.is_complete());
    }

    #[test]
    fn null_is_no_arguments_and_keeps_its_text() {
        for raw in ["null", " null\n"] {
            let call = ToolCall::new("c", "f", raw);
            assert!(call.is_complete(), "{raw:?}");
            assert_eq!(call.arguments, Some(serde_json::json!({})));
            assert_eq!(call.raw_arguments, raw);
        }
        // Only null itself: other non-objects stay malformed, and a cut `nul` is truncated.
        assert!(!ToolCall::new("c", "f", "\"null\"").is_complete());
        let cut = ToolCall::new_cut_short("c", "f", "nul");
        assert!(!cut.is_complete());
    }

    #[test]
    fn malformed_and_truncated_keep_raw() {
        let call = ToolCall::new("c", "f", "{\"a\":1}}");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Malformed
        );
        assert_eq!(call.raw_arguments, "{\"a\":1}}");
        let call = ToolCall::new("c", "f", "{\"a\":");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Malformed
        );
        let call = ToolCall::new_cut_short("c", "f", "{\"a\":");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
        let call = ToolCall::new_cut_short("c", "f", "");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
        let call = ToolCall::new("c", "f", "[1]");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Malformed
        );
        assert!(!call.is_complete());
    }

    #[test]
    fn a_call_without_a_name_is_malformed() {
        for call in [ToolCall::new("c", "", "{}"), ToolCall::new("c", "", "")] {
            assert!(!call.is_complete());
            assert_eq!(call.arguments, None);
            let err = call.error.as_ref().unwrap();
            assert_eq!(err.kind, ArgumentsErrorKind::Malformed);
            assert!(err.message.contains("no name"));
        }
        // An argument problem says more than the missing name.
        let call = ToolCall::new_cut_short("c", "", "{\"a\":");
        assert_eq!(
            call.error.as_ref().unwrap().kind,
            ArgumentsErrorKind::Truncated
        );
    }

    #[test]
    fn minimal_input_round_trips() {
        let call: ToolCall = serde_json::from_str(
            r#"{"id":"c1","name":"f","raw_arguments":"{\"x\":1}","thought_signature":"sig"}"#,
        )
        .unwrap();
        assert_eq!(call.arguments, Some(serde_json::json!({"x": 1})));
        assert_eq!(call.extra["thought_signature"], "sig");
        let text = serde_json::to_string(&call).unwrap();
        let again: ToolCall = serde_json::from_str(&text).unwrap();
        assert_eq!(again, call);
    }
}
