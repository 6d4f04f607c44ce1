//! The canonical request → a `generateContent` body.

use serde_json::{Map, Value, json};

use super::{REASONING_SIGNATURE, SKIP_SIGNATURE, THOUGHT_SIGNATURE, gemini_name};
use crate::error::{Error, Result};
use crate::provider::{Downgrade, HttpRequest, NameMap, ProviderKind};
use crate::providers::hosted::{Piece, foreign_as_text, interleave};
use crate::providers::settings::{
    GEMINI_REASONING, Plan, Policy, ReasoningForm, SamplingNames, rule_for,
};
use crate::providers::shared::{
    Answer, Pairing, ToolResultRun, check_tools, encode_parts, request_names,
    tool_media_after_runs, tool_result_run,
};
use crate::schema;
use crate::types::{
    AssistantMessage, ChatRequest, Content, Effort, Message, Part, ResponseFormat, SchemaMode,
    Source, ToolCall, ToolChoice, ToolDefinition, ToolResult, parse_arguments,
};

/// Media types a function response may carry in its `parts` (multimodal function responses).
const FUNCTION_RESPONSE_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/webp",
    "application/pdf",
    "text/plain",
];

/// One content part as a Gemini `Part`: `text`, `inlineData` (`mimeType`, base64 `data`) or
/// `fileData` (`mimeType`, `fileUri`). A URL needs its media type (`fileData` requires one);
/// `place` names the part in that error.
fn content_part(part: &Part, place: &str) -> Result<Value> {
    Ok(match part.source() {
        None => json!({"text": part.as_text().unwrap_or_default()}),
        Some(Source::Data { media_type, data }) => {
            json!({"inlineData": {"mimeType": media_type, "data": data}})
        }
        Some(Source::Url {
            url,
            media_type: Some(media_type),
        }) => json!({"fileData": {"mimeType": media_type, "fileUri": url}}),
        Some(Source::Url { url, .. }) => {
            return Err(Error::input(
                place,
                format!(
                    "the {} at {url:?} has no media_type, and Gemini's fileData needs one",
                    part.kind()
                ),
            ));
        }
    })
}

/// The parts of a list of content parts; empty text parts are left out (they carry nothing).
fn content_parts(parts: &[Part], place: &str) -> Result<Vec<Value>> {
    encode_parts(parts, place, content_part)
}

/// A tool result's media as `functionResponse.parts` (Gemini 3): inline bytes of the media
/// types a function response takes; a URL, audio or another type is refused, naming it.
fn function_response_parts(r: &ToolResult, at: usize) -> Result<Vec<Value>> {
    let mut parts = Vec::new();
    for (j, part) in r.content.iter().enumerate() {
        let Some(source) = part.source() else {
            continue;
        };
        let place = format!("messages[{at}].content[{j}]");
        match source {
            Source::Data { media_type, data }
                if !matches!(part, Part::Audio { .. })
                    && FUNCTION_RESPONSE_TYPES.contains(&media_type.as_str()) =>
            {
                parts.push(json!({"inlineData": {"mimeType": media_type, "data": data}}));
            }
            Source::Data { media_type, .. } => {
                return Err(Error::unsupported(
                    ProviderKind::Gemini,
                    format!(
                        "the {} part of type {media_type:?} in the tool result at {place}: \
                         Gemini function responses take {}",
                        part.kind(),
                        FUNCTION_RESPONSE_TYPES.join(", ")
                    ),
                ));
            }
            Source::Url { .. } => {
                return Err(Error::unsupported(
                    ProviderKind::Gemini,
                    format!(
                        "the {} part by URL in the tool result at {place}: Gemini function \
                         responses take inline bytes only",
                        part.kind()
                    ),
                ));
            }
        }
    }
    Ok(parts)
}

/// What toolwire assumes about a model from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelTraits {
    /// Gemini 1.x/2.x: never sends call ids and may reject `id` on `functionCall` /
    /// `functionResponse` ("Unknown name \"id\""; anomalyco/opencode PR #50504); does not
    /// require thought signatures. Every other name (Gemini 3 and later, and aliases such as
    /// `gemini-flash-latest`) is treated as current.
    pub legacy: bool,
}

impl ModelTraits {
    /// Reads the generation from `gemini-<major>…` in the last path segment of the name.
    pub(crate) fn of(model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model);
        let major: Option<u32> = name.strip_prefix("gemini-").and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        Self {
            legacy: matches!(major, Some(m) if m < 3),
        }
    }
}

/// The request path: `/v1beta/models/{model}:generateContent` or
/// `…:streamGenerateContent?alt=sse`. `models/` and `tunedModels/` prefixes are understood; the
/// name itself is percent-encoded so it stays one path segment.
pub(crate) fn path(model: &str, stream: bool) -> Result<String> {
    let method = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    method_path(model, method)
}

/// The path of `models/{model}:countTokens` (`tunedModels/` understood as in [`path`]).
pub(crate) fn count_tokens_path(model: &str) -> Result<String> {
    method_path(model, "countTokens")
}

/// The model's resource name as a request body names it: `models/{id}` (or `tunedModels/{id}`).
pub(crate) fn resource(model: &str) -> String {
    let (collection, id) = split_model(model);
    format!("{collection}/{id}")
}

/// The collection (`models` or `tunedModels`) and id of `model`.
fn split_model(model: &str) -> (&'static str, &str) {
    match model.split_once('/') {
        Some(("models", id)) => ("models", id),
        Some(("tunedModels", id)) => ("tunedModels", id),
        _ => ("models", model),
    }
}

/// `/v1beta/{collection}/{id}:{method}`, the id percent-encoded.
fn method_path(model: &str, method: &str) -> Result<String> {
    let (collection, id) = split_model(model);
    if id.trim().is_empty() {
        return Err(Error::input("model", "the model name is empty"));
    }
    Ok(format!(
        "/v1beta/{collection}/{}:{method}",
        percent_encode(id)
    ))
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `parameters` (lowered) or `parametersJsonSchema` (pass-through) field of a declaration;
/// `None` when a lowered tool takes no parameters. The one lowering both `encode` and
/// [`crate::Provider::encode_parameters`] use; `path` names the schema in errors.
pub(crate) fn parameters(
    tool: &ToolDefinition,
    mode: SchemaMode,
    path: &str,
) -> Result<Option<(&'static str, Value)>> {
    match mode {
        SchemaMode::JsonSchema => Ok(Some(("parametersJsonSchema", tool.parameters.clone()))),
        SchemaMode::Lowered => {
            Ok(schema::to_gemini(&tool.parameters, path)?.map(|v| ("parameters", v)))
        }
    }
}

fn declaration(
    tool: &ToolDefinition,
    index: usize,
    mode: SchemaMode,
    names: &NameMap,
) -> Result<Value> {
    let mut decl = Map::new();
    decl.insert("name".into(), json!(names.wire(&tool.name)));
    if !tool.description.is_empty() {
        decl.insert("description".into(), json!(tool.description));
    }
    let path = format!("tools[{index}].parameters");
    let parameters = parameters(tool, mode, &path).map_err(|e| match e {
        Error::Input { path, message } => Error::Input {
            path,
            message: format!("tool {:?}: {message}", tool.name),
        },
        other => other,
    })?;
    if let Some((field, schema)) = parameters {
        decl.insert(field.into(), schema);
    }
    Ok(Value::Object(decl))
}

/// A call's `args` object: its parsed arguments, or `{}` when they are malformed or truncated
/// (Gemini re-parses history and rejects anything but an object).
fn call_args(call: &ToolCall) -> Value {
    match (&call.error, &call.arguments) {
        (None, Some(v @ Value::Object(_))) => v.clone(),
        _ => match parse_arguments(&call.raw_arguments) {
            Ok(v) if call.error.is_none() => v,
            _ => json!({}),
        },
    }
}

fn signature<'a>(extra: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    extra
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Whether the call's id goes on the wire: only an id the model sent, and only to models that
/// accept the field.
fn echo_id(call: &ToolCall, traits: ModelTraits) -> bool {
    !traits.legacy && !call.has_synthetic_id() && !call.id.is_empty()
}

/// A model turn. `None` when it has nothing to send (an empty turn, e.g. one that ended with
/// `MALFORMED_FUNCTION_CALL`), since Gemini rejects a Content without parts.
fn model_content(a: &AssistantMessage, names: &NameMap, traits: ModelTraits) -> Option<Value> {
    let mut parts = Vec::new();
    if let (Some(reasoning), Some(sig)) = (&a.reasoning, signature(&a.extra, REASONING_SIGNATURE)) {
        // Thought text is only sent back when a signature rode on it; thought summaries are not
        // needed otherwise.
        parts.push(json!({"text": reasoning, "thought": true, "thoughtSignature": sig}));
    }
    let text_signature = signature(&a.extra, THOUGHT_SIGNATURE);
    let text = a.content.as_deref().filter(|t| !t.is_empty());
    // Text, with the parts of code Gemini ran (only its own: `history` turned other wires'
    // calls into text) back in their places, verbatim; the text's signature rides on the last
    // text part.
    let pieces = interleave(text, &a.hosted_calls);
    let last_text = pieces.iter().rposition(|p| matches!(p, Piece::Text(_)));
    for (k, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Text(t) => {
                let mut part = Map::new();
                part.insert("text".into(), json!(t));
                if let Some(sig) = text_signature.filter(|_| Some(k) == last_text) {
                    part.insert("thoughtSignature".into(), json!(sig));
                }
                parts.push(Value::Object(part));
            }
            Piece::Hosted(call) => parts.extend(call.blocks.iter().cloned()),
        }
    }
    let any_signed = a
        .tool_calls
        .iter()
        .any(|c| signature(&c.extra, THOUGHT_SIGNATURE).is_some());
    for (k, call) in a.tool_calls.iter().enumerate() {
        let mut function_call = Map::new();
        if echo_id(call, traits) {
            function_call.insert("id".into(), json!(call.id));
        }
        function_call.insert("name".into(), json!(names.wire(&call.name)));
        function_call.insert("args".into(), call_args(call));
        let mut part = Map::new();
        part.insert("functionCall".into(), Value::Object(function_call));
        match signature(&call.extra, THOUGHT_SIGNATURE) {
            Some(sig) => {
                part.insert("thoughtSignature".into(), json!(sig));
            }
            // Calls that never came from Gemini (another provider, or made up by the caller)
            // carry no signature; Gemini 3 rejects the turn unless its first call has one.
            None if k == 0 && !any_signed && !traits.legacy => {
                part.insert("thoughtSignature".into(), json!(SKIP_SIGNATURE));
            }
            None => {}
        }
        parts.push(Value::Object(part));
    }
    if text.is_none()
        && let Some(sig) = text_signature
    {
        // The signature arrived on an empty text part; send it back the same way.
        parts.push(json!({"text": "", "thoughtSignature": sig}));
    }
    (!parts.is_empty()).then(|| json!({"role": "model", "parts": parts}))
}

/// Whether a JSON value has a `$ref`/`$defs` key anywhere (Gemini reads `{"$ref": "…"}` in a
/// function response as a reference to one of its parts; vercel/ai#14369).
fn has_ref_key(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if m.contains_key("$ref") || m.contains_key("$defs") {
                    return true;
                }
                stack.extend(m.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// `functionResponse.response`, always an object: an object output as is; any other output
/// under `output`; an output holding `$ref`/`$defs` keys as its JSON text under `output`; an
/// error as `{"error": message}` plus `output` when the tool returned detail.
pub(crate) fn response_object(r: &ToolResult) -> Value {
    let mut output = r.output.clone();
    if has_ref_key(&output) {
        output = Value::String(output.to_string());
    }
    if r.is_error || r.error.is_some() {
        let mut m = Map::new();
        let message = match (&r.error, &output) {
            (Some(message), _) => message.clone(),
            (None, Value::String(s)) if !s.is_empty() => {
                let s = s.clone();
                output = Value::Null;
                s
            }
            _ => "the tool call failed".to_owned(),
        };
        m.insert("error".into(), Value::String(message));
        if !output.is_null() {
            m.insert("output".into(), output);
        }
        return Value::Object(m);
    }
    match output {
        Value::Object(m) => Value::Object(m),
        Value::Null => json!({}),
        other => json!({"output": other}),
    }
}

/// What the model sees of a result: with `content`, its text parts (joined) stand for the
/// output in [`response_object`]; without, the output itself.
fn shown_response(r: &ToolResult) -> Value {
    if r.content.is_empty() {
        return response_object(r);
    }
    let text: String = r.content.iter().filter_map(Part::as_text).collect();
    let mut shown = ToolResult::new(r.call_id.clone(), r.name.clone(), Value::Null);
    if !text.is_empty() {
        shown.output = Value::String(text);
    }
    shown.is_error = r.is_error;
    shown.error = r.error.clone();
    response_object(&shown)
}

/// How Gemini pairs results with calls (by id where the model has ids, else by name).
const PAIRING: Pairing = Pairing {
    wire: "Gemini",
    call: "functionCall",
    result: "functionResponse",
    same_name: true,
};

/// The user turn answering a call turn: one `functionResponse` per call, in call order.
fn function_responses(run: &ToolResultRun, names: &NameMap, traits: ModelTraits) -> Result<Value> {
    let answers = run.paired(&PAIRING)?;
    let mut parts = Vec::with_capacity(answers.len());
    for Answer { call, at, result } in answers {
        let mut function_response = Map::new();
        if echo_id(call, traits) {
            function_response.insert("id".into(), json!(call.id));
        }
        function_response.insert("name".into(), json!(names.wire(&call.name)));
        function_response.insert("response".into(), shown_response(result));
        // Legacy models take no media here: the downgrade moved it after the results.
        if !traits.legacy {
            let media = function_response_parts(result, at)?;
            if !media.is_empty() {
                function_response.insert("parts".into(), Value::Array(media));
            }
        }
        parts.push(json!({"functionResponse": function_response}));
    }
    Ok(json!({"role": "user", "parts": parts}))
}

/// `systemInstruction` parts and `contents`. Models before Gemini 3 take no media in a
/// function response: theirs goes in one user turn right after the results, each move
/// recorded in `downgrades`.
fn history(
    messages: &[Message],
    names: &NameMap,
    traits: ModelTraits,
    downgrades: &mut Vec<Downgrade>,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut system = Vec::new();
    let mut contents = Vec::new();
    let moved = if traits.legacy {
        tool_media_after_runs(messages, "gemini (before Gemini 3)", downgrades)
    } else {
        std::collections::HashMap::new()
    };
    let mut notes = Vec::new();
    let messages = &*foreign_as_text(messages, ProviderKind::Gemini.name(), &mut notes);
    downgrades.append(&mut notes);
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::System { content } => system.push(json!({"text": content})),
            Message::User { content } => {
                let parts = match content {
                    Content::Text(text) => vec![json!({"text": text})],
                    Content::Parts(parts) => {
                        content_parts(parts, &format!("messages[{i}].content"))?
                    }
                };
                contents.push(json!({"role": "user", "parts": parts}));
            }
            Message::Assistant(a) => {
                if let Some(content) = model_content(a, names, traits) {
                    contents.push(content);
                }
            }
            Message::Tool(_) => {
                let run = tool_result_run(
                    messages,
                    i,
                    "Gemini answers all calls of a turn in the next turn",
                )?;
                contents.push(function_responses(&run, names, traits)?);
                let end = run.end;
                if let Some(media) = end.checked_sub(1).and_then(|last| moved.get(&last)) {
                    let place = format!("messages[{i}..{end}].content");
                    let parts = content_parts(media, &place)?;
                    contents.push(json!({"role": "user", "parts": parts}));
                }
                i = end;
                continue;
            }
        }
        i += 1;
    }
    if contents.is_empty() {
        return Err(Error::input(
            "messages",
            "Gemini needs at least one user or assistant message besides system messages",
        ));
    }
    Ok((system, contents))
}

fn tool_config(choice: &ToolChoice, names: &NameMap) -> Value {
    let config = match choice.without_allowed() {
        ToolChoice::Auto | ToolChoice::Allowed { .. } => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => {
            json!({"mode": "ANY", "allowedFunctionNames": [names.wire(&name)]})
        }
    };
    json!({"functionCallingConfig": config})
}

/// Structured output: `responseMimeType: "application/json"` and the schema, as
/// `responseJsonSchema` (JSON Schema unchanged) or `responseSchema` (lowered like tool
/// parameters), following the request's `schema_mode` as tools do. Models before Gemini 3
/// cannot combine it with function calling: that is refused, not dropped.
fn response_format(
    req: &ChatRequest,
    format: &ResponseFormat,
    traits: ModelTraits,
    default_mode: SchemaMode,
    generation: &mut Map<String, Value>,
) -> Result<()> {
    if traits.legacy && !req.tools.is_empty() {
        return Err(Error::unsupported(
            ProviderKind::Gemini,
            format!(
                "response_format with tools on {:?}: models before Gemini 3 cannot combine \
                 structured output with function calling (send one or the other)",
                req.model
            ),
        ));
    }
    generation.insert("responseMimeType".into(), json!("application/json"));
    match req.schema_mode.unwrap_or(default_mode) {
        SchemaMode::JsonSchema => {
            generation.insert("responseJsonSchema".into(), format.schema.clone());
        }
        SchemaMode::Lowered => {
            if let Some(lowered) = schema::to_gemini(&format.schema, "response_format.schema")? {
                generation.insert("responseSchema".into(), lowered);
            }
        }
    }
    Ok(())
}

/// The whole request.
pub(crate) fn encode(
    req: &ChatRequest,
    stream: bool,
    default_mode: SchemaMode,
) -> Result<HttpRequest> {
    check_tools(req)?;
    crate::providers::shared::refuse_text_calls(req, ProviderKind::Gemini)?;
    let path = path(&req.model, stream)?;
    let traits = ModelTraits::of(&req.model);
    let names = NameMap::build(request_names(req), gemini_name)?;
    let mut downgrades = Vec::new();
    let (system, contents) = history(&req.messages, &names, traits, &mut downgrades)?;

    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    let hosted = crate::providers::hosted_tools::place(ProviderKind::Gemini, req)?;
    if !req.tools.is_empty() {
        let mode = req.schema_mode.unwrap_or(default_mode);
        let declarations = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| declaration(t, i, mode, &names))
            .collect::<Result<Vec<_>>>()?;
        let mut tools = vec![json!({"functionDeclarations": declarations})];
        tools.extend(hosted.tools.iter().cloned());
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &req.tool_choice {
            body.insert("toolConfig".into(), tool_config(choice, &names));
        }
    } else if !hosted.tools.is_empty() {
        body.insert("tools".into(), Value::Array(hosted.tools.clone()));
    } else if req.tool_choice == Some(ToolChoice::Required) {
        return Err(Error::input(
            "tool_choice",
            "tool_choice \"required\" needs at least one tool",
        ));
    }

    let mut generation = Map::new();
    if let Some(max) = req.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    let mut policy = Policy::new(ProviderKind::Gemini, req)?;
    policy.tool_fields(&crate::providers::settings::ToolFields::NONE)?;
    let rule = rule_for(GEMINI_REASONING, &req.model);
    policy.sampling(&GEMINI_SAMPLING, rule, &mut generation)?;
    // Names the table does not know: Gemini 2.x takes a budget, later ones a level.
    let fallback = if traits.legacy {
        ReasoningForm::Budget {
            min: 1,
            max: 24576,
            off: true,
        }
    } else {
        ReasoningForm::Levels(&[Effort::Low, Effort::High])
    };
    let plan = policy.reasoning(rule.map_or(fallback, |r| r.form))?;
    policy.no_summary()?;
    let config = match plan {
        Plan::Default => None,
        Plan::Off => Some(json!({"thinkingBudget": 0})),
        Plan::On => Some(json!({"includeThoughts": true})),
        Plan::Budget(b) => Some(json!({"includeThoughts": true, "thinkingBudget": b})),
        Plan::Level(level) => {
            Some(json!({"includeThoughts": true, "thinkingLevel": level.as_str()}))
        }
        other => {
            return Err(Error::unsupported(
                ProviderKind::Gemini,
                format!("reasoning: {other:?} has no Gemini form"),
            ));
        }
    };
    if let Some(config) = config {
        generation.insert("thinkingConfig".into(), config);
    }
    if let Some(format) = &req.response_format {
        response_format(req, format, traits, default_mode, &mut generation)?;
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    crate::providers::shared::merge_extra_body(&mut body, &req.extra_body);
    Ok(HttpRequest {
        path,
        headers: Vec::new(),
        body: Value::Object(body),
        names,
        downgrades,
        dropped: policy.dropped.into_iter().chain(hosted.dropped).collect(),
        text_calls: None,
    })
}

/// Where the sampling settings go: `generationConfig.topP`, `topK`, `stopSequences` (up to 5),
/// `seed`, `presencePenalty`, `frequencyPenalty`
/// (<https://ai.google.dev/api/generate-content#generationconfig>).
const GEMINI_SAMPLING: SamplingNames = SamplingNames::NONE
    .with_top_p(Some("topP"))
    .with_top_k(Some("topK"))
    .with_stop(Some("stopSequences"), Some(5))
    .with_seed(Some("seed"))
    .with_presence_penalty(Some("presencePenalty"))
    .with_frequency_penalty(Some("frequencyPenalty"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_traits_and_paths() {
        assert!(ModelTraits::of("gemini-2.5-flash").legacy);
        assert!(ModelTraits::of("models/gemini-1.5-pro").legacy);
        assert!(!ModelTraits::of("gemini-3-pro-preview").legacy);
        assert!(!ModelTraits::of("gemini-3.5-flash").legacy);
        assert!(!ModelTraits::of("gemini-flash-latest").legacy);
        assert_eq!(
            path("gemini-2.5-flash", false).unwrap(),
            "/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            path("models/gemini-3-pro-preview", true).unwrap(),
            "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            path("a/b c?", false).unwrap(),
            "/v1beta/models/a%2Fb%20c%3F:generateContent"
        );
        assert_eq!(
            path("tunedModels/my-model", false).unwrap(),
            "/v1beta/tunedModels/my-model:generateContent"
        );
        assert!(path("", false).is_err());
    }

    #[test]
    fn turn_rules_are_input_errors_with_paths() {
        let call = |id: &str| {
            let mut c = ToolCall::new(id, "f", "{}");
            c.extra.insert(ToolCall::SYNTHETIC_ID.into(), json!(true));
            c
        };
        let turn = Message::Assistant(AssistantMessage {
            tool_calls: vec![call("call_0"), call("call_1")],
            ..AssistantMessage::default()
        });
        let result = |id: &str, name: &str| {
            let mut r = ToolResult::ok(&call(id), json!(1));
            r.name = name.into();
            Message::Tool(r)
        };
        let cases = [
            (
                vec![Message::user("q"), result("call_0", "f")],
                "messages[1]",
            ),
            (
                vec![Message::user("q"), turn.clone(), result("call_9", "f")],
                "messages[2].call_id",
            ),
            (
                vec![Message::user("q"), turn.clone(), result("call_0", "g")],
                "messages[2].name",
            ),
            (
                vec![
                    Message::user("q"),
                    turn.clone(),
                    result("call_0", "f"),
                    result("call_0", "f"),
                ],
                "messages[3]",
            ),
            (vec![Message::system("s")], "messages"),
        ];
        for (messages, want) in cases {
            let req = ChatRequest::new("gemini-2.5-flash", messages);
            match encode(&req, false, SchemaMode::Lowered) {
                Err(Error::Input { path, .. }) => assert_eq!(path, want),
                other => panic!("{want}: {other:?}"),
            }
        }
        // Results answering the turn, in any order, and a call turn left unanswered are fine.
        let req = ChatRequest::new(
            "gemini-2.5-flash",
            vec![
                Message::user("q"),
                turn.clone(),
                result("call_1", "f"),
                result("call_0", "f"),
                Message::user("again"),
                turn,
                Message::user("never mind"),
            ],
        );
        let body = encode(&req, false, SchemaMode::Lowered).unwrap().body;
        assert_eq!(body["contents"].as_array().map(Vec::len), Some(6));
    }

    #[test]
    fn response_objects() {
        let call = ToolCall::new("c", "f", "{}");
        let ok = |v: Value| response_object(&ToolResult::ok(&call, v));
        assert_eq!(ok(json!({"t": 1})), json!({"t": 1}));
        assert_eq!(ok(json!("sunny")), json!({"output": "sunny"}));
        assert_eq!(ok(json!([1, 2])), json!({"output": [1, 2]}));
        assert_eq!(ok(Value::Null), json!({}));
        assert_eq!(
            ok(json!({"schema": {"$ref": "#/x"}})),
            json!({"output": "{\"schema\":{\"$ref\":\"#/x\"}}"})
        );
        assert_eq!(
            response_object(&ToolResult::error(&call, "no such city")),
            json!({"error": "no such city"})
        );
    }

    /// A legacy model's tool media moves after the results, each move reported on the
    /// request; Gemini 3 keeps it in the function response and reports nothing.
    fn screenshot_history() -> Vec<Message> {
        let call = ToolCall::new("c1", "shot", "{}");
        let result = ToolResult::ok(&call, json!({"w": 1})).with_content([
            Part::text("the page"),
            Part::image("image/png", "iVBORw0KGgo="),
        ]);
        vec![
            Message::user("look"),
            Message::Assistant(AssistantMessage::default().with_tool_calls([call])),
            Message::Tool(result),
        ]
    }

    #[test]
    fn legacy_tool_media_is_moved_and_reported() {
        let req = ChatRequest::new("gemini-2.5-flash", screenshot_history());
        let sent = encode(&req, false, SchemaMode::Lowered).unwrap();
        assert_eq!(sent.downgrades.len(), 1);
        let d = &sent.downgrades[0];
        assert_eq!((d.message, d.part), (2, 1));
        assert!(d.note.contains("image"), "{}", d.note);
        let contents = sent.body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 4);
        assert!(
            contents[2]["parts"][0]["functionResponse"]
                .get("parts")
                .is_none()
        );
        assert_eq!(contents[3]["role"], "user");
        assert_eq!(
            contents[3]["parts"][1]["inlineData"]["mimeType"],
            "image/png"
        );

        let req = ChatRequest::new("gemini-3-pro-preview", screenshot_history());
        let sent = encode(&req, false, SchemaMode::Lowered).unwrap();
        assert!(sent.downgrades.is_empty());
        assert_eq!(sent.body["contents"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn a_url_without_a_media_type_is_refused_with_its_place() {
        let req = ChatRequest::new(
            "gemini-3-pro-preview",
            vec![Message::user(vec![
                Part::text("look"),
                Part::image_url("https://example.com/a.png"),
            ])],
        );
        match encode(&req, false, SchemaMode::Lowered) {
            Err(Error::Input { path, message }) => {
                assert_eq!(path, "messages[0].content[1]");
                assert!(message.contains("media_type"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
