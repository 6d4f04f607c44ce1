//! The sans-IO core: encode, decode, replay, stream readers, partial JSON, text-call recovery,
//! schema lowering. Every call converts its input while holding the GIL, releases it while
//! toolwire works, and converts the result back.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{Value, json};
use toolwire::partial_json::{
    ArgumentEvent, CallArguments, PartialEvent, PartialJson as RustPartialJson,
};
use toolwire::realtime::replay as rt;
use toolwire::realtime::{RealtimeCodec, RealtimeEvent, RealtimeKind};
use toolwire::text_calls::{Piece, Recogniser, TextCalls};
use toolwire::turn::{Limits, TurnReader};
use toolwire::{
    ChatRequest, ChatResponse, Error, HttpRequest, Message, Provider, ProviderKind, SchemaMode,
    StreamEvent, TextCallFormat, ToolDefinition,
};

use crate::conv::{self, bytes_of, from_py, ser_to_py, to_py};
use crate::errors;

type Res<T> = Result<T, Error>;

fn poisoned() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("a previous call panicked")
}

/// The HTTP provider named `name`.
pub fn kind_of(name: &str) -> PyResult<ProviderKind> {
    name.parse::<ProviderKind>().map_err(|e| {
        let hint = if name.parse::<RealtimeKind>().is_ok() {
            " (a realtime dialect: use replay_session or RealtimeReader)".to_owned()
        } else {
            String::new()
        };
        errors::input("provider", format!("{e}{hint}"))
    })
}

fn realtime_of(name: &str) -> PyResult<RealtimeKind> {
    name.parse::<RealtimeKind>()
        .map_err(|e| errors::input("provider", e.to_string()))
}

/// The provider for `name`, with the dialect `base_url` implies (as `toolwire replay --base-url`).
pub fn provider_of(name: &str, base_url: Option<&str>) -> PyResult<Arc<dyn Provider>> {
    let kind = kind_of(name)?;
    toolwire::providers::provider_for_base_url(kind, base_url)
        .map(Arc::from)
        .map_err(|e| errors::to_py(&e))
}

fn text_format(name: &str) -> PyResult<TextCallFormat> {
    name.parse::<TextCallFormat>()
        .map_err(|e| errors::input("text_calls", e.to_string()))
}

fn request_of(obj: &Bound<'_, PyAny>) -> PyResult<ChatRequest> {
    conv::extract(obj, "request")
}

fn err(e: Error) -> PyErr {
    errors::to_py(&e)
}

/// The request a captured body answers, encoded for its wire (names mapped, text calls read),
/// as `toolwire replay --request/--text-calls` does.
fn answered(
    provider: &dyn Provider,
    request: Option<ChatRequest>,
    text_calls: Option<TextCallFormat>,
) -> Res<Option<HttpRequest>> {
    match (request, text_calls) {
        (Some(mut req), format) => {
            if let Some(f) = format {
                req.text_calls = Some(f);
            }
            provider.encode(&req, true).map(Some)
        }
        (None, Some(f)) => {
            let req = ChatRequest::new("replay", vec![Message::user("")]).with_text_calls(f);
            provider.encode(&req, true).map(Some)
        }
        (None, None) => Ok(None),
    }
}

/// Names of the HTTP providers.
#[pyfunction]
pub fn providers() -> Vec<&'static str> {
    ProviderKind::ALL.iter().map(|k| k.name()).collect()
}

/// Names of the realtime (WebSocket) dialects.
#[pyfunction]
pub fn realtime_providers() -> Vec<&'static str> {
    RealtimeKind::ALL.iter().map(|k| k.name()).collect()
}

/// The wire body for `request` (exactly what `toolwire encode` prints).
#[pyfunction]
#[pyo3(signature = (provider, request, stream = false))]
pub fn encode<'py>(
    py: Python<'py>,
    provider: &str,
    request: &Bound<'py, PyAny>,
    stream: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider_of(provider, None)?;
    let req = request_of(request)?;
    let http = py.detach(|| provider.encode(&req, stream)).map_err(err)?;
    to_py(py, &http.body)
}

/// The whole wire request: method, path, headers (auth left out), body, downgrades.
#[pyfunction]
#[pyo3(signature = (provider, request, stream = false))]
pub fn encode_request<'py>(
    py: Python<'py>,
    provider: &str,
    request: &Bound<'py, PyAny>,
    stream: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider_of(provider, None)?;
    let req = request_of(request)?;
    let http = py.detach(|| provider.encode(&req, stream)).map_err(err)?;
    let headers: serde_json::Map<String, Value> = http
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let out = json!({
        "method": "POST",
        "path": http.path,
        "headers": headers,
        "body": http.body,
        "downgrades": serde_json::to_value(&http.downgrades).unwrap_or(Value::Null),
    });
    to_py(py, &out)
}

/// Decodes a whole (non-streamed) response body; a 4xx/5xx `status` reads it as an error body
/// and raises `ApiError`.
#[pyfunction]
#[pyo3(signature = (provider, body, *, status = None, base_url = None, request = None))]
pub fn decode<'py>(
    py: Python<'py>,
    provider: &str,
    body: &Bound<'py, PyAny>,
    status: Option<u16>,
    base_url: Option<&str>,
    request: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider_of(provider, base_url)?;
    let bytes = bytes_of(body)?;
    let req = request.map(request_of).transpose()?;
    let result: Res<ChatResponse> = py.detach(|| {
        if let Some(s) = status.filter(|s| *s >= 400) {
            return Err(provider.decode_error(Some(s), &bytes).into());
        }
        match answered(provider.as_ref(), req, None)? {
            Some(http) => provider.decode_for(&http, &bytes),
            None => provider.decode(&bytes),
        }
    });
    ser_to_py(py, &result.map_err(err)?)
}

/// The canonical response of a captured body, JSON or stream: exactly what
/// `toolwire replay --provider P [--base-url U] FILE` prints. On failure the raised error's
/// `partial` holds what the CLI prints before failing.
#[pyfunction]
#[pyo3(signature = (provider, body, base_url = None, *, request = None, status = None, text_calls = None))]
pub fn replay<'py>(
    py: Python<'py>,
    provider: &str,
    body: &Bound<'py, PyAny>,
    base_url: Option<&str>,
    request: Option<&Bound<'py, PyAny>>,
    status: Option<u16>,
    text_calls: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider_of(provider, base_url)?;
    let bytes = bytes_of(body)?;
    let req = request.map(request_of).transpose()?;
    let format = text_calls.map(text_format).transpose()?;
    let result: Res<ChatResponse> = py.detach(|| {
        let http = answered(provider.as_ref(), req, format)?;
        if let Some(s) = status.filter(|s| *s >= 400) {
            return Err(provider.decode_error(Some(s), &bytes).into());
        }
        toolwire::replay::replay_reader(provider.as_ref(), http.as_ref(), bytes.as_slice(), false)
            .map(|r| r.response)
    });
    ser_to_py(py, &result.map_err(err)?)
}

/// Like `replay`, with the stream events too: `(events, response)` (`toolwire replay --events`).
#[pyfunction]
#[pyo3(signature = (provider, body, base_url = None, *, request = None, text_calls = None))]
pub fn replay_events<'py>(
    py: Python<'py>,
    provider: &str,
    body: &Bound<'py, PyAny>,
    base_url: Option<&str>,
    request: Option<&Bound<'py, PyAny>>,
    text_calls: Option<&str>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let provider = provider_of(provider, base_url)?;
    let bytes = bytes_of(body)?;
    let req = request.map(request_of).transpose()?;
    let format = text_calls.map(text_format).transpose()?;
    let result = py.detach(|| {
        let http = answered(provider.as_ref(), req, format)?;
        toolwire::replay::replay_answer(provider.as_ref(), http.as_ref(), &bytes)
    });
    let r = result.map_err(err)?;
    Ok((ser_to_py(py, &r.events)?, ser_to_py(py, &r.response)?))
}

/// A recorded realtime session (JSON lines) replayed through its dialect: `responses` (each
/// line `toolwire replay --provider <dialect>` prints), with the calls handed out, errors,
/// cancellations, whether it ended mid-response, and counts.
#[pyfunction]
pub fn replay_session<'py>(
    py: Python<'py>,
    provider: &str,
    body: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let kind = realtime_of(provider)?;
    let bytes = bytes_of(body)?;
    let replay = py.detach(|| rt::replay(kind, &bytes)).map_err(err)?;
    to_py(py, &session_summary(&replay))
}

fn session_summary(replay: &rt::SessionReplay) -> Value {
    let mut summary = replay.summary();
    if let Value::Object(map) = &mut summary {
        map.insert(
            "responses".to_owned(),
            serde_json::to_value(&replay.responses).unwrap_or(Value::Null),
        );
    }
    summary
}

/// The parameters schema `provider` receives for `parameters` (what `toolwire schema` prints).
#[pyfunction]
#[pyo3(signature = (provider, parameters, *, strict = false, json_schema = false))]
pub fn schema<'py>(
    py: Python<'py>,
    provider: &str,
    parameters: &Bound<'py, PyAny>,
    strict: bool,
    json_schema: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider_of(provider, None)?;
    let parameters = from_py(parameters, "parameters")?;
    let lowered = py
        .detach(|| {
            let tool = ToolDefinition::new("schema", "")?
                .with_parameters(parameters)?
                .with_strict(strict);
            let mode = json_schema.then_some(SchemaMode::JsonSchema);
            provider.encode_parameters(&tool, mode)
        })
        .map_err(err)?;
    to_py(py, &lowered)
}

fn piece_json(p: &Piece) -> Value {
    match p {
        Piece::Text(t) => json!({"type": "text", "text": t}),
        Piece::Start { name } => json!({"type": "start", "name": name}),
        Piece::Arguments(a) => json!({"type": "arguments", "text": a}),
        Piece::End => json!({"type": "end"}),
        Piece::Cut => json!({"type": "cut"}),
        _ => json!({"type": "unknown"}),
    }
}

fn text_calls_config(format: &str, tools: Option<&Bound<'_, PyAny>>) -> PyResult<TextCalls> {
    let format = text_format(format)?;
    let tools: Vec<(String, Value)> = match tools {
        Some(t) => {
            let Value::Object(map) = from_py(t, "tools")? else {
                return Err(errors::input(
                    "tools",
                    "a dict of tool name to parameters schema",
                ));
            };
            map.into_iter().collect()
        }
        None => Vec::new(),
    };
    Ok(TextCalls::new(format, tools))
}

/// Tool calls a model wrote into its text, recovered in `format` (auto, hermes, qwen-xml,
/// deepseek, mistral, llama, glm, kimi): pieces in order, `text` outside calls, then per call
/// `start` (name), `arguments` (text), `end` or `cut`.
#[pyfunction]
#[pyo3(signature = (text, format = "auto", tools = None))]
pub fn parse_text_calls<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    tools: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = text_calls_config(format, tools)?;
    let pieces = py.detach(|| {
        let mut r = Recogniser::new(&config);
        let mut out = Vec::new();
        r.push(text, &mut out);
        r.finish(&mut out);
        out.iter().map(piece_json).collect::<Vec<_>>()
    });
    to_py(py, &Value::Array(pieces))
}

/// An incremental text-call recogniser: `push(text)` and `finish()` return pieces.
#[pyclass(module = "toolwire._toolwire")]
pub struct TextCallReader {
    inner: Recogniser,
}

#[pymethods]
impl TextCallReader {
    #[new]
    #[pyo3(signature = (format = "auto", tools = None))]
    fn new(format: &str, tools: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Self {
            inner: Recogniser::new(&text_calls_config(format, tools)?),
        })
    }

    fn push<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        self.inner.push(text, &mut out);
        to_py(py, &Value::Array(out.iter().map(piece_json).collect()))
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        self.inner.finish(&mut out);
        to_py(py, &Value::Array(out.iter().map(piece_json).collect()))
    }
}

fn argument_line(e: &ArgumentEvent) -> Value {
    let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        let mut tagged = serde_json::Map::with_capacity(map.len() + 1);
        tagged.insert(
            "type".to_owned(),
            Value::String("tool_call_arguments".to_owned()),
        );
        tagged.extend(std::mem::take(map));
        *map = tagged;
    }
    v
}

/// Reads one model turn as it arrives, for any HTTP wire (SSE, NDJSON, Bedrock's binary event
/// stream, or a JSON body): `feed(bytes)` returns the events it completed, `finish()` the
/// canonical response.
#[pyclass(module = "toolwire._toolwire")]
pub struct StreamReader {
    reader: Mutex<TurnReader<'static>>,
    arguments: Option<CallArguments>,
    events: Vec<StreamEvent>,
}

#[pymethods]
impl StreamReader {
    #[new]
    #[pyo3(signature = (provider, base_url = None, *, request = None, text_calls = None, partial_json = false, max_body_bytes = None, max_event_bytes = None, max_argument_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        provider: &str,
        base_url: Option<&str>,
        request: Option<&Bound<'_, PyAny>>,
        text_calls: Option<&str>,
        partial_json: bool,
        max_body_bytes: Option<usize>,
        max_event_bytes: Option<usize>,
        max_argument_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let provider = provider_of(provider, base_url)?;
        let req = request.map(request_of).transpose()?;
        let format = text_calls.map(text_format).transpose()?;
        let http = answered(provider.as_ref(), req, format).map_err(err)?;
        let mut limits = Limits::default();
        if let Some(n) = max_body_bytes {
            limits = limits.with_max_body_bytes(n);
        }
        if let Some(n) = max_event_bytes {
            limits = limits.with_max_event_bytes(n);
        }
        if let Some(n) = max_argument_bytes {
            limits = limits.with_max_argument_bytes(n);
        }
        Ok(Self {
            reader: Mutex::new(TurnReader::shared(provider, http.as_ref()).with_limits(limits)),
            arguments: partial_json.then(CallArguments::new),
            events: Vec::new(),
        })
    }

    /// The next bytes; returns the events they completed (dicts tagged by `type`).
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let bytes = bytes_of(data)?;
        let Self { reader, events, .. } = self;
        events.clear();
        let reader = reader.get_mut().map_err(|_| poisoned())?;
        let result = py.detach(|| reader.push(&bytes, events));
        let out = self.events_to_py(py)?;
        result.map_err(err)?;
        Ok(out)
    }

    /// The body ended: the canonical response (the last events, if any, are in `events`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Self { reader, events, .. } = self;
        events.clear();
        let reader = reader.get_mut().map_err(|_| poisoned())?;
        let result = py.detach(|| reader.finish(events));
        let response = result.map_err(err)?;
        ser_to_py(py, &response)
    }

    /// Events the last `finish()` completed (the stream's tail).
    fn take_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = self.events_to_py(py)?;
        self.events.clear();
        Ok(out)
    }

    /// Bytes received so far.
    #[getter]
    fn received(&self) -> PyResult<usize> {
        Ok(self.reader.lock().map_err(|_| poisoned())?.received())
    }
}

impl StreamReader {
    fn events_to_py<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut structure = Vec::new();
        for e in &self.events {
            list.append(ser_to_py(py, e)?)?;
            if let Some(args) = self.arguments.as_mut() {
                args.observe(e, &mut structure);
                for a in structure.drain(..) {
                    list.append(to_py(py, &argument_line(&a))?)?;
                }
            }
        }
        Ok(list)
    }
}

fn realtime_event_json(e: &RealtimeEvent) -> Value {
    match e {
        RealtimeEvent::ResponseStarted { response, id } => {
            json!({"type": "response_started", "response": response, "id": id})
        }
        RealtimeEvent::Model { response, event } => {
            json!({"type": "model", "response": response, "event": event})
        }
        RealtimeEvent::CallReady { response, call } => {
            json!({"type": "call_ready", "response": response, "call": call})
        }
        RealtimeEvent::ResponseDone { response, result } => {
            json!({"type": "response_done", "response": response, "result": result})
        }
        RealtimeEvent::CallsCancelled { ids } => json!({"type": "calls_cancelled", "ids": ids}),
        RealtimeEvent::Error(api) => json!({
            "type": "error", "provider": api.provider.name(), "status": api.status,
            "code": api.code, "message": api.message,
        }),
        RealtimeEvent::Passthrough(v) => json!({"type": "passthrough", "event": v}),
        RealtimeEvent::Bytes(b) => json!({"type": "bytes", "length": b.len()}),
        RealtimeEvent::Unknown(v) => json!({"type": "unknown", "event": v}),
        RealtimeEvent::Stale(v) => json!({"type": "stale", "event": v}),
        RealtimeEvent::Closed { code, reason } => {
            json!({"type": "closed", "code": code, "reason": reason})
        }
        _ => json!({"type": "other"}),
    }
}

/// Reads a realtime (WebSocket) session through its dialect's codec. `feed(bytes)` takes a
/// recorded session's JSON lines in any chunking (`{"dir": "server", "event": {...}}`, ...);
/// `feed_event(dict)` a server event as it came off a socket, `observe_client(dict)` one the
/// client sent. Each returns the events it produced; `finish()` the session summary with its
/// `responses` (what `replay_session` returns).
#[pyclass(module = "toolwire._toolwire")]
pub struct RealtimeReader {
    codec: RealtimeCodec,
    pending: Vec<u8>,
    line: usize,
    events: Vec<RealtimeEvent>,
    ended_mid_response: bool,
}

#[pymethods]
impl RealtimeReader {
    #[new]
    fn new(provider: &str) -> PyResult<Self> {
        Ok(Self {
            codec: RealtimeCodec::new(realtime_of(provider)?),
            pending: Vec::new(),
            line: 0,
            events: Vec::new(),
            ended_mid_response: false,
        })
    }

    /// Recorded JSON lines, in any chunking; returns the events of the lines completed.
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = bytes_of(data)?;
        self.pending.extend_from_slice(&bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            self.line += 1;
            self.apply_line(&line, &mut out)?;
        }
        to_py(
            py,
            &Value::Array(out.iter().map(realtime_event_json).collect()),
        )
    }

    /// One server event (a JSON object off the socket).
    fn feed_event<'py>(
        &mut self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = from_py(event, "event")?;
        let mut out = Vec::new();
        self.codec.feed(v, &mut out);
        self.events.extend(out.iter().cloned());
        to_py(
            py,
            &Value::Array(out.iter().map(realtime_event_json).collect()),
        )
    }

    /// One event the client sent (a result, a cancel).
    fn observe_client(&mut self, event: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = from_py(event, "event")?;
        self.codec.observe_client(&v);
        Ok(())
    }

    /// The session ended: its summary, with every response.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        if !self.pending.iter().all(u8::is_ascii_whitespace) {
            let line = std::mem::take(&mut self.pending);
            self.line += 1;
            self.apply_line(&line, &mut out)?;
        }
        self.pending.clear();
        let lines: Vec<rt::SessionLine> = Vec::new();
        let mut replay = rt::replay_into(&mut self.codec, &lines);
        replay.ended_mid_response |= self.ended_mid_response;
        // `out` (the last line's events) is in `self.events` already.
        drop(out);
        let mut all = std::mem::take(&mut self.events);
        all.append(&mut replay.events);
        let mut summary = rebuild(all, replay);
        summary.ended_mid_response |= self.ended_mid_response;
        to_py(py, &session_summary(&summary))
    }
}

/// A replay summary over every event the reader saw (`replay_into` saw only the close).
fn rebuild(events: Vec<RealtimeEvent>, mut tail: rt::SessionReplay) -> rt::SessionReplay {
    tail.responses.clear();
    tail.errors.clear();
    tail.cancelled.clear();
    for e in &events {
        match e {
            RealtimeEvent::ResponseDone { result, .. } => tail.responses.push(result.clone()),
            RealtimeEvent::Error(api) => tail.errors.push(api.clone()),
            RealtimeEvent::CallsCancelled { ids } => tail.cancelled.extend(ids.iter().cloned()),
            _ => {}
        }
    }
    tail.events = events;
    tail
}

impl RealtimeReader {
    fn apply_line(&mut self, line: &[u8], out: &mut Vec<RealtimeEvent>) -> PyResult<()> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let parsed = rt::parse_session(line).map_err(|e| match e {
            Error::Input { path, message } => {
                let path = path.replacen("line 1", &format!("line {}", self.line), 1);
                errors::input(&path, message)
            }
            other => err(other),
        })?;
        let before = out.len();
        for l in &parsed {
            match (l.dir, &l.event, &l.bytes, &l.close) {
                (rt::Direction::Server, Some(event), _, _) => self.codec.feed(event.clone(), out),
                (rt::Direction::Server, _, Some(b), _) => {
                    let frame = base64_decode(b).unwrap_or_default();
                    self.codec.feed_frame(&frame, out);
                }
                (_, _, _, Some(close)) => {
                    self.ended_mid_response |= self.codec.is_responding();
                    self.codec.close(close.code, &close.reason, out);
                }
                (rt::Direction::Client, Some(event), _, _) => self.codec.observe_client(event),
                _ => {}
            }
        }
        self.events.extend(out[before..].iter().cloned());
        Ok(())
    }
}

/// Standard base64 (padding optional); `None` on a byte outside the alphabet. `parse_session`
/// checked the line already.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// An incremental JSON reader for a tool call's argument text as it streams: `feed(text)`
/// returns structure events (a value started at a JSON pointer, string text appended, a scalar
/// completed, a container closed, where the text stopped being JSON).
#[pyclass(module = "toolwire._toolwire")]
pub struct PartialJson {
    inner: RustPartialJson,
}

fn partial_events<'py>(py: Python<'py>, events: &[PartialEvent]) -> PyResult<Bound<'py, PyAny>> {
    ser_to_py(py, &events)
}

#[pymethods]
impl PartialJson {
    #[new]
    #[pyo3(signature = (max_depth = None))]
    fn new(max_depth: Option<usize>) -> Self {
        Self {
            inner: match max_depth {
                Some(d) => RustPartialJson::with_max_depth(d),
                None => RustPartialJson::new(),
            },
        }
    }

    fn feed<'py>(&mut self, py: Python<'py>, fragment: &str) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        self.inner.feed(fragment, &mut out);
        partial_events(py, &out)
    }

    /// The text ended; returns `(complete, events)`.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<(bool, Bound<'py, PyAny>)> {
        let mut out = Vec::new();
        let complete = self.inner.finish(&mut out);
        Ok((complete, partial_events(py, &out)?))
    }

    #[getter]
    fn offset(&self) -> usize {
        self.inner.offset()
    }

    #[getter]
    fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }

    /// Where and why the text stopped being JSON, if it did.
    #[getter]
    fn invalid(&self) -> Option<(usize, String)> {
        self.inner.invalid().map(|(o, r)| (o, r.to_owned()))
    }
}

/// Follows every tool call of a stream: `observe(event)` (a stream event dict) returns argument
/// structure events tagged `tool_call_arguments`, as `toolwire replay --events --partial-json`.
#[pyclass(module = "toolwire._toolwire")]
pub struct ArgumentTracker {
    inner: CallArguments,
}

#[pymethods]
impl ArgumentTracker {
    #[new]
    fn new() -> Self {
        Self {
            inner: CallArguments::new(),
        }
    }

    fn observe<'py>(
        &mut self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let e: StreamEvent = conv::extract(event, "event")?;
        let mut out = Vec::new();
        self.inner.observe(&e, &mut out);
        to_py(py, &Value::Array(out.iter().map(argument_line).collect()))
    }
}

/// Registers the core on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(providers, m)?)?;
    m.add_function(wrap_pyfunction!(realtime_providers, m)?)?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(encode_request, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(replay_events, m)?)?;
    m.add_function(wrap_pyfunction!(replay_session, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(parse_text_calls, m)?)?;
    m.add_class::<StreamReader>()?;
    m.add_class::<RealtimeReader>()?;
    m.add_class::<PartialJson>()?;
    m.add_class::<ArgumentTracker>()?;
    m.add_class::<TextCallReader>()?;
    let _ = PyDict::new(m.py());
    Ok(())
}
