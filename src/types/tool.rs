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
    /// JSON Schema of the tool's structured output (MCP `outputSchema`); a result's `output`
    /// that breaks it is turned into an error result by the registry. Left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
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
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Mode(String),
            Named { name: String },
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "tool_choice must be \"auto\", \"none\", \"required\" or {\"name\": \"<tool>\"}",
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
    }
}
