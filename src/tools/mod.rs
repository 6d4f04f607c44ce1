//! Tools the model can call: definitions with their handlers, a registry, and dispatch.
//!
//! A [`Tool`] is a [`ToolDefinition`] plus what runs it: an async closure over JSON
//! ([`Tool::from_fn`]), a typed implementation whose schema is derived from its argument struct
//! ([`TypedTool`], [`Tool::typed`]), or an HTTP callback on this machine ([`Callback`],
//! [`Tool::callback`]). Schemas known only at run time are built with [`Params`].
//!
//! While a call runs, its handler can report progress and a short summary for the people
//! waiting ([`Reporter`], from [`ToolInput::progress`] or [`Reporter::current`]); they never
//! reach the model.
//!
//! The [`ToolRegistry`] holds tools with their source, role, toolset, timeout and availability
//! checks, decides which ones a request offers ([`ToolSelection`]), and runs calls
//! ([`ToolRegistry::dispatch`]). Every tool problem becomes an error [`ToolResult`](crate::ToolResult) for the
//! model, never an [`Error`]: malformed or truncated arguments (the handler never
//! runs), an unknown tool (the result lists the available ones), a schema violation (naming the
//! parameter, the problem and the allowed values), a timeout, a handler error or panic.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> toolwire::Result<()> {
//! use serde_json::json;
//! use toolwire::ToolCall;
//! use toolwire::tools::{Param, Params, ToolRegistry, ToolSelection};
//!
//! let registry = ToolRegistry::new();
//! let parameters = Params::new()
//!     .add("city", Param::string().description("City name").required())
//!     .add("unit", Param::string().one_of(["celsius", "fahrenheit"]))
//!     .build()?;
//! registry.register_fn("get_weather", "Current weather", parameters, |args| async move {
//!     Ok(json!({"city": args["city"], "temp_c": 21}))
//! })?;
//!
//! let everything = ToolSelection::default();
//! let call = ToolCall::new("call_1", "get_weather", r#"{"city":"Paris","unit":"kelvin"}"#);
//! let result = registry.dispatch(&call, &everything).await;
//! assert!(result.is_error);
//! assert_eq!(
//!     result.error.as_deref(),
//!     Some(r#"Invalid parameter "unit": "kelvin" is not one of ["celsius", "fahrenheit"]"#)
//! );
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "client")]
mod callback;
mod dispatch;
mod input;
mod params;
mod progress;
mod registry;
pub mod search;
mod typed;

#[cfg(feature = "server")]
pub(crate) use callback::check_callback_url;
#[cfg(feature = "client")]
pub use callback::{Callback, DEFAULT_CALLBACK_RESPONSE_BYTES};
pub use input::{Asked, InputAnswer, InputReply, InputRequest, Questions, check_answer};
pub use params::{Param, Params, parameter_list};
pub use progress::{
    MAX_MESSAGE_BYTES, MAX_SUMMARY_BYTES, Progress, REPORT_INTERVAL, Reporter, Reports, Update,
};
#[cfg(feature = "server")]
pub(crate) use registry::ReporterOf;
pub use registry::{DEFAULT_MAX_RESULT_BYTES, ToolInfo, ToolRegistry, ToolSelection, Unavailable};
pub use search::{
    DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SEARCH_TOOL_NAME, ToolMatch, search_tool_definition,
};
pub use typed::{TypedTool, parameters_for};

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::types::{Part, ToolDefinition};

/// The timeout a tool gets unless it sets its own.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest timeout a tool may set: a call that needs longer should be split, because the
/// whole turn waits for it.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(300);

/// The source recorded for in-process tools unless they set one.
pub const LOCAL_SOURCE: &str = "local";

/// The source recorded for callback tools unless they set one.
pub const EXTERNAL_SOURCE: &str = "external";

/// What a handler receives: the validated arguments and the call they came from.
///
/// Non-exhaustive: to call a handler directly (in a test), build one with [`ToolInput::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInput {
    /// The call's id.
    pub call_id: String,
    /// The tool's canonical name.
    pub name: String,
    /// The arguments object, already checked against the tool's schema.
    pub arguments: Value,
    /// The argument text exactly as the model produced it.
    pub raw_arguments: String,
    /// Where the handler reports progress and a summary for the people waiting (never seen by
    /// the model); does nothing when nobody listens.
    pub progress: Reporter,
}

impl ToolInput {
    /// The input of call `call_id` to tool `name`; the raw text is `arguments` serialized.
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            raw_arguments: arguments.to_string(),
            arguments,
            progress: Reporter::none(),
        }
    }

    /// Reports progress to `progress` (to call a handler directly and read its reports).
    pub fn with_progress(mut self, progress: Reporter) -> Self {
        self.progress = progress;
        self
    }
}

/// A handler's failure: a message for the model and, optionally, output with detail.
///
/// Any `std::error::Error` converts into it, so handlers can use `?`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    message: String,
    output: Value,
    content: Vec<Part>,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            output: Value::Null,
            content: Vec::new(),
        }
    }

    /// Adds output the model should see beside the message.
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = output;
        self
    }

    /// Adds content parts the model sees beside the message (a screenshot of the failure).
    pub fn with_content(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.content = parts.into_iter().collect();
        self
    }

    /// The content parts (empty when there are none).
    pub fn content(&self) -> &[Part] {
        &self.content
    }

    /// The message for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The detail output (`null` when there is none).
    pub fn output(&self) -> &Value {
        &self.output
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(e: E) -> Self {
        Self::new(e.to_string())
    }
}

/// What a handler produces: its output as JSON, or a failure.
pub type ToolOutput = Result<Value, ToolError>;

/// A handler's answer when the model should see more than the output as JSON: the output (the
/// program's value) and content parts (text, images, files) the model sees instead, carried in
/// the wire's own media shapes (a screenshot, a chart, a PDF page). Any handler may return it
/// where it returns a `Value`: `Value` converts into it.
///
/// ```
/// use toolwire::tools::ToolReply;
/// use toolwire::types::Part;
///
/// let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// let reply = ToolReply::new(serde_json::json!({"width": 1, "height": 1}))
///     .with_content([Part::text("The page as rendered:"), Part::image("image/png", png)]);
/// assert_eq!(reply.content.len(), 2);
/// ```
/// A [`TypedTool`] may use it as its `Output` too: the parts reach the model unchanged.
///
/// Non-exhaustive: build it with [`ToolReply::new`] (or from a `Value`) and [`ToolReply::with_content`].
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[non_exhaustive]
pub struct ToolReply {
    /// The program's value (kept in the history as the result's `output`).
    pub output: Value,
    /// What the model sees; empty means the output as JSON.
    pub content: Vec<Part>,
}

impl ToolReply {
    /// A reply with this output and no content parts.
    pub fn new(output: Value) -> Self {
        Self {
            output,
            content: Vec::new(),
        }
    }

    /// Sets the parts the model sees.
    pub fn with_content(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.content = parts.into_iter().collect();
        self
    }
}

impl From<Value> for ToolReply {
    fn from(output: Value) -> Self {
        Self::new(output)
    }
}

/// What a handler produces, inside: a reply or a failure.
pub(crate) type Reply = Result<ToolReply, ToolError>;

type LocalFn = dyn Fn(ToolInput) -> BoxFuture<'static, Reply> + Send + Sync;
type CheckFn = dyn Fn() -> Result<(), String> + Send + Sync;

/// What runs a tool.
#[derive(Clone)]
pub(crate) enum Handler {
    /// An in-process async function.
    Local(Arc<LocalFn>),
    /// An HTTP callback on this machine.
    #[cfg(feature = "client")]
    Callback(Arc<Callback>),
}

impl Handler {
    pub(crate) fn call(&self, input: ToolInput) -> BoxFuture<'static, Reply> {
        match self {
            Self::Local(f) => f(input),
            #[cfg(feature = "client")]
            Self::Callback(cb) => {
                let cb = Arc::clone(cb);
                Box::pin(async move { cb.invoke(&input).await })
            }
        }
    }
}

/// A tool ready to register: its definition, its handler and how the registry treats it.
///
/// The `with_*` settings are checked by [`ToolRegistry::register`], which refuses a timeout of
/// zero or above [`MAX_TIMEOUT`] with an error naming the field.
#[derive(Clone)]
pub struct Tool {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: Handler,
    pub(crate) source: String,
    pub(crate) toolset: Option<String>,
    pub(crate) role: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) required_env: Vec<String>,
    pub(crate) check: Option<Arc<CheckFn>>,
    pub(crate) parameter_list: bool,
    pub(crate) annotations: ToolAnnotations,
}

/// What a tool says about its own effects (MCP's tool annotations): hints an application can use
/// to ask a person before a call runs, read back with [`ToolRegistry::annotations`] (in an
/// agent's `before_tool` hook, say). They are hints from whoever registered the tool, never a
/// guarantee. Unset means unknown.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (MCP's default when not read-only: `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside systems (the web, other services).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether a call may destroy data, by MCP's defaults: a tool that is not marked read-only
    /// and not marked non-destructive may.
    pub fn may_destroy(&self) -> bool {
        self.read_only != Some(true) && self.destructive != Some(false)
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("definition", &self.definition)
            .field("callback", &self.callback_url())
            .field("source", &self.source)
            .field("toolset", &self.toolset)
            .field("role", &self.role)
            .field("timeout", &self.timeout)
            .field("required_env", &self.required_env)
            .field("check", &self.check.is_some())
            .field("annotations", &self.annotations)
            .finish()
    }
}

impl Tool {
    fn with_handler(definition: ToolDefinition, handler: Handler, source: &str) -> Self {
        Self {
            definition,
            handler,
            source: source.to_owned(),
            toolset: None,
            role: None,
            timeout: DEFAULT_TIMEOUT,
            required_env: Vec::new(),
            check: None,
            parameter_list: false,
            annotations: ToolAnnotations::default(),
        }
    }

    /// A tool run by an async closure over the JSON arguments object. It answers with a JSON
    /// `Value`, or a [`ToolReply`] when the model should see content parts (an image).
    pub fn from_fn<F, Fut, O>(definition: ToolDefinition, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<ToolReply>,
    {
        let f = Arc::new(f);
        let local: Arc<LocalFn> = Arc::new(move |input: ToolInput| {
            let f = Arc::clone(&f);
            Box::pin(async move { f(input.arguments).await.map(Into::into) })
        });
        Self::with_handler(definition, Handler::Local(local), LOCAL_SOURCE)
    }

    /// A tool run by an async closure that also sees the call id and raw argument text. It
    /// answers with a JSON `Value` or a [`ToolReply`].
    pub fn from_input_fn<F, Fut, O>(definition: ToolDefinition, f: F) -> Self
    where
        F: Fn(ToolInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<ToolReply>,
    {
        let f = Arc::new(f);
        let local: Arc<LocalFn> = Arc::new(move |input: ToolInput| {
            let f = Arc::clone(&f);
            Box::pin(async move { f(input).await.map(Into::into) })
        });
        Self::with_handler(definition, Handler::Local(local), LOCAL_SOURCE)
    }

    /// A typed tool: its parameters schema is derived from `T::Args`; errors when that schema is
    /// not an object or the name breaks the name rule.
    pub fn typed<T: TypedTool>(tool: T) -> Result<Self> {
        typed::into_tool(tool)
    }

    /// A tool answered by POSTing the call to a loopback URL (see [`Callback`]). Needs the
    /// `client` feature.
    #[cfg(feature = "client")]
    pub fn callback(definition: ToolDefinition, callback: Callback) -> Self {
        Self::with_handler(
            definition,
            Handler::Callback(Arc::new(callback)),
            EXTERNAL_SOURCE,
        )
    }

    /// Who registered the tool (`"builtin"`, `"plugin:weather"`): [`ToolRegistry::clear_source`]
    /// removes by it and strict mode names it.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// Registers the tool deferred ([`ToolDefinition::defer_loading`]): the agent sends it only
    /// once the model found it by search (see [`crate::agent::DeferredLoading`]).
    pub fn deferred(mut self) -> Self {
        self.definition.defer_loading = true;
        self
    }

    /// Puts the tool in a named group that a request must enable to see it.
    pub fn with_toolset(mut self, toolset: impl Into<String>) -> Self {
        self.toolset = Some(toolset.into());
        self
    }

    /// Offers the tool only to one named role; without a role it is offered to every role.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// How long a call may run (default 30 s, at most 300 s). The timeout holds even for a
    /// handler that blocks its thread: each call's handler runs on a blocking-pool thread of
    /// its own, so blocked handlers never hold the runtime's workers; a blocked handler's
    /// late result is discarded.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// An environment variable the tool needs: while it is unset or empty the tool is not
    /// offered, and [`ToolRegistry::availability_report`] says so.
    pub fn with_required_env(mut self, var: impl Into<String>) -> Self {
        self.required_env.push(var.into());
        self
    }

    /// A cheap check run whenever tools are offered; `Err(reason)` hides the tool and the
    /// reason goes into [`ToolRegistry::availability_report`].
    pub fn with_check<F>(mut self, check: F) -> Self
    where
        F: Fn() -> Result<(), String> + Send + Sync + 'static,
    {
        self.check = Some(Arc::new(check));
        self
    }

    /// Appends a generated parameter list (name, type, required, default, allowed values) to
    /// the description, for models that read descriptions more closely than schemas.
    pub fn with_parameter_list(mut self) -> Self {
        self.parameter_list = true;
        self
    }

    /// Sets what the tool says about its effects (read-only, destructive, ...).
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The definition the model will see (before any generated parameter list).
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The callback URL, for callback tools.
    pub fn callback_url(&self) -> Option<&str> {
        match &self.handler {
            #[cfg(feature = "client")]
            Handler::Callback(cb) => Some(cb.url().as_str()),
            Handler::Local(_) => None,
        }
    }

    /// Checks the settings [`ToolRegistry::register`] refuses, naming the field.
    pub(crate) fn check_settings(&self) -> Result<()> {
        crate::types::check_name(&self.definition.name, "name")?;
        if !self.definition.parameters.is_object() {
            return Err(Error::input(
                "parameters",
                format!(
                    "parameters must be a JSON Schema object, got {}",
                    crate::types::json_kind(&self.definition.parameters)
                ),
            ));
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(Error::input(
                "timeout",
                format!(
                    "timeout of tool {:?} is {:?}; it must be above 0 and at most {:?}",
                    self.definition.name, self.timeout, MAX_TIMEOUT
                ),
            ));
        }
        let named = [
            ("source", Some(&self.source)),
            ("role", self.role.as_ref()),
            ("toolset", self.toolset.as_ref()),
        ];
        for (field, value) in named {
            if value.is_some_and(|v| v.trim().is_empty()) {
                return Err(Error::input(
                    field,
                    format!("{field} of tool {:?} is empty", self.definition.name),
                ));
            }
        }
        Ok(())
    }
}
