//! The streaming agent loop: stream a turn, run its tool calls, send the results, repeat.
//!
//! An [`Agent`] is a [`Client`] (any provider), a [`ToolRegistry`] and a few settings.
//! [`Agent::run`] returns an [`AgentStream`] of [`AgentEvent`]s: every model event as it
//! arrives, each tool call as it starts and finishes (with the progress and summary its handler
//! reports meanwhile, for the people waiting: [`AgentEvent::ToolProgress`],
//! [`AgentEvent::ToolSummary`]; they never reach the model), and the end of each turn. Each
//! call starts as soon as it is final (its `ToolCallComplete` event), while the rest of the turn
//! still streams; calls run concurrently and their results join the conversation in call
//! order. Calls the provider runs itself (web search, code execution: the response's
//! `hosted_calls`) are never dispatched; they stay in the history and go back to the provider
//! with it. A turn the provider paused (`finish_reason: pause`, Anthropic's `pause_turn`) is
//! sent back as it is, so the provider continues it.
//! The loop ends when the model answers without calling a tool, when a stop condition or
//! a hook says so, or with [`Error::MaxTurns`]. Dropping the stream cancels everything in flight (the
//! model request and the running tools).
//!
//! Tool problems never end the loop: malformed or truncated arguments, unknown tools, schema
//! violations, timeouts, failing or panicking handlers all become error results the model sees
//! (see [`crate::tools`]); so do denials, and hooks that panic or time out. Only the provider
//! failing (transport, API error, a broken stream) and the turn limit end it with an error;
//! [`AgentStream::messages`] still holds the conversation up to that point.
//!
//! # When a call is final
//!
//! A call is final when its wire says so: Gemini's whole calls as they arrive (and streamed
//! arguments at their last piece), OpenAI's own Chat Completions endpoint when the next call's
//! index starts, every other wire at the end of the turn (see the quirk sheets). A call started
//! early ran on its final arguments: if the turn is cut later (`length`, a broken stream), that
//! call has still run, and its result is in the history when the run goes on. Calls that are not
//! runnable (malformed, truncated) never run, early or not. [`Agent::with_early_start`] turns the
//! early start off (every call waits for the end of its turn).
//!
//! # Hooks and stop conditions
//!
//! - [`Agent::before_tool`]: asked before each runnable call runs, it approves, denies (the
//!   model sees the message as the call's error result) or rewrites the arguments. Decisions
//!   other than approval are events ([`AgentEvent::ToolDenied`], [`AgentEvent::ToolRewritten`])
//!   and are written on the call in the history, under [`HOOK_MARK`] (the model's own
//!   arguments stay as it produced them).
//! - [`Agent::after_turn`]: asked after each turn, it lets the loop go on, stops it, or edits
//!   the next request (which also lets a run continue after an answer without tool calls).
//! - [`Agent::with_stop`]: stop after a turn that called a named tool, or once a token or time
//!   budget is spent ([`StopWhen`]); the run ends `Ok` with [`AgentOutcome::stopped`] set.
//!
//! A hook that panics or does not answer within [`Agent::with_hook_timeout`] is reported as
//! [`AgentEvent::HookFailed`]; for `before_tool` the call gets an error result without running,
//! for `after_turn` the loop goes on as if it said continue.
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
//! # Deferred loading
//!
//! Tools registered deferred ([`Tool::deferred`], or a selection's deferred toolset) are sent
//! only once the model looks for them: through the agent's own `search_tools` on every
//! provider, or the provider's tool search where it has one ([`DeferredLoading`],
//! [`Agent::with_deferred_loading`]). A registry of thousands of tools sends a few.
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

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, Stream, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::{Client, Router};
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::provider::ProviderKind;
use crate::tools::{
    DEFAULT_SEARCH_LIMIT, Progress, Reporter, SEARCH_TOOL_NAME, Tool, ToolRegistry, ToolSelection,
    Update, search_tool_definition,
};
use crate::types::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, HostedTool, Message, StreamEvent,
    ToolCall, ToolDefinition, ToolResult, Usage,
};

/// How many turns an agent runs unless told otherwise.
pub const DEFAULT_MAX_TURNS: usize = 10;

/// How long a hook may take before it counts as failed (long enough for a person to answer).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(300);

/// The key on an assistant message's `extra` naming the provider that produced it.
pub const PROVIDER_MARK: &str = "provider";

/// The key on a call's `extra`, in the history, recording what the before-tool hook decided
/// when it did not simply approve: `{"decision": "denied", "message": …}`,
/// `{"decision": "rewritten", "arguments": {…}}` or `{"decision": "failed", "message": …}`.
pub const HOOK_MARK: &str = "hook";

/// One step of an agent run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model event, as the provider streamed it.
    Model(StreamEvent),
    /// A tool call is about to run (malformed calls too: they get an error result at once),
    /// with the arguments the before-tool hook rewrote it to, if it did.
    ToolStarted(ToolCall),
    /// A running call's handler (or its MCP server) reported how far it is; for the people
    /// waiting, never sent to the model. Coalesced: at most one per
    /// [`REPORT_INTERVAL`](crate::tools::REPORT_INTERVAL) per call, the latest value winning,
    /// and always before the call's [`AgentEvent::ToolFinished`].
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// How far it is.
        progress: Progress,
    },
    /// A running call's handler set a short human summary of the call ("Searching 3 wikis…");
    /// for the people waiting, never sent to the model. Coalesced like
    /// [`AgentEvent::ToolProgress`].
    ToolSummary {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The summary.
        summary: String,
    },
    /// A running call asks the person for input (an MCP server's elicitation): answer with
    /// `reply` ([`InputReply::accept`](crate::tools::InputReply::accept) checks the content
    /// against the request's form first, or `decline`, `cancel`); the call waits meanwhile.
    /// A reply dropped unanswered (the events not read, [`AgentStream::finish`]) declines.
    InputRequested {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The question and the form of the answer.
        request: crate::tools::InputRequest,
        /// How to answer.
        reply: crate::tools::InputReply,
    },
    /// A tool call finished; results arrive as calls finish, not in call order.
    ToolFinished(ToolResult),
    /// The before-tool hook denied a call: it does not run, and its error result (carrying
    /// `message`) follows as [`AgentEvent::ToolFinished`].
    ToolDenied {
        /// The call as the model made it.
        call: ToolCall,
        /// The message the model sees.
        message: String,
    },
    /// The before-tool hook rewrote a call's arguments; `call` is what runs.
    ToolRewritten {
        /// The call with the new arguments.
        call: ToolCall,
        /// The argument text the model produced.
        original: String,
    },
    /// A hook panicked or did not answer in time; the run goes on (see the module docs).
    HookFailed {
        /// `"before_tool"` or `"after_turn"`.
        hook: &'static str,
        /// What went wrong.
        message: String,
    },
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
    /// The run stops early (the last event before the stream ends).
    Stopped(StopReason),
}

/// What a before-tool hook decides for one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolDecision {
    /// Run the call as the model made it.
    Approve,
    /// Do not run it; the model sees this message as the call's error result.
    Deny(String),
    /// Run it with these arguments instead (a JSON object; anything else is an error result).
    Rewrite(Value),
}

/// What an after-turn hook decides.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AfterTurn {
    /// Go on as the loop would: the next turn after tool calls, the end after an answer.
    Continue,
    /// End the run now, successfully ([`StopReason::Hook`]).
    Stop,
    /// Send this request next (its messages become the conversation; its `tools` are replaced
    /// by the registry's offer as always, its `tool_choice` applies to that turn only). After
    /// an answer without tool calls this continues the run.
    Edit(Box<ChatRequest>),
}

/// What an after-turn hook is told.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TurnReport {
    /// The turn number, from 1.
    pub turn: usize,
    /// What the model answered.
    pub response: ChatResponse,
    /// The results sent back, in call order (empty after an answer).
    pub results: Vec<ToolResult>,
    /// Tokens used by the run so far (summed over turns).
    pub usage: Usage,
    /// Time since the run started.
    pub elapsed: Duration,
    /// The request the loop would send next (the conversation so far).
    pub next: ChatRequest,
}

/// A condition that ends a run early, checked after each turn that would be followed by
/// another (a turn in flight is never cut).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StopWhen {
    /// A call of this tool was made (it ran; its result is in the history).
    ToolCalled(String),
    /// Input plus output tokens over all turns reached this many.
    TokenBudget(u64),
    /// This much time passed since the run started.
    TimeBudget(Duration),
}

/// Why a run stopped before the model's final answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StopReason {
    /// A call of this tool was made.
    ToolCalled(String),
    /// The token budget is spent.
    TokenBudget {
        /// Tokens used.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The time budget is spent.
    TimeBudget {
        /// Time since the run started.
        elapsed: Duration,
        /// The budget.
        budget: Duration,
    },
    /// The after-turn hook said stop.
    Hook,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ToolCalled(name) => write!(f, "the tool {name:?} was called"),
            Self::TokenBudget { used, budget } => {
                write!(f, "{used} tokens used of a budget of {budget}")
            }
            Self::TimeBudget { elapsed, budget } => {
                write!(f, "{elapsed:.1?} passed of a budget of {budget:?}")
            }
            Self::Hook => f.write_str("the after-turn hook said stop"),
        }
    }
}

/// The end of a successful run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// The model's final answer (a turn without tool calls), or its last turn when the run
    /// was stopped.
    pub response: ChatResponse,
    /// The whole conversation: the request's messages plus every turn and result.
    pub messages: Vec<Message>,
    /// How many turns ran.
    pub turns: usize,
    /// The provider that answered.
    pub provider: ProviderKind,
    /// Why the run stopped before a final answer, if it did.
    pub stopped: Option<StopReason>,
}

type BeforeToolFn = dyn Fn(ToolCall) -> BoxFuture<'static, ToolDecision> + Send + Sync;
type AfterTurnFn = dyn Fn(TurnReport) -> BoxFuture<'static, AfterTurn> + Send + Sync;

/// A hook closure; its `Debug` says only that it is set.
struct Hook<F: ?Sized>(Arc<F>);

impl<F: ?Sized> Clone for Hook<F> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<F: ?Sized> fmt::Debug for Hook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hook>")
    }
}

/// How an agent sends the tools registered deferred ([`Tool::deferred`]) or offered deferred
/// ([`ToolSelection::with_deferred_toolset`]), so a registry of thousands of tools sends only
/// the few the model asks for. Tools that are not deferred are always sent.
///
/// Deferred loading works on every provider. With [`DeferredLoading::Registry`] (the default)
/// the agent searches its own registry; with [`DeferredLoading::Provider`] it uses the
/// provider's tool search where the provider has one. See the "Deferred loading" section of
/// `docs/hosted.md` for when to choose which.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> toolwire::Result<()> {
/// use serde_json::json;
/// use toolwire::agent::{Agent, DeferredLoading};
/// use toolwire::mock::{MockReply, MockServer, Script};
/// use toolwire::tools::{SEARCH_TOOL_NAME, Tool, ToolRegistry};
/// use toolwire::{ChatRequest, Client, Message, ProviderKind, ToolCall, ToolDefinition};
///
/// let registry = ToolRegistry::new();
/// for (name, description) in [
///     ("jira_create_ticket", "Create a ticket in Jira"),
///     ("slack_send_message", "Send a message to a Slack channel"),
/// ] {
///     let definition = ToolDefinition::new(name, description)?;
///     let tool = Tool::from_fn(definition, |_| async { Ok(json!("done")) });
///     registry.register(tool.deferred())?;
/// }
/// // A mock model: a search, a call of the tool it found, an answer.
/// let script = Script::new()
///     .then(MockReply::tool_calls([ToolCall::new("c1", SEARCH_TOOL_NAME, r#"{"query":"jira ticket"}"#)]))
///     .then(MockReply::tool_calls([ToolCall::new("c2", "jira_create_ticket", "{}")]))
///     .then(MockReply::text("Opened."));
/// let server = MockServer::start(ProviderKind::OpenAi, script).await?;
/// let client = Client::builder(ProviderKind::OpenAi).base_url(server.url()).build()?;
///
/// let agent = Agent::new(client, registry).with_deferred_loading(DeferredLoading::Registry);
/// let request = ChatRequest::new("any-model", vec![Message::user("Open a Jira ticket")]);
/// let outcome = agent.run(request).finish().await?;
/// assert_eq!(outcome.response.text.as_deref(), Some("Opened."));
/// let sent = |i: usize| -> Vec<String> {
///     let tools = server.requests()[i].body["tools"].as_array().cloned().unwrap_or_default();
///     tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned()).collect()
/// };
/// assert_eq!(sent(0), [SEARCH_TOOL_NAME]);
/// assert_eq!(sent(1), [SEARCH_TOOL_NAME, "jira_create_ticket"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeferredLoading {
    /// The agent's own search, the same on every provider. Deferred tools are not sent; the
    /// agent offers one more tool, `search_tools` ([`SEARCH_TOOL_NAME`]: a `query` string
    /// and an optional `limit`), that it runs itself over the registry's deferred tools
    /// ([`ToolRegistry::search`]) and whose result lists the matches by name and description.
    /// The tools found are sent from the next step on, and stay for the rest of the run.
    ///
    /// A deferred tool the model calls without having found it (its name is in the history,
    /// or the prompt) still runs: it is registered, and its arguments are checked against its
    /// schema like any call's. It is sent from the next step on too, as are deferred tools
    /// called earlier in the conversation the run continues. A registered tool named
    /// `search_tools` beside deferred tools is an [`Error::Input`] when the run starts.
    #[default]
    Registry,
    /// The provider's own tool search, where the provider has one: every tool is sent, the
    /// deferred ones with [`ToolDefinition::defer_loading`] set, with the hosted
    /// [`HostedTool::ToolSearch`] added to the request; the provider finds and loads tools
    /// itself (its search shows in the response's `hosted_calls`). Whether the provider has
    /// tool search is asked of the provider once per run: it is asked to encode a request with
    /// one deferred tool and tool search (Anthropic and OpenAI Responses can). On a provider
    /// without it, the run uses [`DeferredLoading::Registry`].
    Provider,
}

/// Runs conversations with tools on one provider.
#[derive(Debug, Clone)]
pub struct Agent {
    client: Client,
    registry: ToolRegistry,
    selection: ToolSelection,
    max_turns: usize,
    early_start: bool,
    before_tool: Option<Hook<BeforeToolFn>>,
    after_turn: Option<Hook<AfterTurnFn>>,
    hook_timeout: Duration,
    stop_when: Vec<StopWhen>,
    model: Option<String>,
    deferred: DeferredLoading,
}

impl Agent {
    /// An agent offering `registry`'s tools (the default [`ToolSelection`]) for at most
    /// [`DEFAULT_MAX_TURNS`] turns, starting calls as soon as they are final, with no hooks.
    pub fn new(client: Client, registry: ToolRegistry) -> Self {
        Self {
            client,
            registry,
            selection: ToolSelection::default(),
            max_turns: DEFAULT_MAX_TURNS,
            early_start: true,
            before_tool: None,
            after_turn: None,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            stop_when: Vec::new(),
            model: None,
            deferred: DeferredLoading::default(),
        }
    }

    /// An agent on the provider a `PROVIDER/MODEL` string names (`gemini/gemini-2.5-flash`),
    /// with that model for [`Agent::prompt`]: the router's client for that provider.
    ///
    /// ```no_run
    /// use toolwire::agent::Agent;
    /// use toolwire::client::Router;
    /// use toolwire::tools::ToolRegistry;
    ///
    /// # async fn run() -> toolwire::Result<()> {
    /// let router = Router::new();
    /// let agent = Agent::routed(&router, "anthropic/claude-haiku-4-5", ToolRegistry::new())?;
    /// println!("{}", agent.prompt("What can you do?").await?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn routed(router: &Router, model: &str, registry: ToolRegistry) -> Result<Self> {
        let (client, name) = router.route(model)?;
        Ok(Self::new(client, registry).with_model(name))
    }

    /// The model [`Agent::prompt`] asks (the provider's default model when none is set).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The one-shot case: asks `text` as one user message, runs the tools the model calls, and
    /// returns the final answer's text (empty when the model answered with none). The model is
    /// [`Agent::with_model`]'s, else the provider's default one. A run a stop condition or hook
    /// ended returns its last turn's text; [`Agent::run`] tells the two apart.
    pub async fn prompt(&self, text: impl Into<String>) -> Result<String> {
        let model = match &self.model {
            Some(model) => model.clone(),
            None => crate::providers::builtin(self.provider())
                .map(|b| b.default_model.to_owned())
                .ok_or_else(|| {
                    Error::input(
                        "model",
                        format!(
                            "{} has no default model: set one with Agent::with_model",
                            self.provider()
                        ),
                    )
                })?,
        };
        let outcome = self
            .run(ChatRequest::new(model, vec![Message::user(text.into())]))
            .finish()
            .await?;
        Ok(outcome.response.text.unwrap_or_default())
    }

    /// Which tools are offered (role, toolsets).
    pub fn with_selection(mut self, selection: ToolSelection) -> Self {
        self.selection = selection;
        self
    }

    /// How deferred tools are sent ([`DeferredLoading::Registry`] unless set).
    pub fn with_deferred_loading(mut self, deferred: DeferredLoading) -> Self {
        self.deferred = deferred;
        self
    }

    /// The most model turns one run may take (at least 1).
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns.max(1);
        self
    }

    /// Whether calls start as soon as they are final (the default) or only once their turn
    /// has ended (nothing runs from a turn that is later cut short).
    pub fn with_early_start(mut self, early: bool) -> Self {
        self.early_start = early;
        self
    }

    /// Asks `hook` before each runnable call runs: approve, deny or rewrite. Calls of a turn
    /// are asked concurrently (a hook that asks a person one at a time serializes itself).
    pub fn before_tool<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolDecision> + Send + 'static,
    {
        self.before_tool = Some(Hook(Arc::new(move |call| hook(call).boxed())));
        self
    }

    /// Asks `hook` after each turn (its results appended): continue, stop or edit the next
    /// request.
    pub fn after_turn<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(TurnReport) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AfterTurn> + Send + 'static,
    {
        self.after_turn = Some(Hook(Arc::new(move |report| hook(report).boxed())));
        self
    }

    /// How long a hook may take before it counts as failed ([`DEFAULT_HOOK_TIMEOUT`]).
    pub fn with_hook_timeout(mut self, timeout: Duration) -> Self {
        self.hook_timeout = timeout;
        self
    }

    /// Adds a stop condition (any one that holds stops the run).
    pub fn with_stop(mut self, condition: StopWhen) -> Self {
        self.stop_when.push(condition);
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
    pub fn run(&self, mut request: ChatRequest) -> AgentStream {
        // The conversation lives in one place; each turn's request copies it (a long
        // conversation is not held three times).
        let shared = Arc::new(Shared {
            events: Mutex::new(VecDeque::new()),
            messages: Mutex::new(std::mem::take(&mut request.messages)),
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

/// What one turn offers.
struct Offer {
    /// The tools to send.
    tools: Vec<ToolDefinition>,
    /// The registry offers some tools deferred.
    deferred: bool,
    /// The agent's search tool is among `tools`.
    searching: bool,
}

/// The registry's offer for this request (deferred tools as `provider_search` says, see
/// [`DeferredLoading`]), less the tools whose schema the provider cannot take (an MCP
/// server's recursive schema on Gemini, say): each is left out with a warning naming the tool
/// and the reason, and the turn goes on with the others.
fn offered(
    agent: &Agent,
    request: &ChatRequest,
    provider_search: bool,
    loaded: &Loaded,
) -> Result<Offer> {
    let provider = agent.client.provider();
    // Of the deferred tools, only those to send are copied (a few out of thousands).
    let (all, deferred) = agent.registry.offer_deferred(&agent.selection, |name| {
        provider_search || loaded.names.contains(name)
    });
    let searching = deferred && !provider_search;
    let mut tools = if searching {
        if all.iter().any(|t| t.name == SEARCH_TOOL_NAME)
            || agent
                .registry
                .is_deferred(SEARCH_TOOL_NAME, &agent.selection)
        {
            return Err(Error::input(
                "tools",
                format!(
                    "a registered tool is named {SEARCH_TOOL_NAME:?}, the name of the agent's \
                     search over deferred tools: rename it, or register no tool deferred"
                ),
            ));
        }
        registry_offer(all, loaded)
    } else {
        all
    };
    tools.retain(
        |tool| match provider.encode_parameters(tool, request.schema_mode) {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(
                    "gen_ai.provider.name" = provider.info().kind.name(),
                    "gen_ai.tool.name" = tool.name.as_str(),
                    reason = %e,
                    "tool left out of the request: the provider cannot take its schema"
                );
                false
            }
        },
    );
    Ok(Offer {
        tools,
        deferred,
        searching,
    })
}

/// [`DeferredLoading::Registry`]'s tools: those not deferred, the search tool, then the
/// deferred tools loaded so far (the only deferred ones in `all`) in the order they were
/// loaded, sent as loaded tools, without `defer_loading`.
fn registry_offer(all: Vec<ToolDefinition>, loaded: &Loaded) -> Vec<ToolDefinition> {
    let mut tools = Vec::new();
    let mut waiting: HashMap<String, ToolDefinition> = HashMap::new();
    for tool in all {
        if tool.defer_loading {
            waiting.insert(tool.name.clone(), tool);
        } else {
            tools.push(tool);
        }
    }
    tools.push(search_tool_definition());
    for name in &loaded.order {
        if let Some(mut tool) = waiting.remove(name) {
            tool.defer_loading = false;
            tools.push(tool);
        }
    }
    tools
}

/// The deferred tools a run has loaded (found by search or called), in the order they came.
#[derive(Default)]
struct Loaded {
    order: Vec<String>,
    names: HashSet<String>,
}

impl Loaded {
    fn add(&mut self, name: &str) {
        if self.names.insert(name.to_owned()) {
            self.order.push(name.to_owned());
        }
    }
}

/// Whether `provider` takes a deferred tool with its own tool search for `model`: asked by
/// encoding a one-tool request (no IO; the provider's own rules decide).
fn has_tool_search(provider: &dyn Provider, model: &str) -> bool {
    let Ok(tool) = ToolDefinition::new("toolwire_probe", "A probe.") else {
        return false;
    };
    let mut probe = ChatRequest::new(model, vec![Message::user("probe")]);
    probe.tools = vec![tool.with_defer_loading(true)];
    probe.hosted_tools = vec![HostedTool::ToolSearch];
    provider.encode(&probe, true).is_ok()
}

/// The registry holding the run's `search_tools`, whose handler searches the agent's registry
/// and loads what it finds into `loaded`.
fn search_registry(agent: &Agent, loaded: Arc<Mutex<Loaded>>) -> Result<ToolRegistry> {
    let registry = agent.registry.clone();
    let selection = agent.selection.clone();
    let search = ToolRegistry::new().with_max_result_bytes(agent.registry.max_result_bytes());
    let tool = Tool::from_fn(search_tool_definition(), move |args: Value| {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        let limit = (args.get("limit").and_then(Value::as_u64)).map_or(DEFAULT_SEARCH_LIMIT, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
        let found = registry.search(query, limit, &selection);
        {
            let mut loaded = lock(&loaded);
            for m in &found {
                loaded.add(&m.name);
            }
        }
        let message = if found.is_empty() {
            format!("No tool matched {query:?}; try other words.")
        } else {
            format!(
                "{} found; call them from your next step on.",
                match found.len() {
                    1 => "1 tool".to_owned(),
                    n => format!("{n} tools"),
                }
            )
        };
        let tools: Vec<Value> = (found.iter())
            .map(|m| json!({"name": m.name, "description": m.description}))
            .collect();
        let output = json!({"tools": tools, "message": message});
        async move { Ok(output) }
    })
    .with_source("agent");
    search.register(tool)?;
    Ok(search)
}

async fn drive(
    agent: Agent,
    mut request: ChatRequest,
    shared: Arc<Shared>,
) -> Result<AgentOutcome> {
    let provider = agent.provider();
    let started = Instant::now();
    carry_over(&mut lock(&shared.messages), provider);
    let mut choice = request.tool_choice.take();
    let mut usage = Usage::default();
    let provider_search = agent.deferred == DeferredLoading::Provider
        && has_tool_search(agent.client.provider(), &request.model);
    // Deferred tools called earlier in the conversation are loaded from the start.
    let loaded = Arc::new(Mutex::new(Loaded::default()));
    for message in lock(&shared.messages).iter() {
        if let Message::Assistant(a) = message {
            a.tool_calls.iter().for_each(|c| lock(&loaded).add(&c.name));
        }
    }
    let search = search_registry(&agent, Arc::clone(&loaded))?;
    for turn in 1..=agent.max_turns {
        let offer = offered(&agent, &request, provider_search, &lock(&loaded))?;
        request.tools = offer.tools;
        if provider_search
            && offer.deferred
            && !request.hosted_tools.contains(&HostedTool::ToolSearch)
        {
            request.hosted_tools.push(HostedTool::ToolSearch);
        }
        request.tool_choice = choice.take().filter(|_| !request.tools.is_empty());
        request.messages = lock(&shared.messages).clone();

        let span = tracing::info_span!(
            "toolwire.agent.turn",
            "gen_ai.provider.name" = provider.name(),
            "gen_ai.request.model" = request.model.as_str(),
            "toolwire.agent.turn" = turn,
            "gen_ai.response.model" = tracing::field::Empty,
            "gen_ai.response.finish_reasons" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let searching = offer.searching.then_some(&search);
        let ran = run_turn(&agent, &request, &shared, turn, searching)
            .instrument(span.clone())
            .await;
        // Sent: the next turn copies the conversation again.
        request.messages = Vec::new();
        let (response, results) = match ran {
            Ok(ran) => ran,
            Err(e) => {
                span.record("error.type", e.kind_name());
                return Err(e);
            }
        };
        crate::client::record_response(&span, &response);
        if let Some(u) = response.usage {
            usage.input_tokens = usage.input_tokens.saturating_add(u.input_tokens);
            usage.output_tokens = usage.output_tokens.saturating_add(u.output_tokens);
        }
        let called: Vec<String> = response.tool_calls.iter().map(|c| c.name.clone()).collect();
        // A deferred tool called without being found is sent from the next step on.
        if offer.searching {
            for name in &called {
                if agent.registry.is_deferred(name, &agent.selection) {
                    lock(&loaded).add(name);
                }
            }
        }

        let mut assistant = AssistantMessage::from(response.clone());
        assistant
            .extra
            .insert(PROVIDER_MARK.into(), Value::String(provider.name().into()));
        {
            let mut messages = lock(&shared.messages);
            messages.push(Message::Assistant(assistant));
            messages.extend(results.iter().cloned().map(Message::Tool));
        }
        shared.emit(AgentEvent::TurnDone {
            turn,
            response: response.clone(),
            results: results.clone(),
        });

        // A paused turn (the provider's own tool loop hit its limit: Anthropic `pause_turn`)
        // goes back as it is, the assistant turn last, and the provider continues it.
        let mut go_on =
            !response.tool_calls.is_empty() || response.finish_reason == FinishReason::Pause;
        let outcome = |response: ChatResponse, stopped: Option<StopReason>| AgentOutcome {
            response,
            messages: lock(&shared.messages).clone(),
            turns: turn,
            provider,
            stopped,
        };
        if let Some(hook) = &agent.after_turn {
            let mut next = request.clone();
            next.messages = lock(&shared.messages).clone();
            next.tool_choice = None;
            let report = TurnReport {
                turn,
                response: response.clone(),
                results,
                usage,
                elapsed: started.elapsed(),
                next,
            };
            let hook = Arc::clone(&hook.0);
            match ask(move || hook(report), agent.hook_timeout).await {
                Ok(AfterTurn::Continue) => {}
                Ok(AfterTurn::Stop) => {
                    shared.emit(AgentEvent::Stopped(StopReason::Hook));
                    return Ok(outcome(response, Some(StopReason::Hook)));
                }
                Ok(AfterTurn::Edit(next)) => {
                    let next = *next;
                    *lock(&shared.messages) = next.messages.clone();
                    choice = next.tool_choice.clone();
                    request = next;
                    go_on = true;
                }
                Err(message) => shared.emit(AgentEvent::HookFailed {
                    hook: "after_turn",
                    message,
                }),
            }
        }
        if !go_on {
            return Ok(outcome(response, None));
        }
        if let Some(reason) = stop_reason(&agent.stop_when, &called, usage, started.elapsed()) {
            shared.emit(AgentEvent::Stopped(reason.clone()));
            return Ok(outcome(response, Some(reason)));
        }
    }
    Err(Error::MaxTurns(agent.max_turns))
}

/// The first stop condition that holds after a turn.
fn stop_reason(
    conditions: &[StopWhen],
    called: &[String],
    usage: Usage,
    elapsed: Duration,
) -> Option<StopReason> {
    let used = usage.input_tokens.saturating_add(usage.output_tokens);
    conditions.iter().find_map(|c| match c {
        StopWhen::ToolCalled(name) if called.contains(name) => {
            Some(StopReason::ToolCalled(name.clone()))
        }
        StopWhen::TokenBudget(budget) if used >= *budget => Some(StopReason::TokenBudget {
            used,
            budget: *budget,
        }),
        StopWhen::TimeBudget(budget) if elapsed >= *budget => Some(StopReason::TimeBudget {
            elapsed,
            budget: *budget,
        }),
        _ => None,
    })
}

/// Streams one turn, starting each call as soon as it is final (or, without early start, when
/// the turn has ended); returns the response (its calls marked with the hook's decisions) and
/// the results in call order.
async fn run_turn(
    agent: &Agent,
    request: &ChatRequest,
    shared: &Shared,
    turn: usize,
    search: Option<&ToolRegistry>,
) -> Result<(ChatResponse, Vec<ToolResult>)> {
    let mut ids = CallIds::new(&request.messages, turn);
    let mut stream = agent.client.stream(request).await?;
    let mut running = FuturesUnordered::new();
    let mut started: HashMap<usize, String> = HashMap::new();
    let mut done: HashMap<usize, Ran> = HashMap::new();
    loop {
        tokio::select! {
            Some((i, ran)) = running.next(), if !running.is_empty() => {
                done.insert(i, ran);
            }
            event = stream.next() => {
                let Some(event) = event else { break };
                let event = event?;
                let start = match &event {
                    StreamEvent::ToolCallComplete { index, call } if agent.early_start => {
                        Some((*index, call.clone()))
                    }
                    _ => None,
                };
                shared.emit(AgentEvent::Model(event));
                if let Some((i, mut call)) = start
                    && !started.contains_key(&i)
                {
                    ids.fix(&mut call);
                    started.insert(i, call.id.clone());
                    running.push(run_call(agent, i, call, shared, search));
                }
            }
        }
    }
    let mut response = stream.finish().await?;
    ids.reserve(&response.tool_calls);
    for (i, call) in response.tool_calls.iter_mut().enumerate() {
        match started.get(&i) {
            Some(id) => call.id.clone_from(id),
            None => {
                ids.fix(call);
                started.insert(i, call.id.clone());
                running.push(run_call(agent, i, call.clone(), shared, search));
            }
        }
    }
    while let Some((i, ran)) = running.next().await {
        done.insert(i, ran);
    }
    let mut results = Vec::with_capacity(response.tool_calls.len());
    for (i, call) in response.tool_calls.iter_mut().enumerate() {
        if let Some(ran) = done.remove(&i) {
            if let Some(mark) = ran.mark {
                call.extra.insert(HOOK_MARK.to_owned(), mark);
            }
            results.push(ran.result);
        }
    }
    Ok((response, results))
}

/// One call's end: its result, and the hook's decision when it was not a plain approval.
struct Ran {
    result: ToolResult,
    mark: Option<Value>,
}

/// Asks the before-tool hook (runnable calls only), then runs the call (`search_tools` on
/// `search` when the turn offered it, every other call on the agent's registry).
async fn run_call(
    agent: &Agent,
    index: usize,
    call: ToolCall,
    shared: &Shared,
    search: Option<&ToolRegistry>,
) -> (usize, Ran) {
    let mut to_run = call.clone();
    let mut mark = None;
    if let (true, Some(hook)) = (call.is_complete(), &agent.before_tool) {
        let hook = Arc::clone(&hook.0);
        let asked = call.clone();
        let refused = match ask(move || hook(asked), agent.hook_timeout).await {
            Ok(ToolDecision::Approve) => None,
            Ok(ToolDecision::Deny(message)) => {
                shared.emit(AgentEvent::ToolDenied {
                    call: call.clone(),
                    message: message.clone(),
                });
                let mark = json!({"decision": "denied", "message": message});
                Some((ToolResult::error(&call, message), mark))
            }
            Ok(ToolDecision::Rewrite(arguments)) => {
                let mut rewritten =
                    ToolCall::new(call.id.clone(), call.name.clone(), arguments.to_string());
                rewritten.extra = call.extra.clone();
                shared.emit(AgentEvent::ToolRewritten {
                    call: rewritten.clone(),
                    original: call.raw_arguments.clone(),
                });
                mark = Some(json!({"decision": "rewritten", "arguments": arguments}));
                to_run = rewritten;
                None
            }
            Err(message) => {
                shared.emit(AgentEvent::HookFailed {
                    hook: "before_tool",
                    message: message.clone(),
                });
                let text = format!("The tool was not run: {message}.");
                let mark = json!({"decision": "failed", "message": message});
                Some((ToolResult::error(&call, text), mark))
            }
        };
        if let Some((result, mark)) = refused {
            shared.emit(AgentEvent::ToolFinished(result.clone()));
            let mark = Some(mark);
            return (index, Ran { result, mark });
        }
    }
    shared.emit(AgentEvent::ToolStarted(to_run.clone()));
    let (reporter, mut reports) = Reporter::channel();
    let (questions, mut asked) = crate::tools::Questions::channel();
    let reporter = reporter.with_questions(questions);
    let everything = ToolSelection::default();
    let (registry, selection) = match search {
        Some(search) if to_run.name == SEARCH_TOOL_NAME => (search, &everything),
        _ => (&agent.registry, &agent.selection),
    };
    let running = registry.dispatch_reporting(&to_run, selection, reporter);
    let mut running = std::pin::pin!(running);
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            update = reports.next() => emit_update(shared, &to_run, update),
            Some(asked) = asked.recv() => shared.emit(AgentEvent::InputRequested {
                call_id: to_run.id.clone(),
                name: to_run.name.clone(),
                request: asked.request,
                reply: asked.reply,
            }),
        }
    };
    // What came after the last update (the final report of a fast handler) still goes out,
    // before the result.
    emit_update(shared, &to_run, reports.take());
    shared.emit(AgentEvent::ToolFinished(result.clone()));
    (index, Ran { result, mark })
}

/// One coalesced update of a running call as events: its summary first, then its progress.
fn emit_update(shared: &Shared, call: &ToolCall, update: Update) {
    if let Some(summary) = update.summary {
        shared.emit(AgentEvent::ToolSummary {
            call_id: call.id.clone(),
            name: call.name.clone(),
            summary,
        });
    }
    if let Some(p) = update.progress {
        shared.emit(AgentEvent::ToolProgress {
            call_id: call.id.clone(),
            name: call.name.clone(),
            progress: p,
        });
    }
}

/// Runs a hook, turning a panic (while building its future or while it runs) or a timeout
/// into a message.
async fn ask<T>(
    hook: impl FnOnce() -> BoxFuture<'static, T>,
    timeout: Duration,
) -> std::result::Result<T, String> {
    let running = AssertUnwindSafe(async move { hook().await }).catch_unwind();
    match tokio::time::timeout(timeout, running).await {
        Err(_) => Err(format!("the hook did not answer within {timeout:?}")),
        Ok(Err(panic)) => {
            let text = if let Some(s) = panic.downcast_ref::<&str>() {
                (*s).to_owned()
            } else if let Some(s) = panic.downcast_ref::<String>() {
                s.clone()
            } else {
                "a panic without a message".to_owned()
            };
            Err(format!("the hook panicked: {text}"))
        }
        Ok(Ok(value)) => Ok(value),
    }
}

/// Ids toolwire minted are unique in one response only; a later turn's `call_1` would collide
/// with an earlier one in the history, so such ids get the turn number appended. Calls are
/// fixed one by one as they start (ids of calls not seen yet cannot be known then).
struct CallIds {
    history: HashSet<String>,
    taken: HashSet<String>,
    turn: usize,
}

impl CallIds {
    fn new(history: &[Message], turn: usize) -> Self {
        let history: HashSet<String> = history
            .iter()
            .flat_map(|m| match m {
                Message::Assistant(a) => a.tool_calls.iter().map(|c| c.id.clone()).collect(),
                Message::Tool(r) => vec![r.call_id.clone()],
                _ => Vec::new(),
            })
            .collect();
        let taken = history.clone();
        Self {
            history,
            taken,
            turn,
        }
    }

    /// Every id of the final response is taken.
    fn reserve(&mut self, calls: &[ToolCall]) {
        self.taken.extend(calls.iter().map(|c| c.id.clone()));
    }

    fn fix(&mut self, call: &mut ToolCall) {
        if call.has_synthetic_id() && self.history.contains(&call.id) {
            let base = format!("{}_t{}", call.id, self.turn);
            let mut id = base.clone();
            let mut n = 2;
            while self.taken.contains(&id) {
                id = format!("{base}_{n}");
                n += 1;
            }
            call.id = id;
        }
        self.taken.insert(call.id.clone());
    }
}

enum End {
    Running,
    Done(Result<Box<AgentOutcome>>),
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
            End::Done(Ok(outcome)) => Ok(*outcome),
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
                        this.end = End::Done(result.map(Box::new));
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
                && let Err(e) = result
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
