//! Checks and policies every provider's encoder shares.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::provider::{Downgrade, ProviderKind};
use crate::types::{
    AssistantMessage, ChatRequest, Message, Part, ResponseFormat, ToolCall, ToolChoice, ToolResult,
    parse_arguments,
};
#[cfg(feature = "respond")]
use crate::types::{ChatResponse, StreamEvent};

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

/// What a provider's whole response body looks like, declared as data next to the provider
/// (its `BODY` constant) and collected by `providers::BUILTINS`: the foreign-body error asks
/// that table which API another body most likely is ([`foreign_body`]), so shared code lists
/// no provider.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyShape {
    /// How the error names this API when a body looks like it, with the top-level fields that
    /// give it away: "an Anthropic Messages body: `type: message`, `stop_reason`".
    pub(crate) api: &'static str,
    /// The fields the provider's own decoder looks for, as its foreign-body error lists them
    /// ("it has none of …").
    pub(crate) fields: &'static str,
    /// Which shape is tried first: lower first (the more telling shapes before the looser
    /// ones: Bedrock Converse's `output.message` before an `output` object alone).
    pub(crate) rank: u8,
    /// Whether a body's top-level object looks like this API's.
    pub(crate) looks: fn(&Map<String, Value>) -> bool,
}

/// What the foreign-body error says before the name of the API the body looks like.
const FOREIGN: &str = "likely another API's";

/// The error for a whole body that has none of `provider`'s body fields (`shape` names them):
/// most likely another API's answer replayed or served under the wrong provider (a Bedrock
/// Converse body read as `anthropic`). Never an empty success, so nothing in it is silently
/// lost. Which API it looks like is not known here: the turn reader asks the providers' table
/// and names it ([`name_foreign`]).
pub(crate) fn foreign_body(provider: ProviderKind, shape: &str) -> Error {
    foreign_named(provider, shape, None)
}

/// [`foreign_body`] naming the API the body looks like (`api`, from the providers' table).
pub(crate) fn foreign_named(provider: ProviderKind, shape: &str, api: Option<&str>) -> Error {
    let looks_like = api.map_or_else(String::new, |api| format!(" (it looks like {api})"));
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
            "not {article} {name} response body: {FOREIGN}{looks_like}; it has none of {shape} \
             (wrong provider?)"
        ),
    )
}

/// A whole-body decode error of `provider`, given that the body looks like `api` (an API the
/// provider does not speak, by the providers' table): a foreign-body error gets the API's
/// name; any other error of reading the body becomes the foreign-body error, with `shape`
/// (the provider's own fields, when the table has them), since the read most likely failed
/// because a field of the same name has another shape there.
pub(crate) fn name_foreign(error: Error, api: &str, shape: Option<&str>) -> Error {
    match error {
        Error::Decode {
            provider,
            what,
            message,
            partial,
        } if what.starts_with("response body") => {
            let at = format!("{FOREIGN};");
            if message.contains(&at) {
                let message =
                    message.replacen(&at, &format!("{FOREIGN} (it looks like {api});"), 1);
                return Error::Decode {
                    provider,
                    what,
                    message,
                    partial,
                };
            }
            match shape {
                Some(shape) => foreign_named(provider, shape, Some(api)),
                None => Error::Decode {
                    provider,
                    what,
                    message,
                    partial,
                },
            }
        }
        other => other,
    }
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

/// Refuses a request that asks for tool calls written as text to be recovered: only wires that
/// carry open models' raw answers (`openai` and compatible, `ollama`) read them.
pub(crate) fn refuse_text_calls(req: &ChatRequest, provider: ProviderKind) -> Result<()> {
    match req.text_calls {
        Some(format) => Err(Error::unsupported(
            provider,
            format!(
                "text_calls {format}: tool calls written as text are recovered on the openai \
                 (and compatible) and ollama wires only; {provider} returns calls as calls"
            ),
        )),
        None => Ok(()),
    }
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

/// How a wire that answers every call of a turn in one message names its blocks, for the
/// errors [`ToolResultRun::paired`] gives.
pub(crate) struct Pairing {
    /// The wire's name (`"Anthropic"`).
    pub wire: &'static str,
    /// Its call block (`"tool_use"`).
    pub call: &'static str,
    /// Its result block (`"tool_result"`).
    pub result: &'static str,
    /// The wire matches results to calls by name too, so a result must name its call's tool.
    pub same_name: bool,
}

/// One call of a turn with the result that answers it.
pub(crate) struct Answer<'m> {
    /// The call, from the assistant turn.
    pub call: &'m ToolCall,
    /// The result's index in `messages`.
    pub at: usize,
    /// The result.
    pub result: &'m ToolResult,
}

impl<'m> ToolResultRun<'m> {
    /// Each call of the turn with its one result, in call order: a result for a call the turn
    /// did not make, a second result for a call, or a call left without one is an input error
    /// naming the message.
    pub(crate) fn paired(&self, words: &Pairing) -> Result<Vec<Answer<'m>>> {
        let calls = &self.turn.tool_calls;
        let turn_at = self
            .results
            .first()
            .map_or(0, |&(at, _)| at.saturating_sub(1));
        let mut answers: Vec<Option<(usize, &'m ToolResult)>> = vec![None; calls.len()];
        for &(at, result) in &self.results {
            let Some(i) = calls.iter().position(|c| c.id == result.call_id) else {
                let known: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
                return Err(Error::input(
                    format!("messages[{at}].call_id"),
                    format!(
                        "the {:?} result answers call {:?}, which is not in the assistant turn \
                         at messages[{turn_at}] (its calls: {}); {} needs each {} in the \
                         message right after the turn with its {}",
                        result.name,
                        result.call_id,
                        known.join(", "),
                        words.wire,
                        words.result,
                        words.call,
                    ),
                ));
            };
            if answers[i].is_some() {
                return Err(Error::input(
                    format!("messages[{at}]"),
                    format!("a second result for call {:?}", result.call_id),
                ));
            }
            if words.same_name && result.name != calls[i].name {
                return Err(Error::input(
                    format!("messages[{at}].name"),
                    format!(
                        "the result names tool {:?} but call {:?} is {:?}",
                        result.name, result.call_id, calls[i].name
                    ),
                ));
            }
            answers[i] = Some((at, result));
        }
        let mut paired = Vec::with_capacity(calls.len());
        for (i, (call, answer)) in calls.iter().zip(answers).enumerate() {
            let Some((at, result)) = answer else {
                return Err(Error::input(
                    format!("messages[{turn_at}].tool_calls[{i}]"),
                    format!(
                        "call {:?} ({}) has no result; {} needs one {} for every {} of the turn",
                        call.id, call.name, words.wire, words.result, words.call
                    ),
                ));
            };
            paired.push(Answer { call, at, result });
        }
        Ok(paired)
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
    fn pairs_results_with_calls_or_names_the_message() {
        let words = Pairing {
            wire: "W",
            call: "call_block",
            result: "result_block",
            same_name: true,
        };
        let calls = [ToolCall::new("a", "f", "{}"), ToolCall::new("b", "g", "{}")];
        let turn = Message::Assistant(AssistantMessage::default().with_tool_calls(calls));
        let result = |id: &str, name: &str| Message::Tool(ToolResult::new(id, name, json!(1)));
        let check = |results: Vec<Message>| {
            let mut messages = vec![Message::user("hi"), turn.clone()];
            messages.extend(results);
            let run = tool_result_run(&messages, 2, "test")?;
            let paired = run.paired(&words)?;
            Ok::<_, Error>(
                paired
                    .iter()
                    .map(|a| (a.call.id.clone(), a.at))
                    .collect::<Vec<_>>(),
            )
        };
        // Call order, whatever the result order.
        assert_eq!(
            check(vec![result("b", "g"), result("a", "f")]).ok(),
            Some(vec![("a".into(), 3), ("b".into(), 2)])
        );
        let message = |r: Result<Vec<(String, usize)>>| r.err().map(|e| e.to_string());
        let unknown = message(check(vec![result("a", "f"), result("z", "g")])).unwrap_or_default();
        assert!(unknown.contains("messages[3].call_id") && unknown.contains("(its calls: a, b)"));
        let twice = message(check(vec![result("a", "f"), result("a", "f")])).unwrap_or_default();
        assert!(twice.contains("messages[3]") && twice.contains("a second result"));
        let missing = message(check(vec![result("a", "f")])).unwrap_or_default();
        assert!(missing.contains("messages[1].tool_calls[1]") && missing.contains("has no result"));
        let renamed = message(check(vec![result("a", "g"), result("b", "g")])).unwrap_or_default();
        assert!(renamed.contains("messages[2].name"), "{renamed}");
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

/// The gateway's side of request reading: the fields of one JSON object taken by name, so that
/// whatever is left at the end is a field the gateway does not translate, refused by name
/// rather than dropped.
#[cfg(feature = "respond")]
pub(crate) struct Fields {
    map: serde_json::Map<String, Value>,
    at: String,
}

#[cfg(feature = "respond")]
impl Fields {
    /// The fields of `value`, an object found at `at` (`""` for the body itself).
    pub(crate) fn of(value: Value, at: &str) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                at: at.to_owned(),
            }),
            other => Err(Error::input(
                if at.is_empty() { "body" } else { at },
                format!(
                    "must be a JSON object, got {}",
                    crate::types::json_kind(&other)
                ),
            )),
        }
    }

    /// The path of `key` inside this object.
    pub(crate) fn path(&self, key: &str) -> String {
        if self.at.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.at)
        }
    }

    /// Takes a field; `null` counts as absent.
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// Takes a field that must be there.
    pub(crate) fn need(&mut self, key: &str) -> Result<Value> {
        self.take(key)
            .ok_or_else(|| Error::input(self.path(key), "field required"))
    }

    /// Takes a string field.
    pub(crate) fn string(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.kind_error(key, "a string", &other)),
        }
    }

    /// Takes a boolean field.
    pub(crate) fn boolean(&mut self, key: &str) -> Result<Option<bool>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.kind_error(key, "a boolean", &other)),
        }
    }

    /// Takes a non-negative integer field that fits `u32`.
    pub(crate) fn count(&mut self, key: &str) -> Result<Option<u32>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.kind_error(key, "a non-negative integer", &v)),
        }
    }

    /// Takes a number field.
    pub(crate) fn number(&mut self, key: &str) -> Result<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.kind_error(key, "a number", &v)),
        }
    }

    /// Takes an integer field that fits `i64`.
    pub(crate) fn integer(&mut self, key: &str) -> Result<Option<i64>> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.kind_error(key, "an integer", &v)),
        }
    }

    /// Takes a field that is a string or an array of strings (`stop`), as a list.
    pub(crate) fn strings(&mut self, key: &str) -> Result<Vec<String>> {
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s]),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s),
                    other => Err(self.kind_error(&format!("{key}[{i}]"), "a string", &other)),
                })
                .collect(),
            Some(other) => Err(self.kind_error(key, "a string or an array of strings", &other)),
        }
    }

    /// Takes a reasoning effort (`reasoning_effort`, `output_config.effort`,
    /// `reasoning.effort`): one of the canonical levels, named by the field on error.
    pub(crate) fn effort(&mut self, key: &str) -> Result<Option<crate::types::Effort>> {
        match self.string(key)? {
            None => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                Error::input(
                    self.path(key),
                    format!("{s:?}: expected none, minimal, low, medium, high, xhigh or max"),
                )
            }),
        }
    }

    /// Takes an output verbosity (`verbosity`, `text.verbosity`): only the default, `medium`,
    /// is taken, since no other wire carries one; another value is refused by name.
    pub(crate) fn verbosity(&mut self, key: &str) -> Result<()> {
        // A hint of the answer's length (OpenAI's `verbosity`, gpt-5 and later): across wires
        // it is left out; the same wire passes it as sent.
        match self.string(key)?.as_deref() {
            None | Some("low" | "medium" | "high") => Ok(()),
            Some(other) => Err(Error::input(
                self.path(key),
                format!("{}: expected low, medium or high", other.shown()),
            )),
        }
    }

    /// Takes an array field.
    pub(crate) fn array(&mut self, key: &str) -> Result<Option<Vec<Value>>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.kind_error(key, "an array", &other)),
        }
    }

    /// Drops a field that changes nothing in the answer (a client's own label), whatever its
    /// value.
    pub(crate) fn ignore(&mut self, key: &str) {
        self.map.remove(key);
    }

    fn kind_error(&self, key: &str, want: &str, got: &Value) -> Error {
        Error::input(
            self.path(key),
            format!("must be {want}, got {}", crate::types::json_kind(got)),
        )
    }

    /// Ends reading: a field left over is one the gateway does not translate, refused by name.
    pub(crate) fn finish(self) -> Result<()> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(Error::input(
                self.path(key),
                "unknown or unsupported field: the gateway translates every field it accepts \
                 and drops none, so it refuses this one",
            )),
        }
    }
}

/// Key, in the provider data a call id carries, of the turn's own provider data (folded into
/// the first call's id by [`CallGate::rest`]); reading the id back puts it on the assistant
/// message ([`uncarry_turn`]).
#[cfg(feature = "respond")]
pub(crate) const TURN_STATE: &str = "toolwire_turn";

/// Moves the turn's provider data a call id carried ([`TURN_STATE`]) from the call's `extra`
/// onto the assistant message's.
#[cfg(feature = "respond")]
pub(crate) fn uncarry_turn(call: &mut ToolCall, message: &mut AssistantMessage) {
    if let Some(Value::Object(state)) = call.extra.remove(TURN_STATE) {
        for (k, v) in state {
            message.extra.entry(k).or_insert(v);
        }
    }
}

/// The calls of a whole answer as a client sees them: the turn's own provider data folded
/// into the first call's `extra` under [`TURN_STATE`], as [`CallGate::rest`] does for streams.
#[cfg(feature = "respond")]
pub(crate) fn fold_turn(response: &ChatResponse) -> Vec<ToolCall> {
    let mut calls = response.tool_calls.clone();
    if let Some(first) = calls.first_mut()
        && !response.extra.is_empty()
    {
        first
            .extra
            .insert(TURN_STATE.into(), Value::Object(response.extra.clone()));
    }
    calls
}

/// A translated answer as a client wire may write it, so that a malformed or truncated
/// upstream call never reaches a client as a runnable one, and the finish reason is one the
/// client wire documents:
///
/// - with `raw_text` (the wire carries a call's arguments as text: Chat Completions, Responses)
///   every call stays, its raw text as sent; the turn ends `Length` when a call was cut short,
///   else `ToolCalls` (never `Stop` with a malformed call present);
/// - without (Messages: `input` is an object) a call that is not complete is left out (its
///   raw text has no place; an `input: {}` would run the tool with arguments the model never
///   gave), the turn ending `Length` when one was cut short, else `ToolCalls` when complete
///   calls remain, else `Stop`; the text stays.
#[cfg(feature = "respond")]
pub(crate) fn settled(
    response: &ChatResponse,
    raw_text: bool,
) -> std::borrow::Cow<'_, ChatResponse> {
    use crate::types::{ArgumentsErrorKind, FinishReason};
    use std::borrow::Cow;
    let bad = |c: &ToolCall| !c.is_complete() && !c.is_free_form();
    let cut = |c: &ToolCall| {
        c.error
            .as_ref()
            .is_some_and(|e| e.kind == ArgumentsErrorKind::Truncated)
    };
    if !response.tool_calls.iter().any(bad) {
        return Cow::Borrowed(response);
    }
    let mut r = response.clone();
    let truncated = r.tool_calls.iter().any(|c| bad(c) && cut(c));
    if !raw_text {
        r.tool_calls.retain(|c| !bad(c));
    }
    r.finish_reason = if truncated || response.finish_reason == FinishReason::Length {
        FinishReason::Length
    } else if !r.tool_calls.is_empty() {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    r.raw_finish_reason = None;
    Cow::Owned(r)
}

/// Whether a translated answer holds a call that is not complete (malformed or cut short).
#[cfg(feature = "respond")]
pub(crate) fn has_bad_call(response: &ChatResponse) -> bool {
    response
        .tool_calls
        .iter()
        .any(|c| !c.is_complete() && !c.is_free_form())
}

/// The separator between a call id as the upstream sent it and its sealed state: outside
/// hex, inside Anthropic's `tool_use` id alphabet (`^[a-zA-Z0-9_-]+$`).
#[cfg(feature = "respond")]
pub(crate) const SEP: &str = "_tw2_";

/// The separator of the old, unauthenticated form (refused on reading).
#[cfg(feature = "respond")]
const OLD_SEP: &str = ".tw1.";

/// Key, in the provider data of a call or a turn read by a gateway reader, of a sealed state
/// not yet opened (`{"at", "kind", "head", "packed"}`), opened by
/// [`super::seal::open_request`] once the whole request is read.
#[cfg(feature = "respond")]
pub(crate) const SEALED: &str = "toolwire_sealed";

/// The id a gateway client sees for `call`: the upstream's id, plus the call's provider data
/// (a Gemini thought signature, a Responses item id) when it has any, sealed with `seal`
/// (`<id>_tw2_<hex of the JSON><hex of the tag>`, only `[A-Za-z0-9_-]`) so that the client's
/// echo of the id brings the data back on the next turn ([`uncarry_id`]). Without a seal the
/// data is not handed out. An upstream id that itself holds [`SEP`] is always packed, so that
/// it reads back as itself.
#[cfg(feature = "respond")]
pub(crate) fn carry_id(call: &ToolCall, seal: Option<&crate::seal::Seal>) -> String {
    carry(&call.id, &call.extra, seal)
}

/// [`carry_id`] of an id and provider data not yet on a final call (a call opened as it
/// starts, [`CallGate`]).
#[cfg(feature = "respond")]
fn carry(id: &str, extra: &Map<String, Value>, seal: Option<&crate::seal::Seal>) -> String {
    match seal {
        Some(seal) if !extra.is_empty() || id.contains(SEP) => {
            format!("{id}{SEP}{}", seal.pack("id", id, extra))
        }
        _ => id.to_owned(),
    }
}

/// The upstream's id of an id made by [`carry_id`] (split at the last [`SEP`]: hex has no
/// `_`), and its sealed state not yet opened, under [`SEALED`] ([`pending`]); an id without
/// carried data comes back as it is. The old unsealed form is refused. `at` names the field.
#[cfg(feature = "respond")]
pub(crate) fn uncarry_id(id: &str, at: &str) -> Result<(String, serde_json::Map<String, Value>)> {
    if id.contains(OLD_SEP) {
        return Err(Error::input(
            at,
            "this call id carries provider state in the old unsealed form (`.tw1.`), which the \
             gateway no longer accepts: start the conversation again from its last user turn",
        ));
    }
    let Some((head, packed)) = id.rsplit_once(SEP) else {
        return Ok((id.to_owned(), serde_json::Map::new()));
    };
    let mut extra = serde_json::Map::new();
    extra.insert(SEALED.into(), pending(at, "id", head, packed));
    Ok((head.to_owned(), extra))
}

/// `m` with only `keys`, each a value `ok` accepts; `None` when one of `required` is missing.
#[cfg(feature = "respond")]
pub(crate) fn only(
    m: &Map<String, Value>,
    keys: &[&str],
    required: &[&str],
    ok: fn(&str, &Value) -> bool,
) -> Option<Value> {
    let mut out = Map::new();
    for k in keys {
        if let Some(v) = m.get(*k).filter(|v| ok(k, v)) {
            out.insert((*k).to_owned(), v.clone());
        }
    }
    required
        .iter()
        .all(|k| out.contains_key(*k))
        .then_some(Value::Object(out))
}

/// A sealed state not yet opened: the field it came in, what it is (`id` or `item`), the id
/// it rides on, and the packed text.
#[cfg(feature = "respond")]
pub(crate) fn pending(at: &str, kind: &str, head: &str, packed: &str) -> Value {
    serde_json::json!({"at": at, "kind": kind, "head": head, "packed": packed})
}

#[cfg(feature = "respond")]
const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding.
#[cfg(feature = "respond")]
pub(crate) fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// Standard base64 with padding (what a `data:` source holds).
#[cfg(feature = "respond")]
pub(crate) fn base64_standard(bytes: &[u8]) -> String {
    let mut out: String = base64url(bytes)
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// The inverse of [`base64url`] (tests); `None` for a character outside the alphabet or a
/// length no encoding has.
#[cfg(all(test, feature = "respond"))]
pub(crate) fn unbase64url(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0_u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = B64.iter().position(|b| b == c)?;
            n |= (v as u32) << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push(((n >> (16 - 8 * i)) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(all(test, feature = "respond"))]
mod carry_tests {
    use super::*;

    #[test]
    fn base64url_round_trips_every_length() {
        for len in 0..40_u8 {
            let bytes: Vec<u8> = (0..len)
                .map(|i| i.wrapping_mul(37).wrapping_add(200))
                .collect();
            let text = base64url(&bytes);
            assert!(!text.contains(['=', '+', '/', '.']), "{text}");
            assert_eq!(unbase64url(&text), Some(bytes));
        }
        assert_eq!(base64url(b"hello"), "aGVsbG8");
        assert_eq!(unbase64url("a"), None);
        assert_eq!(unbase64url("a*bc"), None);
    }

    #[test]
    fn ids_carry_provider_state_both_ways() {
        let seal = crate::seal::Seal::new([7_u8; 32]).unwrap();
        let mut call = ToolCall::new("call_1", "f", "{}");
        assert_eq!(carry_id(&call, Some(&seal)), "call_1");
        call.extra
            .insert("thought_signature".into(), Value::String("c2ln".into()));
        let id = carry_id(&call, Some(&seal));
        assert!(id.starts_with("call_1_tw2_"), "{id}");
        let (back, _) = uncarry_id(&id, "x").unwrap();
        assert_eq!(back, "call_1");
        assert_eq!(uncarry_id("plain", "x").unwrap().0, "plain");
        let err = uncarry_id("call_1.tw1.!!", "messages[1]").unwrap_err();
        assert!(err.to_string().contains("messages[1]"), "{err}");
    }
}

/// What a gateway writer sends for the calls of a live stream, decided by [`CallGate`].
#[cfg(feature = "respond")]
#[derive(Debug)]
pub(crate) enum CallOut {
    /// Open the call at wire position `slot`: its id as the client sees it ([`carry_id`] when
    /// the call is already complete), its name, and the argument text that arrived while it
    /// was held.
    Open {
        slot: usize,
        id: String,
        name: String,
        arguments: String,
    },
    /// More argument text for an open call.
    Arguments { slot: usize, fragment: String },
    /// The call is final.
    Done { call: ToolCall },
}

#[cfg(feature = "respond")]
#[derive(Debug, Default)]
struct Held {
    id: Option<String>,
    name: String,
    fragments: String,
    /// Held until the turn ends: its provider state (a thinking signature) may be known only
    /// then.
    wait: bool,
    /// The provider state the decoder announced at the call's start
    /// ([`StreamEvent::CallState`]): the call's own, and the turn's so far.
    state: Option<(Map<String, Value>, Map<String, Value>)>,
    complete: Option<ToolCall>,
}

/// When a gateway writer opens each call of a live stream. A call is opened at the end of the
/// batch of events it started in (so a call that arrives whole, as Gemini's do, goes out with
/// its final id and provider state). After reasoning, the call's id must carry the reasoning's
/// provider state (a thinking signature, a redacted block, a reasoning item): a decoder that
/// announces that state at the call's start ([`StreamEvent::CallState`]: Anthropic, Bedrock,
/// Responses) lets the call open then, its id sealed from that state exactly as [`carry_id`]
/// seals a final call's. A call is held until the turn ends only when that state cannot be
/// known at its start: after reasoning on a wire whose decoder announces no state (the state
/// then lives in the final response only), or when its upstream id is not known yet (minted
/// at the end, and the sealed state is bound to it). Argument text of an open call goes out as
/// it arrives.
#[cfg(feature = "respond")]
#[derive(Debug, Default)]
pub(crate) struct CallGate {
    /// The key sealing the state on call ids ([`carry_id`]).
    seal: Option<crate::seal::Seal>,
    opened: std::collections::HashMap<usize, usize>,
    held: std::collections::BTreeMap<usize, Held>,
    reasoning: bool,
    /// Whether the turn's provider state rides in the first call's id ([`TURN_STATE`]).
    fold: bool,
    /// Native: the writer speaks as the provider itself (the mock), so each call opens as it
    /// starts, under its own id, and nothing is held or carried.
    native: bool,
}

#[cfg(feature = "respond")]
impl CallGate {
    /// A gate whose call ids carry their state sealed with `seal`.
    pub(crate) fn sealed(seal: Option<&crate::seal::Seal>) -> Self {
        Self {
            seal: seal.cloned(),
            ..Self::default()
        }
    }

    /// The gate of a writer speaking as the provider itself (the mock's streams): each call
    /// opens as it starts, under the id it started with (empty when it has none), and its
    /// argument text follows as it arrives; no call is held and no id carries state.
    pub(crate) fn native() -> Self {
        Self {
            native: true,
            ..Self::default()
        }
    }

    /// The same gate, the turn's provider state riding in the first call's id under
    /// [`TURN_STATE`] (a wire with no other place the client echoes it).
    pub(crate) fn folding(mut self) -> Self {
        self.fold = true;
        self
    }

    /// Notes reasoning in the turn: calls after it are held until complete, unless their
    /// decoder announces their state ([`StreamEvent::CallState`]).
    pub(crate) fn reasoning(&mut self) {
        self.reasoning = true;
    }

    /// Takes one call event (others are ignored).
    pub(crate) fn event(&mut self, event: &StreamEvent, emit: &mut Vec<CallOut>) {
        match event {
            StreamEvent::ToolCallStarted { index, id, name }
                if self.native && !self.opened.contains_key(index) =>
            {
                let slot = self.opened.len();
                self.opened.insert(*index, slot);
                emit.push(CallOut::Open {
                    slot,
                    id: id.clone().unwrap_or_default(),
                    name: name.clone(),
                    arguments: String::new(),
                });
            }
            StreamEvent::ToolCallStarted { index, id, name }
                if !self.opened.contains_key(index) =>
            {
                let wait = self.reasoning;
                let held = self.held.entry(*index).or_default();
                held.id.clone_from(id);
                held.name.clone_from(name);
                held.wait = wait;
            }
            StreamEvent::CallState { index, call, turn } => {
                if let Some(held) = self.held.get_mut(index) {
                    held.state = Some((call.clone(), turn.clone()));
                }
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                if let Some(held) = self.held.get_mut(index) {
                    held.fragments.push_str(fragment);
                } else if let Some(slot) = self.opened.get(index) {
                    emit.push(CallOut::Arguments {
                        slot: *slot,
                        fragment: fragment.clone(),
                    });
                }
            }
            StreamEvent::ToolCallComplete { index, call } => {
                if self.opened.contains_key(index) {
                    emit.push(CallOut::Done { call: call.clone() });
                } else {
                    let held = self.held.entry(*index).or_default();
                    held.complete = Some(call.clone());
                }
            }
            _ => {}
        }
    }

    fn open(&mut self, index: usize, held: Held, emit: &mut Vec<CallOut>) {
        let slot = self.opened.len();
        self.opened.insert(index, slot);
        // The turn's state known at the call's start rides on the first call opened.
        let turn = match &held.state {
            Some((_, turn)) if self.fold && slot == 0 && !turn.is_empty() => {
                Some(Value::Object(turn.clone()))
            }
            _ => None,
        };
        match held.complete {
            Some(mut call) => {
                if let Some(turn) = turn {
                    call.extra.entry(TURN_STATE).or_insert(turn);
                }
                let id = if self.native {
                    call.id.clone()
                } else {
                    carry_id(&call, self.seal.as_ref())
                };
                emit.push(CallOut::Open {
                    slot,
                    id,
                    name: call.name.clone(),
                    arguments: call.raw_arguments.clone(),
                });
                emit.push(CallOut::Done { call });
            }
            None => {
                let id = held.id.unwrap_or_default();
                let id = match held.state {
                    Some((mut extra, _)) => {
                        if let Some(turn) = turn {
                            extra.insert(TURN_STATE.into(), turn);
                        }
                        carry(&id, &extra, self.seal.as_ref())
                    }
                    None => id,
                };
                emit.push(CallOut::Open {
                    slot,
                    id,
                    name: held.name,
                    arguments: held.fragments,
                });
            }
        }
    }

    /// The end of a batch: opens the calls that may go out (see [`CallGate`]).
    pub(crate) fn flush(&mut self, emit: &mut Vec<CallOut>) {
        let ready: Vec<usize> = self
            .held
            .iter()
            .filter(|(_, h)| {
                !h.wait || h.state.is_some() && (h.id.is_some() || h.complete.is_some())
            })
            .map(|(i, _)| *i)
            .collect();
        for index in ready {
            if let Some(held) = self.held.remove(&index) {
                self.open(index, held, emit);
            }
        }
    }

    /// The end of the turn: opens every call not yet shown, from the final response. With
    /// `fold`, the turn's own provider state (the response's `extra`: Anthropic's opening
    /// thinking blocks, Responses' reasoning items before the text) rides in the first call's
    /// id under [`TURN_STATE`], when that call was still held: a wire with no other place the
    /// client echoes.
    pub(crate) fn rest(&mut self, response: &ChatResponse, fold: bool, emit: &mut Vec<CallOut>) {
        let mut state = (fold && !response.extra.is_empty() && self.opened.is_empty())
            .then(|| Value::Object(response.extra.clone()));
        for (index, call) in response.tool_calls.iter().enumerate() {
            if self.opened.contains_key(&index) {
                continue;
            }
            let mut held = self.held.remove(&index).unwrap_or_default();
            let mut call = call.clone();
            if let Some(state) = state.take() {
                call.extra.insert(TURN_STATE.into(), state);
            }
            held.complete = Some(call);
            self.open(index, held, emit);
        }
        let left: Vec<usize> = self.held.keys().copied().collect();
        for index in left {
            if let Some(held) = self.held.remove(&index) {
                self.open(index, held, emit);
            }
        }
    }
}

/// A value as an error message names it: a string quoted as JSON would (`"custom"`), an
/// absent one as `missing` (never Rust's `Some("custom")`).
#[cfg(feature = "respond")]
pub(crate) trait Shown {
    /// The value as an error message shows it.
    fn shown(&self) -> String;
}

#[cfg(feature = "respond")]
impl Shown for Option<&str> {
    fn shown(&self) -> String {
        self.map_or_else(|| "missing".to_owned(), |s| s.shown())
    }
}

#[cfg(feature = "respond")]
impl Shown for &str {
    fn shown(&self) -> String {
        serde_json::Value::String((*self).to_owned()).to_string()
    }
}

#[cfg(feature = "respond")]
impl Shown for String {
    fn shown(&self) -> String {
        self.as_str().shown()
    }
}
