//! The canonical request → a Chat Completions body.

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::error::Result;
use crate::provider::{HttpRequest, NameMap};
use crate::providers::shared::{check_tools, replay_arguments, request_names};
use crate::schema;
use crate::types::{ChatRequest, Message, ToolChoice, ToolDefinition};

pub(crate) fn tool_json(dialect: &Dialect, tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        function.insert("description".into(), json!(tool.description));
    }
    let parameters = if tool.strict {
        schema::to_strict(&tool.parameters)
    } else {
        tool.parameters.clone()
    };
    function.insert("parameters".into(), parameters);
    if tool.strict {
        function.insert("strict".into(), json!(true));
    }
    let _ = dialect;
    json!({"type": "function", "function": function})
}

fn message_json(dialect: &Dialect, m: &Message, names: &NameMap) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant(a) => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            msg.insert("content".into(), json!(a.content));
            if let (Some(field), Some(reasoning)) = (dialect.echo_reasoning, &a.reasoning)
                && !a.tool_calls.is_empty()
            {
                msg.insert(field.into(), json!(reasoning));
            }
            if !a.tool_calls.is_empty() {
                let calls: Vec<Value> = a
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": names.wire(&c.name), "arguments": replay_arguments(c)},
                        })
                    })
                    .collect();
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(msg)
        }
        Message::Tool(r) => json!({
            "role": "tool",
            "tool_call_id": r.call_id,
            "content": r.content_text(),
        }),
    }
}

pub(crate) fn tool_choice_json(choice: &ToolChoice, names: &NameMap) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            json!({"type": "function", "function": {"name": names.wire(name)}})
        }
    }
}

/// The whole request body.
pub(crate) fn encode(dialect: &Dialect, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    let names = NameMap::build(request_names(req), dialect.valid_name);
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "messages".into(),
        Value::Array(
            req.messages
                .iter()
                .map(|m| message_json(dialect, m, &names))
                .collect(),
        ),
    );
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(
                req.tools
                    .iter()
                    .map(|t| tool_json(dialect, t, &names))
                    .collect(),
            ),
        );
    }
    if let Some(choice) = &req.tool_choice {
        body.insert("tool_choice".into(), tool_choice_json(choice, &names));
    }
    if let Some(parallel) = req.parallel_tool_calls
        && !req.tools.is_empty()
    {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
    if let Some(max) = req.max_tokens {
        body.insert(dialect.max_tokens_field.into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        if dialect.stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    for (k, v) in &req.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Ok(HttpRequest {
        path: dialect.path.to_owned(),
        headers: Vec::new(),
        body: Value::Object(body),
        names,
    })
}
