//! `POST /api/chat`: one agent run for a role, answered as JSON or as server-sent events.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

use super::app::{App, Role, unknown_role};
use super::body::{Fields, Reject, a_kind, json_response, read_object};
use super::offline;
use crate::agent::{Agent, AgentEvent, AgentOutcome, AgentStream};
use crate::client::Client;
use crate::error::Error;
use crate::mock::{MockServer, Script};
use crate::provider::ProviderKind;
use crate::tools::{Progress, Reporter, ReporterOf};
use crate::types::{ChatRequest, Message, ToolCall, ToolResult};

/// The largest chat request body (a long conversation fits).
pub(crate) const MAX_CHAT_BODY: usize = 8 << 20;

/// The largest progress report body (a summary and a message, with room to spare).
const MAX_PROGRESS_BODY: usize = 16 << 10;

/// Chat with a role: `/api/chat` runs a model session with the role's tools, and
/// `/api/tools/progress` is where a running tool reports how far it is.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/chat", post(chat))
        .route("/api/tools/progress", post(progress))
}

/// `POST /api/tools/progress`: a plugin reports how far a call to one of its callback tools
/// is, while the call runs: `{"call_id", "name"?, "progress"?, "total"?, "message"?,
/// "summary"?}`. It reaches the chat running the call (as `tool_progress` and `tool_summary`
/// events) and the page, never the model. 404 when no such call is running (it ended, or its
/// chat does not listen), 409 when the id is ambiguous and no `name` settles it.
pub(crate) async fn progress(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let map = match read_object(&headers, body, MAX_PROGRESS_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let mut f = Fields::new(map);
    let call_id = f.required_string("call_id");
    let name = f.string("name");
    let progress = f.number("progress");
    let total = f.number("total");
    let message = f.string("message");
    let summary = f.string("summary");
    for (field, value) in [("progress", progress), ("total", total)] {
        if value.is_some_and(|v| v < 0.0) {
            f.problem(field, "greater_than_equal", "must not be negative");
        }
    }
    if progress.is_none() && summary.is_none() && !f.has_problem("progress") {
        f.problem(
            "progress",
            "missing",
            "send progress (a number), summary (text), or both",
        );
    }
    if progress.is_none() && (total.is_some() || message.is_some()) {
        f.problem("progress", "missing", "total and message go with progress");
    }
    if let Err(r) = f.finish() {
        return r.into_response();
    }
    let Some(call_id) = call_id else {
        return Reject::field("call_id", "missing", "field required").into_response();
    };
    let mut found: Vec<Reporter> = Vec::new();
    let mut several = 0;
    for role in &app.roles {
        match role.registry.reporter_of(&call_id, name.as_deref()) {
            ReporterOf::One(r) if !found.contains(&r) => found.push(r),
            ReporterOf::Several(n) => several += n,
            _ => {}
        }
    }
    let reporter = match (found.as_slice(), several) {
        ([one], 0) => one.clone(),
        ([], 0) => {
            return Reject::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no call {call_id:?}{} of a callback tool is running (it ended, or nobody \
                     listens to its progress)",
                    name.as_deref()
                        .map(|n| format!(" to {n:?}"))
                        .unwrap_or_default()
                ),
            )
            .into_response();
        }
        _ => {
            return Reject::new(
                StatusCode::CONFLICT,
                format!(
                    "several running calls have the id {call_id:?}: add the tool's name \
                     (\"name\") to say which"
                ),
            )
            .into_response();
        }
    };
    if let Some(summary) = summary {
        reporter.summary(summary);
    }
    if let Some(progress) = progress {
        reporter.report(Progress {
            progress,
            total,
            message,
        });
    }
    json_response(StatusCode::OK, &json!({"ok": true}))
}

/// `POST /api/chat`.
pub(crate) async fn chat(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let map = match read_object(&headers, body, MAX_CHAT_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let input = match parse(map, &app) {
        Ok(i) => i,
        Err(r) => return r.into_response(),
    };
    let Some(role) = app.role(&input.role) else {
        return unknown_role(&input.role);
    };
    let session = match Session::open(role).await {
        Ok(s) => s,
        Err(e) => return failure(&e, Vec::new()),
    };
    let request = ChatRequest::new(role.config.model.clone(), input.messages);
    let stream = session.agent.run(request);
    let observer = Observer::new(Arc::clone(&app), role.config.name.clone());
    if input.stream {
        let shutdown = app.shutdown_signal();
        let events = sse_events(stream, observer, session).take_until(shutdown);
        return Sse::new(events.map(Ok::<Event, Infallible>))
            .keep_alive(KeepAlive::default())
            .into_response();
    }
    run_to_end(stream, observer, session).await
}

struct Input {
    role: String,
    messages: Vec<Message>,
    stream: bool,
}

fn parse(map: serde_json::Map<String, Value>, app: &App) -> Result<Input, Reject> {
    let mut f = Fields::new(map);
    let role = f.string("role").filter(|r| !r.is_empty());
    let message = f.string("message");
    let messages = f.take("messages");
    let stream = f.boolean("stream").unwrap_or(false);
    let mut history = Vec::new();
    match (message, messages) {
        (Some(_), Some(_)) => f.problem(
            "messages",
            "value_error",
            "send either message or messages, not both",
        ),
        (None, None) if !f.has_problem("message") => f.problem(
            "message",
            "missing",
            "field required: send message (text) or messages (a conversation)",
        ),
        (None, None) => {}
        (Some(text), None) if text.trim().is_empty() => {
            f.problem("message", "string_too_short", "the message is empty");
        }
        (Some(text), None) => history.push(Message::user(text)),
        (None, Some(Value::Array(items))) => {
            if items.is_empty() {
                f.problem("messages", "too_short", "the conversation is empty");
            }
            for (i, item) in items.into_iter().enumerate() {
                match serde_json::from_value::<Message>(item) {
                    Ok(m) => history.push(m),
                    Err(e) => f.problem(
                        &format!("messages.{i}"),
                        "value_error",
                        format!("not a canonical message: {e}"),
                    ),
                }
            }
        }
        (None, Some(other)) => f.problem(
            "messages",
            "list_type",
            format!("must be an array of messages, got {}", a_kind(&other)),
        ),
    }
    let role = match role {
        Some(r) => Some(r),
        None if app.roles.len() == 1 => Some(app.roles[0].config.name.clone()),
        None => {
            let names: Vec<&str> = app.roles.iter().map(|r| r.config.name.as_str()).collect();
            f.problem(
                "role",
                "missing",
                format!("field required: this server has roles {}", names.join(", ")),
            );
            None
        }
    };
    f.finish()?;
    let role = role.ok_or_else(|| Reject::field("role", "missing", "field required"))?;
    if let Some(system) = app.role(&role).and_then(|r| r.config.system.clone())
        && !matches!(history.first(), Some(Message::System { .. }))
    {
        history.insert(0, Message::system(system));
    }
    Ok(Input {
        role,
        messages: history,
        stream,
    })
}

/// The model side of one chat: the role's client, or a mock provider of its own.
struct Session {
    agent: Agent,
    /// The offline model, stopped when the chat ends.
    _mock: Option<MockServer>,
}

impl Session {
    async fn open(role: &Role) -> crate::Result<Self> {
        let (client, mock) = match &role.client {
            Some(client) => (client.clone(), None),
            None => {
                let script = Script::new().respond_with(offline::respond);
                let mock = MockServer::start(ProviderKind::OpenAi, script).await?;
                // An explicit key, so no real key from the environment is sent to the mock.
                let client = Client::builder(ProviderKind::OpenAi)
                    .base_url(mock.url())
                    .api_key("offline")
                    .build()?;
                (client, Some(mock))
            }
        };
        let agent = Agent::new(client, role.registry.clone()).with_max_turns(role.config.max_turns);
        Ok(Self { agent, _mock: mock })
    }
}

/// Puts the chat's tool calls into the server's log and statistics.
struct Observer {
    app: Arc<App>,
    role: String,
    running: HashMap<String, u64>,
}

impl Observer {
    fn new(app: Arc<App>, role: String) -> Self {
        Self {
            app,
            role,
            running: HashMap::new(),
        }
    }

    fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ToolStarted(call) => self.started(call),
            AgentEvent::ToolFinished(result) => self.finished(result),
            AgentEvent::ToolProgress {
                call_id, progress, ..
            } => {
                if let Some(id) = self.running.get(call_id) {
                    self.app.live.call_progress(*id, progress.clone());
                }
            }
            AgentEvent::ToolSummary {
                call_id, summary, ..
            } => {
                if let Some(id) = self.running.get(call_id) {
                    self.app.live.call_summary(*id, summary);
                }
            }
            _ => {}
        }
    }

    fn started(&mut self, call: &ToolCall) {
        let source = self.app.role(&self.role).and_then(|r| {
            r.registry
                .list()
                .into_iter()
                .find(|t| t.name == call.name)
                .map(|t| t.source)
        });
        let id = self.app.live.call_started(&self.role, call, source);
        self.running.insert(call.id.clone(), id);
    }

    fn finished(&mut self, result: &ToolResult) {
        let Some(id) = self.running.remove(&result.call_id) else {
            return;
        };
        let registered = self
            .app
            .role(&self.role)
            .is_some_and(|r| r.registry.contains(&result.name));
        self.app
            .live
            .call_finished(&self.role, id, result, registered);
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        // Calls still running when the chat ended (the client left, the provider failed) are
        // marked in the log rather than left "running" forever.
        for (call_id, id) in self.running.drain() {
            let call = ToolCall::new(call_id, "", "");
            let result = ToolResult::error(&call, "cancelled: the chat ended first");
            self.app.live.call_finished(&self.role, id, &result, false);
        }
    }
}

async fn run_to_end(mut stream: AgentStream, mut observer: Observer, session: Session) -> Response {
    let mut failed = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => observer.observe(&event),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    // The mock (and the requests it recorded) and the run go before the answer is written,
    // so the conversation is not held more times than needed while it is serialised.
    match failed {
        Some(e) => {
            let messages = stream.messages();
            drop(stream);
            drop(session);
            failure(&e, messages)
        }
        None => {
            let finished = stream.finish().await;
            drop(session);
            match finished {
                Ok(outcome) => json_response(StatusCode::OK, &Answer::of(&outcome)),
                Err(e) => failure(&e, Vec::new()),
            }
        }
    }
}

/// The JSON answer, serialised from the outcome itself (no copy of the conversation as a
/// `Value` first: a long conversation would be held twice).
#[derive(serde::Serialize)]
struct Answer<'a> {
    /// `"done"` in the event stream; absent from the JSON answer.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    response: &'a crate::types::ChatResponse,
    messages: &'a [Message],
}

impl<'a> Answer<'a> {
    fn of(outcome: &'a AgentOutcome) -> Self {
        Self {
            kind: None,
            response: &outcome.response,
            messages: &outcome.messages,
        }
    }
}

/// The status for an agent error: the provider failing is 502, a conversation the provider's
/// wire cannot carry is 422, the turn limit is 500.
fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::Input { .. } | Error::Unsupported { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Error::MaxTurns(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_GATEWAY,
    }
}

fn failure(e: &Error, messages: Vec<Message>) -> Response {
    #[derive(serde::Serialize)]
    struct Failure<'a> {
        ok: bool,
        error: String,
        detail: String,
        messages: &'a [Message],
    }
    let body = Failure {
        ok: false,
        error: e.to_string(),
        detail: e.to_string(),
        messages: &messages,
    };
    json_response(status_of(e), &body)
}

/// An event whose data is `data` as JSON, written straight into the event (no string first).
fn event(kind: &str, data: impl serde::Serialize) -> Event {
    let event = Event::default().event(kind);
    match event.clone().json_data(&data) {
        Ok(e) => e,
        Err(_) => event.data("{}"),
    }
}

fn sse_event(e: &AgentEvent) -> Option<Event> {
    Some(match e {
        AgentEvent::Model(ev) => event("model", json!({"type": "model", "event": ev})),
        AgentEvent::ToolStarted(call) => event(
            "tool_started",
            json!({"type": "tool_started", "call": call}),
        ),
        AgentEvent::ToolProgress {
            call_id,
            name,
            progress,
        } => event(
            "tool_progress",
            json!({"type": "tool_progress", "call_id": call_id, "name": name,
                   "progress": progress.progress, "total": progress.total,
                   "message": progress.message}),
        ),
        AgentEvent::ToolSummary {
            call_id,
            name,
            summary,
        } => event(
            "tool_summary",
            json!({"type": "tool_summary", "call_id": call_id, "name": name, "summary": summary}),
        ),
        AgentEvent::ToolFinished(result) => event(
            "tool_finished",
            json!({"type": "tool_finished", "result": result}),
        ),
        AgentEvent::TurnDone {
            turn,
            response,
            results,
        } => event(
            "turn_done",
            json!({"type": "turn_done", "turn": turn, "response": response, "results": results}),
        ),
        // Events added to the agent later are not part of this protocol yet.
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

enum Phase {
    Running(Box<(AgentStream, Observer, Session)>),
    Done,
}

/// The agent's events as SSE, then `done` (`{"response", "messages"}`) or `error`
/// (`{"error", "messages"}`). Dropping it (the client left) cancels the run.
fn sse_events(
    stream: AgentStream,
    observer: Observer,
    session: Session,
) -> impl Stream<Item = Event> {
    futures::stream::unfold(
        Phase::Running(Box::new((stream, observer, session))),
        |phase| async move {
            let Phase::Running(running) = phase else {
                return None;
            };
            let (mut stream, mut observer, session) = *running;
            loop {
                match stream.next().await {
                    Some(Ok(e)) => {
                        observer.observe(&e);
                        if let Some(ev) = sse_event(&e) {
                            let running = Box::new((stream, observer, session));
                            return Some((ev, Phase::Running(running)));
                        }
                    }
                    Some(Err(e)) => {
                        let data = json!({"type": "error", "error": e.to_string(),
                                          "messages": stream.messages()});
                        return Some((event("error", data), Phase::Done));
                    }
                    None => {
                        let ev = match stream.finish().await {
                            Ok(outcome) => event(
                                "done",
                                Answer {
                                    kind: Some("done"),
                                    ..Answer::of(&outcome)
                                },
                            ),
                            Err(e) => event(
                                "error",
                                json!({"type": "error", "error": e.to_string(), "messages": []}),
                            ),
                        };
                        return Some((ev, Phase::Done));
                    }
                }
            }
        },
    )
}
