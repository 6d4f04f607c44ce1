//! The asyncio side: a client, a tool registry whose tools are Python callables (sync or
//! async), the agent loop, and the loopback mock provider. Rust futures run on the tokio
//! runtime `pyo3-async-runtimes` keeps; each Python awaitable is scheduled back on the event
//! loop that started the call.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyString;
use pyo3_async_runtimes::TaskLocals;
use serde_json::{Value, json};
use toolwire::agent::{
    AfterTurn, Agent as RustAgent, AgentEvent, AgentOutcome, AgentStream, ToolDecision, TurnReport,
};
use toolwire::client::ChatStream as RustChatStream;
use toolwire::mock::{MockReply, MockServer as RustMockServer, Script};
use toolwire::tools::{Tool, ToolError, ToolInput, ToolRegistry as RustRegistry, ToolSelection};
use toolwire::{
    ApiError, ChatRequest, ChatResponse, Client as RustClient, ToolCall, ToolDefinition,
};

use crate::conv::{self, from_py, ser_to_py, to_py};
use crate::core::kind_of;
use crate::errors;

/// The event loop Python callables are scheduled on: the one that last started a run.
#[derive(Clone, Default)]
struct LoopSlot(Arc<Mutex<Option<TaskLocals>>>);

impl LoopSlot {
    fn capture(&self, py: Python<'_>) -> PyResult<()> {
        let locals = pyo3_async_runtimes::tokio::get_current_locals(py)?;
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(locals);
        }
        Ok(())
    }

    fn get(&self) -> PyResult<TaskLocals> {
        let slot = self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("event loop slot poisoned"))?;
        slot.as_ref()
            .cloned()
            .ok_or_else(|| PyRuntimeError::new_err("no asyncio event loop: call from a coroutine"))
    }
}

type PyFuture = Pin<Box<dyn Future<Output = PyResult<Py<PyAny>>> + Send>>;

enum Called {
    Done(Py<PyAny>),
    Pending(PyFuture),
}

/// Calls `func(arg)` off the event loop's thread (a blocking thread for sync callables); an
/// awaitable result is awaited on the event loop.
async fn call_python(func: Arc<Py<PyAny>>, slot: LoopSlot, arg: Value) -> PyResult<Py<PyAny>> {
    let called = tokio::task::spawn_blocking(move || {
        Python::attach(|py| -> PyResult<Called> {
            let out = func.bind(py).call1((to_py(py, &arg)?,))?;
            if out.hasattr("__await__")? {
                let locals = slot.get()?;
                let fut = pyo3_async_runtimes::into_future_with_locals(&locals, out)?;
                Ok(Called::Pending(Box::pin(fut)))
            } else {
                Ok(Called::Done(out.unbind()))
            }
        })
    })
    .await
    .map_err(|e| PyRuntimeError::new_err(format!("the Python callable's thread failed: {e}")))??;
    match called {
        Called::Done(v) => Ok(v),
        Called::Pending(f) => f.await,
    }
}

fn describe(e: &PyErr) -> String {
    Python::attach(|py| {
        let name = e
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".to_owned());
        format!("{name}: {}", e.value(py))
    })
}

fn rust_err(e: toolwire::Error) -> PyErr {
    errors::to_py(&e)
}

/// An HTTP client for one provider.
#[pyclass(module = "toolwire._toolwire")]
pub struct Client {
    inner: RustClient,
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (provider, *, base_url = None, api_key = None, headers = None))]
    fn new(
        provider: &str,
        base_url: Option<String>,
        api_key: Option<String>,
        headers: Option<Vec<(String, String)>>,
    ) -> PyResult<Self> {
        let kind = kind_of(provider)?;
        let mut b = RustClient::builder(kind);
        if let Some(u) = base_url {
            b = b.base_url(u);
        }
        if let Some(k) = api_key {
            b = b.api_key(k);
        }
        for (n, v) in headers.unwrap_or_default() {
            b = b.header(n, v);
        }
        // Building installs the TLS provider and may read the environment: no runtime needed.
        let _guard = pyo3_async_runtimes::tokio::get_runtime().enter();
        Ok(Self {
            inner: b.build().map_err(rust_err)?,
        })
    }

    /// The provider's name.
    #[getter]
    fn provider(&self) -> &'static str {
        self.inner.provider().info().kind.name()
    }

    #[getter]
    fn base_url(&self) -> String {
        self.inner.base_url().to_owned()
    }

    /// One turn, not streamed: the canonical response.
    fn chat<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let req: ChatRequest = conv::extract(request, "request")?;
        let client = self.inner.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let r = client.chat(&req).await.map_err(rust_err)?;
            Python::attach(|py| ser_to_py(py, &r).map(Bound::unbind))
        })
    }

    /// One turn, streamed: an async iterator of event dicts (`await stream.finish()` for the
    /// response).
    fn stream<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let req: ChatRequest = conv::extract(request, "request")?;
        let client = self.inner.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let s = client.stream(&req).await.map_err(rust_err)?;
            Ok(ChatStream {
                inner: Arc::new(tokio::sync::Mutex::new(Some(s))),
            })
        })
    }
}

/// A streamed turn: `async for event in stream`, then `await stream.finish()`.
#[pyclass(module = "toolwire._toolwire")]
pub struct ChatStream {
    inner: Arc<tokio::sync::Mutex<Option<RustChatStream>>>,
}

#[pymethods]
impl ChatStream {
    fn __aiter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = Arc::clone(&self.inner);
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let mut guard = inner.lock().await;
            let Some(s) = guard.as_mut() else {
                return Err(PyStopAsyncIteration::new_err(()));
            };
            match s.next().await {
                Some(Ok(e)) => Python::attach(|py| ser_to_py(py, &e).map(Bound::unbind)),
                Some(Err(e)) => Err(rust_err(e)),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }

    /// Reads what is left; the canonical response.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = Arc::clone(&self.inner);
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let s = inner.lock().await.take();
            let Some(s) = s else {
                return Err(errors::input("stream", "finish() was called already"));
            };
            let r = s.finish().await.map_err(rust_err)?;
            Python::attach(|py| ser_to_py(py, &r).map(Bound::unbind))
        })
    }
}

/// Tools whose handlers are Python callables: the registry validates arguments against each
/// tool's JSON Schema and enforces its timeout.
#[pyclass(module = "toolwire._toolwire", subclass)]
pub struct ToolRegistry {
    inner: RustRegistry,
    slot: LoopSlot,
}

#[pymethods]
impl ToolRegistry {
    #[new]
    #[pyo3(signature = (*, strict = None, max_result_bytes = None))]
    fn new(strict: Option<bool>, max_result_bytes: Option<usize>) -> Self {
        let mut inner = RustRegistry::new();
        if let Some(s) = strict {
            inner = inner.with_strict(s);
        }
        if let Some(n) = max_result_bytes {
            inner = inner.with_max_result_bytes(n);
        }
        Self {
            inner,
            slot: LoopSlot::default(),
        }
    }

    /// Registers `handler` (called with the arguments dict; sync or async; its return value,
    /// JSON, is the result; an exception is an error result the model sees).
    #[pyo3(signature = (name, description, parameters, handler, *, timeout = None, source = None, strict = false))]
    #[allow(clippy::too_many_arguments)]
    fn register(
        &self,
        name: &str,
        description: &str,
        parameters: &Bound<'_, PyAny>,
        handler: Py<PyAny>,
        timeout: Option<f64>,
        source: Option<String>,
        strict: bool,
    ) -> PyResult<()> {
        let parameters = from_py(parameters, "parameters")?;
        let definition = ToolDefinition::new(name, description)
            .and_then(|d| d.with_parameters(parameters))
            .map_err(rust_err)?
            .with_strict(strict);
        let handler = Arc::new(handler);
        let slot = self.slot.clone();
        let mut tool = Tool::from_input_fn(definition, move |input: ToolInput| {
            let handler = Arc::clone(&handler);
            let slot = slot.clone();
            async move {
                let out = call_python(handler, slot, input.arguments)
                    .await
                    .map_err(|e| ToolError::new(describe(&e)))?;
                Python::attach(|py| from_py(out.bind(py), "result")).map_err(|e| {
                    ToolError::new(format!("the result is not JSON: {}", describe(&e)))
                })
            }
        });
        if let Some(t) = timeout {
            let d = Duration::try_from_secs_f64(t)
                .map_err(|e| errors::input("timeout", e.to_string()))?;
            tool = tool.with_timeout(d);
        }
        if let Some(s) = source {
            tool = tool.with_source(s);
        }
        self.inner.register(tool).map_err(rust_err)
    }

    fn unregister(&self, name: &str) -> bool {
        self.inner.unregister(name)
    }

    fn __contains__(&self, name: &str) -> bool {
        self.inner.contains(name)
    }

    /// The tool definitions (canonical dicts), as the model receives them.
    fn definitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.inner.definitions(&ToolSelection::new()))
    }

    /// Runs one call (a canonical tool call dict) and returns its result dict.
    fn dispatch<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let call: ToolCall = conv::extract(call, "call")?;
        self.slot.capture(py)?;
        let inner = self.inner.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let r = inner.dispatch(&call, &ToolSelection::new()).await;
            Python::attach(|py| ser_to_py(py, &r).map(Bound::unbind))
        })
    }
}

fn decision(py: Python<'_>, out: &Bound<'_, PyAny>) -> ToolDecision {
    if out.is_none() {
        return ToolDecision::Approve;
    }
    if let Ok(b) = out.extract::<bool>() {
        return if b {
            ToolDecision::Approve
        } else {
            ToolDecision::Deny("denied by the before_tool hook".to_owned())
        };
    }
    if let Ok(s) = out.cast::<PyString>() {
        return ToolDecision::Deny(s.to_string());
    }
    match from_py(out, "before_tool result") {
        Ok(v @ Value::Object(_)) => ToolDecision::Rewrite(v),
        Ok(_) | Err(_) => {
            let _ = py;
            ToolDecision::Deny(
                "the before_tool hook returned neither None, a bool, a str nor a dict".to_owned(),
            )
        }
    }
}

fn after(out: &Bound<'_, PyAny>) -> AfterTurn {
    if out.is_none() {
        return AfterTurn::Continue;
    }
    if let Ok(b) = out.extract::<bool>() {
        return if b {
            AfterTurn::Continue
        } else {
            AfterTurn::Stop
        };
    }
    if let Ok(s) = out.extract::<String>() {
        return if s == "stop" {
            AfterTurn::Stop
        } else {
            AfterTurn::Continue
        };
    }
    match conv::extract::<ChatRequest>(out, "after_turn result") {
        Ok(req) => AfterTurn::Edit(Box::new(req)),
        Err(_) => AfterTurn::Stop,
    }
}

fn report_json(r: &TurnReport) -> Value {
    json!({
        "turn": r.turn,
        "response": r.response,
        "results": r.results,
        "usage": r.usage,
        "elapsed": r.elapsed.as_secs_f64(),
        "next": r.next,
    })
}

fn event_json(e: &AgentEvent) -> Value {
    match e {
        AgentEvent::Model(ev) => json!({"type": "model", "event": ev}),
        AgentEvent::ToolStarted(call) => json!({"type": "tool_started", "call": call}),
        AgentEvent::ToolProgress {
            call_id,
            name,
            progress,
        } => {
            json!({"type": "tool_progress", "call_id": call_id, "name": name, "progress": progress})
        }
        AgentEvent::ToolSummary {
            call_id,
            name,
            summary,
        } => {
            json!({"type": "tool_summary", "call_id": call_id, "name": name, "summary": summary})
        }
        AgentEvent::ToolFinished(r) => json!({"type": "tool_finished", "result": r}),
        AgentEvent::ToolDenied { call, message } => {
            json!({"type": "tool_denied", "call": call, "message": message})
        }
        AgentEvent::ToolRewritten { call, original } => {
            json!({"type": "tool_rewritten", "call": call, "original": original})
        }
        AgentEvent::HookFailed { hook, message } => {
            json!({"type": "hook_failed", "hook": hook, "message": message})
        }
        AgentEvent::TurnDone {
            turn,
            response,
            results,
        } => {
            json!({"type": "turn_done", "turn": turn, "response": response, "results": results})
        }
        AgentEvent::Stopped(reason) => json!({"type": "stopped", "reason": reason.to_string()}),
        _ => json!({"type": "other"}),
    }
}

fn outcome_json(o: &AgentOutcome) -> Value {
    json!({
        "response": o.response,
        "messages": o.messages,
        "turns": o.turns,
        "provider": o.provider.name(),
        "stopped": o.stopped.as_ref().map(ToString::to_string),
    })
}

/// The agent loop: model turns and tool calls until the model answers without calls.
#[pyclass(module = "toolwire._toolwire")]
pub struct Agent {
    inner: RustAgent,
    slot: LoopSlot,
}

#[pymethods]
impl Agent {
    #[new]
    #[pyo3(signature = (client, registry, *, model = None, max_turns = None, before_tool = None, after_turn = None, hook_timeout = None))]
    fn new(
        client: &Client,
        registry: &ToolRegistry,
        model: Option<String>,
        max_turns: Option<usize>,
        before_tool: Option<Py<PyAny>>,
        after_turn: Option<Py<PyAny>>,
        hook_timeout: Option<f64>,
    ) -> PyResult<Self> {
        let slot = registry.slot.clone();
        let mut inner = RustAgent::new(client.inner.clone(), registry.inner.clone());
        if let Some(m) = model {
            inner = inner.with_model(m);
        }
        if let Some(n) = max_turns {
            inner = inner.with_max_turns(n);
        }
        if let Some(t) = hook_timeout {
            let d = Duration::try_from_secs_f64(t)
                .map_err(|e| errors::input("hook_timeout", e.to_string()))?;
            inner = inner.with_hook_timeout(d);
        }
        if let Some(hook) = before_tool {
            let hook = Arc::new(hook);
            let slot = slot.clone();
            inner = inner.before_tool(move |call: ToolCall| {
                let hook = Arc::clone(&hook);
                let slot = slot.clone();
                async move {
                    let arg = serde_json::to_value(&call).unwrap_or(Value::Null);
                    match call_python(hook, slot, arg).await {
                        Ok(out) => Python::attach(|py| decision(py, out.bind(py))),
                        Err(e) => ToolDecision::Deny(format!(
                            "the before_tool hook raised {}",
                            describe(&e)
                        )),
                    }
                }
            });
        }
        if let Some(hook) = after_turn {
            let hook = Arc::new(hook);
            let slot = slot.clone();
            inner = inner.after_turn(move |report: TurnReport| {
                let hook = Arc::clone(&hook);
                let slot = slot.clone();
                async move {
                    match call_python(hook, slot, report_json(&report)).await {
                        Ok(out) => Python::attach(|py| after(out.bind(py))),
                        // Fail closed: a hook that raised ends the run (StopReason hook).
                        Err(_) => AfterTurn::Stop,
                    }
                }
            });
        }
        Ok(Self { inner, slot })
    }

    /// Starts a run: an async iterator of event dicts; `await run.finish()` for the outcome.
    fn run(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<AgentRun> {
        let req: ChatRequest = conv::extract(request, "request")?;
        self.slot.capture(py)?;
        let _guard = pyo3_async_runtimes::tokio::get_runtime().enter();
        let stream = self.inner.run(req);
        Ok(AgentRun {
            inner: Arc::new(tokio::sync::Mutex::new(Some(stream))),
            slot: self.slot.clone(),
        })
    }

    /// One user prompt to the final answer's text.
    fn prompt<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py)?;
        let agent = self.inner.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            agent.prompt(text).await.map_err(rust_err)
        })
    }
}

/// A running agent: `async for event in run`, then `await run.finish()`.
#[pyclass(module = "toolwire._toolwire")]
pub struct AgentRun {
    inner: Arc<tokio::sync::Mutex<Option<AgentStream>>>,
    slot: LoopSlot,
}

#[pymethods]
impl AgentRun {
    fn __aiter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py)?;
        let inner = Arc::clone(&self.inner);
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let mut guard = inner.lock().await;
            let Some(s) = guard.as_mut() else {
                return Err(PyStopAsyncIteration::new_err(()));
            };
            match s.next().await {
                Some(Ok(e)) => Python::attach(|py| to_py(py, &event_json(&e)).map(Bound::unbind)),
                Some(Err(e)) => Err(rust_err(e)),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }

    /// Runs to the end: `{"response", "messages", "turns", "provider", "stopped"}`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py)?;
        let inner = Arc::clone(&self.inner);
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let s = inner.lock().await.take();
            let Some(s) = s else {
                return Err(errors::input("run", "finish() was called already"));
            };
            let o = s.finish().await.map_err(rust_err)?;
            Python::attach(|py| to_py(py, &outcome_json(&o)).map(Bound::unbind))
        })
    }
}

fn mock_reply(v: Value, provider: toolwire::ProviderKind) -> PyResult<MockReply> {
    let Value::Object(map) = v else {
        return Err(errors::input("replies", "each reply is a dict"));
    };
    if let Some(Value::String(t)) = map.get("text") {
        return Ok(MockReply::text(t.clone()));
    }
    if let Some(Value::Array(calls)) = map.get("tool_calls") {
        let mut out = Vec::with_capacity(calls.len());
        for (i, c) in calls.iter().enumerate() {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{}", i + 1), str::to_owned);
            let Some(name) = c.get("name").and_then(Value::as_str) else {
                return Err(errors::input(
                    &format!("replies.tool_calls[{i}]"),
                    "no \"name\"",
                ));
            };
            let raw = match c.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "{}".to_owned(),
            };
            out.push(ToolCall::new(id, name, raw));
        }
        return Ok(MockReply::tool_calls(out));
    }
    if let Some(r) = map.get("response") {
        let r: ChatResponse = serde_json::from_value(r.clone())
            .map_err(|e| errors::input("replies.response", e.to_string()))?;
        return Ok(MockReply::Response(r));
    }
    if let Some(e) = map.get("error") {
        let status = e
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok());
        let message = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("mock error");
        let mut api = ApiError::new(provider, status, message);
        if let Some(code) = e.get("code").and_then(Value::as_str) {
            api = api.with_code(code);
        }
        return Ok(MockReply::Error(api));
    }
    Err(errors::input(
        "replies",
        "a reply holds \"text\", \"tool_calls\", \"response\" or \"error\"",
    ))
}

/// The loopback mock provider: answers on 127.0.0.1 in `provider`'s wire with the scripted
/// replies, in order.
#[pyclass(module = "toolwire._toolwire")]
pub struct MockServer {
    inner: Mutex<Option<RustMockServer>>,
    url: String,
}

#[pymethods]
impl MockServer {
    /// `await MockServer.start("openai", [{"tool_calls": [...]}, {"text": "..."}])`.
    #[staticmethod]
    fn start<'py>(
        py: Python<'py>,
        provider: &str,
        replies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kind = kind_of(provider)?;
        let Value::Array(items) = from_py(replies, "replies")? else {
            return Err(errors::input("replies", "a list of replies"));
        };
        let mut script = Script::new();
        for item in items {
            script = script.then(mock_reply(item, kind)?);
        }
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let server = RustMockServer::start(kind, script)
                .await
                .map_err(rust_err)?;
            let url = server.url();
            Ok(MockServer {
                inner: Mutex::new(Some(server)),
                url,
            })
        })
    }

    /// The base URL to give a client.
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// The requests received so far: `{"method", "path", "headers", "body"}`.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("mock poisoned"))?;
        let list: Vec<Value> = guard
            .as_ref()
            .map(|s| {
                s.requests()
                    .into_iter()
                    .map(|r| json!({"method": r.method, "path": r.path, "headers": r.headers, "body": r.body}))
                    .collect()
            })
            .unwrap_or_default();
        to_py(py, &Value::Array(list))
    }

    /// Replies not yet used.
    #[getter]
    fn remaining(&self) -> PyResult<usize> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("mock poisoned"))?;
        Ok(guard.as_ref().map_or(0, RustMockServer::remaining))
    }

    /// Stops the server.
    fn close(&self) -> PyResult<()> {
        let server = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("mock poisoned"))?
            .take();
        let _guard = pyo3_async_runtimes::tokio::get_runtime().enter();
        drop(server);
        Ok(())
    }
}

/// Registers the async side on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<ChatStream>()?;
    m.add_class::<ToolRegistry>()?;
    m.add_class::<Agent>()?;
    m.add_class::<AgentRun>()?;
    m.add_class::<MockServer>()?;
    Ok(())
}
