//! The tool server (`toolwire serve`): plugins in other processes register tools over HTTP, the
//! server calls them back when a model picks them, and runs a model session per role.
//!
//! The folder is laid out by area, each area owning its routes; the table is in "The code,
//! by area" below.
//!
#![doc = include_str!("../../docs/server.md")]

mod api;
mod app;
pub(crate) mod body;
mod bounds;
mod chat;
mod config;
mod fallback;
pub(crate) mod gate;
mod gateway;
mod ledger;
mod limits;
mod listen;
mod live;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mount;
mod offline;
mod page;
mod passthrough;
#[cfg(feature = "redis")]
mod redis_limits;
mod state_key;
mod store;

pub use config::{
    DEFAULT_DRAIN, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_PORT, DEFAULT_ROLE,
    DEFAULT_UPSTREAM_FIRST_BYTE_TIMEOUT, GatewayKey, LimitsConfig, OFFLINE_MODEL, RoleConfig,
    ServerConfig, StoreFailure,
};
pub use gate::{is_loopback_host, is_loopback_peer};
pub use gateway::{GatewayMetrics, MetricSample};
#[cfg(feature = "mcp")]
pub use mount::McpMount;
pub use offline::{MAX_CALLS as OFFLINE_MAX_CALLS, arguments_from, example_arguments};

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::tools::ToolRegistry;
use app::{App, Role};
use body::Reject;
use ledger::Ledger;
use live::Live;

/// A running server. Dropping it stops the server at once; [`ServerHandle::shutdown`] lets
/// requests in flight finish first.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    metrics: GatewayMetrics,
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

    /// A reader of the gateway's counters, the series `GET /metrics` shows (for an exporter;
    /// it stays readable after the server stopped).
    pub fn metrics(&self) -> GatewayMetrics {
        self.metrics.clone()
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
    let seal = state_key::resolve(config.state_key.as_deref(), config.state_file.as_deref())?;
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
    let mut gateway = gateway::Settings::from_config(&config);
    gateway.seal = Some(seal);
    let (router, metrics) = router(app, gateway);
    let task = tokio::spawn(listen::serve(listener, router, limits, stopping));
    Ok(ServerHandle {
        addr,
        metrics,
        roles: handle_roles,
        stop,
        drain: config.drain,
        imported,
        task: Some(task),
    })
}

/// `/mcp`: the MCP area (feature `mcp`); without it, a 404 that says why.
#[cfg(feature = "mcp")]
fn mcp_routes() -> Router<Arc<App>> {
    mcp::routes()
}

#[cfg(not(feature = "mcp"))]
fn mcp_routes() -> Router<Arc<App>> {
    Router::new().route(
        "/mcp",
        axum::routing::any(|| async {
            Reject::new(
                StatusCode::NOT_FOUND,
                "/mcp needs toolwire built with the `mcp` feature",
            )
            .into_response()
        }),
    )
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

/// Every area's routes, merged: the local areas behind the loopback gate, the gateway behind
/// its own (loopback, or a key).
fn router(app: Arc<App>, gateway: gateway::Settings) -> (Router, GatewayMetrics) {
    let (gateway, metrics) = gateway::routes(app.clone(), gateway);
    let router = Router::new()
        .merge(page::routes())
        .merge(api::routes())
        .merge(chat::routes())
        .merge(mcp_routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(Arc::clone(&app))
        .layer(axum::middleware::from_fn(gate::loopback_only))
        .merge(gateway);
    (router, metrics)
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
