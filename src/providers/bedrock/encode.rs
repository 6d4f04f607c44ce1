//! The canonical request → a Converse body.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{REASONING_BLOCKS, bedrock_name};
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, NameMap, ProviderKind};
use crate::providers::anthropic::encode::claude_reasoning;
use crate::providers::hosted::{Piece, foreign_as_text, interleave};
use crate::providers::settings::{
    ANTHROPIC_REASONING, Policy, ReasoningForm, SamplingNames, rule_for,
};
use crate::providers::shared::{
    Answer, Pairing, ToolResultRun, check_tools, encode_parts, replay_arguments, request_names,
    tool_result_run,
};
use crate::types::{
    AssistantMessage, ChatRequest, Content, Message, Part, Source, ToolCall, ToolChoice,
    ToolDefinition, ToolResult,
};

const KIND: ProviderKind = ProviderKind::Bedrock;

fn unsupported(what: impl Into<String>) -> Error {
    Error::unsupported(KIND, what)
}

/// Image media types and their Converse `format` (ImageBlock).
const IMAGE_FORMATS: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpeg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

/// Document media types and their Converse `format` (DocumentBlock).
const DOCUMENT_FORMATS: [(&str, &str); 9] = [
    ("application/pdf", "pdf"),
    ("text/csv", "csv"),
    ("application/msword", "doc"),
    (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docx",
    ),
    ("application/vnd.ms-excel", "xls"),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsx",
    ),
    ("text/html", "html"),
    ("text/plain", "txt"),
    ("text/markdown", "md"),
];

fn format_of(table: &[(&str, &'static str)], media_type: &str) -> Option<&'static str> {
    table
        .iter()
        .find(|(t, _)| t.eq_ignore_ascii_case(media_type))
        .map(|(_, f)| *f)
}

/// A media source: inline `bytes` (base64 in JSON), or an `s3Location` for an `s3://` URL,
/// the only URL Bedrock reads itself.
fn source(source: &Source, what: &str, place: &str) -> Result<Value> {
    match source {
        Source::Data { data, .. } => Ok(json!({"bytes": data})),
        Source::Url { url, .. }
            if url
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("s3://")) =>
        {
            Ok(json!({"s3Location": {"uri": url}}))
        }
        Source::Url { url, .. } => Err(unsupported(format!(
            "the {what} at {place}: Bedrock reads only inline bytes or s3:// locations, not \
             {url:?}; send the bytes as data instead"
        ))),
    }
}

/// A document name Bedrock accepts (alphanumerics, single whitespace, hyphens, parentheses,
/// square brackets), from the file name without its extension (the `format` says it): other
/// characters become `-`; `document-<n>` when nothing is left.
fn document_name(filename: Option<&str>, n: usize) -> String {
    let name = filename.unwrap_or("");
    let stem = match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => name,
    };
    let mut out = String::new();
    for c in stem.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '(' | ')' | '[' | ']') {
            c
        } else if c.is_whitespace() {
            ' '
        } else {
            '-'
        };
        if c == ' ' && out.ends_with(' ') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim().to_owned();
    if out.is_empty() {
        format!("document-{n}")
    } else {
        out
    }
}

/// One content part as a Converse block: `text`, `image` or `document`. Audio has no block.
fn part_block(part: &Part, place: &str) -> Result<Value> {
    match part {
        Part::Text { text } => Ok(json!({"text": text})),
        Part::Image { source: src } => {
            let media = src.media_type().unwrap_or("");
            let format = match (format_of(&IMAGE_FORMATS, media), src) {
                (Some(f), _) => f,
                (
                    None,
                    Source::Url {
                        url,
                        media_type: None,
                    },
                ) => {
                    // An S3 image without a media type: its extension says the format.
                    let ext = url.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
                    match ext.as_str() {
                        "png" | "gif" | "webp" => IMAGE_FORMATS
                            .iter()
                            .find(|(_, f)| *f == ext)
                            .map_or("png", |(_, f)| *f),
                        "jpg" | "jpeg" => "jpeg",
                        _ => {
                            return Err(unsupported(format!(
                                "an image at {place} of unknown type: Bedrock needs its format \
                                 (png, jpeg, gif or webp)"
                            )));
                        }
                    }
                }
                (None, _) => {
                    return Err(unsupported(format!(
                        "an image of type {media:?} at {place}: Bedrock takes png, jpeg, gif and \
                         webp"
                    )));
                }
            };
            Ok(json!({"image": {"format": format, "source": source(src, "image", place)?}}))
        }
        Part::File {
            source: src,
            filename,
        } => {
            let media = src.media_type().unwrap_or("application/pdf");
            let Some(format) = format_of(&DOCUMENT_FORMATS, media) else {
                return Err(unsupported(format!(
                    "a file of type {media:?} at {place}: Bedrock documents are pdf, csv, doc, \
                     docx, xls, xlsx, html, txt and md"
                )));
            };
            let name = document_name(filename.as_deref(), 1);
            Ok(json!({"document": {
                "format": format,
                "name": name,
                "source": source(src, "file", place)?,
            }}))
        }
        Part::Audio { .. } => Err(unsupported(format!(
            "audio at {place}: Converse has no audio input block"
        ))),
    }
}

/// Whether Bedrock accepts a `toolUseId` (`[a-zA-Z0-9_-]+`, at most 64): ids made by other
/// providers that break it (`functions.get_weather:0`) are mapped, the same way in calls and
/// results.
fn bedrock_id(id: &str) -> bool {
    bedrock_name(id)
}

/// Every call id in the history, calls first, for the id map.
fn history_ids(messages: &[Message]) -> impl Iterator<Item = &str> {
    messages
        .iter()
        .flat_map(|m| -> Box<dyn Iterator<Item = &str>> {
            match m {
                Message::Assistant(a) => Box::new(a.tool_calls.iter().map(|c| c.id.as_str())),
                Message::Tool(r) => Box::new(std::iter::once(r.call_id.as_str())),
                _ => Box::new(std::iter::empty()),
            }
        })
}

/// The `inputSchema.json` of a tool: the schema as is, `"type": "object"` added at the root
/// when it names no type.
pub(crate) fn input_schema(tool: &ToolDefinition) -> Value {
    match &tool.parameters {
        Value::Object(m) if !m.contains_key("type") => {
            let mut typed = Map::new();
            typed.insert("type".into(), json!("object"));
            typed.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
            Value::Object(typed)
        }
        other => other.clone(),
    }
}

fn tool_spec(name: &str, description: &str, schema: Value) -> Value {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(name));
    if !description.is_empty() {
        spec.insert("description".into(), json!(description));
    }
    spec.insert("inputSchema".into(), json!({"json": schema}));
    json!({"toolSpec": spec})
}

/// A call's `input` object: its arguments, or `{}` when they are malformed or truncated (the
/// API takes only an object, and a broken call was never run).
fn call_input(call: &ToolCall) -> Value {
    match (&call.error, &call.arguments) {
        (None, Some(v @ Value::Object(_))) => v.clone(),
        _ => serde_json::from_str(&replay_arguments(call)).unwrap_or_else(|_| json!({})),
    }
}

/// The reasoning blocks kept in `extra` (objects with `reasoningText` or `redactedContent`).
fn reasoning_blocks(extra: &Map<String, Value>) -> impl Iterator<Item = Value> + '_ {
    extra
        .get(REASONING_BLOCKS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("reasoningText").is_some() || b.get("redactedContent").is_some())
        .map(|b| json!({"reasoningContent": b}))
}

/// An assistant turn's content: its reasoning blocks (signed, from a Bedrock answer), its
/// text, then each call. Reasoning text without blocks (from another provider) is not sent:
/// the models that take reasoning back take it only signed.
fn assistant_blocks(a: &AssistantMessage, names: &NameMap, ids: &NameMap) -> Vec<Value> {
    let mut blocks: Vec<Value> = reasoning_blocks(&a.extra).collect();
    // Text, with the server tool blocks Bedrock sent (only its own: `history` turned other
    // wires' calls into text) back in their places, verbatim.
    for piece in interleave(a.content.as_deref(), &a.hosted_calls) {
        match piece {
            Piece::Text(text) if !text.trim().is_empty() => blocks.push(json!({"text": text})),
            Piece::Text(_) => {}
            Piece::Hosted(call) => blocks.extend(call.blocks.iter().cloned()),
        }
    }
    for call in &a.tool_calls {
        blocks.push(json!({"toolUse": {
            "toolUseId": ids.wire(&call.id),
            "name": names.wire(&call.name),
            "input": call_input(call),
        }}));
    }
    blocks
}

/// A result's content blocks: an object output as `json`, any other output as `text` (a
/// string as is, other JSON as its text); a failure's message leads as text; the result's
/// content parts (images, documents) follow. Never empty: the API requires content.
fn result_content(r: &ToolResult, place: &str) -> Result<Vec<Value>> {
    let mut content = Vec::new();
    if let Some(message) = r.error.as_deref().filter(|m| !m.is_empty()) {
        content.push(json!({"text": message}));
    }
    match &r.output {
        Value::Null => {}
        Value::Object(_) => content.push(json!({"json": r.output})),
        Value::String(s) if s.is_empty() => {}
        Value::String(s) => content.push(json!({"text": s})),
        other => content.push(json!({"text": other.to_string()})),
    }
    content.extend(encode_parts(&r.content, place, part_block)?);
    if content.is_empty() {
        let failed = r.is_error || r.error.is_some();
        content.push(if failed {
            json!({"text": "the tool call failed"})
        } else {
            json!({"json": {}})
        });
    }
    Ok(content)
}

/// How Bedrock pairs results with calls.
const PAIRING: Pairing = Pairing {
    wire: "Bedrock",
    call: "toolUse",
    result: "toolResult",
    same_name: false,
};

/// The user content answering a call turn: one `toolResult` block per call, in call order.
fn tool_results(run: &ToolResultRun, ids: &NameMap) -> Result<Vec<Value>> {
    let answers = run.paired(&PAIRING)?;
    let mut blocks = Vec::with_capacity(answers.len());
    for Answer { call, at, result } in answers {
        let failed = result.is_error || result.error.is_some();
        blocks.push(json!({"toolResult": {
            "toolUseId": ids.wire(&call.id),
            "content": result_content(result, &format!("messages[{at}].content"))?,
            "status": if failed { "error" } else { "success" },
        }}));
    }
    Ok(blocks)
}

/// Appends a message, joining it to the previous one when both have the same role: Converse
/// needs turns to alternate (results and a following user text share one user message).
fn push(out: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = out.last_mut()
        && last["role"] == role
        && let Some(content) = last.get_mut("content").and_then(Value::as_array_mut)
    {
        content.extend(blocks);
        return;
    }
    out.push(json!({"role": role, "content": blocks}));
}

/// The system blocks and the `messages`.
fn history(
    messages: &[Message],
    names: &NameMap,
    ids: &NameMap,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut system = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::System { content } => {
                if !content.trim().is_empty() {
                    system.push(json!({"text": content}));
                }
            }
            Message::User { content } => {
                let blocks = match content {
                    Content::Text(text) if text.trim().is_empty() => Vec::new(),
                    Content::Text(text) => vec![json!({"text": text})],
                    Content::Parts(parts) => {
                        encode_parts(parts, &format!("messages[{i}].content"), part_block)?
                    }
                };
                push(&mut out, "user", blocks);
            }
            Message::Assistant(a) => {
                if !a.tool_calls.is_empty()
                    && !matches!(messages.get(i + 1), Some(Message::Tool(_)) | None)
                {
                    return Err(Error::input(
                        format!("messages[{}]", i + 1),
                        format!(
                            "the assistant turn at messages[{i}] called tools, so the next \
                             message must hold their results (Bedrock needs each toolResult \
                             right after its toolUse)"
                        ),
                    ));
                }
                push(&mut out, "assistant", assistant_blocks(a, names, ids));
            }
            Message::Tool(_) => {
                let run = tool_result_run(
                    messages,
                    i,
                    "Bedrock answers all calls of a turn in the next user message",
                )?;
                let blocks = tool_results(&run, ids)?;
                let end = run.end;
                push(&mut out, "user", blocks);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    if out.is_empty() {
        return Err(Error::input(
            "messages",
            "Bedrock needs at least one user or assistant message besides system messages",
        ));
    }
    Ok((system, out))
}

/// Whether the history holds tool blocks (calls or results): Converse then requires a
/// `toolConfig`, tools or not.
fn history_uses_tools(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::Assistant(a) => !a.tool_calls.is_empty(),
        Message::Tool(_) => true,
        _ => false,
    })
}

/// `toolConfig`: the request's tools, plus a declaration (an object schema) of each tool the
/// history used that they do not name, since Converse rejects toolUse and toolResult blocks
/// without a `toolConfig` and a `toolUse` of a tool it does not declare; `toolChoice` mapped
/// (`auto`, `any`, `tool`). Converse has no `none`: `tool_choice: none` sends no tools, and
/// with tool history it is [`Error::Unsupported`], as the tools would have to be declared.
fn tool_config(req: &ChatRequest, names: &NameMap) -> Result<Option<Value>> {
    let history = history_uses_tools(&req.messages);
    if req.tool_choice == Some(ToolChoice::None) {
        if history {
            return Err(unsupported(
                "tool_choice \"none\" with tool calls in the history: Converse has no \"none\" \
                 tool choice and needs the tools declared (toolConfig) for a history with \
                 toolUse blocks",
            ));
        }
        return Ok(None);
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .flat_map(|t| {
            let spec = tool_spec(names.wire(&t.name), &t.description, input_schema(t));
            // A cache breakpoint after the tool: Converse's `cachePoint` entry.
            let point = t
                .cache_control
                .as_ref()
                .map(|_| json!({"cachePoint": {"type": "default"}}));
            std::iter::once(spec).chain(point)
        })
        .collect();
    if history {
        let mut seen: HashSet<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        for name in request_names(req) {
            if seen.insert(name) {
                tools.push(tool_spec(names.wire(name), "", json!({"type": "object"})));
            }
        }
    }
    if tools.is_empty() {
        if req.tool_choice == Some(ToolChoice::Required) {
            return Err(Error::input(
                "tool_choice",
                "tool_choice \"required\" needs at least one tool",
            ));
        }
        return Ok(None);
    }
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    let choice = match req.tool_choice.as_ref().map(ToolChoice::without_allowed) {
        None | Some(ToolChoice::None) => None,
        Some(ToolChoice::Auto | ToolChoice::Allowed { .. }) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": names.wire(&name)}})),
    };
    if let Some(choice) = choice.filter(|_| !req.tools.is_empty()) {
        config.insert("toolChoice".into(), choice);
    }
    Ok(Some(Value::Object(config)))
}

/// The path: the model id (an id, an inference profile or an ARN) as one path segment. An id
/// that is empty or only dots is refused: it would be no segment, or a dot segment that URL
/// handling removes (RFC 3986 section 5.2.4; `%2E` is a dot too in the WHATWG URL standard),
/// posting elsewhere on the endpoint.
fn path(model: &str, stream: bool) -> Result<String> {
    if model.bytes().all(|b| b == b'.') {
        return Err(Error::input(
            "model",
            format!("{model:?} is not a Bedrock model id (empty, or only dots)"),
        ));
    }
    let mut segment = String::new();
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            segment.push(char::from(b));
        } else {
            segment.push_str(&format!("%{b:02X}"));
        }
    }
    let op = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    Ok(format!("/model/{segment}/{op}"))
}

/// Where the sampling settings go on Converse: `inferenceConfig.topP` and `stopSequences`;
/// `top_k` goes in `additionalModelRequestFields` for Claude models; no seed or penalties
/// (<https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InferenceConfiguration.html>).
const BEDROCK_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("topP"))
    .with_stop(Some("stopSequences"), Some(2500));

/// The whole request.
pub(crate) fn encode(req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
    check_tools(req)?;
    crate::providers::shared::refuse_text_calls(req, crate::provider::ProviderKind::Bedrock)?;
    if req.model.trim().is_empty() {
        return Err(Error::input("model", "the model id is empty"));
    }
    if req.response_format.is_some() {
        return Err(unsupported(
            "response_format: Converse has no structured-output field; ask for JSON in the \
             prompt or use a forced tool",
        ));
    }
    let names = NameMap::build(request_names(req), bedrock_name)?;
    let ids = NameMap::build(history_ids(&req.messages), bedrock_id)?;
    let mut downgrades = Vec::new();
    let turns = foreign_as_text(&req.messages, ProviderKind::Bedrock.name(), &mut downgrades);
    let (system, messages) = history(&turns, &names, &ids)?;

    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(n) = req.max_tokens {
        inference.insert("maxTokens".into(), json!(n));
    }
    let kind = crate::provider::ProviderKind::Bedrock;
    let mut policy = Policy::new(kind, req)?;
    // A tool's cache_control becomes a `cachePoint` after it
    // (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Tool.html).
    policy.tool_fields(&crate::providers::settings::ToolFields {
        cache_control: true,
        ..crate::providers::settings::ToolFields::NONE
    })?;
    let claude = req.model.contains("claude");
    let rule = if claude {
        rule_for(ANTHROPIC_REASONING, &req.model)
    } else {
        None
    };
    if let Some(t) = req.temperature
        && policy.allowed(rule, "temperature")?
    {
        inference.insert("temperature".into(), json!(t));
    }
    let mut additional = Map::new();
    // Claude's own `top_k` rides in `additionalModelRequestFields`; other models have none.
    let sampling_names = if claude {
        BEDROCK_SAMPLING.with_top_k(Some("top_k"))
    } else {
        BEDROCK_SAMPLING
    };
    let mut sampling = Map::new();
    policy.sampling(&sampling_names, rule, &mut sampling)?;
    if let Some(k) = sampling.remove("top_k") {
        additional.insert("top_k".into(), k);
    }
    inference.extend(sampling);
    if claude {
        // Claude's thinking, passed through as Bedrock documents it
        // (https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html).
        let max = req.max_tokens.unwrap_or(0);
        let mut strip = Vec::new();
        let (thinking, effort) = claude_reasoning(req, max, kind, &mut policy, &mut strip)?;
        for setting in strip {
            match setting {
                "top_k" => additional.remove("top_k"),
                "top_p" => inference.remove("topP"),
                other => inference.remove(other),
            };
        }
        if let Some(thinking) = thinking {
            additional.insert("thinking".into(), thinking);
        }
        if let Some(effort) = effort {
            additional.insert("output_config".into(), json!({"effort": effort}));
        }
    } else {
        policy.reasoning(ReasoningForm::None)?;
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    let hosted = crate::providers::hosted_tools::place(ProviderKind::Bedrock, req)?;
    let mut config = tool_config(req, &names)?;
    if !hosted.tools.is_empty() {
        let config = config.get_or_insert_with(|| json!({"tools": []}));
        if let Some(tools) = config.get_mut("tools").and_then(Value::as_array_mut) {
            tools.extend(hosted.tools.iter().cloned());
        }
    }
    if let Some(config) = config {
        body.insert("toolConfig".into(), config);
    }
    policy.no_summary()?;
    if !additional.is_empty() {
        body.insert(
            "additionalModelRequestFields".into(),
            Value::Object(additional),
        );
    }
    crate::providers::shared::merge_extra_body(&mut body, &req.extra_body);
    let mut http =
        HttpRequest::new(path(&req.model, stream)?, Value::Object(body)).with_names(names);
    http.dropped = policy.dropped.into_iter().chain(hosted.dropped).collect();
    http.downgrades = downgrades;
    if stream {
        http = http.with_header("accept", "application/vnd.amazon.eventstream");
    }
    Ok(http)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_id_of_dots_never_becomes_a_dot_segment() {
        for model in ["", ".", "..", "..."] {
            let err = super::path(model, false).unwrap_err().to_string();
            assert!(err.contains("model"), "{err}");
        }
        assert_eq!(
            super::path("a..b/c", true).unwrap(),
            "/model/a..b%2Fc/converse-stream"
        );
    }

    use super::*;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall::new(id, name, r#"{"city":"Oslo"}"#)
    }

    fn history_req(tools: bool, choice: Option<ToolChoice>) -> ChatRequest {
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("call_1", "get_weather")],
            ..AssistantMessage::default()
        });
        let mut req = ChatRequest::new(
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            vec![
                Message::user("q"),
                turn,
                Message::Tool(ToolResult::ok(
                    &call("call_1", "get_weather"),
                    json!({"t": 1}),
                )),
            ],
        );
        if tools {
            req.tools = vec![ToolDefinition::new("get_weather", "w").unwrap()];
        }
        req.tool_choice = choice;
        req
    }

    #[test]
    fn tool_history_without_tools_still_declares_them() {
        let body = encode(&history_req(false, None), false).unwrap().body;
        let tools = body["toolConfig"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["toolSpec"]["name"], "get_weather");
        assert!(body["toolConfig"].get("toolChoice").is_none());
        let with = encode(&history_req(true, Some(ToolChoice::Required)), false)
            .unwrap()
            .body;
        assert_eq!(with["toolConfig"]["toolChoice"], json!({"any": {}}));
    }

    #[test]
    fn tool_choice_none_omits_tools_or_is_unsupported_with_history() {
        let mut req = ChatRequest::new("m", vec![Message::user("q")]);
        req.tools = vec![ToolDefinition::new("f", "").unwrap()];
        req.tool_choice = Some(ToolChoice::None);
        let body = encode(&req, false).unwrap().body;
        assert!(body.get("toolConfig").is_none(), "{body}");
        let err = encode(&history_req(true, Some(ToolChoice::None)), false).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    }

    #[test]
    fn the_model_id_is_one_escaped_path_segment() {
        assert_eq!(
            path(
                "arn:aws:bedrock:us-east-1:1:inference-profile/us.x-v1:0",
                true
            )
            .unwrap(),
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x-v1%3A0/converse-stream"
        );
        let req = history_req(true, None);
        let http = encode(&req, true).unwrap();
        assert!(http.path.ends_with("/converse-stream"), "{}", http.path);
        assert!(
            http.headers
                .iter()
                .any(|(n, v)| n == "accept" && v.contains("eventstream"))
        );
    }

    #[test]
    fn results_and_user_text_share_one_user_message_and_foreign_ids_are_mapped() {
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("functions.f:0", "f"), call("call_b", "f")],
            ..AssistantMessage::default()
        });
        let req = ChatRequest::new(
            "m",
            vec![
                Message::user("q"),
                turn,
                Message::Tool(ToolResult::ok(&call("call_b", "f"), json!("two"))),
                Message::Tool(ToolResult::error(&call("functions.f:0", "f"), "boom")),
                Message::user("and now?"),
            ],
        );
        let body = encode(&req, false).unwrap().body;
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        let mapped = messages[1]["content"][0]["toolUse"]["toolUseId"]
            .as_str()
            .unwrap();
        assert!(bedrock_id(mapped), "{mapped}");
        let user = messages[2]["content"].as_array().unwrap();
        assert_eq!(user[0]["toolResult"]["toolUseId"], mapped);
        assert_eq!(user[0]["toolResult"]["status"], "error");
        assert_eq!(user[0]["toolResult"]["content"], json!([{"text": "boom"}]));
        assert_eq!(user[1]["toolResult"]["content"], json!([{"text": "two"}]));
        assert_eq!(user[2], json!({"text": "and now?"}));
    }

    #[test]
    fn parts_the_api_cannot_take_are_refused_by_place() {
        for (part, want) in [
            (Part::image("image/bmp", "Qk0="), "image/bmp"),
            (
                Part::image_url("https://x/a.png"),
                "only inline bytes or s3://",
            ),
            (
                Part::audio("audio/wav", "UklGRg=="),
                "audio at messages[0].content[1]",
            ),
            (
                Part::file("application/zip", "UEs=", "a.zip"),
                "application/zip",
            ),
        ] {
            let req = ChatRequest::new("m", vec![Message::user(vec![Part::text("look"), part])]);
            let err = encode(&req, false).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        assert_eq!(
            document_name(Some("Q3  report.final.pdf"), 1),
            "Q3 report-final"
        );
        assert_eq!(document_name(Some(".pdf"), 1), "-pdf");
        assert_eq!(document_name(Some("  "), 2), "document-2");
    }
}
