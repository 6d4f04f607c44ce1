//! A loopback mock of every realtime dialect (features `realtime` and `mock`): a WebSocket
//! server on `127.0.0.1` that answers each response request from a script of canonical replies,
//! encoded the way the dialect streams them.
//!
//! What triggers the next reply: `response.create` (OpenAI-like dialects; Qwen's text comes as
//! `session.update` of the instructions followed by it), or a `clientContent` turn or a
//! `toolResponse` (Gemini Live). The server also acknowledges the configuration
//! (`session.created` / `session.updated`, Gemini's `setupComplete`), records every client event,
//! and checks results the way the dialect's server would: a `function_call_output` without
//! `call_id` (or, on GLM, with one) or for an unknown call gets an `error` event back.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use futures::StreamExt;
//! use toolwire::realtime::mock::{RealtimeMockServer, RealtimeReply, RealtimeScript};
//! use toolwire::realtime::{RealtimeEvent, RealtimeKind, RealtimeSession, SessionConfig};
//!
//! let kind = RealtimeKind::GeminiLive;
//! let script = RealtimeScript::new().then(RealtimeReply::text("Hello from the mock."));
//! let server = RealtimeMockServer::start(kind, script).await?;
//! let mut session = RealtimeSession::builder(kind, SessionConfig::new("any-model", vec![]))
//!     .url(server.url())
//!     .connect()
//!     .await?;
//! session.send_text("Hi")?;
//! while let Some(event) = session.next().await {
//!     if let RealtimeEvent::ResponseDone { result, .. } = event? {
//!         assert_eq!(result.text.as_deref(), Some("Hello from the mock."));
//!         break;
//!     }
//! }
//! # Ok(()) }
//! ```

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::model::RealtimeKind;
use crate::error::{ApiError, Error, Result};
use crate::providers::split::pieces;
use crate::types::{ChatResponse, FinishReason, ToolCall, Usage};

/// One scripted reply.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RealtimeReply {
    /// A model response (text and/or calls), streamed the dialect's way.
    Response(ChatResponse),
    /// The response's first call starts streaming, then the response is cancelled (the user
    /// speaks over it; on Gemini Live its calls arrive and are then cancelled).
    Cancelled(ChatResponse),
    /// The response's first call starts streaming, then the socket drops mid-arguments.
    CutMidCall(ChatResponse),
    /// An error event (Gemini Live: the socket closes with code 1011 and the message).
    Error(ApiError),
    /// Exact server events.
    Events(Vec<Value>),
    /// Close the socket normally.
    Close,
}

impl RealtimeReply {
    /// A response that says `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Response(ChatResponse {
            text: Some(text.into()),
            finish_reason: FinishReason::Stop,
            ..ChatResponse::default()
        })
    }

    /// A response that makes these calls.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        let mut r = ChatResponse {
            tool_calls: calls.into_iter().collect(),
            ..ChatResponse::default()
        };
        r.settle_finish_reason();
        Self::Response(r)
    }
}

impl From<ChatResponse> for RealtimeReply {
    fn from(r: ChatResponse) -> Self {
        Self::Response(r)
    }
}

/// The replies, served in order, one per response request.
#[derive(Debug, Clone, Default)]
pub struct RealtimeScript {
    replies: VecDeque<RealtimeReply>,
}

impl RealtimeScript {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a reply.
    pub fn then(mut self, reply: impl Into<RealtimeReply>) -> Self {
        self.replies.push_back(reply.into());
        self
    }
}

/// How the mock streams a dialect (mock-only knowledge; decoding never needs it).
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Calls stream as argument deltas (GLM sends only `.done`).
    deltas: bool,
    /// Calls carry `call_id` (GLM's do not).
    call_ids: bool,
    /// Calls are announced by `response.output_item.added` and closed by `.done` of the item.
    items: bool,
    /// `.done` repeats the call's name (OpenAI's takes it from the item).
    done_name: bool,
    /// The transcript delta event.
    transcript: &'static str,
}

fn shape(kind: RealtimeKind) -> Shape {
    match kind {
        RealtimeKind::OpenAiRealtime => Shape {
            deltas: true,
            call_ids: true,
            items: true,
            done_name: false,
            transcript: "response.output_audio_transcript.delta",
        },
        RealtimeKind::GlmRealtime => Shape {
            deltas: false,
            call_ids: false,
            items: false,
            done_name: true,
            transcript: "response.audio_transcript.delta",
        },
        _ => Shape {
            deltas: true,
            call_ids: true,
            items: true,
            done_name: true,
            transcript: "response.audio_transcript.delta",
        },
    }
}

/// What the server sends.
#[derive(Debug, Clone)]
enum Frame {
    Event(Value),
    Close(u16, String),
    Drop,
}

fn usage_json(u: Option<Usage>) -> Value {
    let u = u.unwrap_or(Usage {
        input_tokens: 100,
        output_tokens: 20,
        reasoning_tokens: None,
        ..Default::default()
    });
    json!({"total_tokens": u.input_tokens + u.output_tokens, "input_tokens": u.input_tokens,
           "output_tokens": u.output_tokens})
}

/// An OpenAI-like response as events. `stop_in_call`: end inside the first call's arguments
/// (`Some(false)`: cancelled by speech; `Some(true)`: the socket drops).
fn openai_like(
    kind: RealtimeKind,
    n: usize,
    r: &ChatResponse,
    stop_in_call: Option<bool>,
) -> Vec<Frame> {
    let s = shape(kind);
    let rid = format!("resp_mock{n}");
    let mut out = vec![json!({"type": "response.created",
                              "response": {"id": rid, "object": "realtime.response", "status": "in_progress"}})];
    let mut index = 0;
    if let Some(text) = r.text.as_deref().filter(|t| !t.is_empty()) {
        let item = format!("item_mock{n}_{index}");
        out.push(
            json!({"type": "response.output_item.added", "response_id": rid, "output_index": index,
                        "item": {"id": item, "type": "message", "role": "assistant"}}),
        );
        for p in pieces(text, 12) {
            out.push(
                json!({"type": s.transcript, "response_id": rid, "item_id": item,
                            "output_index": index, "content_index": 0, "delta": p}),
            );
        }
        out.push(
            json!({"type": "response.output_item.done", "response_id": rid, "output_index": index,
                        "item": {"id": item, "type": "message", "status": "completed"}}),
        );
        index += 1;
    }
    for call in &r.tool_calls {
        let item = format!("item_mock{n}_{index}");
        let id_field = |mut v: Value| {
            if s.call_ids {
                v["call_id"] = json!(call.id);
            }
            v
        };
        if s.items {
            out.push(json!({"type": "response.output_item.added", "response_id": rid, "output_index": index,
                            "item": id_field(json!({"id": item, "type": "function_call", "status": "in_progress",
                                                    "name": call.name, "arguments": ""}))}));
        }
        let args = call.raw_arguments.as_str();
        let mut sent = String::new();
        if s.deltas {
            let all = pieces(args, 8);
            let keep = if stop_in_call.is_some() {
                all.len().div_ceil(2)
            } else {
                all.len()
            };
            for p in &all[..keep] {
                sent.push_str(p);
                out.push(id_field(
                    json!({"type": "response.function_call_arguments.delta", "response_id": rid,
                                         "item_id": item, "output_index": index, "delta": p}),
                ));
            }
        }
        let frames = |events: Vec<Value>| events.into_iter().map(Frame::Event).collect::<Vec<_>>();
        match stop_in_call {
            Some(true) => {
                let mut f = frames(out);
                f.push(Frame::Drop);
                return f;
            }
            Some(false) => {
                out.push(
                    json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": 1200,
                                "item_id": format!("item_user{n}")}),
                );
                let partial = if s.deltas {
                    sent.clone()
                } else {
                    args.to_owned()
                };
                let mut done = id_field(json!({"type": "response.function_call_arguments.done",
                                               "response_id": rid, "item_id": item, "output_index": index,
                                               "arguments": partial}));
                if s.done_name {
                    done["name"] = json!(call.name);
                }
                out.push(done);
                out.push(
                    json!({"type": "response.done", "response": {"id": rid, "status": "cancelled",
                                "status_details": {"type": "cancelled", "reason": "turn_detected"},
                                "usage": usage_json(r.usage)}}),
                );
                return frames(out);
            }
            None => {}
        }
        let mut done = id_field(
            json!({"type": "response.function_call_arguments.done", "response_id": rid,
                                       "item_id": item, "output_index": index, "arguments": args}),
        );
        if s.done_name {
            done["name"] = json!(call.name);
        }
        out.push(done);
        if s.items {
            out.push(json!({"type": "response.output_item.done", "response_id": rid, "output_index": index,
                            "item": id_field(json!({"id": item, "type": "function_call", "status": "completed",
                                                    "name": call.name, "arguments": args}))}));
        }
        index += 1;
    }
    out.push(
        json!({"type": "response.done", "response": {"id": rid, "status": "completed",
                    "usage": usage_json(r.usage)}}),
    );
    out.into_iter().map(Frame::Event).collect()
}

/// A Gemini Live response as messages.
fn gemini(r: &ChatResponse, stop_in_call: Option<bool>) -> Vec<Frame> {
    let mut out = Vec::new();
    if let Some(text) = r.text.as_deref().filter(|t| !t.is_empty()) {
        for p in pieces(text, 12) {
            out.push(Frame::Event(
                json!({"serverContent": {"modelTurn": {"parts": [{"text": p}]}}}),
            ));
        }
    }
    if stop_in_call == Some(true) {
        out.push(Frame::Drop);
        return out;
    }
    let u = r.usage.unwrap_or(Usage {
        input_tokens: 100,
        output_tokens: 20,
        reasoning_tokens: None,
        ..Default::default()
    });
    let usage = json!({"promptTokenCount": u.input_tokens, "responseTokenCount": u.output_tokens,
                       "totalTokenCount": u.input_tokens + u.output_tokens});
    if r.tool_calls.is_empty() {
        out.push(Frame::Event(
            json!({"serverContent": {"turnComplete": true}, "usageMetadata": usage}),
        ));
        return out;
    }
    let calls: Vec<Value> = r
        .tool_calls
        .iter()
        .map(|c| {
            let args = c.arguments.clone().unwrap_or_else(|| json!({}));
            json!({"id": c.id, "name": c.name, "args": args})
        })
        .collect();
    out.push(Frame::Event(
        json!({"toolCall": {"functionCalls": calls}, "usageMetadata": usage}),
    ));
    if stop_in_call == Some(false) {
        let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        out.push(Frame::Event(json!({"toolCallCancellation": {"ids": ids}})));
        out.push(Frame::Event(
            json!({"serverContent": {"interrupted": true}}),
        ));
    }
    out
}

fn render(kind: RealtimeKind, n: usize, reply: &RealtimeReply) -> Vec<Frame> {
    let gem = kind == RealtimeKind::GeminiLive;
    match reply {
        RealtimeReply::Response(r) if gem => gemini(r, None),
        RealtimeReply::Response(r) => openai_like(kind, n, r, None),
        RealtimeReply::Cancelled(r) if gem => gemini(r, Some(false)),
        RealtimeReply::Cancelled(r) => openai_like(kind, n, r, Some(false)),
        RealtimeReply::CutMidCall(r) if gem => gemini(r, Some(true)),
        RealtimeReply::CutMidCall(r) => openai_like(kind, n, r, Some(true)),
        RealtimeReply::Error(e) if gem => vec![Frame::Close(1011, e.message.clone())],
        RealtimeReply::Error(e) => vec![Frame::Event(error_event(
            e.code.as_deref().unwrap_or("server_error"),
            &e.message,
        ))],
        RealtimeReply::Events(events) => events.iter().cloned().map(Frame::Event).collect(),
        RealtimeReply::Close => vec![Frame::Close(1000, String::new())],
    }
}

fn error_event(code: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": message}})
}

struct Shared {
    kind: RealtimeKind,
    script: Mutex<RealtimeScript>,
    received: Mutex<Vec<Value>>,
    frames: Mutex<Vec<Vec<u8>>>,
    served: Mutex<usize>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running mock; dropping it stops it and closes every connection.
pub struct RealtimeMockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for RealtimeMockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealtimeMockServer")
            .field("addr", &self.addr)
            .field("kind", &self.shared.kind)
            .finish_non_exhaustive()
    }
}

impl Drop for RealtimeMockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RealtimeMockServer {
    /// Starts a server speaking `kind`.
    pub async fn start(kind: RealtimeKind, script: RealtimeScript) -> Result<Self> {
        let provider = kind.provider();
        let io = |what: &str, e: std::io::Error| Error::Transport {
            provider,
            message: format!("realtime mock: {what}: {e}"),
            connect: false,
            source: Some(Box::new(e)),
        };
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| io("cannot bind 127.0.0.1", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io("cannot read the bound address", e))?;
        let shared = Arc::new(Shared {
            kind,
            script: Mutex::new(script),
            received: Mutex::new(Vec::new()),
            frames: Mutex::new(Vec::new()),
            served: Mutex::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Self { addr, shared, task })
    }

    /// The WebSocket URL, `ws://127.0.0.1:<port>/realtime`; give it to
    /// [`super::session::SessionBuilder::url`].
    pub fn url(&self) -> String {
        format!("ws://{}/realtime", self.addr)
    }

    /// The client events received so far, in order.
    pub fn received(&self) -> Vec<Value> {
        lock(&self.shared.received).clone()
    }

    /// The client's text and binary frames exactly as received, in order.
    pub fn received_frames(&self) -> Vec<Vec<u8>> {
        lock(&self.shared.frames).clone()
    }

    /// Replies not served yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).replies.len()
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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

/// The calls of the responses served on one connection that await a result.
#[derive(Default)]
struct Pending {
    ids: HashSet<String>,
    anonymous: usize,
}

async fn serve(sock: TcpStream, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await else {
        return;
    };
    let kind = shared.kind;
    let gem = kind == RealtimeKind::GeminiLive;
    if !gem {
        let created = json!({"type": "session.created", "session": {"id": "sess_mock", "object": "realtime.session"}});
        if ws.send(Message::text(created.to_string())).await.is_err() {
            return;
        }
    }
    let mut pending = Pending::default();
    while let Some(Ok(message)) = ws.next().await {
        let event: Value = match &message {
            Message::Text(t) => {
                lock(&shared.frames).push(t.as_bytes().to_vec());
                serde_json::from_str(t.as_str()).unwrap_or(Value::Null)
            }
            Message::Binary(b) => {
                lock(&shared.frames).push(b.to_vec());
                serde_json::from_slice(b).unwrap_or(Value::Null)
            }
            // tungstenite answers the close handshake on the next read, then the stream ends.
            Message::Close(_) => continue,
            _ => continue,
        };
        lock(&shared.received).push(event.clone());
        let mut frames = Vec::new();
        let mut trigger = false;
        if gem {
            if event.get("setup").is_some() {
                frames.push(Frame::Event(json!({"setupComplete": {}})));
            }
            if event
                .get("clientContent")
                .is_some_and(|c| c.get("turnComplete") == Some(&Value::Bool(true)))
            {
                trigger = true;
            }
            if let Some(responses) = event
                .get("toolResponse")
                .and_then(|t| t.get("functionResponses"))
                .and_then(Value::as_array)
            {
                for r in responses {
                    if let Some(id) = r.get("id").and_then(Value::as_str) {
                        pending.ids.remove(id);
                    }
                }
                trigger = true;
            }
        } else {
            match event.get("type").and_then(Value::as_str) {
                Some("session.update") => frames.push(Frame::Event(json!({
                    "type": "session.updated", "session": {"id": "sess_mock", "object": "realtime.session"}
                }))),
                Some("conversation.item.create") => {
                    if let Some(e) = check_output(kind, &event, &mut pending) {
                        frames.push(Frame::Event(e));
                    }
                }
                Some("response.create") => trigger = true,
                _ => {}
            }
        }
        if trigger {
            let reply = lock(&shared.script).replies.pop_front();
            let n = {
                let mut served = lock(&shared.served);
                *served += 1;
                *served
            };
            match reply {
                Some(reply) => {
                    if let RealtimeReply::Response(r) = &reply {
                        for c in &r.tool_calls {
                            if shape(kind).call_ids || gem {
                                pending.ids.insert(c.id.clone());
                            } else {
                                pending.anonymous += 1;
                            }
                        }
                    }
                    frames.extend(render(kind, n, &reply));
                }
                None if gem => frames.push(Frame::Close(
                    1011,
                    format!("mock script exhausted: response request {n} has no scripted reply"),
                )),
                None => frames.push(Frame::Event(error_event(
                    "mock_script_exhausted",
                    &format!("mock script exhausted: response request {n} has no scripted reply"),
                ))),
            }
        }
        for frame in frames {
            let sent = match frame {
                Frame::Event(e) => ws.send(Message::text(e.to_string())).await,
                Frame::Close(code, reason) => {
                    let _ = ws
                        .send(Message::Close(Some(CloseFrame {
                            code: CloseCode::from(code),
                            reason: reason.into(),
                        })))
                        .await;
                    return;
                }
                Frame::Drop => return,
            };
            if sent.is_err() {
                return;
            }
        }
    }
}

/// A `function_call_output` checked as the dialect's server would: `call_id` required and known
/// (GLM: absent, and some call pending).
fn check_output(kind: RealtimeKind, event: &Value, pending: &mut Pending) -> Option<Value> {
    let item = event.get("item")?;
    if item.get("type").and_then(Value::as_str) != Some("function_call_output") {
        return None;
    }
    let call_id = item.get("call_id").and_then(Value::as_str);
    if !shape(kind).call_ids {
        return match call_id {
            Some(_) => Some(error_event(
                "invalid_parameter",
                "function_call_output must not carry call_id on this server",
            )),
            None if pending.anonymous > 0 => {
                pending.anonymous -= 1;
                None
            }
            None => Some(error_event(
                "item_not_found",
                "no function call awaits an output",
            )),
        };
    }
    match call_id {
        Some(id) if pending.ids.remove(id) => None,
        Some(id) => Some(error_event(
            "item_not_found",
            &format!("Tool call ID '{id}' not found in conversation."),
        )),
        None => Some(error_event(
            "missing_required_parameter",
            "Missing required parameter: 'item.call_id'.",
        )),
    }
}
