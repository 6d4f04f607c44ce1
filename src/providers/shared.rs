//! Checks and policies every provider's encoder shares.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::provider::{Downgrade, ProviderKind};
use crate::types::{
    AssistantMessage, ChatRequest, Message, Part, ResponseFormat, ToolCall, ToolChoice, ToolResult,
    parse_arguments,
};

/// Media parts of tool results, for a wire whose tool messages take text only: the downgrade
/// every such wire applies. The text parts stay in the tool message ([`ToolResult::content_text`]);
/// the media of each run of consecutive tool messages goes, in order, in one user message right
/// after the run, each result's media introduced by a text part naming its call, so the model
/// can tell which result showed what. Returns, for the last tool message of each run that had
/// media, the parts of that user message; every part moved is recorded in `downgrades`.
pub(crate) fn tool_media_after_runs(
    messages: &[Message],
    wire: &str,
    downgrades: &mut Vec<Downgrade>,
) -> std::collections::HashMap<usize, Vec<Part>> {
    let mut out = std::collections::HashMap::new();
    let mut pending: Vec<Part> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if let Message::Tool(result) = message {
            let media: Vec<(usize, &Part)> = (result.content.iter().enumerate())
                .filter(|(_, p)| p.source().is_some())
                .collect();
            if !media.is_empty() {
                pending.push(Part::text(format!(
                    "Media from the result of tool call {} ({}):",
                    result.call_id, result.name
                )));
            }
            for (at, part) in media {
                downgrades.push(Downgrade::new(
                    i,
                    at,
                    format!(
                        "{wire} tool messages carry text only: the {} went in a user message after the tool results",
                        part.kind()
                    ),
                ));
                pending.push(part.clone());
            }
        }
        let run_ends = !matches!(messages.get(i + 1), Some(Message::Tool(_)));
        if matches!(message, Message::Tool(_)) && run_ends && !pending.is_empty() {
            out.insert(i, std::mem::take(&mut pending));
        }
    }
    out
}

/// The error for a whole body that has none of `provider`'s body fields (`shape` names them):
/// most likely another API's answer replayed or served under the wrong provider (a Bedrock
/// Converse body read as `anthropic`). Never an empty success, so nothing in it is silently
/// lost. The body is parsed again only here, on the error path, to name the API it looks like.
pub(crate) fn foreign_body(provider: ProviderKind, shape: &str, body: &[u8]) -> Error {
    let looks_like = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| likely_api(&v))
        .map(|(api, _)| format!(" (it looks like {api})"))
        .unwrap_or_default();
    let name = provider.name();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    Error::decode(
        provider,
        "response body",
        format!(
            "not {article} {name} response body: likely another API's{looks_like}; it has none \
             of {shape} (wrong provider?)"
        ),
    )
}

/// A failed typed read of a whole body, or [`foreign_body`] when the body is plainly another
/// API's (the typed read failed because a field of the same name has another shape there).
pub(crate) fn or_foreign(provider: ProviderKind, shape: &str, body: &[u8], error: Error) -> Error {
    let foreign = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| likely_api(&v))
        .is_some_and(|(_, wires)| !wires.contains(&provider));
    if foreign {
        foreign_body(provider, shape, body)
    } else {
        error
    }
}

/// The API whose body `v` looks like, by the top-level fields that give each one away, and
/// the providers that speak it.
fn likely_api(v: &Value) -> Option<(&'static str, &'static [ProviderKind])> {
    use ProviderKind as K;
    let o = v.as_object()?;
    let has = |k: &str| o.contains_key(k);
    let output = o.get("output");
    Some(
        if output.is_some_and(|x| x.get("message").is_some()) && has("stopReason") {
            (
                "an AWS Bedrock Converse body: `output.message`, `stopReason`",
                &[],
            )
        } else if o.get("message").is_some_and(Value::is_object) && has("finish_reason") {
            (
                "a Cohere v2 chat body: `message`, `finish_reason`",
                &[K::Cohere],
            )
        } else if has("choices") {
            (
                "an OpenAI Chat Completions body: `choices`",
                &[K::OpenAi, K::Glm, K::Qwen, K::StepFun, K::Mistral],
            )
        } else if has("candidates") || has("promptFeedback") {
            ("a Gemini body: `candidates`", &[K::Gemini])
        } else if output.is_some_and(Value::is_array) {
            (
                "an OpenAI Responses body: `output` items",
                &[K::OpenAiResponses],
            )
        } else if output.is_some_and(|x| x.get("choices").is_some() || x.get("text").is_some()) {
            ("a DashScope body: `output.choices`", &[K::DashScope])
        } else if o.get("type").and_then(Value::as_str) == Some("message") || has("stop_reason") {
            (
                "an Anthropic Messages body: `type: message`, `stop_reason`",
                &[K::Anthropic],
            )
        } else if has("message") && has("done") {
            ("an Ollama /api/chat body: `message`, `done`", &[K::Ollama])
        } else {
            return None;
        },
    )
}

/// A JSON Schema answer format as OpenAI's wires take it (Chat Completions' `json_schema`,
/// Responses' `text.format`, DashScope's `response_format`): `{"name", "description"?,
/// "schema", "strict"?}`, the schema given the strict rewrite a strict tool's gets when the
/// format asks for strictness. The name must pass the wire's name rule (`valid_name`), as a
/// tool's does.
pub(crate) fn json_schema_format(
    format: &ResponseFormat,
    valid_name: fn(&str) -> bool,
) -> Result<Map<String, Value>> {
    if !valid_name(&format.name) {
        return Err(Error::input(
            "response_format.name",
            format!(
                "{:?} breaks the name rule (letters, digits, '_' and '-', at most 64)",
                format.name
            ),
        ));
    }
    let mut spec = Map::new();
    spec.insert("name".into(), Value::String(format.name.clone()));
    if let Some(description) = &format.description {
        spec.insert("description".into(), Value::String(description.clone()));
    }
    let schema = if format.strict == Some(true) {
        crate::schema::to_strict(&format.schema)
    } else {
        format.schema.clone()
    };
    spec.insert("schema".into(), schema);
    if let Some(strict) = format.strict {
        spec.insert("strict".into(), Value::Bool(strict));
    }
    Ok(spec)
}

/// Each part of a list encoded by the wire's `encode` (given the part and its place, e.g.
/// `messages[2].content[1]`), empty text parts left out: they carry nothing, and some APIs
/// reject empty text blocks.
pub(crate) fn encode_parts(
    parts: &[Part],
    place: &str,
    encode: impl Fn(&Part, &str) -> Result<Value>,
) -> Result<Vec<Value>> {
    (parts.iter().enumerate())
        .filter(|(_, p)| p.as_text() != Some(""))
        .map(|(j, p)| encode(p, &format!("{place}[{j}]")))
        .collect()
}

/// Every tool name in the request, tools first, then history, for [`NameMap::build`].
pub(crate) fn request_names(req: &ChatRequest) -> impl Iterator<Item = &str> {
    let tools = req.tools.iter().map(|t| t.name.as_str());
    let history = req
        .messages
        .iter()
        .flat_map(|m| -> Box<dyn Iterator<Item = &str>> {
            match m {
                Message::Assistant(a) => Box::new(a.tool_calls.iter().map(|c| c.name.as_str())),
                Message::Tool(r) => Box::new(std::iter::once(r.name.as_str())),
                _ => Box::new(std::iter::empty()),
            }
        });
    tools.chain(history)
}

/// Checks what every wire needs: valid, unique tool names and a named tool_choice that exists.
pub(crate) fn check_tools(req: &ChatRequest) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for (i, tool) in req.tools.iter().enumerate() {
        crate::types::check_name(&tool.name, &format!("tools[{i}].name"))?;
        if !seen.insert(tool.name.as_str()) {
            return Err(Error::input(
                format!("tools[{i}].name"),
                format!("duplicate tool name {:?}", tool.name),
            ));
        }
    }
    if let Some(ToolChoice::Tool(name)) = &req.tool_choice
        && !seen.contains(name.as_str())
    {
        return Err(Error::input(
            "tool_choice.name",
            format!("tool_choice names {name:?}, which is not among the request's tools"),
        ));
    }
    Ok(())
}

/// Whether argument text stops inside a JSON value (one validating pass, no allocation): a
/// call a wire marked final with such text may have been cut by a token limit, which only the
/// turn's finish reason can tell (`truncated` then, `malformed` otherwise).
pub(crate) fn stops_mid_json(text: &str) -> bool {
    !text.trim().is_empty()
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err_and(|e| e.is_eof())
}

/// The argument text to replay for a call: its raw text when that is a JSON object, `{}` when
/// it is empty, JSON `null`, malformed or truncated (servers re-parse history and reject text
/// that is no object). A complete call whose raw text is not JSON (a free-form call's text, see
/// [`ToolCall::FREE_FORM`], even after its mark was dropped) sends its canonical arguments,
/// `{"input": "<text>"}`, so its input survives on a function wire.
pub(crate) fn replay_arguments(call: &ToolCall) -> String {
    if call.error.is_none()
        && call.raw_arguments.trim_start().starts_with('{')
        && parse_arguments(&call.raw_arguments).is_ok()
    {
        call.raw_arguments.clone()
    } else if let (None, Some(args @ Value::Object(_))) = (&call.error, &call.arguments) {
        args.to_string()
    } else {
        "{}".to_owned()
    }
}

/// The first property key of a JSON Schema that `valid` rejects, with its path (e.g.
/// `properties.address.properties["zip.code"]`). Walks the `properties` of every nested schema
/// (`items`, `anyOf`, `$defs`, …); names under `$defs` or `patternProperties` are not property
/// keys and are not checked.
pub(crate) fn invalid_property_key(
    schema: &Value,
    valid: fn(&str) -> bool,
) -> Option<(String, String)> {
    walk_keys(schema, valid, "", 0)
}

/// Nesting depth past which [`invalid_property_key`] stops looking, so a hostile schema cannot
/// overflow the stack.
const MAX_SCHEMA_DEPTH: usize = 128;

/// Keywords whose value is one schema (or, for `items`, possibly an array of schemas).
const SCHEMA_KEYWORDS: [&str; 9] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is an array of schemas.
const SCHEMA_LIST_KEYWORDS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords whose value maps names (not property keys) to schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 4] = [
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

fn walk_keys(
    schema: &Value,
    valid: fn(&str) -> bool,
    path: &str,
    depth: usize,
) -> Option<(String, String)> {
    let Value::Object(map) = schema else {
        return None;
    };
    if depth > MAX_SCHEMA_DEPTH {
        return None;
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let base = step(path, "properties");
        for (key, sub) in properties {
            let here = step(&base, key);
            if !valid(key) {
                return Some((here, key.clone()));
            }
            if let Some(bad) = walk_keys(sub, valid, &here, depth + 1) {
                return Some(bad);
            }
        }
    }
    let mut nested: Vec<(String, &Value)> = Vec::new();
    for keyword in SCHEMA_KEYWORDS {
        match map.get(keyword) {
            Some(Value::Array(items)) => nested.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, sub)| (format!("{}[{i}]", step(path, keyword)), sub)),
            ),
            Some(sub) => nested.push((step(path, keyword), sub)),
            None => {}
        }
    }
    for keyword in SCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(items)) = map.get(keyword) {
            nested.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, sub)| (format!("{}[{i}]", step(path, keyword)), sub)),
            );
        }
    }
    for keyword in SCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(subs)) = map.get(keyword) {
            let base = step(path, keyword);
            nested.extend(subs.iter().map(|(name, sub)| (step(&base, name), sub)));
        }
    }
    nested
        .into_iter()
        .find_map(|(here, sub)| walk_keys(sub, valid, &here, depth + 1))
}

/// `path.key`, or `path["key"]` when the key is not a plain identifier.
fn step(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::String(key.to_owned())),
    }
}

/// An assistant turn's call in the Chat Completions history shape (also DashScope's, which adds
/// `index`): `{"id", "type": "function", "function": {"name", "arguments"}}`, the arguments
/// replayed by [`replay_arguments`] and the name mapped for the wire.
pub(crate) fn history_call(
    call: &ToolCall,
    names: &crate::provider::NameMap,
    index: Option<usize>,
) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    if let Some(i) = index {
        m.insert("index".into(), i.into());
    }
    m.insert("id".into(), call.id.clone().into());
    m.insert("type".into(), "function".into());
    m.insert(
        "function".into(),
        serde_json::json!({"name": names.wire(&call.name), "arguments": replay_arguments(call)}),
    );
    serde_json::Value::Object(m)
}

/// Merges a request's `extra_body` into the wire body one level deep: an object given for a
/// field toolwire already set as an object adds to it (`{"generationConfig": {"topK": 3}}`
/// keeps toolwire's other settings); anything else replaces the field or adds it.
pub(crate) fn merge_extra_body(
    body: &mut serde_json::Map<String, Value>,
    extra: &serde_json::Map<String, Value>,
) {
    for (key, value) in extra {
        match (body.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(added)) => {
                for (k, v) in added {
                    existing.insert(k.clone(), v.clone());
                }
            }
            _ => {
                body.insert(key.clone(), value.clone());
            }
        }
    }
}

/// A run of tool results in the history, with the assistant turn whose calls they answer.
pub(crate) struct ToolResultRun<'m> {
    /// The assistant message right before the run.
    pub turn: &'m AssistantMessage,
    /// Each result with its index in `messages`.
    pub results: Vec<(usize, &'m ToolResult)>,
    /// The index after the run.
    pub end: usize,
}

/// The tool results from `messages[start]` on, for wires that answer every call of a turn in
/// one message (Anthropic, Gemini): they must follow the assistant message that made the calls.
/// `how` says where the wire answers them, for the error.
pub(crate) fn tool_result_run<'m>(
    messages: &'m [Message],
    start: usize,
    how: &str,
) -> Result<ToolResultRun<'m>> {
    let mut results = Vec::new();
    let mut end = start;
    while let Some(Message::Tool(r)) = messages.get(end) {
        results.push((end, r));
        end += 1;
    }
    match start.checked_sub(1).and_then(|p| messages.get(p)) {
        Some(Message::Assistant(turn)) if !turn.tool_calls.is_empty() => {
            Ok(ToolResultRun { turn, results, end })
        }
        _ => Err(Error::input(
            format!("messages[{start}]"),
            format!(
                "a tool result must come right after the assistant message whose call it \
                 answers ({how})"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(key: &str) -> bool {
        crate::providers::openai::openai_name(key)
    }

    #[test]
    fn finds_nested_bad_keys_with_their_path() {
        let schema = json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "address": {"type": "object", "properties": {"zip.code": {"type": "string"}}}
        }});
        assert_eq!(
            invalid_property_key(&schema, plain),
            Some((
                r#"properties.address.properties["zip.code"]"#.into(),
                "zip.code".into()
            ))
        );
        let schema = json!({"type": "object", "properties": {"stops": {"type": "array",
            "items": {"anyOf": [{"type": "object", "properties": {"名前": {}}}]}}}});
        assert_eq!(
            invalid_property_key(&schema, plain).map(|(_, k)| k),
            Some("名前".into())
        );
        let schema = json!({"$defs": {"a.b": {"type": "object", "properties": {"ok": {}}}},
            "patternProperties": {"^x.*$": {}}, "properties": {"properties": {"type": "object"}}});
        assert_eq!(invalid_property_key(&schema, plain), None);
    }

    #[test]
    fn deep_schemas_do_not_overflow() {
        let mut schema = json!({"type": "string"});
        for _ in 0..1_000 {
            schema = json!({"items": schema});
        }
        assert_eq!(invalid_property_key(&schema, plain), None);
    }
}
