//! The MCP area: the `[[mcp]]` mounts ([`super::mount`]) kept connected, and `/mcp`, the
//! server's tools over MCP (feature `mcp`).
//!
//! Each server is connected when the server starts and kept connected by a task of its own: its
//! tools are registered into the roles' registries (listed by `GET /api/tools`, called by
//! `/api/chat`), listed again on `tools/list_changed`, removed when the server goes away, and
//! mounted again when it comes back (reconnecting with a backoff of 1 s doubling to 60 s).

use std::sync::Arc;
use std::time::Duration;

use super::app::{App, Role, role_query, unknown_role};
use super::mount::McpMount;

use crate::mcp::{Connection, Mount};

/// The first wait before reconnecting to a server that went away or could not be reached.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How often a mounted server is checked for having gone away.
const ALIVE_CHECK: Duration = Duration::from_millis(500);

/// `/mcp`: the server's tools over MCP.
pub(crate) fn routes() -> axum::Router<Arc<App>> {
    axum::Router::new().route("/mcp", axum::routing::any(endpoint))
}

/// Starts one task per mount; each ends when the server shuts down.
pub(crate) fn spawn(app: &Arc<App>, mounts: &[McpMount]) {
    for mount in mounts {
        tokio::spawn(supervise(Arc::clone(app), mount.clone()));
    }
}

fn targets<'a>(app: &'a App, mount: &McpMount) -> Vec<&'a Role> {
    app.roles
        .iter()
        .filter(|r| mount.role.as_ref().is_none_or(|x| *x == r.config.name))
        .collect()
}

/// Registers the server's tools into every target role's registry.
async fn register(app: &App, mount: &McpMount, connection: &Connection) {
    let tools = Mount::new(&mount.name);
    for role in targets(app, mount) {
        match connection.register(&role.registry, &tools).await {
            Ok(names) => tracing::info!(
                mount = mount.name.as_str(),
                role = role.config.name.as_str(),
                tools = names.len(),
                "MCP tools mounted"
            ),
            Err(e) => tracing::warn!(
                mount = mount.name.as_str(),
                error = %e,
                "MCP tools could not be listed"
            ),
        }
    }
    app.live.tools_changed();
}

/// Keeps one mount connected: connect, register, follow list changes, and when the server
/// goes away remove its tools and reconnect with backoff.
async fn supervise(app: Arc<App>, mount: McpMount) {
    let shutdown = app.shutdown_signal();
    tokio::pin!(shutdown);
    let source = format!("mcp:{}", mount.name);
    let mut backoff = FIRST_BACKOFF;
    loop {
        match Connection::connect(&mount.endpoint).await {
            Ok(connection) => {
                backoff = FIRST_BACKOFF;
                register(&app, &mount, &connection).await;
                let mut changes = connection.changes();
                let mut alive = tokio::time::interval(ALIVE_CHECK);
                loop {
                    tokio::select! {
                        () = &mut shutdown => return,
                        changed = changes.changed() => {
                            if changed.is_err() {
                                break;
                            }
                            register(&app, &mount, &connection).await;
                        }
                        _ = alive.tick() => {
                            if connection.is_closed() {
                                break;
                            }
                        }
                    }
                }
                tracing::warn!(
                    mount = mount.name.as_str(),
                    "MCP server went away; its tools are removed until it is back"
                );
                for role in targets(&app, &mount) {
                    role.registry.clear_source(&source);
                }
                app.live.tools_changed();
            }
            Err(e) => tracing::warn!(
                mount = mount.name.as_str(),
                error = %e,
                retry_in = ?backoff,
                "MCP server not reachable"
            ),
        }
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// The mounted MCP tools of a role, as `GET /api/tools` lists them (only those are copied out
/// of the registry, which may hold thousands of plugin tools).
pub(crate) fn listed(role: &Role) -> Vec<serde_json::Value> {
    role.registry
        .list_by_source(|source| source.starts_with("mcp:"))
        .into_iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "description": t.description,
                "source": t.source,
                "callback_url": null,
                "is_remote": true,
                "role": t.role,
                "parameters": t.parameters,
                "timeout_seconds": t.timeout.as_secs_f64(),
                "annotations": t.annotations,
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// `/mcp`: the server's own tools, as a streamable HTTP MCP server.

/// What `/mcp` serves for one role: that role's registry (plugins' tools and mounted MCP
/// servers' tools), listed and called over MCP.
#[derive(Clone)]
struct Exposed {
    app: Arc<App>,
    role: String,
}

impl Exposed {
    fn registry(&self) -> Option<&crate::tools::ToolRegistry> {
        self.app.role(&self.role).map(|r| &r.registry)
    }
}

impl rmcp::ServerHandler for Exposed {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        let mut info = rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        );
        info.server_info.name = "toolwire".to_owned();
        info.server_info.version = env!("CARGO_PKG_VERSION").to_owned();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let Some(registry) = self.registry() else {
            return Ok(rmcp::model::ListToolsResult::default());
        };
        let everything = crate::tools::ToolSelection::default();
        let annotations: std::collections::HashMap<String, crate::tools::ToolAnnotations> =
            registry
                .list()
                .into_iter()
                .map(|t| (t.name, t.annotations))
                .collect();
        let tools: Vec<serde_json::Value> = registry
            .definitions(&everything)
            .into_iter()
            .map(|d| {
                let mut tool = serde_json::json!({
                    "name": d.name,
                    "description": d.description,
                    "inputSchema": d.parameters,
                });
                if let Some(schema) = d.output_schema {
                    tool["outputSchema"] = schema;
                }
                if let Some(a) = annotations.get(&d.name).filter(|a| !a.is_empty()) {
                    tool["annotations"] = serde_json::json!({
                        "title": a.title,
                        "readOnlyHint": a.read_only,
                        "destructiveHint": a.destructive,
                        "idempotentHint": a.idempotent,
                        "openWorldHint": a.open_world,
                    });
                }
                tool
            })
            .collect();
        // `resultType` is required from protocol version 2026-07-28 on; the SDK drops it for
        // peers on older versions.
        serde_json::from_value(serde_json::json!({ "tools": tools, "resultType": "complete" }))
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static CALLS: AtomicU64 = AtomicU64::new(1);
        let Some(registry) = self.registry() else {
            return Err(rmcp::ErrorData::invalid_params("unknown role", None));
        };
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let id = format!("mcp_{}", CALLS.fetch_add(1, Ordering::Relaxed));
        let call = crate::types::ToolCall::new(id, request.name.as_ref(), arguments.to_string());
        let result = registry
            .dispatch(&call, &crate::tools::ToolSelection::default())
            .await;
        let wire = call_result(&result);
        serde_json::from_value::<rmcp::model::CallToolResult>(wire)
            .map(Into::into)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }
}

/// A tool result in MCP's shape: the parts (or the output as text) as `content`, an object
/// output as `structuredContent`, a failure as `isError` with its message.
fn call_result(result: &crate::types::ToolResult) -> serde_json::Value {
    use crate::types::{Part, Source};
    use serde_json::{Value, json};
    let as_text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut content: Vec<Value> = Vec::new();
    if result.is_error {
        content.push(json!({"type": "text", "text": result.error.clone().unwrap_or_default()}));
        if !result.output.is_null() {
            content.push(json!({"type": "text", "text": as_text(&result.output)}));
        }
        return json!({"content": content, "isError": true, "resultType": "complete"});
    }
    for part in &result.content {
        let block = match (part, part.source()) {
            (_, Some(Source::Url { url, .. })) => {
                json!({"type": "resource_link", "uri": url, "name": part.kind()})
            }
            (Part::Image { .. }, Some(Source::Data { media_type, data })) => {
                json!({"type": "image", "data": data, "mimeType": media_type})
            }
            (Part::Audio { .. }, Some(Source::Data { media_type, data })) => {
                json!({"type": "audio", "data": data, "mimeType": media_type})
            }
            (Part::File { filename, .. }, Some(Source::Data { media_type, data })) => json!({
                "type": "resource",
                "resource": {
                    "uri": format!("file:///{}", filename.as_deref().unwrap_or("file")),
                    "mimeType": media_type,
                    "blob": data,
                }
            }),
            _ => json!({"type": "text", "text": part.as_text().unwrap_or_default()}),
        };
        content.push(block);
    }
    if content.is_empty() {
        content.push(json!({"type": "text", "text": as_text(&result.output)}));
    }
    let mut wire = json!({"content": content, "isError": false, "resultType": "complete"});
    if result.output.is_object() {
        wire["structuredContent"] = result.output.clone();
    }
    wire
}

/// `/mcp[?role=R]`: one stateless streamable HTTP MCP exchange for the role (the loopback
/// gates have already run). Without `role` the server's one role is used; with several roles
/// `role` is required.
pub(crate) async fn endpoint(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
    };
    let role = match role_query(query.as_deref()) {
        Ok(role) => role,
        Err(reject) => return reject.into_response(),
    };
    let role = match role {
        Some(role) if app.has_role(&role) => role,
        Some(role) => return unknown_role(&role),
        None if app.roles.len() == 1 => app.roles[0].config.name.clone(),
        None => {
            let names: Vec<&str> = app.roles.iter().map(|r| r.config.name.as_str()).collect();
            return super::body::Reject::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "role required: this server has roles {}; use /mcp?role=R",
                    names.join(", ")
                ),
            )
            .into_response();
        }
    };
    let request = match checked(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let exposed = Exposed { app, role };
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    let service = StreamableHttpService::new(
        move || Ok(exposed.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    service.handle(request).await.into_response()
}

/// The largest JSON-RPC message `/mcp` reads (the SDK's own limit for a request body).
const MAX_MCP_BODY: usize = 4 * 1024 * 1024;

/// A POST's body read (at most [`MAX_MCP_BODY`]) and checked to be one JSON-RPC message
/// before the SDK sees it: a batch, JSON nested too deeply or anything that is not a message
/// is a 400 with a JSON-RPC error body (the SDK would answer 415, as if the content type
/// were wrong). Other methods pass through untouched.
async fn checked(
    request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::response::Response> {
    use axum::http::{Method, StatusCode};
    if request.method() != Method::POST {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_MCP_BODY).await else {
        return Err(rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            format!("the request body is larger than {MAX_MCP_BODY} bytes"),
        ));
    };
    if let Err(reason) = one_message(&bytes) {
        let (code, message) = reason;
        return Err(rpc_error(StatusCode::BAD_REQUEST, code, message));
    }
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}

/// Whether `bytes` is one JSON-RPC message the SDK can take; otherwise the JSON-RPC error
/// code (-32700 parse error, -32600 invalid request) and what is wrong.
fn one_message(bytes: &[u8]) -> Result<(), (i64, String)> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Err((
            -32600,
            "JSON-RPC batches are not supported (MCP removed them in protocol version \
             2025-06-18): send one message per request"
                .to_owned(),
        ));
    }
    match serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(bytes) {
        Ok(_) => Ok(()),
        Err(e) if e.is_syntax() || e.is_eof() => {
            let what = if e.to_string().contains("recursion limit") {
                "the JSON is nested too deeply"
            } else {
                "the body is not JSON"
            };
            Err((-32700, format!("parse error: {what} ({e})")))
        }
        Err(e) => Err((-32600, format!("not a JSON-RPC message MCP knows: {e}"))),
    }
}

/// A JSON-RPC error answer (`id` null: the request's id is unknown).
fn rpc_error(
    status: axum::http::StatusCode,
    code: i64,
    message: String,
) -> axum::response::Response {
    super::body::json_response(
        status,
        &serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        }),
    )
}
