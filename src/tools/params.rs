//! A builder for parameter schemas known only at run time, and the generated parameter list.

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

/// One parameter's schema: a type plus description, allowed values, default and bounds.
///
/// `min`/`max` bound the value of numbers, the length of strings and the item count of arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    kind: &'static str,
    description: Option<String>,
    allowed: Option<Vec<Value>>,
    default: Option<Value>,
    required: bool,
    min: Option<Value>,
    max: Option<Value>,
    items: Option<Box<Param>>,
    properties: Option<Params>,
}

impl Param {
    fn of(kind: &'static str) -> Self {
        Self {
            kind,
            description: None,
            allowed: None,
            default: None,
            required: false,
            min: None,
            max: None,
            items: None,
            properties: None,
        }
    }

    /// A string.
    pub fn string() -> Self {
        Self::of("string")
    }

    /// An integer.
    pub fn integer() -> Self {
        Self::of("integer")
    }

    /// A number.
    pub fn number() -> Self {
        Self::of("number")
    }

    /// A boolean.
    pub fn boolean() -> Self {
        Self::of("boolean")
    }

    /// An array whose items follow `items`.
    pub fn array(items: Param) -> Self {
        Self {
            items: Some(Box::new(items)),
            ..Self::of("array")
        }
    }

    /// An object with these properties (no others allowed).
    pub fn object(properties: Params) -> Self {
        Self {
            properties: Some(properties),
            ..Self::of("object")
        }
    }

    /// What the parameter means, for the model.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The only values allowed (`enum`).
    pub fn one_of<V: Into<Value>>(mut self, values: impl IntoIterator<Item = V>) -> Self {
        self.allowed = Some(values.into_iter().map(Into::into).collect());
        self
    }

    /// The value the tool assumes when the model leaves the parameter out.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self
    }

    /// The model must send this parameter.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Lower bound: the value of a number, the length of a string, the items of an array.
    pub fn min(mut self, min: impl Into<Value>) -> Self {
        self.min = Some(min.into());
        self
    }

    /// Upper bound: the value of a number, the length of a string, the items of an array.
    pub fn max(mut self, max: impl Into<Value>) -> Self {
        self.max = Some(max.into());
        self
    }

    fn bound_keys(&self) -> Option<(&'static str, &'static str)> {
        match self.kind {
            "integer" | "number" => Some(("minimum", "maximum")),
            "string" => Some(("minLength", "maxLength")),
            "array" => Some(("minItems", "maxItems")),
            _ => None,
        }
    }

    /// The schema without the default, so the default can be checked against it.
    fn schema_without_default(&self, path: &str) -> Result<Map<String, Value>> {
        let mut s = Map::new();
        s.insert("type".into(), json!(self.kind));
        if let Some(d) = &self.description {
            s.insert("description".into(), json!(d));
        }
        if let Some(values) = &self.allowed {
            if values.is_empty() {
                return Err(Error::input(path, "one_of needs at least one value"));
            }
            let type_schema = json!({"type": self.kind});
            for v in values {
                if !fits(&type_schema, v, path)? {
                    return Err(Error::input(
                        path,
                        format!("allowed value {v} is not of type {:?}", self.kind),
                    ));
                }
            }
            s.insert("enum".into(), Value::Array(values.clone()));
        }
        if self.min.is_some() || self.max.is_some() {
            let Some((lo_key, hi_key)) = self.bound_keys() else {
                return Err(Error::input(
                    path,
                    format!("min/max do not apply to type {:?}", self.kind),
                ));
            };
            let as_number = |v: &Value, which: &str| -> Result<f64> {
                let n = v.as_f64().ok_or_else(|| {
                    Error::input(path, format!("{which} must be a number, got {v}"))
                })?;
                if lo_key != "minimum" && (n < 0.0 || v.as_u64().is_none()) {
                    return Err(Error::input(
                        path,
                        format!("{which} of a {} must be a whole number >= 0", self.kind),
                    ));
                }
                Ok(n)
            };
            let lo = self.min.as_ref().map(|v| as_number(v, "min")).transpose()?;
            let hi = self.max.as_ref().map(|v| as_number(v, "max")).transpose()?;
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo > hi
            {
                return Err(Error::input(path, format!("min {lo} is above max {hi}")));
            }
            if let Some(v) = &self.min {
                s.insert(lo_key.into(), v.clone());
            }
            if let Some(v) = &self.max {
                s.insert(hi_key.into(), v.clone());
            }
        }
        if let Some(items) = &self.items {
            s.insert(
                "items".into(),
                Value::Object(items.schema(&format!("{path}[]"))?),
            );
        }
        if let Some(props) = &self.properties {
            for (k, v) in props.schema(path)? {
                s.insert(k, v);
            }
        }
        Ok(s)
    }

    fn schema(&self, path: &str) -> Result<Map<String, Value>> {
        let mut s = self.schema_without_default(path)?;
        if let Some(default) = &self.default {
            if !fits(&Value::Object(s.clone()), default, path)? {
                return Err(Error::input(
                    path,
                    format!("default {default} does not fit the parameter's own schema"),
                ));
            }
            s.insert("default".into(), default.clone());
        }
        Ok(s)
    }
}

/// Whether `value` passes `schema`; a schema the validator refuses is an input error at `path`.
fn fits(schema: &Value, value: &Value, path: &str) -> Result<bool> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| Error::input(path, format!("invalid schema: {e}")))?;
    Ok(validator.is_valid(value))
}

/// An object's parameters, in order; [`Params::build`] gives the tool's `parameters` schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    params: Vec<(String, Param)>,
}

impl Params {
    /// No parameters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a parameter (a later one with the same name is an error at build time).
    pub fn add(mut self, name: impl Into<String>, param: Param) -> Self {
        self.params.push((name.into(), param));
        self
    }

    /// The schema: `{"type": "object", "properties": {..}, "required": [..],
    /// "additionalProperties": false}`. Errors name the parameter: an empty or repeated name,
    /// an allowed value or default of the wrong type, min above max, bounds on a type without
    /// them.
    pub fn build(&self) -> Result<Value> {
        self.schema("parameters").map(Value::Object)
    }

    fn schema(&self, path: &str) -> Result<Map<String, Value>> {
        let mut props = Map::new();
        let mut required = Vec::new();
        for (name, param) in &self.params {
            let here = if path == "parameters" {
                format!("parameters.{name}")
            } else {
                format!("{path}.{name}")
            };
            if name.is_empty() {
                return Err(Error::input(here, "parameter name is empty"));
            }
            if props.contains_key(name) {
                return Err(Error::input(
                    here,
                    format!("parameter {name:?} is added twice"),
                ));
            }
            props.insert(name.clone(), Value::Object(param.schema(&here)?));
            if param.required {
                required.push(Value::String(name.clone()));
            }
        }
        let mut s = Map::new();
        s.insert("type".into(), json!("object"));
        s.insert("properties".into(), Value::Object(props));
        if !required.is_empty() {
            s.insert("required".into(), Value::Array(required));
        }
        s.insert("additionalProperties".into(), Value::Bool(false));
        Ok(s)
    }
}

/// A readable list of an object schema's parameters, one line each: name, type, required or
/// optional, default, allowed values, bounds and description. Nested objects are indented.
/// Returns an empty string for a schema without properties.
pub fn parameter_list(schema: &Value) -> String {
    let mut out = String::new();
    list_into(schema, 0, &mut out);
    out
}

fn list_into(schema: &Value, depth: usize, out: &mut String) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&"  ".repeat(depth));
        out.push_str("- ");
        out.push_str(name);
        out.push_str(" (");
        out.push_str(&type_text(prop));
        out.push_str(if required.contains(&name.as_str()) {
            ", required"
        } else {
            ", optional"
        });
        if let Some(d) = prop.get("default") {
            out.push_str(&format!(", default {d}"));
        }
        out.push(')');
        let mut notes = Vec::new();
        if let Some(values) = prop.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = values.iter().map(Value::to_string).collect();
            notes.push(format!("one of {}", values.join(", ")));
        }
        for (key, word) in [
            ("minimum", ">="),
            ("maximum", "<="),
            ("minLength", "length >="),
            ("maxLength", "length <="),
            ("minItems", "items >="),
            ("maxItems", "items <="),
        ] {
            if let Some(v) = prop.get(key) {
                notes.push(format!("{word} {v}"));
            }
        }
        let description = prop.get("description").and_then(Value::as_str);
        if description.is_some() || !notes.is_empty() {
            out.push_str(": ");
            let mut parts: Vec<String> = description
                .map(|d| d.trim_end_matches('.').to_owned())
                .into_iter()
                .collect();
            parts.extend(notes);
            out.push_str(&parts.join("; "));
        }
        if prop.get("properties").is_some() {
            list_into(prop, depth + 1, out);
        }
    }
}

fn type_text(prop: &Value) -> String {
    let base = match prop.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if prop.get("enum").is_some() => "enum".to_owned(),
        _ => "any".to_owned(),
    };
    if base == "array"
        && let Some(items) = prop.get("items")
    {
        return format!("array of {}", type_text(items));
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_schema_in_order() {
        let schema = Params::new()
            .add("city", Param::string().description("City name").required())
            .add(
                "unit",
                Param::string()
                    .one_of(["celsius", "fahrenheit"])
                    .default("celsius"),
            )
            .add("days", Param::integer().min(1).max(7))
            .add("tags", Param::array(Param::string()).max(3))
            .add(
                "where",
                Param::object(Params::new().add("lat", Param::number().required())),
            )
            .add("verbose", Param::boolean())
            .build()
            .unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                    "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
                    "where": {"type": "object", "properties": {"lat": {"type": "number"}},
                              "required": ["lat"], "additionalProperties": false},
                    "verbose": {"type": "boolean"}
                },
                "required": ["city"],
                "additionalProperties": false
            })
        );
        let list = parameter_list(&schema);
        assert_eq!(
            list,
            "- city (string, required): City name\n\
             - unit (string, optional, default \"celsius\"): one of \"celsius\", \"fahrenheit\"\n\
             - days (integer, optional): >= 1; <= 7\n\
             - tags (array of string, optional): items <= 3\n\
             - where (object, optional)\n  - lat (number, required)\n\
             - verbose (boolean, optional)"
        );
    }

    #[test]
    fn bad_params_name_the_parameter() {
        let cases = [
            (
                Params::new().add("unit", Param::string().one_of(["c"]).default("k")),
                "parameters.unit",
                "default",
            ),
            (
                Params::new().add("n", Param::integer().min(5).max(1)),
                "parameters.n",
                "above max",
            ),
            (
                Params::new().add("b", Param::boolean().min(1)),
                "parameters.b",
                "do not apply",
            ),
            (
                Params::new().add("n", Param::integer().one_of(["x"])),
                "parameters.n",
                "not of type",
            ),
            (
                Params::new()
                    .add("a", Param::string())
                    .add("a", Param::string()),
                "parameters.a",
                "twice",
            ),
            (
                Params::new().add("s", Param::string().min(-1)),
                "parameters.s",
                "whole number",
            ),
            (
                Params::new().add(
                    "o",
                    Param::object(Params::new().add("x", Param::integer().default("no"))),
                ),
                "parameters.o.x",
                "default",
            ),
        ];
        for (params, want_path, want_text) in cases {
            match params.build() {
                Err(Error::Input { path, message }) => {
                    assert_eq!(path, want_path, "{message}");
                    assert!(message.contains(want_text), "{message}");
                }
                other => panic!("expected an input error, got {other:?}"),
            }
        }
    }

    #[test]
    fn list_of_empty_schema_is_empty() {
        assert_eq!(parameter_list(&json!({"type": "object"})), "");
    }
}
