//! The gateway: the wires clients already speak (`POST /v1/chat/completions`,
//! `POST /v1/messages`, `POST /v1/responses`, `GET /v1/models`) in front of any provider, plus
//! `GET /metrics`. Translation is the providers' (request reading and stream writing live with
//! each client wire); this file does the IO: model resolution, the upstream call, streaming the
//! re-encoded events out as they are decoded, errors in the client wire's shape.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::OnceCell;

use super::app::App as Shared;
use super::offline;
use crate::client::{Client, RetryPolicy};
use crate::error::{ApiError, Error};
use crate::mock::{MockServer, Script};
use crate::provider::{Answer, ClientRequest, ProviderKind, StreamWriter};
use crate::providers;
use crate::types::ChatResponse;

/// The largest request body a client may send (a long conversation with images fits).
const MAX_BODY: usize = 32 << 20;

/// One client wire the gateway speaks: its route and its pieces, each from the wire's file in
/// its provider's folder (`providers/<provider>/gateway.rs`: `read`, `writer`, `body`,
/// `encode_error`, `EXAMPLE`). The one place the client wires are listed: the routes, the
/// metrics and the tests all read [`WIRES`]; adding a client wire is that file and one line
/// there (docs/architecture.md, "Adding a client wire").
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientWire {
    /// The route clients post to.
    pub(crate) route: &'static str,
    /// How this wire's answer ids begin (`chatcmpl-`, `msg_`).
    pub(crate) id_prefix: &'static str,
    /// The provider whose decoder reads what this wire writes (for the table's test), and the
    /// upstream provider a same-wire route passes through to.
    pub(crate) provider: ProviderKind,
    /// The smallest request of this wire (for the table's test).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) example: &'static str,
    /// A request body → the canonical request and how to answer it.
    pub(crate) read: fn(&[u8]) -> crate::error::Result<ClientRequest>,
    /// The stream writer of one answer.
    pub(crate) writer: fn(&Answer<'_>) -> Box<dyn StreamWriter>,
    /// The whole body of one answer.
    pub(crate) body: fn(&ChatResponse, &Answer<'_>) -> Vec<u8>,
    /// The status and body of an error in this wire's shape.
    pub(crate) error: fn(&ApiError) -> (u16, Vec<u8>),
    /// The client headers of this wire sent on to an upstream of the same wire (lowercase).
    pub(crate) headers: &'static [&'static str],
}

/// One [`WIRES`] line: route, answer id prefix, the provider reading this wire, the wire's
/// module (which has `EXAMPLE`, `read`, `writer`, `body` and `encode_error`).
macro_rules! client_wire {
    ($route:literal, $prefix:literal, $provider:expr, $($module:ident)::+ $(,)?) => {
        ClientWire {
            route: $route,
            id_prefix: $prefix,
            provider: $provider,
            example: $($module)::+::EXAMPLE,
            read: $($module)::+::read,
            writer: $($module)::+::writer,
            body: $($module)::+::body,
            error: $($module)::+::encode_error,
            headers: $($module)::+::WIRE_HEADERS,
        }
    };
}

/// The client wires the gateway speaks, one line each.
pub(crate) const WIRES: [ClientWire; 3] = [
    client_wire!(
        "/v1/chat/completions",
        "chatcmpl-",
        ProviderKind::OpenAi,
        providers::openai::gateway
    ),
    client_wire!(
        "/v1/messages",
        "msg_",
        ProviderKind::Anthropic,
        providers::anthropic::gateway
    ),
    client_wire!(
        "/v1/responses",
        "resp_",
        ProviderKind::OpenAiResponses,
        providers::openai_responses::gateway
    ),
];

/// A client wire, by its position in [`WIRES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wire(usize);

impl Wire {
    /// Every client wire.
    fn all() -> impl Iterator<Item = Wire> {
        (0..WIRES.len()).map(Wire)
    }

    fn get(self) -> &'static ClientWire {
        &WIRES[self.0]
    }

    fn route(self) -> &'static str {
        self.get().route
    }

    fn slot(self) -> usize {
        self.0
    }

    /// The wire posted to at `path`, if any.
    fn at(path: &str) -> Option<Wire> {
        Wire::all().find(|w| w.route() == path)
    }

    /// The status and body of `error` in this wire's error shape.
    fn error(self, error: &ApiError) -> (u16, Vec<u8>) {
        (self.get().error)(error)
    }
}

/// Per-route counters for `GET /metrics`.
#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    streams: AtomicU64,
    client_errors: AtomicU64,
    upstream_errors: AtomicU64,
    open_streams: AtomicU64,
}

/// What the gateway keeps between requests: upstream clients by model name, the offline
/// upstream, counters.
#[derive(Debug, Default)]
pub(crate) struct Gateway {
    clients: Mutex<HashMap<String, (Client, String)>>,
    offline: OnceCell<MockServer>,
    counters: [Counters; WIRES.len()],
    /// The keys clients must send; empty keeps the gateway loopback-only.
    keys: Vec<String>,
}

/// A request refused before it reached an upstream: status, code, message.
fn refuse(status: u16, code: &str, message: impl Into<String>) -> ApiError {
    let mut e = ApiError::new(ProviderKind::Custom("toolwire"), Some(status), message);
    e.code = Some(code.to_owned());
    e
}

/// An upstream failure as the client wire reports it: the provider's own error (status, code,
/// retry-after) when it sent one, else 502 (504 for a timeout).
fn upstream_error(e: &Error) -> ApiError {
    match e {
        Error::Api(api) => {
            let mut api = (**api).clone();
            if api.status.is_none() {
                api.status = Some(502);
            }
            api
        }
        Error::Timeout { .. } => refuse(504, "upstream_timeout", e.to_string()),
        Error::Input { path, message } => {
            refuse(400, "invalid_request", format!("{path}: {message}"))
        }
        Error::Unsupported { .. } => refuse(400, "unsupported", e.to_string()),
        _ => refuse(502, "upstream_error", e.to_string()),
    }
}

fn error_response(wire: Wire, error: &ApiError) -> Response {
    error_response_at(wire, error, None)
}

/// An error body of the wire's shape, stamped: `param` (the field at fault, where the shape
/// has one: OpenAI's `error.param`) and a `request_id` (Anthropic's top-level field; every
/// wire's `request-id` and `x-request-id` headers).
fn stamp(body: Vec<u8>, param: Option<&str>, request_id: &str) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut top)) = serde_json::from_slice(&body) else {
        return body;
    };
    if let (Some(param), Some(serde_json::Value::Object(e))) = (param, top.get_mut("error"))
        && e.contains_key("param")
    {
        e.insert("param".into(), json!(param));
    }
    if top.get("type").and_then(serde_json::Value::as_str) == Some("error") {
        top.insert("request_id".into(), json!(request_id));
    }
    serde_json::to_vec(&top).unwrap_or(body)
}

/// [`error_response`] naming the field at fault (`param`), when there is one.
fn error_response_at(wire: Wire, error: &ApiError, param: Option<&str>) -> Response {
    let (status, body) = wire.error(error);
    let request_id = answer_id("req_");
    let body = stamp(body, param, &request_id);
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("request-id", v.clone());
        response.headers_mut().insert("x-request-id", v);
    }
    if let Some(after) = error.retry_after {
        let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if let Ok(v) = HeaderValue::from_str(&after.as_millis().to_string()) {
            response.headers_mut().insert("retry-after-ms", v);
        }
    }
    response
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh id for one answer: the time and a process-wide counter.
fn answer_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}{nanos:x}{n:x}")
}

impl Gateway {
    /// A gateway that takes clients sending one of `keys` from anywhere (none: loopback only).
    pub(crate) fn new(keys: Vec<String>) -> Self {
        Self {
            keys,
            ..Self::default()
        }
    }

    /// Whether `sent` is one of the keys, compared in time independent of where they differ.
    fn admits(&self, sent: &str) -> bool {
        self.keys.iter().fold(false, |found, key| {
            let (a, b) = (key.as_bytes(), sent.as_bytes());
            let same =
                a.len() == b.len() && a.iter().zip(b).fold(0_u8, |d, (x, y)| d | (x ^ y)) == 0;
            found | same
        })
    }

    /// The client and upstream model for a model name: a role of the config, or
    /// `PROVIDER/MODEL` with the provider's default URL and key variables.
    async fn resolve(&self, app: &App, model: &str) -> Result<(Client, String), ApiError> {
        if let Some(found) = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(model)
        {
            return Ok(found.clone());
        }
        let resolved = if let Some(role) = app.role(model) {
            let config = &role.config;
            match config.provider {
                None => (self.offline_client().await?, config.model.clone()),
                Some(kind) => {
                    let mut b = Client::builder(kind).retry(RetryPolicy::none());
                    if let Some(url) = &config.base_url {
                        b = b.base_url(url.as_str());
                    }
                    if let Some(var) = &config.api_key_env {
                        let key = std::env::var(var).unwrap_or_default();
                        if key.trim().is_empty() {
                            return Err(refuse(
                                500,
                                "upstream_key_missing",
                                format!("model {model:?}: the server has no key in ${var}"),
                            ));
                        }
                        b = b.api_key(key);
                    }
                    let client = b.build().map_err(|e| {
                        refuse(500, "upstream_config", format!("model {model:?}: {e}"))
                    })?;
                    (client, config.model.clone())
                }
            }
        } else if model.contains('/') {
            // The same PROVIDER/MODEL strings as `client::Router`.
            let (kind, name) = crate::providers::parse_model(model)
                .map_err(|e| refuse(404, "model_not_found", format!("model {model:?}: {e}")))?;
            let client = Client::builder(kind)
                .retry(RetryPolicy::none())
                .build()
                .map_err(|e| refuse(500, "upstream_config", format!("model {model:?}: {e}")))?;
            (client, name.to_owned())
        } else {
            let roles: Vec<&str> = app.roles.iter().map(|r| r.config.name.as_str()).collect();
            return Err(refuse(
                404,
                "model_not_found",
                format!(
                    "model {model:?} is neither a role of this server ({}) nor PROVIDER/MODEL",
                    roles.join(", ")
                ),
            ));
        };
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(model.to_owned(), resolved.clone());
        Ok(resolved)
    }

    /// A client of the offline upstream (one loopback mock for the whole server).
    async fn offline_client(&self) -> Result<Client, ApiError> {
        let mock = self
            .offline
            .get_or_try_init(|| async {
                let script = Script::new().respond_with(offline::respond);
                MockServer::start(ProviderKind::OpenAi, script).await
            })
            .await
            .map_err(|e| refuse(500, "offline_upstream", e.to_string()))?;
        Client::builder(ProviderKind::OpenAi)
            .base_url(mock.url())
            .api_key("offline")
            .retry(RetryPolicy::none())
            .build()
            .map_err(|e| refuse(500, "offline_upstream", e.to_string()))
    }
}

/// The gate of the gateway routes: without keys, the server's loopback gate; with keys, a
/// client from anywhere sending one (`Authorization: Bearer K` or `x-api-key: K`), refused with
/// 401 in the route's error shape otherwise.
pub(crate) async fn gate(
    State(app): State<Arc<App>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if app.gateway.keys.is_empty() {
        return super::gate::loopback_only(request, next).await;
    }
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let admitted = bearer
        .into_iter()
        .chain(api_key)
        .any(|k| app.gateway.admits(k.trim()));
    if admitted {
        return next.run(request).await;
    }
    let wire = Wire::at(request.uri().path()).unwrap_or(Wire(0));
    error_response(
        wire,
        &refuse(
            401,
            "invalid_api_key",
            "send a gateway key as Authorization: Bearer K or x-api-key: K",
        ),
    )
}

/// Reads a JSON body of at most [`MAX_BODY`] bytes, counted as they arrive. The content type
/// must be JSON, so a web page cannot post here without the browser asking first.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<Vec<u8>, ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(refuse(
            415,
            "unsupported_media_type",
            "the body must be JSON sent with Content-Type: application/json",
        ));
    }
    let mut bytes = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            refuse(
                400,
                "invalid_request",
                format!("reading the body failed: {e}"),
            )
        })?;
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(refuse(
                413,
                "request_too_large",
                format!("the body is larger than {MAX_BODY} bytes"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Decrements the open-stream gauge when the stream ends or the client leaves.
struct OpenStream(Arc<App>, usize);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.gateway.counters[self.1]
            .open_streams
            .fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve(app: Arc<App>, wire: Wire, headers: HeaderMap, raw: Body) -> Response {
    use tracing::Instrument;
    let span = tracing::info_span!(
        "gateway",
        route = wire.route(),
        model = tracing::field::Empty
    );
    serve_in(app, wire, headers, raw, span.clone())
        .instrument(span)
        .await
}

async fn serve_in(
    app: Arc<App>,
    wire: Wire,
    headers: HeaderMap,
    raw: Body,
    span: tracing::Span,
) -> Response {
    let counters = &app.gateway.counters[wire.slot()];
    counters.requests.fetch_add(1, Ordering::Relaxed);
    let refused = |e: ApiError| {
        counters.client_errors.fetch_add(1, Ordering::Relaxed);
        error_response(wire, &e)
    };
    let bytes = match read_body(&headers, raw).await {
        Ok(b) => b,
        Err(e) => return refused(e),
    };
    if let Some(head) = super::passthrough::peek(&bytes)
        && let Some(response) = same_wire(&app, wire, &headers, &bytes, head, &span).await
    {
        return response;
    }
    let mut asked = match (wire.get().read)(&bytes) {
        Ok(a) => a,
        Err(Error::Input { path, message }) => {
            counters.client_errors.fetch_add(1, Ordering::Relaxed);
            let e = refuse(400, "invalid_request_error", format!("{path}: {message}"));
            return error_response_at(wire, &e, Some(&path));
        }
        Err(e) => return refused(refuse(400, "invalid_request_error", e.to_string())),
    };
    let model = std::mem::take(&mut asked.request.model);
    span.record("model", model.as_str());
    let (client, upstream_model) = match app.gateway.resolve(&app, &model).await {
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    asked.request.model = upstream_model;
    let dropped = dropped_settings(&app, &model, &client, &mut asked);
    if !asked.stream {
        return match client.chat(&asked.request).await {
            Ok(response) => {
                let id = answer_id(wire.get().id_prefix);
                let answer = Answer::new(&id, &model, now());
                let mut response = (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    (wire.get().body)(&response, &answer),
                )
                    .into_response();
                name_dropped(&mut response, dropped.as_ref());
                response
            }
            Err(e) => {
                counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
                error_response(wire, &upstream_error(&e))
            }
        };
    }
    counters.streams.fetch_add(1, Ordering::Relaxed);
    let upstream = match client.stream(&asked.request).await {
        Ok(s) => s,
        Err(e) => {
            counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
            return error_response(wire, &upstream_error(&e));
        }
    };
    counters.open_streams.fetch_add(1, Ordering::Relaxed);
    let guard = OpenStream(Arc::clone(&app), wire.slot());
    let id = answer_id(wire.get().id_prefix);
    let mut answer = Answer::new(&id, &model, now());
    answer.include_usage = asked.include_usage;
    let mut writer = (wire.get().writer)(&answer);
    let mut first = Vec::new();
    writer.start(&mut first);
    // Events that are ready together go out together; the upstream is read only as fast as the
    // client takes bytes, and dropping this stream (the client left) drops the upstream request.
    struct Run {
        upstream: futures::stream::ReadyChunks<crate::client::ChatStream>,
        writer: Box<dyn StreamWriter>,
        done: bool,
        _guard: OpenStream,
    }
    let run = Run {
        upstream: upstream.ready_chunks(64),
        writer,
        done: false,
        _guard: guard,
    };
    let rest = futures::stream::unfold(run, |mut run| async move {
        if run.done {
            return None;
        }
        let mut out = Vec::new();
        match run.upstream.next().await {
            Some(items) => {
                let mut events = Vec::with_capacity(items.len());
                let mut failed = None;
                for item in items {
                    match item {
                        Ok(ev) => events.push(ev),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                run.writer.events(&events, &mut out);
                if let Some(e) = failed {
                    let mut api = upstream_error(&e);
                    api.status = None;
                    run.writer.fail(&api, &mut out);
                    run.done = true;
                }
            }
            None => {
                // The stream ended; the stream itself keeps its final response.
                match run.upstream.get_ref().response() {
                    Some(response) => run.writer.finish(response, &mut out),
                    None => {
                        let e = refuse(
                            502,
                            "upstream_error",
                            "the upstream stream ended without a response",
                        );
                        run.writer.fail(&e, &mut out);
                    }
                }
                run.done = true;
            }
        }
        Some((Ok::<Bytes, Infallible>(Bytes::from(out)), run))
    });
    let stream = futures::stream::once(async move { Ok::<Bytes, Infallible>(Bytes::from(first)) })
        .chain(rest);
    let mut response = Response::new(Body::from_stream(stream));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    name_dropped(&mut response, dropped.as_ref());
    response
}

/// A same-wire route's answer (`super::passthrough`), or `None` when the model's upstream
/// speaks another wire (or is the offline one), for the canonical path to answer.
async fn same_wire(
    app: &Arc<App>,
    wire: Wire,
    headers: &HeaderMap,
    bytes: &[u8],
    head: super::passthrough::Head,
    span: &tracing::Span,
) -> Option<Response> {
    use super::passthrough;
    if app
        .role(&head.model)
        .is_some_and(|r| r.config.provider.is_none())
    {
        return None;
    }
    let counters = &app.gateway.counters[wire.slot()];
    let (client, upstream_model) = match app.gateway.resolve(app, &head.model).await {
        Ok(c) => c,
        Err(e) => {
            counters.client_errors.fetch_add(1, Ordering::Relaxed);
            return Some(error_response(wire, &e));
        }
    };
    if !passthrough::same_wire(
        (wire.route(), wire.get().provider),
        &client,
        &upstream_model,
    ) {
        return None;
    }
    span.record("model", head.model.as_str());
    let body = passthrough::splice(bytes, &head.range, &upstream_model);
    let sent = passthrough::wire_headers(headers, wire.get().headers);
    let guard: Box<dyn Send> = if head.stream {
        counters.streams.fetch_add(1, Ordering::Relaxed);
        counters.open_streams.fetch_add(1, Ordering::Relaxed);
        Box::new(OpenStream(Arc::clone(app), wire.slot()))
    } else {
        Box::new(())
    };
    let model = head.model;
    let done: passthrough::Done = Box::new(move |response| {
        if let Some(usage) = response.and_then(|r| r.usage) {
            tracing::debug!(
                model = model.as_str(),
                input_tokens = usage.input_tokens,
                output_tokens = usage.output_tokens,
                "same-wire answer read"
            );
        }
    });
    match passthrough::forward(
        &client,
        &upstream_model,
        body,
        head.stream,
        &sent,
        guard,
        done,
    )
    .await
    {
        Ok(response) => {
            if !response.status().is_success() {
                counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
            }
            Some(response)
        }
        Err(e) => {
            counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
            Some(error_response(wire, &upstream_error(&e)))
        }
    }
}

/// With the role's `drop_unsupported`, the settings the upstream wire cannot carry are left
/// out; this names them (`None` when nothing was left out). An encoding error is left for the
/// upstream call to report.
fn dropped_settings(
    app: &App,
    model: &str,
    client: &Client,
    asked: &mut ClientRequest,
) -> Option<String> {
    asked.request.drop_unsupported = app.role(model).is_some_and(|r| r.config.drop_unsupported);
    if !asked.request.drop_unsupported {
        return None;
    }
    let http = client
        .provider()
        .encode(&asked.request, asked.stream)
        .ok()?;
    let names: Vec<&str> = http.dropped.iter().map(|d| d.setting.as_str()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// The `toolwire-dropped: a, b` header naming settings left out.
fn name_dropped(response: &mut Response, dropped: Option<&String>) {
    if let Some(v) = dropped.and_then(|d| HeaderValue::from_str(d).ok()) {
        response.headers_mut().insert("toolwire-dropped", v);
    }
}

/// `GET /v1/models`: the roles of the config, in OpenAI's list shape (Anthropic's SDK reads
/// `data[].id` the same way).
pub(crate) async fn models(State(app): State<Arc<App>>) -> Response {
    let created = now();
    let data: Vec<_> = app.roles.iter().map(|r| model_entry(r, created)).collect();
    let first = data
        .first()
        .and_then(|m| m["id"].as_str())
        .map(str::to_owned);
    let last = data
        .last()
        .and_then(|m| m["id"].as_str())
        .map(str::to_owned);
    axum::Json(json!({"object": "list", "data": data, "has_more": false,
                      "first_id": first, "last_id": last}))
    .into_response()
}

/// One model's entry, as `GET /v1/models` lists it.
fn model_entry(r: &super::app::Role, created: u64) -> serde_json::Value {
    let owner = r.config.provider.map_or("mock", ProviderKind::name);
    json!({"id": r.config.name, "object": "model", "created": created, "owned_by": owner,
           "type": "model", "display_name": r.config.name, "created_at": "1970-01-01T00:00:00Z"})
}

/// `GET /v1/models/{id}`: one role, in the shape of a `GET /v1/models` entry (OpenAI's and
/// Anthropic's SDKs read `id`); 404 in OpenAI's error shape for a name that is no role.
pub(crate) async fn model(
    State(app): State<Arc<App>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match app.role(&id) {
        Some(r) => axum::Json(model_entry(r, now())).into_response(),
        None => error_response_at(
            Wire(0),
            &refuse(
                404,
                "model_not_found",
                format!("model {id:?} is no role of this server"),
            ),
            Some("model"),
        ),
    }
}

/// `POST /v1/messages/count_tokens` (a Messages body, `max_tokens` optional): an Anthropic
/// upstream's own count (its `/v1/messages/count_tokens`, the body passed as on the same wire);
/// for any other upstream an estimate, said so in the answer (`"toolwire_estimate": true` and
/// the `toolwire-count: estimate` header): the body's JSON length in bytes divided by four.
pub(crate) async fn count_tokens(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    raw: Body,
) -> Response {
    let wire = Wire::at("/v1/messages").unwrap_or(Wire(0));
    let bytes = match read_body(&headers, raw).await {
        Ok(b) => b,
        Err(e) => return error_response(wire, &e),
    };
    let Some(head) = super::passthrough::peek(&bytes) else {
        let e = refuse(
            400,
            "invalid_request_error",
            "model: a JSON object with a string model is required",
        );
        return error_response_at(wire, &e, Some("model"));
    };
    let offline = app
        .role(&head.model)
        .is_some_and(|r| r.config.provider.is_none());
    if !offline {
        let (client, upstream_model) = match app.gateway.resolve(&app, &head.model).await {
            Ok(c) => c,
            Err(e) => return error_response(wire, &e),
        };
        if super::passthrough::same_wire(
            (wire.route(), wire.get().provider),
            &client,
            &upstream_model,
        ) {
            let body = super::passthrough::splice(&bytes, &head.range, &upstream_model);
            let sent = super::passthrough::wire_headers(&headers, wire.get().headers);
            let done: super::passthrough::Done = Box::new(|_| {});
            return match super::passthrough::forward_at(
                &client,
                &upstream_model,
                "/count_tokens",
                body,
                false,
                &sent,
                Box::new(()),
                done,
            )
            .await
            {
                Ok(r) => r,
                Err(e) => error_response(wire, &upstream_error(&e)),
            };
        }
    }
    let estimate = bytes.len().div_ceil(4);
    let mut response =
        axum::Json(json!({"input_tokens": estimate, "toolwire_estimate": true})).into_response();
    response
        .headers_mut()
        .insert("toolwire-count", HeaderValue::from_static("estimate"));
    response
}

/// One metric: name, type, help, and where its value is.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Counters) -> &AtomicU64,
);

/// `GET /metrics`: per-route counters in the Prometheus text format.
pub(crate) async fn metrics(State(app): State<Arc<App>>) -> Response {
    let mut out = String::new();
    let series: [Series; 5] = [
        (
            "toolwire_gateway_requests_total",
            "counter",
            "Requests received.",
            |c| &c.requests,
        ),
        (
            "toolwire_gateway_streams_total",
            "counter",
            "Requests that asked for a stream.",
            |c| &c.streams,
        ),
        (
            "toolwire_gateway_client_errors_total",
            "counter",
            "Requests refused before an upstream was called.",
            |c| &c.client_errors,
        ),
        (
            "toolwire_gateway_upstream_errors_total",
            "counter",
            "Requests the upstream failed before answering.",
            |c| &c.upstream_errors,
        ),
        (
            "toolwire_gateway_open_streams",
            "gauge",
            "Streams being answered now.",
            |c| &c.open_streams,
        ),
    ];
    for (name, kind, help, get) in series {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for wire in Wire::all() {
            let value = get(&app.gateway.counters[wire.slot()]).load(Ordering::Relaxed);
            out.push_str(&format!("{name}{{route=\"{}\"}} {value}\n", wire.route()));
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        out,
    )
        .into_response()
}

/// The gateway area's state: what every area shares, and the gateway's own ([`Gateway`]).
/// It reads as the shared state (`app.roles`, `app.role(..)`) through `Deref`.
pub(crate) struct App {
    shared: Arc<Shared>,
    gateway: Gateway,
}

impl std::ops::Deref for App {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// The gateway's routes: every client wire of [`WIRES`], `GET /v1/models` and `GET /metrics`,
/// behind [`gate`]: loopback
/// only, or anyone with one of `keys`.
pub(crate) fn routes(shared: Arc<Shared>, keys: Vec<String>) -> axum::Router {
    use axum::routing::{get, post};
    let app = Arc::new(App {
        shared,
        gateway: Gateway::new(keys),
    });
    let mut router = axum::Router::new();
    for wire in Wire::all() {
        router = router.route(
            wire.route(),
            post(
                move |State(app): State<Arc<App>>, headers: HeaderMap, body: Body| {
                    serve(app, wire, headers, body)
                },
            ),
        );
    }
    router
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/metrics", get(metrics))
        .with_state(Arc::clone(&app))
        .layer(axum::middleware::from_fn_with_state(app, gate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::split;
    use crate::types::{FinishReason, ToolCall, Usage};

    /// Every line of [`WIRES`] has every piece, and the pieces agree: its route is its own and
    /// documented, its reader reads its example, and what its body, stream and error writers
    /// write reads back through its provider's decoder as what they were given. A failure names
    /// the wire's route.
    #[test]
    fn every_client_wire_has_every_piece() {
        let docs = include_str!("../../docs/gateway.md");
        let response = ChatResponse::default()
            .with_text("Checking the weather.")
            .with_tool_calls(vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#,
            )])
            .with_finish_reason(FinishReason::ToolCalls)
            .with_usage(Usage::new(12, 7));
        let mut routes = std::collections::BTreeSet::new();
        for wire in Wire::all() {
            let w = wire.get();
            let name = w.route;
            assert!(routes.insert(name), "{name}: listed twice");
            assert!(name.starts_with("/v1/"), "{name}: not under /v1/");
            assert!(
                docs.contains(&format!("`POST {name}`")),
                "{name}: docs/gateway.md does not list it"
            );
            assert_eq!(Wire::at(name), Some(wire), "{name}: not found by its route");
            let asked = (w.read)(w.example.as_bytes())
                .unwrap_or_else(|e| panic!("{name}: its example does not read: {e}"));
            assert_eq!(asked.request.model, "m", "{name}: the example's model");
            let provider = crate::providers::provider_for(w.provider).unwrap();
            let answer = Answer::new("id_1", "m", 0);
            let body = (w.body)(&response, &answer);
            let back = provider
                .decode(&body)
                .unwrap_or_else(|e| panic!("{name}: its body does not decode: {e}"));
            check(name, "body", &back, &response);
            let mut writer = (w.writer)(&answer);
            let mut out = Vec::new();
            writer.start(&mut out);
            writer.events(&split::events(&response, split::FINE), &mut out);
            writer.finish(&response, &mut out);
            let back = crate::replay::replay(provider.as_ref(), &out)
                .unwrap_or_else(|e| panic!("{name}: its stream does not decode: {e}"))
                .response;
            check(name, "stream", &back, &response);
            let mut e = ApiError::new(ProviderKind::Custom("toolwire"), Some(429), "slow down");
            e.code = Some("rate_limit_exceeded".into());
            let (status, body) = (w.error)(&e);
            assert_eq!(status, 429, "{name}: error status");
            let back = provider.decode_error(Some(status), &body);
            assert_eq!(back.message, "slow down", "{name}: error message");
        }
    }

    fn check(name: &str, what: &str, back: &ChatResponse, sent: &ChatResponse) {
        assert_eq!(back.text, sent.text, "{name}: {what} text");
        assert_eq!(
            back.finish_reason, sent.finish_reason,
            "{name}: {what} finish"
        );
        assert_eq!(
            back.usage.map(|u| (u.input_tokens, u.output_tokens)),
            Some((12, 7))
        );
        let calls: Vec<_> = back
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.raw_arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [("call_1", "get_weather", r#"{"city":"Paris"}"#)],
            "{name}: {what} calls"
        );
    }
}
