//! The gateway: the wires clients already speak (`POST /v1/chat/completions`,
//! `POST /v1/messages`, `POST /v1/responses`, `GET /v1/models`) in front of any provider, plus
//! `GET /metrics`. Translation is the providers' (request reading and stream writing live with
//! each client wire); this file does the IO: model resolution, the upstream call, streaming the
//! re-encoded events out as they are decoded, errors in the client wire's shape.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;

use super::app::App as Shared;
use super::config::GatewayKey;
use super::fallback::{Answered, Failed, UpstreamSettings, Upstreams};
use super::limits::{Limit, Limiter, Refusal};
use crate::error::{ApiError, Error};
use crate::provider::{Answer, ClientRequest, ProviderKind, StreamWriter};
use crate::providers;
use crate::seal::Seal;
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

/// What the gateway keeps between requests: the upstreams ([`Upstreams`]: clients, resting
/// keys, attempt counters), the keys clients send and their limits, counters.
#[derive(Debug)]
pub(crate) struct Gateway {
    upstreams: Upstreams,
    counters: [Counters; WIRES.len()],
    /// The keys clients must send; empty keeps the gateway loopback-only.
    keys: Vec<Admission>,
    /// The named keys (`[[gateway_key]]`), their roles and limits.
    named: Vec<GatewayKey>,
    limiter: Limiter,
    /// The key sealing the provider state handed to clients in call ids.
    seal: Option<Seal>,
}

/// A key clients may send, and which named key it is (`None`: one of `--gateway-keys`).
#[derive(Debug, Clone)]
struct Admission {
    secret: String,
    named: Option<usize>,
}

/// Which key let a request in, kept in the request's extensions by [`gate`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admitted(Option<usize>);

/// The gateway's part of the server's config.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    keys: Vec<String>,
    named: Vec<GatewayKey>,
    limits: super::config::LimitsConfig,
    upstreams: UpstreamSettings,
    /// The key sealing the provider state handed to clients in call ids (set by the server's
    /// start, which finds it: [`super::state_key`]).
    pub(crate) seal: Option<Seal>,
}

impl Settings {
    /// The gateway's settings from the server's config: `PROVIDER/MODEL` is served to anyone
    /// only while the server listens on loopback.
    pub(crate) fn from_config(config: &super::config::ServerConfig) -> Self {
        let on_loopback = config
            .listen
            .is_none_or(|addr| super::gate::is_loopback_peer(addr.ip()));
        Self {
            keys: config.gateway_keys.clone(),
            named: config.gateway_key_entries.clone(),
            limits: config.limits.clone(),
            upstreams: UpstreamSettings {
                first_byte: config.upstream_first_byte_timeout,
                any_provider_model: on_loopback,
                allow_provider_models: config.allow_provider_models.clone(),
            },
            seal: None,
        }
    }
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
        // The transport's own text names the upstream's URL (an internal address, perhaps):
        // the client learns only that it was unreachable; the server's log has the rest.
        Error::Transport {
            provider, connect, ..
        } => {
            tracing::warn!(error = %e, "upstream transport error");
            let what = if *connect {
                "could not connect to"
            } else {
                "lost the connection to"
            };
            refuse(
                502,
                "upstream_error",
                format!("the gateway {what} the upstream ({provider})"),
            )
        }
        _ => refuse(502, "upstream_error", e.to_string()),
    }
}

/// A request over one of its key's limits: 429 naming the limit, with `retry-after`.
fn over_limit(over: &Refusal) -> ApiError {
    let mut e = if over.limit == Limit::Store {
        refuse(
            503,
            "limit_store_unreachable",
            "the gateway cannot reach its limit store; retry shortly",
        )
    } else {
        refuse(
            429,
            "rate_limit_exceeded",
            format!(
                "this gateway key is over its {} limit; retry after the window ends",
                over.limit.name()
            ),
        )
    };
    e.retry_after = Some(over.retry_after);
    e
}

/// The tokens of one answer, charged to its gateway key when the answer ends (or is cut).
struct Charge {
    app: Arc<App>,
    key: usize,
    request_bytes: usize,
}

impl Charge {
    fn new(app: &Arc<App>, key: usize, request_bytes: usize) -> Self {
        Self {
            app: Arc::clone(app),
            key,
            request_bytes,
        }
    }

    /// Charges the upstream's usage, or an estimate (a token per 4 bytes of the request and of
    /// what was written) when it sent none.
    fn settle(self, usage: Option<&crate::types::Usage>, written: usize) {
        let (tokens, estimated) = match usage {
            Some(u) => (u.input_tokens.saturating_add(u.output_tokens), false),
            None => (
                super::limits::estimate_tokens(self.request_bytes.saturating_add(written)),
                true,
            ),
        };
        if estimated {
            tracing::info!(
                key = self
                    .app
                    .gateway
                    .limiter
                    .names()
                    .get(self.key)
                    .map_or("", String::as_str),
                tokens,
                "the upstream sent no usage; charging an estimate"
            );
        }
        let app = self.app;
        let key = self.key;
        let charge = async move { app.gateway.limiter.charge(key, tokens, estimated).await };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(charge);
            }
            Err(_) => tracing::warn!("no runtime to charge the tokens of an answer"),
        }
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
    /// A gateway that takes clients sending one of its keys from anywhere (none: loopback
    /// only).
    pub(crate) fn new(settings: Settings) -> Self {
        let mut keys: Vec<Admission> = settings
            .keys
            .into_iter()
            .map(|secret| Admission {
                secret,
                named: None,
            })
            .collect();
        keys.extend(settings.named.iter().enumerate().map(|(i, k)| Admission {
            secret: k.key.clone(),
            named: Some(i),
        }));
        Self {
            upstreams: Upstreams::new(settings.upstreams),
            counters: Default::default(),
            keys,
            limiter: Limiter::new(&settings.named, &settings.limits),
            named: settings.named,
            seal: settings.seal,
        }
    }

    /// Which key `sent` is, compared in time independent of where they differ.
    fn admits(&self, sent: &str) -> Option<Admitted> {
        self.keys.iter().fold(None, |found, key| {
            let (a, b) = (key.secret.as_bytes(), sent.as_bytes());
            let same =
                a.len() == b.len() && a.iter().zip(b).fold(0_u8, |d, (x, y)| d | (x ^ y)) == 0;
            if same && found.is_none() {
                Some(Admitted(key.named))
            } else {
                found
            }
        })
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
    // The scheme is case-insensitive (RFC 9110, section 11.1).
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, key)| key);
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let admitted = bearer
        .into_iter()
        .chain(api_key)
        .find_map(|k| app.gateway.admits(k.trim()));
    if let Some(admitted) = admitted {
        let mut request = request;
        request.extensions_mut().insert(admitted);
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
    // Depth, message and tool counts, keys given twice: one pass before any tree is built.
    super::bounds::check(&bytes).map_err(|r| {
        let code = if r.status == 413 {
            "request_too_large"
        } else {
            "invalid_request_error"
        };
        refuse(r.status, code, r.message)
    })?;
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

async fn serve(
    app: Arc<App>,
    wire: Wire,
    admitted: Option<Admitted>,
    headers: HeaderMap,
    raw: Body,
) -> Response {
    use tracing::Instrument;
    let span = tracing::info_span!(
        "gateway",
        route = wire.route(),
        model = tracing::field::Empty
    );
    let key = admitted.and_then(|a| a.0);
    serve_in(app, wire, key, headers, raw, span.clone())
        .instrument(span)
        .await
}

async fn serve_in(
    app: Arc<App>,
    wire: Wire,
    key: Option<usize>,
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
        && let Some(response) = same_wire(&app, wire, key, &headers, &bytes, head, &span).await
    {
        return response;
    }
    let Some(seal) = app.gateway.seal.as_ref() else {
        return refused(refuse(500, "no_state_key", "the gateway has no state key"));
    };
    // The provider state sealed in call ids opened (checked, allow-listed) as the body is read.
    let read = (wire.get().read)(&bytes)
        .and_then(|mut a| providers::seal::open_request(&mut a.request, seal).map(|()| a));
    let mut asked = match read {
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
    let named = key.and_then(|k| app.gateway.named.get(k));
    let steps = match app.gateway.upstreams.plan(&app, &model, named).await {
        Ok(steps) => steps,
        Err(e) => return refused(e),
    };
    if let Some(key) = key
        && let Err(over) = app.gateway.limiter.admit(key).await
    {
        return refused(over_limit(&over));
    }
    let called = app
        .gateway
        .upstreams
        .call(steps, &mut asked.request, asked.stream)
        .await;
    let (answered, dropped) = match called {
        Ok(a) => a,
        Err(Failed::Refused(e)) => return refused(e),
        Err(Failed::Upstream(e)) => {
            counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
            return error_response(wire, &upstream_error(&e));
        }
    };
    let charge = key.map(|k| Charge::new(&app, k, bytes.len()));
    let (upstream, first_item) = match answered {
        Answered::Whole(response) => {
            if let Some(charge) = charge {
                charge.settle(response.usage.as_ref(), 0);
            }
            let id = answer_id(wire.get().id_prefix);
            let answer = Answer::new(&id, &model, now())
                .with_seal(seal)
                .with_namespaced(&asked.namespaced);
            // Calls the upstream ran, as this client wire's own hosted items where it has them.
            let mut notes = Vec::new();
            let client = wire.get().provider.name();
            let mapped =
                providers::hosted_map::response_for_client(&response, client, seal, &mut notes);
            let response = mapped.as_ref().unwrap_or(&response);
            notes
                .iter()
                .for_each(|n| tracing::debug!(note = n.as_str(), "hosted call"));
            let mut response = (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                (wire.get().body)(response, &answer),
            )
                .into_response();
            name_dropped(&mut response, dropped.as_ref());
            return response;
        }
        Answered::Stream(upstream, first) => (upstream, first),
    };
    counters.streams.fetch_add(1, Ordering::Relaxed);
    counters.open_streams.fetch_add(1, Ordering::Relaxed);
    let guard = OpenStream(Arc::clone(&app), wire.slot());
    let id = answer_id(wire.get().id_prefix);
    let mut answer = Answer::new(&id, &model, now())
        .with_seal(seal)
        .with_namespaced(&asked.namespaced);
    answer.include_usage = asked.include_usage;
    let mut writer = (wire.get().writer)(&answer);
    let mut first = Vec::new();
    writer.start(&mut first);
    // Events that are ready together go out together; the upstream is read only as fast as the
    // client takes bytes, and dropping this stream (the client left) drops the upstream request.
    struct Run {
        upstream: futures::stream::ReadyChunks<crate::client::ChatStream>,
        /// The stream's first item, read before the answer began.
        first: Option<crate::error::Result<crate::types::StreamEvent>>,
        writer: Box<dyn StreamWriter>,
        done: bool,
        /// The upstream ended while the first batch was gathered.
        ended: bool,
        /// Bytes written to the client (an estimate of the output when usage is unknown).
        written: usize,
        /// The upstream's hosted calls as this client wire has them: the wire, the key
        /// sealing the originals, the calls handed on so far.
        hosted: (&'static str, Seal, Vec<usize>),
        charge: Option<Charge>,
        _guard: OpenStream,
    }
    impl Drop for Run {
        fn drop(&mut self) {
            // The stream ended or was cut: its tokens are charged either way.
            if let Some(charge) = self.charge.take() {
                let usage = self.upstream.get_ref().response().and_then(|r| r.usage);
                charge.settle(usage.as_ref(), self.written);
            }
        }
    }
    let run = Run {
        upstream: (*upstream).ready_chunks(64),
        first: first_item,
        writer,
        done: false,
        ended: false,
        written: 0,
        hosted: (wire.get().provider.name(), seal.clone(), Vec::new()),
        charge,
        _guard: guard,
    };
    let rest = futures::stream::unfold(run, |mut run| async move {
        if run.done {
            return None;
        }
        let mut out = Vec::new();
        let next = if run.ended {
            None
        } else if let Some(item) = run.first.take() {
            // The first item goes out with those ready beside it (a call's state may follow
            // its opener in the same read), as the batches below.
            let mut batch = vec![item];
            match futures::FutureExt::now_or_never(run.upstream.next()) {
                Some(Some(more)) => batch.extend(more),
                Some(None) => run.ended = true,
                None => {}
            }
            Some(batch)
        } else {
            run.upstream.next().await
        };
        match next {
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
                let (client, key, handed) = &mut run.hosted;
                let mut notes = Vec::new();
                let events = providers::hosted_map::events_for_client(
                    &events, client, key, handed, &mut notes,
                );
                notes
                    .iter()
                    .for_each(|n| tracing::debug!(note = n.as_str(), "hosted call"));
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
        run.written += out.len();
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
    key: Option<usize>,
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
    let named = key.and_then(|k| app.gateway.named.get(k));
    let steps = match app.gateway.upstreams.plan(app, &head.model, named).await {
        Ok(steps) => steps,
        Err(e) => {
            counters.client_errors.fetch_add(1, Ordering::Relaxed);
            return Some(error_response(wire, &e));
        }
    };
    // A key pool or fallback roles take the canonical path (the attempt loop).
    let [step] = steps.as_slice() else {
        return None;
    };
    let (client, upstream_model) = (step.client().clone(), step.model().to_owned());
    let Ok(route) = client.route(&upstream_model, head.stream) else {
        return None;
    };
    if !passthrough::same_wire((wire.route(), wire.get().provider), &client, &route) {
        return None;
    }
    if let Some(key) = key
        && let Err(over) = app.gateway.limiter.admit(key).await
    {
        counters.client_errors.fetch_add(1, Ordering::Relaxed);
        return Some(error_response(wire, &over_limit(&over)));
    }
    let charge = key.map(|k| Charge::new(app, k, bytes.len()));
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
    // The answer is read alongside only for what needs its usage: the key's token limits, or
    // the debug log of the turn. Otherwise its bytes pass untouched.
    let read = charge.is_some() || tracing::enabled!(tracing::Level::DEBUG);
    let model = head.model;
    let done: passthrough::Done = Box::new(move |usage| {
        if let Some(charge) = charge {
            charge.settle(usage.as_ref(), 0);
        }
        if let Some(usage) = usage {
            tracing::debug!(
                model = model.as_str(),
                input_tokens = usage.input_tokens,
                output_tokens = usage.output_tokens,
                "same-wire answer read"
            );
        }
    });
    match passthrough::forward(&client, &route, body, head.stream, read, &sent, guard, done).await {
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
/// an upstream whose provider has a count endpoint of its own (Gemini's `countTokens`) is asked
/// with the body translated to its wire, and its count answered as `{"input_tokens": N}`; for
/// any other upstream an estimate, said so in the answer (`"toolwire_estimate": true` and the
/// `toolwire-count: estimate` header): the body's JSON length in bytes divided by four, rounded
/// up ([`super::limits::estimate_tokens`]).
pub(crate) async fn count_tokens(
    State(app): State<Arc<App>>,
    admitted: Option<axum::Extension<Admitted>>,
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
        let named = admitted
            .and_then(|a| a.0.0)
            .and_then(|k| app.gateway.named.get(k));
        let steps = match app.gateway.upstreams.plan(&app, &head.model, named).await {
            Ok(steps) => steps,
            Err(e) => return error_response(wire, &e),
        };
        // The first upstream of the role counts (its key pool and fallbacks are not tried).
        let Some(step) = steps.first() else {
            return error_response(wire, &refuse(503, "no_upstream", "no upstream to ask"));
        };
        let (client, upstream_model) = (step.client().clone(), step.model().to_owned());
        if let Ok(route) = client.route(&upstream_model, false)
            && super::passthrough::same_wire((wire.route(), wire.get().provider), &client, &route)
        {
            let body = super::passthrough::splice(&bytes, &head.range, &upstream_model);
            let sent = super::passthrough::wire_headers(&headers, wire.get().headers);
            let done: super::passthrough::Done = Box::new(|_| {});
            return match super::passthrough::forward_at(
                &client,
                &route,
                "/count_tokens",
                body,
                false,
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
        if let Some(response) = counted_upstream(&app, wire, &bytes, &client, &upstream_model).await
        {
            return response;
        }
    }
    let estimate = super::limits::estimate_tokens(bytes.len());
    let mut response =
        axum::Json(json!({"input_tokens": estimate, "toolwire_estimate": true})).into_response();
    response
        .headers_mut()
        .insert("toolwire-count", HeaderValue::from_static("estimate"));
    response
}

/// The count of an upstream whose provider has a count endpoint of its own
/// ([`crate::provider::Provider::encode_count_tokens`]), the Messages body read as a turn
/// (`max_tokens` given a placeholder when absent, as count requests leave it out; sealed state
/// opened); `None` when the provider has none (the caller estimates).
async fn counted_upstream(
    app: &App,
    wire: Wire,
    bytes: &[u8],
    client: &crate::client::Client,
    upstream_model: &str,
) -> Option<Response> {
    let probe =
        crate::types::ChatRequest::new(upstream_model, vec![crate::types::Message::user(".")]);
    if !matches!(client.provider().encode_count_tokens(&probe), Ok(Some(_))) {
        return None;
    }
    let mut body: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            let e = refuse(400, "invalid_request_error", format!("body: not JSON: {e}"));
            return Some(error_response(wire, &e));
        }
    };
    if let Some(map) = body.as_object_mut() {
        map.entry("max_tokens").or_insert(json!(1));
    }
    let Ok(body) = serde_json::to_vec(&body) else {
        return Some(error_response(
            wire,
            &refuse(400, "invalid_request_error", "body: not serialisable"),
        ));
    };
    let read = (wire.get().read)(&body).and_then(|mut a| match app.gateway.seal.as_ref() {
        Some(seal) => providers::seal::open_request(&mut a.request, seal).map(|()| a),
        None => Ok(a),
    });
    let mut asked = match read {
        Ok(a) => a,
        Err(Error::Input { path, message }) => {
            let e = refuse(400, "invalid_request_error", format!("{path}: {message}"));
            return Some(error_response_at(wire, &e, Some(&path)));
        }
        Err(e) => {
            return Some(error_response(
                wire,
                &refuse(400, "invalid_request_error", e.to_string()),
            ));
        }
    };
    asked.request.model = upstream_model.to_owned();
    match client.count_tokens(&asked.request).await {
        Ok(Some(n)) => Some(axum::Json(json!({ "input_tokens": n })).into_response()),
        Ok(None) => None,
        Err(e) => Some(error_response(wire, &upstream_error(&e))),
    }
}

/// One series of the gateway's counters, as `GET /metrics` shows it (and an OTLP exporter
/// sends it): a counter (monotonic) or a gauge, its labels, its value now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricSample {
    /// The metric's name (`toolwire_gateway_requests_total`, …).
    pub name: &'static str,
    /// What it counts.
    pub help: &'static str,
    /// A gauge (a value now) rather than a counter (a total since the start).
    pub gauge: bool,
    /// Its labels, in order (`route`, `key`, `limit`, `role`, `outcome`).
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: u64,
}

/// A reader of the gateway's counters ([`MetricSample`]s), from
/// [`ServerHandle::metrics`](super::ServerHandle::metrics).
#[derive(Clone)]
pub struct GatewayMetrics(Arc<App>);

impl std::fmt::Debug for GatewayMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayMetrics").finish_non_exhaustive()
    }
}

impl GatewayMetrics {
    /// Every series now, in the order of `GET /metrics` (one metric's series together).
    pub fn samples(&self) -> Vec<MetricSample> {
        samples(&self.0.gateway)
    }

    /// Every metric the gateway has, whether or not it has a series yet: name, help, and
    /// whether it is a gauge.
    pub fn declared() -> Vec<(&'static str, &'static str, bool)> {
        ROUTE_SERIES
            .iter()
            .map(|(name, help, gauge, _)| (*name, *help, *gauge))
            .chain(
                DECLARED
                    .iter()
                    .map(|(name, help, kind)| (*name, *help, *kind == "gauge")),
            )
            .collect()
    }
}

/// One per-route metric: name, help, whether a gauge, and where its value is.
type Series = (
    &'static str,
    &'static str,
    bool,
    fn(&Counters) -> &AtomicU64,
);

/// One per-key metric: name, help, and its value.
type KeySeries = (
    &'static str,
    &'static str,
    fn(&super::limits::KeyCounters) -> u64,
);

/// The per-route metrics: name, help, whether a gauge, and where the value is.
const ROUTE_SERIES: [Series; 5] = [
    (
        "toolwire_gateway_requests_total",
        "Requests received.",
        false,
        |c| &c.requests,
    ),
    (
        "toolwire_gateway_streams_total",
        "Requests that asked for a stream.",
        false,
        |c| &c.streams,
    ),
    (
        "toolwire_gateway_client_errors_total",
        "Requests refused before an upstream was called.",
        false,
        |c| &c.client_errors,
    ),
    (
        "toolwire_gateway_upstream_errors_total",
        "Requests the upstream failed before answering.",
        false,
        |c| &c.upstream_errors,
    ),
    (
        "toolwire_gateway_open_streams",
        "Streams being answered now.",
        true,
        |c| &c.open_streams,
    ),
];

/// Every series of the gateway: per route, per named key, per upstream attempt.
fn samples(gateway: &Gateway) -> Vec<MetricSample> {
    let mut out = Vec::new();
    let mut push = |name, help, gauge, labels, value| {
        out.push(MetricSample {
            name,
            help,
            gauge,
            labels,
            value,
        });
    };
    for (name, help, gauge, get) in ROUTE_SERIES {
        for wire in Wire::all() {
            let value = get(&gateway.counters[wire.slot()]).load(Ordering::Relaxed);
            push(
                name,
                help,
                gauge,
                vec![("route", wire.route().to_owned())],
                value,
            );
        }
    }
    let limiter = &gateway.limiter;
    let keyed: [KeySeries; 3] = [
        (
            "toolwire_gateway_key_requests_total",
            "Requests a named gateway key made that its limits let through.",
            |c| c.requests.load(Ordering::Relaxed),
        ),
        (
            "toolwire_gateway_key_tokens_total",
            "Upstream tokens (input and output) charged to a named gateway key.",
            |c| c.tokens.load(Ordering::Relaxed),
        ),
        (
            "toolwire_gateway_key_estimated_tokens_total",
            "Of those, tokens estimated because the upstream sent no usage.",
            |c| c.estimated_tokens.load(Ordering::Relaxed),
        ),
    ];
    for (name, help, get) in keyed {
        for (i, key) in limiter.names().iter().enumerate() {
            if let Some(c) = limiter.counters(i) {
                push(name, help, false, vec![("key", key.clone())], get(c));
            }
        }
    }
    for (i, key) in limiter.names().iter().enumerate() {
        if let Some(c) = limiter.counters(i) {
            for limit in Limit::ALL {
                push(
                    "toolwire_gateway_key_refusals_total",
                    "Requests of a named gateway key refused by a limit.",
                    false,
                    vec![("key", key.clone()), ("limit", limit.name().to_owned())],
                    c.refused[limit as usize].load(Ordering::Relaxed),
                );
            }
        }
    }
    for ((role, key, outcome), n) in gateway.upstreams.attempts() {
        push(
            "toolwire_gateway_upstream_attempts_total",
            "Upstream attempts by role, key variable and outcome.",
            false,
            vec![
                ("role", role),
                ("key", key),
                ("outcome", outcome.to_string()),
            ],
            n,
        );
    }
    push(
        "toolwire_gateway_fallbacks_total",
        "Attempts after the first of their request (another key or a fallback role).",
        false,
        Vec::new(),
        gateway.upstreams.fallbacks.load(Ordering::Relaxed),
    );
    out
}

/// The metrics after the per-route ones, each declared in `GET /metrics` even before it has
/// a series: name, help, type.
const DECLARED: [(&str, &str, &str); 6] = [
    (
        "toolwire_gateway_key_requests_total",
        "Requests a named gateway key made that its limits let through.",
        "counter",
    ),
    (
        "toolwire_gateway_key_tokens_total",
        "Upstream tokens (input and output) charged to a named gateway key.",
        "counter",
    ),
    (
        "toolwire_gateway_key_estimated_tokens_total",
        "Of those, tokens estimated because the upstream sent no usage.",
        "counter",
    ),
    (
        "toolwire_gateway_key_refusals_total",
        "Requests of a named gateway key refused by a limit.",
        "counter",
    ),
    (
        "toolwire_gateway_upstream_attempts_total",
        "Upstream attempts by role, key variable and outcome.",
        "counter",
    ),
    (
        "toolwire_gateway_fallbacks_total",
        "Attempts after the first of their request (another key or a fallback role).",
        "counter",
    ),
];

/// `GET /metrics`: the gateway's series ([`samples`]) in the Prometheus text format: a
/// metric's `HELP` and `TYPE` lines before its first series, even when it has none yet.
pub(crate) async fn metrics(State(app): State<Arc<App>>) -> Response {
    use std::fmt::Write;
    let samples = samples(&app.gateway);
    let mut out = String::new();
    let mut declared: Vec<&str> = Vec::new();
    let mut declare = |out: &mut String, name: &'static str, help: &str, kind: &str| {
        if !declared.contains(&name) {
            declared.push(name);
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
        }
    };
    let mut written = 0;
    // The per-route series first, then each declared metric in its order (series or not).
    for s in samples
        .iter()
        .filter(|s| !DECLARED.iter().any(|(name, _, _)| *name == s.name))
    {
        declare(
            &mut out,
            s.name,
            s.help,
            if s.gauge { "gauge" } else { "counter" },
        );
        write_series(&mut out, s);
        written += 1;
    }
    for (name, help, kind) in DECLARED {
        declare(&mut out, name, help, kind);
        for s in samples.iter().filter(|s| s.name == name) {
            write_series(&mut out, s);
            written += 1;
        }
    }
    debug_assert_eq!(written, samples.len());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        out,
    )
        .into_response()
}

/// One series line: `name{label="value",…} value` (no braces without labels).
fn write_series(out: &mut String, s: &MetricSample) {
    use std::fmt::Write;
    out.push_str(s.name);
    if !s.labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in s.labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", label(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", s.value);
}

/// The label value `v` in the Prometheus text format (backslash, quote and newline escaped).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
/// only, or anyone with one of `keys`; and the reader of its counters.
pub(crate) fn routes(shared: Arc<Shared>, settings: Settings) -> (axum::Router, GatewayMetrics) {
    use axum::routing::{get, post};
    let app = Arc::new(App {
        shared,
        gateway: Gateway::new(settings),
    });
    let mut router = axum::Router::new();
    for wire in Wire::all() {
        router = router.route(
            wire.route(),
            post(
                move |State(app): State<Arc<App>>,
                      admitted: Option<axum::Extension<Admitted>>,
                      headers: HeaderMap,
                      body: Body| {
                    serve(app, wire, admitted.map(|a| a.0), headers, body)
                },
            ),
        );
    }
    let metrics_of = GatewayMetrics(Arc::clone(&app));
    let router = router
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/metrics", get(metrics))
        .with_state(Arc::clone(&app))
        .layer(axum::middleware::from_fn_with_state(app, gate));
    (router, metrics_of)
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
