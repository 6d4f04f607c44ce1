//! The gateway's Chat Completions side: a client's request body → the canonical request, and
//! the canonical stream → the chunks an OpenAI client reads, written as events arrive.
//!
//! Request fields follow the Chat Completions reference
//! (<https://platform.openai.com/docs/api-reference/chat/create>); a field the gateway does not
//! translate is refused by name, never dropped. Answers follow the shapes openai-python reads
//! (`ChatCompletion`, `ChatCompletionChunk`): a role-only opening chunk, each call opened by a
//! fragment with `index`, `id`, `type` and `name`, argument fragments as they arrive, a chunk
//! with the `finish_reason`, a usage-only chunk when `stream_options.include_usage` asked for
//! it, and `data: [DONE]`.

use crate::providers::shared::Shown;
use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Error, Result};
use crate::provider::{Answer, ClientRequest, StreamWriter};
use crate::providers::openai::respond::{
    self, DeltaRole, IdleContent, OPENAI_WIRE, RunningFinish, Stamp, StreamUsage, StreamedCalls,
    Wire,
};
use crate::providers::shared::{CallGate, CallOut, Fields, settled, uncarry_id};
use crate::types::{
    AllowedMode, AssistantMessage, ChatRequest, ChatResponse, Content, Message, Part,
    ResponseFormat, Source, StreamEvent, ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};

/// A client's Chat Completions request, read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatCompletionsRequest {
    /// The canonical request (its `model` is the client's model name, unresolved).
    pub request: ChatRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Whether the stream ends with a usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
}

/// Reads a Chat Completions request body. Errors are [`Error::Input`] naming the field.
pub fn decode_request(body: &[u8]) -> Result<ChatCompletionsRequest> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::input("body", format!("not valid JSON: {e}")))?;
    let mut f = Fields::of(value, "")?;
    let model = f
        .string("model")?
        .ok_or_else(|| Error::input("model", "field required"))?;
    let stream = f.boolean("stream")?.unwrap_or(false);
    let mut include_usage = false;
    if let Some(options) = f.take("stream_options") {
        let mut o = Fields::of(options, "stream_options")?;
        include_usage = o.boolean("include_usage")?.unwrap_or(false);
        o.finish()?;
    }
    let items = f
        .array("messages")?
        .ok_or_else(|| Error::input("messages", "field required"))?;
    let mut messages = Vec::with_capacity(items.len());
    let mut names: HashMap<String, String> = HashMap::new();
    for (i, item) in items.into_iter().enumerate() {
        messages.push(message(item, &format!("messages[{i}]"), &mut names)?);
    }
    let mut request = ChatRequest::new(model, messages);
    if let Some(tools) = f.array("tools")? {
        for (i, t) in tools.into_iter().enumerate() {
            request.tools.push(tool(t, &format!("tools[{i}]"))?);
        }
    }
    if let Some(choice) = f.take("tool_choice") {
        request.tool_choice = Some(tool_choice(choice)?);
    }
    request.parallel_tool_calls = f.boolean("parallel_tool_calls")?;
    let max_tokens = f.count("max_tokens")?;
    request.max_tokens = f.count("max_completion_tokens")?.or(max_tokens);
    request.temperature = f.number("temperature")?;
    request.top_p = f.number("top_p")?;
    request.stop = f.strings("stop")?;
    request.seed = f.integer("seed")?;
    request.presence_penalty = f.number("presence_penalty")?;
    request.frequency_penalty = f.number("frequency_penalty")?;
    if let Some(effort) = f.effort("reasoning_effort")? {
        request = request.with_effort(effort);
    }
    f.verbosity("verbosity")?;
    if let Some(n) = f.count("n")?
        && n != 1
    {
        return Err(Error::input("n", "the gateway answers one choice (n = 1)"));
    }
    if let Some(format) = f.take("response_format") {
        request.response_format = response_format(format)?;
    }
    // Labels for the client's own records; they change nothing in the answer.
    f.ignore("user");
    f.ignore("metadata");
    f.ignore("store");
    // A prompt-cache routing hint: it changes no answer.
    f.ignore("prompt_cache_key");
    f.finish()?;
    Ok(ChatCompletionsRequest {
        request,
        stream,
        include_usage,
    })
}

fn text_of(value: Value, at: &str) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        Value::Array(parts) => {
            let mut out = String::new();
            for (j, p) in parts.into_iter().enumerate() {
                let at = format!("{at}[{j}]");
                let mut p = Fields::of(p, &at)?;
                p.ignore("cache_control");
                match p.string("type")?.as_deref() {
                    Some("text") => {
                        out.push_str(&p.string("text")?.unwrap_or_default());
                        p.finish()?;
                    }
                    other => {
                        let other = other.shown();
                        return Err(Error::input(
                            format!("{at}.type"),
                            format!("{other}: only text parts are taken here"),
                        ));
                    }
                }
            }
            Ok(out)
        }
        other => Err(Error::input(
            at,
            format!(
                "must be a string or an array of text parts, got {}",
                crate::types::json_kind(&other)
            ),
        )),
    }
}

fn user_part(value: Value, at: &str) -> Result<Part> {
    let mut p = Fields::of(value, at)?;
    p.ignore("cache_control");
    let kind = p.string("type")?;
    let part = match kind.as_deref() {
        Some("text") => Part::text(p.string("text")?.unwrap_or_default()),
        Some("image_url") => {
            let mut image = Fields::of(p.need("image_url")?, &format!("{at}.image_url"))?;
            let url = image
                .string("url")?
                .ok_or_else(|| Error::input(format!("{at}.image_url.url"), "field required"))?;
            image.ignore("detail");
            image.finish()?;
            Part::Image {
                source: Source::from_url(url),
            }
        }
        Some("input_audio") => {
            let mut audio = Fields::of(p.need("input_audio")?, &format!("{at}.input_audio"))?;
            let data = audio.string("data")?.unwrap_or_default();
            let media_type = match audio.string("format")?.as_deref() {
                Some("wav") => "audio/wav",
                Some("mp3") => "audio/mpeg",
                other => {
                    let other = other.shown();
                    return Err(Error::input(
                        format!("{at}.input_audio.format"),
                        format!("{other}: expected wav or mp3"),
                    ));
                }
            };
            audio.finish()?;
            Part::Audio {
                source: Source::Data {
                    media_type: media_type.to_owned(),
                    data,
                },
            }
        }
        Some("file") => {
            let mut file = Fields::of(p.need("file")?, &format!("{at}.file"))?;
            let filename = file.string("filename")?;
            let data = file.string("file_data")?.ok_or_else(|| {
                Error::input(
                    format!("{at}.file.file_data"),
                    "field required (an uploaded file_id cannot be read by another provider)",
                )
            })?;
            file.finish()?;
            let mut source = Source::from_url(data);
            if let Source::Url { url, .. } = &source {
                // Bare base64 without a data: prefix.
                source = Source::Data {
                    media_type: "application/pdf".to_owned(),
                    data: url.clone(),
                };
            }
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
    Ok(part)
}

fn message(value: Value, at: &str, names: &mut HashMap<String, String>) -> Result<Message> {
    let mut m = Fields::of(value, at)?;
    let role = m
        .string("role")?
        .ok_or_else(|| Error::input(format!("{at}.role"), "field required"))?;
    m.ignore("name");
    // A prompt-cache hint (opencode adds Anthropic's whenever the model's name says claude):
    // it changes no answer.
    m.ignore("cache_control");
    let message = match role.as_str() {
        "system" | "developer" => {
            let content = m.need("content")?;
            Message::system(text_of(content, &format!("{at}.content"))?)
        }
        "user" => match m.need("content")? {
            Value::String(s) => Message::user(s),
            Value::Array(parts) => {
                let parts = parts
                    .into_iter()
                    .enumerate()
                    .map(|(j, p)| user_part(p, &format!("{at}.content[{j}]")))
                    .collect::<Result<Vec<_>>>()?;
                Message::user(Content::Parts(parts))
            }
            other => {
                return Err(Error::input(
                    format!("{at}.content"),
                    format!(
                        "must be a string or an array of parts, got {}",
                        crate::types::json_kind(&other)
                    ),
                ));
            }
        },
        "assistant" => {
            let mut a = AssistantMessage::default();
            if let Some(content) = m.take("content") {
                let text = text_of(content, &format!("{at}.content"))?;
                if !text.is_empty() {
                    a.content = Some(text);
                }
            }
            a.reasoning = m.string("reasoning_content")?;
            m.ignore("refusal");
            m.ignore("annotations");
            for (j, call) in m
                .array("tool_calls")?
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                let at = format!("{at}.tool_calls[{j}]");
                let mut c = Fields::of(call, &at)?;
                // A stream's position, which openai-python's stream helper keeps on the calls
                // it assembled; the list order says the same.
                c.ignore("index");
                let id = c
                    .string("id")?
                    .ok_or_else(|| Error::input(format!("{at}.id"), "field required"))?;
                if let Some(kind) = c.string("type")?
                    && kind != "function"
                {
                    return Err(Error::input(
                        format!("{at}.type"),
                        format!("{kind:?}: only function calls are taken"),
                    ));
                }
                let mut function = Fields::of(c.need("function")?, &format!("{at}.function"))?;
                let name = function.string("name")?.unwrap_or_default();
                let arguments = function.string("arguments")?.unwrap_or_default();
                function.finish()?;
                c.finish()?;
                let (id, extra) = uncarry_id(&id, &format!("{at}.id"))?;
                let mut call = ToolCall::new(id, name.clone(), arguments);
                call.extra = extra;
                names.insert(call.id.clone(), name);
                a.tool_calls.push(call);
            }
            Message::Assistant(a)
        }
        "tool" => {
            let id = m
                .string("tool_call_id")?
                .ok_or_else(|| Error::input(format!("{at}.tool_call_id"), "field required"))?;
            let content = text_of(m.need("content")?, &format!("{at}.content"))?;
            let (id, _) = uncarry_id(&id, &format!("{at}.tool_call_id"))?;
            let Some(name) = names.get(&id) else {
                return Err(Error::input(
                    format!("{at}.tool_call_id"),
                    format!("{id:?} answers no tool call of an earlier assistant message"),
                ));
            };
            Message::Tool(ToolResult::new(id, name.clone(), Value::String(content)))
        }
        other => {
            let other = other.shown();
            return Err(Error::input(
                format!("{at}.role"),
                format!("unknown role {other}"),
            ));
        }
    };
    m.finish()?;
    Ok(message)
}

fn tool(value: Value, at: &str) -> Result<ToolDefinition> {
    let mut t = Fields::of(value, at)?;
    match t.string("type")?.as_deref() {
        Some("function") => {}
        other => {
            return Err(Error::input(
                format!("{at}.type"),
                format!("{other:?}: only function tools are taken"),
            ));
        }
    }
    let at = format!("{at}.function");
    let mut f = Fields::of(t.need("function")?, &at)?;
    t.finish()?;
    let name = f.string("name")?.unwrap_or_default();
    let description = f.string("description")?.unwrap_or_default();
    let mut def = ToolDefinition::new(name, description).map_err(|e| relocate(e, &at))?;
    if let Some(parameters) = f.take("parameters") {
        def = def
            .with_parameters(parameters)
            .map_err(|e| relocate(e, &format!("{at}.parameters")))?;
    }
    def = def.with_strict(f.boolean("strict")?.unwrap_or(false));
    f.finish()?;
    Ok(def)
}

/// An input error from a constructor, placed at `at` in the body.
fn relocate(e: Error, at: &str) -> Error {
    match e {
        Error::Input { path, message } => Error::input(format!("{at}.{path}"), message),
        other => other,
    }
}

fn tool_choice(value: Value) -> Result<ToolChoice> {
    match value {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            other => Err(Error::input(
                "tool_choice",
                format!("{other:?}: expected auto, none, required or a function"),
            )),
        },
        other => {
            let mut c = Fields::of(other, "tool_choice")?;
            if c.string("type")?.as_deref() == Some("allowed_tools") {
                // {"type":"allowed_tools","allowed_tools":{"mode","tools":[{"type":"function",
                // "function":{"name"}}]}}
                let at = "tool_choice.allowed_tools";
                let mut a = Fields::of(c.need("allowed_tools")?, at)?;
                c.finish()?;
                let mode = allowed_mode(a.string("mode")?, &format!("{at}.mode"))?;
                let mut tools = Vec::new();
                for (i, t) in a
                    .array("tools")?
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                {
                    let at = format!("{at}.tools[{i}]");
                    let mut t = Fields::of(t, &at)?;
                    t.ignore("type");
                    let fat = format!("{at}.function");
                    let mut function = Fields::of(t.need("function")?, &fat)?;
                    let name = function
                        .string("name")?
                        .ok_or_else(|| Error::input(format!("{fat}.name"), "field required"))?;
                    function.finish()?;
                    t.finish()?;
                    tools.push(name);
                }
                a.finish()?;
                return Ok(ToolChoice::Allowed { mode, tools });
            }
            let mut function = Fields::of(c.need("function")?, "tool_choice.function")?;
            let name = function
                .string("name")?
                .ok_or_else(|| Error::input("tool_choice.function.name", "field required"))?;
            function.finish()?;
            c.finish()?;
            Ok(ToolChoice::Tool(name))
        }
    }
}

/// The `mode` of an `allowed_tools` choice: `auto` (the default) or `required`.
pub(crate) fn allowed_mode(mode: Option<String>, at: &str) -> Result<AllowedMode> {
    match mode.as_deref() {
        None => Ok(AllowedMode::Auto),
        Some(m) => AllowedMode::parse(m)
            .ok_or_else(|| Error::input(at, format!("{}: expected auto or required", m.shown()))),
    }
}

fn response_format(value: Value) -> Result<Option<ResponseFormat>> {
    let mut f = Fields::of(value, "response_format")?;
    let format = match f.string("type")?.as_deref() {
        Some("text") => None,
        Some("json_schema") => {
            let mut s = Fields::of(f.need("json_schema")?, "response_format.json_schema")?;
            let name = s.string("name")?.unwrap_or_default();
            let schema = s.take("schema").unwrap_or_else(|| json!({}));
            let mut format = ResponseFormat::json_schema(name, schema);
            format.description = s.string("description")?;
            format.strict = s.boolean("strict")?;
            s.finish()?;
            Some(format)
        }
        other => {
            let other = other.shown();
            return Err(Error::input(
                "response_format.type",
                format!(
                    "{other}: the gateway takes text or json_schema (a schema it can translate for every provider)"
                ),
            ));
        }
    };
    f.finish()?;
    Ok(format)
}

/// The Chat Completions spelling of a translated turn's finish reason: one of this wire's
/// documented values ([`settled`]: never `stop` with a malformed call present).
fn finish_reason(response: &ChatResponse) -> &'static str {
    let settled = settled(response, true);
    match finish_spelling(&settled) {
        "stop" => "stop",
        "tool_calls" => "tool_calls",
        "length" => "length",
        "content_filter" => "content_filter",
        _ if settled.tool_calls.is_empty() => "stop",
        _ => "tool_calls",
    }
}

fn finish_spelling(response: &ChatResponse) -> &str {
    let stamp = Stamp {
        id: "",
        model: "",
        created: 0,
        translated: true,
        seal: None,
    };
    respond::finish_wire(OPENAI_WIRE, &stamp, response)
}

/// A whole `chat.completion` body for `response`, translated from another wire. `id` and
/// `created` are the caller's. The mock's bodies come from the same writer.
pub fn encode_body(response: &ChatResponse, id: &str, model: &str, created: u64) -> Vec<u8> {
    let stamp = Stamp {
        id,
        model,
        created,
        translated: true,
        seal: None,
    };
    respond::body(OPENAI_WIRE, &stamp, &settled(response, true))
}

/// The error body and status for `error`, in OpenAI's shape
/// (`{"error": {"message", "type", "param", "code"}}`); the mock's come from the same writer.
pub fn encode_error(error: &ApiError) -> (u16, Vec<u8>) {
    respond::error(OPENAI_WIRE, error, false)
}

/// The Chat Completions [`StreamWriter`]: the one stream writer of this wire, the gateway's
/// (OpenAI's shape, call ids carrying their state) and the mock's (its native mode: a
/// dialect's own shape, speaking as that provider).
#[derive(Debug)]
pub struct ChunkWriter {
    wire: Wire<'static>,
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    calls: CallGate,
    /// Speaking as the provider itself: its finish spelling, its usage always.
    native: bool,
    /// Chunks held until the turn ends, where usage rides on every chunk as running totals
    /// (their count must be known); else each chunk goes out as it is made.
    held: Option<Vec<Map<String, Value>>>,
    role_sent: bool,
    /// A call opener waiting for its first argument piece (a wire whose opener carries it).
    opener: Option<(usize, String, String)>,
    /// The calls finished so far, for a wire that sends them whole.
    done: Vec<ToolCall>,
    /// The last counts the stream gave.
    usage: Option<Usage>,
    /// Structured reasoning entries (OpenRouter's, MiniMax's `reasoning_details`) sent one per
    /// chunk after the opening one, with their field name (native writers).
    details: Option<(&'static str, Vec<Value>)>,
    finished: bool,
}

impl ChunkWriter {
    /// A writer for one stream; `id`, `model` and `created` go on every chunk.
    pub fn new(
        id: impl Into<String>,
        model: impl Into<String>,
        created: u64,
        include_usage: bool,
    ) -> Self {
        Self {
            wire: OPENAI_WIRE,
            id: id.into(),
            model: model.into(),
            created,
            include_usage,
            calls: CallGate::default(),
            native: false,
            held: None,
            role_sent: false,
            opener: None,
            done: Vec::new(),
            usage: None,
            details: None,
            finished: false,
        }
    }

    /// A writer speaking as the provider of `wire` itself, for the scripted answer `response`
    /// (the mock's streams): the dialect's response shape, the answer's own finish spelling,
    /// its structured reasoning entries, usage where the shape puts it, and calls under their
    /// own ids, never held or carried.
    pub(crate) fn native(wire: Wire<'static>, response: &ChatResponse, id: &str) -> Self {
        let mut w = Self::new(id, respond::MOCK.model, respond::MOCK.created, true);
        w.wire = wire;
        w.calls = CallGate::native();
        w.native = true;
        // Running totals need the chunk count; usage on the finish chunk needs that chunk.
        w.held = matches!(
            wire.shape.usage,
            StreamUsage::EveryChunk | StreamUsage::FinishChunk
        )
        .then(Vec::new);
        w.details = respond::reasoning_details(wire.dialect, response)
            .and_then(|(field, d)| d.as_array().map(|d| (field, d.clone())));
        w
    }

    fn stamp(&self) -> Stamp<'_> {
        Stamp {
            id: &self.id,
            model: &self.model,
            created: self.created,
            translated: !self.native,
            seal: None,
        }
    }

    /// A delta with what every delta of this wire carries (its role, its idle content).
    fn delta(&mut self) -> Map<String, Value> {
        let shape = self.wire.shape;
        let mut d = Map::new();
        match shape.role {
            DeltaRole::OpeningChunk | DeltaRole::OpeningChunkEmptyFinish => {}
            DeltaRole::FirstDelta => {
                if !self.role_sent {
                    d.insert("role".into(), json!("assistant"));
                }
            }
            DeltaRole::EveryDelta(role) => {
                d.insert("role".into(), json!(role));
            }
        }
        self.role_sent = true;
        match shape.idle_content {
            IdleContent::Absent => {}
            IdleContent::Null => {
                d.insert("content".into(), Value::Null);
            }
            IdleContent::Empty => {
                d.insert("content".into(), json!(""));
            }
        }
        d
    }

    /// A chunk whose only choice has `delta` and, when given, `finish`.
    fn chunk(&mut self, delta: Map<String, Value>, finish: Option<&str>, out: &mut Vec<u8>) {
        let shape = self.wire.shape;
        let mut choice = Map::new();
        choice.insert("index".into(), json!(0));
        choice.insert("delta".into(), Value::Object(delta));
        match (finish, shape.running_finish) {
            (Some(reason), _) => {
                choice.insert("finish_reason".into(), json!(reason));
            }
            (None, RunningFinish::Null) => {
                choice.insert("finish_reason".into(), Value::Null);
            }
            (None, RunningFinish::Absent) => {}
            (None, RunningFinish::Empty) => {
                choice.insert("finish_reason".into(), json!(""));
            }
        }
        for field in shape.null_choice_fields {
            choice.insert((*field).into(), Value::Null);
        }
        let mut chunk = respond::envelope(shape, &self.stamp(), "chat.completion.chunk");
        chunk.insert("choices".into(), json!([choice]));
        self.send(chunk, out);
    }

    /// Sends a chunk, or holds it until the turn ends.
    fn send(&mut self, chunk: Map<String, Value>, out: &mut Vec<u8>) {
        match &mut self.held {
            Some(held) => held.push(chunk),
            None => chunk_data(out, &chunk),
        }
    }

    /// A delta carrying these calls.
    fn calls_chunk(&mut self, calls: Vec<Value>, finish: Option<&str>, out: &mut Vec<u8>) {
        let mut d = self.delta();
        d.insert("tool_calls".into(), Value::Array(calls));
        self.chunk(d, finish, out);
    }

    /// A call's opening fragment: `index`, `id` (left out when it has none), `type`, `name`,
    /// and the first argument piece.
    fn open_call(&mut self, slot: usize, id: &str, name: &str, first: &str, out: &mut Vec<u8>) {
        let call = respond::call_fragment(
            Some(slot as i64),
            Some(id).filter(|i| !i.is_empty()),
            name,
            first,
        );
        self.calls_chunk(vec![call], None, out);
    }

    fn call_out(&mut self, o: CallOut, out: &mut Vec<u8>) {
        let StreamedCalls::Fragments {
            first_piece_in_opener,
            empty_id_continuations,
        } = self.wire.shape.calls
        else {
            // Calls sent whole go out at the end.
            if let CallOut::Done { call } = o {
                self.done.push(call);
            }
            return;
        };
        match o {
            CallOut::Open {
                slot,
                id,
                name,
                arguments,
            } => {
                if first_piece_in_opener && arguments.is_empty() {
                    self.opener = Some((slot, id, name));
                } else {
                    self.open_call(slot, &id, &name, &arguments, out);
                }
            }
            CallOut::Arguments { slot, fragment } => {
                if let Some((open, id, name)) = self.opener.take() {
                    if open == slot {
                        self.open_call(slot, &id, &name, &fragment, out);
                        return;
                    }
                    self.open_call(open, &id, &name, "", out);
                }
                let mut piece = Map::new();
                piece.insert("index".into(), json!(slot));
                if empty_id_continuations {
                    piece.insert("id".into(), json!(""));
                    piece.insert("type".into(), json!("function"));
                }
                piece.insert("function".into(), json!({ "arguments": fragment }));
                self.calls_chunk(vec![Value::Object(piece)], None, out);
            }
            CallOut::Done { call } => {
                self.close_opener(out);
                self.done.push(call);
            }
        }
    }

    /// An opener still waiting for its first piece goes out with none.
    fn close_opener(&mut self, out: &mut Vec<u8>) {
        if let Some((slot, id, name)) = self.opener.take() {
            self.open_call(slot, &id, &name, "", out);
        }
    }

    fn outs(&mut self, outs: Vec<CallOut>, out: &mut Vec<u8>) {
        for o in outs {
            self.call_out(o, out);
        }
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        let mut outs = Vec::new();
        self.calls.flush(&mut outs);
        self.outs(outs, out);
    }

    /// Calls sent whole, in one chunk (with `finish` where the wire puts it there).
    fn whole_calls(&mut self, finish: Option<&str>, out: &mut Vec<u8>) {
        let index = match self.wire.shape.calls {
            StreamedCalls::Fragments { .. } => return,
            StreamedCalls::Whole { index } => index,
            StreamedCalls::WholeWithFinish => None,
        };
        let done = std::mem::take(&mut self.done);
        if done.is_empty() {
            return;
        }
        let stamp = self.stamp();
        let calls = (0_i64..)
            .zip(&done)
            .map(|(i, c)| respond::call_json(c, &stamp, Some(index.unwrap_or(i)), &c.raw_arguments))
            .collect();
        self.calls_chunk(calls, finish, out);
    }

    /// The chunk that ends the turn.
    fn finish_chunk(&mut self, reason: &str, out: &mut Vec<u8>) {
        let delta = match self.wire.shape.role {
            DeltaRole::EveryDelta(role) => respond::role_and_empty_content(role),
            DeltaRole::OpeningChunkEmptyFinish => {
                let mut d = Map::new();
                d.insert("content".into(), json!(""));
                d
            }
            DeltaRole::OpeningChunk | DeltaRole::FirstDelta => Map::new(),
        };
        self.chunk(delta, Some(reason), out);
    }

    /// Places the turn's usage where this wire sends it, then sends what was held.
    fn usage_and_rest(&mut self, usage: Option<&Usage>, out: &mut Vec<u8>) {
        let shape = self.wire.shape;
        if let Some(u) = usage.filter(|_| self.include_usage) {
            match shape.usage {
                StreamUsage::LastChunk => {
                    let mut chunk =
                        respond::envelope(shape, &self.stamp(), "chat.completion.chunk");
                    chunk.insert("choices".into(), json!([]));
                    chunk.insert("usage".into(), respond::usage_json(u));
                    self.send(chunk, out);
                }
                StreamUsage::FinishChunk => {
                    // The finish chunk is the last one made: it was held for this.
                    if let Some(last) = self.held.as_mut().and_then(|h| h.last_mut()) {
                        last.insert("usage".into(), respond::usage_json(u));
                    }
                }
                StreamUsage::EveryChunk => {
                    let held = self.held.as_mut().map(std::mem::take).unwrap_or_default();
                    let n = held.len();
                    for (k, mut chunk) in held.into_iter().enumerate() {
                        let running = Usage {
                            input_tokens: u.input_tokens,
                            output_tokens: respond::share(u.output_tokens, k + 1, n),
                            reasoning_tokens: u
                                .reasoning_tokens
                                .map(|r| respond::share(r, k + 1, n)),
                            // The prompt (and what of it was cached) is known from the first chunk.
                            ..*u
                        };
                        chunk.insert("usage".into(), respond::usage_json(&running));
                        chunk_data(out, &chunk);
                    }
                }
            }
        }
        for chunk in self.held.take().unwrap_or_default() {
            chunk_data(out, &chunk);
        }
    }
}

/// One `data:` event holding `chunk`, serialised straight into `out` (writing into a `Vec`
/// cannot fail, and a JSON map always serialises).
fn chunk_data(out: &mut Vec<u8>, chunk: &Map<String, Value>) {
    out.extend_from_slice(b"data: ");
    let _ = serde_json::to_writer(&mut *out, chunk);
    out.extend_from_slice(b"\n\n");
}

fn data(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\n\n");
}

impl StreamWriter for ChunkWriter {
    fn start(&mut self, out: &mut Vec<u8>) {
        if matches!(
            self.wire.shape.role,
            DeltaRole::OpeningChunk | DeltaRole::OpeningChunkEmptyFinish
        ) {
            self.chunk(respond::role_and_empty_content("assistant"), None, out);
        }
        if let Some((field, details)) = self.details.take() {
            for entry in details {
                let mut d = self.delta();
                d.insert(field.into(), json!([entry]));
                self.chunk(d, None, out);
            }
        }
    }

    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        let dialect = self.wire.dialect;
        for event in events {
            match event {
                StreamEvent::TextDelta { text } => {
                    self.flush(out);
                    let mut d = self.delta();
                    d.insert("content".into(), json!(text));
                    self.chunk(d, None, out);
                }
                StreamEvent::ReasoningDelta { text } => {
                    self.flush(out);
                    self.calls.reasoning();
                    if let Some(field) = dialect.reasoning_fields.first() {
                        let mut d = self.delta();
                        d.insert(field.name().into(), json!(text));
                        self.chunk(d, None, out);
                    }
                    if dialect.thinking_chunks {
                        let mut d = self.delta();
                        d.insert("content".into(), json!([respond::thinking_chunk(text)]));
                        self.chunk(d, None, out);
                    }
                }
                StreamEvent::ReasoningSignature { .. }
                | StreamEvent::RedactedReasoning { .. }
                | StreamEvent::ReasoningState { .. } => {
                    // Reasoning state this wire has no place for: the calls after it wait until
                    // complete, so their ids carry it, even when no reasoning text came.
                    self.flush(out);
                    self.calls.reasoning();
                }
                StreamEvent::Usage { usage } => self.usage = Some(*usage),
                other => {
                    let mut outs = Vec::new();
                    self.calls.event(other, &mut outs);
                    self.outs(outs, out);
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
        self.calls.rest(response, true, &mut outs);
        self.outs(outs, out);
        self.close_opener(out);
        let reason = if self.native {
            respond::finish_wire(self.wire, &self.stamp(), response).to_owned()
        } else {
            finish_reason(response).to_owned()
        };
        let whole = !self.done.is_empty();
        self.whole_calls(Some(&reason), out);
        if !(whole && self.wire.shape.calls == StreamedCalls::WholeWithFinish) {
            self.finish_chunk(&reason, out);
        }
        self.usage_and_rest(response.usage.as_ref(), out);
        data(out, "[DONE]");
    }

    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.flush(out);
        self.close_opener(out);
        self.whole_calls(None, out);
        let usage = self
            .usage
            .filter(|_| self.wire.shape.usage == StreamUsage::EveryChunk);
        self.usage_and_rest(usage.as_ref(), out);
        let (_, body) = respond::error(self.wire, error, false);
        data(out, &String::from_utf8_lossy(&body));
    }
}

/// The client headers of this wire a same-wire upstream gets as sent: OpenAI's beta header.
pub const WIRE_HEADERS: &[&str] = &["openai-beta"];

/// The smallest Chat Completions request, for the gateway's table test.
pub const EXAMPLE: &str = r#"{"model":"m","messages":[{"role":"user","content":"Hi"}]}"#;

/// The Chat Completions client wire's reader, for the gateway's table: a request body → the
/// canonical request and how to answer it.
pub fn read(body: &[u8]) -> Result<ClientRequest> {
    let r = decode_request(body)?;
    let mut asked = ClientRequest::new(r.request, r.stream);
    asked.include_usage = r.include_usage;
    Ok(asked)
}

/// The Chat Completions client wire's stream writer for one answer.
pub fn writer(answer: &Answer<'_>) -> Box<dyn StreamWriter> {
    let mut w = ChunkWriter::new(
        answer.id,
        answer.model,
        answer.created,
        answer.include_usage,
    );
    w.calls = CallGate::sealed(answer.seal).folding();
    Box::new(w)
}

/// The Chat Completions client wire's whole body for one answer.
pub fn body(response: &ChatResponse, answer: &Answer<'_>) -> Vec<u8> {
    let stamp = Stamp {
        id: answer.id,
        model: answer.model,
        created: answer.created,
        translated: true,
        seal: answer.seal,
    };
    respond::body(OPENAI_WIRE, &stamp, &settled(response, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::seal::Seal;

    /// [`read`], then the sealed state opened, as the gateway does.
    fn sealed_read(body: &[u8], seal: &Seal) -> Result<ClientRequest> {
        let mut r = read(body)?;
        crate::providers::seal::open_request(&mut r.request, seal)?;
        Ok(r)
    }
    use crate::providers::openai::OpenAi;
    use crate::replay::replay;
    use crate::types::FinishReason;

    fn req(body: Value) -> Result<ChatCompletionsRequest> {
        decode_request(body.to_string().as_bytes())
    }

    #[test]
    fn a_full_request_reads_into_the_canonical_model() {
        let r = req(json!({
            "model": "fast",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather",
                "description": "Weather", "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "parallel_tool_calls": false,
            "max_completion_tokens": 100,
            "temperature": 0.5
        }))
        .unwrap();
        assert!(r.stream && r.include_usage);
        let q = r.request;
        assert_eq!(q.model, "fast");
        assert_eq!(q.messages.len(), 4);
        let Message::User {
            content: Content::Parts(parts),
        } = &q.messages[1]
        else {
            panic!("{:?}", q.messages[1]);
        };
        assert_eq!(
            parts[1],
            Part::Image {
                source: Source::Data {
                    media_type: "image/png".into(),
                    data: "iVBO".into()
                }
            }
        );
        let Message::Assistant(a) = &q.messages[2] else {
            panic!()
        };
        assert_eq!(a.tool_calls[0].raw_arguments, r#"{"city":"Paris"}"#);
        let Message::Tool(t) = &q.messages[3] else {
            panic!()
        };
        assert_eq!(
            (t.name.as_str(), t.content_text().as_str()),
            ("get_weather", "sunny")
        );
        assert_eq!(q.tools[0].name, "get_weather");
        assert_eq!(q.tool_choice, Some(ToolChoice::Tool("get_weather".into())));
        assert_eq!(q.parallel_tool_calls, Some(false));
        assert_eq!(q.max_tokens, Some(100));
        assert_eq!(q.temperature, Some(0.5));
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let base = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        for (field, value, path) in [
            ("top_logprobs", json!(3), "top_logprobs"),
            ("logit_bias", json!({"50256": -100}), "logit_bias"),
            ("n", json!(2), "n"),
        ] {
            let mut body = base.clone();
            body[field] = value;
            let err = req(body).unwrap_err();
            assert!(
                matches!(&err, Error::Input { path: p, .. } if p == path),
                "{err}"
            );
        }
        let mut body = base.clone();
        body["messages"][0]["colour"] = json!("red");
        let err = req(body).unwrap_err();
        assert!(err.to_string().contains("messages[0].colour"), "{err}");
        let body = json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]});
        assert!(
            req(body)
                .unwrap_err()
                .to_string()
                .contains("messages[0].tool_call_id")
        );
        assert!(decode_request(b"{").is_err());
        assert!(decode_request(b"[]").is_err());
    }

    #[test]
    fn carried_state_comes_back_from_the_echoed_id() {
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.extra.insert("thought_signature".into(), json!("c2ln"));
        let seal = Seal::new([1_u8; 32]).unwrap();
        let id = crate::providers::shared::carry_id(&call, Some(&seal));
        let body = json!({"model": "m", "messages": [
            {"role": "assistant", "tool_calls": [{"id": id, "type": "function",
              "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": id, "content": "ok"}
        ]});
        let r = sealed_read(body.to_string().as_bytes(), &seal).unwrap();
        let Message::Assistant(a) = &r.request.messages[0] else {
            panic!()
        };
        assert_eq!(a.tool_calls[0].id, "call_1");
        assert_eq!(a.tool_calls[0].extra, call.extra);
        let Message::Tool(t) = &r.request.messages[1] else {
            panic!()
        };
        assert_eq!(t.call_id, "call_1");
    }

    /// What the writer sends reads back, through our own Chat Completions decoder, as the
    /// events and response it was given, however the events were batched.
    #[test]
    fn written_streams_decode_back() {
        let (response, events) = crate::test_support::sample_stream("call_");
        let calls = response.tool_calls.clone();
        for batch in [1, 2, 3, events.len()] {
            let mut w = ChunkWriter::new("chatcmpl-1", "m", 0, true);
            let mut out = Vec::new();
            w.start(&mut out);
            for b in events.chunks(batch) {
                w.events(b, &mut out);
            }
            w.finish(&response, &mut out);
            let back = replay(&OpenAi::new(), &out).unwrap().response;
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
        let body = encode_body(&response, "chatcmpl-1", "m", 0);
        let back = crate::provider::Provider::decode(&OpenAi::new(), &body).unwrap();
        assert_eq!(back.tool_calls[1].raw_arguments, calls[1].raw_arguments);
    }

    /// The error body's `type` is OpenAI's class of the error, not its code: a bad key is
    /// `{"type": "invalid_request_error", "code": "invalid_api_key"}` (the 401 body quoted in
    /// continuedev/continue#9358), a server fault `server_error`. The gateway and every
    /// OpenAI-shaped mock writer say the same.
    #[test]
    fn error_type_is_the_class_of_the_error() {
        use crate::provider::Respond;
        for (status, code, kind) in [
            (401, Some("invalid_api_key"), "invalid_request_error"),
            (404, Some("model_not_found"), "invalid_request_error"),
            (400, None, "invalid_request_error"),
            (500, None, "server_error"),
        ] {
            let mut e = ApiError::new(crate::ProviderKind::OpenAi, Some(status), "x");
            e.code = code.map(str::to_owned);
            let mock = crate::providers::openai::OpenAiResponder::default();
            for (who, (_, body)) in [
                ("gateway", encode_error(&e)),
                ("mock", mock.encode_error(&e, false)),
            ] {
                let body: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(body["error"]["type"], kind, "{who} at {status}");
                assert_eq!(body["error"]["code"], json!(code), "{who} at {status}");
            }
        }
    }
}

#[cfg(test)]
mod real_client_fields {
    use super::read;

    /// opencode's `cache_control` on Chat messages and parts, and `prompt_cache_key`, are left
    /// out; an unknown part type is named without Rust's `Some(..)`.
    #[test]
    fn opencode_fields_are_left_out() {
        let body = br#"{"model":"m","prompt_cache_key":"s-1","messages":[
            {"role":"system","content":"s","cache_control":{"type":"ephemeral"}},
            {"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}"#;
        let r = read(body).unwrap();
        assert_eq!(r.request.messages.len(), 2);
        let bad = br#"{"model":"m","messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
        let e = read(bad).map(|_| ()).unwrap_err().to_string();
        assert!(!e.contains("Some(") && !e.contains("None"), "{e}");
    }
}
