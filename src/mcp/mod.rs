//! Tools from any Model Context Protocol server, on the official Rust SDK ([`rmcp`]).
//!
//! A [`Connection`] talks to one MCP server, started as a child process and spoken to over its
//! stdio ([`Endpoint::command`]; the child is killed when the connection goes) or reached over
//! streamable HTTP ([`Endpoint::url`]). [`Connection::tools`] lists the server's tools with
//! their descriptions, input schemas and annotations; [`Connection::call`] calls one and maps
//! the answer to toolwire's result shape: MCP `content` becomes the result's content parts
//! ([`Part`]), `structuredContent` its `output`, and `isError` an error result.
//!
//! [`Connection::register`] puts the tools into a [`ToolRegistry`], where the agent offers
//! them like any other tool: each call runs with the registry's timeout, and a call the
//! registry stops (timeout, a dropped run) is cancelled on the server
//! (`notifications/cancelled`). The annotations (read-only, destructive) are kept
//! ([`ToolRegistry::annotations`]), so an agent's `before_tool` hook can ask a person before a
//! destructive tool runs. [`Connection::follow`] keeps the registry in step when the server
//! announces `notifications/tools/list_changed`.
//!
//! A call whose caller listens for progress (the agent always does; directly,
//! [`Connection::call_reporting`]) carries a progress token, and the server's
//! `notifications/progress` for it go to the call's [`Reporter`]: they become the agent's
//! `ToolProgress` events, for the people waiting, never for the model.
//!
//! A call the server runs as a task (the Tasks extension) is followed to its end within the
//! same call: `tasks/get` until it ends, its input requests answered with `tasks/update`, and
//! `tasks/cancel` when the caller gives up. A server's input request (elicitation) goes to the
//! connection's [`InputHandler`], or else to the running call's reporter, which the agent turns
//! into `AgentEvent::InputRequested`.
//!
//! MCP servers ship schemas that some providers refuse. The agent lowers every tool's schema
//! for its provider before each request; a tool the provider cannot take is left out of that
//! request with a reason (a `tracing` warning), and the turn goes on with the others.
//! [`Connection::tools`] with [`McpTool::lowered_for`] shows, per tool, what a provider will
//! receive or why it is left out (`toolwire mcp tools --provider P`).
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use toolwire::mcp::{Connection, Endpoint, Mount};
//! use toolwire::tools::ToolRegistry;
//!
//! let server = Connection::connect(&Endpoint::command(["python3", "server.py"])?).await?;
//! let registry = ToolRegistry::new();
//! let mount = Mount::new("files");
//! let names = server.register(&registry, &mount).await?;
//! println!("registered {names:?}");
//! let _follow = server.follow(registry.clone(), mount);
//! # Ok(()) }
//! ```

mod auth;
mod bounded;
mod task;

pub use crate::tools::{InputAnswer, InputReply, InputRequest, check_answer};
pub use auth::{LoginOptions, TOKEN_DIR_ENV, TokenFile, default_token_dir, login};

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientConfig,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestId, ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::tools::{Progress, Reporter, Tool, ToolAnnotations, ToolError, ToolRegistry, ToolReply};
use crate::types::{Part, ToolDefinition};

/// How long connecting (starting the child or reaching the URL, and the MCP handshake) may take
/// unless set otherwise: a server that hangs is an error, not a wait without end.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest message toolwire reads from an MCP server (16 MiB): a tool result, a tool list.
/// A longer one is cut off as it arrives and the request it answers fails with a size error
/// (over stdio, and over streamable HTTP through the SDK's response and event size limits).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of a child's standard error is kept to explain a failure.
const STDERR_TAIL_BYTES: usize = 4096;

/// Where an MCP server is: a command to start (spoken to over its stdio) or a URL (streamable
/// HTTP).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Endpoint {
    /// A program and its arguments, started as a child process.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable HTTP endpoint (`http://127.0.0.1:9000/mcp`), with the headers sent on
    /// every request (static auth: [`Endpoint::with_header`], [`Endpoint::with_bearer`]).
    Url {
        /// The URL.
        url: String,
        /// Headers sent with every request; their values are secret (never logged or shown).
        headers: Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
        /// The bearer token sent as `Authorization: Bearer ...` (secret).
        bearer: Option<Secret>,
        /// The saved OAuth login whose access token is sent (refreshed when it expires).
        login: Option<TokenFile>,
    },
}

/// A secret string (a token): its `Debug` shows no part of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

type AskFn = dyn Fn(InputRequest) -> std::pin::Pin<Box<dyn Future<Output = InputAnswer> + Send>>
    + Send
    + Sync;

/// Who answers a server's input requests ([`Connection::connect_asking`]): a hook like the
/// agent's approval hook, called with each [`InputRequest`] while the call that caused it
/// waits. A connection without one declines every request.
#[derive(Clone)]
pub struct InputHandler(Arc<AskFn>);

impl std::fmt::Debug for InputHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputHandler(..)")
    }
}

impl InputHandler {
    /// A handler that answers with `ask`.
    pub fn new<F, Fut>(ask: F) -> Self
    where
        F: Fn(InputRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = InputAnswer> + Send + 'static,
    {
        Self(Arc::new(move |request| Box::pin(ask(request))))
    }

    /// Declines every request (what a connection without a handler does).
    pub fn decline() -> Self {
        Self::new(|_| async { InputAnswer::Decline })
    }

    async fn ask(&self, request: InputRequest) -> InputAnswer {
        (self.0)(request).await
    }
}

impl Endpoint {
    /// A server started as `argv[0] argv[1..]`; errors when `argv` is empty.
    pub fn command<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Result<Self> {
        let mut argv = argv.into_iter().map(Into::into);
        let program = argv
            .next()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::input("command", "the MCP server command is empty"))?;
        Ok(Self::Command {
            program,
            args: argv.collect(),
        })
    }

    /// A server at this `http://` or `https://` URL; errors for anything else.
    pub fn url(url: impl Into<String>) -> Result<Self> {
        let url = url.into();
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(Error::input(
                "url",
                format!("MCP server URL {url:?} is not an http:// or https:// URL"),
            ));
        }
        Ok(Self::Url {
            url,
            headers: Vec::new(),
            bearer: None,
            login: None,
        })
    }

    /// Adds a header sent with every request to an HTTP server (an API key header); errors
    /// for a command endpoint, or a name or value HTTP does not allow. The value is marked
    /// sensitive and never shown.
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self> {
        use reqwest::header::{HeaderName, HeaderValue};
        let Self::Url { headers, .. } = &mut self else {
            return Err(Error::input(
                "header",
                "headers are for MCP servers reached by URL",
            ));
        };
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| Error::input("header", format!("{name:?} is not an HTTP header name")))?;
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            Error::input(
                "header",
                format!("the value of header {name:?} is not a valid HTTP header value"),
            )
        })?;
        value.set_sensitive(true);
        headers.push((header, value));
        Ok(self)
    }

    /// Sends `Authorization: Bearer <token>` with every request to an HTTP server; errors for
    /// a command endpoint.
    pub fn with_bearer(mut self, token: impl Into<String>) -> Result<Self> {
        let Self::Url { bearer, login, .. } = &mut self else {
            return Err(Error::input(
                "bearer",
                "a bearer token is for MCP servers reached by URL",
            ));
        };
        if login.is_some() {
            return Err(Error::input(
                "bearer",
                "a server is reached with a bearer token or an OAuth login, not both",
            ));
        }
        *bearer = Some(Secret::new(token));
        Ok(self)
    }

    /// Sends the access token of a saved OAuth login ([`login`]) with every request to an
    /// HTTP server, refreshing it when it expires and saving the new tokens back; errors for
    /// a command endpoint or one that already has a bearer token.
    pub fn with_login(mut self, file: TokenFile) -> Result<Self> {
        let Self::Url { bearer, login, .. } = &mut self else {
            return Err(Error::input(
                "login",
                "an OAuth login is for MCP servers reached by URL",
            ));
        };
        if bearer.is_some() {
            return Err(Error::input(
                "login",
                "a server is reached with a bearer token or an OAuth login, not both",
            ));
        }
        *login = Some(file);
        Ok(self)
    }

    /// [`Endpoint::with_bearer`] with the token read from the environment variable `var`;
    /// a variable that is unset or empty is an error naming it.
    pub fn with_bearer_env(self, var: &str) -> Result<Self> {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => self.with_bearer(token.trim()),
            _ => Err(Error::input(
                "bearer_env",
                format!("environment variable {var} (the bearer token) is not set"),
            )),
        }
    }

    /// How errors name the server: its command line or its URL.
    pub fn label(&self) -> String {
        match self {
            Self::Command { program, args } => {
                let mut line = program.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
            Self::Url { url, .. } => url.clone(),
        }
    }
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct McpTool {
    /// The server's own name for it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments (`inputSchema`), as the server sent it.
    pub input_schema: Value,
    /// The JSON Schema of its structured output (`outputSchema`), when it declares one: its
    /// `structuredContent` is checked against it when the tool runs from a registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What the tool says about its effects.
    pub annotations: ToolAnnotations,
}

impl McpTool {
    /// The canonical definition, named `name` (the server's name, or a prefixed one); errors
    /// when the name breaks the canonical name rule or the schema is not an object.
    pub fn definition(&self, name: &str) -> Result<ToolDefinition> {
        let definition = ToolDefinition::new(name, self.description.clone())?
            .with_parameters(self.input_schema.clone())?;
        match &self.output_schema {
            Some(schema) => definition.with_output_schema(schema.clone()),
            None => Ok(definition),
        }
    }

    /// The parameters schema `provider` will receive for this tool, or why it cannot take it
    /// (the reason the agent leaves it out of that provider's requests).
    pub fn lowered_for(&self, provider: &dyn Provider) -> std::result::Result<Value, String> {
        let definition = self.definition(&self.name).map_err(|e| e.to_string())?;
        provider
            .encode_parameters(&definition, None)
            .map_err(|e| e.to_string())
    }
}

/// A server's tool list: the tools toolwire can use and the ones it left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolListing {
    /// The tools, in the server's order.
    pub tools: Vec<McpTool>,
    /// The entries that are not a readable tool (no `inputSchema`, a wrong type), with why.
    pub left_out: Vec<LeftOut>,
}

/// One entry of a server's tool list that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LeftOut {
    /// Its `name`, or `#N` (its place in the list) when it has none.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// The most `tools/list` pages read before giving up on a server whose cursor never ends.
const MAX_TOOL_PAGES: usize = 1000;

/// A call's answer in toolwire's result shape: the output (MCP `structuredContent`), the parts
/// the model sees (MCP `content`), and whether the tool reported an error (`isError`, with its
/// text as the message).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct McpResult {
    /// `structuredContent`, or `null` when the server sent none.
    pub output: Value,
    /// Every content block, in order.
    pub content: Vec<Part>,
    /// Whether the tool reported an error.
    pub is_error: bool,
    /// For an error: its text content, joined.
    pub error: Option<String>,
}

impl McpResult {
    fn from_wire(name: &str, result: rmcp::model::CallToolResult) -> Self {
        let content: Vec<Part> = result
            .content
            .iter()
            .map(|block| {
                serde_json::to_value(block).map_or_else(|e| Part::text(e.to_string()), |v| part(&v))
            })
            .collect();
        let is_error = result.is_error == Some(true);
        let error = is_error.then(|| {
            let text: Vec<&str> = content.iter().filter_map(Part::as_text).collect();
            if text.is_empty() {
                format!("MCP tool {name:?} reported an error without a message")
            } else {
                text.join("\n")
            }
        });
        Self {
            output: result.structured_content.unwrap_or(Value::Null),
            content,
            is_error,
            error,
        }
    }

    /// As a handler's answer: a reply, or a failure with the message (the text content) and
    /// the output. A failure's parts are kept when it has more than text (an image of what
    /// went wrong); text alone is the message already, and is not repeated.
    fn into_reply(self) -> std::result::Result<ToolReply, ToolError> {
        if self.is_error {
            let message = self.error.unwrap_or_default();
            let media = self.content.iter().any(|p| p.as_text().is_none());
            let content = if media { self.content } else { Vec::new() };
            Err(ToolError::new(message)
                .with_output(self.output)
                .with_content(content))
        } else {
            Ok(ToolReply::new(self.output).with_content(self.content))
        }
    }
}

/// One MCP content block (as JSON) → a content part. Blocks with no part of their own (an
/// embedded text resource, a resource link, a kind this version does not know) become text
/// that says what they are, so nothing the server sent is dropped.
fn part(block: &Value) -> Part {
    let s = |k: &str| block.get(k).and_then(Value::as_str);
    match s("type") {
        Some("text") => Part::text(s("text").unwrap_or_default()),
        Some("image") => Part::image(
            s("mimeType").unwrap_or("image/png"),
            s("data").unwrap_or_default(),
        ),
        Some("audio") => Part::audio(
            s("mimeType").unwrap_or("audio/wav"),
            s("data").unwrap_or_default(),
        ),
        Some("resource") => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let rs = |k: &str| r.get(k).and_then(Value::as_str);
            let uri = rs("uri").unwrap_or_default();
            match (rs("text"), rs("blob")) {
                (Some(text), _) => Part::text(text),
                (None, Some(blob)) => {
                    let filename = uri.rsplit('/').next().unwrap_or(uri);
                    Part::file(
                        rs("mimeType").unwrap_or("application/octet-stream"),
                        blob,
                        filename,
                    )
                }
                (None, None) => Part::text(format!("resource {uri}")),
            }
        }
        Some("resource_link") => Part::text(format!(
            "resource link {:?}: {}",
            s("name").unwrap_or_default(),
            s("uri").unwrap_or_default()
        )),
        _ => Part::text(block.to_string()),
    }
}

/// How a server's tools go into a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mount {
    /// Put before each tool name, with `_` (`files` → `files_read`); `None` keeps the
    /// server's names.
    pub prefix: Option<String>,
    /// The source recorded for the tools (default `mcp:<name>`).
    pub source: String,
    /// The one role the tools are offered to; `None` for every role.
    pub role: Option<String>,
    /// How long a call may run (default: the registry's default).
    pub timeout: Option<Duration>,
}

impl Mount {
    /// Tools named `<name>_<tool>`, source `mcp:<name>`, offered to every role.
    pub fn new(name: &str) -> Self {
        Self {
            prefix: Some(name.to_owned()),
            source: format!("mcp:{name}"),
            role: None,
            timeout: None,
        }
    }

    /// The server's own names, source `mcp`.
    pub fn unprefixed() -> Self {
        Self {
            prefix: None,
            source: "mcp".to_owned(),
            role: None,
            timeout: None,
        }
    }

    /// Offers the tools to one role only.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// Sets the call timeout of every tool.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    fn name_of(&self, tool: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}_{tool}"),
            None => tool.to_owned(),
        }
    }
}

/// What toolwire does with the server's notifications: counts tool list changes and hands
/// `notifications/progress` to the reporter of the call that asked for them.
#[derive(Clone)]
struct Listener {
    changed: Arc<watch::Sender<u64>>,
    watched: Arc<Watched>,
    label: String,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // A token no running call holds (a late or invented one) is dropped.
        if let Some(reporter) = self.watched.reporter(&params.progress_token) {
            let mut progress = Progress::new(params.progress);
            progress.total = params.total;
            progress.message = params.message;
            reporter.report(progress);
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> std::result::Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.watched.answer(&self.label, request, None).await)
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        // Input requests are always taken: answered by the connection's handler, or declined.
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        info.capabilities.elicitation = Some(elicitation);
        // Calls the server runs as a task are followed to their end (`task.rs`).
        info.capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Map::new());
        info.client_info.name = "toolwire".to_owned();
        info.client_info.version = env!("CARGO_PKG_VERSION").to_owned();
        info
    }
}

/// The running calls that listen for progress or take questions. The SDK gives every request
/// a progress token of its own (in `_meta.progressToken`); such a call is watched under that
/// token, and the server's notifications carrying it go to that call's reporter.
#[derive(Default)]
struct Watched {
    calls: Mutex<HashMap<ProgressToken, WatchedCall>>,
    /// The connection's handler of input requests, if it was given one.
    asker: Option<InputHandler>,
}

/// One watched call: the tool (the server's name), the caller's call id when known, and its
/// reporter.
struct WatchedCall {
    tool: String,
    call_id: Option<String>,
    reporter: Reporter,
}

impl Watched {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, WatchedCall>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches the request with `token` for `reporter` until the guard is dropped.
    fn watch(
        self: &Arc<Self>,
        token: ProgressToken,
        tool: &str,
        call_id: Option<String>,
        reporter: Reporter,
    ) -> WatchGuard {
        let call = WatchedCall {
            tool: tool.to_owned(),
            call_id,
            reporter,
        };
        self.lock().insert(token.clone(), call);
        WatchGuard {
            watched: Arc::clone(self),
            token,
        }
    }

    fn reporter(&self, token: &ProgressToken) -> Option<Reporter> {
        self.lock().get(token).map(|c| c.reporter.clone())
    }

    /// Asks for the answer to an input request: the connection's handler when it has one,
    /// else the asking call's reporter: `asking` when the caller knows it (a task's input
    /// request), else the one running call that takes questions. Declined when nobody can
    /// answer; an accepted answer that does not fit the form is declined too, never sent.
    async fn answer(
        &self,
        label: &str,
        request: ElicitRequestParams,
        asking: Option<(String, Option<String>, Reporter)>,
    ) -> ElicitResult {
        let mut asked = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => InputRequest::new(
                label,
                message,
                serde_json::to_value(requested_schema).unwrap_or(Value::Null),
            ),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let mut asked = InputRequest::new(label, message, Value::Null);
                asked.url = Some(url);
                asked
            }
            // A kind of request this version does not know: nobody can answer it.
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        let schema = asked.schema.clone();
        // Which call asks: a request made outside a task does not say (it carries no
        // reference to the call that caused it), so the call is known when only one runs.
        let running = match asking {
            Some(call) => vec![call],
            None => self.running(),
        };
        if let [(tool, call_id, _)] = running.as_slice() {
            asked.tool = Some(tool.clone());
            asked.call_id.clone_from(call_id);
        }
        let askers: Vec<&Reporter> = running
            .iter()
            .map(|(_, _, reporter)| reporter)
            .filter(|r| r.takes_questions())
            .collect();
        let answer = match (&self.asker, askers.as_slice()) {
            (Some(asker), _) => asker.ask(asked).await,
            (None, [reporter]) => reporter.ask(asked).await,
            (None, []) => {
                tracing::info!(
                    server = label,
                    "MCP input request declined: nobody answers input requests"
                );
                InputAnswer::Decline
            }
            (None, several) => {
                tracing::warn!(
                    server = label,
                    calls = several.len(),
                    "MCP input request declined: several calls to this server are running and \
                     the request does not say which one asks"
                );
                InputAnswer::Decline
            }
        };
        match answer {
            InputAnswer::Accept(content) => match check_answer(&schema, &content) {
                Ok(()) => ElicitResult::new(ElicitationAction::Accept).with_content(content),
                Err(e) => {
                    // Content that does not fit the form is never sent.
                    tracing::warn!(
                        server = label,
                        error = %e,
                        "MCP input request declined: the answer does not fit the form"
                    );
                    ElicitResult::new(ElicitationAction::Decline)
                }
            },
            InputAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            InputAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// Answers the input requests a task listed (`input_required`) one by one, as [`Watched::answer`] does; keys in `asked` were
    /// answered before and are left out. A request for sampling or roots is an error:
    /// toolwire offers neither.
    async fn answer_all(
        &self,
        label: &str,
        requests: rmcp::model::InputRequests,
        asking: &(String, Option<String>, Reporter),
        asked: &mut std::collections::HashSet<String>,
    ) -> std::result::Result<rmcp::model::InputResponses, String> {
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            if !asked.insert(key.clone()) {
                continue;
            }
            let rmcp::model::InputRequest::Elicitation(request) = request else {
                return Err(format!(
                    "tool {:?} asks for something other than input from the person (sampling \
                     or roots), which toolwire does not offer",
                    asking.0
                ));
            };
            let result = self
                .answer(label, request.params, Some(asking.clone()))
                .await;
            responses.insert(key, serde_json::to_value(result).unwrap_or(Value::Null));
        }
        Ok(responses)
    }

    /// Every watched call: tool, call id, reporter.
    fn running(&self) -> Vec<(String, Option<String>, Reporter)> {
        self.lock()
            .values()
            .map(|c| (c.tool.clone(), c.call_id.clone(), c.reporter.clone()))
            .collect()
    }
}

/// A call's progress token; the call stops being watched when it is dropped (answered,
/// timed out or cancelled).
struct WatchGuard {
    watched: Arc<Watched>,
    token: ProgressToken,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.watched.lock().remove(&self.token);
    }
}

/// A request sent and not yet answered: dropped before its answer (a timeout, a cancelled
/// run), it tells the server with `notifications/cancelled`, so the server stops working on a
/// result nobody will read.
struct Pending {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "request abandoned by the caller".to_owned();
            let cancelled = CancelledNotificationParam::new(Some(id), Some(reason));
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}

/// What a connection's tools and its follower share: the peer to send requests to, how errors
/// name the server, and the tail of the child's standard error.
struct Shared {
    label: String,
    peer: Peer<RoleClient>,
    watched: Arc<Watched>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

impl Shared {
    fn error(&self, message: impl Into<String>) -> Error {
        Error::Mcp {
            server: self.label.clone(),
            message: message.into(),
        }
    }

    async fn tools(&self) -> Result<Vec<McpTool>> {
        let listing = self.listing().await?;
        for bad in &listing.left_out {
            tracing::warn!(
                server = self.label.as_str(),
                tool = bad.name.as_str(),
                reason = bad.reason.as_str(),
                "MCP tool left out"
            );
        }
        Ok(listing.tools)
    }

    /// Every page of `tools/list`, each tool read on its own: one the SDK cannot read (no
    /// `inputSchema`, a wrong type) is left out with the reason, and the others are kept.
    async fn listing(&self) -> Result<ToolListing> {
        use rmcp::model::{ListToolsRequest, PaginatedRequestParams};
        let mut listing = ToolListing::default();
        let mut cursor: Option<String> = None;
        for _page in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let answer = match self.peer.send_request(request).await {
                Ok(answer) => answer,
                Err(e) => return Err(with_stderr(self.error(tidy(&e)), &self.stderr).await),
            };
            let page = match answer {
                ServerResult::ListToolsResult(result) => {
                    listing.tools.extend(result.tools.into_iter().map(mcp_tool));
                    result.next_cursor
                }
                // A list the SDK could not read as a whole: read each tool.
                other => {
                    let mut value = serde_json::to_value(other).unwrap_or(Value::Null);
                    let Some(Value::Array(tools)) = value.get_mut("tools").map(Value::take) else {
                        return Err(self.error("the answer to tools/list has no tools array"));
                    };
                    for (i, raw) in tools.into_iter().enumerate() {
                        let name = raw
                            .get("name")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("#{}", i + 1), str::to_owned);
                        match serde_json::from_value::<rmcp::model::Tool>(raw) {
                            Ok(tool) => listing.tools.push(mcp_tool(tool)),
                            Err(e) => listing.left_out.push(LeftOut {
                                name,
                                reason: format!("the server lists it wrongly: {e}"),
                            }),
                        }
                    }
                    value
                        .get("nextCursor")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }
            };
            match page {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(listing),
            }
        }
        Err(self.error(format!(
            "tools/list did not end after {MAX_TOOL_PAGES} pages"
        )))
    }

    async fn register(&self, registry: &ToolRegistry, mount: &Mount) -> Result<Vec<String>> {
        let tools = self.tools().await?;
        let mut names = Vec::new();
        for tool in tools {
            let name = mount.name_of(&tool.name);
            let built = tool
                .definition(&name)
                .map(|definition| self.tool(definition, &tool, mount));
            match built.and_then(|t| registry.register(t)) {
                Ok(()) => names.push(name),
                Err(e) => tracing::warn!(
                    server = self.label.as_str(),
                    tool = tool.name.as_str(),
                    reason = %e,
                    "MCP tool left out"
                ),
            }
        }
        let stale: Vec<String> = registry
            .list()
            .into_iter()
            .filter(|t| {
                t.source == mount.source && t.role == mount.role && !names.contains(&t.name)
            })
            .map(|t| t.name)
            .collect();
        for name in stale {
            registry.unregister_scoped(&name, mount.role.as_deref());
        }
        Ok(names)
    }

    /// The registry entry for `tool`: a handler that calls it on the server.
    fn tool(&self, definition: ToolDefinition, tool: &McpTool, mount: &Mount) -> Tool {
        let peer = self.peer.clone();
        let watched = Arc::clone(&self.watched);
        let label = self.label.clone();
        let remote = tool.name.clone();
        let mut t = Tool::from_input_fn(definition, move |input| {
            let (peer, label, remote) = (peer.clone(), label.clone(), remote.clone());
            let watched = Arc::clone(&watched);
            async move {
                let progress = input.progress.clone();
                let call_id = Some(input.call_id);
                let arguments = input.arguments;
                let called = call(
                    &peer, &watched, &remote, arguments, progress, call_id, &label,
                );
                match called.await {
                    Ok(result) => result.into_reply(),
                    Err(message) => Err(ToolError::new(format!("MCP server {label}: {message}"))),
                }
            }
        })
        .with_source(mount.source.clone())
        .with_annotations(tool.annotations.clone());
        if let Some(role) = &mount.role {
            t = t.with_role(role.clone());
        }
        if let Some(timeout) = mount.timeout {
            t = t.with_timeout(timeout);
        }
        t
    }
}

/// A connection to one MCP server. Dropping it (or [`Connection::close`]) ends the session
/// and, for a child process, kills the child.
pub struct Connection {
    shared: Arc<Shared>,
    service: RunningService<RoleClient, Listener>,
    changed: watch::Receiver<u64>,
    // The `tools/list_changed` subscription of protocol versions that route notifications
    // through one (2026-07-28 on): it ends with the connection.
    subscription: Option<tokio::task::JoinHandle<()>>,
    // The child process of a stdio server, killed when the connection is dropped.
    _child: Option<tokio::process::Child>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.shared.label)
            .finish_non_exhaustive()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(task) = &self.subscription {
            task.abort();
        }
    }
}

impl Connection {
    /// Connects within [`DEFAULT_CONNECT_TIMEOUT`].
    pub async fn connect(endpoint: &Endpoint) -> Result<Self> {
        Self::connect_with_timeout(endpoint, DEFAULT_CONNECT_TIMEOUT).await
    }

    /// Starts or reaches the server and completes the MCP handshake within `timeout`. A
    /// child that exits, writes something other than MCP, or does not answer in time is an
    /// [`Error::Mcp`] naming the server (with the last line it wrote on standard error).
    pub async fn connect_with_timeout(endpoint: &Endpoint, timeout: Duration) -> Result<Self> {
        Self::open(endpoint, timeout, None).await
    }

    /// [`Connection::connect_with_timeout`], with `handler` answering the server's input
    /// requests (elicitation) during calls: each [`InputRequest`] goes to it while the call
    /// waits, and its [`InputAnswer`] goes back to the server. Without a handler, every input
    /// request is declined.
    pub async fn connect_asking(
        endpoint: &Endpoint,
        timeout: Duration,
        handler: InputHandler,
    ) -> Result<Self> {
        Self::open(endpoint, timeout, Some(handler)).await
    }

    async fn open(
        endpoint: &Endpoint,
        timeout: Duration,
        asker: Option<InputHandler>,
    ) -> Result<Self> {
        let label = endpoint.label();
        let (sender, changed) = watch::channel(0u64);
        let listener = Listener {
            changed: Arc::new(sender),
            watched: Arc::new(Watched {
                calls: Mutex::default(),
                asker,
            }),
            label: label.clone(),
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let child: Mutex<Option<tokio::process::Child>> = Mutex::new(None);
        let fail = |message: String| Error::Mcp {
            server: label.clone(),
            message,
        };
        let started = async {
            match endpoint {
                Endpoint::Command { program, args } => {
                    let mut command = tokio::process::Command::new(program);
                    command
                        .args(args)
                        .kill_on_drop(true)
                        .stdin(std::process::Stdio::piped())
                        .stdout(std::process::Stdio::piped())
                        .stderr(std::process::Stdio::piped());
                    let mut spawned = command
                        .spawn()
                        .map_err(|e| fail(format!("cannot start {program:?}: {e}")))?;
                    if let Some(child_stderr) = spawned.stderr.take() {
                        tokio::spawn(keep_tail(child_stderr, Arc::clone(&stderr)));
                    }
                    let (Some(stdout), Some(stdin)) = (spawned.stdout.take(), spawned.stdin.take())
                    else {
                        return Err(fail(format!("cannot reach the stdio of {program:?}")));
                    };
                    *child.lock().unwrap_or_else(|e| e.into_inner()) = Some(spawned);
                    let stdout = bounded::Bounded::new(stdout, MAX_MESSAGE_BYTES);
                    listener
                        .clone()
                        .serve((stdout, stdin))
                        .await
                        .map_err(|e| fail(tidy(&e)))
                }
                Endpoint::Url {
                    url,
                    headers,
                    bearer,
                    login,
                } => {
                    use rmcp::transport::StreamableHttpClientTransport;
                    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                    let http = http_client().map_err(|e| fail(tidy(&e)))?;
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.max_json_response_size = MAX_MESSAGE_BYTES;
                    config.max_sse_event_size = MAX_MESSAGE_BYTES;
                    config.custom_headers = headers.iter().cloned().collect();
                    config.auth_header = bearer.as_ref().map(|b| b.expose().to_owned());
                    let authenticated = !headers.is_empty() || bearer.is_some() || login.is_some();
                    let served = match login {
                        Some(file) => {
                            let client = auth::client(url, file, http).await?;
                            let transport =
                                StreamableHttpClientTransport::with_client(client, config);
                            listener.clone().serve(transport).await
                        }
                        None => {
                            let transport =
                                StreamableHttpClientTransport::with_client(http, config);
                            listener.clone().serve(transport).await
                        }
                    };
                    served.map_err(|e| fail(unauthorized(tidy(&e), authenticated, url)))
                }
            }
        };
        let service = match tokio::time::timeout(timeout, started).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return Err(with_stderr(e, &stderr).await),
            Err(_) => {
                let e = fail(format!("no MCP handshake within {timeout:?}"));
                return Err(with_stderr(e, &stderr).await);
            }
        };
        let subscription = subscribe(service.peer(), &listener.changed).await;
        Ok(Self {
            shared: Arc::new(Shared {
                label,
                peer: service.peer().clone(),
                watched: Arc::clone(&listener.watched),
                stderr,
            }),
            service,
            changed,
            subscription,
            _child: child.into_inner().unwrap_or_else(|e| e.into_inner()),
        })
    }

    /// The server's command line or URL.
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// Every tool the server lists (all pages), in its order.
    pub async fn tools(&self) -> Result<Vec<McpTool>> {
        self.shared.tools().await
    }

    /// Every entry of the server's tool list: the tools, and the entries left out with why
    /// (an entry without `inputSchema` does not cost the server its other tools).
    pub async fn listing(&self) -> Result<ToolListing> {
        self.shared.listing().await
    }

    /// Calls the server's tool `name` with an arguments object. A tool that reports an error
    /// is an `Ok` result with `is_error` set; the server failing is an [`Error::Mcp`].
    pub async fn call(&self, name: &str, arguments: Value) -> Result<McpResult> {
        self.call_reporting(name, arguments, Reporter::none()).await
    }

    /// [`Connection::call`], asking the server for progress (a `progressToken` in the
    /// request's `_meta`): each `notifications/progress` it sends for the call goes to
    /// `progress`, coalesced like any handler's reports.
    pub async fn call_reporting(
        &self,
        name: &str,
        arguments: Value,
        progress: Reporter,
    ) -> Result<McpResult> {
        let shared = &self.shared;
        let (peer, watched, label) = (&shared.peer, &shared.watched, shared.label.as_str());
        match call(peer, watched, name, arguments, progress, None, label).await {
            Ok(result) => Ok(result),
            Err(message) => Err(with_stderr(self.shared.error(message), &self.shared.stderr).await),
        }
    }

    /// Registers every tool the server lists into `registry`, named and scoped by `mount`,
    /// and removes tools of `mount`'s source and role the server no longer lists. Tools that
    /// cannot be registered (a name that breaks the name rule, a schema that is not a JSON
    /// Schema) are left out with a `tracing` warning. Returns the registered names.
    pub async fn register(&self, registry: &ToolRegistry, mount: &Mount) -> Result<Vec<String>> {
        self.shared.register(registry, mount).await
    }

    /// A receiver that changes each time the server announces that its tool list changed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    /// Keeps `registry` in step with the server: on every `tools/list_changed` the tools are
    /// listed again and registered with `mount` (new ones added, gone ones removed). The task
    /// ends when the connection does; abort it to stop following earlier.
    pub fn follow(&self, registry: ToolRegistry, mount: Mount) -> tokio::task::JoinHandle<()> {
        let mut changes = self.changes();
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                match shared.register(&registry, &mount).await {
                    Ok(names) => tracing::info!(
                        server = shared.label.as_str(),
                        tools = names.len(),
                        "MCP tools listed again after tools/list_changed"
                    ),
                    Err(e) => tracing::warn!(
                        server = shared.label.as_str(),
                        error = %e,
                        "MCP tools could not be listed again"
                    ),
                }
            }
        })
    }

    /// Whether the session has ended (the child exited, the server went away).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Ends the session and, for a child process, stops the child.
    pub async fn close(mut self) {
        let _ = self.service.close().await;
    }
}

/// One `tools/call`; the error is the reason, for the caller to attach the server's name to.
/// When `progress` is listened to, the request carries a progress token and the server's
/// progress notifications for it go there while the call runs.
async fn call(
    peer: &Peer<RoleClient>,
    watched: &Arc<Watched>,
    name: &str,
    arguments: Value,
    progress: Reporter,
    call_id: Option<String>,
    label: &str,
) -> std::result::Result<McpResult, String> {
    let arguments = match arguments {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "the arguments of tool {name:?} must be a JSON object, got {}",
                crate::types::json_kind(&other)
            ));
        }
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| tidy(&e))?;
    // Notifications the server sends before this line are not the call's to report: the
    // request has only just left.
    let _watching = (progress.is_listened() || progress.takes_questions()).then(|| {
        let token = handle.progress_token.clone();
        watched.watch(token, name, call_id.clone(), progress.clone())
    });
    let mut pending = Pending {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    pending.id = None;
    match answer {
        Ok(ServerResult::CallToolResult(result)) => Ok(McpResult::from_wire(name, result)),
        // The server runs the call as a task: followed to its end (the progress token stays
        // watched meanwhile, for the server's progress notifications).
        Ok(ServerResult::CreateTaskResult(created)) => {
            let asking = (name.to_owned(), call_id, progress.clone());
            task::follow(peer, watched, label, created, asking).await
        }
        Ok(_) => Err(format!(
            "the answer to tools/call {name:?} is not a tool result"
        )),
        Err(e) => Err(tidy(&e)),
    }
}

/// The SDK's tool → toolwire's view of it.
fn mcp_tool(tool: rmcp::model::Tool) -> McpTool {
    let annotations = tool
        .annotations
        .map(|a| ToolAnnotations {
            title: a.title,
            read_only: a.read_only_hint,
            destructive: a.destructive_hint,
            idempotent: a.idempotent_hint,
            open_world: a.open_world_hint,
        })
        .unwrap_or_default();
    let annotations = ToolAnnotations {
        title: annotations.title.or(tool.title),
        ..annotations
    };
    McpTool {
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        // The SDK's schema is not shared elsewhere: taken, not copied.
        input_schema: Value::Object(
            Arc::try_unwrap(tool.input_schema).unwrap_or_else(|a| (*a).clone()),
        ),
        output_schema: tool
            .output_schema
            .map(|s| Value::Object(Arc::try_unwrap(s).unwrap_or_else(|a| (*a).clone()))),
        annotations,
    }
}

/// On protocol versions where list-changed notifications come through a subscription
/// (`subscriptions/listen`), opens one for the tool list and counts its notifications; older
/// versions send them unasked, to [`Listener`].
async fn subscribe(
    peer: &Peer<RoleClient>,
    changed: &Arc<watch::Sender<u64>>,
) -> Option<tokio::task::JoinHandle<()>> {
    let info = peer.peer_info()?;
    let announces = info
        .capabilities
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    if !announces || info.protocol_version < ProtocolVersion::V_2026_07_28 {
        return None;
    }
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match peer.listen(filter).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "MCP server refused the tools/list_changed subscription");
            return None;
        }
    };
    let changed = Arc::clone(changed);
    Some(tokio::spawn(async move {
        while let Ok(Some(_)) = subscription.next().await {
            changed.send_modify(|n| *n += 1);
        }
    }))
}

/// An SDK error as a message: without the Rust type names some of its errors carry
/// (`Transport [rmcp::transport::worker::...] error`).
fn tidy(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find(" [") {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inner = &rest[open + 2..open + close];
        out.push_str(&rest[..open]);
        if !inner.contains("::") {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A failure to reach an HTTP server, with what to do when the server asked for credentials
/// (401): a bearer token, a header, or an OAuth login.
fn unauthorized(message: String, authenticated: bool, url: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if !(lower.contains("auth required") || lower.contains("401") || lower.contains("unauthorized"))
    {
        return message;
    }
    let what = if authenticated {
        "the server refused the credentials sent"
    } else {
        "the server requires authentication"
    };
    format!(
        "{message}: {what} (HTTP 401); pass a token with --bearer-env VAR (config: \
         bearer_env = \"VAR\"), a header with --header 'Name: value' (config: headers = \
         {{...}}), or, for a server that uses OAuth, log in once with `toolwire mcp login --url \
         {url}` (config: oauth = true)"
    )
}

/// Keeps the last bytes a child wrote on standard error.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<u8>>>) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(&buf[..n]);
        while tail.len() > STDERR_TAIL_BYTES {
            tail.pop_front();
        }
    }
}

/// Adds the last line the child wrote on standard error (after a moment for it to arrive) to
/// an [`Error::Mcp`].
async fn with_stderr(e: Error, tail: &Arc<Mutex<VecDeque<u8>>>) -> Error {
    let Error::Mcp { server, message } = e else {
        return e;
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let bytes: Vec<u8> = tail
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .copied()
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let last = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    let message = match last {
        Some(line) => {
            let line: String = line.chars().take(300).collect();
            format!("{message} (its last words on stderr: {line})")
        }
        None => message,
    };
    Error::Mcp { server, message }
}

/// The HTTP client for streamable HTTP servers: toolwire's own TLS setup.
fn http_client() -> Result<reqwest::Client> {
    crate::tls::http_client_builder()
        .build()
        .map_err(|e| Error::Mcp {
            server: String::new(),
            message: format!("cannot build the HTTP client: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed(tool: Value) -> McpTool {
        mcp_tool(serde_json::from_value(tool).unwrap())
    }

    #[test]
    fn output_schema_is_kept_on_the_definition_and_left_out_when_absent() {
        let schema = json!({"type": "object", "properties": {"temp_c": {"type": "number"}}});
        let tool = listed(json!({
            "name": "weather",
            "inputSchema": {"type": "object"},
            "outputSchema": schema,
        }));
        assert_eq!(tool.output_schema.as_ref(), Some(&schema));
        let definition = tool.definition("w").unwrap();
        let wire = serde_json::to_value(&definition).unwrap();
        assert_eq!(wire["output_schema"], schema);
        let back: ToolDefinition = serde_json::from_value(wire).unwrap();
        assert_eq!(back, definition);

        let plain = listed(json!({"name": "echo", "inputSchema": {"type": "object"}}));
        let wire = serde_json::to_value(plain.definition("echo").unwrap()).unwrap();
        assert!(wire.get("output_schema").is_none(), "{wire}");

        let bad = ToolDefinition::new("x", "")
            .unwrap()
            .with_output_schema(json!(true));
        assert!(bad.unwrap_err().to_string().contains("output_schema"));
        let bad =
            serde_json::from_value::<ToolDefinition>(json!({"name": "x", "output_schema": []}));
        assert!(bad.unwrap_err().to_string().contains("got array"));
    }
}
