//! The agent over a realtime session (feature `realtime`): each call runs as soon as it is
//! complete (its `.done`, a whole Gemini call), through the [`ToolRegistry`]'s dispatch, and its
//! result goes back in the dialect's shape; Gemini Live's cancellations cancel the running
//! tools; an optional [`CallRateGuard`] refuses calls past a rate with an error result telling
//! the model to answer. What a running call reports (its progress, a summary for the people
//! waiting: [`crate::tools::Reporter`]) arrives as [`RealtimeAgentEvent::ToolProgress`] and
//! [`RealtimeAgentEvent::ToolSummary`] before its result, and is never sent to the model.
//!
//! Tool problems are results, as in the HTTP [`crate::agent`]: malformed arguments, an unknown
//! tool, a call without a name, a failing handler all become error results the model sees.
//! Calls of a cancelled or superseded response, or cut by a closed socket, are never run.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use futures::StreamExt;
//! use serde_json::json;
//! use toolwire::ToolCall;
//! use toolwire::realtime::agent::{RealtimeAgent, RealtimeAgentEvent};
//! use toolwire::realtime::mock::{RealtimeMockServer, RealtimeReply, RealtimeScript};
//! use toolwire::realtime::{RealtimeEvent, RealtimeKind, RealtimeSession, SessionConfig};
//! use toolwire::tools::ToolRegistry;
//!
//! let tools = ToolRegistry::new();
//! tools.register_fn("add", "Adds a and b", json!({"type": "object"}), |args| async move {
//!     Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)))
//! })?;
//! let kind = RealtimeKind::OpenAiRealtime;
//! let script = RealtimeScript::new()
//!     .then(RealtimeReply::tool_calls([ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#)]))
//!     .then(RealtimeReply::text("2 + 3 = 5"));
//! let server = RealtimeMockServer::start(kind, script).await?;
//!
//! let agent = RealtimeAgent::new(tools);
//! let config = SessionConfig::new("gpt-realtime", agent.definitions());
//! let session = RealtimeSession::builder(kind, config).url(server.url()).connect().await?;
//! session.send_text("What is 2 + 3?")?;
//! let mut events = agent.run(session);
//! let mut answer = None;
//! while let Some(event) = events.next().await {
//!     match event? {
//!         RealtimeAgentEvent::ToolFinished(result) => assert_eq!(result.output, json!(5)),
//!         RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. })
//!             if result.tool_calls.is_empty() =>
//!         {
//!             answer = result.text;
//!             events.close();
//!         }
//!         _ => {}
//!     }
//! }
//! assert_eq!(answer.as_deref(), Some("2 + 3 = 5"));
//!
//! // The one-shot use: run until the model answers without a tool call.
//! let script = RealtimeScript::new()
//!     .then(RealtimeReply::tool_calls([ToolCall::new("call_2", "add", r#"{"a":1,"b":1}"#)]))
//!     .then(RealtimeReply::text("1 + 1 = 2"));
//! let server = RealtimeMockServer::start(kind, script).await?;
//! let config = SessionConfig::new("gpt-realtime", agent.definitions());
//! let session = RealtimeSession::builder(kind, config).url(server.url()).connect().await?;
//! session.send_text("What is 1 + 1?")?;
//! let answer = agent.run(session).answer().await?;
//! assert_eq!(answer.text.as_deref(), Some("1 + 1 = 2"));
//! # Ok(()) }
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{AbortHandle, Abortable, BoxFuture};
use futures::stream::{BoxStream, SelectAll, Stream, StreamExt};
use serde_json::json;
use tokio::time::Instant;

use super::model::RealtimeEvent;
use super::session::{RealtimeSession, SessionHandle};
use crate::error::{Error, Result};
use crate::tools::{Progress, Reporter, Reports, ToolRegistry, ToolSelection, Update};
use crate::types::{ChatResponse, ToolCall, ToolDefinition, ToolResult};

/// At most `max_calls` tool calls run within `window`; past that, calls are not run and get an
/// error result telling the model to stop calling tools and answer (N.E.K.O's guard: 4 in 15 s).
///
/// Non-exhaustive: build it with [`CallRateGuard::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallRateGuard {
    /// Calls allowed within the window.
    pub max_calls: usize,
    /// The sliding window.
    pub window: Duration,
}

impl Default for CallRateGuard {
    /// 4 calls in 15 seconds.
    fn default() -> Self {
        Self {
            max_calls: 4,
            window: Duration::from_secs(15),
        }
    }
}

impl CallRateGuard {
    /// At most `max_calls` calls within `window`.
    pub fn new(max_calls: usize, window: Duration) -> Self {
        Self { max_calls, window }
    }
}

/// The guard's state: when the recent calls ran.
#[derive(Debug)]
struct RateState {
    guard: CallRateGuard,
    recent: VecDeque<Instant>,
}

impl RateState {
    /// Whether one more call may run now (and counts it when it may).
    fn admit(&mut self) -> bool {
        let now = Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.guard.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.guard.max_calls {
            return false;
        }
        self.recent.push_back(now);
        true
    }

    fn refusal(&self, call: &ToolCall) -> ToolResult {
        let mut r = ToolResult::error(
            call,
            format!(
                "Tool-call limit reached: {} calls in the last {} s. {:?} was not run. Do not call \
                 any tool now, not even with other arguments: answer the user with what you have.",
                self.recent.len(),
                self.guard.window.as_secs(),
                call.name
            ),
        );
        r.output = json!({"stop": true});
        r
    }
}

/// One step of a realtime agent run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RealtimeAgentEvent {
    /// A session event, as it arrived.
    Session(RealtimeEvent),
    /// A call is about to run (calls that cannot run get their error result at once).
    ToolStarted(ToolCall),
    /// A running call reported how far it is (for the people waiting; never sent to the
    /// model): as [`crate::agent::AgentEvent::ToolProgress`], coalesced the same way.
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// How far it is.
        progress: Progress,
    },
    /// A running call set a short human summary of itself (never sent to the model).
    ToolSummary {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The summary.
        summary: String,
    },
    /// A call's result, as it goes back to the model.
    ToolFinished(ToolResult),
    /// A running call was cancelled by the server; no result is sent for it.
    ToolCancelled(ToolCall),
}

/// Runs the tools of realtime sessions.
#[derive(Debug, Clone)]
pub struct RealtimeAgent {
    registry: ToolRegistry,
    selection: ToolSelection,
    guard: Option<CallRateGuard>,
}

impl RealtimeAgent {
    /// An agent offering `registry`'s tools (the default [`ToolSelection`]), with no rate
    /// guard.
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            registry,
            selection: ToolSelection::default(),
            guard: None,
        }
    }

    /// Which tools are offered and may run.
    pub fn with_selection(mut self, selection: ToolSelection) -> Self {
        self.selection = selection;
        self
    }

    /// Refuses calls past a rate (see [`CallRateGuard`]).
    pub fn with_rate_guard(mut self, guard: CallRateGuard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// The definitions to configure the session with.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions(&self.selection)
    }

    /// Runs the calls `session` delivers until it ends. The stream yields every session event
    /// and each tool's start, result and cancellation; send text through a
    /// [`SessionHandle`] ([`RealtimeSession::handle`]) or [`RealtimeAgentStream::handle`].
    pub fn run(&self, session: RealtimeSession) -> RealtimeAgentStream {
        RealtimeAgentStream {
            kind: session.kind(),
            handle: session.handle(),
            session: Some(session),
            agent: self.clone(),
            rate: self.guard.clone().map(|guard| RateState {
                guard,
                recent: VecDeque::new(),
            }),
            running: SelectAll::new(),
            aborts: HashMap::new(),
            pending: VecDeque::new(),
        }
    }

    /// Answers `call` now, without running it, when it cannot run.
    fn refuse(&self, call: &ToolCall, rate: Option<&mut RateState>) -> Option<ToolResult> {
        if call.name.is_empty() {
            return Some(ToolResult::error(
                call,
                "The call came without a tool name, so no tool was run. Call the tool again by \
                 its name.",
            ));
        }
        // Malformed arguments are answered by dispatch without running the handler, and do
        // not count against the rate.
        if call.is_complete()
            && let Some(rate) = rate
            && !rate.admit()
        {
            return Some(rate.refusal(call));
        }
        None
    }
}

type Running = Abortable<BoxFuture<'static, ToolResult>>;

/// What a running call yields: its reports while it runs, then its end (a result, or aborted).
enum Step {
    Update(Update),
    Done(std::result::Result<ToolResult, futures::future::Aborted>),
}

/// Where a call's steps stand.
enum Steps {
    Running(Running, Reports),
    Ending(std::result::Result<ToolResult, futures::future::Aborted>),
    Over,
}

/// A call's steps: each coalesced update while it runs, what came after the last one, then its
/// end.
fn steps(
    call: ToolCall,
    running: Running,
    reports: Reports,
) -> BoxStream<'static, (ToolCall, Step)> {
    futures::stream::unfold(Steps::Running(running, reports), move |state| {
        let call = call.clone();
        async move {
            match state {
                Steps::Running(mut running, mut reports) => {
                    tokio::select! {
                        outcome = &mut running => {
                            let last = reports.take();
                            if last.progress.is_none() && last.summary.is_none() {
                                Some(((call, Step::Done(outcome)), Steps::Over))
                            } else {
                                Some(((call, Step::Update(last)), Steps::Ending(outcome)))
                            }
                        }
                        update = reports.next() => {
                            Some(((call, Step::Update(update)), Steps::Running(running, reports)))
                        }
                    }
                }
                Steps::Ending(outcome) => Some(((call, Step::Done(outcome)), Steps::Over)),
                Steps::Over => None,
            }
        }
    })
    .boxed()
}

/// A running realtime agent: a [`Stream`] of [`RealtimeAgentEvent`]s. Dropping it cancels the
/// running tools and closes the session.
pub struct RealtimeAgentStream {
    kind: super::model::RealtimeKind,
    handle: SessionHandle,
    session: Option<RealtimeSession>,
    agent: RealtimeAgent,
    rate: Option<RateState>,
    running: SelectAll<BoxStream<'static, (ToolCall, Step)>>,
    aborts: HashMap<String, AbortHandle>,
    pending: VecDeque<Result<RealtimeAgentEvent>>,
}

impl fmt::Debug for RealtimeAgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealtimeAgentStream")
            .field("running", &self.running.len())
            .field("open", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for RealtimeAgentStream {
    fn drop(&mut self) {
        for abort in self.aborts.values() {
            abort.abort();
        }
        self.handle.close();
    }
}

impl RealtimeAgentStream {
    /// A handle for sending text and events into the session.
    pub fn handle(&self) -> SessionHandle {
        self.handle.clone()
    }

    /// Asks the server to close the session; the stream ends after it closed.
    pub fn close(&self) {
        self.handle.close();
    }

    /// Runs until the model answers without calling a tool (a response that finished with no
    /// calls, once every tool of the turn ran), closes the session and returns that answer: the
    /// one-shot use, which ends by itself as [`crate::agent::Agent::run`] does. Events on the
    /// way are not kept (iterate the stream to see them); a session error ends it with that
    /// error, and a session that closes before any answer is [`Error::Stream`].
    pub async fn answer(mut self) -> Result<ChatResponse> {
        while let Some(event) = self.next().await {
            if let RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) = event?
                && result.tool_calls.is_empty()
                && self.running.is_empty()
            {
                self.close();
                return Ok(result);
            }
        }
        Err(Error::Stream {
            provider: self.kind.provider(),
            reason: "the session closed before the model answered without a tool call".into(),
            partial: None,
        })
    }

    fn finished(&mut self, result: ToolResult) {
        if let Err(e) = self.handle.send_results(std::slice::from_ref(&result)) {
            self.pending.push_back(Err(e));
        }
        self.pending
            .push_back(Ok(RealtimeAgentEvent::ToolFinished(result)));
    }

    /// A running call's update as events, summary first (never sent to the model).
    fn reported(&mut self, call: &ToolCall, update: Update) {
        if let Some(summary) = update.summary {
            self.pending.push_back(Ok(RealtimeAgentEvent::ToolSummary {
                call_id: call.id.clone(),
                name: call.name.clone(),
                summary,
            }));
        }
        if let Some(p) = update.progress {
            self.pending.push_back(Ok(RealtimeAgentEvent::ToolProgress {
                call_id: call.id.clone(),
                name: call.name.clone(),
                progress: p,
            }));
        }
    }

    fn on_session(&mut self, event: RealtimeEvent) {
        match &event {
            RealtimeEvent::CallReady { call, .. } => {
                let call = call.clone();
                self.pending
                    .push_back(Ok(RealtimeAgentEvent::Session(event)));
                self.pending
                    .push_back(Ok(RealtimeAgentEvent::ToolStarted(call.clone())));
                if let Some(result) = self.agent.refuse(&call, self.rate.as_mut()) {
                    self.finished(result);
                    return;
                }
                let registry = self.agent.registry.clone();
                let selection = self.agent.selection.clone();
                let run_call = call.clone();
                let (reporter, reports) = Reporter::channel();
                let work: BoxFuture<'static, ToolResult> = Box::pin(async move {
                    registry
                        .dispatch_reporting(&run_call, &selection, reporter)
                        .await
                });
                let (abort, registration) = AbortHandle::new_pair();
                let running: Running = Abortable::new(work, registration);
                self.aborts.insert(call.id.clone(), abort);
                self.running.push(steps(call, running, reports));
            }
            RealtimeEvent::CallsCancelled { ids } => {
                for id in ids {
                    if let Some(abort) = self.aborts.remove(id) {
                        abort.abort();
                    }
                }
                self.pending
                    .push_back(Ok(RealtimeAgentEvent::Session(event)));
            }
            RealtimeEvent::Closed { .. } => {
                // Results can no longer be sent: whatever still runs is dropped.
                for abort in self.aborts.values() {
                    abort.abort();
                }
                self.pending
                    .push_back(Ok(RealtimeAgentEvent::Session(event)));
            }
            _ => self
                .pending
                .push_back(Ok(RealtimeAgentEvent::Session(event))),
        }
    }
}

impl Stream for RealtimeAgentStream {
    type Item = Result<RealtimeAgentEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.pending.pop_front() {
                return Poll::Ready(Some(event));
            }
            let mut progressed = false;
            while let Poll::Ready(Some((call, step))) = this.running.poll_next_unpin(cx) {
                progressed = true;
                let outcome = match step {
                    Step::Update(update) => {
                        this.reported(&call, update);
                        continue;
                    }
                    Step::Done(outcome) => outcome,
                };
                this.aborts.remove(&call.id);
                match outcome {
                    Ok(result) if this.session.is_some() => this.finished(result),
                    // The session is over: nowhere to send it.
                    Ok(_) => {}
                    Err(_) => this
                        .pending
                        .push_back(Ok(RealtimeAgentEvent::ToolCancelled(call))),
                }
            }
            if let Some(session) = this.session.as_mut() {
                match session.poll_next_unpin(cx) {
                    Poll::Ready(Some(Ok(event))) => {
                        this.on_session(event);
                        continue;
                    }
                    Poll::Ready(Some(Err(e))) => {
                        this.pending.push_back(Err(e));
                        continue;
                    }
                    Poll::Ready(None) => {
                        this.session = None;
                        for abort in this.aborts.values() {
                            abort.abort();
                        }
                        continue;
                    }
                    Poll::Pending => {}
                }
            }
            if progressed {
                continue;
            }
            if this.session.is_none() && this.running.is_empty() && this.pending.is_empty() {
                return Poll::Ready(None);
            }
            return Poll::Pending;
        }
    }
}
