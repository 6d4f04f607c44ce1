//! Tool definitions and the tool-choice setting.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// The canonical name rule every tool name must pass: `^[A-Za-z0-9_.-]{1,64}$`.
///
/// Providers with stricter rules map names reversibly at encode time (see
/// [`crate::provider::NameMap`]), so callers always see the name they registered.
pub const NAME_RULE: &str = "^[A-Za-z0-9_.-]{1,64}$";

/// Whether `name` passes [`NAME_RULE`].
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A tool the model may call: a name, a description and a JSON Schema for its arguments.
///
/// Built with [`ToolDefinition::new`], which checks the name; deserializing checks it too, so an
/// invalid definition never exists. Non-exhaustive: a new field is not a breaking change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name the model calls the tool by; matches [`NAME_RULE`].
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Ask the provider to constrain arguments to the schema exactly (OpenAI strict mode).
    #[serde(default)]
    pub strict: bool,
    /// Load the tool only when the model finds it with tool search (Anthropic
    /// `defer_loading`, OpenAI Responses `defer_loading` with `tool_search`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
    /// Example argument objects shown to the model (Anthropic `input_examples`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_examples: Vec<Value>,
    /// Who may call the tool, e.g. `code_execution_20250825` for programmatic tool calling
    /// (Anthropic `allowed_callers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_callers: Vec<String>,
    /// Stream the arguments without buffering them for validation (Anthropic
    /// `eager_input_streaming`); the streamed text may not be valid JSON until it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_input_streaming: Option<bool>,
    /// A prompt-cache breakpoint after this tool (Anthropic `cache_control`, Bedrock
    /// `cachePoint`), e.g. `{"type":"ephemeral"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// JSON Schema of the tool's structured output (MCP `outputSchema`); a result's `output`
    /// that breaks it is turned into an error result by the registry. Left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ToolDefinition {
    /// A tool with no parameters; errors when `name` breaks [`NAME_RULE`].
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Result<Self> {
        let name = name.into();
        check_name(&name, "name")?;
        Ok(Self {
            name,
            description: description.into(),
            parameters: empty_parameters(),
            strict: false,
            defer_loading: false,
            input_examples: Vec::new(),
            allowed_callers: Vec::new(),
            eager_input_streaming: None,
            cache_control: None,
            output_schema: None,
        })
    }

    /// Sets the parameters schema; errors unless it is a JSON object.
    pub fn with_parameters(mut self, parameters: Value) -> Result<Self> {
        check_parameters(&parameters, "parameters")?;
        self.parameters = parameters;
        Ok(self)
    }

    /// Sets strict mode.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets [`ToolDefinition::defer_loading`].
    pub fn with_defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = defer;
        self
    }

    /// Sets [`ToolDefinition::input_examples`].
    pub fn with_input_examples(mut self, examples: Vec<Value>) -> Self {
        self.input_examples = examples;
        self
    }

    /// Sets [`ToolDefinition::allowed_callers`].
    pub fn with_allowed_callers(mut self, callers: Vec<String>) -> Self {
        self.allowed_callers = callers;
        self
    }

    /// Sets [`ToolDefinition::eager_input_streaming`].
    pub fn with_eager_input_streaming(mut self, eager: bool) -> Self {
        self.eager_input_streaming = Some(eager);
        self
    }

    /// Sets [`ToolDefinition::cache_control`].
    pub fn with_cache_control(mut self, cache_control: Value) -> Self {
        self.cache_control = Some(cache_control);
        self
    }

    /// Whether any field past name, description, parameters and strict is set.
    pub fn has_extra_fields(&self) -> bool {
        self.defer_loading
            || !self.input_examples.is_empty()
            || !self.allowed_callers.is_empty()
            || self.eager_input_streaming.is_some()
            || self.cache_control.is_some()
    }

    /// Sets the output schema; errors unless it is a JSON object.
    pub fn with_output_schema(mut self, schema: Value) -> Result<Self> {
        check_schema(&schema, "output_schema", "output_schema")?;
        self.output_schema = Some(schema);
        Ok(self)
    }
}

/// `{"type":"object","properties":{}}`: the schema of a tool without parameters.
pub fn empty_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}

pub(crate) fn check_name(name: &str, path: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(Error::input(
            path,
            format!("tool name {name:?} does not match {NAME_RULE}"),
        ))
    }
}

fn check_parameters(parameters: &Value, path: &str) -> Result<()> {
    check_schema(parameters, path, "parameters")
}

fn check_schema(parameters: &Value, path: &str, what: &str) -> Result<()> {
    if parameters.is_object() {
        Ok(())
    } else {
        Err(Error::input(
            path,
            format!(
                "{what} must be a JSON Schema object, got {}",
                crate::types::json_kind(parameters)
            ),
        ))
    }
}

impl<'de> Deserialize<'de> for ToolDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            name: String,
            #[serde(default)]
            description: String,
            #[serde(default)]
            parameters: Option<Value>,
            #[serde(default)]
            strict: Option<bool>,
            #[serde(default)]
            defer_loading: bool,
            #[serde(default)]
            input_examples: Vec<Value>,
            #[serde(default)]
            allowed_callers: Vec<String>,
            #[serde(default)]
            eager_input_streaming: Option<bool>,
            #[serde(default)]
            cache_control: Option<Value>,
            #[serde(default)]
            output_schema: Option<Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let plain = |e: Error| match e {
            Error::Input { message, .. } => message,
            other => other.to_string(),
        };
        check_name(&raw.name, "tool name").map_err(|e| serde::de::Error::custom(plain(e)))?;
        let parameters = raw.parameters.unwrap_or_else(empty_parameters);
        check_parameters(&parameters, "tool parameters")
            .map_err(|e| serde::de::Error::custom(plain(e)))?;
        if let Some(schema) = &raw.output_schema {
            check_schema(schema, "tool output_schema", "output_schema")
                .map_err(|e| serde::de::Error::custom(plain(e)))?;
        }
        Ok(Self {
            name: raw.name,
            description: raw.description,
            parameters,
            strict: raw.strict.unwrap_or(false),
            defer_loading: raw.defer_loading,
            input_examples: raw.input_examples,
            allowed_callers: raw.allowed_callers,
            eager_input_streaming: raw.eager_input_streaming,
            cache_control: raw.cache_control,
            output_schema: raw.output_schema,
        })
    }
}

/// Which tools the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// Exactly this tool.
    Tool(String),
    /// Only these tools, the rest of the list stays declared (OpenAI `allowed_tools`, which
    /// keeps the prompt cache when the allowed set changes). Canonical JSON:
    /// `{"allowed_tools": ["a", "b"], "mode": "auto"}`.
    Allowed {
        /// Whether the model may answer without a call ([`AllowedMode::Auto`]) or must call
        /// one of the tools ([`AllowedMode::Required`]).
        mode: AllowedMode,
        /// The tool names the model may call.
        tools: Vec<String>,
    },
}

/// The mode of [`ToolChoice::Allowed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AllowedMode {
    /// The model may call one of the allowed tools or answer.
    #[default]
    Auto,
    /// The model must call one or more of the allowed tools.
    Required,
}

impl AllowedMode {
    /// The wire word: `"auto"` or `"required"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
        }
    }

    /// Reads `"auto"` or `"required"`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "required" => Some(Self::Required),
            _ => None,
        }
    }
}

impl ToolChoice {
    /// The plain choice a wire without `allowed_tools` falls back to: the mode of
    /// [`ToolChoice::Allowed`], the choice itself otherwise.
    pub fn without_allowed(&self) -> ToolChoice {
        match self {
            Self::Allowed {
                mode: AllowedMode::Auto,
                ..
            } => Self::Auto,
            Self::Allowed {
                mode: AllowedMode::Required,
                ..
            } => Self::Required,
            other => other.clone(),
        }
    }
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Auto => s.serialize_str("auto"),
            Self::None => s.serialize_str("none"),
            Self::Required => s.serialize_str("required"),
            Self::Tool(name) => {
                let mut map = Map::new();
                map.insert("name".into(), Value::String(name.clone()));
                map.serialize(s)
            }
            Self::Allowed { mode, tools } => {
                let mut map = Map::new();
                map.insert("allowed_tools".into(), json!(tools));
                map.insert("mode".into(), json!(mode.as_str()));
                map.serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Mode(String),
            Named {
                name: String,
            },
            Allowed {
                allowed_tools: Vec<String>,
                #[serde(default)]
                mode: Option<String>,
            },
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "tool_choice must be \"auto\", \"none\", \"required\", {\"name\": \"<tool>\"} or {\"allowed_tools\": [...], \"mode\": \"auto\"}",
            )
        })? {
            Raw::Mode(m) => match m.as_str() {
                "auto" => Ok(Self::Auto),
                "none" => Ok(Self::None),
                "required" => Ok(Self::Required),
                other => Err(serde::de::Error::custom(format!(
                    "unknown tool_choice {other:?}: expected \"auto\", \"none\", \"required\" or {{\"name\": \"<tool>\"}}"
                ))),
            },
            Raw::Named { name } => Ok(Self::Tool(name)),
            Raw::Allowed {
                allowed_tools,
                mode,
            } => {
                let mode = match mode.as_deref() {
                    None => AllowedMode::Auto,
                    Some(m) => AllowedMode::parse(m).ok_or_else(|| {
                        serde::de::Error::custom(format!(
                            "tool_choice.mode {m:?}: expected \"auto\" or \"required\""
                        ))
                    })?,
                };
                Ok(Self::Allowed {
                    mode,
                    tools: allowed_tools,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule() {
        assert!(is_valid_name("get_weather"));
        assert!(is_valid_name("weather.get-v2"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name(&"a".repeat(65)));
        let err = ToolDefinition::new("bad name", "").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("\"bad name\"") && text.contains(NAME_RULE),
            "{text}"
        );
    }

    #[test]
    fn definition_defaults_and_checks() {
        let def: ToolDefinition = serde_json::from_str(r#"{"name":"x"}"#).unwrap();
        assert_eq!(def.parameters, empty_parameters());
        assert!(!def.strict);
        let err = serde_json::from_str::<ToolDefinition>(r#"{"name":"x","parameters":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("got array"), "{err}");
    }

    #[test]
    fn tool_choice_json() {
        for (text, choice) in [
            (r#""auto""#, ToolChoice::Auto),
            (r#""none""#, ToolChoice::None),
            (r#""required""#, ToolChoice::Required),
            (r#"{"name":"f"}"#, ToolChoice::Tool("f".into())),
        ] {
            assert_eq!(serde_json::from_str::<ToolChoice>(text).unwrap(), choice);
            assert_eq!(serde_json::to_string(&choice).unwrap(), text);
        }
        assert!(serde_json::from_str::<ToolChoice>(r#""any""#).is_err());
        let allowed = ToolChoice::Allowed {
            mode: AllowedMode::Required,
            tools: vec!["a".into(), "b".into()],
        };
        let text = r#"{"allowed_tools":["a","b"],"mode":"required"}"#;
        assert_eq!(serde_json::to_string(&allowed).unwrap(), text);
        assert_eq!(serde_json::from_str::<ToolChoice>(text).unwrap(), allowed);
        assert_eq!(allowed.without_allowed(), ToolChoice::Required);
    }

    #[test]
    fn new_fields_round_trip_and_stay_out_when_default() {
        let plain = ToolDefinition::new("x", "").unwrap();
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"name": "x", "description": "", "parameters": empty_parameters(), "strict": false})
        );
        let full = plain
            .with_defer_loading(true)
            .with_input_examples(vec![json!({"a": 1})])
            .with_allowed_callers(vec!["code_execution_20250825".into()])
            .with_eager_input_streaming(true)
            .with_cache_control(json!({"type": "ephemeral"}));
        let text = serde_json::to_string(&full).unwrap();
        for key in [
            "\"defer_loading\":true",
            "\"input_examples\":[{\"a\":1}]",
            "\"allowed_callers\":[\"code_execution_20250825\"]",
            "\"eager_input_streaming\":true",
            "\"cache_control\":{\"type\":\"ephemeral\"}",
        ] {
            assert!(text.contains(key), "{key} in {text}");
        }
        assert_eq!(serde_json::from_str::<ToolDefinition>(&text).unwrap(), full);
    }
}
