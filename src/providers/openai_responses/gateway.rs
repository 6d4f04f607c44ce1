//! The gateway's Responses side: a client's Responses request → the canonical request, and the
//! canonical stream → the events an OpenAI Responses client reads, written as events arrive.
//!
//! Request fields follow the Responses reference
//! (<https://platform.openai.com/docs/api-reference/responses/create>); a field the gateway does
//! not translate is refused by name. The gateway keeps no conversation, so
//! `previous_response_id` is refused: the client sends the whole input, as with `store: false`.
//! Streams follow the documented events (`response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.output_item.done`, `response.completed`).
//!
//! Provider state of a call rides in its `call_id` (packed reversibly, checked when it comes
//! back); state of the turn as a whole (reasoning items before the text, an Anthropic turn's
//! opening thinking blocks) rides in a reasoning item whose `encrypted_content` the gateway
//! made, which clients echo as they echo every reasoning item.

use crate::providers::shared::Shown;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Error, Result};
use crate::provider::{Answer, ClientRequest, NamespacedName, ProviderKind, StreamWriter};
use crate::providers::shared::{CallGate, CallOut, Fields, carry_id, settled, uncarry_id};
use crate::providers::shared::{SEALED, pending};
use crate::seal::Seal;
use crate::types::{
    ArgumentsErrorKind, AssistantMessage, ChatRequest, ChatResponse, Content, FinishReason,
    HostedCall, Message, Part, Reasoning, ReasoningSummary, ResponseFormat, Source, StreamEvent,
    ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};

/// Prefix of the `encrypted_content` of a reasoning item that carries the gateway's state,
/// sealed ([`crate::seal`]).
const STATE: &str = "toolwire.state.2.";

/// The prefix of the old, unsealed form (refused).
const OLD_STATE: &str = "toolwire.state.1.";

/// A client's Responses request, read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResponsesRequest {
    /// The canonical request (its `model` is the client's model name, unresolved).
    pub request: ChatRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The functions declared inside `namespace` tools, each a canonical tool under its flat
    /// name ([`NamespacedName`]); their calls go back to the client namespaced.
    pub namespaced: Vec<NamespacedName>,
}

/// Reads a Responses request body. Errors are [`Error::Input`] naming the field.
pub fn decode_request(body: &[u8]) -> Result<ResponsesRequest> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::input("body", format!("not valid JSON: {e}")))?;
    let mut f = Fields::of(value, "")?;
    let model = f
        .string("model")?
        .ok_or_else(|| Error::input("model", "field required"))?;
    let stream = f.boolean("stream")?.unwrap_or(false);
    if f.take("previous_response_id").is_some() {
        return Err(Error::input(
            "previous_response_id",
            "the gateway keeps no conversations: send the whole input (as with store: false)",
        ));
    }
    let mut messages = Vec::new();
    if let Some(instructions) = f.string("instructions")? {
        messages.push(Message::system(instructions));
    }
    match f.need("input")? {
        Value::String(s) => messages.push(Message::user(s)),
        Value::Array(items) => read_items(items, &mut messages)?,
        other => {
            return Err(Error::input(
                "input",
                format!(
                    "must be a string or an array of items, got {}",
                    crate::types::json_kind(&other)
                ),
            ));
        }
    }
    let mut request = ChatRequest::new(model, messages);
    let mut namespaced = Vec::new();
    if let Some(tools) = f.array("tools")? {
        for (i, t) in tools.into_iter().enumerate() {
            let at = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str) == Some("namespace") {
                namespace(t, &at, &mut request.tools, &mut namespaced)?;
                continue;
            }
            // A tool the provider runs (web search, code execution, …) is a hosted tool:
            // mapped to the upstream's equivalent, or refused there by name.
            match crate::providers::hosted_tools::read_responses(&t) {
                Some(hosted) => request.hosted_tools.push(hosted),
                None => request.tools.push(tool(t, &at)?),
            }
        }
    }
    if let Some(choice) = f.take("tool_choice") {
        request.tool_choice = Some(match choice {
            Value::String(s) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                other => {
                    return Err(Error::input(
                        "tool_choice",
                        format!("{other:?}: expected auto, none, required or a function"),
                    ));
                }
            },
            other => {
                let mut c = Fields::of(other, "tool_choice")?;
                if c.string("type")?.as_deref() == Some("allowed_tools") {
                    // {"type":"allowed_tools","mode","tools":[{"type":"function","name"}]}
                    let mode = crate::providers::openai::gateway::allowed_mode(
                        c.string("mode")?,
                        "tool_choice.mode",
                    )?;
                    let mut tools = Vec::new();
                    for (i, t) in c
                        .array("tools")?
                        .unwrap_or_default()
                        .into_iter()
                        .enumerate()
                    {
                        let at = format!("tool_choice.tools[{i}]");
                        let mut t = Fields::of(t, &at)?;
                        t.ignore("type");
                        let name = t
                            .string("name")?
                            .ok_or_else(|| Error::input(format!("{at}.name"), "field required"))?;
                        t.finish()?;
                        tools.push(name);
                    }
                    c.finish()?;
                    ToolChoice::Allowed { mode, tools }
                } else {
                    let name = c
                        .string("name")?
                        .ok_or_else(|| Error::input("tool_choice.name", "field required"))?;
                    c.finish()?;
                    ToolChoice::Tool(name)
                }
            }
        });
    }
    request.parallel_tool_calls = f.boolean("parallel_tool_calls")?;
    request.max_tokens = f.count("max_output_tokens")?;
    request.temperature = f.number("temperature")?;
    request.top_p = f.number("top_p")?;
    if let Some(reasoning) = f.take("reasoning") {
        let mut r = Fields::of(reasoning, "reasoning")?;
        let effort = r.effort("effort")?;
        let summary = match r.string("summary")?.as_deref() {
            None => None,
            Some("auto") => Some(ReasoningSummary::Auto),
            Some("concise") => Some(ReasoningSummary::Concise),
            Some("detailed") => Some(ReasoningSummary::Detailed),
            Some(other) => {
                let other = other.shown();
                return Err(Error::input(
                    "reasoning.summary",
                    format!("{other}: expected auto, concise or detailed"),
                ));
            }
        };
        // The older spelling of `summary`.
        r.ignore("generate_summary");
        let mut settings = Reasoning::default();
        if let Some(effort) = effort {
            settings = settings.with_effort(effort);
        }
        if let Some(summary) = summary {
            settings = settings.with_summary(summary);
        }
        if settings != Reasoning::default() {
            request.reasoning = Some(settings);
        }
        r.finish()?;
    }
    if let Some(text) = f.take("text") {
        let mut t = Fields::of(text, "text")?;
        t.verbosity("verbosity")?;
        if let Some(format) = t.take("format") {
            let mut s = Fields::of(format, "text.format")?;
            match s.string("type")?.as_deref() {
                Some("text") => {}
                Some("json_schema") => {
                    let name = s.string("name")?.unwrap_or_default();
                    let schema = s.take("schema").unwrap_or_else(|| json!({}));
                    let mut format = ResponseFormat::json_schema(name, schema);
                    format.description = s.string("description")?;
                    format.strict = s.boolean("strict")?;
                    request.response_format = Some(format);
                }
                other => {
                    let other = other.shown();
                    return Err(Error::input(
                        "text.format.type",
                        format!("{other}: the gateway takes text or json_schema"),
                    ));
                }
            }
            s.finish()?;
        }
        t.finish()?;
    }
    // Asking for encrypted reasoning back: the gateway always sends what the next turn needs.
    f.ignore("include");
    // Labels and storage hints for the client's own records; the gateway stores nothing.
    f.ignore("store");
    f.ignore("metadata");
    f.ignore("user");
    // Codex's labels of its own session, and a prompt-cache routing hint: neither changes the
    // answer (the same wire passes them as sent).
    f.ignore("client_metadata");
    f.ignore("prompt_cache_key");
    f.finish()?;
    if let Some(choice) = &mut request.tool_choice {
        flatten_choice(choice, &request.tools, &namespaced);
    }
    Ok(ResponsesRequest {
        request,
        stream,
        namespaced,
    })
}

/// A tool choice naming a function declared inside a namespace by its inner name (the
/// Responses reference's `ToolChoiceFunction` carries only `name`) names the canonical tool's
/// flat name, when exactly one namespaced tool has that inner name and no plain tool does.
/// Any other name is left as it came, for the upstream to judge.
fn flatten_choice(
    choice: &mut ToolChoice,
    tools: &[ToolDefinition],
    namespaced: &[NamespacedName],
) {
    let flat = |name: &mut String| {
        if tools.iter().any(|t| t.name == *name) {
            return;
        }
        let mut inner = namespaced.iter().filter(|n| n.name == *name);
        if let (Some(only), None) = (inner.next(), inner.next()) {
            name.clone_from(&only.flat);
        }
    };
    match choice {
        ToolChoice::Tool(name) => flat(name),
        ToolChoice::Allowed { tools, .. } => tools.iter_mut().for_each(flat),
        _ => {}
    }
}

/// A `namespace` tool (`{"type": "namespace", "name", "description", "tools": [...]}`, the
/// Responses reference's `NamespaceToolParam`): each function or custom tool inside it becomes
/// a canonical tool under its flat name ([`NamespacedName`]), its description prefixed by the
/// namespace's so the model keeps the grouping's sense.
fn namespace(
    value: Value,
    at: &str,
    tools: &mut Vec<ToolDefinition>,
    namespaced: &mut Vec<NamespacedName>,
) -> Result<()> {
    let mut n = Fields::of(value, at)?;
    n.ignore("type");
    let space = n
        .string("name")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::input(format!("{at}.name"), "field required"))?;
    let about = n.string("description")?.unwrap_or_default();
    let inner = n
        .array("tools")?
        .ok_or_else(|| Error::input(format!("{at}.tools"), "field required"))?;
    n.finish()?;
    for (j, mut t) in inner.into_iter().enumerate() {
        let at = format!("{at}.tools[{j}]");
        let name = match t.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(Error::input(format!("{at}.name"), "field required")),
        };
        let entry = NamespacedName::new(&space, &name);
        if let Value::Object(map) = &mut t {
            map.insert("name".into(), Value::String(entry.flat.clone()));
            if !about.is_empty() {
                let own = map.get("description").and_then(Value::as_str).unwrap_or("");
                let joined = if own.is_empty() {
                    about.clone()
                } else {
                    format!("{about} {own}")
                };
                map.insert("description".into(), Value::String(joined));
            }
        }
        tools.push(tool(t, &at)?);
        namespaced.push(entry);
    }
    Ok(())
}

/// `item` (an output item) with a call of a namespaced tool written as the client declared it:
/// `name` the name inside the namespace, `namespace` beside it.
fn write_namespaced(item: &mut Value, namespaced: &[NamespacedName]) {
    if namespaced.is_empty() {
        return;
    }
    let Some(map) = item.as_object_mut() else {
        return;
    };
    if !matches!(
        map.get("type").and_then(Value::as_str),
        Some("function_call" | "custom_tool_call")
    ) {
        return;
    }
    let flat = map.get("name").and_then(Value::as_str).unwrap_or_default();
    if let Some(n) = namespaced.iter().find(|n| n.flat == flat) {
        map.insert("name".into(), Value::String(n.name.clone()));
        map.insert("namespace".into(), Value::String(n.namespace.clone()));
    }
}

/// The assistant turn being read from consecutive output items the client echoed.
#[derive(Default)]
struct Turn {
    message: Option<AssistantMessage>,
    /// Reasoning items waiting for the call or text they came before.
    pending: Vec<Value>,
}

impl Turn {
    fn get(&mut self) -> &mut AssistantMessage {
        self.message.get_or_insert_with(AssistantMessage::default)
    }

    fn end(&mut self, out: &mut Vec<Message>) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            // The items the gateway's state item carried verbatim win over their echoes.
            self.get()
                .extra
                .entry(super::REASONING_ITEMS)
                .or_insert(Value::Array(pending));
        }
        if let Some(m) = self.message.take() {
            out.push(Message::Assistant(m));
        }
    }
}

fn read_items(items: Vec<Value>, out: &mut Vec<Message>) -> Result<()> {
    let mut turn = Turn::default();
    let mut names: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("input[{i}]");
        // A call OpenAI ran (or one the gateway handed over translated, its original sealed
        // in the id): kept whole, in place.
        if let Some(ty) = (item.get("type").and_then(Value::as_str))
            .filter(|ty| super::decode::hosted_item(ty) && item.get("role").is_none())
        {
            let (name, input, result) = super::decode::hosted_fields(ty, &item);
            let id = item
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let m = turn.get();
            let mut call = HostedCall::new(
                id,
                name,
                crate::provider::ProviderKind::OpenAiResponses.name(),
            )
            .with_input(input)
            .with_at(m.content.as_deref().map_or(0, str::len));
            call.result = result;
            m.hosted_calls.push(call.with_blocks([item]));
            continue;
        }
        let mut f = Fields::of(item, &at)?;
        let kind = f.string("type")?;
        let role = f.string("role")?;
        match (kind.as_deref(), role.as_deref()) {
            (None | Some("message"), Some("assistant")) => {
                f.ignore("id");
                f.ignore("status");
                let text = output_text(f.need("content")?, &format!("{at}.content"))?;
                f.finish()?;
                let m = turn.get();
                m.content.get_or_insert_with(String::new).push_str(&text);
            }
            (None | Some("message"), Some(role @ ("user" | "system" | "developer"))) => {
                turn.end(out);
                f.ignore("id");
                f.ignore("status");
                let content = f.need("content")?;
                f.finish()?;
                let parts = input_parts(content, &format!("{at}.content"))?;
                if role == "user" {
                    out.push(Message::user(parts));
                } else {
                    let text = parts.as_text().map(|t| t.into_owned()).ok_or_else(|| {
                        Error::input(format!("{at}.content"), "a system message takes text only")
                    })?;
                    out.push(Message::system(text));
                }
            }
            (Some("reasoning"), None) => {
                let mut item = Map::new();
                item.insert("type".into(), json!("reasoning"));
                for key in ["id", "summary", "encrypted_content", "content", "status"] {
                    if let Some(v) = f.take(key) {
                        item.insert(key.into(), v);
                    }
                }
                f.finish()?;
                let content = item.get("encrypted_content").and_then(Value::as_str);
                if content.is_some_and(|c| c.starts_with(OLD_STATE)) {
                    return Err(Error::input(
                        format!("{at}.encrypted_content"),
                        "this reasoning item carries the gateway's state in the old unsealed \
                         form, which it no longer accepts: start again from the last user turn",
                    ));
                }
                match content.and_then(|e| e.strip_prefix(STATE)) {
                    // Opened (checked, allow-listed) once the whole request is read.
                    Some(packed) => {
                        let p = pending(&format!("{at}.encrypted_content"), "item", "", packed);
                        turn.get().extra.insert(SEALED.into(), p);
                    }
                    None => turn.pending.push(Value::Object(item)),
                }
            }
            (Some("function_call"), None) => {
                f.ignore("id");
                f.ignore("status");
                let call_id = f
                    .string("call_id")?
                    .ok_or_else(|| Error::input(format!("{at}.call_id"), "field required"))?;
                let mut name = f.string("name")?.unwrap_or_default();
                // A call of a namespaced tool: the canonical tool's flat name.
                if let Some(space) = f.string("namespace")? {
                    name = NamespacedName::new(&space, &name).flat;
                }
                let arguments = f.string("arguments")?.unwrap_or_default();
                f.finish()?;
                let (id, mut extra) = uncarry_id(&call_id, &format!("{at}.call_id"))?;
                if !turn.pending.is_empty() && !extra.contains_key(super::REASONING_ITEMS) {
                    let pending = std::mem::take(&mut turn.pending);
                    extra.insert(super::REASONING_ITEMS.into(), Value::Array(pending));
                }
                turn.pending.clear();
                let mut call = ToolCall::new(id, name.clone(), arguments);
                call.extra = extra;
                names.insert(call.id.clone(), name);
                turn.get().tool_calls.push(call);
            }
            (Some("function_call_output"), None) => {
                turn.end(out);
                f.ignore("id");
                f.ignore("status");
                let call_id = f
                    .string("call_id")?
                    .ok_or_else(|| Error::input(format!("{at}.call_id"), "field required"))?;
                let (id, _) = uncarry_id(&call_id, &format!("{at}.call_id"))?;
                let Some(name) = names.get(&id) else {
                    return Err(Error::input(
                        format!("{at}.call_id"),
                        format!("{id:?} answers no function_call earlier in the input"),
                    ));
                };
                let mut result = ToolResult::new(id, name.clone(), Value::Null);
                match f.need("output")? {
                    Value::String(s) => result.output = Value::String(s),
                    Value::Array(parts) => {
                        let Content::Parts(parts) =
                            input_parts(Value::Array(parts), &format!("{at}.output"))?
                        else {
                            unreachable!("an array reads as parts")
                        };
                        result = result.with_content(parts);
                    }
                    other => {
                        return Err(Error::input(
                            format!("{at}.output"),
                            format!(
                                "must be a string or content parts, got {}",
                                crate::types::json_kind(&other)
                            ),
                        ));
                    }
                }
                f.finish()?;
                out.push(Message::Tool(result));
            }
            (kind, role) => {
                let (kind, role) = (kind.shown(), role.shown());
                return Err(Error::input(
                    format!("{at}.type"),
                    format!(
                        "an item of type {kind} (role {role}): the gateway takes messages, \
                         reasoning, function_call and function_call_output items"
                    ),
                ));
            }
        }
    }
    turn.end(out);
    Ok(())
}

/// An assistant message's text (`output_text` parts, or a string).
fn output_text(value: Value, at: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        Value::Array(parts) => {
            let mut out = String::new();
            for (j, p) in parts.into_iter().enumerate() {
                let at = format!("{at}[{j}]");
                let mut p = Fields::of(p, &at)?;
                match p.string("type")?.as_deref() {
                    Some("output_text" | "input_text") => {
                        out.push_str(&p.string("text")?.unwrap_or_default());
                        p.ignore("annotations");
                        p.ignore("logprobs");
                    }
                    other => {
                        let other = other.shown();
                        return Err(Error::input(
                            format!("{at}.type"),
                            format!("{other}: an assistant message takes output_text parts"),
                        ));
                    }
                }
                p.finish()?;
            }
            Ok(out)
        }
        other => Err(Error::input(
            at,
            format!(
                "must be a string or parts, got {}",
                crate::types::json_kind(&other)
            ),
        )),
    }
}

fn input_parts(value: Value, at: &str) -> Result<Content> {
    let parts = match value {
        Value::String(s) => return Ok(Content::Text(s)),
        Value::Array(parts) => parts,
        other => {
            return Err(Error::input(
                at,
                format!(
                    "must be a string or parts, got {}",
                    crate::types::json_kind(&other)
                ),
            ));
        }
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        let mut p = Fields::of(p, &at)?;
        let part = match p.string("type")?.as_deref() {
            Some("input_text" | "output_text") => {
                p.ignore("annotations");
                Part::text(p.string("text")?.unwrap_or_default())
            }
            Some("input_image") => {
                p.ignore("detail");
                let url = p.string("image_url")?.ok_or_else(|| {
                    Error::input(
                        format!("{at}.image_url"),
                        "field required (an uploaded file_id cannot be read by another provider)",
                    )
                })?;
                Part::Image {
                    source: Source::from_url(url),
                }
            }
            Some("input_file") => {
                let filename = p.string("filename")?;
                let source = match (p.string("file_data")?, p.string("file_url")?) {
                    (Some(data), None) => Source::from_url(data),
                    (None, Some(url)) => Source::Url {
                        url,
                        media_type: None,
                    },
                    _ => {
                        return Err(Error::input(
                            &at,
                            "an input_file needs file_data or file_url (an uploaded file_id \
                             cannot be read by another provider)",
                        ));
                    }
                };
                Part::File { source, filename }
            }
            other => {
                let other = other.shown();
                return Err(Error::input(
                    format!("{at}.type"),
                    format!("unknown content part type {other}"),
                ));
            }
        };
        p.finish()?;
        out.push(part);
    }
    Ok(Content::Parts(out))
}

fn tool(value: Value, at: &str) -> Result<ToolDefinition> {
    let mut t = Fields::of(value, at)?;
    let custom = match t.string("type")?.as_deref() {
        Some("function") => false,
        // A free-form tool: its text input as one string argument, its format kept.
        Some("custom") => true,
        other => {
            let other = other.map_or_else(|| "no type".to_owned(), |o| o.shown());
            return Err(Error::input(
                format!("{at}.type"),
                format!(
                    "{other}: the gateway takes function and custom tools (hosted tools run at \
                     OpenAI only)"
                ),
            ));
        }
    };
    let name = t.string("name")?.unwrap_or_default();
    let description = t.string("description")?.unwrap_or_default();
    let relocate = |e: Error, field: &str| match e {
        Error::Input { message, .. } => Error::input(format!("{at}.{field}"), message),
        other => other,
    };
    let mut def = ToolDefinition::new(name, description).map_err(|e| relocate(e, "name"))?;
    if let Some(parameters) = t.take("parameters") {
        def = def
            .with_parameters(parameters)
            .map_err(|e| relocate(e, "parameters"))?;
    }
    if custom {
        let format = t
            .take("format")
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| json!({"type": "text"}));
        def = def
            .with_parameters(json!({
                "type": "object",
                "properties": {"input": {"type": "string"}},
                "required": ["input"],
                super::CUSTOM_FORMAT: format,
            }))
            .map_err(|e| relocate(e, "format"))?;
    } else {
        def = def.with_strict(t.boolean("strict")?.unwrap_or(false));
    }
    def = def.with_defer_loading(t.boolean("defer_loading")?.unwrap_or(false));
    t.finish()?;
    Ok(def)
}

/// `status` and `incomplete_details` for a finish reason: `completed` for a normal end, else
/// `incomplete` with the reason (the Response object's `incomplete_details.reason`,
/// <https://platform.openai.com/docs/api-reference/responses/object>), a reason this wire has
/// no name for going out as it is rather than as `completed`. A turn that ended in `error`
/// has no status: its error is sent instead.
fn finish_status(reason: &FinishReason) -> Result<(&'static str, Option<Value>)> {
    let incomplete = |why: &str| ("incomplete", Some(json!({"reason": why})));
    Ok(match reason {
        FinishReason::Stop | FinishReason::ToolCalls => ("completed", None),
        FinishReason::Length => incomplete("max_output_tokens"),
        FinishReason::ContentFilter => incomplete("content_filter"),
        FinishReason::Pause => incomplete("pause_turn"),
        FinishReason::Other(why) => incomplete(why),
        FinishReason::Error => {
            return Err(Error::unsupported(
                ProviderKind::OpenAiResponses,
                "a response that ended in `error` (send an error with encode_error instead)",
            ));
        }
    })
}

/// `status` and `incomplete_details` of a turn ([`finish_status`]); a turn that ended in error
/// (its error goes out as the error) is `completed`.
fn status(reason: &FinishReason) -> (&'static str, Value) {
    match finish_status(reason) {
        Ok((status, details)) => (status, details.unwrap_or(Value::Null)),
        Err(_) => ("completed", Value::Null),
    }
}

/// `usage`, each detail written only when known: a count the upstream did not give is left out,
/// never written as 0.
fn usage_json(u: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("input_tokens".into(), json!(u.input_tokens));
    if let Some(cached) = u.cached_input_tokens {
        m.insert(
            "input_tokens_details".into(),
            json!({"cached_tokens": cached}),
        );
    }
    m.insert("output_tokens".into(), json!(u.output_tokens));
    if let Some(r) = u.reasoning_tokens {
        m.insert(
            "output_tokens_details".into(),
            json!({"reasoning_tokens": r}),
        );
    }
    m.insert(
        "total_tokens".into(),
        json!(u.input_tokens.saturating_add(u.output_tokens)),
    );
    Value::Object(m)
}

/// The fields of the `error` event of a stream that fails, as documented
/// (<https://platform.openai.com/docs/api-reference/responses-streaming/error>): `code`,
/// `message` and `param` at the event's top level.
fn error_event(error: &ApiError) -> Value {
    json!({"code": error.code, "message": error.message, "param": null})
}

/// The `error` of the `response.failed` that ends a failing stream: `code` (required by the
/// Response object's schema; `server_error` when the failure has none) and `message`.
fn failed_error(error: &ApiError) -> Value {
    let code = error.code.as_deref().unwrap_or("server_error");
    json!({"code": code, "message": error.message})
}

fn response_object(
    stamp: &Stamp<'_>,
    status: &str,
    details: Value,
    output: Vec<Value>,
    usage: Option<&Usage>,
) -> Value {
    json!({
        "id": stamp.id, "object": "response", "created_at": stamp.created, "status": status,
        "error": null, "incomplete_details": details, "model": stamp.model, "output": output,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": usage.map(usage_json),
    })
}

/// A message item: its `output_text` part when it has text, its refusal part when it has one.
fn message_item(id: &str, status: &str, text: Option<&str>, refusal: Option<&str>) -> Value {
    let mut content = Vec::new();
    if let Some(text) = text {
        content.push(text_part("output_text", text));
    }
    if let Some(refusal) = refusal {
        content.push(text_part("refusal", refusal));
    }
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
           "content": content})
}

/// A content part of a message: `output_text` (with its annotations) or `refusal`.
fn text_part(kind: &str, text: &str) -> Value {
    if kind == "refusal" {
        json!({"type": "refusal", "refusal": text})
    } else {
        json!({"type": "output_text", "text": text, "annotations": []})
    }
}

/// A call's output item: a `function_call` with its `arguments`, or for a custom (free-form)
/// tool a `custom_tool_call` with its `input`; `call_id` left out when the call has none.
fn call_item(c: &CallItem, text: &str, status: &str) -> Value {
    let mut m = Map::new();
    let (kind, field) = if c.custom {
        ("custom_tool_call", "input")
    } else {
        ("function_call", "arguments")
    };
    m.insert("type".into(), json!(kind));
    m.insert("id".into(), json!(c.item_id));
    if let Some(call_id) = &c.call_id {
        m.insert("call_id".into(), json!(call_id));
    }
    m.insert("name".into(), json!(c.name));
    m.insert(field.into(), json!(text));
    m.insert("status".into(), json!(status));
    Value::Object(m)
}

fn reasoning_item(id: &str, text: &str) -> Value {
    let summary = if text.is_empty() {
        json!([])
    } else {
        json!([{"type": "summary_text", "text": text}])
    };
    json!({"type": "reasoning", "id": id, "summary": summary})
}

/// The reasoning item carrying the turn's own provider state, when it has any.
fn state_item(response: &ChatResponse, seal: Option<&Seal>) -> Option<Value> {
    let seal = seal?;
    let state: Map<String, Value> = response
        .extra
        .iter()
        .filter(|(k, _)| k.as_str() != super::UNKNOWN_EVENTS && k.as_str() != super::OTHER_ITEMS)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if state.is_empty() {
        return None;
    }
    let packed = seal.pack("item", "", &state);
    Some(
        json!({"type": "reasoning", "id": "rs_toolwire_state", "summary": [],
                "encrypted_content": format!("{STATE}{packed}")}),
    )
}

/// Who an answer is written for: the response's `id`, `model` and `created_at`, and whether
/// the writer speaks as OpenAI itself (the mock's scripted answers) rather than translating
/// another wire's turn (the gateway's).
#[derive(Debug, Clone, Copy)]
struct Stamp<'a> {
    id: &'a str,
    model: &'a str,
    created: u64,
    /// Speaking as OpenAI itself ([`EventWriter::native`]).
    native: bool,
    /// The key sealing the state on call ids and in the state item (translated answers).
    seal: Option<&'a Seal>,
}

/// The mock's own values.
const MOCK: Stamp<'static> = Stamp {
    id: "resp_toolwire_mock",
    model: "toolwire-mock",
    created: 0,
    native: true,
    seal: None,
};

/// The id of the mock's message item.
const MOCK_MESSAGE: &str = "msg_toolwire_mock";

/// The id of the reasoning item the mock makes from reasoning text that came without items.
const MOCK_REASONING: &str = "rs_toolwire_mock";

fn is_custom(call: &ToolCall) -> bool {
    call.extra.get(super::CUSTOM_TOOL) == Some(&Value::Bool(true))
}

/// A call the turn cut off: streamed without its `.done` events, `incomplete` in a body.
fn cut_off(call: &ToolCall) -> bool {
    (call.error.as_ref()).is_some_and(|e| e.kind == ArgumentsErrorKind::Truncated)
}

/// What a custom call's item carries: the `input` argument of its canonical arguments.
fn custom_input(call: &ToolCall) -> Option<&str> {
    (call.arguments.as_ref())
        .and_then(|a| a.get("input"))
        .and_then(Value::as_str)
}

/// What the call's item carries: its argument text, or (speaking as OpenAI) a custom call's
/// input.
pub(super) fn call_text(call: &ToolCall, native: bool) -> &str {
    match custom_input(call) {
        Some(input) if native && is_custom(call) => input,
        _ => &call.raw_arguments,
    }
}

/// The reasoning items under `extra`, verbatim.
fn items_of(extra: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    (extra.get(super::REASONING_ITEMS).and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
}

/// Whether the response carries reasoning items (a Responses upstream's, or the mock's
/// scripted ones) anywhere.
fn has_items(response: &ChatResponse) -> bool {
    items_of(&response.extra).next().is_some()
        || (response.tool_calls.iter()).any(|c| items_of(&c.extra).next().is_some())
}

/// The items before the text that no event announces, speaking as OpenAI: the answer's
/// output items with no canonical form ([`super::OTHER_ITEMS`]), verbatim.
fn other_items(response: &ChatResponse) -> Vec<Value> {
    (response
        .extra
        .get(super::OTHER_ITEMS)
        .and_then(Value::as_array))
    .into_iter()
    .flatten()
    .filter(|v| v.is_object())
    .cloned()
    .collect()
}

/// The blocks of the hosted calls made on this wire, speaking as OpenAI: their output items.
fn hosted_items(call: &HostedCall) -> Vec<Value> {
    if call.wire != ProviderKind::OpenAiResponses.name() {
        return Vec::new();
    }
    (call.blocks.iter().filter(|b| b.is_object()).cloned()).collect()
}

/// The reasoning items of the turn in order, each before what it came before: the answer's
/// own items (or, when it has none anywhere, one carrying its reasoning text as its summary).
/// `calls` adds those before each call.
fn reasoning_items(response: &ChatResponse, id: &str, calls: bool) -> Vec<Value> {
    let mut out: Vec<Value> = items_of(&response.extra).cloned().collect();
    if !has_items(response)
        && let Some(reasoning) = &response.reasoning
    {
        out.push(reasoning_item(id, reasoning));
    }
    if calls {
        for call in &response.tool_calls {
            out.extend(items_of(&call.extra).cloned());
        }
    }
    out
}

/// The item of call `i` of `response` as the stamp writes it: its item id (an upstream's kept
/// speaking as OpenAI), its call id (carrying the call's state when translated; left out when
/// minted, speaking as OpenAI), its kind.
fn call_of(call: &ToolCall, i: usize, stamp: &Stamp<'_>) -> CallItem {
    let native = stamp.native;
    let item_id = match call.extra.get(super::ITEM_ID).and_then(Value::as_str) {
        Some(id) if native => id.to_owned(),
        _ if native => format!("fc_toolwire_{i}"),
        _ => format!("fc_{i}"),
    };
    let call_id = if native {
        (!call.has_synthetic_id()).then(|| call.id.clone())
    } else {
        Some(carry_id(call, stamp.seal))
    };
    CallItem {
        output_index: 0,
        item_id,
        call_id,
        name: call.name.clone(),
        arguments: String::new(),
        custom: native && is_custom(call),
        cut: native && cut_off(call),
    }
}

/// A whole `response` body for `response`. `id` and `created` are the caller's.
///
/// The reasoning items of a Responses upstream go out as it sent them (id, summary,
/// `encrypted_content`), each before the call it came before; other reasoning is one item with
/// the text as its summary.
pub fn encode_body(response: &ChatResponse, id: &str, model: &str, created: u64) -> Vec<u8> {
    let stamp = Stamp {
        id,
        model,
        created,
        native: false,
        seal: None,
    };
    whole(response, &stamp)
}

/// [`encode_body`] with the state on call ids and in the state item sealed by `seal`.
fn encode_sealed(
    response: &ChatResponse,
    id: &str,
    model: &str,
    created: u64,
    seal: Option<&Seal>,
) -> Vec<u8> {
    let stamp = Stamp {
        id,
        model,
        created,
        native: false,
        seal,
    };
    whole(response, &stamp)
}

/// The mock's whole body of a scripted answer, speaking as OpenAI: the items of the stream's
/// `response.completed`, in the same order, a cut-off call `incomplete`.
pub(super) fn native_body(response: &ChatResponse) -> Result<Vec<u8>> {
    sendable(response)?;
    Ok(whole(response, &MOCK))
}

/// Refuses what this wire cannot send: a turn that ended in `error`, a custom-tool call
/// without a string `input` argument.
pub(super) fn sendable(response: &ChatResponse) -> Result<()> {
    finish_status(&response.finish_reason)?;
    for (i, call) in response.tool_calls.iter().enumerate() {
        if is_custom(call) && custom_input(call).is_none() {
            return Err(Error::unsupported(
                ProviderKind::OpenAiResponses,
                format!("tool_calls[{i}] is a custom-tool call without a string `input` argument"),
            ));
        }
    }
    Ok(())
}

/// The one body writer of this wire, the gateway's and the mock's.
fn whole(response: &ChatResponse, stamp: &Stamp<'_>) -> Vec<u8> {
    // Translated, calls keep their raw text; a turn with a malformed call never ends `stop`
    // ([`settled`]).
    let response = &*if stamp.native {
        std::borrow::Cow::Borrowed(response)
    } else {
        settled(response, true)
    };
    let native = stamp.native;
    let reasoning = if native { MOCK_REASONING } else { "rs_0" };
    let mut output = reasoning_items(response, reasoning, false);
    if native {
        output.extend(other_items(response));
    }
    // Hosted calls made on this wire, or translated to it for this client.
    output.extend(response.hosted_calls.iter().flat_map(hosted_items));
    let text = (response.text.as_deref()).filter(|t| !native || !t.is_empty());
    let refusal = (response.extra.get(super::REFUSAL))
        .and_then(Value::as_str)
        .filter(|_| native);
    if text.is_some() || refusal.is_some() {
        let id = if native { MOCK_MESSAGE } else { "msg_0" };
        output.push(message_item(id, "completed", text, refusal));
    }
    for (i, call) in response.tool_calls.iter().enumerate() {
        output.extend(items_of(&call.extra).cloned());
        let item = call_of(call, i, stamp);
        let done = if native {
            !item.cut
        } else {
            call.is_complete() || call.is_free_form()
        };
        let status = if done { "completed" } else { "incomplete" };
        output.push(call_item(&item, call_text(call, native), status));
    }
    output.extend(state_item(response, stamp.seal));
    let (status, details) = status(&response.finish_reason);
    let body = response_object(stamp, status, details, output, response.usage.as_ref());
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The error body and status for `error`, in OpenAI's shape (`{"error": {"message", "type",
/// "param", "code"}}`, the type the class of its status): the gateway's and the mock's.
pub fn encode_error(error: &ApiError) -> (u16, Vec<u8>) {
    crate::providers::openai::gateway::encode_error(error)
}

/// One part of a reasoning item: a summary part or a `reasoning_text` content part, and its
/// position among its kind.
#[derive(Debug, Clone, PartialEq)]
struct ReasoningPart {
    summary: bool,
    index: usize,
    text: String,
}

/// The parts of a reasoning item, summary parts first, as it streams them.
fn parts_of(item: &Value) -> Vec<ReasoningPart> {
    let texts = |key: &str, kind: &str| -> Vec<String> {
        (item.get(key).and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect()
    };
    let summary = texts("summary", "summary_text").into_iter().enumerate();
    let content = texts("content", "reasoning_text").into_iter().enumerate();
    (summary.map(|(index, text)| ReasoningPart {
        summary: true,
        index,
        text,
    }))
    .chain(content.map(|(index, text)| ReasoningPart {
        summary: false,
        index,
        text,
    }))
    .collect()
}

/// The item open on the client's side.
#[derive(Debug, Clone, PartialEq)]
enum Open {
    None,
    /// A reasoning item: its id (the upstream's when it sent one), its text so far, the
    /// upstream's `encrypted_content` once known; speaking as OpenAI, the scripted item itself,
    /// whose parts the reasoning text fills in order.
    Reasoning {
        id: String,
        text: String,
        encrypted: Option<String>,
        scripted: Option<Box<Scripted>>,
    },
    /// A message: its id, its text so far, whether its text part was opened.
    Message {
        id: String,
        text: String,
        has_text: bool,
    },
    Call {
        slot: usize,
    },
}

/// A scripted reasoning item being streamed: the item, its parts, the part being filled and
/// the text it has so far.
#[derive(Debug, Clone, PartialEq)]
struct Scripted {
    item: Value,
    parts: Vec<ReasoningPart>,
    at: usize,
    got: String,
    opened: bool,
}

#[derive(Debug)]
struct CallItem {
    output_index: usize,
    item_id: String,
    /// Left out of the item when `None` (a minted id, speaking as OpenAI).
    call_id: Option<String>,
    name: String,
    arguments: String,
    /// A custom (free-form) tool's call: its text is `input`.
    custom: bool,
    /// Cut off by the end of the turn: no `.done` events, not in the final output.
    cut: bool,
}

/// What a writer speaking as OpenAI itself (the mock) knows of its scripted answer before it
/// streams: what no event carries.
#[derive(Debug)]
struct Native {
    /// The answer itself: its reasoning items, hosted calls, calls and refusal.
    response: ChatResponse,
    /// The reasoning items, in order, each streamed as its turn comes.
    reasoning: std::collections::VecDeque<Value>,
    /// How many reasoning items open the turn (the answer's own, before its other items).
    opening: usize,
    /// How many reasoning items were opened so far.
    opened: usize,
    /// The items no event announces, sent whole after the turn's opening reasoning items.
    others: Option<Vec<Value>>,
    /// Whether the message item was opened.
    message: bool,
}

/// The Responses [`StreamWriter`]: the one stream writer of this wire, the gateway's (call ids
/// carrying their state) and the mock's (its native mode: speaking as OpenAI itself).
#[derive(Debug)]
pub struct EventWriter {
    id: String,
    model: String,
    created: u64,
    sequence: u64,
    calls: CallGate,
    /// The key sealing the turn's state item.
    seal: Option<Seal>,
    open: Open,
    output: Vec<Value>,
    /// Items begun but never finished (cut-off calls): they keep their place in the numbering.
    skipped: usize,
    call_items: Vec<CallItem>,
    finished: bool,
    /// Tools the client declared inside a namespace: their calls are written namespaced.
    namespaced: Vec<NamespacedName>,
    /// Speaking as OpenAI itself ([`EventWriter::native`]).
    native: Option<Native>,
}

impl EventWriter {
    /// A writer for one stream; `id`, `model` and `created` go on the response object.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: u64) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            created,
            sequence: 0,
            calls: CallGate::default(),
            seal: None,
            open: Open::None,
            output: Vec::new(),
            skipped: 0,
            call_items: Vec::new(),
            finished: false,
            namespaced: Vec::new(),
            native: None,
        }
    }

    /// A writer speaking as OpenAI itself, for the scripted answer `response` (the mock's
    /// streams), as the streaming events reference describes them
    /// (<https://platform.openai.com/docs/api-reference/responses-streaming>): each reasoning
    /// item streamed part by part (its summary parts, then its `reasoning_text` content) and
    /// finished verbatim, items with no canonical form and hosted calls' items sent whole in
    /// their places, the message with its refusal part, calls under their own item ids and
    /// call ids (custom tools' as `custom_tool_call` with `input`), a call cut off by the end
    /// of the turn without its `.done` events; calls are never held or carried.
    pub(crate) fn native(response: &ChatResponse) -> Self {
        let mut w = Self::new(MOCK.id, MOCK.model, MOCK.created);
        w.calls = CallGate::native();
        let opening = reasoning_items(response, MOCK_REASONING, false).len();
        w.native = Some(Native {
            response: response.clone(),
            reasoning: reasoning_items(response, MOCK_REASONING, true).into(),
            opening,
            opened: 0,
            others: Some(other_items(response)),
            message: false,
        });
        w
    }

    fn stamp(&self) -> Stamp<'_> {
        Stamp {
            id: &self.id,
            model: &self.model,
            created: self.created,
            native: self.native.is_some(),
            seal: self.seal.as_ref(),
        }
    }

    /// The output index of the next item.
    fn index(&self) -> usize {
        self.output.len() + self.skipped
    }

    fn event(&mut self, kind: &str, mut body: Value, out: &mut Vec<u8>) {
        if let Some(item) = body.get_mut("item") {
            write_namespaced(item, &self.namespaced);
        }
        if let Some(items) = body
            .pointer_mut("/response/output")
            .and_then(Value::as_array_mut)
        {
            items
                .iter_mut()
                .for_each(|i| write_namespaced(i, &self.namespaced));
        }
        let mut m = Map::new();
        m.insert("type".into(), json!(kind));
        m.insert("sequence_number".into(), json!(self.sequence));
        self.sequence += 1;
        if let Value::Object(fields) = body {
            m.extend(fields);
        }
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\ndata: ");
        // Straight into `out`: writing into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, &m);
        out.extend_from_slice(b"\n\n");
    }

    /// An item sent whole: announced and finished at once.
    fn whole_item(&mut self, item: Value, out: &mut Vec<u8>) {
        let index = self.index();
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
            out,
        );
        self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
            out,
        );
        self.output.push(item);
    }

    /// Before an item opens (speaking as OpenAI): the items no event announces go out once
    /// the turn's opening reasoning items are done (`reasoning`: the item opening is one).
    fn before_item(&mut self, reasoning: bool, out: &mut Vec<u8>) {
        let others = match &mut self.native {
            Some(n) if !(reasoning && n.opened < n.opening) => n.others.take(),
            _ => None,
        };
        for item in others.into_iter().flatten() {
            self.whole_item(item, out);
        }
    }

    /// A refusal with no text before it (speaking as OpenAI): its message, opened and finished
    /// before the calls.
    fn refusal_message(&mut self, out: &mut Vec<u8>) {
        let due = self.native.as_ref().is_some_and(|n| {
            !n.message
                && n.response
                    .extra
                    .get(super::REFUSAL)
                    .is_some_and(Value::is_string)
        });
        if due {
            self.close(out);
            self.open_message(false, out);
            self.close(out);
        }
    }

    /// Opens the message item, with its `output_text` part when `text`.
    fn open_message(&mut self, text: bool, out: &mut Vec<u8>) {
        self.close(out);
        self.before_item(false, out);
        let index = self.index();
        let id = match &mut self.native {
            Some(n) => {
                n.message = true;
                MOCK_MESSAGE.to_owned()
            }
            None => format!("msg_{index}"),
        };
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": message_item(&id, "in_progress", None, None)}),
            out,
        );
        if text {
            self.event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "part": text_part("output_text", "")}),
                out,
            );
        }
        self.open = Open::Message {
            id,
            text: String::new(),
            has_text: text,
        };
    }

    /// A part of the open message: announced, its text in pieces, finished.
    fn message_part(&mut self, at: &Value, kind: &str, text: &str, out: &mut Vec<u8>) {
        let (events, field) = if kind == "refusal" {
            ("response.refusal", "refusal")
        } else {
            ("response.output_text", "text")
        };
        self.event(
            "response.content_part.added",
            merge(at, json!({"part": text_part(kind, "")})),
            out,
        );
        for piece in crate::providers::split::pieces(text, crate::providers::split::FINE.text) {
            self.event(
                &format!("{events}.delta"),
                merge(at, json!({"delta": piece})),
                out,
            );
        }
        let mut done = Map::new();
        done.insert(field.into(), json!(text));
        self.event(
            &format!("{events}.done"),
            merge(at, Value::Object(done)),
            out,
        );
        self.event(
            "response.content_part.done",
            merge(at, json!({"part": text_part(kind, text)})),
            out,
        );
    }

    /// The part being filled of the open scripted reasoning item, announced first when it was
    /// not yet (a summary part has its `reasoning_summary_part.added`).
    fn begin_part(&mut self, out: &mut Vec<u8>) -> Option<ReasoningPart> {
        let index = self.index();
        let Open::Reasoning {
            id,
            scripted: Some(s),
            ..
        } = &mut self.open
        else {
            return None;
        };
        let part = s.parts.get(s.at)?.clone();
        if !std::mem::replace(&mut s.opened, true) && part.summary {
            let at = json!({"item_id": id, "output_index": index, "summary_index": part.index,
                            "part": {"type": "summary_text", "text": ""}});
            self.event("response.reasoning_summary_part.added", at, out);
        }
        Some(part)
    }

    /// Finishes the part being filled of the open scripted reasoning item; `all` the parts
    /// after it too, else the empty ones (they have no text to wait for).
    fn end_parts(&mut self, all: bool, out: &mut Vec<u8>) {
        while let Some(part) = self.begin_part(out) {
            let index = self.index();
            let Open::Reasoning {
                id,
                scripted: Some(s),
                ..
            } = &mut self.open
            else {
                return;
            };
            if !all && !part.text.is_empty() && s.got.len() < part.text.len() {
                return;
            }
            let id = id.clone();
            s.at += 1;
            s.got.clear();
            s.opened = false;
            self.part_done(&id, index, &part, out);
        }
    }

    /// A reasoning part's closing events: a summary part's text and the part done, a
    /// `reasoning_text` part's text done.
    fn part_done(&mut self, id: &str, index: usize, part: &ReasoningPart, out: &mut Vec<u8>) {
        let text = &part.text;
        if part.summary {
            let at = json!({"item_id": id, "output_index": index, "summary_index": part.index});
            self.event(
                "response.reasoning_summary_text.done",
                merge(&at, json!({"text": text})),
                out,
            );
            self.event(
                "response.reasoning_summary_part.done",
                merge(&at, json!({"part": {"type": "summary_text", "text": text}})),
                out,
            );
        } else {
            let at = json!({"item_id": id, "output_index": index, "content_index": part.index});
            self.event(
                "response.reasoning_text.done",
                merge(&at, json!({"text": text})),
                out,
            );
        }
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        // The parts of a scripted reasoning item its text did not fill go out first.
        self.end_parts(true, out);
        let index = self.index();
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Reasoning {
                scripted: Some(s), ..
            } => {
                self.event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": s.item}),
                    out,
                );
                self.output.push(s.item);
            }
            Open::Reasoning {
                id,
                text,
                encrypted,
                scripted: None,
            } => {
                if !text.is_empty() {
                    let part = ReasoningPart {
                        summary: true,
                        index: 0,
                        text: text.clone(),
                    };
                    self.part_done(&id, index, &part, out);
                }
                let mut item = reasoning_item(&id, &text);
                if let Some(encrypted) = encrypted {
                    item["encrypted_content"] = Value::String(encrypted);
                }
                self.event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                    out,
                );
                self.output.push(item);
            }
            Open::Message { id, text, has_text } => {
                let refusal = (self.native.as_ref())
                    .and_then(|n| n.response.extra.get(super::REFUSAL))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if has_text {
                    let at = json!({"item_id": id, "output_index": index, "content_index": 0});
                    self.event(
                        "response.output_text.done",
                        merge(&at, json!({"text": text})),
                        out,
                    );
                    self.event(
                        "response.content_part.done",
                        merge(&at, json!({"part": text_part("output_text", &text)})),
                        out,
                    );
                }
                if let Some(refusal) = &refusal {
                    let at = json!({"item_id": id, "output_index": index,
                                    "content_index": usize::from(has_text)});
                    self.message_part(&at, "refusal", refusal, out);
                }
                let text = has_text.then_some(text.as_str());
                let item = message_item(&id, "completed", text, refusal.as_deref());
                self.event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                    out,
                );
                self.output.push(item);
            }
            Open::Call { slot } => {
                let Some(c) = self.call_items.get(slot) else {
                    return;
                };
                if c.cut {
                    // Cut off: never finished, so no `.done` events and no place in the output.
                    self.skipped += 1;
                    return;
                }
                let item = call_item(c, &c.arguments, "completed");
                let (kind, done) = if c.custom {
                    (
                        "response.custom_tool_call_input.done",
                        json!({"item_id": c.item_id, "output_index": c.output_index,
                               "input": c.arguments}),
                    )
                } else {
                    // With the function's `name`, as the event's reference lists it
                    // (`ResponseFunctionCallArgumentsDoneEvent`: item_id, name, output_index,
                    // arguments).
                    (
                        "response.function_call_arguments.done",
                        json!({"item_id": c.item_id, "output_index": c.output_index,
                               "arguments": c.arguments, "name": c.name}),
                    )
                };
                self.event(kind, done, out);
                self.event(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                    out,
                );
                self.output.push(item);
            }
        }
    }

    fn calls_out(&mut self, outs: Vec<CallOut>, out: &mut Vec<u8>) {
        for o in outs {
            match o {
                CallOut::Open {
                    slot,
                    id,
                    name,
                    arguments,
                } => {
                    self.close(out);
                    self.before_item(false, out);
                    self.refusal_message(out);
                    let index = self.index();
                    let scripted = (self.native.as_ref())
                        .and_then(|n| n.response.tool_calls.get(slot).cloned());
                    let mut c = match &scripted {
                        Some(call) => call_of(call, slot, &self.stamp()),
                        None => CallItem {
                            output_index: 0,
                            item_id: format!("fc_{slot}"),
                            call_id: Some(id.clone()),
                            name: name.clone(),
                            arguments: String::new(),
                            custom: false,
                            cut: false,
                        },
                    };
                    if scripted.is_some() {
                        c.call_id = (!id.is_empty()).then_some(id);
                    }
                    c.output_index = index;
                    c.name = name;
                    let item = call_item(&c, "", "in_progress");
                    self.event(
                        "response.output_item.added",
                        json!({"output_index": index, "item": item}),
                        out,
                    );
                    self.call_items.push(c);
                    self.open = Open::Call { slot };
                    if !arguments.is_empty() {
                        self.arguments(slot, &arguments, out);
                    }
                }
                CallOut::Arguments { slot, fragment } => self.arguments(slot, &fragment, out),
                // The call keeps the id it opened with: clients check that the finished item
                // is the one they were told of.
                CallOut::Done { .. } => {}
            }
        }
    }

    fn arguments(&mut self, slot: usize, fragment: &str, out: &mut Vec<u8>) {
        let Some(c) = self.call_items.get_mut(slot) else {
            return;
        };
        c.arguments.push_str(fragment);
        let kind = if c.custom {
            "response.custom_tool_call_input.delta"
        } else {
            "response.function_call_arguments.delta"
        };
        let at = json!({"item_id": c.item_id, "output_index": c.output_index, "delta": fragment});
        self.event(kind, at, out);
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        let mut outs = Vec::new();
        self.calls.flush(&mut outs);
        self.calls_out(outs, out);
    }

    /// Opens a reasoning item, `id` or one of the writer's own; speaking as OpenAI, the next
    /// scripted item, announced without its parts.
    fn open_reasoning(&mut self, id: Option<&str>, out: &mut Vec<u8>) {
        self.close(out);
        self.before_item(true, out);
        let index = self.index();
        let scripted = self.native.as_mut().and_then(|n| {
            n.opened += 1;
            n.reasoning.pop_front()
        });
        let id = (scripted.as_ref())
            .and_then(|s| s.get("id").and_then(Value::as_str))
            .or(id)
            .map_or_else(|| format!("rs_{index}"), str::to_owned);
        let added = match &scripted {
            Some(item) => {
                let mut added = item.clone();
                if let Value::Object(m) = &mut added {
                    m.insert("summary".into(), json!([]));
                    m.remove("content");
                }
                added
            }
            None => reasoning_item(&id, ""),
        };
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
            out,
        );
        self.open = Open::Reasoning {
            id,
            text: String::new(),
            encrypted: None,
            scripted: scripted.map(|item| {
                Box::new(Scripted {
                    parts: parts_of(&item),
                    item,
                    at: 0,
                    got: String::new(),
                    opened: false,
                })
            }),
        };
        // Leading parts with no text are finished at once.
        self.end_parts(false, out);
    }

    /// A reasoning item's upstream state: the item it names is the open one, or opens now; its
    /// `encrypted_content` goes out on the item when it is done.
    fn reasoning_state(
        &mut self,
        id: Option<&str>,
        encrypted_content: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        let same = match (&self.open, id) {
            (Open::Reasoning { .. }, None) => true,
            (Open::Reasoning { id: open, .. }, Some(id)) => open == id,
            _ => false,
        };
        if !same {
            self.open_reasoning(id, out);
        }
        if let (Open::Reasoning { encrypted, .. }, Some(e)) = (&mut self.open, encrypted_content) {
            *encrypted = Some(e.to_owned());
        }
    }

    /// Reasoning text: a piece of the scripted item's part being filled (speaking as OpenAI),
    /// else of the item's one summary part.
    fn reasoning_text(&mut self, piece: &str, out: &mut Vec<u8>) {
        if let Some(part) = self.begin_part(out) {
            let index = self.index();
            let Open::Reasoning {
                id,
                text,
                scripted: Some(s),
                ..
            } = &mut self.open
            else {
                return;
            };
            text.push_str(piece);
            s.got.push_str(piece);
            let (kind, at) = if part.summary {
                (
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": part.index,
                           "delta": piece}),
                )
            } else {
                (
                    "response.reasoning_text.delta",
                    json!({"item_id": id, "output_index": index, "content_index": part.index,
                           "delta": piece}),
                )
            };
            self.event(kind, at, out);
            self.end_parts(false, out);
            return;
        }
        let index = self.index();
        if let Open::Reasoning { id, text: all, .. } = &self.open
            && all.is_empty()
        {
            let at = json!({"item_id": id, "output_index": index, "summary_index": 0,
                            "part": {"type": "summary_text", "text": ""}});
            self.event("response.reasoning_summary_part.added", at, out);
        }
        if let Open::Reasoning { id, text: all, .. } = &mut self.open {
            all.push_str(piece);
            let at = json!({"item_id": id, "output_index": index, "summary_index": 0,
                            "delta": piece});
            self.event("response.reasoning_summary_text.delta", at, out);
        }
    }

    /// The items of hosted call `index` made on this wire, each sent whole (speaking as
    /// OpenAI).
    fn hosted(&mut self, index: usize, out: &mut Vec<u8>) {
        let items = match &self.native {
            Some(n) => (n.response.hosted_calls.get(index))
                .map(hosted_items)
                .unwrap_or_default(),
            None => return,
        };
        self.close(out);
        self.before_item(false, out);
        for item in items {
            self.whole_item(item, out);
        }
    }
}

impl EventWriter {
    /// The items of a hosted call the upstream ran (speaking as the gateway): each announced
    /// in progress, then a web search's status events as the Responses streaming reference
    /// lists them (`response.web_search_call.in_progress`, `.searching`, `.completed` — the
    /// last only when it did complete), then the item done; any other item sent whole.
    fn hosted_done(&mut self, call: &HostedCall, out: &mut Vec<u8>) {
        self.close(out);
        self.before_item(false, out);
        for item in hosted_items(call) {
            if item.get("type").and_then(Value::as_str) != Some("web_search_call") {
                self.whole_item(item, out);
                continue;
            }
            let index = self.index();
            let id = item.get("id").cloned().unwrap_or(Value::Null);
            let mut opening = item.clone();
            if let Some(map) = opening.as_object_mut() {
                map.insert("status".into(), json!("in_progress"));
            }
            let at = json!({"output_index": index, "item": opening});
            self.event("response.output_item.added", at, out);
            let completed = item.get("status").and_then(Value::as_str) == Some("completed");
            let steps: &[&str] = if completed {
                &["in_progress", "searching", "completed"]
            } else {
                &["in_progress", "searching"]
            };
            for step in steps {
                let at = json!({"output_index": index, "item_id": id});
                self.event(&format!("response.web_search_call.{step}"), at, out);
            }
            let at = json!({"output_index": index, "item": item});
            self.event("response.output_item.done", at, out);
            self.output.push(item);
        }
    }
}

fn merge(a: &Value, b: Value) -> Value {
    let mut m = a.as_object().cloned().unwrap_or_default();
    if let Value::Object(b) = b {
        m.extend(b);
    }
    Value::Object(m)
}

impl StreamWriter for EventWriter {
    fn start(&mut self, out: &mut Vec<u8>) {
        let body = response_object(&self.stamp(), "in_progress", Value::Null, Vec::new(), None);
        self.event("response.created", json!({"response": body.clone()}), out);
        self.event("response.in_progress", json!({"response": body}), out);
    }

    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for e in events {
            match e {
                StreamEvent::TextDelta { text } => {
                    self.flush(out);
                    if !matches!(self.open, Open::Message { .. }) {
                        self.open_message(true, out);
                    }
                    let index = self.index();
                    if let Open::Message { id, text: all, .. } = &mut self.open {
                        all.push_str(text);
                        let at = json!({"item_id": id, "output_index": index, "content_index": 0,
                                        "delta": text});
                        self.event("response.output_text.delta", at, out);
                    }
                }
                StreamEvent::ReasoningDelta { text } => {
                    self.flush(out);
                    self.calls.reasoning();
                    if !matches!(self.open, Open::Reasoning { .. }) {
                        self.open_reasoning(None, out);
                    }
                    self.reasoning_text(text, out);
                }
                StreamEvent::ReasoningState {
                    id,
                    encrypted_content,
                } => {
                    self.flush(out);
                    self.reasoning_state(id.as_deref(), encrypted_content.as_deref(), out);
                }
                StreamEvent::HostedCall { index, .. } if self.native.is_some() => {
                    self.flush(out);
                    self.hosted(*index, out);
                }
                // A call the upstream ran, made on this wire or translated to it: its items,
                // in place.
                StreamEvent::HostedCallComplete { call, .. }
                    if self.native.is_none()
                        && call.wire == ProviderKind::OpenAiResponses.name() =>
                {
                    self.flush(out);
                    self.hosted_done(call, out);
                }
                other => {
                    let mut outs = Vec::new();
                    self.calls.event(other, &mut outs);
                    self.calls_out(outs, out);
                }
            }
        }
        self.flush(out);
    }

    fn finish(&mut self, response: &ChatResponse, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let mut outs = Vec::new();
        self.calls.rest(response, false, &mut outs);
        self.calls_out(outs, out);
        self.refusal_message(out);
        self.close(out);
        self.before_item(false, out);
        if let Some(item) = state_item(response, self.seal.as_ref()) {
            self.whole_item(item, out);
        }
        let reason = if self.native.is_some() {
            response.finish_reason.clone()
        } else {
            settled(response, true).finish_reason.clone()
        };
        let (status, details) = status(&reason);
        let output = std::mem::take(&mut self.output);
        let body = response_object(
            &self.stamp(),
            status,
            details,
            output,
            response.usage.as_ref(),
        );
        let kind = if status == "completed" {
            "response.completed"
        } else {
            "response.incomplete"
        };
        self.event(kind, json!({"response": body}), out);
    }

    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.event("error", error_event(error), out);
        let output = std::mem::take(&mut self.output);
        let mut body = response_object(&self.stamp(), "failed", Value::Null, output, None);
        body["error"] = failed_error(error);
        self.event("response.failed", json!({"response": body}), out);
    }
}

/// The client headers of this wire a same-wire upstream gets as sent: OpenAI's beta header.
pub const WIRE_HEADERS: &[&str] = &["openai-beta"];

/// The smallest Responses request, for the gateway's table test.
pub const EXAMPLE: &str = r#"{"model":"m","input":"Hi"}"#;

/// The Responses client wire's reader, for the gateway's table: a request body → the
/// canonical request and how to answer it.
pub fn read(body: &[u8]) -> Result<ClientRequest> {
    let r = decode_request(body)?;
    let mut asked = ClientRequest::new(r.request, r.stream);
    asked.namespaced = r.namespaced;
    Ok(asked)
}

/// The Responses client wire's stream writer for one answer.
pub fn writer(answer: &Answer<'_>) -> Box<dyn StreamWriter> {
    let mut w = EventWriter::new(answer.id, answer.model, answer.created);
    w.calls = CallGate::sealed(answer.seal);
    w.seal = answer.seal.cloned();
    w.namespaced = answer.namespaced.to_vec();
    Box::new(w)
}

/// The Responses client wire's whole body for one answer.
pub fn body(response: &ChatResponse, answer: &Answer<'_>) -> Vec<u8> {
    let written = encode_sealed(
        response,
        answer.id,
        answer.model,
        answer.created,
        answer.seal,
    );
    if answer.namespaced.is_empty() {
        return written;
    }
    let Ok(mut body) = serde_json::from_slice::<Value>(&written) else {
        return written;
    };
    if let Some(items) = body.get_mut("output").and_then(Value::as_array_mut) {
        items
            .iter_mut()
            .for_each(|i| write_namespaced(i, answer.namespaced));
    }
    serde_json::to_vec(&body).unwrap_or(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`read`], then the sealed state opened, as the gateway does.
    fn sealed_read(body: &[u8], seal: &Seal) -> Result<ClientRequest> {
        let mut r = read(body)?;
        crate::providers::seal::open_request(&mut r.request, seal)?;
        Ok(r)
    }
    use crate::providers::openai_responses::OpenAiResponses;
    use crate::replay::replay;

    fn req(body: Value) -> Result<ResponsesRequest> {
        decode_request(body.to_string().as_bytes())
    }

    #[test]
    fn a_full_request_reads_into_the_canonical_model() {
        let mut call = ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#);
        call.extra.insert("thought_signature".into(), json!("c2ln"));
        let seal = Seal::new([1_u8; 32]).unwrap();
        let carry_id = |c: &ToolCall| carry_id(c, Some(&seal));
        let body = json!({
            "model": "fast", "stream": true, "instructions": "Be brief.",
            "max_output_tokens": 300, "reasoning": {"effort": "low"},
            "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "get_weather"},
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
                {"type": "function_call", "id": "fc_1", "call_id": carry_id(&call),
                 "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call_output", "call_id": carry_id(&call), "output": "sunny"}
            ]
        });
        let r = sealed_read(body.to_string().as_bytes(), &seal).unwrap();
        assert!(r.stream);
        let q = r.request;
        assert_eq!(q.messages[0], Message::system("Be brief."));
        assert_eq!(q.max_tokens, Some(300));
        assert_eq!(
            q.reasoning.and_then(|r| r.effort),
            Some(crate::types::Effort::Low)
        );
        let Message::Assistant(a) = &q.messages[2] else {
            panic!("{:?}", q.messages)
        };
        assert_eq!(a.tool_calls[0].id, "call_1");
        assert_eq!(a.tool_calls[0].extra["thought_signature"], "c2ln");
        assert_eq!(
            a.tool_calls[0].extra[super::super::REASONING_ITEMS][0]["encrypted_content"],
            "enc"
        );
        let Message::Tool(t) = &q.messages[3] else {
            panic!()
        };
        assert_eq!(
            (t.call_id.as_str(), t.name.as_str()),
            ("call_1", "get_weather")
        );
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let base = json!({"model": "m", "input": "hi"});
        for field in ["previous_response_id", "top_p", "truncation"] {
            let mut body = base.clone();
            body[field] = json!("x");
            let err = req(body).unwrap_err();
            assert!(
                matches!(&err, Error::Input { path, .. } if path == field),
                "{err}"
            );
        }
        let mut body = base;
        body["tools"] = json!([{"type": "web_search"}]);
        let read = req(body).unwrap();
        assert_eq!(
            read.request.hosted_tools,
            [crate::types::HostedTool::web_search()]
        );
        assert!(read.request.tools.is_empty());
    }

    #[test]
    fn turn_state_rides_in_a_reasoning_item() {
        let mut response = ChatResponse::default().with_text("Hi.");
        response.extra.insert(
            "thinking_blocks".into(),
            json!([{"type": "thinking", "signature": "s"}]),
        );
        let seal = Seal::new([9_u8; 32]).unwrap();
        let written = encode_sealed(&response, "r", "m", 0, Some(&seal));
        let body: Value = serde_json::from_slice(&written).unwrap();
        let output = body["output"].as_array().unwrap().clone();
        let mut input = vec![json!({"role": "user", "content": "hi"})];
        input.extend(output);
        let request = json!({"model": "m", "input": input});
        let r = sealed_read(request.to_string().as_bytes(), &seal).unwrap();
        let Message::Assistant(a) = &r.request.messages[1] else {
            panic!()
        };
        assert_eq!(a.content.as_deref(), Some("Hi."));
        assert_eq!(a.extra["thinking_blocks"][0]["signature"], "s");
        // Unsealed, nothing is handed out.
        let plain: Value = serde_json::from_slice(&encode_body(&response, "r", "m", 0)).unwrap();
        assert_eq!(plain["output"].as_array().unwrap().len(), 1);
        // Altered, or forged in the old form, it is refused by name.
        let at = input.len() - 1;
        let content = input[at]["encrypted_content"].as_str().unwrap().to_owned();
        let mut altered = input.clone();
        altered[at]["encrypted_content"] = json!(content.replacen("7468", "7368", 1));
        let request = json!({"model": "m", "input": altered});
        let err = sealed_read(request.to_string().as_bytes(), &seal)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("input[{at}].encrypted_content")),
            "{err}"
        );
        altered[at]["encrypted_content"] = json!("toolwire.state.1.eyJ9");
        let request = json!({"model": "m", "input": altered});
        let err = sealed_read(request.to_string().as_bytes(), &seal)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unsealed"), "{err}");
    }

    /// A Responses upstream's reasoning items reach a Responses client as they were sent, in a
    /// body and in a stream: id, summary and `encrypted_content`
    /// (<https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items>: with
    /// `store: false` the client sends them back itself).
    #[test]
    fn upstream_reasoning_items_reach_the_client_whole() {
        use crate::provider::Respond;
        let item = json!({"type": "reasoning", "id": "rs_up_1", "encrypted_content": "ZW5j",
                          "summary": [{"type": "summary_text", "text": "Look it up."}]});
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.extra
            .insert(super::super::REASONING_ITEMS.into(), json!([item]));
        let mut upstream = ChatResponse::default()
            .with_tool_calls([call])
            .with_finish_reason(FinishReason::ToolCalls);
        upstream.reasoning = Some("Look it up.".into());
        let body: Value = serde_json::from_slice(&encode_body(&upstream, "r", "m", 0)).unwrap();
        assert_eq!(body["output"][0], item, "{body}");
        assert_eq!(body["output"][1]["type"], "function_call", "{body}");

        let wire = OpenAiResponses::new()
            .encode_response(&upstream, true)
            .unwrap();
        let decoded = replay(&OpenAiResponses::new(), &wire).unwrap();
        let mut w = EventWriter::new("r", "m", 0);
        let mut out = Vec::new();
        w.start(&mut out);
        w.events(&decoded.events, &mut out);
        w.finish(&decoded.response, &mut out);
        let text = String::from_utf8_lossy(&out);
        let done: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|e| e["type"] == "response.output_item.done" && e["item"]["id"] == "rs_up_1")
            .collect();
        assert_eq!(done.len(), 1, "{text}");
        assert_eq!(done[0]["item"]["encrypted_content"], "ZW5j");
        assert_eq!(done[0]["item"]["summary"][0]["text"], "Look it up.");
    }

    /// Codex's `namespace` tools: each inner function is a canonical tool under its flat name;
    /// a call of it goes back with `namespace` and the inner name (body and stream), and the
    /// client's echo of that call reads back to the flat name.
    #[test]
    fn a_choice_of_a_namespaced_tool_names_its_flat_name() {
        let space = json!({"type": "namespace", "name": "multi_agent_v1", "description": "S.",
            "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}},
                      {"type": "function", "name": "spawn", "parameters": {"type": "object"}}]});
        let plain = json!({"type": "function", "name": "spawn", "parameters": {"type": "object"}});
        let read = |choice: Value| {
            let body = json!({"model": "m", "input": "hi", "tools": [space, plain],
                              "tool_choice": choice});
            req(body).unwrap().request.tool_choice
        };
        assert_eq!(
            read(json!({"type": "function", "name": "close_agent"})),
            Some(ToolChoice::Tool("multi_agent_v1__close_agent".into()))
        );
        // A plain tool of the same name wins: the name is left as the client wrote it.
        assert_eq!(
            read(json!({"type": "function", "name": "spawn"})),
            Some(ToolChoice::Tool("spawn".into()))
        );
        let allowed = read(json!({"type": "allowed_tools", "mode": "auto",
            "tools": [{"type": "function", "name": "close_agent"}]}));
        let Some(ToolChoice::Allowed { tools, .. }) = allowed else {
            panic!("{allowed:?}");
        };
        assert_eq!(tools, ["multi_agent_v1__close_agent"]);
    }

    #[test]
    fn namespace_tools_round_trip() {
        let body = json!({"model": "m", "input": "hi", "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
            {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
             "tools": [{"type": "function", "name": "close_agent", "description": "Close one.",
                        "strict": false, "parameters": {"type": "object",
                        "properties": {"target": {"type": "string"}}}}]}]});
        let read = req(body).unwrap();
        let names: Vec<&str> = read.request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["exec_command", "multi_agent_v1__close_agent"]);
        assert_eq!(read.request.tools[1].description, "Sub-agents. Close one.");
        assert_eq!(
            read.namespaced,
            [NamespacedName::new("multi_agent_v1", "close_agent")]
        );

        let call = ToolCall::new("call_1", "multi_agent_v1__close_agent", r#"{"target":"a"}"#);
        let response = ChatResponse::default()
            .with_tool_calls([call.clone()])
            .with_finish_reason(FinishReason::ToolCalls);
        let answer = Answer::new("r", "m", 0).with_namespaced(&read.namespaced);
        let written: Value = serde_json::from_slice(&super::body(&response, &answer)).unwrap();
        let item = &written["output"][0];
        assert_eq!(item["name"], "close_agent", "{written}");
        assert_eq!(item["namespace"], "multi_agent_v1", "{written}");

        let mut w = writer(&answer);
        let mut out = Vec::new();
        w.start(&mut out);
        w.events(
            &[
                StreamEvent::ToolCallStarted {
                    index: 0,
                    id: Some("call_1".into()),
                    name: call.name.clone(),
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    fragment: call.raw_arguments.clone(),
                },
                StreamEvent::ToolCallComplete {
                    index: 0,
                    call: call.clone(),
                },
            ],
            &mut out,
        );
        w.finish(&response, &mut out);
        let text = String::from_utf8_lossy(&out);
        let items: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|e| e.get("item").cloned())
            .collect();
        assert!(!items.is_empty(), "{text}");
        for item in &items {
            assert_eq!(item["name"], "close_agent", "{text}");
            assert_eq!(item["namespace"], "multi_agent_v1", "{text}");
        }

        // The client echoes the call as it got it: it reads back to the flat name.
        let echo = json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            item.clone(),
            {"type": "function_call_output", "call_id": item["call_id"], "output": "closed"}]});
        let back = req(echo).unwrap();
        let Message::Assistant(a) = &back.request.messages[1] else {
            panic!("{:?}", back.request.messages)
        };
        assert_eq!(a.tool_calls[0].name, "multi_agent_v1__close_agent");
    }

    /// What the writer sends reads back, through our own Responses decoder, as what it was given.
    #[test]
    fn written_streams_decode_back() {
        let (response, events) = crate::test_support::sample_stream("call_");
        let calls = response.tool_calls.clone();
        for batch in [1, 2, 3, events.len()] {
            let mut w = EventWriter::new("resp_1", "m", 0);
            let mut out = Vec::new();
            w.start(&mut out);
            for b in events.chunks(batch) {
                w.events(b, &mut out);
            }
            w.finish(&response, &mut out);
            let back = replay(&OpenAiResponses::new(), &out).unwrap().response;
            assert_eq!(back.text, response.text, "batch {batch}");
            assert_eq!(back.tool_calls.len(), 2);
            for (b, c) in back.tool_calls.iter().zip(&calls) {
                assert_eq!(
                    (&b.id, &b.name, &b.raw_arguments),
                    (&c.id, &c.name, &c.raw_arguments)
                );
            }
            assert_eq!(back.finish_reason, FinishReason::ToolCalls);
            assert_eq!(back.usage.map(|u| u.output_tokens), Some(5));
        }
        let body = encode_body(&response, "resp_1", "m", 0);
        let back = crate::provider::Provider::decode(&OpenAiResponses::new(), &body).unwrap();
        assert_eq!(back.tool_calls[1].raw_arguments, calls[1].raw_arguments);
    }

    /// The gateway and the mock write the Responses shapes OpenAI documents
    /// (<https://platform.openai.com/docs/api-reference/responses/object>): a turn that did not
    /// end normally is `incomplete` with its reason, a count the upstream did not give is left
    /// out rather than written as 0, and a failure inside a stream is the `error` event with
    /// `code`, `message` and `param` at its top level
    /// (<https://platform.openai.com/docs/api-reference/responses-streaming/error>), then
    /// `response.failed`.
    #[test]
    fn status_usage_and_failures_follow_openai() {
        use crate::provider::Respond;
        let response = ChatResponse::default()
            .with_text("Paused.")
            .with_usage(Usage::new(3, 5))
            .with_finish_reason(FinishReason::Other("pause_turn".into()));
        let body: Value =
            serde_json::from_slice(&encode_body(&response, "resp_1", "m", 0)).unwrap();
        assert_eq!(body["status"], "incomplete");
        assert_eq!(body["incomplete_details"]["reason"], "pause_turn");
        assert!(
            body["usage"].get("input_tokens_details").is_none(),
            "{body}"
        );
        assert!(
            body["usage"].get("output_tokens_details").is_none(),
            "{body}"
        );
        let back = crate::provider::Provider::decode(
            &OpenAiResponses::new(),
            &serde_json::to_vec(&body).unwrap(),
        )
        .unwrap();
        assert_eq!(back.usage.and_then(|u| u.cached_input_tokens), None);

        let mut e = ApiError::new(crate::ProviderKind::OpenAiResponses, None, "boom");
        e.code = Some("server_error".into());
        let mut w = EventWriter::new("resp_1", "m", 0);
        let mut gateway = Vec::new();
        w.start(&mut gateway);
        w.fail(&e, &mut gateway);
        let (_, mock) = OpenAiResponses::new().encode_error(&e, true);
        for (who, bytes) in [("gateway", gateway), ("mock", mock)] {
            let error = crate::test_support::chunks(&bytes)
                .into_iter()
                .find(|v| v["type"] == "error")
                .unwrap();
            assert_eq!(error["code"], "server_error", "{who}: {error}");
            assert_eq!(error["message"], "boom", "{who}: {error}");
            assert!(error.get("param").is_some(), "{who}: {error}");
            let err = replay(&OpenAiResponses::new(), &bytes).unwrap_err();
            assert_eq!(
                err.api().unwrap().code.as_deref(),
                Some("server_error"),
                "{who}"
            );
        }
    }
}

#[cfg(test)]
mod effort {
    use crate::provider::Provider;
    use crate::providers::{openai::OpenAi, openai_responses::OpenAiResponses};

    /// Codex's `reasoning` (`{"effort": "medium", "summary": "auto"}`) reaches a Responses
    /// upstream and a Chat Completions one as an effort.
    #[test]
    fn codex_reasoning_effort_arrives_as_an_effort() {
        let body = br#"{"model":"m","input":"hi","reasoning":{"effort":"medium","summary":"auto"},"stream":true}"#;
        let r = super::decode_request(body).unwrap();
        let cases: [(Box<dyn Provider>, &str, &str); 4] = [
            (
                Box::new(OpenAiResponses::new()),
                "gpt-5-codex",
                "/reasoning/effort",
            ),
            (
                Box::new(OpenAiResponses::new()),
                "a-model",
                "/reasoning/effort",
            ),
            (Box::new(OpenAi::new()), "gpt-5", "/reasoning_effort"),
            (Box::new(OpenAi::compatible()), "qwen3", "/reasoning_effort"),
        ];
        for (p, model, pointer) in cases {
            let mut q = r.request.clone();
            q.model = model.into();
            let w = p.encode(&q, true).unwrap();
            assert_eq!(
                w.body.pointer(pointer),
                Some(&serde_json::json!("medium")),
                "{model}: {}",
                w.body
            );
        }
    }
}
