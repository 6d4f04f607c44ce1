//! The canonical request → an Interactions `POST /v1beta/interactions` body.
//!
//! `input` is a list of steps: `user_input` (content blocks), the model's own steps sent back
//! (`thought`, `model_output`, `function_call`, server-tool steps) and `function_result`
//! steps answering calls by `call_id`. System messages become `system_instruction`; settings
//! go in `generation_config` (`tool_choice` included).

use serde_json::{Map, Value, json};

use super::{PREVIOUS_INTERACTION_ID, SIGNATURE, STEPS};
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::gemini::gemini_name;
use crate::providers::settings::{
    GEMINI_REASONING, Plan, Policy, ReasoningForm, SamplingNames, rule_for,
};
use crate::providers::shared::{
    Pairing, check_tools, encode_parts, merge_extra_body, refuse_text_calls, replay_arguments,
    request_names, tool_result_run,
};
use crate::schema;
use crate::types::{
    AssistantMessage, ChatRequest, Content, Effort, Message, Part, SchemaMode, Source, ToolCall,
    ToolChoice, ToolDefinition, ToolResult,
};

const KIND: ProviderKind = ProviderKind::GeminiInteractions;

/// The request path, streamed or not (`stream: true` goes in the body).
pub(crate) const PATH: &str = "/v1beta/interactions";

/// The `parameters` of a function tool: lowered as for Gemini's `generateContent` (`None` when
/// the tool takes none), or the JSON Schema unchanged in [`SchemaMode::JsonSchema`]. `path`
/// names the schema in errors.
pub(crate) fn parameters(
    tool: &ToolDefinition,
    mode: SchemaMode,
    path: &str,
) -> Result<Option<Value>> {
    match mode {
        SchemaMode::JsonSchema => Ok(Some(tool.parameters.clone())),
        SchemaMode::Lowered => schema::to_gemini(&tool.parameters, path),
    }
}

fn function_tool(
    tool: &ToolDefinition,
    index: usize,
    mode: SchemaMode,
    names: &NameMap,
) -> Result<Value> {
    let mut t = Map::new();
    t.insert("type".into(), json!("function"));
    t.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        t.insert("description".into(), json!(tool.description));
    }
    let path = format!("tools[{index}].parameters");
    let params = parameters(tool, mode, &path).map_err(|e| match e {
        Error::Input { path, message } => Error::Input {
            path,
            message: format!("tool {:?}: {message}", tool.name),
        },
        other => other,
    })?;
    if let Some(params) = params {
        t.insert("parameters".into(), params);
    }
    Ok(Value::Object(t))
}

/// `generation_config.tool_choice`: a mode, or the allowed tools for a named one.
fn tool_choice(choice: &ToolChoice, names: &NameMap) -> Value {
    match choice.without_allowed() {
        ToolChoice::Auto | ToolChoice::Allowed { .. } => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("any"),
        ToolChoice::Tool(name) => {
            json!({"allowed_tools": {"mode": "any", "tools": [names.wire(&name)]}})
        }
    }
}

/// The content block kind of a media part: by the part's kind, a file by its media type.
fn media_kind(part: &Part, media_type: Option<&str>) -> &'static str {
    match part {
        Part::Image { .. } => "image",
        Part::Audio { .. } => "audio",
        _ => match media_type.and_then(|m| m.split('/').next()) {
            Some("image") => "image",
            Some("audio") => "audio",
            Some("video") => "video",
            _ => "document",
        },
    }
}

/// One content part as an Interactions content block: `text`, or `image` / `audio` / `video` /
/// `document` with base64 `data` or a `uri`, and its `mime_type`.
fn content_block(part: &Part, _place: &str) -> Result<Value> {
    Ok(match part.source() {
        None => json!({"type": "text", "text": part.as_text().unwrap_or_default()}),
        Some(Source::Data { media_type, data }) => {
            json!({"type": media_kind(part, Some(media_type)), "data": data, "mime_type": media_type})
        }
        Some(Source::Url { url, media_type }) => {
            let mut m = Map::new();
            m.insert(
                "type".into(),
                json!(media_kind(part, media_type.as_deref())),
            );
            m.insert("uri".into(), json!(url));
            if let Some(media_type) = media_type {
                m.insert("mime_type".into(), json!(media_type));
            }
            Value::Object(m)
        }
    })
}

fn user_input(content: &Content, place: &str) -> Result<Value> {
    let blocks = match content {
        Content::Text(text) => vec![json!({"type": "text", "text": text})],
        Content::Parts(parts) => encode_parts(parts, place, content_block)?,
    };
    Ok(json!({"type": "user_input", "content": blocks}))
}

/// A call as a `function_call` step: its id, wire name, arguments object (`{}` for text that
/// is no complete object) and its own signature.
fn call_step(call: &ToolCall, names: &NameMap) -> Value {
    let arguments = serde_json::from_str::<Value>(&replay_arguments(call))
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let mut m = Map::new();
    m.insert("type".into(), json!("function_call"));
    m.insert("id".into(), json!(call.id));
    m.insert("name".into(), json!(names.wire(&call.name)));
    m.insert("arguments".into(), arguments);
    if let Some(sig) = call
        .extra
        .get(SIGNATURE)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        m.insert("signature".into(), json!(sig));
    }
    Value::Object(m)
}

fn output_step(text: &str) -> Value {
    json!({"type": "model_output", "content": [{"type": "text", "text": text}]})
}

/// The text of a `model_output` step's text blocks.
fn output_text(step: &Value) -> String {
    step.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// The model's steps for an assistant message. With the turn's [`STEPS`] (a response of this
/// wire pasted back), those go back verbatim in their order, each call and the text in their
/// places (the message's own calls and text: an edited text replaces the original's); calls
/// the steps do not place follow them. Without, the text and then the calls. Reasoning
/// without its thought step (another wire's) is not sent: the API takes thoughts back only
/// as the steps it signed.
pub(super) fn model_steps(a: &AssistantMessage, names: &NameMap, at: usize) -> Result<Vec<Value>> {
    let text = a.content.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    let mut placed = vec![false; a.tool_calls.len()];
    match a.extra.get(STEPS) {
        Some(Value::Array(steps)) => {
            let outputs: Vec<&Value> = steps
                .iter()
                .filter(|s| s.get("type").and_then(Value::as_str) == Some("model_output"))
                .collect();
            let original: String = outputs.iter().map(|s| output_text(s)).collect();
            let verbatim = original == text;
            let mut text_placed = false;
            for (j, step) in steps.iter().enumerate() {
                match step.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let id = step.get("id").and_then(Value::as_str).unwrap_or_default();
                        if let Some(k) = a
                            .tool_calls
                            .iter()
                            .enumerate()
                            .position(|(k, c)| !placed[k] && c.id == id)
                        {
                            placed[k] = true;
                            out.push(call_step(&a.tool_calls[k], names));
                        }
                    }
                    Some("model_output") if verbatim => out.push(step.clone()),
                    Some("model_output") => {
                        if !text_placed && !text.is_empty() {
                            out.push(output_step(text));
                        }
                        text_placed = true;
                    }
                    Some(_) => out.push(step.clone()),
                    None => {
                        return Err(Error::input(
                            format!("messages[{at}].{STEPS}[{j}]"),
                            "a step without a `type`",
                        ));
                    }
                }
            }
            if !text_placed && !verbatim && !text.is_empty() {
                out.push(output_step(text));
            }
        }
        Some(_) => {
            return Err(Error::input(
                format!("messages[{at}].{STEPS}"),
                "not a list of steps",
            ));
        }
        None => {
            if !text.is_empty() {
                out.push(output_step(text));
            }
        }
    }
    for (k, call) in a.tool_calls.iter().enumerate() {
        if !placed[k] {
            out.push(call_step(call, names));
        }
    }
    Ok(out)
}

/// How this wire pairs results with calls (by id).
const PAIRING: Pairing = Pairing {
    wire: "the Interactions API",
    call: "function_call",
    result: "function_result",
    same_name: false,
};

/// A tool result's `result`: its text as is, other JSON as its JSON text; a failure's message
/// (with the tool's detail, as `{"error", "output"}` JSON text, when there is some). With
/// content parts, a list of `text` and `image` blocks (the kinds a function result takes).
fn result_value(r: &ToolResult, at: usize) -> Result<Value> {
    let failed = r.is_error || r.error.is_some();
    let text = match (&r.output, failed) {
        (Value::String(s), false) => s.clone(),
        (Value::Null, false) => String::new(),
        (other, false) => other.to_string(),
        (Value::Null, true) => r
            .error
            .clone()
            .unwrap_or_else(|| "the tool call failed".to_owned()),
        (Value::String(s), true) if r.error.is_none() => s.clone(),
        (other, true) => json!({
            "error": r.error.clone().unwrap_or_else(|| "the tool call failed".to_owned()),
            "output": other,
        })
        .to_string(),
    };
    if r.content.is_empty() {
        return Ok(Value::String(text));
    }
    let mut blocks = Vec::new();
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for (j, part) in r.content.iter().enumerate() {
        let place = format!("messages[{at}].content[{j}]");
        match part {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { .. } | Part::Image { .. } => blocks.push(content_block(part, &place)?),
            other => {
                return Err(Error::unsupported(
                    KIND,
                    format!(
                        "the {} part in the tool result at {place}: Interactions function \
                         results take text and images",
                        other.kind()
                    ),
                ));
            }
        }
    }
    Ok(Value::Array(blocks))
}

fn result_step(call: &ToolCall, r: &ToolResult, names: &NameMap, at: usize) -> Result<Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("function_result"));
    m.insert("call_id".into(), json!(call.id));
    m.insert("name".into(), json!(names.wire(&call.name)));
    m.insert("result".into(), result_value(r, at)?);
    if r.is_error || r.error.is_some() {
        m.insert("is_error".into(), json!(true));
    }
    Ok(Value::Object(m))
}

/// `system_instruction` and the `input` steps of the messages from `from` on (earlier ones
/// are held by the server, with `previous_interaction_id`).
fn history(
    messages: &[Message],
    names: &NameMap,
    from: usize,
) -> Result<(Vec<String>, Vec<Value>)> {
    let mut system = Vec::new();
    let mut input = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::System { content } => system.push(content.clone()),
            Message::User { content } if i >= from => {
                input.push(user_input(content, &format!("messages[{i}].content"))?);
            }
            Message::Assistant(a) if i >= from => input.extend(model_steps(a, names, i)?),
            Message::Tool(_) => {
                let run = tool_result_run(
                    messages,
                    i,
                    "the Interactions API answers the calls of a turn after it",
                )?;
                for answer in run.paired(&PAIRING)? {
                    if answer.at >= from {
                        input.push(result_step(answer.call, answer.result, names, answer.at)?);
                    }
                }
                i = run.end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if input.is_empty() {
        return Err(Error::input(
            "messages",
            "the Interactions API needs at least one user, assistant or tool message to send \
             besides system messages",
        ));
    }
    Ok((system, input))
}

/// The whole request.
pub(crate) fn encode(
    req: &ChatRequest,
    stream: bool,
    default_mode: SchemaMode,
    store: bool,
) -> Result<HttpRequest> {
    check_tools(req)?;
    // No hosted tools on this wire: each is refused by name (or left out and listed).
    let hosted_dropped = crate::providers::hosted_tools::place(KIND, req)?.dropped;
    let mut fields = crate::providers::settings::Policy::new(KIND, req)?;
    fields.tool_fields(&crate::providers::settings::ToolFields::NONE)?;
    refuse_text_calls(req, KIND)?;
    if req.model.trim().is_empty() {
        return Err(Error::input("model", "the model name is empty"));
    }
    let names = NameMap::build(request_names(req), gemini_name)?;
    // Continuing a stored interaction: only what came after the last assistant turn is new.
    let from = match req.extra_body.get(PREVIOUS_INTERACTION_ID) {
        None | Some(Value::Null) => 0,
        Some(Value::String(id)) if !id.is_empty() => req
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant(_)))
            .map_or(0, |last| last + 1),
        Some(_) => {
            return Err(Error::input(
                format!("extra_body.{PREVIOUS_INTERACTION_ID}"),
                "must be a non-empty string (the previous answer's interaction_id)",
            ));
        }
    };
    // Calls another wire's provider ran go as text, each with a note.
    let mut downgrades = Vec::new();
    let turns = crate::providers::hosted::foreign_as_text(
        &req.messages,
        crate::provider::ProviderKind::GeminiInteractions.name(),
        &mut downgrades,
    );
    let (system, input) = history(&turns, &names, from)?;

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("input".into(), Value::Array(input));
    if !system.is_empty() {
        body.insert("system_instruction".into(), json!(system.join("\n\n")));
    }
    let mut generation = Map::new();
    if !req.tools.is_empty() {
        let mode = req.schema_mode.unwrap_or(default_mode);
        let tools = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| function_tool(t, i, mode, &names))
            .collect::<Result<Vec<_>>>()?;
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &req.tool_choice {
            generation.insert("tool_choice".into(), tool_choice(choice, &names));
        }
    } else if req.tool_choice == Some(ToolChoice::Required) {
        return Err(Error::input(
            "tool_choice",
            "tool_choice \"required\" needs at least one tool",
        ));
    }
    // The sampling and reasoning settings of the request, in `generation_config`'s names:
    // `temperature`, `max_output_tokens`, `top_p`, `seed`, `stop_sequences`, and reasoning as
    // `thinking_level` with `thinking_summaries` (Google's Interactions API reference,
    // <https://ai.google.dev/api/interactions-api>, `GenerationConfig`). It has no `top_k`,
    // no penalties, no thinking budget and no switch to turn thinking off: those follow the
    // drop policy.
    if let Some(t) = req.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(max) = req.max_tokens {
        generation.insert("max_output_tokens".into(), json!(max));
    }
    let mut policy = Policy::new(KIND, req)?;
    let rule = rule_for(GEMINI_REASONING, &req.model);
    policy.sampling(&INTERACTIONS_SAMPLING, rule, &mut generation)?;
    // A level wherever the model takes one; the levels of the model's row, else Gemini 3's.
    let levels = match rule.map(|r| r.form) {
        Some(ReasoningForm::Levels(levels)) => levels,
        _ => &[Effort::Low, Effort::High],
    };
    match policy.reasoning(ReasoningForm::Levels(levels))? {
        Plan::Level(level) => {
            generation.insert("thinking_level".into(), json!(level.as_str()));
            generation.insert("thinking_summaries".into(), json!("auto"));
        }
        Plan::On => {
            generation.insert("thinking_summaries".into(), json!("auto"));
        }
        _ => {}
    }
    policy.no_summary()?;
    if !generation.is_empty() {
        body.insert("generation_config".into(), Value::Object(generation));
    }
    if let Some(format) = &req.response_format {
        body.insert(
            "response_format".into(),
            json!([{"type": "text", "mime_type": "application/json", "schema": format.schema}]),
        );
    }
    body.insert("store".into(), json!(store));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    merge_extra_body(&mut body, &req.extra_body);
    let mut http = HttpRequest::new(PATH, Value::Object(body)).with_names(names);
    http.downgrades = downgrades;
    http.dropped = policy.dropped;
    http.dropped.extend(hosted_dropped);
    http.dropped.extend(fields.dropped);
    Ok(http)
}

/// Where the sampling settings go in `generation_config`: `top_p`, `seed`, `stop_sequences`
/// (Google's Interactions API reference, `GenerationConfig`).
const INTERACTIONS_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("top_p"))
    .with_stop(Some("stop_sequences"), None)
    .with_seed(Some("seed"));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolResult;

    fn turn() -> Vec<Message> {
        let call = ToolCall::new("c1", "get_weather", r#"{"city":"Oslo"}"#)
            .with_extra(SIGNATURE, json!("c2ln"));
        vec![
            Message::system("Be brief."),
            Message::user("Weather in Oslo?"),
            Message::Assistant(AssistantMessage::default().with_tool_calls([call.clone()])),
            Message::Tool(ToolResult::ok(&call, json!({"temp_c": 4}))),
        ]
    }

    #[test]
    fn history_with_a_call_and_its_result() {
        let req = ChatRequest::new("gemini-3-flash-preview", turn());
        let body = encode(&req, true, SchemaMode::Lowered, false).unwrap().body;
        assert_eq!(body["system_instruction"], "Be brief.");
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[0]["type"], "user_input");
        assert_eq!(
            input[1],
            json!({"type": "function_call", "id": "c1", "name": "get_weather",
                   "arguments": {"city": "Oslo"}, "signature": "c2ln"})
        );
        assert_eq!(
            input[2],
            json!({"type": "function_result", "call_id": "c1", "name": "get_weather",
                   "result": "{\"temp_c\":4}"})
        );
    }

    #[test]
    fn previous_interaction_id_sends_only_the_new_messages() {
        let mut req = ChatRequest::new("gemini-3-flash-preview", turn());
        req.extra_body
            .insert(PREVIOUS_INTERACTION_ID.into(), json!("v1_abc"));
        let body = encode(&req, false, SchemaMode::Lowered, true).unwrap().body;
        assert_eq!(body["previous_interaction_id"], "v1_abc");
        assert_eq!(body["store"], true);
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 1);
        assert_eq!(input[0]["type"], "function_result");
        assert_eq!(body["system_instruction"], "Be brief.");

        req.extra_body
            .insert(PREVIOUS_INTERACTION_ID.into(), json!(7));
        let err = encode(&req, false, SchemaMode::Lowered, true).unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err:?}");
    }

    #[test]
    fn kept_steps_go_back_in_order_with_the_call_in_its_place() {
        let call = ToolCall::new("c1", "f", "{}");
        let steps = json!([
            {"type": "thought", "signature": "dGhv"},
            {"type": "google_search_call", "id": "s1", "arguments": {"queries": ["q"]}},
            {"type": "google_search_result", "call_id": "s1", "result": []},
            {"type": "function_call", "id": "c1"}
        ]);
        let mut a = AssistantMessage::default().with_tool_calls([call]);
        a.extra.insert(STEPS.into(), steps.clone());
        let names = NameMap::default();
        let out = model_steps(&a, &names, 1).unwrap();
        let types: Vec<&str> = out.iter().map(|s| s["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "thought",
                "google_search_call",
                "google_search_result",
                "function_call"
            ]
        );
        assert_eq!(out[0], steps[0]);
        // An edited text takes the place of the original output.
        a.content = Some("new".into());
        let out = model_steps(&a, &names, 1).unwrap();
        assert_eq!(out.last().unwrap(), &output_step("new"));
    }
}
