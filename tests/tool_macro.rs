//! `#[toolwire::tool]`: the tool it makes is the `TypedTool` one would write by hand.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolwire::ToolCall;
use toolwire::tools::{Tool, ToolError, ToolRegistry, ToolSelection, TypedTool};

/// Current weather for a city.
///
/// Temperatures in Celsius.
#[toolwire::tool]
async fn get_weather(
    /// City name.
    city: String,
    /// Days ahead, 0 for today.
    days: Option<u8>,
) -> Result<Value, ToolError> {
    Ok(json!({"city": city, "days": days.unwrap_or(0), "temp_c": 21}))
}

// The same tool, written by hand.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name.
    #[allow(dead_code)]
    city: String,
    /// Days ahead, 0 for today.
    #[allow(dead_code)]
    days: Option<u8>,
}

struct ByHand;

impl TypedTool for ByHand {
    type Args = WeatherArgs;
    type Output = Value;
    fn name(&self) -> &str {
        "get_weather"
    }
    fn description(&self) -> &str {
        "Current weather for a city.\n\nTemperatures in Celsius."
    }
    async fn call(&self, _: WeatherArgs) -> Result<Value, ToolError> {
        Ok(Value::Null)
    }
}

/// Adds two integers.
#[toolwire::tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Reads a number from text.
#[toolwire::tool(name = "parse-number")]
async fn parse(text: String) -> Result<i64, std::num::ParseIntError> {
    text.trim().parse()
}

#[toolwire::tool(description = "The time, fixed for the test.")]
async fn now() -> &'static str {
    "12:00"
}

#[test]
fn the_definition_equals_the_hand_written_typed_tool() {
    let made = Tool::typed(GetWeather).unwrap();
    let by_hand = Tool::typed(ByHand).unwrap();
    assert_eq!(made.definition(), by_hand.definition());
    assert_eq!(
        made.definition().parameters["properties"]["days"]["description"],
        "Days ahead, 0 for today."
    );
    assert_eq!(made.definition().parameters["required"], json!(["city"]));
}

#[test]
fn names_descriptions_and_the_function_itself() {
    assert_eq!(
        Tool::typed(Parse).unwrap().definition().name,
        "parse-number"
    );
    let now = Tool::typed(Now).unwrap();
    assert_eq!(
        now.definition().description,
        "The time, fixed for the test."
    );
    assert_eq!(now.definition().parameters["properties"], json!({}));
    // The function is still an ordinary function.
    assert_eq!(add(2, 3), 5);
}

#[tokio::test]
async fn calls_run_through_the_registry() {
    let registry = ToolRegistry::new();
    registry.register_typed(GetWeather).unwrap();
    registry.register_typed(Add).unwrap();
    registry.register_typed(Parse).unwrap();
    let all = ToolSelection::default();

    let r = registry
        .dispatch(
            &ToolCall::new("c1", "get_weather", r#"{"city":"Paris"}"#),
            &all,
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.output, json!({"city": "Paris", "days": 0, "temp_c": 21}));

    let r = registry
        .dispatch(&ToolCall::new("c2", "add", r#"{"a":2,"b":3}"#), &all)
        .await;
    assert_eq!(r.output, json!(5));

    // A handler's error reaches the model as an error result with its message.
    let r = registry
        .dispatch(
            &ToolCall::new("c3", "parse-number", r#"{"text":"x"}"#),
            &all,
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.error.as_deref(), Some("invalid digit found in string"));

    // Arguments that do not fit the derived schema never reach the function.
    let r = registry
        .dispatch(&ToolCall::new("c4", "add", r#"{"a":"two","b":3}"#), &all)
        .await;
    assert!(r.is_error);
    assert!(r.error.as_deref().unwrap_or("").contains("\"a\""), "{r:?}");
}
