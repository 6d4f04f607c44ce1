//! A wire-faithful mock provider: a loopback HTTP server that answers in a chosen provider's
//! real wire format, from scripted canonical replies.
//!
//! Each [`MockReply`] is encoded by the provider itself ([`Respond::encode_response`],
//! [`Respond::encode_error`]) as its JSON body or its SSE stream, and can be delivered in small
//! pieces, slowly, cut off or stalled, so a client (ours or a user's agent) meets the failures
//! real services produce. The server binds `127.0.0.1` on a free port, records every request it
//! receives, and stops when dropped.
//!
//! Every response carries token usage, written where the provider's wire puts it (OpenAI's
//! usage-only last chunk, Anthropic's `message_start`/`message_delta`, Gemini's
//! `usageMetadata`, Ollama's `prompt_eval_count`/`eval_count`, ...). A scripted response
//! without usage gets an estimate ([`estimate_usage`]: about four characters a token), so
//! traces and cost accounting see numbers; [`MockReply::without_usage`] sends none.
//!
//! A request is answered as a stream when it sends `Accept: text/event-stream` (the client
//! always does for streams) or its JSON body has `"stream": true`; [`MockReply::stream`]
//! overrides that. When the script runs out the server answers HTTP 400 with the code
//! `mock_script_exhausted`, unless [`Script::repeat_last`] was set.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use toolwire::mock::{MockReply, MockServer, Script};
//! use toolwire::{ChatRequest, Client, Message, ProviderKind};
//!
//! let script = Script::new().then(MockReply::text("Hello from the mock."));
//! let server = MockServer::start(ProviderKind::OpenAi, script).await?;
//! let client = Client::builder(ProviderKind::OpenAi)
//!     .base_url(server.url())
//!     .build()?;
//! let req = ChatRequest::new("any-model", vec![Message::user("Hi")]);
//! let response = client.chat(&req).await?;
//! assert_eq!(response.text.as_deref(), Some("Hello from the mock."));
//! assert_eq!(server.requests()[0].path, "/chat/completions");
//! # Ok(()) }
//! ```

mod hosted;
mod http;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::error::{ApiError, Error, Result};
use crate::provider::{Framing, ProviderKind};
use crate::replay::is_json_body;
use crate::types::{ChatResponse, FinishReason, ToolCall, Usage};
use http::{Delivery, Response};

/// The writer contract each provider implements in its own folder; re-exported here, where
/// it is used.
pub use crate::provider::Respond;

/// The provider for `kind`, able to answer as the mock server (read from
/// [`crate::providers::BUILTINS`]).
pub use crate::providers::responder_for;

pub use hosted::hosted_call;

/// One scripted answer.
// A response is the common reply and is built once per scripted turn: boxing it would cost
// every script a `Box::new` for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MockReply {
    /// A successful turn, encoded as the provider's body or stream.
    Response(ChatResponse),
    /// An error, encoded as the provider's error body (an error event inside a 200 stream when
    /// it has no status and the request streams). `retry_after` is sent as `Retry-After` (whole
    /// seconds, rounded up) plus `retry-after-ms`.
    Error(ApiError),
    /// Exact bytes with a status and content type, for what no encoder produces: garbage,
    /// invalid UTF-8, a recorded fixture body.
    Raw {
        /// HTTP status.
        status: u16,
        /// `Content-Type` header.
        content_type: String,
        /// The body, sent as is.
        body: Vec<u8>,
    },
    /// Read the request, then never answer; the connection is held until the client leaves.
    Hang,
    /// Read the request, then close the connection without answering.
    Close,
    /// Another reply delivered with a [`Shape`]. Nested shapes merge: the outer one's settings
    /// win where it has them, headers of both are sent.
    Shaped(Box<MockReply>, Shape),
}

/// How a reply is delivered: pacing, cuts, and header changes.
///
/// Non-exhaustive: start from [`Shape::default`] and the setters of [`MockReply`] that shape it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Shape {
    /// Bytes per write (at least 1); by default one write per SSE event for streams, the whole
    /// body otherwise.
    pub chunk_size: Option<usize>,
    /// Pause between writes.
    pub delay: Duration,
    /// Pause before the response head (ends early if the client hangs up).
    pub head_delay: Duration,
    /// Close the connection after this many body bytes, without the body's end.
    pub drop_after: Option<usize>,
    /// Stop sending after this many body bytes and hold the connection until the client leaves.
    pub stall_after: Option<usize>,
    /// Replaces the status.
    pub status: Option<u16>,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Answer as a stream (`true`) or a body (`false`) whatever the request asked.
    pub stream: Option<bool>,
    /// Fill in usage a scripted response lacks (`None`: yes, estimated as
    /// [`estimate_usage`] does); `Some(false)` sends the response without usage.
    pub usage: Option<bool>,
}

impl MockReply {
    /// A turn that answers with text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Response(ChatResponse {
            text: Some(text.into()),
            finish_reason: FinishReason::Stop,
            ..ChatResponse::default()
        })
    }

    /// A turn that calls tools (`finish_reason` settled the way decoders settle it).
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        let mut response = ChatResponse {
            tool_calls: calls.into_iter().collect(),
            finish_reason: FinishReason::Stop,
            ..ChatResponse::default()
        };
        response.settle_finish_reason();
        Self::Response(response)
    }

    /// Exact bytes as a `text/event-stream` 200.
    pub fn raw_sse(body: impl Into<Vec<u8>>) -> Self {
        Self::Raw {
            status: 200,
            content_type: "text/event-stream".into(),
            body: body.into(),
        }
    }

    fn shape_mut(self, f: impl FnOnce(&mut Shape)) -> Self {
        let (reply, mut shape) = match self {
            Self::Shaped(reply, shape) => (reply, shape),
            other => (Box::new(other), Shape::default()),
        };
        f(&mut shape);
        Self::Shaped(reply, shape)
    }

    /// Writes the body `n` bytes at a time (down to one byte).
    pub fn chunk_size(self, n: usize) -> Self {
        self.shape_mut(|s| s.chunk_size = Some(n.max(1)))
    }

    /// Pauses between writes.
    pub fn delay(self, d: Duration) -> Self {
        self.shape_mut(|s| s.delay = d)
    }

    /// Pauses before the response head.
    pub fn head_delay(self, d: Duration) -> Self {
        self.shape_mut(|s| s.head_delay = d)
    }

    /// Drops the connection after `n` body bytes.
    pub fn drop_after(self, n: usize) -> Self {
        self.shape_mut(|s| s.drop_after = Some(n))
    }

    /// Stalls after `n` body bytes until the client gives up.
    pub fn stall_after(self, n: usize) -> Self {
        self.shape_mut(|s| s.stall_after = Some(n))
    }

    /// Replaces the status.
    pub fn status(self, status: u16) -> Self {
        self.shape_mut(|s| s.status = Some(status))
    }

    /// Adds a response header (`Retry-After`, say).
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        self.shape_mut(|s| s.headers.push((name, value)))
    }

    /// Sends a response that has no usage without any (by default the mock estimates it), to
    /// test a client's handling of `usage: null`.
    pub fn without_usage(self) -> Self {
        self.shape_mut(|s| s.usage = Some(false))
    }

    /// Answers as a stream or a body whatever the request asked.
    pub fn stream(self, stream: bool) -> Self {
        self.shape_mut(|s| s.stream = Some(stream))
    }

    /// The reply under its shapes, and the shapes merged.
    fn unshape(&self) -> (&MockReply, Shape) {
        match self {
            Self::Shaped(reply, outer) => {
                let (base, inner) = reply.unshape();
                (base, outer.over(inner))
            }
            other => (other, Shape::default()),
        }
    }
}

impl Shape {
    /// This shape laid over `inner`: settings given here win, the others come from `inner`;
    /// headers of both are sent, `inner`'s first.
    fn over(&self, inner: Shape) -> Shape {
        let or_inner = |outer: Duration, inner: Duration| {
            if outer.is_zero() { inner } else { outer }
        };
        let mut headers = inner.headers;
        headers.extend(self.headers.iter().cloned());
        Shape {
            chunk_size: self.chunk_size.or(inner.chunk_size),
            delay: or_inner(self.delay, inner.delay),
            head_delay: or_inner(self.head_delay, inner.head_delay),
            drop_after: self.drop_after.or(inner.drop_after),
            stall_after: self.stall_after.or(inner.stall_after),
            status: self.status.or(inner.status),
            headers,
            stream: self.stream.or(inner.stream),
            usage: self.usage.or(inner.usage),
        }
    }
}

impl From<ChatResponse> for MockReply {
    fn from(r: ChatResponse) -> Self {
        Self::Response(r)
    }
}

impl From<ApiError> for MockReply {
    fn from(e: ApiError) -> Self {
        Self::Error(e)
    }
}

/// The replies, served in order, one per request.
#[derive(Debug, Clone, Default)]
pub struct Script {
    replies: VecDeque<MockReply>,
    repeat_last: bool,
    responder: Option<Responder>,
}

/// A reply computed from the request (see [`Script::respond_with`]).
#[derive(Clone)]
struct Responder(Arc<dyn Fn(&RecordedRequest) -> MockReply + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a reply.
    pub fn then(mut self, reply: impl Into<MockReply>) -> Self {
        self.replies.push_back(reply.into());
        self
    }

    /// Serves the last reply again for every request after the script ran out.
    pub fn repeat_last(mut self) -> Self {
        self.repeat_last = true;
        self
    }

    /// Answers every request the scripted replies do not cover with `f(request)`: a model
    /// that reacts to what it was sent (the tool server's offline model reads the tools and
    /// results in the wire body). Takes precedence over [`Script::repeat_last`] once the
    /// replies ran out.
    pub fn respond_with<F>(mut self, f: F) -> Self
    where
        F: Fn(&RecordedRequest) -> MockReply + Send + Sync + 'static,
    {
        self.responder = Some(Responder(Arc::new(f)));
        self
    }

    /// A script replaying recorded fixture cases (the folders [`crate::client::ClientBuilder::record_to`]
    /// writes, or any in the layout of `docs/fixtures.md`): each case folder's
    /// `response.sse`, `response.ndjson` or `response.json` is served as exact bytes
    /// ([`MockReply::Raw`]) with the `status` its `meta.toml` gives (200 when none), one case
    /// per request. Case folders are found below `dir` (itself a case, a provider's folder, or
    /// the recording root with one folder per provider, at most [`Script::MAX_RECORDING_DEPTH`]
    /// levels down) and served in the order of their paths; the recorder pads its case numbers
    /// so that order is the order they were recorded in.
    ///
    /// Fails with [`Error::Input`] naming the path when a folder or file cannot be read, or
    /// when no case is found.
    pub fn from_recordings(dir: impl AsRef<std::path::Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let mut cases = Vec::new();
        find_cases(dir, Self::MAX_RECORDING_DEPTH, &mut cases)?;
        if cases.is_empty() {
            return Err(Error::input(
                dir.display().to_string(),
                "no recorded case here (a folder with response.sse, response.ndjson or \
                 response.json)",
            ));
        }
        cases.sort();
        let mut script = Self::new();
        for (case, file, content_type) in cases {
            let path = case.join(file);
            let body = std::fs::read(&path).map_err(|e| read_error(&path, &e))?;
            let meta = case.join("meta.toml");
            let status = match std::fs::read_to_string(&meta) {
                Ok(text) => meta_status(&text).unwrap_or(200),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => 200,
                Err(e) => return Err(read_error(&meta, &e)),
            };
            script = script.then(MockReply::Raw {
                status,
                content_type: content_type.to_owned(),
                body,
            });
        }
        Ok(script)
    }

    /// How deep below its folder [`Script::from_recordings`] looks for cases.
    pub const MAX_RECORDING_DEPTH: usize = 3;

    /// Replies not served yet.
    pub fn len(&self) -> usize {
        self.replies.len()
    }

    /// Whether every reply was served.
    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }

    fn next(&mut self) -> Option<MockReply> {
        if self.replies.len() == 1 && self.repeat_last && self.responder.is_none() {
            return self.replies.front().cloned();
        }
        self.replies.pop_front()
    }
}

impl FromIterator<MockReply> for Script {
    fn from_iter<I: IntoIterator<Item = MockReply>>(iter: I) -> Self {
        Self {
            replies: iter.into_iter().collect(),
            repeat_last: false,
            responder: None,
        }
    }
}

/// The response files of a case folder, with the content type each is served as.
const RESPONSE_FILES: [(&str, &str); 4] = [
    ("response.sse", "text/event-stream"),
    ("response.ndjson", "application/x-ndjson"),
    ("response.eventstream", "application/vnd.amazon.eventstream"),
    ("response.json", "application/json"),
];

/// A case folder found by [`Script::from_recordings`]: its path, response file, content type.
type Case = (std::path::PathBuf, &'static str, &'static str);

/// Collects the case folders at or below `dir`, `depth` levels down at most.
fn find_cases(dir: &std::path::Path, depth: usize, out: &mut Vec<Case>) -> Result<()> {
    if let Some((file, content_type)) = RESPONSE_FILES
        .iter()
        .find(|(file, _)| dir.join(file).is_file())
    {
        out.push((dir.to_path_buf(), file, content_type));
        return Ok(());
    }
    if depth == 0 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| read_error(dir, &e))?;
    for entry in entries {
        let path = entry.map_err(|e| read_error(dir, &e))?.path();
        if path.is_dir() {
            find_cases(&path, depth - 1, out)?;
        }
    }
    Ok(())
}

/// The `status = N` line of a case's `meta.toml` (the recorder writes it on a line of its own).
fn meta_status(meta: &str) -> Option<u16> {
    meta.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("status")?.trim_start();
        rest.strip_prefix('=')?.trim().parse().ok()
    })
}

fn read_error(path: &std::path::Path, e: &std::io::Error) -> Error {
    Error::input(path.display().to_string(), format!("cannot read: {e}"))
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method (`POST`).
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased, in arrival order (auth included: it is the caller's own).
    pub headers: Vec<(String, String)>,
    /// The body as JSON (a string holding the text when it is not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// A header's value by (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    provider: Box<dyn Respond>,
    script: Mutex<Script>,
    requests: Mutex<Vec<RecordedRequest>>,
}

/// The running mock server. Dropping it stops it and closes every connection.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("provider", &self.shared.provider.info().kind)
            .finish_non_exhaustive()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server speaking `kind`'s wire. Fails with [`Error::Unsupported`] when that
    /// provider cannot encode responses yet.
    pub async fn start(kind: ProviderKind, script: Script) -> Result<MockServer> {
        Self::start_with(responder_for(kind)?, script).await
    }

    /// Starts a server speaking any provider's wire.
    pub async fn start_with(provider: Box<dyn Respond>, script: Script) -> Result<MockServer> {
        for reply in &script.replies {
            if let (MockReply::Response(r), _) = reply.unshape() {
                provider.encode_response(r, false)?;
                provider.encode_response(r, true)?;
            }
        }
        let kind = provider.info().kind;
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| transport(kind, "cannot bind 127.0.0.1", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| transport(kind, "cannot read the bound address", e))?;
        let shared = Arc::new(Shared {
            provider,
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(MockServer { addr, shared, task })
    }

    /// The base URL, `http://127.0.0.1:<port>`; give it to [`crate::client::ClientBuilder::base_url`].
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Replies not served yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn transport(provider: ProviderKind, what: &str, e: std::io::Error) -> Error {
    Error::Transport {
        provider,
        message: format!("mock server: {what}: {e}"),
        connect: false,
        source: Some(Box::new(e)),
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Dropped (aborting every connection) when the server is dropped and this task aborted.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((sock, _)) = accepted {
                    connections.spawn(serve(sock, Arc::clone(&shared)));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve(mut sock: TcpStream, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let mut request = match http::read_request(&mut sock).await {
        Ok(r) => r,
        Err(message) => {
            let response = Response {
                status: 400,
                headers: vec![("content-type".into(), "text/plain".into())],
                body: format!("mock server: {message}").into_bytes(),
                chunked: false,
            };
            http::write_response(&mut sock, response, &Delivery::default()).await;
            return;
        }
    };
    // The bytes go as soon as they are parsed: a large request is not held twice.
    let raw = std::mem::take(&mut request.body);
    let body: Value = serde_json::from_slice(&raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    drop(raw);
    let wants_stream = request
        .header("accept")
        .is_some_and(|a| a.contains("text/event-stream"))
        || body.get("stream") == Some(&Value::Bool(true))
        || shared.provider.streams_at(&request.path);
    let request_chars = match &body {
        Value::String(text) => text.chars().count(),
        json => json_chars(json),
    };
    let recorded = RecordedRequest {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body,
    };
    let (reply, responder) = {
        let mut script = lock(&shared.script);
        (script.next(), script.responder.clone())
    };
    let reply = reply.or_else(|| responder.map(|Responder(f)| f(&recorded)));
    let seq = {
        let mut requests = lock(&shared.requests);
        requests.push(recorded);
        requests.len()
    };
    let reply = reply.unwrap_or_else(|| {
        let kind = shared.provider.info().kind;
        let mut e = ApiError::new(
            kind,
            Some(400),
            format!("mock script exhausted: request {seq} has no scripted reply"),
        );
        e.code = Some("mock_script_exhausted".into());
        MockReply::Error(e)
    });
    let (base, shape) = reply.unshape();
    let estimated;
    let base = match base {
        MockReply::Response(r) if r.usage.is_none() && shape.usage != Some(false) => {
            let mut r = r.clone();
            r.usage = Some(estimate_usage(request_chars, &r));
            estimated = MockReply::Response(r);
            &estimated
        }
        other => other,
    };
    let stream = shape.stream.unwrap_or(wants_stream);
    if matches!(base, MockReply::Close) {
        return;
    }
    let Some(mut response) = render(shared.provider.as_ref(), base, stream) else {
        http::wait_for_close(&mut sock, None).await;
        return;
    };
    if let Some(status) = shape.status {
        response.status = status;
    }
    response.headers.extend(shape.headers.iter().cloned());
    let delivery = Delivery {
        chunk_size: shape.chunk_size,
        delay: shape.delay,
        head_delay: shape.head_delay,
        drop_after: shape.drop_after,
        stall_after: shape.stall_after,
    };
    http::write_response(&mut sock, response, &delivery).await;
}

/// The characters of `json` written compactly, counted without writing it out (a large request
/// is not copied to be measured).
fn json_chars(json: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            // Every character has one first byte: count the bytes that are not continuations.
            self.0 += buf.iter().filter(|b| (**b & 0xC0) != 0x80).count();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, json);
    count.0
}

/// The usage the mock reports for a response scripted without any: a token per four
/// characters, rounded up (at least one), of the request body as received (`input_tokens`) and
/// of the answer's text, reasoning, call names and argument text (`output_tokens`); the
/// reasoning's share is `reasoning_tokens` when there is reasoning. Deterministic, so tests can
/// assert it.
pub fn estimate_usage(request_chars: usize, response: &ChatResponse) -> Usage {
    fn tokens(chars: usize) -> u64 {
        u64::try_from(chars.div_ceil(4).max(1)).unwrap_or(u64::MAX)
    }
    let chars = |s: &Option<String>| s.as_deref().map_or(0, |s| s.chars().count());
    let reasoning = chars(&response.reasoning);
    let calls: usize = response
        .tool_calls
        .iter()
        .map(|c| c.name.chars().count() + c.raw_arguments.chars().count())
        .sum();
    let output = chars(&response.text) + reasoning + calls;
    Usage {
        input_tokens: tokens(request_chars),
        output_tokens: tokens(output),
        reasoning_tokens: (reasoning > 0).then(|| tokens(reasoning)),
        ..Default::default()
    }
}

/// The HTTP response for a reply; `None` for [`MockReply::Hang`] and [`MockReply::Close`].
fn render(provider: &dyn Respond, reply: &MockReply, stream: bool) -> Option<Response> {
    let (status, body, mut headers) = match reply {
        MockReply::Response(r) => match provider.encode_response(r, stream) {
            Ok(body) => (200, body, Vec::new()),
            Err(e) => {
                return Some(Response {
                    status: 500,
                    headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
                    body: format!("mock server: {e}").into_bytes(),
                    chunked: false,
                });
            }
        },
        MockReply::Error(e) => {
            let (status, body) = provider.encode_error(e, stream);
            let mut headers = Vec::new();
            if let Some(wait) = e.retry_after {
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                headers.push(("retry-after".to_owned(), secs.to_string()));
                headers.push(("retry-after-ms".to_owned(), wait.as_millis().to_string()));
            }
            (status, body, headers)
        }
        MockReply::Raw {
            status,
            content_type,
            body,
        } => {
            let headers = vec![("content-type".to_owned(), content_type.clone())];
            return Some(Response {
                status: *status,
                chunked: content_type.contains("event-stream")
                    || content_type.contains("eventstream"),
                headers,
                body: body.clone(),
            });
        }
        MockReply::Hang | MockReply::Close => return None,
        MockReply::Shaped(inner, _) => return render(provider, inner, stream),
    };
    // Whatever the status: a provider that frames the errors of a stream (Qwen's 4xx bodies,
    // DashScope's 200 error events) sends them as the stream they are.
    let sse = stream && !is_json_body(&body);
    // A newline-delimited JSON stream starts like a JSON body; its framing tells them apart.
    let ndjson = stream && status == 200 && provider.framing() == Framing::Ndjson;
    // Binary event-stream frames (Bedrock) are not text either.
    let frames = stream && status == 200 && provider.framing() == Framing::EventStream;
    let content_type = if ndjson {
        "application/x-ndjson"
    } else if frames && !is_json_body(&body) {
        "application/vnd.amazon.eventstream"
    } else if sse {
        "text/event-stream"
    } else if is_json_body(&body) {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    headers.insert(0, ("content-type".to_owned(), content_type.to_owned()));
    Some(Response {
        status,
        headers,
        body,
        chunked: sse || ndjson,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content_type(r: &Response) -> &str {
        r.headers
            .iter()
            .find(|(n, _)| n == "content-type")
            .map_or("", |(_, v)| v.as_str())
    }

    #[test]
    fn framed_stream_errors_are_served_as_event_streams() {
        let qwen = crate::providers::qwen::responder();
        let mut e = ApiError::new(ProviderKind::Qwen, Some(400), "bad request");
        e.code = Some("invalid_parameter_error".into());
        let reply = MockReply::Error(e);
        let streamed = render(&qwen, &reply, true).unwrap();
        assert_eq!(streamed.status, 400);
        assert_eq!(content_type(&streamed), "text/event-stream");
        assert!(streamed.chunked);
        let whole = render(&qwen, &reply, false).unwrap();
        assert_eq!(content_type(&whole), "application/json");
        assert!(!whole.chunked);

        let openai = crate::providers::openai::OpenAiResponder::default();
        let mut e = ApiError::new(ProviderKind::OpenAi, Some(500), "oops");
        let json = render(&openai, &MockReply::Error(e.clone()), true).unwrap();
        assert_eq!(content_type(&json), "application/json");
        e.status = None;
        let event = render(&openai, &MockReply::Error(e), true).unwrap();
        assert_eq!(
            (event.status, content_type(&event)),
            (200, "text/event-stream")
        );
    }

    #[test]
    fn nested_shapes_merge_with_the_outer_winning() {
        let inner = MockReply::text("hi")
            .chunk_size(3)
            .drop_after(10)
            .status(503)
            .header("x-inner", "1");
        let outer = Shape {
            status: Some(429),
            delay: Duration::from_millis(5),
            headers: vec![("x-outer".into(), "2".into())],
            ..Shape::default()
        };
        let nested = MockReply::Shaped(Box::new(inner), outer);
        let (base, shape) = nested.unshape();
        assert!(matches!(base, MockReply::Response(_)));
        assert_eq!(shape.chunk_size, Some(3));
        assert_eq!(shape.drop_after, Some(10));
        assert_eq!(shape.status, Some(429));
        assert_eq!(shape.delay, Duration::from_millis(5));
        assert_eq!(
            shape.headers,
            [
                ("x-inner".to_owned(), "1".to_owned()),
                ("x-outer".into(), "2".into())
            ]
        );
        let (_, none) = MockReply::Hang.unshape();
        assert_eq!(none, Shape::default());
    }
}
