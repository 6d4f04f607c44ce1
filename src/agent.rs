//! The streaming agent loop: stream a turn, run its tool calls, send the results, repeat.
//!
//! An [`Agent`] is a [`Client`] (any provider), a [`ToolRegistry`] and a few settings.
//! [`Agent::run`] returns an [`AgentStream`] of [`AgentEvent`]s: every model event as it
//! arrives, each tool call as it starts and finishes, and the end of each turn. The calls of a
//! turn run concurrently; their results join the conversation in call order. The loop ends when
//! the model answers without calling a tool, or with [`Error::MaxTurns`]. Dropping the stream
//! cancels everything in flight (the model request and the running tools).
//!
//! Tool problems never end the loop: malformed or truncated arguments, unknown tools, schema
//! violations, timeouts, failing or panicking handlers all become error results the model sees
//! (see [`crate::tools`]). Only the provider failing (transport, API error, a broken stream)
//! and the turn limit end it with an error; [`AgentStream::messages`] still holds the
//! conversation up to that point.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use serde_json::json;
//! use toolwire::agent::Agent;
//! use toolwire::mock::{MockReply, MockServer, Script};
//! use toolwire::tools::ToolRegistry;
//! use toolwire::{ChatRequest, Client, Message, ProviderKind, ToolCall};
//!
//! let tools = ToolRegistry::new();
//! tools.register_fn("add", "Adds a and b", json!({"type": "object"}), |args| async move {
//!     Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)))
//! })?;
//! // A mock model: first a tool call, then an answer.
//! let script = Script::new()
//!     .then(MockReply::tool_calls([ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#)]))
//!     .then(MockReply::text("2 + 3 = 5"));
//! let server = MockServer::start(ProviderKind::OpenAi, script).await?;
//! let client = Client::builder(ProviderKind::OpenAi).base_url(server.url()).build()?;
//!
//! let agent = Agent::new(client, tools);
//! let request = ChatRequest::new("any-model", vec![Message::user("What is 2 + 3?")]);
//! let outcome = agent.run(request).finish().await?;
//! assert_eq!(outcome.response.text.as_deref(), Some("2 + 3 = 5"));
//! let Message::Tool(result) = &outcome.messages[2] else { unreachable!() };
//! assert_eq!(result.output, json!(5));
//! # Ok(()) }
//! ```
//!
//! # Switching providers
//!
//! The conversation is canonical, so it can continue on another provider: give the messages of
//! one run to an agent with another client. Each request re-encodes the whole history for the
//! new wire (tool names are mapped per provider, ids and results are written the new wire's
//! way). Each assistant turn the agent appends is marked with the provider that produced it
//! (`"provider": "gemini"` beside its content); before a request, turns produced by another
//! provider lose their provider data, because it is opaque and bound to the provider (and
//! model) that issued it:
//!
//! - dropped: every `extra` field of those assistant messages and of their tool calls, such as
//!   Gemini's `thought_signature` on calls and text, its reasoning signature and finish
//!   message (Gemini answers "Invalid thought signature" / "Corrupted thought signature" to
//!   signatures from elsewhere; other wires have no place for them);
//! - kept: text, reasoning, calls (id, name, arguments), results, and toolwire's own
//!   [`ToolCall::SYNTHETIC_ID`] mark, which tells every encoder the id was never the provider's.
//!
//! Turns without a mark (history built by hand) are sent as they are.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::provider::ProviderKind;
use crate::tools::{ToolRegistry, ToolSelection};
use crate::types::{
    AssistantMessage, ChatRequest, ChatResponse, Message, StreamEvent, ToolCall, ToolResult,
};

/// How many turns an agent runs unless told otherwise.
pub const DEFAULT_MAX_TURNS: usize = 10;

/// The key on an assistant message's `extra` naming the provider that produced it.
pub const PROVIDER_MARK: &str = "provider";

/// One step of an agent run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model event, as the provider streamed it.
    Model(StreamEvent),
    /// A tool call is about to run (malformed calls too: they get an error result at once).
    ToolStarted(ToolCall),
    /// A tool call finished; results arrive as calls finish, not in call order.
    ToolFinished(ToolResult),
    /// A turn ended: the model's response and the results sent back (in call order; empty on
    /// the last turn).
    TurnDone {
        /// The turn number, from 1.
        turn: usize,
        /// What the model answered.
        response: ChatResponse,
        /// The results appended to the conversation, in call order.
        results: Vec<ToolResult>,
    },
}

/// The end of a successful run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// The model's final answer (a turn without tool calls).
    pub response: ChatResponse,
    /// The whole conversation: the request's messages plus every turn and result.
    pub messages: Vec<Message>,
    /// How many turns ran.
    pub turns: usize,
    /// The provider that answered.
    pub provider: ProviderKind,
}

/// Runs conversations with tools on one provider.
#[derive(Debug, Clone)]
pub struct Agent {
    client: Client,
    registry: ToolRegistry,
    selection: ToolSelection,
    max_turns: usize,
}

impl Agent {
    /// An agent offering `registry`'s tools (the default [`ToolSelection`]) for at most
    /// [`DEFAULT_MAX_TURNS`] turns.
    pub fn new(client: Client, registry: ToolRegistry) -> Self {
        Self {
            client,
            registry,
            selection: ToolSelection::default(),
            max_turns: DEFAULT_MAX_TURNS,
        }
    }

    /// Which tools are offered (role, toolsets).
    pub fn with_selection(mut self, selection: ToolSelection) -> Self {
        self.selection = selection;
        self
    }

    /// The most model turns one run may take (at least 1).
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns.max(1);
        self
    }

    /// The provider this agent talks to.
    pub fn provider(&self) -> ProviderKind {
        self.client.provider().info().kind
    }

    /// Runs `request` (model, messages, sampling settings) until the model answers without
    /// tools. The request's `tools` are replaced by the registry's offer, read again each turn
    /// so tools registered meanwhile are seen. Its `tool_choice` applies to the first turn only
    /// (a `required` choice on every turn would never let the model answer).
    pub fn run(&self, request: ChatRequest) -> AgentStream {
        let shared = Arc::new(Shared {
            events: Mutex::new(VecDeque::new()),
            messages: Mutex::new(request.messages.clone()),
        });
        let driver = Box::pin(drive(self.clone(), request, Arc::clone(&shared)));
        AgentStream {
            shared,
            provider: self.provider(),
            driver: Some(driver),
            end: End::Running,
        }
    }
}

/// Removes provider data from assistant turns that `to` did not produce (see the module docs);
/// the marks of those turns are removed with it.
pub fn carry_over(messages: &mut [Message], to: ProviderKind) {
    for message in messages {
        let Message::Assistant(a) = message else {
            continue;
        };
        let Some(Value::String(from)) = a.extra.get(PROVIDER_MARK) else {
            continue;
        };
        if from == to.name() {
            continue;
        }
        a.extra.clear();
        for call in &mut a.tool_calls {
            call.extra
                .retain(|k, v| k == ToolCall::SYNTHETIC_ID && v == &Value::Bool(true));
        }
    }
}

/// Queue and conversation shared between the driver and the stream.
struct Shared {
    events: Mutex<VecDeque<AgentEvent>>,
    messages: Mutex<Vec<Message>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn emit(&self, event: AgentEvent) {
        lock(&self.events).push_back(event);
    }
}

async fn drive(
    agent: Agent,
    mut request: ChatRequest,
    shared: Arc<Shared>,
) -> Result<AgentOutcome> {
    let provider = agent.provider();
    carry_over(&mut lock(&shared.messages), provider);
    let first_choice = request.tool_choice.take();
    for turn in 1..=agent.max_turns {
        request.tools = agent.registry.definitions(&agent.selection);
        request.tool_choice = if turn == 1 && !request.tools.is_empty() {
            first_choice.clone()
        } else {
            None
        };
        request.messages = lock(&shared.messages).clone();

        let mut stream = agent.client.stream(&request).await?;
        while let Some(event) = stream.next().await {
            shared.emit(AgentEvent::Model(event?));
        }
        let mut response = stream.finish().await?;
        unique_synthetic_ids(&mut response, &lock(&shared.messages), turn);

        let mut assistant = AssistantMessage::from(response.clone());
        assistant
            .extra
            .insert(PROVIDER_MARK.into(), Value::String(provider.name().into()));
        lock(&shared.messages).push(Message::Assistant(assistant));

        if response.tool_calls.is_empty() {
            shared.emit(AgentEvent::TurnDone {
                turn,
                response: response.clone(),
                results: Vec::new(),
            });
            return Ok(AgentOutcome {
                response,
                messages: lock(&shared.messages).clone(),
                turns: turn,
                provider,
            });
        }

        let results = run_calls(&agent, &response.tool_calls, &shared).await;
        lock(&shared.messages).extend(results.iter().cloned().map(Message::Tool));
        shared.emit(AgentEvent::TurnDone {
            turn,
            response,
            results,
        });
    }
    Err(Error::MaxTurns(agent.max_turns))
}

/// Runs every call of a turn concurrently; results come back in call order.
async fn run_calls(agent: &Agent, calls: &[ToolCall], shared: &Shared) -> Vec<ToolResult> {
    for call in calls {
        shared.emit(AgentEvent::ToolStarted(call.clone()));
    }
    let registry = &agent.registry;
    let selection = &agent.selection;
    let mut running: FuturesUnordered<_> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| async move { (i, registry.dispatch(call, selection).await) })
        .collect();
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    while let Some((i, result)) = running.next().await {
        shared.emit(AgentEvent::ToolFinished(result.clone()));
        if let Some(slot) = results.get_mut(i) {
            *slot = Some(result);
        }
    }
    results.into_iter().flatten().collect()
}

/// Ids toolwire minted are unique in one response only; a later turn's `call_1` would collide
/// with an earlier one in the history, so such ids get the turn number appended.
fn unique_synthetic_ids(response: &mut ChatResponse, history: &[Message], turn: usize) {
    let history_ids: HashSet<&str> = history
        .iter()
        .flat_map(|m| match m {
            Message::Assistant(a) => a.tool_calls.iter().map(|c| c.id.as_str()).collect(),
            Message::Tool(r) => vec![r.call_id.as_str()],
            _ => Vec::new(),
        })
        .collect();
    let mut taken: HashSet<String> = response.tool_calls.iter().map(|c| c.id.clone()).collect();
    taken.extend(history_ids.iter().map(|s| (*s).to_owned()));
    for call in &mut response.tool_calls {
        if !(call.has_synthetic_id() && history_ids.contains(call.id.as_str())) {
            continue;
        }
        let base = format!("{}_t{turn}", call.id);
        let mut id = base.clone();
        let mut n = 2;
        while taken.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(id.clone());
        call.id = id;
    }
}

enum End {
    Running,
    /// Boxed: an outcome holds whole responses and would make every state that large.
    Done(Box<Result<AgentOutcome>>),
    /// The error was yielded; its text is kept for [`AgentStream::finish`].
    Failed(String, Option<usize>),
    Finished,
}

/// An agent run: a `Stream` of [`AgentEvent`]s ending with `None` after the final turn, or
/// with one `Err` when the provider failed or the turn limit was reached.
///
/// Nothing runs unless the stream is polled; dropping it cancels the model request and every
/// running tool.
pub struct AgentStream {
    shared: Arc<Shared>,
    provider: ProviderKind,
    driver: Option<BoxFuture<'static, Result<AgentOutcome>>>,
    end: End,
}

impl fmt::Debug for AgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentStream")
            .field("provider", &self.provider)
            .field("messages", &lock(&self.shared.messages).len())
            .field("running", &self.driver.is_some())
            .finish_non_exhaustive()
    }
}

impl AgentStream {
    /// The conversation so far (after an error: up to the last complete turn and its results).
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.messages).clone()
    }

    /// Runs the rest of the loop, dropping its events, and returns the outcome (also after the
    /// stream was read to its end), or the error that ended the run.
    pub async fn finish(mut self) -> Result<AgentOutcome> {
        while let Some(item) = self.next().await {
            item?;
        }
        match std::mem::replace(&mut self.end, End::Finished) {
            End::Done(result) if result.is_ok() => *result,
            End::Failed(_, Some(turns)) => Err(Error::MaxTurns(turns)),
            End::Failed(text, None) => Err(Error::Stream {
                provider: self.provider,
                reason: format!("the agent run already failed: {text}"),
                partial: None,
            }),
            _ => Err(Error::Stream {
                provider: self.provider,
                reason: "the agent run was already finished".into(),
                partial: None,
            }),
        }
    }
}

impl Stream for AgentStream {
    type Item = Result<AgentEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = lock(&this.shared.events).pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(driver) = this.driver.as_mut() {
                match driver.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        this.driver = None;
                        this.end = End::Done(Box::new(result));
                    }
                    Poll::Pending if lock(&this.shared.events).is_empty() => {
                        return Poll::Pending;
                    }
                    Poll::Pending => {}
                }
                continue;
            }
            if let End::Done(result) = &this.end
                && result.is_err()
                && let End::Done(result) = std::mem::replace(&mut this.end, End::Finished)
                && let Err(e) = *result
            {
                let turns = match &e {
                    Error::MaxTurns(n) => Some(*n),
                    _ => None,
                };
                this.end = End::Failed(e.to_string(), turns);
                return Poll::Ready(Some(Err(e)));
            }
            return Poll::Ready(None);
        }
    }
}
