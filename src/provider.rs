//! The provider contract: pure translation between the canonical model and one wire format.
//!
//! A provider does no IO and is not async. `encode` turns a [`ChatRequest`] into the body and
//! path to send, `decode` turns a response body into a [`ChatResponse`], and `decoder` gives a
//! fresh [`StreamDecoder`] for one streamed turn. The client does the IO, so
//! a fixture test is just "encode and compare" or "feed payloads and compare".

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use crate::error::{ApiError, Error, Result};
use crate::text_calls::TextCalls;
pub use crate::types::ProviderKind;
use crate::types::{ChatRequest, ChatResponse, SchemaMode, StreamEvent, ToolDefinition, Usage};

/// How the API key goes on the request. Never in the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key in the named header (Gemini: `x-goog-api-key`).
    Header(&'static str),
    /// `Authorization: Bearer <key>` when a key is found; otherwise, with the `sigv4` feature
    /// and AWS credentials in the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// optional `AWS_SESSION_TOKEN`, `AWS_REGION`), AWS SigV4 signing for the named service
    /// (Bedrock: `"bedrock"`).
    BearerOrSigV4(&'static str),
}

/// Static facts about a provider, for the client and `toolwire providers`.
///
/// Non-exhaustive: build it with the `const` [`ProviderInfo::new`] and `with_*` setters, so a
/// custom provider's facts (or a variant of a built-in's, `OPENAI.info.with_auth(..)`) are still
/// a constant.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// Which provider.
    pub kind: ProviderKind,
    /// Default base URL; paths from `encode` are appended to it.
    pub base_url: &'static str,
    /// Environment variables holding the API key, first found wins.
    pub key_vars: &'static [&'static str],
    /// How the key is sent.
    pub auth: Auth,
    /// One line on what the provider can do, for `toolwire providers`.
    pub capabilities: &'static str,
}

impl ProviderInfo {
    /// Facts for `kind` at `base_url`: no key variables, bearer auth, no capabilities line.
    pub const fn new(kind: ProviderKind, base_url: &'static str) -> Self {
        Self {
            kind,
            base_url,
            key_vars: &[],
            auth: Auth::Bearer,
            capabilities: "",
        }
    }

    /// Sets which provider.
    pub const fn with_kind(mut self, kind: ProviderKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the default base URL.
    pub const fn with_base_url(mut self, base_url: &'static str) -> Self {
        self.base_url = base_url;
        self
    }

    /// Sets the environment variables holding the key.
    pub const fn with_key_vars(mut self, key_vars: &'static [&'static str]) -> Self {
        self.key_vars = key_vars;
        self
    }

    /// Sets how the key is sent.
    pub const fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Sets the capabilities line.
    pub const fn with_capabilities(mut self, capabilities: &'static str) -> Self {
        self.capabilities = capabilities;
        self
    }
}

/// A request ready to send: path (appended to the base URL), extra headers (never auth) and
/// the JSON body, plus the tool-name map needed to read the answer.
///
/// Non-exhaustive: a custom provider builds it with [`HttpRequest::new`] and the `with_*`
/// setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpRequest {
    /// Path and query, appended to the base URL.
    pub path: String,
    /// Headers other than auth and content type.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
    /// Wire names that differ from canonical ones; apply to what comes back.
    pub names: NameMap,
    /// Parts the wire could not carry where they stood, and where they went instead (empty
    /// when every part went where the request put it).
    pub downgrades: Vec<Downgrade>,
    /// Settings the wire cannot carry, left out because the request set `drop_unsupported`
    /// (empty when every setting went on the wire; neutral values are never listed).
    pub dropped: Vec<Dropped>,
    /// How the answer's text is read for tool calls the model writes as text (the request's
    /// `text_calls`, with its tools' schemas under their wire names); `None` leaves it alone.
    pub text_calls: Option<TextCalls>,
}

/// A content part a wire cannot carry where the request put it, sent elsewhere instead (an
/// image in a tool result on a wire whose tool messages take only text goes in a user message
/// right after the run of tool results). Never silent: the encoded request lists each one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Downgrade {
    /// Index, in the request's messages, of the message the part belongs to.
    pub message: usize,
    /// Index of the part in that message's content.
    pub part: usize,
    /// What was done, for people.
    pub note: String,
}

impl Downgrade {
    /// Part `part` of message `message` went elsewhere, as `note` says.
    pub fn new(message: usize, part: usize, note: impl Into<String>) -> Self {
        Self {
            message,
            part,
            note: note.into(),
        }
    }
}

/// A setting left out of a request because the wire cannot carry it and the request allowed
/// drops (`drop_unsupported`). Never silent: the encoded request lists each one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Dropped {
    /// The setting, as the canonical request names it (`top_k`, `reasoning.effort`).
    pub setting: String,
    /// Why it was left out, for people.
    pub note: String,
}

impl Dropped {
    /// `setting` was left out, as `note` says.
    pub fn new(setting: impl Into<String>, note: impl Into<String>) -> Self {
        Self {
            setting: setting.into(),
            note: note.into(),
        }
    }
}

impl HttpRequest {
    /// A request for `path` with this body, no extra headers and no renamed tools.
    pub fn new(path: impl Into<String>, body: Value) -> Self {
        Self {
            path: path.into(),
            headers: Vec::new(),
            body,
            names: NameMap::default(),
            downgrades: Vec::new(),
            dropped: Vec::new(),
            text_calls: None,
        }
    }

    /// Reads the answer's text for tool calls written as text, as `text_calls` says.
    pub fn with_text_calls(mut self, text_calls: TextCalls) -> Self {
        self.text_calls = Some(text_calls);
        self
    }

    /// Adds a header (never auth: the client adds the key).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Records a part sent elsewhere than where the request put it.
    pub fn with_downgrade(mut self, downgrade: Downgrade) -> Self {
        self.downgrades.push(downgrade);
        self
    }

    /// Records a setting left out.
    pub fn with_dropped(mut self, dropped: Dropped) -> Self {
        self.dropped.push(dropped);
        self
    }

    /// Sets the tool-name map to apply to the answer.
    pub fn with_names(mut self, names: NameMap) -> Self {
        self.names = names;
        self
    }
}

/// How a wire frames the payloads of a streamed answer; the turn reader splits bytes into
/// payloads by it before the provider's [`StreamDecoder`] sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Framing {
    /// Server-Sent Events: `data:` lines (with optional `event:` names), blank-line separated.
    #[default]
    Sse,
    /// Newline-delimited JSON: one payload per non-blank line, no event names.
    Ndjson,
    /// The binary `application/vnd.amazon.eventstream` framing of AWS streams (Bedrock
    /// ConverseStream): each event frame's payload goes to the decoder with its `:event-type`
    /// header as the event name; exception and error frames become [`Error::Api`]. A body that
    /// opens with `{` is a whole JSON answer instead.
    EventStream,
}

/// Pure translation between the canonical model and one wire format.
pub trait Provider: Send + Sync + fmt::Debug {
    /// Static facts: name, base URL, key variables, auth.
    fn info(&self) -> &ProviderInfo;

    /// Canonical request → wire request. `stream` selects the streaming form.
    fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest>;

    /// A complete (non-streamed) response body → canonical response. An error body gives
    /// [`Error::Api`].
    fn decode(&self, body: &[u8]) -> Result<ChatResponse>;

    /// A fresh decoder for one streamed turn.
    fn decoder(&self) -> Box<dyn StreamDecoder>;

    /// A fresh decoder for the stream that answers `request`, for providers whose stream form
    /// depends on what was asked (DashScope `incremental_output`). Defaults to
    /// [`Provider::decoder`].
    fn decoder_for(&self, request: &HttpRequest) -> Box<dyn StreamDecoder> {
        let _ = request;
        self.decoder()
    }

    /// A complete body that answers `request`, for providers whose reading depends on what was
    /// asked (tool calls written as text, [`HttpRequest::text_calls`]). Defaults to
    /// [`Provider::decode`].
    fn decode_for(&self, request: &HttpRequest, body: &[u8]) -> Result<ChatResponse> {
        let _ = request;
        self.decode(body)
    }

    /// How the payloads of a streamed answer are framed: Server-Sent Events for most wires,
    /// one JSON object per line for Ollama's native API.
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    /// An error body (any status) → [`ApiError`], the provider's code and message verbatim.
    fn decode_error(&self, status: Option<u16>, body: &[u8]) -> ApiError {
        generic_error(self.info().kind, status, body)
    }

    /// The `parameters` schema this provider will receive for `tool`.
    fn encode_parameters(&self, tool: &ToolDefinition, mode: Option<SchemaMode>) -> Result<Value> {
        let _ = mode;
        Ok(tool.parameters.clone())
    }

    /// The request asking the provider's own tokenizer how many input tokens `req` holds
    /// (messages, system text and tools), for a provider with such an endpoint (Gemini's
    /// `models/{model}:countTokens`); `None` (the default) for one without.
    fn encode_count_tokens(&self, req: &ChatRequest) -> Result<Option<HttpRequest>> {
        let _ = req;
        Ok(None)
    }

    /// The usage of a whole answer body, read without the rest of the turn: what a gateway
    /// counts against token limits on a route that passes the answer through untouched.
    /// `None` when the body holds none or cannot be read. The default decodes the whole body;
    /// a provider whose body keeps its usage in one field reads only that.
    fn decode_usage(&self, body: &[u8]) -> Option<Usage> {
        self.decode(body).ok().and_then(|r| r.usage)
    }

    /// The input-token count in a successful answer to [`Provider::encode_count_tokens`]'s
    /// request. The default refuses: a provider that encodes the request reads its answer.
    fn decode_count_tokens(&self, body: &[u8]) -> Result<u64> {
        let _ = body;
        Err(Error::Unsupported {
            provider: self.info().kind,
            feature: "a token-count endpoint".into(),
        })
    }
}

/// A provider that can also write answers in its own wire format: the inverse of decoding,
/// pure translation like the rest of the contract. The loopback mock server (`toolwire::mock`)
/// is its one user; each provider implements it in its own folder (`respond.rs`), compiled only
/// with the `respond` feature (which `mock` and `server` turn on), so a build without it carries
/// none of this code.
#[cfg(feature = "respond")]
pub trait Respond: Provider {
    /// The body this provider would send for `response`, as JSON or (when `stream`) as its
    /// stream, with arguments and text split into small fragments the way the real service
    /// streams them.
    fn encode_response(&self, response: &ChatResponse, stream: bool) -> Result<Vec<u8>>;

    /// The inverse of [`Provider::decode_error`]: the HTTP status and body this provider would
    /// send for `error` (framed as a stream when `stream` and the provider frames errors in
    /// streams).
    fn encode_error(&self, error: &ApiError, stream: bool) -> (u16, Vec<u8>) {
        let _ = stream;
        let body = serde_json::json!({"error": {"code": error.code, "message": error.message}});
        (error.status.unwrap_or(500), body.to_string().into_bytes())
    }

    /// Whether a request to `path` asks for a stream by its path alone (Bedrock's
    /// `…/converse-stream`), besides an `Accept: text/event-stream` header or `"stream": true`
    /// in the body, which the mock reads for every wire.
    fn streams_at(&self, path: &str) -> bool {
        let _ = path;
        false
    }
}

/// Writes a live canonical stream in a wire, event by event: the gateway's writer, and the
/// mock's where a wire has one (feature `respond`, like [`Respond`]). Bytes go out as soon as the events that make them are
/// known; nothing waits for the end of the turn except what the wire puts there.
#[cfg(feature = "respond")]
pub trait StreamWriter: Send {
    /// What opens the stream, before any event (a role chunk, `message_start`).
    fn start(&mut self, out: &mut Vec<u8>);

    /// Events that arrived together (decoded from one upstream read). A call opened and
    /// finished in one batch is written with what its completion knows (its final id and
    /// provider state).
    fn events(&mut self, events: &[StreamEvent], out: &mut Vec<u8>);

    /// The turn ended cleanly with `response`: finish reason, usage, the stream's end.
    fn finish(&mut self, response: &ChatResponse, out: &mut Vec<u8>);

    /// The turn failed after the stream began: the wire's error event, the stream's end.
    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>);
}

/// A client's request as a client wire's reader gives it (the gateway's side of a wire: each
/// client wire's `read`).
#[cfg(feature = "respond")]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClientRequest {
    /// The canonical request (its `model` is the client's model name, unresolved).
    pub request: ChatRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Whether the stream ends with usage (Chat Completions `stream_options.include_usage`;
    /// wires that always send usage say `true`).
    pub include_usage: bool,
    /// The tools the client declared inside a namespace (Responses `namespace` tools), each a
    /// canonical tool under its flat name; the answer writes their calls back namespaced.
    pub namespaced: Vec<NamespacedName>,
}

/// A tool a client declared inside a namespace (a Responses `namespace` tool's function): the
/// canonical tool's flat name (`{namespace}__{name}`, the namespace's trailing and the name's
/// leading underscores trimmed, as Codex flattens them), and the namespace and name the
/// client's wire writes its calls with.
#[cfg(feature = "respond")]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamespacedName {
    /// The canonical tool's name.
    pub flat: String,
    /// The namespace, as the client named it.
    pub namespace: String,
    /// The tool's name inside the namespace, as the client named it.
    pub name: String,
}

#[cfg(feature = "respond")]
impl NamespacedName {
    /// The flat name of tool `name` in `namespace`.
    pub fn new(namespace: &str, name: &str) -> Self {
        let flat = format!(
            "{}__{}",
            namespace.trim_end_matches('_'),
            name.trim_start_matches('_')
        );
        Self {
            flat,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

#[cfg(feature = "respond")]
impl ClientRequest {
    /// A request read from a client: `stream` as asked, usage at the end of a stream.
    pub fn new(request: ChatRequest, stream: bool) -> Self {
        Self {
            request,
            stream,
            include_usage: true,
            namespaced: Vec::new(),
        }
    }
}

/// Whom an answer written for a client is from: what a client wire's `writer` and `body` put
/// on it (the caller's id and clock: providers read none).
#[cfg(feature = "respond")]
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Answer<'a> {
    /// The answer's id.
    pub id: &'a str,
    /// The model name the client asked for.
    pub model: &'a str,
    /// Seconds since the epoch.
    pub created: u64,
    /// Whether a stream ends with usage ([`ClientRequest::include_usage`]).
    pub include_usage: bool,
    /// The key sealing the provider state packed into call ids and reasoning items for the
    /// client to echo ([`crate::seal`]); without one that state is not handed out.
    pub seal: Option<&'a crate::seal::Seal>,
    /// The tools the client declared inside a namespace ([`ClientRequest::namespaced`]):
    /// their calls are written back with the namespace and the name inside it.
    pub namespaced: &'a [NamespacedName],
}

#[cfg(feature = "respond")]
impl<'a> Answer<'a> {
    /// The same answer with its provider state sealed by `seal`.
    #[must_use]
    pub fn with_seal(mut self, seal: &'a crate::seal::Seal) -> Self {
        self.seal = Some(seal);
        self
    }

    /// An answer with this id for this model, made at `created`, a stream ending with usage.
    pub fn new(id: &'a str, model: &'a str, created: u64) -> Self {
        Self {
            id,
            model,
            created,
            include_usage: true,
            seal: None,
            namespaced: &[],
        }
    }

    /// The same answer writing calls of `namespaced` tools back namespaced.
    #[must_use]
    pub fn with_namespaced(mut self, namespaced: &'a [NamespacedName]) -> Self {
        self.namespaced = namespaced;
        self
    }
}

/// Decodes one streamed turn from SSE `data:` payloads.
pub trait StreamDecoder: Send {
    /// One SSE event's data (and its `event:` name, if any). Emits zero or more events.
    fn feed(&mut self, event: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) -> Result<()>;

    /// The stream ended. Finalizes pending calls and returns the whole response; a stream that
    /// ended without its terminal signal is [`Error::Stream`] carrying the partial response.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse>;
}

/// Reads the common error body shapes: `{"error": {"code", "message", "type"}}`,
/// `{"error": "text"}`, `{"code", "message"}`, `[{"error": ...}]`, or plain text.
pub(crate) fn generic_error(provider: ProviderKind, status: Option<u16>, body: &[u8]) -> ApiError {
    let text = String::from_utf8_lossy(body).into_owned();
    let mut err = ApiError::new(provider, status, "");
    let parsed: Option<Value> = serde_json::from_slice(body).ok().or_else(|| {
        // An error sent SSE-framed (`data: {"error": ...}`), as some providers do when the
        // request asked for a stream.
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
    });
    let root = match &parsed {
        Some(Value::Array(items)) => items.first(),
        other => other.as_ref(),
    };
    let obj = root.map(|r| r.get("error").unwrap_or(r));
    match obj {
        Some(Value::Object(map)) => {
            err.code = ["code", "status", "type"]
                .iter()
                .find_map(|k| map.get(*k).and_then(scalar_text));
            err.message = map
                .get("message")
                .and_then(scalar_text)
                .unwrap_or_else(|| summary(&text));
        }
        Some(Value::String(s)) => err.message = s.clone(),
        _ => err.message = summary(&text),
    }
    if err.message.is_empty() {
        err.message = match status {
            Some(s) => format!("HTTP {s} with an empty body"),
            None => "error with an empty body".to_owned(),
        };
    }
    err.body = text;
    err
}

/// One line for a body that is not a JSON error (an HTML 502 page, a proxy's text): its
/// `<title>` or first non-blank line, at most 200 characters. The whole body stays in
/// [`ApiError::body`].
fn summary(text: &str) -> String {
    let title = text
        .find("<title>")
        .and_then(|i| text[i + 7..].split("</title>").next());
    let line = title
        .into_iter()
        .chain(text.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// A string or number as text; other JSON is `None`.
pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Maps canonical tool names to names a provider accepts, and back.
///
/// Built from the request's tools and history at encode time; a name the provider accepts maps
/// to itself. Others are rewritten (invalid characters to `_`, a prefix when the first character
/// is not allowed, cut to 64) and made unique with a numeric suffix, so the map is reversible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameMap {
    to_wire: HashMap<String, String>,
    to_canonical: HashMap<String, String>,
}

impl NameMap {
    /// Maps every name in `names` (in order) that `valid` rejects.
    pub fn build<'a>(
        names: impl IntoIterator<Item = &'a str>,
        valid: impl Fn(&str) -> bool,
    ) -> Result<Self> {
        let names: Vec<&str> = names.into_iter().collect();
        let mut map = Self::default();
        let mut taken: std::collections::HashSet<String> = names
            .iter()
            .filter(|n| valid(n))
            .map(|n| (*n).to_owned())
            .collect();
        for name in names {
            if valid(name) || map.to_wire.contains_key(name) {
                continue;
            }
            let mut base: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if !valid(&base) {
                base.insert(0, '_');
            }
            base.truncate(64);
            let mut wire = base.clone();
            let mut n = 2;
            while taken.contains(&wire) || !valid(&wire) {
                // The base is ASCII, so cutting it at any byte keeps it whole; the suffix
                // always fits in 64.
                let suffix = format!("_{n}");
                let keep = base.len().min(64 - suffix.len());
                wire = format!("{}{suffix}", &base[..keep]);
                n += 1;
                if n > 10_000 {
                    return Err(Error::input(
                        "tools",
                        format!(
                            "cannot map tool name {name:?} to a unique name the provider accepts"
                        ),
                    ));
                }
            }
            taken.insert(wire.clone());
            map.to_canonical.insert(wire.clone(), name.to_owned());
            map.to_wire.insert(name.to_owned(), wire);
        }
        Ok(map)
    }

    /// Whether no name is rewritten.
    pub fn is_empty(&self) -> bool {
        self.to_wire.is_empty()
    }

    /// The wire name for a canonical name.
    pub fn wire<'a>(&'a self, canonical: &'a str) -> &'a str {
        self.to_wire
            .get(canonical)
            .map_or(canonical, String::as_str)
    }

    /// The canonical name for a wire name.
    pub fn canonical<'a>(&'a self, wire: &'a str) -> &'a str {
        self.to_canonical.get(wire).map_or(wire, String::as_str)
    }

    /// Restores canonical names in a decoded response.
    pub(crate) fn restore_response(&self, response: &mut ChatResponse) {
        if self.is_empty() {
            return;
        }
        for call in &mut response.tool_calls {
            self.restore(&mut call.name);
        }
    }

    /// Restores canonical names in the partial response an error carries.
    pub(crate) fn restore_error(&self, error: &mut Error) {
        if let Some(Some(p)) = error.partial_mut() {
            self.restore_response(p);
        }
    }

    /// Restores canonical names in a stream event.
    pub(crate) fn restore_event(&self, event: &mut StreamEvent) {
        if self.is_empty() {
            return;
        }
        match event {
            StreamEvent::ToolCallStarted { name, .. } => self.restore(name),
            StreamEvent::ToolCallComplete { call, .. } => self.restore(&mut call.name),
            _ => {}
        }
    }

    fn restore(&self, name: &mut String) {
        if let Some(c) = self.to_canonical.get(name.as_str()) {
            *name = c.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai_valid(n: &str) -> bool {
        !n.is_empty()
            && n.len() <= 64
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn name_map_is_reversible_and_unique() {
        let map =
            NameMap::build(["weather.get", "weather_get", "weather:get"], openai_valid).unwrap();
        let a = map.wire("weather.get").to_owned();
        let b = map.wire("weather:get").to_owned();
        assert_eq!(map.wire("weather_get"), "weather_get");
        assert_ne!(a, "weather_get");
        assert_ne!(a, b);
        assert!(openai_valid(&a) && openai_valid(&b));
        assert_eq!(map.canonical(&a), "weather.get");
        assert_eq!(map.canonical(&b), "weather:get");
    }

    #[test]
    fn long_names_stay_within_64_with_their_suffix() {
        let long = format!("{}.x", "a".repeat(70));
        let other = format!("{}:x", "a".repeat(70));
        let map = NameMap::build([long.as_str(), other.as_str()], openai_valid).unwrap();
        let (a, b) = (map.wire(&long), map.wire(&other));
        assert!(openai_valid(a) && openai_valid(b), "{a} {b}");
        assert_ne!(a, b);
        assert_eq!(map.canonical(b), other);
    }

    #[test]
    fn generic_error_shapes() {
        let e = generic_error(
            ProviderKind::OpenAi,
            Some(429),
            br#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(e.code.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(e.message, "slow down");
        let e = generic_error(
            ProviderKind::Glm,
            Some(400),
            br#"{"error":{"code":1113,"message":"x"}}"#,
        );
        assert_eq!(e.code.as_deref(), Some("1113"));
        let e = generic_error(ProviderKind::OpenAi, Some(502), b"Bad Gateway");
        assert_eq!(e.message, "Bad Gateway");
        let page = format!(
            "<html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
            "x".repeat(5000)
        );
        let e = generic_error(ProviderKind::OpenAi, Some(502), page.as_bytes());
        assert_eq!(e.message, "502 Bad Gateway");
        assert_eq!(e.body, page);
        let e = generic_error(
            ProviderKind::Qwen,
            Some(400),
            b"data: {\"error\":{\"code\":\"invalid_parameter_error\",\"message\":\"bad\"}}\n\n",
        );
        assert_eq!(e.code.as_deref(), Some("invalid_parameter_error"));
        let e = generic_error(ProviderKind::OpenAi, Some(500), b"");
        assert!(e.message.contains("500"));
    }
}
