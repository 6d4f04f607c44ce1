//! A realtime session over WebSocket (feature `realtime`): connect with the provider's auth,
//! configure, send text, results and any other client event, and receive
//! [`RealtimeEvent`]s as a [`Stream`].
//!
//! All translation is the [`RealtimeCodec`]'s; this module only moves frames. Every client
//! event goes out through one writer task, in order, so results and `response.create` are
//! never interleaved or sent twice. Audio frames pass through untouched both ways
//! ([`SessionHandle::send_event`] out, [`RealtimeEvent::Passthrough`] in). With
//! [`SessionBuilder::record`] every frame is appended to a JSON-lines file that
//! [`super::replay`] (and `toolwire replay`) reads back.

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::SinkExt;
use futures::stream::{SplitStream, Stream, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::codec::RealtimeCodec;
use super::model::{RealtimeEvent, RealtimeKind, SessionConfig, SessionStats};
use super::replay::{Direction, SessionLine};
use crate::error::{Error, Result, TimeoutPhase};
use crate::types::{ProviderKind, ToolChoice, ToolDefinition, ToolResult};

/// How long connecting (TCP, TLS and the WebSocket handshake) may take unless set.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Settings for a session ([`RealtimeSession::builder`], then [`SessionBuilder::connect`]).
#[derive(Clone)]
pub struct SessionBuilder {
    kind: RealtimeKind,
    config: SessionConfig,
    url: Option<String>,
    api_key: Option<String>,
    record: Option<PathBuf>,
    headers: Vec<(String, String)>,
    connect_timeout: Duration,
}

impl fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionBuilder")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("record", &self.record)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl SessionBuilder {
    /// Another endpoint (xAI's `wss://api.x.ai/v1/realtime`, a proxy, the loopback mock).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// The API key (default: the first of the dialect's key variables that is set; none for a
    /// server that needs none, like the mock).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Appends every frame, both ways, to this JSON-lines file (created or truncated).
    pub fn record(mut self, path: impl Into<PathBuf>) -> Self {
        self.record = Some(path.into());
        self
    }

    /// An extra handshake header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long connecting may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Connects and sends the configuration.
    pub async fn connect(self) -> Result<RealtimeSession> {
        RealtimeSession::open(self).await
    }
}

struct Inner {
    codec: RealtimeCodec,
    recorder: Option<BufWriter<File>>,
    record_error: Option<Error>,
}

impl Inner {
    fn record(&mut self, line: &SessionLine) {
        let Some(w) = self.recorder.as_mut() else {
            return;
        };
        let written = serde_json::to_string(line)
            .map_err(std::io::Error::other)
            .and_then(|text| {
                w.write_all(text.as_bytes())?;
                w.write_all(b"\n")?;
                w.flush()
            });
        if let Err(e) = written {
            // Best effort: the session goes on; the failure is kept for the caller.
            self.recorder = None;
            self.record_error = Some(Error::input("record", e.to_string()));
        }
    }
}

/// Sends client events into a session; cheap to clone, usable from any task.
#[derive(Clone)]
pub struct SessionHandle {
    kind: RealtimeKind,
    inner: Arc<Mutex<Inner>>,
    tx: mpsc::UnboundedSender<Message>,
}

impl fmt::Debug for SessionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHandle")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SessionHandle {
    /// Records and queues client events, in order.
    fn send_all(&self, inner: &mut Inner, events: Vec<Value>) -> Result<()> {
        for event in events {
            inner.record(&SessionLine::event(Direction::Client, event.clone()));
            self.tx
                .send(Message::text(event.to_string()))
                .map_err(|_| closed(self.kind))?;
        }
        Ok(())
    }

    fn with_codec(&self, f: impl FnOnce(&mut RealtimeCodec) -> Result<Vec<Value>>) -> Result<()> {
        let mut inner = lock(&self.inner);
        let events = f(&mut inner.codec)?;
        self.send_all(&mut inner, events)
    }

    /// Sends a user's text and asks for a response (once no response is active).
    pub fn send_text(&self, text: &str) -> Result<()> {
        self.with_codec(|c| c.user_text(text))
    }

    /// Sends results for calls handed out as [`RealtimeEvent::CallReady`]; they go out when
    /// their response is done and their siblings are answered. A result for a call that awaits
    /// none is an [`Error::Input`].
    pub fn send_results(&self, results: &[ToolResult]) -> Result<()> {
        self.with_codec(|c| c.results(results))
    }

    /// Cancels the active response.
    pub fn cancel_response(&self) -> Result<()> {
        self.with_codec(RealtimeCodec::cancel_response)
    }

    /// Replaces the tools mid-session.
    pub fn update_tools(
        &self,
        tools: Vec<ToolDefinition>,
        choice: Option<ToolChoice>,
    ) -> Result<()> {
        self.with_codec(|c| c.update_tools(tools, choice))
    }

    /// Sends any client event as is (audio: `input_audio_buffer.append`, Gemini's
    /// `realtimeInput`); the codec takes note of what it does (a cancel, a result).
    pub fn send_event(&self, event: Value) -> Result<()> {
        let mut inner = lock(&self.inner);
        inner.codec.observe_client(&event);
        inner.record(&SessionLine::event(Direction::Client, event.clone()));
        self.tx
            .send(Message::text(event.to_string()))
            .map_err(|_| closed(self.kind))
    }

    /// Sends one text frame exactly as given (nothing re-encoded: audio payloads, events
    /// toolwire has no name for); a JSON object is also taken note of, as by
    /// [`SessionHandle::send_event`].
    pub fn send_frame(&self, frame: String) -> Result<()> {
        let mut inner = lock(&self.inner);
        if let Ok(event @ Value::Object(_)) = serde_json::from_str::<Value>(&frame) {
            inner.codec.observe_client(&event);
        }
        inner.record(&SessionLine::frame(Direction::Client, frame.as_bytes()));
        self.tx
            .send(Message::text(frame))
            .map_err(|_| closed(self.kind))
    }

    /// What the session saw so far.
    pub fn stats(&self) -> SessionStats {
        lock(&self.inner).codec.stats()
    }

    /// The settings the configuration left out because the dialect cannot carry them and the
    /// configuration allowed drops (see [`RealtimeCodec::dropped`]).
    pub fn dropped(&self) -> Vec<crate::provider::Dropped> {
        lock(&self.inner).codec.dropped().to_vec()
    }

    /// The recording failure, if recording stopped.
    pub fn take_record_error(&self) -> Option<Error> {
        lock(&self.inner).record_error.take()
    }

    /// Asks the server to close the session (normal closure).
    pub fn close(&self) {
        let _ = self.tx.send(Message::Close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        })));
    }
}

/// A connected realtime session: a [`Stream`] of [`RealtimeEvent`]s, ending after
/// [`RealtimeEvent::Closed`] (or with a transport error).
pub struct RealtimeSession {
    handle: SessionHandle,
    stream: SplitStream<Socket>,
    pending: std::collections::VecDeque<RealtimeEvent>,
    failure: Option<Error>,
    done: bool,
    writer: JoinHandle<()>,
}

impl fmt::Debug for RealtimeSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealtimeSession")
            .field("kind", &self.handle.kind)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Drop for RealtimeSession {
    fn drop(&mut self) {
        self.writer.abort();
    }
}

fn closed(kind: RealtimeKind) -> Error {
    Error::Transport {
        provider: kind.provider(),
        message: "the realtime session is closed".into(),
        connect: false,
        source: None,
    }
}

fn transport(provider: ProviderKind, what: &str, e: tungstenite::Error, connect: bool) -> Error {
    Error::Transport {
        provider,
        message: format!("{what}: {e}"),
        connect,
        source: Some(Box::new(e)),
    }
}

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

/// The endpoint for `kind` at `base` (the model in the query where the dialect wants it).
pub(crate) fn endpoint(kind: RealtimeKind, base: Option<&str>, model: &str) -> String {
    let url = base.unwrap_or(kind.url()).to_owned();
    let in_query = kind.dialect().is_some_and(|d| d.model_in_query);
    if !in_query || model.is_empty() || url.contains("model=") {
        return url;
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}model={}", percent_encode(model))
}

/// TLS over rustls with ring and the system's root certificates. Without the `rustls` feature
/// tokio-tungstenite's own TLS (`native-tls`) is used, or none.
#[cfg(feature = "rustls")]
fn tls_connector(provider: ProviderKind) -> Result<tokio_tungstenite::Connector> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        return Err(Error::Transport {
            provider,
            message: "no trusted root certificates found on this system".into(),
            connect: true,
            source: None,
        });
    }
    let crypto = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(crypto)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Transport {
            provider,
            message: format!("TLS setup: {e}"),
            connect: true,
            source: Some(Box::new(e)),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_tungstenite::Connector::Rustls(Arc::new(config)))
}

impl RealtimeSession {
    /// Settings for a session of `kind` configured with `config`.
    pub fn builder(kind: RealtimeKind, config: SessionConfig) -> SessionBuilder {
        SessionBuilder {
            kind,
            config,
            url: None,
            api_key: None,
            record: None,
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    async fn open(b: SessionBuilder) -> Result<RealtimeSession> {
        let kind = b.kind;
        let provider = kind.provider();
        let mut codec = RealtimeCodec::new(kind);
        // Translation first: a configuration the dialect cannot express fails before any IO.
        let setup = codec.configure(&b.config)?;
        let url = endpoint(kind, b.url.as_deref(), &b.config.model);
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| Error::input("url", format!("{url}: {e}")))?;
        let key = b.api_key.clone().or_else(|| {
            kind.key_vars()
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|k| !k.trim().is_empty()))
        });
        let mut headers = b.headers.clone();
        if let Some(key) = key {
            match kind.dialect() {
                Some(_) => headers.push(("authorization".into(), format!("Bearer {key}"))),
                None => headers.push(("x-goog-api-key".into(), key)),
            }
        }
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::input("header", e.to_string()))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| Error::input("header", format!("invalid value for {name}")))?;
            value.set_sensitive(true);
            request.headers_mut().insert(name, value);
        }
        #[cfg(feature = "rustls")]
        let connector = if url.starts_with("wss:") {
            Some(tls_connector(provider)?)
        } else {
            None
        };
        #[cfg(all(not(feature = "rustls"), feature = "native-tls"))]
        let connector = None;
        #[cfg(any(feature = "rustls", feature = "native-tls"))]
        let connecting =
            tokio_tungstenite::connect_async_tls_with_config(request, None, true, connector);
        // Without a TLS feature only `ws:` URLs connect; `wss:` fails with a transport error.
        #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
        let connecting = tokio_tungstenite::connect_async_with_config(request, None, true);
        let (socket, _) = match tokio::time::timeout(b.connect_timeout, connecting).await {
            Err(_) => {
                return Err(Error::Timeout {
                    provider,
                    phase: TimeoutPhase::Connect,
                    limit: b.connect_timeout,
                    partial: None,
                });
            }
            Ok(Err(tungstenite::Error::Http(response))) => {
                let status = response.status().as_u16();
                let body = response.body().clone().unwrap_or_default();
                let api = crate::providers::provider_for(provider)
                    .map(|p| p.decode_error(Some(status), &body))
                    .unwrap_or_else(|_| {
                        crate::provider::generic_error(provider, Some(status), &body)
                    });
                return Err(api.into());
            }
            Ok(Err(e)) => return Err(transport(provider, "cannot connect", e, true)),
            Ok(Ok(pair)) => pair,
        };
        let recorder = match &b.record {
            Some(path) => Some(open_record(path)?),
            None => None,
        };
        let (mut sink, stream) = socket.split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
        let writer = tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let is_close = matches!(message, Message::Close(_));
                if sink.send(message).await.is_err() || is_close {
                    break;
                }
            }
        });
        let handle = SessionHandle {
            kind,
            inner: Arc::new(Mutex::new(Inner {
                codec,
                recorder,
                record_error: None,
            })),
            tx,
        };
        {
            let mut inner = lock(&handle.inner);
            handle.send_all(&mut inner, setup)?;
        }
        Ok(RealtimeSession {
            handle,
            stream,
            pending: std::collections::VecDeque::new(),
            failure: None,
            done: false,
            writer,
        })
    }

    /// A handle for sending from elsewhere (tool tasks).
    pub fn handle(&self) -> SessionHandle {
        self.handle.clone()
    }

    /// The dialect.
    pub fn kind(&self) -> RealtimeKind {
        self.handle.kind
    }

    /// Sends a user's text (see [`SessionHandle::send_text`]).
    pub fn send_text(&self, text: &str) -> Result<()> {
        self.handle.send_text(text)
    }

    /// Sends results (see [`SessionHandle::send_results`]).
    pub fn send_results(&self, results: &[ToolResult]) -> Result<()> {
        self.handle.send_results(results)
    }

    /// Sends any client event as is (see [`SessionHandle::send_event`]).
    pub fn send_event(&self, event: Value) -> Result<()> {
        self.handle.send_event(event)
    }

    /// What the session saw so far.
    pub fn stats(&self) -> SessionStats {
        self.handle.stats()
    }

    /// The settings the configuration left out (see [`SessionHandle::dropped`]).
    pub fn dropped(&self) -> Vec<crate::provider::Dropped> {
        self.handle.dropped()
    }

    /// Asks the server to close the session; the stream ends after [`RealtimeEvent::Closed`].
    pub fn close(&self) {
        self.handle.close();
    }

    /// One frame from the server: decoded, recorded, and whatever it made due sent.
    fn receive(&mut self, message: Message) {
        let mut inner = lock(&self.handle.inner);
        let mut out = Vec::new();
        match message {
            Message::Text(text) => {
                inner.record(&SessionLine::frame(Direction::Server, text.as_bytes()));
                inner.codec.feed_frame(text.as_bytes(), &mut out);
            }
            Message::Binary(bytes) => {
                inner.record(&SessionLine::frame(Direction::Server, &bytes));
                inner.codec.feed_frame(&bytes, &mut out);
            }
            Message::Close(frame) => {
                let (code, reason) = match &frame {
                    Some(f) => (Some(u16::from(f.code)), f.reason.as_str().to_owned()),
                    None => (None, String::new()),
                };
                inner.record(&SessionLine::close(Direction::Server, code, &reason));
                inner.codec.close(code, &reason, &mut out);
                self.done = true;
            }
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
        let due = inner.codec.take_outgoing();
        if let Err(e) = self.handle.send_all(&mut inner, due)
            && !self.done
        {
            self.failure = Some(e);
        }
        self.pending.extend(out);
    }

    /// The socket ended without a close frame (or failed).
    fn lost(&mut self, error: Option<tungstenite::Error>) {
        let mut inner = lock(&self.handle.inner);
        let mut out = Vec::new();
        let reason = match &error {
            Some(e) => format!("the connection failed: {e}"),
            None => "the connection ended without a close frame".to_owned(),
        };
        inner.record(&SessionLine::close(Direction::Server, None, &reason));
        inner.codec.close(None, &reason, &mut out);
        self.pending.extend(out);
        self.done = true;
        if let Some(e) = error {
            self.failure = Some(transport(
                self.handle.kind.provider(),
                "realtime session",
                e,
                false,
            ));
        }
    }
}

fn open_record(path: &Path) -> Result<BufWriter<File>> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| Error::input(path.display().to_string(), e.to_string()))
}

impl Stream for RealtimeSession {
    type Item = Result<RealtimeEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.pending.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(e) = this.failure.take() {
                this.done = true;
                return Poll::Ready(Some(Err(e)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.stream.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(message))) => this.receive(message),
                Poll::Ready(Some(Err(e))) => this.lost(Some(e)),
                Poll::Ready(None) => this.lost(None),
            }
        }
    }
}
