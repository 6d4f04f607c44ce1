//! The tool server (`toolwire serve`): plugins in other processes register tools over HTTP, the
//! server calls them back when a model picks them, and runs a model session per role.
//!
#![doc = include_str!("../../docs/server.md")]

mod api;
mod body;
mod chat;
mod config;
mod gate;
mod gateway;
mod ledger;
mod listen;
mod live;
#[cfg(feature = "mcp")]
mod mcp;
mod offline;
mod plugin;
mod store;

pub use config::{
    DEFAULT_DRAIN, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_PORT, DEFAULT_ROLE, OFFLINE_MODEL, RoleConfig,
    ServerConfig,
};
pub use gate::{is_loopback_host, is_loopback_peer};
#[cfg(feature = "mcp")]
pub use mcp::McpMount;
pub use offline::{MAX_CALLS as OFFLINE_MAX_CALLS, arguments_from, example_arguments};
pub use plugin::{Plugin, PluginHandle};

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::tools::ToolRegistry;
use body::Reject;
use ledger::{Ledger, Op, Outcome};
use live::{Live, LiveEvent};

/// One role as the server runs it.
pub(crate) struct Role {
    pub config: RoleConfig,
    /// The live client; `None` runs the role on the offline mock provider.
    pub client: Option<Client>,
    /// The tools registered for this role (including those registered for every role).
    pub registry: ToolRegistry,
}

/// What every request shares.
pub(crate) struct App {
    pub roles: Vec<Role>,
    /// The registrations; held while a change is written to the store, so changes apply one
    /// at a time, in order, and none is lost.
    pub ledger: Mutex<Ledger>,
    pub store: Option<Arc<store::Store>>,
    pub live: Live,
    /// The gateway's upstream clients and counters.
    pub gateway: gateway::Gateway,
    shutdown: watch::Receiver<bool>,
}

impl App {
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.iter().find(|r| r.config.name == name)
    }

    pub fn has_role(&self, name: &str) -> bool {
        self.role(name).is_some()
    }

    /// Resolves when the server begins shutting down (ends long-lived streams).
    pub fn shutdown_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shutdown.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    }

    /// Applies a change: to the store (one transaction), and only when that is committed, to
    /// the ledger and the roles' registries, in place. A store that cannot be written leaves
    /// everything as it was (500).
    pub async fn change(&self, op: Op) -> std::result::Result<Outcome, Reject> {
        let mut ledger = self.ledger.lock().await;
        if let Some(store) = &self.store {
            let targets: Vec<String> = self
                .roles
                .iter()
                .map(|r| r.config.name.clone())
                .filter(|name| op.role().is_none_or(|x| x == name))
                .collect();
            let store = Arc::clone(store);
            let write = op.clone();
            let written = tokio::task::spawn_blocking(move || store.apply(&write, &targets))
                .await
                .unwrap_or_else(|e| Err(Error::input("state", e.to_string())));
            if let Err(e) = written {
                return Err(Reject::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    e.to_string(),
                ));
            }
        }
        let mut outcome = ledger.apply(&op);
        outcome.failed = self.apply_to_registries(&op);
        drop(ledger);
        // Only a removal can leave statistics of a tool that is gone (and the check looks up
        // every tool with statistics, so a registration does not pay for it).
        if outcome.removed > 0 {
            self.live.retain_stats(|role, name| {
                self.role(role).is_some_and(|r| r.registry.contains(name))
            });
        }
        self.live.tools_changed();
        Ok(outcome)
    }

    /// Mirrors a change in the roles' registries; returns the roles that refused it.
    fn apply_to_registries(&self, op: &Op) -> Vec<serde_json::Value> {
        let mut failed = Vec::new();
        let targets = |role: &Option<String>| -> Vec<&Role> {
            self.roles
                .iter()
                .filter(|r| role.as_ref().is_none_or(|x| *x == r.config.name))
                .collect()
        };
        match op {
            Op::Register(entry) => {
                for r in targets(&entry.scope) {
                    if let Err(e) = entry.tool().and_then(|t| r.registry.register(t)) {
                        failed.push(json!({"role": r.config.name, "error": e.to_string()}));
                    }
                }
            }
            Op::Unregister { name, role } => {
                for r in targets(role) {
                    r.registry.unregister(name);
                }
            }
            Op::Clear { source, role } => {
                for r in targets(role) {
                    r.registry.clear_source(source);
                }
            }
        }
        failed
    }
}

/// A running server. Dropping it stops the server at once; [`ServerHandle::shutdown`] lets
/// requests in flight finish first.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    roles: Vec<(String, bool)>,
    stop: watch::Sender<bool>,
    drain: Duration,
    imported: Option<PathBuf>,
    task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The bound address (127.0.0.1 unless the config says `listen`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<address>:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Where the JSON state file of an earlier version was kept after it was imported into the
    /// state database at this start (`None`: nothing was imported).
    pub fn imported(&self) -> Option<&std::path::Path> {
        self.imported.as_deref()
    }

    /// Each role's name and whether it runs offline on the mock provider.
    pub fn roles(&self) -> &[(String, bool)] {
        &self.roles
    }

    /// Stops accepting connections, ends event streams, closes idle connections, waits up to
    /// [`ServerConfig::drain`] for requests in flight, then stops.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            let grace = self.drain + Duration::from_millis(500);
            if tokio::time::timeout(grace, task).await.is_err() {
                abort.abort();
            }
        }
    }

    /// Runs until the server stops (it does not stop on its own).
    pub async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts a server on 127.0.0.1: checks the config, builds each role's client (a role without
/// a key runs offline), loads the state file, binds, and serves in the background.
///
/// Errors ([`Error::Input`]) name what is wrong: a role, the state file, or the port.
pub async fn start(config: ServerConfig) -> Result<ServerHandle> {
    config.check()?;
    let mut roles = Vec::new();
    for role in &config.roles {
        roles.push(Role {
            client: client_for(role)?,
            config: role.clone(),
            registry: ToolRegistry::new(),
        });
    }
    let names: Vec<String> = config.roles.iter().map(|r| r.name.clone()).collect();
    let (ledger, store, imported) = match &config.state_file {
        Some(path) => {
            let opened = store::open(path, &names)?;
            (opened.ledger, Some(Arc::new(opened.store)), opened.imported)
        }
        None => (Ledger::new(&names), None, None),
    };
    for r in &ledger.roles {
        if let Some(role) = roles.iter().find(|x| x.config.name == r.role) {
            for entry in &r.entries {
                role.registry.register(entry.tool()?)?;
            }
        }
    }
    let bind = config
        .listen
        .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::LOCALHOST, config.port)));
    let listener = tokio::net::TcpListener::bind(bind).await.map_err(|e| {
        // A taken port is the common case: say how to go on.
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            " (another process is listening there: stop it, or pick another port with \
                 --port, or --port 0 for any free one)"
        } else {
            ""
        };
        Error::input("port", format!("cannot listen on {bind}: {e}{hint}"))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::input("port", format!("cannot read the bound address: {e}")))?;
    let (stop, shutdown) = watch::channel(false);
    let handle_roles = roles
        .iter()
        .map(|r| (r.config.name.clone(), r.client.is_none()))
        .collect();
    let app = Arc::new(App {
        roles,
        ledger: Mutex::new(ledger),
        store,
        live: Live::new(),
        gateway: gateway::Gateway::new(config.gateway_keys.clone()),
        shutdown,
    });
    #[cfg(feature = "mcp")]
    mcp::spawn(&app, &config.mcp);
    let limits = listen::Limits {
        header_timeout: config.header_timeout,
        max_connections: config.max_connections,
        max_per_peer: config.max_connections_per_peer,
        cap_loopback_peers: config.cap_loopback_peers,
        drain: config.drain,
    };
    let stopping = app.shutdown.clone();
    let router = router(app);
    let task = tokio::spawn(listen::serve(listener, router, limits, stopping));
    Ok(ServerHandle {
        addr,
        roles: handle_roles,
        stop,
        drain: config.drain,
        imported,
        task: Some(task),
    })
}

/// `/mcp`: the server's tools over MCP (feature `mcp`); without it, a 404 that says why.
#[cfg(feature = "mcp")]
fn mcp_route() -> axum::routing::MethodRouter<Arc<App>> {
    axum::routing::any(mcp::endpoint)
}

#[cfg(not(feature = "mcp"))]
fn mcp_route() -> axum::routing::MethodRouter<Arc<App>> {
    axum::routing::any(|| async {
        Reject::new(
            StatusCode::NOT_FOUND,
            "/mcp needs toolwire built with the `mcp` feature",
        )
        .into_response()
    })
}

/// The role's client, or `None` (offline) when the provider is the mock or no key is found.
fn client_for(role: &RoleConfig) -> Result<Option<Client>> {
    let Some(kind) = role.provider else {
        return Ok(None);
    };
    let mut builder = Client::builder(kind);
    if let Some(url) = &role.base_url {
        builder = builder.base_url(url.as_str());
    }
    if let Some(var) = &role.api_key_env {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => builder = builder.api_key(key),
            _ => return Ok(None),
        }
    }
    match builder.build() {
        Ok(client) => Ok(Some(client)),
        Err(Error::Input { path, .. }) if path == "api_key" => Ok(None),
        Err(Error::Input { path, message }) => Err(Error::input(
            format!("role {:?}: {path}", role.name),
            message,
        )),
        Err(e) => Err(e),
    }
}

fn router(app: Arc<App>) -> Router {
    let gateway = gateway::router(Arc::clone(&app));
    Router::new()
        .route("/", get(page))
        .route("/api/tools", get(api::list))
        .route("/api/tools/register", post(api::register))
        .route("/api/tools/unregister", post(api::unregister))
        .route("/api/tools/clear", post(api::clear))
        .route("/api/calls", get(api::calls))
        .route("/api/events", get(events))
        .route("/api/chat", post(chat::chat))
        .route("/api/tools/progress", post(chat::progress))
        .route("/mcp", mcp_route())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app)
        .layer(axum::middleware::from_fn(gate::loopback_only))
        .merge(gateway)
}

async fn not_found() -> Response {
    Reject::new(
        StatusCode::NOT_FOUND,
        "no such route; see GET / for the API",
    )
    .into_response()
}

async fn method_not_allowed() -> Response {
    Reject::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "this route does not take that method",
    )
    .into_response()
}

/// `GET /`: the live page (tools by role, recent calls). The state at the time of the request
/// is in the page itself, so it shows everything as soon as it has loaded; later changes come
/// from `/api/events`.
async fn page(axum::extract::State(app): axum::extract::State<Arc<App>>) -> Response {
    let initial = json!({
        "tools": api::tools_json(&app, None).await,
        "calls": {"ok": true, "calls": app.live.recent()},
    });
    let html = live::PAGE.replace(live::INITIAL_STATE, &live::script_json(&initial));
    let mut response = html.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /api/events`: `tools` when registrations change, `call` (a call's log record) when a
/// call starts or finishes, `lagged` when events were dropped for a slow reader (read
/// everything again).
async fn events(axum::extract::State(app): axum::extract::State<Arc<App>>) -> Response {
    let rx = app.live.subscribe();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(LiveEvent::Tools) => Event::default().event("tools").data("{}"),
            Ok(LiveEvent::Call(record)) => Event::default()
                .event("call")
                .data(serde_json::to_string(&record).unwrap_or_default()),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                Event::default().event("lagged").data(n.to_string())
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<Event, std::convert::Infallible>(event), rx))
    })
    .take_until(app.shutdown_signal());
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
