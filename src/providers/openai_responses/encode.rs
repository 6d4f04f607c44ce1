//! The canonical request → a `POST /responses` body.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{CUSTOM_FORMAT, CUSTOM_TOOL, ITEM_ID, REASONING_ITEMS};
use crate::error::Result;
use crate::provider::{HttpRequest, NameMap};
use crate::providers::openai::openai_name;
use crate::providers::shared::{check_tools, replay_arguments, request_names};
use crate::schema;
use crate::types::{AssistantMessage, ChatRequest, Message, ToolCall, ToolChoice, ToolDefinition};

/// The `format` of a custom (free-form) tool, when `tool` is one: the value of the
/// [`CUSTOM_FORMAT`] keyword at the root of its parameters schema.
pub(crate) fn custom_format(tool: &ToolDefinition) -> Option<&Value> {
    tool.parameters.get(CUSTOM_FORMAT)
}

/// A function tool (flat: no `function` wrapper, `strict` always sent because the API's
/// default differs from the canonical one), or a custom tool.
fn tool_json(tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut m = Map::new();
    let format = custom_format(tool);
    m.insert(
        "type".into(),
        json!(if format.is_some() {
            "custom"
        } else {
            "function"
        }),
    );
    m.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        m.insert("description".into(), json!(tool.description));
    }
    if let Some(format) = format {
        m.insert("format".into(), format.clone());
        return Value::Object(m);
    }
    m.insert("parameters".into(), parameters(tool));
    m.insert("strict".into(), json!(tool.strict));
    Value::Object(m)
}

/// The `parameters` a function tool sends: the strict-mode rewrite when strict.
pub(crate) fn parameters(tool: &ToolDefinition) -> Value {
    if tool.strict {
        schema::to_strict(&tool.parameters)
    } else {
        tool.parameters.clone()
    }
}

fn tool_choice_json(choice: &ToolChoice, req: &ChatRequest, names: &NameMap) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            let custom = req
                .tools
                .iter()
                .any(|t| &t.name == name && custom_format(t).is_some());
            let kind = if custom { "custom" } else { "function" };
            json!({"type": kind, "name": names.wire(name)})
        }
    }
}

/// The reasoning items kept in `extra` (verbatim objects), minus those that cannot be sent:
/// with `store: false` nothing was kept server-side, so an item without its
/// `encrypted_content` would be looked up by id and fail.
fn reasoning_items<'a>(
    extra: &'a Map<String, Value>,
    stateless: bool,
) -> impl Iterator<Item = &'a Value> + 'a {
    extra
        .get(REASONING_ITEMS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.is_object())
        .filter(move |item| {
            !stateless
                || item
                    .get("encrypted_content")
                    .is_some_and(|c| c.as_str().is_some_and(|s| !s.is_empty()))
        })
}

fn is_custom(call: &ToolCall) -> bool {
    call.extra.get(CUSTOM_TOOL) == Some(&Value::Bool(true))
}

/// A call as an input item: `function_call` (arguments replayed as received, or `{}` when
/// they were broken) or `custom_tool_call` (its `input`: the text the model wrote, which is
/// `raw_arguments` byte for byte), the item id echoed when known.
fn call_item(call: &ToolCall, names: &NameMap) -> Value {
    let mut m = Map::new();
    if is_custom(call) {
        let input = call.raw_arguments.as_str();
        m.insert("type".into(), json!("custom_tool_call"));
        m.insert("call_id".into(), json!(call.id));
        m.insert("name".into(), json!(names.wire(&call.name)));
        m.insert("input".into(), json!(input));
    } else {
        m.insert("type".into(), json!("function_call"));
        m.insert("call_id".into(), json!(call.id));
        m.insert("name".into(), json!(names.wire(&call.name)));
        m.insert("arguments".into(), json!(replay_arguments(call)));
    }
    if let Some(id) = call.extra.get(ITEM_ID).and_then(Value::as_str)
        && !id.is_empty()
    {
        m.insert("id".into(), json!(id));
    }
    Value::Object(m)
}

/// An assistant turn: reasoning items before the text, then each call preceded by its own
/// reasoning items, in the order the model produced them.
fn assistant_items(a: &AssistantMessage, names: &NameMap, stateless: bool, input: &mut Vec<Value>) {
    input.extend(reasoning_items(&a.extra, stateless).cloned());
    if let Some(text) = a.content.as_deref().filter(|t| !t.is_empty()) {
        input.push(json!({"role": "assistant", "content": text}));
    }
    for call in &a.tool_calls {
        input.extend(reasoning_items(&call.extra, stateless).cloned());
        input.push(call_item(call, names));
    }
}

/// The whole request body.
pub(crate) fn encode(req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    let names = NameMap::build(request_names(req), openai_name)?;
    let stateless = req.extra_body.get("store") == Some(&Value::Bool(false));
    let custom_calls: HashSet<&str> = req
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a),
            _ => None,
        })
        .flat_map(|a| &a.tool_calls)
        .filter(|c| is_custom(c))
        .map(|c| c.id.as_str())
        .collect();

    let mut instructions: Vec<&str> = Vec::new();
    let mut input = Vec::new();
    for m in &req.messages {
        match m {
            // Leading system messages are the instructions; a later one stays in place.
            Message::System { content } if input.is_empty() => instructions.push(content),
            Message::System { content } => {
                input.push(json!({"role": "system", "content": content}));
            }
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant(a) => assistant_items(a, &names, stateless, &mut input),
            Message::Tool(r) => {
                let kind = if custom_calls.contains(r.call_id.as_str()) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                input.push(json!({"type": kind, "call_id": r.call_id, "output": r.content_text()}));
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input));
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(|t| tool_json(t, &names)).collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(parallel) = req.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(choice) = &req.tool_choice {
        body.insert("tool_choice".into(), tool_choice_json(choice, req, &names));
    }
    if let Some(max) = req.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    match req.thinking {
        // Summaries are what the API shows of the reasoning; without them it stays hidden.
        Some(true) => {
            body.insert("reasoning".into(), json!({"summary": "auto"}));
        }
        Some(false) => {
            body.insert("reasoning".into(), json!({"effort": "none"}));
        }
        None => {}
    }
    if stateless {
        // Nothing is stored: the next turn needs the reasoning in the items themselves.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    for (k, v) in &req.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Ok(HttpRequest {
        path: "/responses".to_owned(),
        headers: Vec::new(),
        body: Value::Object(body),
        names,
        downgrades: Vec::new(),
    })
}
