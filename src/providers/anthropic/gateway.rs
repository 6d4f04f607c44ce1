//! The gateway's Messages side: a client's Messages request → the canonical request, and the
//! canonical stream → the events an Anthropic client reads, written as events arrive.
//!
//! Request fields follow the Messages reference
//! (<https://docs.anthropic.com/en/api/messages>); a field the gateway does not translate is
//! refused by name. Streams follow the documented event flow
//! (<https://docs.anthropic.com/en/docs/build-with-claude/streaming>): `message_start`, one
//! `content_block_start` / `content_block_delta`s / `content_block_stop` run per block,
//! `message_delta` with the stop reason and usage, `message_stop`.

use crate::providers::shared::Shown;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{STOP_DETAILS, STOP_SEQUENCE, THINKING_BLOCKS};
use crate::error::{ApiError, Error, Result};
use crate::provider::{Answer, ClientRequest, StreamWriter};
use crate::providers::anthropic::respond::{self, Stamp};
use crate::providers::shared::{
    CallGate, CallOut, Fields, TURN_STATE, has_bad_call, settled, uncarry_id,
};
use crate::seal::Seal;
use crate::types::{
    AssistantMessage, ChatRequest, ChatResponse, Content, FinishReason, HostedCall, Message, Part,
    Source, StreamEvent, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};

/// A client's Messages request, read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MessagesRequest {
    /// The canonical request (its `model` is the client's model name, unresolved).
    pub request: ChatRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
}

/// Reads a Messages request body. Errors are [`Error::Input`] naming the field.
pub fn decode_request(body: &[u8]) -> Result<MessagesRequest> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::input("body", format!("not valid JSON: {e}")))?;
    let mut f = Fields::of(value, "")?;
    let model = f
        .string("model")?
        .ok_or_else(|| Error::input("model", "field required"))?;
    let stream = f.boolean("stream")?.unwrap_or(false);
    let mut messages = Vec::new();
    if let Some(system) = f.take("system") {
        messages.push(Message::system(text_blocks(system, "system")?));
    }
    let items = f
        .array("messages")?
        .ok_or_else(|| Error::input("messages", "field required"))?;
    let mut names: HashMap<String, String> = HashMap::new();
    for (i, item) in items.into_iter().enumerate() {
        turn(item, &format!("messages[{i}]"), &mut names, &mut messages)?;
    }
    let mut request = ChatRequest::new(model, messages);
    request.max_tokens = Some(
        f.count("max_tokens")?
            .ok_or_else(|| Error::input("max_tokens", "field required"))?,
    );
    request.temperature = f.number("temperature")?;
    request.top_p = f.number("top_p")?;
    request.top_k = f.count("top_k")?;
    request.stop = f.strings("stop_sequences")?;
    if let Some(tools) = f.array("tools")? {
        for (i, t) in tools.into_iter().enumerate() {
            // A tool the provider runs (web search, code execution, …) is a hosted tool:
            // mapped to the upstream's equivalent, or refused there by name.
            match crate::providers::hosted_tools::read_anthropic(&t) {
                Some(hosted) => request.hosted_tools.push(hosted),
                None => request.tools.push(tool(t, &format!("tools[{i}]"))?),
            }
        }
    }
    if let Some(choice) = f.take("tool_choice") {
        let mut c = Fields::of(choice, "tool_choice")?;
        let choice = match c.string("type")?.as_deref() {
            Some("auto") => ToolChoice::Auto,
            Some("any") => ToolChoice::Required,
            Some("none") => ToolChoice::None,
            Some("tool") => ToolChoice::Tool(
                c.string("name")?
                    .ok_or_else(|| Error::input("tool_choice.name", "field required"))?,
            ),
            other => {
                return Err(Error::input(
                    "tool_choice.type",
                    format!("{other:?}: expected auto, any, tool or none"),
                ));
            }
        };
        if let Some(off) = c.boolean("disable_parallel_tool_use")? {
            request.parallel_tool_calls = Some(!off);
        }
        c.finish()?;
        request.tool_choice = Some(choice);
    }
    if let Some(thinking) = f.take("thinking") {
        let mut t = Fields::of(thinking, "thinking")?;
        match t.string("type")?.as_deref() {
            Some("enabled") => {
                request.thinking = Some(true);
                if let Some(budget) = t.count("budget_tokens")? {
                    request.reasoning = Some(
                        request
                            .reasoning
                            .unwrap_or_default()
                            .with_budget_tokens(budget),
                    );
                }
            }
            Some("adaptive") => request.thinking = Some(true),
            Some("disabled") => request.thinking = Some(false),
            other => {
                let other = other.shown();
                return Err(Error::input(
                    "thinking.type",
                    format!("{other}: expected enabled, adaptive or disabled"),
                ));
            }
        }
        // Whether thinking text comes back summarized or omitted: what the client shows, not
        // what the model does.
        match t.string("display")?.as_deref() {
            None | Some("summarized") | Some("omitted") => {}
            Some(other) => {
                let other = other.shown();
                return Err(Error::input(
                    "thinking.display",
                    format!("{other}: expected summarized or omitted"),
                ));
            }
        }
        t.finish()?;
    }
    if let Some(config) = f.take("output_config") {
        let mut c = Fields::of(config, "output_config")?;
        if let Some(effort) = c.effort("effort")? {
            request = request.with_effort(effort);
        }
        c.finish()?;
    }
    // A label for the client's own records; it changes nothing in the answer.
    f.ignore("metadata");
    if let Some(management) = f.take("context_management") {
        clears_nothing(management)?;
    }
    f.finish()?;
    Ok(MessagesRequest { request, stream })
}

/// Reads `context_management` (<https://docs.claude.com/en/docs/build-with-claude/context-editing>):
/// accepted, and left out, when its edits clear nothing (Claude Code's
/// `{"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}`: every thinking block
/// kept); an edit that clears context is Anthropic's alone and refused by name.
fn clears_nothing(value: Value) -> Result<()> {
    let mut c = Fields::of(value, "context_management")?;
    for (i, edit) in c
        .array("edits")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let at = format!("context_management.edits[{i}]");
        let mut e = Fields::of(edit, &at)?;
        let kind = e.string("type")?;
        let keeps_all = kind
            .as_deref()
            .is_some_and(|k| k.starts_with("clear_thinking_"))
            && e.take("keep") == Some(Value::String("all".into()));
        if !keeps_all {
            return Err(Error::input(
                at,
                format!(
                    "{}: context editing runs at Anthropic only; send it through an anthropic \
                     role (the same wire passes it as sent)",
                    kind.as_deref().shown()
                ),
            ));
        }
        e.finish()?;
    }
    c.finish()
}

/// A string, or text blocks joined (`system`, a tool result's text).
fn text_blocks(value: Value, at: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        Value::Array(blocks) => {
            let mut out = String::new();
            for (j, b) in blocks.into_iter().enumerate() {
                let at = format!("{at}[{j}]");
                let mut b = Fields::of(b, &at)?;
                if b.string("type")?.as_deref() != Some("text") {
                    return Err(Error::input(
                        format!("{at}.type"),
                        "only text blocks are taken here",
                    ));
                }
                out.push_str(&b.string("text")?.unwrap_or_default());
                b.ignore("cache_control");
                b.finish()?;
            }
            Ok(out)
        }
        other => Err(Error::input(
            at,
            format!(
                "must be a string or text blocks, got {}",
                crate::types::json_kind(&other)
            ),
        )),
    }
}

fn source(value: Value, at: &str) -> Result<(Source, bool)> {
    let mut s = Fields::of(value, at)?;
    let kind = s.string("type")?;
    let (source, text) = match kind.as_deref() {
        Some("base64") => (
            Source::Data {
                media_type: s.string("media_type")?.unwrap_or_default(),
                data: s.string("data")?.unwrap_or_default(),
            },
            false,
        ),
        Some("url") => (
            Source::Url {
                url: s.string("url")?.unwrap_or_default(),
                media_type: None,
            },
            false,
        ),
        Some("text") => {
            let media_type = s
                .string("media_type")?
                .unwrap_or_else(|| "text/plain".into());
            let data = s.string("data")?.unwrap_or_default();
            (
                Source::Data {
                    media_type,
                    data: crate::providers::shared::base64_standard(data.as_bytes()),
                },
                true,
            )
        }
        other => {
            let other = other.shown();
            return Err(Error::input(
                format!("{at}.type"),
                format!("{other}: expected base64, url or text"),
            ));
        }
    };
    s.finish()?;
    Ok((source, text))
}

/// A media block (`image`, `document`) as a part.
fn media(kind: &str, mut b: Fields, at: &str) -> Result<Part> {
    let (src, _) = source(b.need("source")?, &format!("{at}.source"))?;
    b.ignore("cache_control");
    let part = if kind == "image" {
        Part::Image { source: src }
    } else {
        let filename = b.string("title")?;
        b.ignore("context");
        b.ignore("citations");
        Part::File {
            source: src,
            filename,
        }
    };
    b.finish()?;
    Ok(part)
}

/// One client message: a user turn may hold tool results (each a canonical tool message,
/// first) and content; an assistant turn its thinking, text and calls.
fn turn(
    value: Value,
    at: &str,
    names: &mut HashMap<String, String>,
    out: &mut Vec<Message>,
) -> Result<()> {
    let mut m = Fields::of(value, at)?;
    let role = m
        .string("role")?
        .ok_or_else(|| Error::input(format!("{at}.role"), "field required"))?;
    let content = m.need("content")?;
    m.finish()?;
    if role == "system" {
        // A system message inside `messages` (Claude Code sends one when its tools change
        // mid-conversation): instructions at that point of the conversation.
        out.push(Message::system(text_blocks(
            content,
            &format!("{at}.content"),
        )?));
        return Ok(());
    }
    if role != "user" && role != "assistant" {
        return Err(Error::input(
            format!("{at}.role"),
            format!("unknown role {} (user, assistant or system)", role.shown()),
        ));
    }
    let blocks = match content {
        Value::String(s) => {
            out.push(match role.as_str() {
                "assistant" => Message::assistant(s),
                _ => Message::user(s),
            });
            return Ok(());
        }
        Value::Array(blocks) => blocks,
        other => {
            return Err(Error::input(
                format!("{at}.content"),
                format!(
                    "must be a string or blocks, got {}",
                    crate::types::json_kind(&other)
                ),
            ));
        }
    };
    match role.as_str() {
        "user" => {
            let mut parts = Vec::new();
            for (j, b) in blocks.into_iter().enumerate() {
                let at = format!("{at}.content[{j}]");
                let mut b = Fields::of(b, &at)?;
                match b.string("type")?.as_deref() {
                    Some("text") => {
                        parts.push(Part::text(b.string("text")?.unwrap_or_default()));
                        b.ignore("cache_control");
                        b.finish()?;
                    }
                    Some(kind @ ("image" | "document")) => parts.push(media(kind, b, &at)?),
                    Some("tool_result") => {
                        let id = b.string("tool_use_id")?.ok_or_else(|| {
                            Error::input(format!("{at}.tool_use_id"), "field required")
                        })?;
                        let (id, _) = uncarry_id(&id, &format!("{at}.tool_use_id"))?;
                        let Some(name) = names.get(&id) else {
                            return Err(Error::input(
                                format!("{at}.tool_use_id"),
                                format!("{id:?} answers no tool_use of an earlier assistant turn"),
                            ));
                        };
                        let mut result = ToolResult::new(id, name.clone(), Value::Null);
                        match b.take("content") {
                            None => {}
                            Some(Value::String(s)) => result.output = Value::String(s),
                            Some(Value::Array(items)) => {
                                let mut content = Vec::new();
                                for (k, item) in items.into_iter().enumerate() {
                                    let at = format!("{at}.content[{k}]");
                                    let mut item = Fields::of(item, &at)?;
                                    match item.string("type")?.as_deref() {
                                        Some("text") => {
                                            content.push(Part::text(
                                                item.string("text")?.unwrap_or_default(),
                                            ));
                                            item.ignore("cache_control");
                                            item.finish()?;
                                        }
                                        Some(kind @ ("image" | "document")) => {
                                            content.push(media(kind, item, &at)?);
                                        }
                                        other => {
                                            let other = other.shown();
                                            return Err(Error::input(
                                                format!("{at}.type"),
                                                format!(
                                                    "{other}: a tool result takes text, image and document blocks"
                                                ),
                                            ));
                                        }
                                    }
                                }
                                result = result.with_content(content);
                            }
                            Some(other) => {
                                return Err(Error::input(
                                    format!("{at}.content"),
                                    format!(
                                        "must be a string or blocks, got {}",
                                        crate::types::json_kind(&other)
                                    ),
                                ));
                            }
                        }
                        if b.boolean("is_error")?.unwrap_or(false) {
                            result = result.with_is_error(true);
                        }
                        b.ignore("cache_control");
                        b.finish()?;
                        out.push(Message::Tool(result));
                    }
                    other => {
                        let other = other.shown();
                        return Err(Error::input(
                            format!("{at}.type"),
                            format!(
                                "{other}: a user turn takes text, image, document and tool_result blocks"
                            ),
                        ));
                    }
                }
            }
            if !parts.is_empty() {
                out.push(Message::user(Content::Parts(parts)));
            }
        }
        "assistant" => {
            let mut a = AssistantMessage::default();
            let mut thinking: Vec<Value> = Vec::new();
            let mut reasoning = String::new();
            for (j, b) in blocks.into_iter().enumerate() {
                let at = format!("{at}.content[{j}]");
                let kind = b.get("type").and_then(Value::as_str).map(str::to_owned);
                match kind.as_deref() {
                    Some("thinking" | "redacted_thinking") => {
                        if let Some(text) = b.get("thinking").and_then(Value::as_str) {
                            reasoning.push_str(text);
                        }
                        // Only the documented keys go on to an upstream.
                        let kept = b.as_object().and_then(thinking_block).ok_or_else(|| {
                            Error::input(
                                &at,
                                "a thinking block takes `thinking` and `signature` strings, a \
                                 redacted_thinking block a `data` string",
                            )
                        })?;
                        thinking.push(kept);
                    }
                    Some("text") => {
                        let mut b = Fields::of(b, &at)?;
                        b.ignore("type");
                        b.ignore("cache_control");
                        b.ignore("citations");
                        let text = b.string("text")?.unwrap_or_default();
                        b.finish()?;
                        if !thinking.is_empty() && a.tool_calls.is_empty() && a.content.is_none() {
                            a.extra.insert(
                                THINKING_BLOCKS.into(),
                                Value::Array(std::mem::take(&mut thinking)),
                            );
                        }
                        a.content.get_or_insert_with(String::new).push_str(&text);
                    }
                    Some("tool_use") => {
                        let mut b = Fields::of(b, &at)?;
                        b.ignore("type");
                        b.ignore("cache_control");
                        let id = b
                            .string("id")?
                            .ok_or_else(|| Error::input(format!("{at}.id"), "field required"))?;
                        let name = b.string("name")?.unwrap_or_default();
                        let input = b.take("input").unwrap_or_else(|| json!({}));
                        let caller = b.take(super::CALLER).filter(Value::is_object);
                        b.finish()?;
                        let (id, mut extra) = uncarry_id(&id, &format!("{at}.id"))?;
                        if let Some(caller) = caller {
                            extra.insert(super::CALLER.into(), caller);
                        }
                        let mut call = ToolCall::new(id, name.clone(), input.to_string());
                        if !thinking.is_empty() && !extra.contains_key(THINKING_BLOCKS) {
                            extra.insert(
                                THINKING_BLOCKS.into(),
                                Value::Array(std::mem::take(&mut thinking)),
                            );
                        }
                        thinking.clear();
                        call.extra = extra;
                        names.insert(call.id.clone(), name);
                        a.tool_calls.push(call);
                    }
                    // A call Anthropic ran (or one the gateway handed over translated, its
                    // original sealed in the id): kept whole, in place.
                    Some(k) if super::decode::is_hosted_use(k) => {
                        let text = |key: &str| b.get(key).and_then(Value::as_str);
                        let call = HostedCall::new(
                            text("id").unwrap_or_default(),
                            text("name").unwrap_or_default(),
                            crate::provider::ProviderKind::Anthropic.name(),
                        )
                        .with_input(b.get("input").cloned().unwrap_or_else(|| json!({})))
                        .with_at(a.content.as_deref().map_or(0, str::len));
                        a.hosted_calls.push(call.with_blocks([b]));
                    }
                    Some(k) if super::decode::is_hosted_result(k) => {
                        let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                        let at_text = a.content.as_deref().map_or(0, str::len);
                        let result = b.get("content").cloned().unwrap_or(Value::Null);
                        match a.hosted_calls.iter_mut().rev().find(|c| c.id == id) {
                            Some(call) => {
                                call.result = Some(result);
                                call.blocks.push(b);
                            }
                            None => {
                                let name = k.strip_suffix("_tool_result").unwrap_or(k).to_owned();
                                let call = HostedCall::new(
                                    id,
                                    name,
                                    crate::provider::ProviderKind::Anthropic.name(),
                                )
                                .with_result(result)
                                .with_at(at_text)
                                .with_blocks([b]);
                                a.hosted_calls.push(call);
                            }
                        }
                    }
                    other => {
                        let other = other.shown();
                        return Err(Error::input(
                            format!("{at}.type"),
                            format!(
                                "{other}: an assistant turn takes thinking, text, tool_use and \
                                 server tool blocks"
                            ),
                        ));
                    }
                }
            }
            if !thinking.is_empty() && a.tool_calls.is_empty() {
                a.extra
                    .insert(THINKING_BLOCKS.into(), Value::Array(thinking));
            }
            if !reasoning.is_empty() {
                a.reasoning = Some(reasoning);
            }
            out.push(Message::Assistant(a));
        }
        other => {
            let other = other.shown();
            return Err(Error::input(
                format!("{at}.role"),
                format!("unknown role {other} (user, assistant or system)"),
            ));
        }
    }
    Ok(())
}

fn tool(value: Value, at: &str) -> Result<ToolDefinition> {
    let mut t = Fields::of(value, at)?;
    if let Some(kind) = t.string("type")?
        && kind != "custom"
    {
        return Err(Error::input(
            format!("{at}.type"),
            format!("{kind:?}: server tools run at Anthropic only; the gateway takes client tools"),
        ));
    }
    let name = t.string("name")?.unwrap_or_default();
    let description = t.string("description")?.unwrap_or_default();
    let mut def = ToolDefinition::new(name, description).map_err(|e| match e {
        Error::Input { path, message } => Error::input(format!("{at}.{path}"), message),
        other => other,
    })?;
    if let Some(schema) = t.take("input_schema") {
        def = def.with_parameters(schema).map_err(|e| match e {
            Error::Input { message, .. } => Error::input(format!("{at}.input_schema"), message),
            other => other,
        })?;
    }
    def = def.with_strict(t.boolean("strict")?.unwrap_or(false));
    def = def.with_defer_loading(t.boolean("defer_loading")?.unwrap_or(false));
    if let Some(examples) = t.array("input_examples")? {
        def = def.with_input_examples(examples);
    }
    def = def.with_allowed_callers(t.strings("allowed_callers")?);
    if let Some(eager) = t.boolean("eager_input_streaming")? {
        def = def.with_eager_input_streaming(eager);
    }
    if let Some(cache) = t.take("cache_control").filter(|v| !v.is_null()) {
        def = def.with_cache_control(cache);
    }
    t.finish()?;
    Ok(def)
}

/// The Messages `stop_reason` of a translated turn: the one spelling of this wire
/// ([`respond::stop_reason`]); a turn that ended in error (its error goes out as the error) is
/// `end_turn`.
fn stop_reason(response: &ChatResponse) -> String {
    respond::stop_reason(response).unwrap_or_else(|_| "end_turn".to_owned())
}

/// The thinking blocks (with their signatures) a response or call carries.
fn blocks_of(extra: &Map<String, Value>) -> Vec<Value> {
    extra
        .get(THINKING_BLOCKS)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A whole `message` body for `response`, translated from another wire. `id` is the caller's.
/// The mock's bodies come from the same writer.
pub fn encode_body(response: &ChatResponse, id: &str, model: &str) -> Vec<u8> {
    encode_sealed(response, id, model, None)
}

/// [`encode_body`] with the state on call ids sealed by `seal`.
///
/// A malformed or cut-short upstream call has no place here (`input` is an object): it is left
/// out, the text kept, and the turn ends `max_tokens` (cut short) or `end_turn` ([`settled`]).
fn encode_sealed(response: &ChatResponse, id: &str, model: &str, seal: Option<&Seal>) -> Vec<u8> {
    let response = &*settled(response, false);
    let stamp = Stamp {
        id,
        model,
        translated: true,
        seal,
    };
    let mut body = match respond::body(response, &stamp) {
        Ok(body) => body,
        // Only a turn that ended in error has no stop reason of this wire.
        Err(_) => {
            let ended = ChatResponse {
                finish_reason: FinishReason::Stop,
                ..response.clone()
            };
            respond::body(&ended, &stamp).unwrap_or_default()
        }
    };
    if response.finish_reason == FinishReason::Error {
        body["stop_reason"] = json!("end_turn");
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The error body and status for `error`, in the Messages shape
/// (`{"type": "error", "error": {"type", "message"}}`, the type as Anthropic's errors page
/// names it); the mock's come from the same writer.
pub fn encode_error(error: &ApiError) -> (u16, Vec<u8>) {
    let status = error.status.unwrap_or(502);
    (status, respond::error_json(error).to_string().into_bytes())
}

/// Which block is open on the client's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    /// A thinking block; `true` once its signature went out.
    Thinking(bool),
    Call(usize),
    /// A block sent whole at its start (a server tool's block).
    Whole,
}

/// What a writer speaking as Anthropic itself (the mock) knows of its scripted answer before
/// it streams: the counts `message_start` carries, and the server tool calls whose blocks go
/// out in their places.
#[derive(Debug)]
struct Native {
    /// `message_start`'s usage: the input counts, no output yet.
    start: Value,
    /// The answer's hosted calls; those made on this wire go out as their blocks.
    hosted: Vec<HostedCall>,
    /// Whether the `ping` after the first block's start went out.
    pinged: bool,
}

/// The Messages [`StreamWriter`].
#[derive(Debug)]
pub struct EventWriter {
    id: String,
    model: String,
    calls: CallGate,
    open: Open,
    /// Position of the next content block.
    next: usize,
    /// Content block index of each call slot.
    call_blocks: HashMap<usize, usize>,
    finished: bool,
    /// Speaking as Anthropic itself ([`EventWriter::native`]).
    native: Option<Native>,
}

/// Writes one event, its data serialised straight into `out` (writing into a `Vec` cannot
/// fail, and these shapes always serialise).
fn event(out: &mut Vec<u8>, name: &str, data: &impl Serialize) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    let _ = serde_json::to_writer(&mut *out, data);
    out.extend_from_slice(b"\n\n");
}

/// `content_block_start` and `content_block_delta` around a block or delta, without copying
/// it into a bigger JSON tree.
#[derive(Serialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_block: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a Value>,
}

impl EventWriter {
    /// A writer for one stream; `id` and `model` go in `message_start`.
    pub fn new(id: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            calls: CallGate::default(),
            open: Open::None,
            next: 0,
            call_blocks: HashMap::new(),
            finished: false,
            native: None,
        }
    }

    /// A writer speaking as Anthropic itself, for the scripted answer `response` (the mock's
    /// streams): `message_start` carries the answer's input counts, a `ping` follows the first
    /// block's start, each `tool_use` opens under its own id with the empty `input_json_delta`
    /// first, its server tool blocks go out whole in their places, and calls are never held,
    /// carried or refused (as the streaming guide's examples show,
    /// <https://docs.anthropic.com/en/docs/build-with-claude/streaming>).
    pub(crate) fn native(response: &ChatResponse, id: &str, model: &str) -> Self {
        let usage = response.usage.unwrap_or_default();
        let mut w = Self::new(id, model);
        w.calls = CallGate::native();
        w.native = Some(Native {
            start: respond::usage_json(&usage, &response.extra, false),
            hosted: response.hosted_calls.clone(),
            pinged: false,
        });
        w
    }

    /// The blocks of hosted call `index` made on this wire, each sent whole (native writers).
    fn hosted(&mut self, index: usize, out: &mut Vec<u8>) {
        let blocks: Vec<Value> = match &self.native {
            Some(n) => (n.hosted.get(index).into_iter())
                .filter(|c| c.wire == crate::provider::ProviderKind::Anthropic.name())
                .flat_map(|c| c.blocks.iter().filter(|b| b.is_object()).cloned())
                .collect(),
            None => return,
        };
        for block in blocks {
            self.begin(Open::Whole, block, out);
        }
        self.close(out);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open != Open::None {
            let index = self.next - 1;
            event(
                out,
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            );
            self.open = Open::None;
        }
    }

    fn begin(&mut self, kind: Open, block: Value, out: &mut Vec<u8>) -> usize {
        self.close(out);
        let index = self.next;
        self.next += 1;
        self.open = kind;
        event(
            out,
            "content_block_start",
            &Block {
                kind: "content_block_start",
                index,
                content_block: Some(&block),
                delta: None,
            },
        );
        if let Some(n) = self.native.as_mut().filter(|n| !n.pinged) {
            n.pinged = true;
            event(out, "ping", &json!({"type": "ping"}));
        }
        index
    }

    fn delta(&self, index: usize, delta: Value, out: &mut Vec<u8>) {
        event(
            out,
            "content_block_delta",
            &Block {
                kind: "content_block_delta",
                index,
                content_block: None,
                delta: Some(&delta),
            },
        );
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
                    let index = self.begin(
                        Open::Call(slot),
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                        out,
                    );
                    self.call_blocks.insert(slot, index);
                    if self.native.is_some() {
                        self.delta(
                            index,
                            json!({"type": "input_json_delta", "partial_json": ""}),
                            out,
                        );
                    }
                    if !arguments.is_empty() {
                        self.delta(
                            index,
                            json!({"type": "input_json_delta", "partial_json": arguments}),
                            out,
                        );
                    }
                }
                CallOut::Arguments { slot, fragment } => {
                    if let Some(index) = self.call_blocks.get(&slot) {
                        self.delta(
                            *index,
                            json!({"type": "input_json_delta", "partial_json": fragment}),
                            out,
                        );
                    }
                }
                CallOut::Done { .. } => {}
            }
        }
    }

    /// Before a held call opens: the open thinking block gets the signature its call carries.
    fn sign(&mut self, outs: &[CallOut], out: &mut Vec<u8>) {
        if self.open != Open::Thinking(false) {
            return;
        }
        for o in outs {
            if let CallOut::Done { call, .. } = o {
                let turn = call
                    .extra
                    .get(TURN_STATE)
                    .and_then(Value::as_object)
                    .map(blocks_of)
                    .unwrap_or_default();
                let mut blocks = blocks_of(&call.extra);
                blocks.extend(turn);
                let signature = blocks.iter().rev().find_map(|b| {
                    b.get("signature")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                if let Some(signature) = signature {
                    self.signature(&signature, out);
                }
                return;
            }
        }
    }

    /// The open thinking block's `signature_delta`: the upstream's signature, exactly.
    fn signature(&mut self, signature: &str, out: &mut Vec<u8>) {
        self.delta(
            self.next - 1,
            json!({"type": "signature_delta", "signature": signature}),
            out,
        );
        self.open = Open::Thinking(true);
    }

    /// A thinking block opened on the client's side, unless one is open already.
    fn thinking(&mut self, out: &mut Vec<u8>) {
        if !matches!(self.open, Open::Thinking(_)) {
            self.begin(
                Open::Thinking(false),
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                out,
            );
        }
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        let mut outs = Vec::new();
        self.calls.flush(&mut outs);
        self.sign(&outs, out);
        self.calls_out(outs, out);
    }
}

impl StreamWriter for EventWriter {
    fn start(&mut self, out: &mut Vec<u8>) {
        let usage = (self.native.as_ref()).map_or_else(
            || json!({"input_tokens": 0, "output_tokens": 0}),
            |n| n.start.clone(),
        );
        event(
            out,
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": usage}}),
        );
    }

    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for e in events {
            match e {
                StreamEvent::TextDelta { text } => {
                    self.flush(out);
                    if self.open != Open::Text {
                        self.begin(Open::Text, json!({"type": "text", "text": ""}), out);
                    }
                    self.delta(
                        self.next - 1,
                        json!({"type": "text_delta", "text": text}),
                        out,
                    );
                }
                StreamEvent::ReasoningDelta { text } => {
                    self.flush(out);
                    self.calls.reasoning();
                    if self.open == Open::Thinking(true) {
                        // A signed block is over: new reasoning is the next block.
                        self.close(out);
                    }
                    self.thinking(out);
                    self.delta(
                        self.next - 1,
                        json!({"type": "thinking_delta", "thinking": text}),
                        out,
                    );
                }
                StreamEvent::ReasoningSignature { signature } => {
                    self.flush(out);
                    self.calls.reasoning();
                    // A signature for a block with no text (thinking shown as omitted) opens
                    // its block; pieces of one signature follow each other.
                    self.thinking(out);
                    self.signature(signature, out);
                }
                StreamEvent::RedactedReasoning { data } => {
                    self.flush(out);
                    self.calls.reasoning();
                    self.begin(
                        Open::Thinking(true),
                        json!({"type": "redacted_thinking", "data": data}),
                        out,
                    );
                    self.close(out);
                }
                StreamEvent::ReasoningState { .. } => {
                    // A reasoning item (Responses) this wire has no block for: the calls after
                    // it wait until complete, so their ids carry it.
                    self.flush(out);
                    self.calls.reasoning();
                }
                StreamEvent::HostedCall { index, .. } if self.native.is_some() => {
                    self.flush(out);
                    self.hosted(*index, out);
                }
                // A call the upstream ran, made on this wire or translated to it: its blocks,
                // each sent whole, in place.
                StreamEvent::HostedCallComplete { call, .. }
                    if self.native.is_none()
                        && call.wire == crate::provider::ProviderKind::Anthropic.name() =>
                {
                    self.flush(out);
                    for block in call.blocks.iter().filter(|b| b.is_object()) {
                        self.begin(Open::Whole, block.clone(), out);
                    }
                    self.close(out);
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
        if self.native.is_none() && has_bad_call(response) {
            // Its opener may have gone out already, and `input` has no place for text that
            // is not JSON: the turn ends in this wire's error event, never as a runnable call.
            let bad = response
                .tool_calls
                .iter()
                .find(|c| !c.is_complete())
                .map(|c| (c.name.clone(), c.error.clone()));
            let (name, why) = bad.unwrap_or_default();
            let why = why.map_or_else(String::new, |e| format!(": {}", e.message));
            let mut e = ApiError::new(
                crate::provider::ProviderKind::Custom("toolwire"),
                Some(502),
                format!(
                    "the upstream model's call to {name:?} is malformed or cut short{why}; it \
                     was not passed on as a tool_use"
                ),
            );
            e.code = Some("api_error".into());
            self.fail(&e, out);
            return;
        }
        self.finished = true;
        let mut outs = Vec::new();
        self.calls.rest(response, true, &mut outs);
        self.sign(&outs, out);
        self.calls_out(outs, out);
        if self.open == Open::Thinking(false) {
            let signature = blocks_of(&response.extra).iter().rev().find_map(|b| {
                b.get("signature")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            if let Some(signature) = signature {
                self.signature(&signature, out);
            }
        }
        self.close(out);
        let u = response.usage.unwrap_or_default();
        // The stop sequence that ended the turn and the refusal's details, when the answer
        // has them, as the whole body carries them.
        let mut delta = Map::new();
        delta.insert("stop_reason".into(), json!(stop_reason(response)));
        delta.insert(
            "stop_sequence".into(),
            (response.extra.get(STOP_SEQUENCE).cloned()).unwrap_or(Value::Null),
        );
        if let Some(details) = response.extra.get(STOP_DETAILS) {
            delta.insert("stop_details".into(), details.clone());
        }
        event(
            out,
            "message_delta",
            &json!({"type": "message_delta", "delta": delta,
                    "usage": respond::usage_json(&u, &response.extra, true)}),
        );
        event(out, "message_stop", &json!({"type": "message_stop"}));
    }

    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        event(out, "error", &respond::error_json(error));
    }
}

/// The client headers of this wire a same-wire upstream gets as sent: Anthropic's version and beta headers.
pub const WIRE_HEADERS: &[&str] = &["anthropic-version", "anthropic-beta"];

/// The smallest Messages request, for the gateway's table test.
pub const EXAMPLE: &str =
    r#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}"#;

/// An Anthropic `thinking` or `redacted_thinking` block with its documented keys only.
pub(crate) fn thinking_block(m: &Map<String, Value>) -> Option<Value> {
    let strings = |_: &str, v: &Value| v.is_string();
    match m.get("type").and_then(Value::as_str) {
        Some("thinking") => crate::providers::shared::only(
            m,
            &["type", "thinking", "signature"],
            &["type"],
            strings,
        ),
        Some("redacted_thinking") => {
            crate::providers::shared::only(m, &["type", "data"], &["type", "data"], strings)
        }
        _ => None,
    }
}

/// The Messages client wire's reader, for the gateway's table: a request body → the canonical
/// request and how to answer it.
pub fn read(body: &[u8]) -> Result<ClientRequest> {
    let r = decode_request(body)?;
    Ok(ClientRequest::new(r.request, r.stream))
}

/// The Messages client wire's stream writer for one answer.
pub fn writer(answer: &Answer<'_>) -> Box<dyn StreamWriter> {
    let mut w = EventWriter::new(answer.id, answer.model);
    w.calls = CallGate::sealed(answer.seal).folding();
    Box::new(w)
}

/// The Messages client wire's whole body for one answer.
pub fn body(response: &ChatResponse, answer: &Answer<'_>) -> Vec<u8> {
    encode_sealed(response, answer.id, answer.model, answer.seal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::anthropic::Anthropic;
    use crate::replay::replay;

    fn req(body: Value) -> Result<MessagesRequest> {
        decode_request(body.to_string().as_bytes())
    }

    #[test]
    fn server_tool_blocks_and_a_caller_are_kept_in_place() {
        let search = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                            "input": {"query": "q"}});
        let result = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                            "content": []});
        let fetched = json!({"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_9",
                             "content": {"type": "web_fetch_result", "url": "https://x.example"}});
        let caller = json!({"type": "code_execution_20250825", "tool_id": "srvtoolu_1"});
        let r = req(json!({"model": "m", "max_tokens": 64, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."}, search, result, fetched,
                {"type": "text", "text": "Found."},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}, "caller": caller}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}]}))
        .unwrap();
        let Message::Assistant(a) = &r.request.messages[1] else {
            panic!("{:?}", r.request.messages)
        };
        assert_eq!(a.content.as_deref(), Some("Looking.Found."));
        let shape: Vec<_> = (a.hosted_calls.iter())
            .map(|c| (c.id.as_str(), c.name.as_str(), c.at, c.blocks.len()))
            .collect();
        // The result joins its call; one whose call came earlier stands alone.
        assert_eq!(
            shape,
            [
                ("srvtoolu_1", "web_search", 8, 2),
                ("srvtoolu_9", "web_fetch", 8, 1)
            ]
        );
        assert_eq!(a.hosted_calls[0].blocks, [search, result]);
        assert_eq!(a.tool_calls[0].extra[super::super::CALLER], caller);
    }

    #[test]
    fn a_full_request_reads_into_the_canonical_model() {
        let r = req(json!({
            "model": "smart", "max_tokens": 1024, "stream": true,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "tools": [{"name": "get_weather", "description": "Weather",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Need a call.", "signature": "sig1"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "text", "text": "And tomorrow?"}
                ]}
            ]
        }))
        .unwrap();
        assert!(r.stream);
        let q = r.request;
        assert_eq!(q.max_tokens, Some(1024));
        assert_eq!(q.thinking, Some(true));
        assert_eq!(q.tool_choice, Some(ToolChoice::Required));
        assert_eq!(q.parallel_tool_calls, Some(false));
        assert_eq!(q.messages[0], Message::system("Be brief."));
        let Message::Assistant(a) = &q.messages[2] else {
            panic!("{:?}", q.messages[2])
        };
        assert_eq!(a.reasoning.as_deref(), Some("Need a call."));
        let call = &a.tool_calls[0];
        assert_eq!(call.raw_arguments, r#"{"city":"Paris"}"#);
        assert_eq!(call.extra[THINKING_BLOCKS][0]["signature"], "sig1");
        let Message::Tool(t) = &q.messages[3] else {
            panic!()
        };
        assert_eq!(
            (t.call_id.as_str(), t.name.as_str()),
            ("toolu_1", "get_weather")
        );
        assert!(matches!(&q.messages[4], Message::User { .. }));
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let base =
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
        for field in ["container", "mcp_servers", "service_tier"] {
            let mut body = base.clone();
            body[field] = json!(1);
            let err = req(body).unwrap_err();
            assert!(
                matches!(&err, Error::Input { path, .. } if path == field),
                "{err}"
            );
        }
        let mut body = base.clone();
        body.as_object_mut().unwrap().remove("max_tokens");
        assert!(req(body).unwrap_err().to_string().contains("max_tokens"));
        let mut body = base;
        body["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
        let read = req(body).unwrap();
        assert_eq!(
            read.request.hosted_tools,
            [crate::types::HostedTool::web_search()]
        );
        assert!(read.request.tools.is_empty());
    }

    /// An Anthropic stream with a signed thinking block, a redacted one and text, decoded and
    /// written again: the client reads the same blocks, signature and data exactly, in any
    /// batching (<https://docs.claude.com/en/docs/build-with-claude/extended-thinking>: the
    /// `signature_delta` just before the block's `content_block_stop`, `redacted_thinking`
    /// blocks whole).
    #[test]
    fn thinking_signatures_and_redacted_blocks_pass_through_a_stream() {
        use crate::provider::Respond;
        let blocks = json!([
            {"type": "thinking", "thinking": "Paris first.", "signature": "RXFVS0NrWUlC/sig=="},
            {"type": "redacted_thinking", "data": "RW5jcnlwdGVkIGJsb2Nr"}
        ]);
        let mut upstream = ChatResponse::default()
            .with_text("Sunny.")
            .with_finish_reason(FinishReason::Stop);
        upstream.reasoning = Some("Paris first.".into());
        upstream
            .extra
            .insert(THINKING_BLOCKS.into(), blocks.clone());
        let wire = Anthropic::new().encode_response(&upstream, true).unwrap();
        let decoded = replay(&Anthropic::new(), &wire).unwrap();
        assert!(decoded.events.contains(&StreamEvent::ReasoningSignature {
            signature: "RXFVS0NrWUlC/sig==".into()
        }));
        for batch in [1, 2, decoded.events.len()] {
            let mut w = EventWriter::new("msg_1", "m");
            let mut out = Vec::new();
            w.start(&mut out);
            for b in decoded.events.chunks(batch) {
                w.events(b, &mut out);
            }
            w.finish(&decoded.response, &mut out);
            let back = replay(&Anthropic::new(), &out).unwrap().response;
            assert_eq!(back.extra[THINKING_BLOCKS], blocks, "batch {batch}");
            assert_eq!(back.text.as_deref(), Some("Sunny."));
            let text = String::from_utf8_lossy(&out);
            assert_eq!(text.matches("signature_delta").count(), 1, "{text}");
        }
    }

    /// What the writer sends reads back, through our own Messages decoder, as what it was given.
    #[test]
    fn written_streams_decode_back() {
        let (response, events) = crate::test_support::sample_stream("toolu_");
        let calls = response.tool_calls.clone();
        for batch in [1, 2, 3, events.len()] {
            let mut w = EventWriter::new("msg_1", "m");
            let mut out = Vec::new();
            w.start(&mut out);
            for b in events.chunks(batch) {
                w.events(b, &mut out);
            }
            w.finish(&response, &mut out);
            let back = replay(&Anthropic::new(), &out).unwrap().response;
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
        let body = encode_body(&response, "msg_1", "m");
        let back = crate::provider::Provider::decode(&Anthropic::new(), &body).unwrap();
        assert_eq!(back.tool_calls[1].raw_arguments, calls[1].raw_arguments);
    }

    /// What the gateway writes and what the mock writes agree with Anthropic's documented
    /// shapes: usage splits cached input out (`cache_read_input_tokens`, as the Messages
    /// reference's `usage` object counts it), the error `type` follows the status as the errors
    /// page lists it (<https://docs.claude.com/en/api/errors>), and a stop reason the gateway
    /// does not know goes out as it came.
    #[test]
    fn usage_errors_and_stop_reasons_follow_anthropic() {
        use crate::provider::Respond;
        let usage = crate::types::Usage {
            input_tokens: 40,
            output_tokens: 31,
            cached_input_tokens: Some(30),
            ..Default::default()
        };
        let response = ChatResponse::default()
            .with_text("Hi.")
            .with_usage(usage)
            .with_finish_reason(FinishReason::Other("model_context_window_exceeded".into()));
        let body: Value = serde_json::from_slice(&encode_body(&response, "msg_1", "m")).unwrap();
        assert_eq!(body["usage"]["input_tokens"], 10);
        assert_eq!(body["usage"]["cache_read_input_tokens"], 30);
        assert_eq!(body["stop_reason"], "model_context_window_exceeded");
        let mut w = EventWriter::new("msg_1", "m");
        let mut out = Vec::new();
        w.start(&mut out);
        w.events(&[StreamEvent::TextDelta { text: "Hi.".into() }], &mut out);
        w.finish(&response, &mut out);
        let back = replay(&Anthropic::new(), &out).unwrap().response;
        assert_eq!(back.usage.and_then(|u| u.cached_input_tokens), Some(30));
        assert_eq!(back.usage.map(|u| u.input_tokens), Some(40));
        assert!(
            String::from_utf8_lossy(&out)
                .contains(r#""stop_reason":"model_context_window_exceeded""#),
            "the stop reason goes out as it came"
        );
        for (status, kind) in [
            (400, "invalid_request_error"),
            (402, "billing_error"),
            (413, "request_too_large"),
            (503, "api_error"),
            (504, "timeout_error"),
            (529, "overloaded_error"),
        ] {
            let e = ApiError::new(crate::ProviderKind::Anthropic, Some(status), "x");
            for (who, (_, body)) in [
                ("gateway", encode_error(&e)),
                ("mock", Anthropic::new().encode_error(&e, false)),
            ] {
                let body: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(body["error"]["type"], kind, "{who} at {status}");
            }
        }
    }
}

#[cfg(test)]
mod real_client_fields {
    use super::decode_request;
    use crate::types::Message;

    /// What Claude Code sends that changes nothing, or that is read: a `system` message in
    /// `messages`, `thinking.display`, `context_management` clearing nothing.
    #[test]
    fn claude_code_fields_are_read_or_left_out() {
        let body = br#"{"model":"m","max_tokens":64,
            "thinking":{"type":"enabled","budget_tokens":31999,"display":"omitted"},
            "context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
            "messages":[{"role":"user","content":"hi"},
                        {"role":"system","content":[{"type":"text","text":"tools changed","cache_control":{"type":"ephemeral"}}]}]}"#;
        let r = decode_request(body).unwrap();
        assert!(
            matches!(&r.request.messages[1], Message::System { content } if content == "tools changed"),
            "{:?}",
            r.request.messages
        );
        let clears = br#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}],
            "context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}}"#;
        let e = decode_request(clears).unwrap_err().to_string();
        assert!(e.contains("context_management.edits[0]"), "{e}");
        assert!(e.contains("\"clear_tool_uses_20250919\""), "{e}");
        let bad = br#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"thinking":{"budget_tokens":5}}"#;
        let e = decode_request(bad).unwrap_err().to_string();
        assert!(e.contains("thinking.type: missing"), "{e}");
        assert!(!e.contains("Some(") && !e.contains("None"), "{e}");
    }
}
