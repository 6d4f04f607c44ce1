//! The offline model: with no API key a role talks to the embedded mock provider (OpenAI's
//! wire), which answers from what it is sent instead of a fixed script.
//!
//! - After the latest user message, when tool results have come back: it answers with text
//!   quoting each result (`get_weather returned {"temp_c":21}`), so the whole path from the
//!   model through the callback and back is visible.
//! - Otherwise, when tools are offered: it calls the tools whose names appear in the user's
//!   message (its first 4 KiB; all offered tools when none does, at most [`MAX_CALLS`]), in one turn, with
//!   arguments made from each tool's schema ([`example_arguments`]), filled with the values the
//!   message holds where they fit ([`arguments_from`]: `add 2 and 3` → `{"a":2,"b":3}`).
//! - With no tools it says so and echoes the message.
//!
//! Every quote (the message, each result) is cut to [`MAX_QUOTE`] characters, so the answer is
//! small whatever the input: the mock streams text a few characters per event, and echoing a
//! whole 8 MiB message that way multiplied it into gigabytes.

use serde_json::{Map, Value, json};

use crate::mock::{MockReply, RecordedRequest};
use crate::types::ToolCall;

/// The most tools the offline model calls in one turn.
pub const MAX_CALLS: usize = 8;

/// The most characters of a message or a tool result the offline model quotes.
pub(super) const MAX_QUOTE: usize = 200;

/// How much of the user's message is searched for tool names (names are short; a long
/// message is not searched whole once per tool).
const MATCH_BYTES: usize = 4096;

/// How deep [`example_arguments`] follows nested schemas.
const MAX_DEPTH: usize = 8;

/// The reply to one request in OpenAI's Chat Completions wire.
pub(crate) fn respond(request: &RecordedRequest) -> MockReply {
    let body = &request.body;
    let empty = Vec::new();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let last_user = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let user_text: std::borrow::Cow<'_, str> =
        match last_user.and_then(|i| messages[i].get("content")) {
            Some(Value::String(s)) => s.as_str().into(),
            Some(other) => content_text(other).into(),
            None => "".into(),
        };
    let after = &messages[last_user.map_or(0, |i| i + 1)..];
    let results: Vec<(String, String)> = after
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| {
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = called_name(after, id).unwrap_or_else(|| "a tool".to_owned());
            (
                name,
                m.get("content").map(content_quote).unwrap_or_default(),
            )
        })
        .collect();
    if !results.is_empty() {
        let parts: Vec<String> = results
            .iter()
            .map(|(name, output)| format!("{name} returned {output}"))
            .collect();
        return MockReply::text(format!(
            "Offline answer (mock model, no API key): {}.",
            parts.join("; ")
        ));
    }
    let tools: Vec<(&str, &Value)> = body
        .get("tools")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
        .iter()
        .filter_map(|t| {
            let f = t.get("function")?;
            Some((
                f.get("name")?.as_str()?,
                f.get("parameters").unwrap_or(&Value::Null),
            ))
        })
        .collect();
    if tools.is_empty() {
        return MockReply::text(format!(
            "Offline answer (mock model, no API key): no tools are registered for this role. \
             You said: {}",
            quote(&user_text)
        ));
    }
    let lower = head(&user_text, MATCH_BYTES).to_lowercase();
    let named: Vec<&(&str, &Value)> = tools
        .iter()
        .filter(|(name, _)| lower.contains(&name.to_lowercase()))
        .collect();
    let chosen: Vec<&(&str, &Value)> = if named.is_empty() {
        tools.iter().collect()
    } else {
        named
    };
    let calls = chosen
        .into_iter()
        .take(MAX_CALLS)
        .enumerate()
        .map(|(i, (name, schema))| {
            let args = arguments_from(schema, head(&user_text, MATCH_BYTES));
            ToolCall::new(format!("call_offline_{}", i + 1), *name, args.to_string())
        });
    MockReply::tool_calls(calls)
}

/// The name of the call `id` in the assistant turns of `messages`.
fn called_name(messages: &[Value], id: &str) -> Option<String> {
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .and_then(|c| c.pointer("/function/name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// At most [`MAX_QUOTE`] characters of `text`, saying how much was left out.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut),
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// A tool result's content, quoted.
fn content_quote(content: &Value) -> String {
    match content {
        Value::String(s) => quote(s),
        other => quote(&content_text(other)),
    }
}

/// Message content as text: a string, or the text parts of a content array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// [`example_arguments`] with values found in `message` put in where the schema takes them:
/// `name=value` or `name: value` for a named parameter, then the message's numbers in order
/// for the top-level number and integer parameters, and its quoted strings in order for the
/// string ones. A value is kept only when the arguments still satisfy the schema, so the
/// answer is always valid.
pub fn arguments_from(schema: &Value, message: &str) -> Value {
    let mut args = example_arguments(schema);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return args;
    };
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return args;
    };
    let mut numbers = numbers_in(message).into_iter();
    let mut quoted = quoted_in(message).into_iter();
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        let candidate = match named_value(message, name) {
            Some(text) => Some(typed(kind, text)),
            None => match kind {
                "integer" | "number" => numbers.next().map(|n| typed(kind, n)),
                "string" => quoted.next().map(|s| Value::String(s.to_owned())),
                _ => None,
            },
        };
        let (Some(value), Value::Object(map)) = (candidate, &mut args) else {
            continue;
        };
        let before = map.insert(name.clone(), value);
        if !validator.is_valid(&args)
            && let Value::Object(map) = &mut args
        {
            match before {
                Some(old) => map.insert(name.clone(), old),
                None => map.shift_remove(name),
            };
        }
    }
    args
}

/// `text` as a value of JSON type `kind`: a number for number types when it parses, else the
/// text as a string.
fn typed(kind: &str, text: &str) -> Value {
    let number = match kind {
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        _ => None,
    };
    number.unwrap_or_else(|| Value::String(text.to_owned()))
}

/// The numbers written in `text` (`3`, `-2`, `4.5`), in order.
fn numbers_in(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let negative = bytes[i] == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if (bytes[i].is_ascii_digit() || negative) && starts_word {
            let start = i;
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_digit()
                    || (bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            if i == bytes.len() || !bytes[i].is_ascii_alphabetic() {
                out.push(&text[start..i]);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The strings written in double quotes in `text`, in order.
fn quoted_in(text: &str) -> Vec<&str> {
    text.split('"').skip(1).step_by(2).collect()
}

/// The value written as `name=value` or `name: value` in `text` (a word, or a quoted string).
fn named_value<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let mut from = 0;
    while let Some(found) = text[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let word_start = at == 0 || !text.as_bytes()[at - 1].is_ascii_alphanumeric();
        let rest = text[from..].trim_start();
        let Some(rest) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) else {
            continue;
        };
        if !word_start {
            continue;
        }
        let rest = rest.trim_start();
        let value = match rest.strip_prefix('"') {
            Some(q) => q.split('"').next(),
            None => rest
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
                .next(),
        };
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            return Some(v);
        }
    }
    None
}

/// An arguments object that satisfies `schema` where it can: every property (falling back to
/// the required ones when the full object does not validate), each from its `const`, first
/// `enum` value, `default`, first example, or a typed placeholder within its bounds.
pub fn example_arguments(schema: &Value) -> Value {
    let full = example(schema, schema, 0, true);
    let full = if full.is_object() { full } else { json!({}) };
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return full;
    };
    if validator.is_valid(&full) {
        return full;
    }
    let required = example(schema, schema, 0, false);
    if required.is_object() && validator.is_valid(&required) {
        required
    } else {
        full
    }
}

fn example(root: &Value, schema: &Value, depth: usize, optional_too: bool) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let Value::Object(s) = schema else {
        return Value::Null;
    };
    if let Some(reference) = s.get("$ref").and_then(Value::as_str) {
        return match resolve(root, reference) {
            Some(target) => example(root, target, depth + 1, optional_too),
            None => Value::Null,
        };
    }
    if let Some(v) = s.get("const") {
        return v.clone();
    }
    if let Some(v) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = s.get("default") {
        return v.clone();
    }
    if let Some(v) = s
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(options) = s.get(key).and_then(Value::as_array) {
            let pick = options
                .iter()
                .find(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                .or_else(|| options.first());
            if let Some(o) = pick {
                return example(root, o, depth + 1, optional_too);
            }
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if s.contains_key("properties") => "object",
        _ if s.contains_key("items") => "array",
        _ => "string",
    };
    match ty {
        "object" => {
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    if optional_too || required.contains(&name.as_str()) {
                        out.insert(name.clone(), example(root, sub, depth + 1, optional_too));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let count = s
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 3);
            let item = s.get("items").map_or(json!("example"), |i| {
                example(root, i, depth + 1, optional_too)
            });
            Value::Array(vec![item; count as usize])
        }
        "integer" => json!(number_in(s, 1.0).ceil() as i64),
        "number" => json!(number_in(s, 1.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => Value::String(string_for(s)),
    }
}

/// `preferred` moved inside the schema's bounds.
fn number_in(s: &Map<String, Value>, preferred: f64) -> f64 {
    let get = |k: &str| s.get(k).and_then(Value::as_f64);
    let mut x = preferred;
    if let Some(min) = get("minimum") {
        x = x.max(min);
    }
    if let Some(min) = get("exclusiveMinimum") {
        x = x.max(min + 1.0);
    }
    if let Some(max) = get("maximum") {
        x = x.min(max);
    }
    if let Some(max) = get("exclusiveMaximum") {
        x = x.min(max - 1.0);
    }
    if x.is_finite() { x } else { preferred }
}

fn string_for(s: &Map<String, Value>) -> String {
    let base = match s.get("format").and_then(Value::as_str) {
        Some("date") => "2025-01-01",
        Some("date-time") => "2025-01-01T00:00:00Z",
        Some("time") => "12:00:00",
        Some("email") => "user@example.com",
        Some("uri" | "url") => "https://example.com/",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        _ => "example",
    };
    let min = s
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(256) as usize;
    let max = s
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|m| m as usize);
    let mut text = base.to_owned();
    while text.chars().count() < min {
        text.push('x');
    }
    if let Some(max) = max {
        text = text.chars().take(max).collect();
    }
    text
}

/// A local `$ref` (`#/$defs/x`, `#/definitions/x`, any JSON pointer into the root).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_satisfy_their_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 3, "maximum": 7},
                "ratio": {"type": "number", "exclusiveMaximum": 0.5},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "when": {"type": "string", "format": "date"},
                "opt": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
                "point": {"$ref": "#/$defs/point"},
                "code": {"type": "string", "maxLength": 3}
            },
            "required": ["city", "days"],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}
        });
        let args = example_arguments(&schema);
        assert_eq!(
            args,
            json!({"city": "example", "unit": "celsius", "days": 3, "ratio": -0.5,
                   "tags": ["example", "example"], "when": "2025-01-01", "opt": true,
                   "point": {"x": 1.0}, "code": "exa"})
        );
        assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&args));
    }

    #[test]
    fn fills_arguments_with_the_values_the_message_holds() {
        let add = json!({"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]});
        assert_eq!(arguments_from(&add, "add 2 and 3"), json!({"a": 2, "b": 3}));
        assert_eq!(
            arguments_from(&add, "add b=7, a: -4"),
            json!({"a": -4, "b": 7})
        );
        // Numbers inside words are not values; a missing one keeps the example.
        assert_eq!(
            arguments_from(&add, "add x2 and 5"),
            json!({"a": 5, "b": 1})
        );
        let weather = json!({"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer", "maximum": 7}}});
        assert_eq!(
            arguments_from(&weather, r#"weather in "Paris" for 3 days"#),
            json!({"city": "Paris", "days": 3})
        );
        // A value the schema refuses is not used: the arguments stay valid.
        assert_eq!(
            arguments_from(&weather, r#"weather in "Paris" for 30 days"#),
            json!({"city": "Paris", "days": 1})
        );
        assert_eq!(arguments_from(&json!({}), "add 2 and 3"), json!({}));
    }

    #[test]
    fn falls_back_to_required_fields() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string", "pattern": "^[0-9]+$"}},
            "required": ["a"]
        });
        assert_eq!(example_arguments(&schema), json!({"a": "example"}));
        assert_eq!(example_arguments(&json!({})), json!({}));
        let cyclic = json!({"type": "object", "properties": {"n": {"$ref": "#"}}});
        assert!(example_arguments(&cyclic).is_object());
    }

    fn request(body: Value) -> RecordedRequest {
        serde_json::from_value::<Value>(body.clone()).unwrap();
        RecordedRequest {
            method: "POST".into(),
            path: "/chat/completions".into(),
            headers: Vec::new(),
            body,
        }
    }

    fn reply_response(reply: MockReply) -> crate::ChatResponse {
        match reply {
            MockReply::Response(r) => r,
            other => panic!("not a response: {other:?}"),
        }
    }

    #[test]
    fn calls_the_named_tool_then_quotes_its_result() {
        let tools = json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
        ]);
        let first = reply_response(respond(&request(json!({
            "messages": [{"role": "user", "content": "Use get_weather please"}],
            "tools": tools
        }))));
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].name, "get_weather");
        assert_eq!(first.tool_calls[0].raw_arguments, r#"{"city":"example"}"#);
        let all = reply_response(respond(&request(json!({
            "messages": [{"role": "user", "content": "hello"}], "tools": tools
        }))));
        assert_eq!(all.tool_calls.len(), 2);
        let last = reply_response(respond(&request(json!({
            "messages": [
                {"role": "user", "content": "Use get_weather"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"temp_c\":21}"}
            ],
            "tools": tools
        }))));
        assert_eq!(
            last.text.as_deref(),
            Some(r#"Offline answer (mock model, no API key): get_weather returned {"temp_c":21}."#)
        );
        let long = "é".repeat(MAX_QUOTE + 50);
        let echo = reply_response(respond(&request(json!({
            "messages": [{"role": "user", "content": long}]
        }))));
        let text = echo.text.unwrap();
        assert!(
            text.ends_with(&format!("{}… (100 more bytes)", "é".repeat(MAX_QUOTE))),
            "{text}"
        );
        let none = reply_response(respond(&request(json!({"messages": "nonsense"}))));
        assert!(none.text.unwrap().contains("no tools"));
    }
}
