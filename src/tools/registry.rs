//! The tool registry: which tools exist, which ones a request offers, and dispatch.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use jsonschema::Validator;
use serde_json::{Value, json};

use super::dispatch::{self, Target, floor_char_boundary};
use super::search::{Query, ToolMatch, TopK, listed_description};
use super::{Reporter, Tool, ToolError, TypedTool, parameter_list};
use crate::error::{Error, Result};
use crate::types::{ToolCall, ToolDefinition, ToolResult};

/// The largest tool result sent to the model unless the registry sets its own limit (64 KiB of
/// output text). A toolwire budget, not a provider's documented limit: it keeps one tool from
/// filling the context window.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024;

/// The smallest result limit a registry accepts, so the truncation marker always fits.
const MIN_RESULT_BYTES: usize = 256;

/// Which tools a request offers: those for every role plus those for `role`, and those in no
/// toolset plus those in the enabled toolsets.
///
/// The default selection has no role and no toolsets: it offers the tools registered for
/// every role outside any toolset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSelection {
    role: Option<String>,
    toolsets: Vec<String>,
    all_toolsets: bool,
    deferred_toolsets: Vec<String>,
}

impl ToolSelection {
    /// The default selection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers the tools of this role as well (a role's tool replaces an every-role tool of the
    /// same name).
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// Enables a toolset.
    pub fn with_toolset(mut self, toolset: impl Into<String>) -> Self {
        self.toolsets.push(toolset.into());
        self
    }

    /// Enables a toolset whose tools are offered deferred: as if each were registered with
    /// [`Tool::deferred`](super::Tool::deferred) (found by search before they are sent; see
    /// [`crate::agent::DeferredLoading`]). For a large toolset, an MCP server's say.
    pub fn with_deferred_toolset(mut self, toolset: impl Into<String>) -> Self {
        let toolset = toolset.into();
        self.toolsets.push(toolset.clone());
        self.deferred_toolsets.push(toolset);
        self
    }

    /// Whether this selection offers `tool` deferred: registered so, or in a deferred toolset.
    fn defers(&self, tool: &Tool) -> bool {
        tool.definition.defer_loading
            || tool
                .toolset
                .as_ref()
                .is_some_and(|t| self.deferred_toolsets.contains(t))
    }

    /// Enables every toolset.
    pub fn with_all_toolsets(mut self) -> Self {
        self.all_toolsets = true;
        self
    }

    /// The role, if any.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    fn scope_fits(&self, tool: &Tool) -> bool {
        let role_fits = match &tool.role {
            None => true,
            Some(r) => self.role.as_deref() == Some(r.as_str()),
        };
        let toolset_fits = match &tool.toolset {
            None => true,
            Some(t) => self.all_toolsets || self.toolsets.iter().any(|x| x == t),
        };
        role_fits && toolset_fits
    }
}

/// One registered tool as [`ToolRegistry::list`] shows it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The description the model sees (with the generated parameter list, if asked for).
    pub description: String,
    /// The parameters schema.
    pub parameters: Value,
    /// Who registered it.
    pub source: String,
    /// Its toolset, if any.
    pub toolset: Option<String>,
    /// The one role it is offered to, or `None` for every role.
    pub role: Option<String>,
    /// How long a call may run.
    pub timeout: Duration,
    /// The callback URL of a callback tool.
    pub callback_url: Option<String>,
    /// Why the tool is not offered right now, if it is not.
    pub unavailable: Option<String>,
    /// What the tool says about its effects.
    pub annotations: super::ToolAnnotations,
}

/// A tool that is registered but not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unavailable {
    /// The tool's name.
    pub name: String,
    /// Its role, if it has one.
    pub role: Option<String>,
    /// What is missing: an environment variable or the check's reason.
    pub reason: String,
}

#[derive(Clone)]
struct Entry {
    tool: Tool,
    validator: Arc<Validator>,
    /// The output schema's validator, for a tool that declares one.
    output: Option<Arc<Validator>>,
}

impl Entry {
    /// What [`ToolRegistry::list`] says of the entry (runs its availability check).
    fn info(&self) -> ToolInfo {
        ToolInfo {
            name: self.tool.definition.name.clone(),
            description: self.tool.definition.description.clone(),
            parameters: self.tool.definition.parameters.clone(),
            source: self.tool.source.clone(),
            toolset: self.tool.toolset.clone(),
            role: self.tool.role.clone(),
            timeout: self.tool.timeout,
            callback_url: self.tool.callback_url().map(str::to_owned),
            unavailable: self.unavailable(),
            annotations: self.tool.annotations.clone(),
        }
    }

    fn unavailable(&self) -> Option<String> {
        let missing: Vec<&str> = self
            .tool
            .required_env
            .iter()
            .filter(|v| std::env::var_os(v.as_str()).is_none_or(|s| s.is_empty()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let noun = if missing.len() == 1 {
                "environment variable"
            } else {
                "environment variables"
            };
            return Some(format!("missing {noun} {}", missing.join(", ")));
        }
        match &self.tool.check {
            Some(check) => check().err().map(|why| format!("check failed: {why}")),
            None => None,
        }
    }
}

struct Inner {
    /// Shared with snapshots: reading the offer copies pointers, not tools.
    entries: Vec<Arc<Entry>>,
    strict: bool,
    max_result_bytes: usize,
}

/// The tools an application offers, shared and updatable while agents run (clones share one
/// registry).
///
/// Registering a name again replaces the tool in place (a hot update); in strict mode it is
/// refused with an error naming both sources. A tool registered for one role and one for every
/// role may share a name: the role's tool wins for that role.
#[derive(Clone)]
pub struct ToolRegistry {
    inner: Arc<RwLock<Inner>>,
    reporting: Arc<Mutex<Reporting>>,
}

/// The callback calls running now whose caller listens for progress: where a plugin's own
/// progress reports for a call go ([`ToolRegistry::reporter_of`]).
#[derive(Default)]
struct Reporting {
    next: u64,
    calls: Vec<(u64, String, String, Reporter)>,
}

/// A running callback call's place in [`Reporting`], given up when the call ends.
struct Reported {
    reporting: Arc<Mutex<Reporting>>,
    id: u64,
}

impl Drop for Reported {
    fn drop(&mut self) {
        let mut reporting = self
            .reporting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        reporting.calls.retain(|(id, ..)| *id != self.id);
    }
}

/// Which running callback call a plugin's progress report is for.
#[cfg(feature = "server")]
#[derive(Debug)]
pub(crate) enum ReporterOf {
    /// The one running call with that id (and name, when given).
    One(Reporter),
    /// No running callback call has that id.
    None,
    /// Several do (ids the model minted, such as `call_1`, in concurrent chats): the report
    /// must name the tool too, or cannot be placed.
    Several(usize),
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.read();
        f.debug_struct("ToolRegistry")
            .field(
                "tools",
                &inner
                    .entries
                    .iter()
                    .map(|e| e.tool.definition.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("strict", &inner.strict)
            .field("max_result_bytes", &inner.max_result_bytes)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry: replacing allowed, results limited to [`DEFAULT_MAX_RESULT_BYTES`].
    pub fn new() -> Self {
        Self {
            inner: Arc::new(RwLock::new(Inner {
                entries: Vec::new(),
                strict: false,
                max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            })),
            reporting: Arc::default(),
        }
    }

    /// Strict mode: registering a name that is already registered (for the same role) is an
    /// error instead of a replacement.
    pub fn with_strict(self, strict: bool) -> Self {
        self.write().strict = strict;
        self
    }

    /// Results whose output text is longer than `bytes` are cut to fit, with a visible marker
    /// (never dropped). Values under 256 are raised to 256.
    pub fn with_max_result_bytes(self, bytes: usize) -> Self {
        self.write().max_result_bytes = bytes.max(MIN_RESULT_BYTES);
        self
    }

    /// The result size limit.
    pub fn max_result_bytes(&self) -> usize {
        self.read().max_result_bytes
    }

    // A panic while holding the lock cannot leave the entries half-updated (every write is a
    // single push, replace or retain), so a poisoned lock is still safe to use.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `tool`. Errors (naming the field) for an invalid name, a parameters value that
    /// is not a JSON Schema object, a timeout of zero or above 300 s, an empty source, role or
    /// toolset, and, in strict mode, a name already registered for the same role.
    pub fn register(&self, mut tool: Tool) -> Result<()> {
        tool.check_settings()?;
        let validator = jsonschema::validator_for(&tool.definition.parameters).map_err(|e| {
            Error::input(
                "parameters",
                format!(
                    "parameters of tool {:?} are not a valid JSON Schema: {e}",
                    tool.definition.name
                ),
            )
        })?;
        let output = match &tool.definition.output_schema {
            None => None,
            Some(schema) => Some(Arc::new(jsonschema::validator_for(schema).map_err(
                |e| {
                    Error::input(
                        "output_schema",
                        format!(
                            "output schema of tool {:?} is not a valid JSON Schema: {e}",
                            tool.definition.name
                        ),
                    )
                },
            )?)),
        };
        if tool.parameter_list {
            let list = parameter_list(&tool.definition.parameters);
            if !list.is_empty() {
                let description = tool.definition.description.trim_end();
                tool.definition.description = if description.is_empty() {
                    format!("Parameters:\n{list}")
                } else {
                    format!("{description}\n\nParameters:\n{list}")
                };
            }
        }
        let entry = Arc::new(Entry {
            tool,
            validator: Arc::new(validator),
            output,
        });
        let mut inner = self.write();
        let existing = inner.entries.iter().position(|e| {
            e.tool.definition.name == entry.tool.definition.name && e.tool.role == entry.tool.role
        });
        match existing {
            Some(i) if inner.strict => {
                let old = &inner.entries[i].tool;
                Err(Error::input(
                    "name",
                    format!(
                        "tool {:?}{} is already registered by source {:?}; source {:?} cannot \
                         register it again (strict mode: unregister it first)",
                        old.definition.name,
                        old.role
                            .as_deref()
                            .map(|r| format!(" for role {r:?}"))
                            .unwrap_or_default(),
                        old.source,
                        entry.tool.source
                    ),
                ))
            }
            Some(i) => {
                inner.entries[i] = entry;
                Ok(())
            }
            None => {
                inner.entries.push(entry);
                Ok(())
            }
        }
    }

    /// Registers an async closure over the JSON arguments object.
    /// It answers with a JSON `Value`, or a [`ToolReply`](super::ToolReply) with content parts.
    pub fn register_fn<F, Fut, O>(
        &self,
        name: &str,
        description: &str,
        parameters: Value,
        f: F,
    ) -> Result<()>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<super::ToolReply>,
    {
        let definition = ToolDefinition::new(name, description)?.with_parameters(parameters)?;
        self.register(Tool::from_fn(definition, f))
    }

    /// Registers a typed tool.
    pub fn register_typed<T: TypedTool>(&self, tool: T) -> Result<()> {
        self.register(Tool::typed(tool)?)
    }

    /// Removes every tool called `name` (for every role); whether one existed.
    pub fn unregister(&self, name: &str) -> bool {
        let mut inner = self.write();
        let before = inner.entries.len();
        inner.entries.retain(|e| e.tool.definition.name != name);
        inner.entries.len() != before
    }

    /// Removes the tool called `name` registered for exactly `role` (`None`: the every-role
    /// tool); whether it existed.
    pub fn unregister_scoped(&self, name: &str, role: Option<&str>) -> bool {
        let mut inner = self.write();
        let before = inner.entries.len();
        inner
            .entries
            .retain(|e| !(e.tool.definition.name == name && e.tool.role.as_deref() == role));
        inner.entries.len() != before
    }

    /// Removes every tool registered by `source`; how many.
    pub fn clear_source(&self, source: &str) -> usize {
        let mut inner = self.write();
        let before = inner.entries.len();
        inner.entries.retain(|e| e.tool.source != source);
        before - inner.entries.len()
    }

    /// Whether a tool called `name` is registered (for any role).
    pub fn contains(&self, name: &str) -> bool {
        self.read()
            .entries
            .iter()
            .any(|e| e.tool.definition.name == name)
    }

    /// The tools whose source satisfies `test`, as [`ToolRegistry::list`] gives them; only
    /// those are copied, so picking a few out of thousands stays cheap.
    pub fn list_by_source(&self, test: impl Fn(&str) -> bool) -> Vec<ToolInfo> {
        let picked: Vec<Arc<Entry>> = (self.read().entries.iter())
            .filter(|e| test(&e.tool.source))
            .cloned()
            .collect();
        picked.iter().map(|e| e.info()).collect()
    }

    /// The entries, copied out so availability checks (user code) run without the lock held:
    /// a check or handler may register tools itself.
    fn snapshot(&self) -> Vec<Arc<Entry>> {
        self.read().entries.clone()
    }

    /// Every registered tool, in registration order, with why it is unavailable if it is.
    pub fn list(&self) -> Vec<ToolInfo> {
        self.snapshot().iter().map(|e| e.info()).collect()
    }

    /// What the tool `name` says about its effects (for a role's own tool, pass the selection
    /// the call is dispatched with); `None` when no such tool is offered.
    pub fn annotations(
        &self,
        name: &str,
        selection: &ToolSelection,
    ) -> Option<super::ToolAnnotations> {
        self.offered(selection)
            .into_iter()
            .find(|e| e.tool.definition.name == name)
            .map(|e| e.tool.annotations.clone())
    }

    /// The tools that are registered but not offered because a required environment variable
    /// is missing or their check fails, and why.
    pub fn availability_report(&self) -> Vec<Unavailable> {
        self.snapshot()
            .iter()
            .filter_map(|e| {
                e.unavailable().map(|reason| Unavailable {
                    name: e.tool.definition.name.clone(),
                    role: e.tool.role.clone(),
                    reason,
                })
            })
            .collect()
    }

    /// The entries `selection` offers, one per name, in registration order of the name.
    /// Linear in the registry's size (names are looked up in a map).
    fn offered(&self, selection: &ToolSelection) -> Vec<Arc<Entry>> {
        let mut out: Vec<Arc<Entry>> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for e in self.snapshot() {
            if !selection.scope_fits(&e.tool) || e.unavailable().is_some() {
                continue;
            }
            match at.get(&e.tool.definition.name) {
                Some(&i) if e.tool.role.is_some() => out[i] = e,
                Some(_) => {}
                None => {
                    at.insert(e.tool.definition.name.clone(), out.len());
                    out.push(e);
                }
            }
        }
        out
    }

    /// The definitions to send with a request. A tool the selection offers deferred (see
    /// [`ToolSelection::with_deferred_toolset`]) has [`ToolDefinition::defer_loading`] set.
    pub fn definitions(&self, selection: &ToolSelection) -> Vec<ToolDefinition> {
        self.offered(selection)
            .into_iter()
            .map(|e| {
                let mut definition = e.tool.definition.clone();
                definition.defer_loading = selection.defers(&e.tool);
                definition
            })
            .collect()
    }

    /// The agent's offer with deferred loading: the definitions `selection` offers, but of the
    /// deferred ones only those `send` accepts (their definitions alone are copied), and
    /// whether any tool is offered deferred.
    #[cfg(feature = "agent")]
    pub(crate) fn offer_deferred(
        &self,
        selection: &ToolSelection,
        send: impl Fn(&str) -> bool,
    ) -> (Vec<ToolDefinition>, bool) {
        let mut any = false;
        let mut out = Vec::new();
        for e in self.offered(selection) {
            let deferred = selection.defers(&e.tool);
            any |= deferred;
            if !deferred || send(&e.tool.definition.name) {
                let mut definition = e.tool.definition.clone();
                definition.defer_loading = deferred;
                out.push(definition);
            }
        }
        (out, any)
    }

    /// Whether `selection` offers a tool called `name` deferred.
    #[cfg(feature = "agent")]
    pub(crate) fn is_deferred(&self, name: &str, selection: &ToolSelection) -> bool {
        (self.read().entries.iter()).any(|e| {
            e.tool.definition.name == name
                && selection.scope_fits(&e.tool)
                && selection.defers(&e.tool)
        })
    }

    /// Searches the tools `selection` offers deferred by the words of `query`, best first, at
    /// most `limit` of them (and never more than
    /// [`MAX_SEARCH_LIMIT`](super::MAX_SEARCH_LIMIT)). Scoring is described in
    /// [`crate::tools::search`]: plain word matches over names and descriptions, deterministic,
    /// linear in the registry's size; the query is never compiled as a pattern.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::tools::{Tool, ToolRegistry, ToolSelection};
    /// use toolwire::ToolDefinition;
    ///
    /// let registry = ToolRegistry::new();
    /// for (name, description) in [("send_email", "Send an email"), ("get_weather", "Weather now")] {
    ///     let definition = ToolDefinition::new(name, description)?;
    ///     registry.register(Tool::from_fn(definition, |_| async { Ok(json!(null)) }).deferred())?;
    /// }
    /// let found = registry.search("email", 5, &ToolSelection::default());
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].name, "send_email");
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    pub fn search(&self, query: &str, limit: usize, selection: &ToolSelection) -> Vec<ToolMatch> {
        let query = Query::new(query);
        let offered = self.offered(selection);
        let mut top = TopK::new(limit.min(super::MAX_SEARCH_LIMIT));
        if !query.is_empty() {
            for (i, e) in offered.iter().enumerate() {
                if selection.defers(&e.tool) {
                    let d = &e.tool.definition;
                    top.offer(query.score(&d.name, &d.description), i);
                }
            }
        }
        top.into_sorted()
            .into_iter()
            .map(|(score, i)| {
                let d = &offered[i].tool.definition;
                ToolMatch {
                    name: d.name.clone(),
                    description: listed_description(&d.description),
                    score,
                }
            })
            .collect()
    }

    /// Runs one call among the tools `selection` offers. Never fails: every problem is an
    /// error result for the model, and results are cut to the registry's size limit.
    ///
    /// Runs in an `info` span `gen_ai.execute_tool` with the OpenTelemetry GenAI fields
    /// `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name`, `gen_ai.tool.call.id`,
    /// and `error.type` (`tool_error`) when the result is an error.
    pub async fn dispatch(&self, call: &ToolCall, selection: &ToolSelection) -> ToolResult {
        self.dispatch_reporting(call, selection, Reporter::none())
            .await
    }

    /// [`ToolRegistry::dispatch`], with the handler's progress and summary going to
    /// `progress` (read them from the [`Reports`](super::Reports) of [`Reporter::channel`]
    /// while the call runs). What is reported never goes into the result.
    pub async fn dispatch_reporting(
        &self,
        call: &ToolCall,
        selection: &ToolSelection,
        progress: Reporter,
    ) -> ToolResult {
        use tracing::Instrument;
        let span = tracing::info_span!(
            "gen_ai.execute_tool",
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = call.name.as_str(),
            "gen_ai.tool.call.id" = call.id.as_str(),
            "error.type" = tracing::field::Empty,
        );
        let result = self
            .dispatch_in(call, selection, progress)
            .instrument(span.clone())
            .await;
        if result.is_error {
            span.record("error.type", "tool_error");
        }
        result
    }

    async fn dispatch_in(
        &self,
        call: &ToolCall,
        selection: &ToolSelection,
        progress: Reporter,
    ) -> ToolResult {
        let offered = self.offered(selection);
        let max = self.max_result_bytes();
        let mut result = match offered.iter().find(|e| e.tool.definition.name == call.name) {
            Some(entry) => {
                let _reported = self.reported(entry, call, &progress);
                let target = Target {
                    handler: &entry.tool.handler,
                    validator: &entry.validator,
                    output: entry.output.as_deref(),
                    schema: &entry.tool.definition.parameters,
                    strict: entry.tool.definition.strict,
                    timeout: entry.tool.timeout,
                };
                dispatch::run(target, call, progress).await
            }
            None => self.not_offered(call, selection, &offered),
        };
        truncate_result(&mut result, max);
        result
    }

    /// Lists a callback call whose caller listens, so its plugin can report progress while
    /// it runs; other calls report through their handler.
    fn reported(&self, entry: &Entry, call: &ToolCall, progress: &Reporter) -> Option<Reported> {
        entry.tool.callback_url()?;
        if !progress.is_listened() {
            return None;
        }
        let mut reporting = self
            .reporting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        reporting.next += 1;
        let id = reporting.next;
        let entry = (id, call.id.clone(), call.name.clone(), progress.clone());
        reporting.calls.push(entry);
        Some(Reported {
            reporting: Arc::clone(&self.reporting),
            id,
        })
    }

    /// The reporter of the running callback call `call_id` (of tool `name`, when given).
    #[cfg(feature = "server")]
    pub(crate) fn reporter_of(&self, call_id: &str, name: Option<&str>) -> ReporterOf {
        let reporting = self
            .reporting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut found: Vec<&Reporter> = Vec::new();
        for (_, id, tool, reporter) in &reporting.calls {
            if id == call_id && name.is_none_or(|n| n == tool) && !found.contains(&reporter) {
                found.push(reporter);
            }
        }
        match found.as_slice() {
            [] => ReporterOf::None,
            [one] => ReporterOf::One((*one).clone()),
            several => ReporterOf::Several(several.len()),
        }
    }

    /// Runs calls concurrently; the results are in call order.
    pub async fn dispatch_all(
        &self,
        calls: &[ToolCall],
        selection: &ToolSelection,
    ) -> Vec<ToolResult> {
        futures::future::join_all(calls.iter().map(|c| self.dispatch(c, selection))).await
    }

    fn not_offered(
        &self,
        call: &ToolCall,
        selection: &ToolSelection,
        offered: &[Arc<Entry>],
    ) -> ToolResult {
        let names: Vec<&str> = offered
            .iter()
            .map(|e| e.tool.definition.name.as_str())
            .collect();
        let available = if names.is_empty() {
            "no tools are available".to_owned()
        } else {
            format!("available tools: {}", names.join(", "))
        };
        let unavailable = self
            .snapshot()
            .iter()
            .filter(|e| e.tool.definition.name == call.name && selection.scope_fits(&e.tool))
            .find_map(|e| e.unavailable());
        let message = match unavailable {
            Some(why) => format!("Tool {:?} is not available ({why}); {available}", call.name),
            None => format!("Unknown tool {:?}; {available}", call.name),
        };
        let mut result = ToolResult::error(call, message);
        result.output = json!({ "available_tools": names });
        result
    }
}

/// Cuts a result whose output text is longer than `max_bytes`: the output becomes the first
/// part of its text (at a character boundary) followed by a marker saying how much was cut.
/// The error message is cut the same way. Nothing is ever dropped silently.
pub(crate) fn truncate_result(result: &mut ToolResult, max_bytes: usize) {
    let max_bytes = max_bytes.max(MIN_RESULT_BYTES);
    let text = match &result.output {
        Value::String(s) => s.len(),
        Value::Null => 0,
        other => other.to_string().len(),
    };
    if text > max_bytes {
        let full = match &result.output {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        result.output = Value::String(cut(&full, max_bytes));
    }
    if let Some(message) = &result.error
        && message.len() > max_bytes
    {
        result.error = Some(cut(message, max_bytes));
    }
}

fn cut(text: &str, max_bytes: usize) -> String {
    let marker = |kept: usize| {
        format!(
            "\n[toolwire: truncated, {kept} of {} bytes shown]",
            text.len()
        )
    };
    // The kept count has at most as many digits as the full length, so this bounds the marker.
    let room = max_bytes.saturating_sub(marker(text.len()).len());
    let keep = floor_char_boundary(text, room);
    format!("{}{}", &text[..keep], marker(keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_a_marked_prefix_within_the_limit() {
        let call = ToolCall::new("c", "f", "{}");
        let mut r = ToolResult::ok(&call, json!({"data": "x".repeat(5000)}));
        truncate_result(&mut r, 1000);
        let Value::String(s) = &r.output else {
            panic!("output should be text now")
        };
        assert!(s.len() <= 1000, "{}", s.len());
        assert!(s.starts_with("{\"data\":\"xxx"));
        assert!(s.contains("[toolwire: truncated,") && s.ends_with("of 5011 bytes shown]"));
        let mut small = ToolResult::ok(&call, json!({"a": 1}));
        truncate_result(&mut small, 1000);
        assert_eq!(small.output, json!({"a": 1}));
        let mut multibyte = ToolResult::ok(&call, json!("é".repeat(1000)));
        truncate_result(&mut multibyte, 300);
        assert!(multibyte.output.as_str().unwrap().len() <= 300);
    }
}
