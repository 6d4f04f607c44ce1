//! The canonical request → a DashScope native body:
//! `{"model", "input": {"messages"}, "parameters": {...}}`.

use serde_json::{Map, Value, json};

use super::Endpoint;
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::openai::openai_name;
use crate::providers::qwen::QWEN_REASONING;
use crate::providers::settings::{Plan, Policy, ReasoningForm, SamplingNames, rule_for};
use crate::providers::shared::{
    check_tools, history_call, json_schema_format, request_names, tool_media_after_runs,
};
use crate::types::{ChatRequest, Content, Message, Part, Source, ToolChoice, ToolDefinition};

/// The header that turns a generation request into an SSE stream.
pub(crate) const SSE_HEADER: (&str, &str) = ("X-DashScope-SSE", "enable");

/// Text as message content: a string on the text endpoint, `[{"text": …}]` on the multimodal
/// one (empty text is `[]`, as the multimodal endpoint sends it back).
fn content(text: &str, multimodal: bool) -> Value {
    if !multimodal {
        json!(text)
    } else if text.is_empty() {
        json!([])
    } else {
        json!([{ "text": text }])
    }
}

fn tool_json(tool: &ToolDefinition, names: &NameMap) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        function.insert("description".into(), json!(tool.description));
    }
    function.insert("parameters".into(), parameters(tool));
    json!({"type": "function", "function": function})
}

/// The `parameters` schema a tool is sent with: JSON Schema unchanged (DashScope has no strict
/// mode). Both `encode` and [`crate::Provider::encode_parameters`] use it.
pub(crate) fn parameters(tool: &ToolDefinition) -> Value {
    tool.parameters.clone()
}

/// One part on the multimodal endpoint: `{"text"}`, `{"image": <URL or data URL>}`,
/// `{"audio": <URL>}`; what the wire cannot carry is refused (`at` names the part).
fn part_json(part: &Part, at: &str) -> Result<Value> {
    let refuse = |why: &str| {
        Err(Error::unsupported(
            ProviderKind::DashScope,
            format!("{at}: {why}"),
        ))
    };
    match part {
        Part::Text { text } => Ok(json!({ "text": text })),
        Part::Image { source } => Ok(json!({ "image": source.as_url() })),
        Part::Audio {
            source: Source::Url { url, .. },
        } => Ok(json!({ "audio": url })),
        Part::Audio { .. } => refuse(
            "an audio part with inline data: dashscope takes audio by URL only ({\"audio\": url})",
        ),
        Part::File { .. } => refuse(
            "a file part: dashscope's messages take text, image, audio and video, no documents",
        ),
    }
}

/// Parts as a content array on the multimodal endpoint; on the text endpoint only text parts
/// (joined), media being refused: the text endpoint takes a string.
fn parts_json(parts: &[Part], at: &str, multimodal: bool) -> Result<Value> {
    if !multimodal {
        if let Some(j) = parts.iter().position(|p| p.source().is_some()) {
            return Err(Error::unsupported(
                ProviderKind::DashScope,
                format!(
                    "{at}.content[{j}]: a {} part on the text-generation endpoint, which takes \
                     text only; use a multimodal model (qwen-vl-*, qwen-audio-*) or \
                     DashScope::with_endpoint(Endpoint::Multimodal)",
                    parts[j].kind()
                ),
            ));
        }
        let text: String = parts.iter().filter_map(Part::as_text).collect();
        return Ok(content(&text, false));
    }
    parts
        .iter()
        .enumerate()
        .map(|(j, p)| part_json(p, &format!("{at}.content[{j}]")))
        .collect::<Result<Vec<_>>>()
        .map(Value::Array)
}

fn message_json(m: &Message, i: usize, names: &NameMap, multimodal: bool) -> Result<Value> {
    Ok(match m {
        Message::System { content: c } => {
            json!({"role": "system", "content": content(c, multimodal)})
        }
        Message::User {
            content: Content::Text(c),
        } => json!({"role": "user", "content": content(c, multimodal)}),
        Message::User {
            content: Content::Parts(parts),
        } => json!({
            "role": "user",
            "content": parts_json(parts, &format!("messages[{i}]"), multimodal)?,
        }),
        Message::Assistant(a) => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            msg.insert(
                "content".into(),
                content(a.content.as_deref().unwrap_or(""), multimodal),
            );
            if !a.tool_calls.is_empty() {
                let calls: Vec<Value> = a
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| history_call(c, names, Some(i)))
                    .collect();
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(msg)
        }
        // Text only: media in the result moved to a user message after the run.
        Message::Tool(r) => json!({
            "role": "tool",
            "content": content(&r.content_text(), multimodal),
            "tool_call_id": r.call_id,
        }),
    })
}

/// `response_format` in `parameters`: the answer schema as `json_schema` (non-thinking mode
/// only, as the structured-output page documents).
fn response_format_json(req: &ChatRequest) -> Result<Option<Value>> {
    let Some(format) = &req.response_format else {
        return Ok(None);
    };
    let thinking = req
        .extra_body
        .get("enable_thinking")
        .and_then(Value::as_bool)
        .or(req.thinking)
        .unwrap_or(false);
    if thinking {
        return Err(Error::unsupported(
            ProviderKind::DashScope,
            "response_format in thinking mode: dashscope documents structured output for \
             non-thinking mode only; turn thinking off",
        ));
    }
    let spec = json_schema_format(format, openai_name)?;
    Ok(Some(json!({"type": "json_schema", "json_schema": spec})))
}

fn tool_choice_json(choice: &ToolChoice, names: &NameMap) -> Value {
    match choice.without_allowed() {
        ToolChoice::Auto | ToolChoice::Allowed { .. } => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            json!({"type": "function", "function": {"name": names.wire(&name)}})
        }
    }
}

/// Thinking mode accepts only `auto` and `none`; DashScope answers 400 ("The tool_choice
/// parameter does not support being set to required or object in thinking mode") otherwise,
/// so the request is refused before it is sent.
fn check_thinking_choice(req: &ChatRequest) -> Result<()> {
    match (&req.thinking, &req.tool_choice) {
        (Some(true), Some(ToolChoice::Required | ToolChoice::Tool(_))) => Err(Error::unsupported(
            ProviderKind::DashScope,
            "tool_choice \"required\" or a named tool together with thinking: true \
             (DashScope accepts only auto or none in thinking mode)",
        )),
        _ => Ok(()),
    }
}

/// The whole request.
pub(crate) fn encode(req: &ChatRequest, stream: bool, endpoint: Endpoint) -> Result<HttpRequest> {
    check_tools(req)?;
    // No hosted tools on this wire: each is refused by name (or left out and listed).
    let hosted_dropped =
        crate::providers::hosted_tools::place(ProviderKind::DashScope, req)?.dropped;
    crate::providers::shared::refuse_text_calls(req, ProviderKind::DashScope)?;
    check_thinking_choice(req)?;
    let names = NameMap::build(request_names(req), openai_name)?;
    let multimodal = endpoint.is_multimodal(&req.model);
    let mut downgrades = Vec::new();
    // Calls another wire's provider ran go as text, each with a note.
    let turns = crate::providers::hosted::foreign_as_text(
        &req.messages,
        ProviderKind::DashScope.name(),
        &mut downgrades,
    );
    let moved = tool_media_after_runs(
        &req.messages,
        ProviderKind::DashScope.name(),
        &mut downgrades,
    );
    let mut messages = Vec::with_capacity(req.messages.len() + moved.len());
    for (i, m) in turns.iter().enumerate() {
        messages.push(message_json(m, i, &names, multimodal)?);
        if let Some(parts) = moved.get(&i) {
            let at = format!("messages[{i}] (tool result media)");
            messages.push(json!({"role": "user", "content": parts_json(parts, &at, multimodal)?}));
        }
    }

    let mut parameters = Map::new();
    parameters.insert("result_format".into(), json!("message"));
    if stream {
        // Always ask for deltas; the decoder still reads a cumulative stream.
        parameters.insert("incremental_output".into(), json!(true));
    }
    if !req.tools.is_empty() {
        parameters.insert(
            "tools".into(),
            Value::Array(req.tools.iter().map(|t| tool_json(t, &names)).collect()),
        );
    }
    if let Some(choice) = &req.tool_choice {
        parameters.insert("tool_choice".into(), tool_choice_json(choice, &names));
    }
    if let Some(parallel) = req.parallel_tool_calls
        && !req.tools.is_empty()
    {
        parameters.insert("parallel_tool_calls".into(), json!(parallel));
    }
    if let Some(max) = req.max_tokens {
        parameters.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        parameters.insert("temperature".into(), json!(t));
    }
    let mut policy = Policy::new(ProviderKind::DashScope, req)?;
    policy.tool_fields(&crate::providers::settings::ToolFields::NONE)?;
    let rule = rule_for(QWEN_REASONING, &req.model);
    policy.sampling(&DASHSCOPE_SAMPLING, rule, &mut parameters)?;
    match policy.reasoning(rule.map_or(ReasoningForm::Switch, |r| r.form))? {
        Plan::Default => {}
        Plan::Off => {
            parameters.insert("enable_thinking".into(), json!(false));
        }
        Plan::Budget(b) => {
            parameters.insert("enable_thinking".into(), json!(true));
            parameters.insert("thinking_budget".into(), json!(b));
        }
        _ => {
            parameters.insert("enable_thinking".into(), json!(true));
        }
    }
    policy.no_summary()?;
    if let Some(format) = response_format_json(req)? {
        parameters.insert("response_format".into(), format);
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("input".into(), json!({ "messages": messages }));
    // Every generation option lives in `parameters`; only `model` and `input` are top level.
    for (k, v) in &req.extra_body {
        match k.as_str() {
            "model" | "input" => body.insert(k.clone(), v.clone()),
            _ => parameters.insert(k.clone(), v.clone()),
        };
    }
    body.insert("parameters".into(), Value::Object(parameters));

    let headers = if stream {
        vec![(SSE_HEADER.0.to_owned(), SSE_HEADER.1.to_owned())]
    } else {
        Vec::new()
    };
    Ok(HttpRequest {
        path: endpoint.path(&req.model).to_owned(),
        headers,
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted_dropped).collect(),
        text_calls: None,
    })
}

/// Where the sampling settings go: `parameters.top_p`, `top_k`, `stop`, `seed`,
/// `presence_penalty`; no `frequency_penalty` (its `repetition_penalty` is another scale)
/// (<https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference>).
const DASHSCOPE_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("top_p"))
    .with_top_k(Some("top_k"))
    .with_stop(Some("stop"), None)
    .with_seed(Some("seed"))
    .with_presence_penalty(Some("presence_penalty"));
