//! Running one call: argument checks, schema validation, timeout, and catching panics. Every
//! outcome is a [`ToolResult`]; nothing here returns an error or lets a panic through.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{Value, json};

use super::{Handler, Reporter, ToolInput};
use crate::types::{ArgumentsErrorKind, ToolCall, ToolResult};

/// How much of a broken argument text is quoted back to the model.
const QUOTE_BYTES: usize = 500;

/// At most this many schema problems are listed in one result.
const MAX_PROBLEMS: usize = 5;

/// What dispatch needs from a registry entry.
pub(super) struct Target<'a> {
    pub handler: &'a Handler,
    pub validator: &'a Validator,
    /// The output schema's validator: an `ok` result whose output breaks it becomes an error.
    pub output: Option<&'a Validator>,
    pub schema: &'a Value,
    pub strict: bool,
    pub timeout: Duration,
}

/// Runs `call` against `target`, turning every failure into an error result; the handler
/// reports to `progress`.
pub(super) async fn run(target: Target<'_>, call: &ToolCall, progress: Reporter) -> ToolResult {
    if let Some(err) = &call.error {
        let what = match err.kind {
            ArgumentsErrorKind::Truncated => "were cut off before they were complete",
            ArgumentsErrorKind::Malformed => "are not a valid JSON object",
        };
        let message = format!(
            "The arguments for {:?} {what} ({}); the tool was not run. Call it again with the \
             complete arguments as one JSON object.",
            call.name, err.message
        );
        let mut result = ToolResult::error(call, message);
        result.output = json!({"raw_arguments": quote(&call.raw_arguments)});
        return result;
    }
    let mut arguments = call.arguments.clone().unwrap_or_else(|| json!({}));
    if target.strict {
        drop_null_optionals(target.schema, &mut arguments);
    }
    let problems = schema_problems(target.validator, target.schema, &arguments);
    if !problems.is_empty() {
        return ToolResult::error(call, problems.join("; "));
    }
    let input = ToolInput {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments,
        raw_arguments: call.raw_arguments.clone(),
        progress: progress.clone(),
    };
    let handler = target.handler.clone();
    // The handler is called inside the future so a panic while building its future is caught
    // the same way as a panic while it runs; `Reporter::current` answers inside it.
    let running =
        AssertUnwindSafe(progress.scope(async move { handler.call(input).await })).catch_unwind();
    // The handler's future is driven on a blocking-pool thread of its own (`spawn_blocking` +
    // `Handle::block_on`), never on a runtime worker: a handler that blocks its thread (a
    // `std::thread::sleep`, a synchronous client) then cannot starve the timer below, however
    // many block at once. Running it as a worker task was not enough: with as many blocking
    // handlers as workers, no worker was left to fire the timers, and handlers past their
    // timeout came back `ok`. Inside, the handler still runs in the caller's runtime
    // (`tokio::spawn`, timers and sockets work as in any task). On timeout, or when the
    // caller stops waiting, the handler is aborted: a blocked thread cannot be interrupted,
    // so it finishes its blocking call and the future is dropped at its next await, its
    // result discarded.
    let (abortable, abort) = futures::future::abortable(running);
    let runtime = tokio::runtime::Handle::current();
    let guard = AbortOnDrop(abort);
    let task = tokio::task::spawn_blocking(move || runtime.block_on(abortable));
    let finished = tokio::time::timeout(target.timeout, task).await;
    drop(guard);
    let finished = finished.map(|joined| match joined {
        Ok(Ok(outcome)) => outcome,
        Err(e) if e.is_panic() => Err(e.into_panic()),
        Ok(Err(futures::future::Aborted)) | Err(_) => {
            Ok(Err(super::ToolError::new("the tool's task was cancelled")))
        }
    });
    match finished {
        Err(_) => ToolResult::error(
            call,
            format!(
                "Tool {:?} timed out after {:?} and was stopped.",
                call.name, target.timeout
            ),
        ),
        Ok(Err(panic)) => ToolResult::error(
            call,
            format!(
                "Tool {:?} failed: it panicked: {}",
                call.name,
                panic_message(panic.as_ref())
            ),
        ),
        Ok(Ok(Err(e))) => {
            let mut result = ToolResult::error(call, e.message());
            result.output = e.output().clone();
            result.with_content(e.content().iter().cloned())
        }
        Ok(Ok(Ok(reply))) => match target.output.map(|v| output_problems(v, &reply.output)) {
            Some(problems) if !problems.is_empty() => {
                let message = format!(
                    "Tool {:?} returned output that does not match its output schema: {}",
                    call.name,
                    problems.join("; ")
                );
                let mut result = ToolResult::error(call, message);
                result.output = reply.output;
                result.with_content(reply.content)
            }
            _ => ToolResult::ok(call, reply.output).with_content(reply.content),
        },
    }
}

/// Where and how `output` breaks its schema: each problem as `<JSON pointer>: <what>` (the
/// pointer is `/` for the whole output), at most [`MAX_PROBLEMS`] of them.
pub(super) fn output_problems(validator: &Validator, output: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(output) {
        total += 1;
        if out.len() < MAX_PROBLEMS {
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            out.push(format!("{path}: {error}"));
        }
    }
    if total > out.len() {
        out.push(format!("and {} more problems", total - out.len()));
    }
    out
}

/// A running handler, aborted when its caller stops waiting for it (its result arrived, its
/// timeout passed, or the caller's future was dropped).
struct AbortOnDrop(futures::future::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The first bytes of `text` (cut at a character boundary), marked when cut.
fn quote(text: &str) -> String {
    if text.len() <= QUOTE_BYTES {
        return text.to_owned();
    }
    let cut = floor_char_boundary(text, QUOTE_BYTES);
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

/// The largest character boundary at or below `at`.
pub(super) fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut cut = at.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// OpenAI strict mode makes optional parameters nullable, so a strict tool may receive `null`
/// for a parameter the model meant to leave out. Those are removed (recursively through
/// `properties`) before validation, so the handler sees the parameter as absent.
fn drop_null_optionals(schema: &Value, args: &mut Value) {
    let (Some(props), Value::Object(map)) =
        (schema.get("properties").and_then(Value::as_object), args)
    else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    map.retain(|k, v| !v.is_null() || required.contains(&k.as_str()));
    for (k, v) in map.iter_mut() {
        if let Some(sub) = props.get(k) {
            drop_null_optionals(sub, v);
        }
    }
}

/// Human-readable schema violations, each naming the parameter, the problem and the allowed
/// values where the schema has them.
pub(super) fn schema_problems(validator: &Validator, schema: &Value, args: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut total = 0;
    for error in validator.iter_errors(args) {
        total += 1;
        if out.len() < MAX_PROBLEMS {
            let text = describe(&error, schema);
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    if total > out.len() && out.len() == MAX_PROBLEMS {
        out.push(format!("and {} more problems", total - MAX_PROBLEMS));
    }
    out
}

/// The instance path as `a.b[2].c`; empty at the root.
fn parameter_path(error: &ValidationError<'_>) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut keys = Vec::new();
    for segment in error.instance_path().iter() {
        match segment {
            LocationSegment::Property(p) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(&p);
                keys.push(p.to_string());
            }
            LocationSegment::Index(i) => {
                text.push_str(&format!("[{i}]"));
                keys.push(String::new());
            }
        }
    }
    (text, keys)
}

fn join_path(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_owned()
    } else {
        format!("{parent}.{child}")
    }
}

fn list(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(Value::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn describe(error: &ValidationError<'_>, schema: &Value) -> String {
    let (path, keys) = parameter_path(error);
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            format!("Missing required parameter {:?}", join_path(&path, &name))
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|u| join_path(&path, u)).collect();
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            let noun = if names.len() == 1 {
                "Unknown parameter"
            } else {
                "Unknown parameters"
            };
            match allowed_names(schema, &keys) {
                Some(allowed) if !allowed.is_empty() => {
                    let allowed: Vec<String> = allowed.iter().map(|n| format!("{n:?}")).collect();
                    format!(
                        "{noun} {}; allowed: {}",
                        quoted.join(", "),
                        allowed.join(", ")
                    )
                }
                _ => format!(
                    "{noun} {}; this tool takes no such parameter",
                    quoted.join(", ")
                ),
            }
        }
        kind => {
            let problem = match kind {
                ValidationErrorKind::Enum { options } => match options.as_array() {
                    Some(values) => format!("{instance} is not one of {}", list(values)),
                    None => format!("{instance} is not one of {options}"),
                },
                ValidationErrorKind::Constant { expected_value } => {
                    format!("{instance} is not the allowed value {expected_value}")
                }
                _ => error.to_string(),
            };
            if path.is_empty() {
                format!("Invalid arguments: {problem}")
            } else {
                format!("Invalid parameter {path:?}: {problem}")
            }
        }
    }
}

/// The property names the schema allows at `keys` (following `properties` and `items`).
fn allowed_names(schema: &Value, keys: &[String]) -> Option<Vec<String>> {
    let mut at = schema;
    for key in keys {
        at = if key.is_empty() {
            at.get("items")?
        } else {
            at.get("properties")?.get(key)?
        };
    }
    Some(at.get("properties")?.as_object()?.keys().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(schema: Value, args: Value) -> Vec<String> {
        let v = jsonschema::validator_for(&schema).unwrap();
        schema_problems(&v, &schema, &args)
    }

    fn weather() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "where": {"type": "object", "properties": {"lat": {"type": "number"}},
                          "additionalProperties": false}
            },
            "required": ["city"],
            "additionalProperties": false
        })
    }

    #[test]
    fn enum_violation_names_parameter_and_values() {
        assert_eq!(
            problems(weather(), json!({"city": "Paris", "unit": "kelvin"})),
            [r#"Invalid parameter "unit": "kelvin" is not one of ["celsius", "fahrenheit"]"#]
        );
    }

    #[test]
    fn other_violations() {
        assert_eq!(
            problems(weather(), json!({})),
            [r#"Missing required parameter "city""#]
        );
        assert_eq!(
            problems(weather(), json!({"city": "x", "days": 9})),
            [r#"Invalid parameter "days": 9 is greater than the maximum of 7"#]
        );
        assert_eq!(
            problems(weather(), json!({"city": 3})),
            [r#"Invalid parameter "city": 3 is not of type "string""#]
        );
        assert_eq!(
            problems(weather(), json!({"city": "x", "town": "y"})),
            [r#"Unknown parameter "town"; allowed: "city", "unit", "days", "where""#]
        );
        assert_eq!(
            problems(weather(), json!({"city": "x", "where": {"lon": 1}})),
            [r#"Unknown parameter "where.lon"; allowed: "lat""#]
        );
    }

    #[test]
    fn strict_nulls_are_dropped_for_optional_parameters_only() {
        let mut args = json!({"city": null, "unit": null, "where": {"lat": null}});
        drop_null_optionals(&weather(), &mut args);
        assert_eq!(args, json!({"city": null, "where": {}}));
    }

    #[test]
    fn output_problems_name_the_json_path() {
        let schema =
            json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(output_problems(&v, &json!({"t": 1.5})).is_empty());
        assert_eq!(
            output_problems(&v, &json!({"t": "warm"})),
            [r#"/t: "warm" is not of type "number""#]
        );
        let root = output_problems(&v, &Value::Null);
        assert!(root[0].starts_with("/: null"), "{root:?}");
    }

    #[test]
    fn quote_cuts_at_char_boundary() {
        let long = "é".repeat(400);
        let q = quote(&long);
        assert!(q.ends_with("(800 bytes in all)"), "{q}");
        assert!(q.len() < 530);
    }
}
