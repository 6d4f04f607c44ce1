//! The canonical request → a `POST /responses` body.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{CUSTOM_FORMAT, CUSTOM_TOOL, ITEM_ID, REASONING_ITEMS};
use crate::providers::hosted::{Piece, foreign_as_text, interleave};

const KIND: ProviderKind = ProviderKind::OpenAiResponses;
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::openai::openai_name;
use crate::providers::settings::{
    OPENAI_EFFORTS, OPENAI_REASONING, Plan, Policy, ReasoningForm, SamplingNames, rule_for,
};
use crate::providers::shared::{
    check_tools, encode_parts, json_schema_format, replay_arguments, request_names,
};
use crate::schema;
use crate::types::{
    AssistantMessage, ChatRequest, Content, Effort, Message, Part, ResponseFormat, Source,
    ToolCall, ToolChoice, ToolDefinition, ToolResult,
};

/// Image media types the API takes inline (images and vision guide).
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// One content part as a Responses input content item: `input_text`; `input_image` with its
/// URL or a `data:` URL and `detail: "auto"` (the documented default, written out because the
/// API reference lists the field as required); `input_file` with `filename` and `file_data` (a
/// `data:` URL) or `file_url`. Audio is refused: the Responses API takes no audio input.
/// `place` names the part in errors.
fn input_part(part: &Part, place: &str) -> Result<Value> {
    match part {
        Part::Text { text } => Ok(json!({"type": "input_text", "text": text})),
        Part::Image { source } => {
            if let Source::Data { media_type, .. } = source
                && !IMAGE_TYPES.contains(&media_type.as_str())
            {
                return Err(Error::unsupported(
                    ProviderKind::OpenAiResponses,
                    format!(
                        "an image of type {media_type:?} at {place}: the Responses API takes {}",
                        IMAGE_TYPES.join(", ")
                    ),
                ));
            }
            Ok(json!({"type": "input_image", "image_url": source.as_url(), "detail": "auto"}))
        }
        Part::File { source, filename } => match source {
            Source::Data { .. } => {
                let Some(name) = filename.as_deref().filter(|n| !n.is_empty()) else {
                    return Err(Error::input(
                        place,
                        "a file given as data needs its filename: the Responses API's \
                         input_file sends file_data with a filename",
                    ));
                };
                Ok(json!({"type": "input_file", "filename": name, "file_data": source.as_url()}))
            }
            Source::Url { url, .. } => Ok(json!({"type": "input_file", "file_url": url})),
        },
        Part::Audio { .. } => Err(Error::unsupported(
            ProviderKind::OpenAiResponses,
            format!("audio at {place}: the Responses API takes no audio input"),
        )),
    }
}

/// The content items of a list of parts; empty text parts are left out (they carry nothing).
fn input_parts(parts: &[Part], place: &str) -> Result<Vec<Value>> {
    encode_parts(parts, place, input_part)
}

/// A result's `output`: with `content`, a list of content items (after an `input_text` with
/// the failure, if any) — what the model sees; without, the result as text, as before.
fn result_output(r: &ToolResult, at: usize) -> Result<Value> {
    if r.content.is_empty() {
        return Ok(json!(r.content_text()));
    }
    let mut items = Vec::new();
    if r.is_error || r.error.is_some() {
        let text = match r.error.as_deref().filter(|m| !m.is_empty()) {
            Some(message) => format!("Error: {message}"),
            None => "Error".to_owned(),
        };
        items.push(json!({"type": "input_text", "text": text}));
    }
    items.extend(input_parts(&r.content, &format!("messages[{at}].content"))?);
    Ok(Value::Array(items))
}

/// `text.format` for structured output: `{"type": "json_schema", "name", "description"?,
/// "schema", "strict"?}`; a strict format's schema gets the same rewrite as a strict tool's.
fn text_format(format: &ResponseFormat) -> Result<Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("json_schema"));
    m.extend(json_schema_format(format, openai_name)?);
    Ok(json!({"format": m}))
}

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
    if tool.defer_loading {
        m.insert("defer_loading".into(), Value::Bool(true));
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
    let kind_of = |name: &str| {
        if req
            .tools
            .iter()
            .any(|t| t.name == name && custom_format(t).is_some())
        {
            "custom"
        } else {
            "function"
        }
    };
    match choice {
        ToolChoice::Allowed { mode, tools } => {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({"type": kind_of(t), "name": names.wire(t)}))
                .collect();
            json!({"type": "allowed_tools", "mode": mode.as_str(), "tools": tools})
        }
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
    // Text, with the hosted items OpenAI sent (only its own: `encode` turned other wires'
    // calls into text) back in their places, verbatim: with `store: false` they are the
    // history. The blank line the decoder put between message items starts the text after.
    let mut after_hosted = false;
    for piece in interleave(a.content.as_deref(), &a.hosted_calls) {
        match piece {
            Piece::Text(text) => {
                let text = if after_hosted {
                    text.strip_prefix("\n\n").unwrap_or(text)
                } else {
                    text
                };
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                after_hosted = false;
            }
            Piece::Hosted(call) => {
                input.extend(call.blocks.iter().cloned());
                after_hosted = true;
            }
        }
    }
    for call in &a.tool_calls {
        input.extend(reasoning_items(&call.extra, stateless).cloned());
        input.push(call_item(call, names));
    }
}

/// The whole request body.
pub(crate) fn encode(req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    crate::providers::shared::refuse_text_calls(req, ProviderKind::OpenAiResponses)?;
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

    let mut downgrades = Vec::new();
    let turns = foreign_as_text(&req.messages, KIND.name(), &mut downgrades);
    let mut instructions: Vec<&str> = Vec::new();
    let mut input = Vec::new();
    for (i, m) in turns.iter().enumerate() {
        match m {
            // Leading system messages are the instructions; a later one stays in place.
            Message::System { content } if input.is_empty() => instructions.push(content),
            Message::System { content } => {
                input.push(json!({"role": "system", "content": content}));
            }
            Message::User {
                content: Content::Text(text),
            } => {
                input.push(json!({"role": "user", "content": text}));
            }
            Message::User {
                content: Content::Parts(parts),
            } => {
                let content = input_parts(parts, &format!("messages[{i}].content"))?;
                input.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(a) => assistant_items(a, &names, stateless, &mut input),
            Message::Tool(r) => {
                let kind = if custom_calls.contains(r.call_id.as_str()) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                let output = result_output(r, i)?;
                input.push(json!({"type": kind, "call_id": r.call_id, "output": output}));
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input));
    let hosted = crate::providers::hosted_tools::place(KIND, req)?;
    if !req.tools.is_empty() || !hosted.tools.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(|t| tool_json(t, &names)).collect();
        tools.extend(hosted.tools);
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
    let mut policy = Policy::new(ProviderKind::OpenAiResponses, req)?;
    // `defer_loading` with the `tool_search` tool
    // (https://platform.openai.com/docs/guides/tools-tool-search), `allowed_tools`
    // (https://platform.openai.com/docs/api-reference/responses/create#responses_create-tool_choice).
    policy.tool_fields(&crate::providers::settings::ToolFields {
        defer_loading: true,
        allowed_tools: true,
        ..crate::providers::settings::ToolFields::NONE
    })?;
    let rule = rule_for(OPENAI_REASONING, &req.model);
    if let Some(t) = req.temperature
        && policy.allowed(rule, "temperature")?
    {
        body.insert("temperature".into(), json!(t));
    }
    policy.sampling(&RESPONSES_SAMPLING, rule, &mut body)?;
    let form = rule.map_or(ReasoningForm::Levels(OPENAI_EFFORTS), |r| r.form);
    let plan = policy.reasoning(form)?;
    let mut reasoning = Map::new();
    match plan {
        Plan::Default => {}
        // Summaries are what the API shows of the reasoning; without them it stays hidden.
        Plan::On => {
            reasoning.insert("summary".into(), json!("auto"));
        }
        Plan::Level(Effort::None) => {
            reasoning.insert("effort".into(), json!("none"));
        }
        Plan::Level(level) => {
            reasoning.insert("effort".into(), json!(level.as_str()));
            reasoning.insert("summary".into(), json!("auto"));
        }
        other => {
            return Err(Error::unsupported(
                ProviderKind::OpenAiResponses,
                format!("reasoning: {other:?} has no Responses form"),
            ));
        }
    }
    if let Some(summary) = policy.summary() {
        reasoning.insert("summary".into(), json!(summary.as_str()));
    }
    if !reasoning.is_empty() {
        body.insert("reasoning".into(), Value::Object(reasoning));
    }
    if let Some(format) = &req.response_format {
        body.insert("text".into(), text_format(format)?);
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
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted.dropped).collect(),
        text_calls: None,
    })
}

/// Where the sampling settings go on the Responses wire: `top_p` only; it has no `stop`,
/// `seed`, `top_k` or penalties (<https://platform.openai.com/docs/api-reference/responses/create>).
const RESPONSES_SAMPLING: SamplingNames = SamplingNames::NONE.with_top_p(Some("top_p"));

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_user(parts: Vec<Part>) -> Result<HttpRequest> {
        encode(
            &ChatRequest::new("gpt-5-mini", vec![Message::user(parts)]),
            false,
        )
    }

    #[test]
    fn parts_the_api_cannot_take_are_refused_by_name_and_place() {
        match encode_user(vec![Part::text("a"), Part::image("image/bmp", "Qk0=")]) {
            Err(Error::Unsupported { feature, .. }) => {
                assert!(
                    feature.contains("image/bmp") && feature.contains("messages[0].content[1]"),
                    "{feature}"
                );
            }
            other => panic!("{other:?}"),
        }
        let nameless = Part::File {
            source: Source::Data {
                media_type: "application/pdf".into(),
                data: "JVBERi0=".into(),
            },
            filename: None,
        };
        match encode_user(vec![nameless]) {
            Err(Error::Input { path, .. }) => assert_eq!(path, "messages[0].content[0]"),
            other => panic!("{other:?}"),
        }
        let call = ToolCall::new("call_1", "f", "{}");
        let req = ChatRequest::new(
            "gpt-5-mini",
            vec![
                Message::user("q"),
                Message::Assistant(AssistantMessage::default().with_tool_calls([call.clone()])),
                Message::Tool(
                    ToolResult::ok(&call, json!(1))
                        .with_content([Part::audio("audio/wav", "UklGRg==")]),
                ),
            ],
        );
        let err = encode(&req, false).unwrap_err().to_string();
        assert!(err.contains("audio at messages[2].content[0]"), "{err}");
    }

    #[test]
    fn a_failed_result_with_content_leads_with_its_message() {
        let call = ToolCall::new("call_1", "f", "{}");
        let result = ToolResult::error(&call, "boom").with_content([Part::text("partial page")]);
        assert_eq!(
            result_output(&result, 2).unwrap(),
            json!([{"type": "input_text", "text": "Error: boom"},
                   {"type": "input_text", "text": "partial page"}])
        );
        let plain = ToolResult::ok(&call, json!({"t": 1}));
        assert_eq!(result_output(&plain, 2).unwrap(), json!("{\"t\":1}"));
    }
}
