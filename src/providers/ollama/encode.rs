//! The canonical request → an `/api/chat` body.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::settings::{
    Plan, Policy, ReasoningForm, ReasoningRule, SamplingNames, rule_for,
};
use crate::providers::shared::{
    check_tools, replay_arguments, request_names, tool_media_after_runs,
};
use crate::text_calls::TextCalls;
use crate::types::{
    AssistantMessage, ChatRequest, Content, Message, Part, Source, ToolCall, ToolChoice, ToolResult,
};

/// A user message from parts: the text parts joined in `content`, each image's raw base64 in
/// `images` (the message's only media field). An image by URL, a file or audio is refused:
/// `/api/chat` takes none of them. `at` names the message for errors.
fn user_parts(parts: &[Part], at: &str) -> Result<Value> {
    let mut text = String::new();
    let mut images = Vec::new();
    for (j, part) in parts.iter().enumerate() {
        match part {
            Part::Text { text: t } => text.push_str(t),
            Part::Image {
                source: Source::Data { data, .. },
            } => images.push(json!(data)),
            other => {
                let what = match other {
                    Part::Image { .. } => "an image by URL: ollama takes images as base64 only",
                    Part::File { .. } => "a file part: ollama's messages take text and images only",
                    _ => "an audio part: ollama's messages take text and images only",
                };
                return Err(Error::unsupported(
                    ProviderKind::Ollama,
                    format!("{at}.content[{j}]: {what}"),
                ));
            }
        }
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("user"));
    m.insert("content".into(), json!(text));
    if !images.is_empty() {
        m.insert("images".into(), Value::Array(images));
    }
    Ok(Value::Object(m))
}

/// A call's `arguments` object: its parsed arguments, `{}` when they are malformed or
/// truncated (Ollama takes only an object; a broken call never ran).
fn call_arguments(call: &ToolCall) -> Value {
    match (&call.error, &call.arguments) {
        (None, Some(v @ Value::Object(_))) => v.clone(),
        _ => serde_json::from_str(&replay_arguments(call)).unwrap_or_else(|_| json!({})),
    }
}

fn assistant(a: &AssistantMessage, names: &NameMap) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert("content".into(), json!(a.content.as_deref().unwrap_or("")));
    if let Some(thinking) = a.reasoning.as_deref().filter(|t| !t.is_empty()) {
        m.insert("thinking".into(), json!(thinking));
    }
    if !a.tool_calls.is_empty() {
        let calls: Vec<Value> = a
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let mut c = Map::new();
                if !call.has_synthetic_id() && !call.id.is_empty() {
                    c.insert("id".into(), json!(call.id));
                }
                c.insert(
                    "function".into(),
                    json!({"index": i, "name": names.wire(&call.name), "arguments": call_arguments(call)}),
                );
                Value::Object(c)
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// A `role: tool` message: the result as text (an error leads with its message, since the
/// wire has no error flag), the tool's name, and the call id when the model sent one.
fn tool(r: &ToolResult, synthetic: &HashMap<&str, bool>, names: &NameMap) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), json!("tool"));
    m.insert("content".into(), json!(r.content_text()));
    m.insert("tool_name".into(), json!(names.wire(&r.name)));
    if !synthetic.get(r.call_id.as_str()).copied().unwrap_or(false) && !r.call_id.is_empty() {
        m.insert("tool_call_id".into(), json!(r.call_id));
    }
    Value::Object(m)
}

/// The whole request.
pub(crate) fn encode(req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    // No hosted tools on this wire: each is refused by name (or left out and listed).
    let hosted_dropped = crate::providers::hosted_tools::place(ProviderKind::Ollama, req)?.dropped;
    if req.model.trim().is_empty() {
        return Err(Error::input("model", "the model name is empty"));
    }
    let send_tools = match &req.tool_choice.as_ref().map(ToolChoice::without_allowed) {
        None | Some(ToolChoice::Auto | ToolChoice::Allowed { .. }) => !req.tools.is_empty(),
        // No tool_choice on this wire: "none" is the tools left out.
        Some(ToolChoice::None) => false,
        Some(choice @ (ToolChoice::Required | ToolChoice::Tool(_))) => {
            return Err(Error::unsupported(
                ProviderKind::Ollama,
                format!(
                    "tool_choice {}: Ollama's /api/chat cannot force a tool call (only auto, or \
                     none by leaving the tools out)",
                    serde_json::to_string(choice).unwrap_or_default()
                ),
            ));
        }
    };
    // Any name goes on this wire but none: a call that came without one (never run) is sent
    // back named, as on every other wire, and its result names the same tool.
    let names = NameMap::build(request_names(req), |name: &str| !name.is_empty())?;
    // Which call ids toolwire minted: those are never sent.
    let synthetic: HashMap<&str, bool> = req
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.tool_calls.iter()),
            _ => None,
        })
        .flatten()
        .map(|c| (c.id.as_str(), c.has_synthetic_id()))
        .collect();
    // Tool messages take text only: a result's media goes in a user message after the run.
    let mut downgrades = Vec::new();
    // Calls another wire's provider ran go as text, each with a note.
    let turns = crate::providers::hosted::foreign_as_text(
        &req.messages,
        ProviderKind::Ollama.name(),
        &mut downgrades,
    );
    let moved = tool_media_after_runs(&req.messages, ProviderKind::Ollama.name(), &mut downgrades);
    let mut messages = Vec::with_capacity(req.messages.len() + moved.len());
    for (i, m) in turns.iter().enumerate() {
        messages.push(match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User {
                content: Content::Text(text),
            } => json!({"role": "user", "content": text}),
            Message::User {
                content: Content::Parts(parts),
            } => user_parts(parts, &format!("messages[{i}]"))?,
            Message::Assistant(a) => assistant(a, &names),
            Message::Tool(r) => tool(r, &synthetic, &names),
        });
        if let Some(parts) = moved.get(&i) {
            messages.push(user_parts(
                parts,
                &format!("messages[{i}] (tool result media)"),
            )?);
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    if send_tools {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("name".into(), json!(t.name));
                if !t.description.is_empty() {
                    f.insert("description".into(), json!(t.description));
                }
                f.insert("parameters".into(), t.parameters.clone());
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    // The server streams unless told otherwise, so the flag always goes out.
    body.insert("stream".into(), Value::Bool(stream));
    let mut policy = Policy::new(ProviderKind::Ollama, req)?;
    policy.tool_fields(&crate::providers::settings::ToolFields::NONE)?;
    let rule = rule_for(OLLAMA_REASONING, &req.model);
    match policy.reasoning(rule.map_or(ReasoningForm::Switch, |r| r.form))? {
        Plan::Default => {}
        Plan::Off => {
            body.insert("think".into(), Value::Bool(false));
        }
        Plan::Level(level) => {
            body.insert("think".into(), json!(level.as_str()));
        }
        _ => {
            body.insert("think".into(), Value::Bool(true));
        }
    }
    policy.no_summary()?;
    // Structured output: the schema itself is `format` (https://ollama.com/blog/structured-outputs).
    if let Some(format) = &req.response_format {
        body.insert("format".into(), format.schema.clone());
    }
    let mut options = Map::new();
    if let Some(t) = req.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(n) = req.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    policy.sampling(&OLLAMA_SAMPLING, rule, &mut options)?;
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    crate::providers::shared::merge_extra_body(&mut body, &req.extra_body);
    let text_calls = req.text_calls.map(|format| {
        let tools = req.tools.iter();
        TextCalls::new(
            format,
            tools.map(|t| (names.wire(&t.name).to_owned(), t.parameters.clone())),
        )
    });
    Ok(HttpRequest {
        path: "/api/chat".into(),
        headers: Vec::new(),
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted_dropped).collect(),
        text_calls,
    })
}

/// Where the sampling settings go: `options.top_p`, `top_k`, `stop`, `seed`,
/// `presence_penalty`, `frequency_penalty`
/// (<https://github.com/ollama/ollama/blob/main/docs/modelfile.md#valid-parameters-and-values>,
/// <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion>).
const OLLAMA_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("top_p"))
    .with_top_k(Some("top_k"))
    .with_stop(Some("stop"), None)
    .with_seed(Some("seed"))
    .with_presence_penalty(Some("presence_penalty"))
    .with_frequency_penalty(Some("frequency_penalty"));

/// Ollama's reasoning table: `think` is `true`/`false` for thinking models, and a level
/// (`"low"`, `"medium"`, `"high"`) for GPT-OSS, which cannot turn thinking off
/// (<https://docs.ollama.com/capabilities/thinking>). Other models take the switch; one
/// without thinking is refused by the server.
pub(super) const OLLAMA_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["gpt-oss"],
    ReasoningForm::Levels(&[
        crate::types::Effort::Low,
        crate::types::Effort::Medium,
        crate::types::Effort::High,
    ]),
    "https://docs.ollama.com/capabilities/thinking",
)];
