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
use crate::provider::{Answer, ClientRequest, NamespacedName, StreamWriter};
use crate::providers::openai_responses::respond;
use crate::providers::shared::{CallGate, CallOut, Fields, carry_id, settled, uncarry_id};
use crate::providers::shared::{SEALED, pending};
use crate::seal::Seal;
use crate::types::{
    AssistantMessage, ChatRequest, ChatResponse, Content, FinishReason, HostedCall, Message, Part,
    Reasoning, ReasoningSummary, ResponseFormat, Source, StreamEvent, ToolCall, ToolChoice,
    ToolDefinition, ToolResult, Usage,
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
    Ok(ResponsesRequest {
        request,
        stream,
        namespaced,
    })
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

/// `status` and `incomplete_details` of a translated turn ([`respond::status`]); a turn that
/// ended in error (its error goes out as the error) is `completed`.
fn status(reason: &FinishReason) -> (&'static str, Value) {
    match respond::status(reason) {
        Ok((status, details)) => (status, details.unwrap_or(Value::Null)),
        Err(_) => ("completed", Value::Null),
    }
}

fn response_object(
    id: &str,
    model: &str,
    created: u64,
    status: &str,
    details: Value,
    output: Vec<Value>,
    usage: Option<&Usage>,
) -> Value {
    json!({
        "id": id, "object": "response", "created_at": created, "status": status,
        "error": null, "incomplete_details": details, "model": model, "output": output,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": usage.map(respond::usage_json),
    })
}

fn message_item(id: &str, status: &str, text: &str) -> Value {
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn call_item(item_id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
           "arguments": arguments, "status": status})
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

/// A whole `response` body for `response`. `id` and `created` are the caller's.
///
/// The reasoning items of a Responses upstream go out as it sent them (id, summary,
/// `encrypted_content`), each before the call it came before; other reasoning is one item with
/// the text as its summary.
pub fn encode_body(response: &ChatResponse, id: &str, model: &str, created: u64) -> Vec<u8> {
    encode_sealed(response, id, model, created, None)
}

/// [`encode_body`] with the state on call ids and in the state item sealed by `seal`.
fn encode_sealed(
    response: &ChatResponse,
    id: &str,
    model: &str,
    created: u64,
    seal: Option<&Seal>,
) -> Vec<u8> {
    // Calls keep their raw text; a turn with a malformed call never ends `stop` ([`settled`]).
    let response = &*settled(response, true);
    let items = |extra: &Map<String, Value>| {
        extra
            .get(super::REASONING_ITEMS)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let upstream_items = response.extra.contains_key(super::REASONING_ITEMS)
        || response
            .tool_calls
            .iter()
            .any(|c| c.extra.contains_key(super::REASONING_ITEMS));
    let mut output = Vec::new();
    if upstream_items {
        output.extend(items(&response.extra));
    } else if let Some(reasoning) = &response.reasoning {
        output.push(reasoning_item("rs_0", reasoning));
    }
    if let Some(text) = &response.text {
        output.push(message_item("msg_0", "completed", text));
    }
    for (i, call) in response.tool_calls.iter().enumerate() {
        output.extend(items(&call.extra));
        output.push(call_item(
            &format!("fc_{i}"),
            &carry_id(call, seal),
            &call.name,
            &call.raw_arguments,
            if call.is_complete() || call.is_free_form() {
                "completed"
            } else {
                "incomplete"
            },
        ));
    }
    output.extend(state_item(response, seal));
    let (status, details) = status(&response.finish_reason);
    let body = response_object(
        id,
        model,
        created,
        status,
        details,
        output,
        response.usage.as_ref(),
    );
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The error body and status for `error`, in OpenAI's shape.
pub fn encode_error(error: &ApiError) -> (u16, Vec<u8>) {
    crate::providers::openai::gateway::encode_error(error)
}

/// The item open on the client's side.
#[derive(Debug, Clone, PartialEq)]
enum Open {
    None,
    /// A reasoning item: its id (the upstream's when it sent one), its summary text so far,
    /// and the upstream's `encrypted_content` once known.
    Reasoning {
        id: String,
        text: String,
        encrypted: Option<String>,
    },
    Message {
        id: String,
        text: String,
    },
    Call {
        slot: usize,
    },
}

#[derive(Debug)]
struct CallItem {
    output_index: usize,
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

/// The Responses [`StreamWriter`].
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
    call_items: Vec<CallItem>,
    finished: bool,
    /// Tools the client declared inside a namespace: their calls are written namespaced.
    namespaced: Vec<NamespacedName>,
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
            call_items: Vec::new(),
            finished: false,
            namespaced: Vec::new(),
        }
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

    fn close(&mut self, out: &mut Vec<u8>) {
        let index = self.output.len();
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Reasoning {
                id,
                text,
                encrypted,
            } => {
                if !text.is_empty() {
                    let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
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
            Open::Message { id, text } => {
                let at = json!({"item_id": id, "output_index": index, "content_index": 0});
                self.event(
                    "response.output_text.done",
                    merge(&at, json!({"text": text})),
                    out,
                );
                self.event(
                    "response.content_part.done",
                    merge(
                        &at,
                        json!({"part": {"type": "output_text", "text": text, "annotations": []}}),
                    ),
                    out,
                );
                let item = message_item(&id, "completed", &text);
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
                let (item_id, arguments) = (c.item_id.clone(), c.arguments.clone());
                let item = call_item(&c.item_id, &c.call_id, &c.name, &c.arguments, "completed");
                self.event(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
                    out,
                );
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
                    let index = self.output.len();
                    let item_id = format!("fc_{slot}");
                    let item = call_item(&item_id, &id, &name, "", "in_progress");
                    self.event(
                        "response.output_item.added",
                        json!({"output_index": index, "item": item}),
                        out,
                    );
                    self.call_items.push(CallItem {
                        output_index: index,
                        item_id: item_id.clone(),
                        call_id: id,
                        name,
                        arguments: String::new(),
                    });
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
        let at = json!({"item_id": c.item_id, "output_index": c.output_index, "delta": fragment});
        self.event("response.function_call_arguments.delta", at, out);
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        let mut outs = Vec::new();
        self.calls.flush(&mut outs);
        self.calls_out(outs, out);
    }

    /// Opens a reasoning item, `id` or one of the writer's own.
    fn open_reasoning(&mut self, id: Option<&str>, out: &mut Vec<u8>) {
        self.close(out);
        let index = self.output.len();
        let id = id.map_or_else(|| format!("rs_{index}"), str::to_owned);
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": reasoning_item(&id, "")}),
            out,
        );
        self.open = Open::Reasoning {
            id,
            text: String::new(),
            encrypted: None,
        };
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
        let body = response_object(
            &self.id,
            &self.model,
            self.created,
            "in_progress",
            Value::Null,
            Vec::new(),
            None,
        );
        self.event("response.created", json!({"response": body.clone()}), out);
        self.event("response.in_progress", json!({"response": body}), out);
    }

    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for e in events {
            match e {
                StreamEvent::TextDelta { text } => {
                    self.flush(out);
                    if !matches!(self.open, Open::Message { .. }) {
                        self.close(out);
                        let index = self.output.len();
                        let id = format!("msg_{index}");
                        self.event(
                            "response.output_item.added",
                            json!({"output_index": index, "item": {"type": "message", "id": id,
                                   "status": "in_progress", "role": "assistant", "content": []}}),
                            out,
                        );
                        self.event(
                            "response.content_part.added",
                            json!({"item_id": id, "output_index": index, "content_index": 0,
                                   "part": {"type": "output_text", "text": "", "annotations": []}}),
                            out,
                        );
                        self.open = Open::Message {
                            id,
                            text: String::new(),
                        };
                    }
                    let index = self.output.len();
                    if let Open::Message { id, text: all } = &mut self.open {
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
                    let index = self.output.len();
                    if let Open::Reasoning { id, text: all, .. } = &self.open
                        && all.is_empty()
                    {
                        let at = json!({"item_id": id, "output_index": index, "summary_index": 0,
                                        "part": {"type": "summary_text", "text": ""}});
                        self.event("response.reasoning_summary_part.added", at, out);
                    }
                    if let Open::Reasoning { id, text: all, .. } = &mut self.open {
                        all.push_str(text);
                        let at = json!({"item_id": id, "output_index": index, "summary_index": 0,
                                        "delta": text});
                        self.event("response.reasoning_summary_text.delta", at, out);
                    }
                }
                StreamEvent::ReasoningState {
                    id,
                    encrypted_content,
                } => {
                    self.flush(out);
                    self.reasoning_state(id.as_deref(), encrypted_content.as_deref(), out);
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
        self.close(out);
        if let Some(item) = state_item(response, self.seal.as_ref()) {
            let index = self.output.len();
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
        let (status, details) = status(&settled(response, true).finish_reason);
        let body = response_object(
            &self.id,
            &self.model,
            self.created,
            status,
            details,
            std::mem::take(&mut self.output),
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
        self.event("error", respond::error_event(error), out);
        let mut body = response_object(
            &self.id,
            &self.model,
            self.created,
            "failed",
            Value::Null,
            std::mem::take(&mut self.output),
            None,
        );
        body["error"] = respond::failed_error(error);
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
