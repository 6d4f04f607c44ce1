//! Typed tools: arguments are a serde struct whose JSON Schema is derived with schemars.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Handler, LOCAL_SOURCE, LocalFn, Tool, ToolError, ToolInput, ToolReply};
use crate::error::{Error, Result};
use crate::types::ToolDefinition;

/// A tool whose arguments deserialize into `Args` and whose output serializes from `Output`.
///
/// The parameters schema comes from `Args`' [`JsonSchema`] derive (doc comments become
/// descriptions), so the schema the model sees and the struct the handler gets cannot drift.
/// While [`TypedTool::call`] runs, [`Reporter::current`](super::Reporter::current) is the
/// call's reporter (progress and a summary for the people waiting).
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use toolwire::tools::{Tool, ToolError, TypedTool};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// City name.
///     city: String,
/// }
///
/// struct Weather;
///
/// impl TypedTool for Weather {
///     type Args = Args;
///     type Output = serde_json::Value;
///     fn name(&self) -> &str { "get_weather" }
///     fn description(&self) -> &str { "Current weather for a city" }
///     async fn call(&self, args: Args) -> Result<Self::Output, ToolError> {
///         Ok(serde_json::json!({"city": args.city, "temp_c": 21}))
///     }
/// }
///
/// let tool = Tool::typed(Weather)?;
/// assert_eq!(tool.definition().parameters["required"], serde_json::json!(["city"]));
/// # Ok::<(), toolwire::Error>(())
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; their schema is what the model is given.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// What the tool returns, serialized for the model.
    type Output: Serialize + Send + 'static;

    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// The clean `parameters` object for `T`: subschemas inlined (recursive types keep `$defs`),
/// no `$schema` or root `title`, `type: object` at the root with `properties` present.
/// Errors when `T` does not describe a JSON object.
pub fn parameters_for<T: JsonSchema>() -> Result<Value> {
    let schema = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    let Value::Object(map) = &mut value else {
        return Err(not_an_object::<T>(&value));
    };
    map.remove("$schema");
    map.remove("title");
    if map.get("type").and_then(Value::as_str) != Some("object") {
        return Err(not_an_object::<T>(&value));
    }
    map.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Ok(value)
}

fn not_an_object<T: JsonSchema>(schema: &Value) -> Error {
    Error::input(
        "parameters",
        format!(
            "the arguments type {} must be a struct (a JSON object), its schema is {schema}",
            T::schema_name()
        ),
    )
}

pub(super) fn into_tool<T: TypedTool>(tool: T) -> Result<Tool> {
    let definition = ToolDefinition::new(tool.name(), tool.description())?
        .with_parameters(parameters_for::<T::Args>()?)?;
    let tool = Arc::new(tool);
    let local: Arc<LocalFn> = Arc::new(move |input: ToolInput| {
        let tool = Arc::clone(&tool);
        Box::pin(async move {
            let args: T::Args = serde_json::from_value(input.arguments).map_err(|e| {
                ToolError::new(format!("the arguments do not fit the tool's schema: {e}"))
            })?;
            let output = tool.call(args).await?;
            // A typed tool that answers with a `ToolReply` (content parts) keeps it as it is.
            let output: Box<dyn std::any::Any> = Box::new(output);
            let output = match output.downcast::<ToolReply>() {
                Ok(reply) => return Ok(*reply),
                Err(other) => match other.downcast::<T::Output>() {
                    Ok(output) => *output,
                    Err(_) => return Err(ToolError::new("the tool's output has another type")),
                },
            };
            serde_json::to_value(output)
                .map(ToolReply::new)
                .map_err(|e| ToolError::new(format!("the tool's output is not JSON: {e}")))
        })
    });
    Ok(Tool::with_handler(
        definition,
        Handler::Local(local),
        LOCAL_SOURCE,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        lat: f64,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    #[serde(rename_all = "lowercase")]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    /// Weather query.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// City name.
        city: String,
        unit: Option<Unit>,
        at: Inner,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Empty {}

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    #[test]
    fn schema_is_clean_and_inlined() {
        let s = parameters_for::<Args>().unwrap();
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
        assert!(s.get("$defs").is_none(), "{s}");
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["city"]["description"], "City name.");
        assert_eq!(s["properties"]["at"]["properties"]["lat"]["type"], "number");
        let required = s["required"].as_array().unwrap();
        assert!(required.contains(&json!("city")) && !required.contains(&json!("unit")));
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({"city": "x", "at": {"lat": 1.0}, "unit": "celsius"})));
        assert!(!v.is_valid(&json!({"city": "x", "at": {"lat": 1.0}, "unit": "kelvin"})));
    }

    #[test]
    fn empty_struct_has_properties() {
        let s = parameters_for::<Empty>().unwrap();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"], json!({}));
    }

    #[test]
    fn recursive_type_keeps_defs() {
        let s = parameters_for::<Tree>().unwrap();
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({"children": [{"children": []}]})));
        assert!(!v.is_valid(&json!({"children": [{"children": 1}]})));
    }

    #[test]
    fn non_object_args_are_refused() {
        let err = parameters_for::<Vec<String>>().unwrap_err();
        assert!(
            matches!(&err, Error::Input { path, .. } if path == "parameters"),
            "{err}"
        );
    }
}
