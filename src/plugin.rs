//! The plugin side: publish a [`ToolRegistry`]'s tools to a running tool server and answer
//! their callbacks from this process.
//!
//! A [`Plugin`] binds its own callback server on 127.0.0.1 (any free port), then keeps its
//! tools published: it registers them as soon as the server answers (retrying while it does
//! not), checks every few seconds that the server still lists each of them with this plugin's
//! callback URL and registers again what is missing (a server restarted without a state file,
//! a clear by someone else), follows changes to the registry (new, changed and removed tools),
//! and on [`PluginHandle::shutdown`] clears its source from the server. This is the resilience
//! N.E.K.O. leaves to each plugin, which must notice a main-server restart itself.
//!
//! What a tool's handler reports while it runs (progress, a summary: [`crate::tools::Reporter`])
//! is forwarded to the server's `POST /api/tools/progress`, so the chat waiting on the call
//! streams it and the server's page shows it.
//!
//! The callback timeout registered with the server is the tool's own timeout plus
//! [`CALLBACK_MARGIN`] (at most 300 s), so a slow tool's own timeout error reaches the model
//! before the server gives up on the HTTP request.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::server::body::{Fields, read_object};
use crate::server::gate;
use crate::tools::{
    EXTERNAL_SOURCE, MAX_TIMEOUT, Reporter, ToolInfo, ToolRegistry, ToolSelection, Update,
};
use crate::types::ToolCall;

/// Added to a tool's timeout for the server's side of the callback.
pub const CALLBACK_MARGIN: Duration = Duration::from_secs(2);

/// The longest wait between attempts while the server does not answer or refuses.
const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// The largest callback request the plugin reads.
const MAX_CALLBACK_BODY: usize = 8 << 20;

/// Publishes a registry's tools to a tool server (see the module docs).
///
/// ```no_run
/// # async fn example() -> toolwire::Result<()> {
/// use serde_json::json;
/// use toolwire::plugin::Plugin;
/// use toolwire::tools::ToolRegistry;
///
/// let tools = ToolRegistry::new();
/// tools.register_fn("shout", "Upper-cases text", json!({"type": "object"}), |args| async move {
///     Ok(json!(args["text"].as_str().unwrap_or_default().to_uppercase()))
/// })?;
/// let plugin = Plugin::new("http://127.0.0.1:48911", tools)
///     .with_source("plugin:shout")
///     .start()
///     .await?;
/// plugin.registered().await;
/// // ... the server's models can call `shout` now ...
/// plugin.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Plugin {
    server: String,
    registry: ToolRegistry,
    source: String,
    role: Option<String>,
    retry_interval: Duration,
    check_interval: Duration,
}

impl Plugin {
    /// A plugin publishing `registry`'s tools to the server at `server_url`
    /// (`http://127.0.0.1:48911`), with source `"external"`, for every role.
    pub fn new(server_url: impl Into<String>, registry: ToolRegistry) -> Self {
        Self {
            server: server_url.into().trim_end_matches('/').to_owned(),
            registry,
            source: EXTERNAL_SOURCE.to_owned(),
            role: None,
            retry_interval: Duration::from_millis(500),
            check_interval: Duration::from_secs(3),
        }
    }

    /// The source the tools are registered under (`"plugin:<id>"`); shutdown clears it.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// Registers for one role instead of every role (a tool's own role wins over this).
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// How long to wait before trying again while the server does not answer (default 0.5 s;
    /// doubled after each failure in a row, up to 10 s).
    pub fn with_retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How often to check that the server still has the tools (default 3 s).
    pub fn with_check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Binds the callback server on 127.0.0.1 and starts publishing in the background; returns
    /// at once (use [`PluginHandle::registered`] to wait for the server).
    pub async fn start(self) -> Result<PluginHandle> {
        if self.source.is_empty() {
            return Err(Error::input("source", "the source is empty"));
        }
        let http = crate::tls::http_client_builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| {
                Error::input("server_url", format!("cannot build the HTTP client: {e}"))
            })?;
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| Error::input("callback", format!("cannot listen on 127.0.0.1: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::input("callback", format!("cannot read the bound address: {e}")))?;
        let (stop, stopped) = watch::channel(false);
        let (published, registered) = watch::channel(0u64);
        let selection = match &self.role {
            Some(role) => ToolSelection::new().with_role(role.clone()),
            None => ToolSelection::new(),
        }
        .with_all_toolsets();
        let answering = Answering {
            registry: self.registry.clone(),
            selection,
            http: http.clone(),
            progress_url: format!("{}/api/tools/progress", self.server),
        };
        let callbacks = Router::new()
            .route("/tools/{name}", post(callback))
            .with_state(Arc::new(answering))
            .layer(axum::middleware::from_fn(gate::loopback_only));
        let mut server_stop = stopped.clone();
        let server = tokio::spawn(async move {
            let service = callbacks.into_make_service_with_connect_info::<SocketAddr>();
            let _ = axum::serve(listener, service)
                .with_graceful_shutdown(async move {
                    let _ = server_stop.wait_for(|s| *s).await;
                })
                .await;
        });
        let last_error = Arc::new(Mutex::new(None));
        let keeper = Keeper {
            plugin: self.clone(),
            http: http.clone(),
            base: format!("http://{addr}/tools"),
            published: HashMap::new(),
            counter: published,
            last_error: Arc::clone(&last_error),
        };
        let keeper = tokio::spawn(keeper.run(stopped));
        Ok(PluginHandle {
            plugin: self,
            http,
            addr,
            stop,
            registered,
            last_error,
            tasks: vec![server, keeper],
        })
    }
}

/// A running plugin. Dropping it stops the callback server without unregistering (a crashed
/// plugin's tools then answer with connection errors until it comes back);
/// [`PluginHandle::shutdown`] unregisters first.
#[derive(Debug)]
pub struct PluginHandle {
    plugin: Plugin,
    http: reqwest::Client,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    registered: watch::Receiver<u64>,
    last_error: Arc<Mutex<Option<String>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl PluginHandle {
    /// The callback server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The callback URL registered for a tool.
    pub fn callback_url(&self, tool: &str) -> String {
        format!("http://{}/tools/{tool}", self.addr)
    }

    /// Why the last attempt to reach the server failed, while it keeps failing (`None` once
    /// an attempt succeeds).
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many times the plugin has (re)published its tools so far.
    pub fn publications(&self) -> u64 {
        *self.registered.borrow()
    }

    /// Waits until the tools have been published at least once.
    pub async fn registered(&self) {
        self.published_after(0).await;
    }

    /// Waits until the tools have been published more than `count` times (use with
    /// [`PluginHandle::publications`] to wait for a re-registration).
    pub async fn published_after(&self, count: u64) {
        let mut rx = self.registered.clone();
        let _ = rx.wait_for(|n| *n > count).await;
    }

    /// Stops publishing, clears the plugin's source on the server (`POST /api/tools/clear`),
    /// and stops the callback server. The error says why the server could not be told.
    pub async fn shutdown(mut self) -> Result<()> {
        let _ = self.stop.send(true);
        let body = json!({"source": self.plugin.source, "role": Value::Null});
        let url = format!("{}/api/tools/clear", self.plugin.server);
        let result = self.http.post(&url).json(&body).send().await;
        for task in self.tasks.drain(..) {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        match result {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(Error::input(
                "server_url",
                format!("{url} answered HTTP {}", r.status().as_u16()),
            )),
            Err(e) => Err(Error::input("server_url", format!("{url}: {e}"))),
        }
    }
}

impl Drop for PluginHandle {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `POST /tools/{name}`: `{name, arguments, call_id, raw_arguments}` → the envelope
/// `{"output", "is_error", "error"}` (and `content` when the tool answered with parts), always
/// HTTP 200 for a call that reached a tool.
async fn callback(
    State(state): State<Arc<Answering>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let map = match read_object(&headers, body, MAX_CALLBACK_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let mut f = Fields::new(map);
    let _ = f.string("name");
    let call_id = f.string("call_id").unwrap_or_default();
    let raw = f.string("raw_arguments").unwrap_or_default();
    let arguments = f.take("arguments");
    // N.E.K.O. may add fields over time; a callback ignores what it does not use.
    let _ = f;
    // The argument text is the model's own when the server sent it; otherwise the object.
    let raw = if raw.trim().is_empty() {
        match arguments {
            Some(Value::Object(map)) => Value::Object(map).to_string(),
            _ => "{}".to_owned(),
        }
    } else {
        raw
    };
    let call = ToolCall::new(call_id, name, raw);
    let (reporter, mut reports) = Reporter::channel();
    let running = state
        .registry
        .dispatch_reporting(&call, &state.selection, reporter);
    let mut running = std::pin::pin!(running);
    let mut heard = true;
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            update = reports.next(), if heard => heard = state.forward(&call, update).await,
        }
    };
    // The last report still goes out while the server waits for this answer.
    if heard {
        state.forward(&call, reports.take()).await;
    }
    let mut body =
        json!({"output": result.output, "is_error": result.is_error, "error": result.error});
    // The parts the model sees (an image a tool made) travel too; the callback reads them.
    if !result.content.is_empty() {
        body["content"] = json!(result.content);
    }
    Json(body).into_response()
}

/// What the callback server answers with: the tools, and where their progress goes.
struct Answering {
    registry: ToolRegistry,
    selection: ToolSelection,
    http: reqwest::Client,
    /// The server's `POST /api/tools/progress`.
    progress_url: String,
}

impl Answering {
    /// Sends a running call's update to the server, which hands it to the chat waiting on the
    /// call; whether the server still wants reports for it (nobody listens, or the call ended,
    /// and it answers 404: the rest are not sent). A report the server cannot take is not
    /// worth failing the call for.
    async fn forward(&self, call: &ToolCall, update: Update) -> bool {
        if update.progress.is_none() && update.summary.is_none() {
            return true;
        }
        let body = Report {
            call_id: &call.id,
            name: &call.name,
            summary: update.summary,
            progress: update.progress,
        };
        let sent = self
            .http
            .post(&self.progress_url)
            .timeout(PROGRESS_TIMEOUT)
            .json(&body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => false,
            Ok(r) if !r.status().is_success() => {
                tracing::debug!(status = r.status().as_u16(), "progress report refused");
                true
            }
            Ok(_) => true,
            Err(e) => {
                tracing::debug!(error = %e, "progress report not delivered");
                true
            }
        }
    }
}

/// The body of `POST /api/tools/progress`: the call, its summary and its progress (fields
/// `progress`, `total`, `message`), each only when reported.
#[derive(serde::Serialize)]
struct Report<'a> {
    call_id: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(flatten)]
    progress: Option<crate::tools::Progress>,
}

/// How long one progress report may take to deliver (the server answers at once).
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The background task keeping the tools published.
struct Keeper {
    plugin: Plugin,
    http: reqwest::Client,
    base: String,
    /// What was last registered, by name: the request body sent.
    published: HashMap<String, Value>,
    counter: watch::Sender<u64>,
    last_error: Arc<Mutex<Option<String>>>,
}

impl Keeper {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut failures: u32 = 0;
        loop {
            let outcome = self.sync().await;
            // A server that keeps refusing (an unknown role, say) is asked less and less
            // often, up to every [`MAX_RETRY_INTERVAL`].
            let wait = if outcome.is_ok() {
                failures = 0;
                self.plugin.check_interval
            } else {
                failures = failures.saturating_add(1);
                let factor = 1u32 << (failures - 1).min(10);
                self.plugin
                    .retry_interval
                    .checked_mul(factor)
                    .map_or(MAX_RETRY_INTERVAL, |d| d.min(MAX_RETRY_INTERVAL))
            };
            *self
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = outcome.err();
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One round: read the server's list, register what is missing or changed, unregister
    /// what the registry no longer has.
    async fn sync(&mut self) -> std::result::Result<(), String> {
        let listing = self.listing().await?;
        let wanted: Vec<(ToolInfo, Value)> = self
            .plugin
            .registry
            .list()
            .into_iter()
            .filter(|t| t.unavailable.is_none())
            .map(|t| {
                let body = self.body_for(&t);
                (t, body)
            })
            .collect();
        let mut changed = false;
        for (tool, body) in &wanted {
            let url = self.callback_url(&tool.name);
            let known = self.published.get(&tool.name) == Some(body);
            if known && listed(&listing, &tool.name, &url, body["role"].as_str()) {
                continue;
            }
            self.post("register", body).await?;
            self.published.insert(tool.name.clone(), body.clone());
            changed = true;
        }
        let gone: Vec<(String, Value)> = self
            .published
            .iter()
            .filter(|(name, _)| !wanted.iter().any(|(t, _)| t.name == **name))
            .map(|(n, b)| (n.clone(), b["role"].clone()))
            .collect();
        for (name, role) in gone {
            self.post("unregister", &json!({"name": name, "role": role}))
                .await?;
            self.published.remove(&name);
            changed = true;
        }
        if changed {
            self.counter.send_modify(|n| *n += 1);
        } else if *self.counter.borrow() == 0 && wanted.is_empty() {
            // Nothing to publish, but the server is up: that counts as published.
            self.counter.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    fn callback_url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn body_for(&self, tool: &ToolInfo) -> Value {
        let timeout = (tool.timeout + CALLBACK_MARGIN).min(MAX_TIMEOUT);
        json!({
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "callback_url": self.callback_url(&tool.name),
            "role": tool.role.clone().or_else(|| self.plugin.role.clone()),
            "source": self.plugin.source,
            "timeout_seconds": timeout.as_secs_f64(),
        })
    }

    async fn listing(&self) -> std::result::Result<Value, String> {
        let url = format!("{}/api/tools", self.plugin.server);
        let response = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{url} answered HTTP {}", status.as_u16()));
        }
        response
            .json::<Value>()
            .await
            .map_err(|e| format!("{url}: the answer is not JSON: {e}"))
    }

    async fn post(&self, what: &str, body: &Value) -> std::result::Result<(), String> {
        let url = format!("{}/api/tools/{what}", self.plugin.server);
        let response = self
            .http
            .post(&url)
            .json(body)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() || answer.get("ok") == Some(&Value::Bool(false)) {
            return Err(format!(
                "{url} answered HTTP {}: {}",
                status.as_u16(),
                answer
                    .get("error")
                    .or(answer.get("detail"))
                    .unwrap_or(&answer)
            ));
        }
        Ok(())
    }
}

/// Whether the server's list shows `name` with this callback URL: in `role`, or in every role
/// listed when the tool is for every role.
fn listed(listing: &Value, name: &str, url: &str, role: Option<&str>) -> bool {
    let Some(by_role) = listing.get("tools_by_role").and_then(Value::as_object) else {
        return false;
    };
    let has = |tools: &Value| {
        tools.as_array().is_some_and(|tools| {
            tools.iter().any(|t| {
                t.get("name").and_then(Value::as_str) == Some(name)
                    && t.get("callback_url").and_then(Value::as_str) == Some(url)
            })
        })
    };
    match role {
        Some(role) => by_role.get(role).is_some_and(has),
        None => !by_role.is_empty() && by_role.values().all(has),
    }
}
