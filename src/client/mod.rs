//! The HTTP client: one API over every provider, real streaming, retries, limits and recording.
//!
//! Providers are pure translation; this module does all the IO. A [`Client`] encodes the
//! canonical request with its provider, sends it (with the key in the provider's auth header,
//! never in the URL), retries what is safe to retry, and decodes the answer under time and size
//! limits. [`Client::stream`] yields each [`StreamEvent`](crate::StreamEvent) as soon as its
//! bytes arrive; the body is never buffered first. Tool names the provider's encoder rewrote are
//! restored, so callers only see canonical names.
//!
//! Server-Sent Events are read with the crate's own SSE parser rather than an
//! `eventsource-stream`-style crate: it reports line numbers, bounds each event's memory
//! ([`Limits::max_event_bytes`]), and is pure, so the client, `toolwire replay`, the
//! conformance runner and the property tests all parse streams with the same code.
//!
//! Each request runs in a `tracing` span (see [`Client::stream`]) named after the OpenTelemetry
//! GenAI semantic conventions; nothing secret (key, header values) is ever a field.
//!
//! Recording ([`ClientBuilder::record_to`]) is best effort: the folder is checked when the
//! client is built, and a write that fails later never replaces the answer or the error of the
//! exchange it records; it is kept for [`Client::take_record_errors`].
//!
//! ```no_run
//! # async fn demo() -> toolwire::Result<()> {
//! use futures::StreamExt;
//! use toolwire::{ChatRequest, Message, ProviderKind, StreamEvent, client::Client};
//!
//! let client = Client::new(ProviderKind::OpenAi)?; // key from OPENAI_API_KEY
//! let req = ChatRequest::new("gpt-4o-mini", vec![Message::user("Hello!")]);
//! let mut stream = client.stream(&req).await?;
//! while let Some(event) = stream.next().await {
//!     if let StreamEvent::TextDelta { text } = event? {
//!         print!("{text}");
//!     }
//! }
//! let response = stream.finish().await?;
//! # let _ = response; Ok(()) }
//! ```

mod body;
#[cfg(feature = "server")]
mod raw;
#[cfg(feature = "server")]
pub(crate) use raw::Route;
mod record;
mod retry;
mod router;
mod sign;
#[cfg(feature = "sigv4")]
pub mod sigv4;
mod stream;
pub(crate) mod time;

pub use crate::tls::http_client_builder;
pub use crate::turn::Limits;
pub use retry::RetryPolicy;
pub use router::Router;
pub use sign::{RequestSigner, SigningRequest};
pub use stream::ChatStream;
#[cfg(feature = "agent")]
pub(crate) use stream::record_response;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use crate::error::{ApiError, Error, Result, TimeoutPhase};
use crate::provider::{Auth, HttpRequest, Provider, ProviderKind};
use crate::turn::TurnReader;
use crate::types::{ChatRequest, ChatResponse};
use body::{Body, BodyError, Deadlines};
use record::{Recorder, Recording};

/// Time limits of one request. Each ends in its own [`Error::Timeout`] phase.
///
/// Non-exhaustive: start from [`Timeouts::default`] and change a limit with the `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the response head and the first body byte: long, because a
    /// non-streamed answer (or a thinking model's first token) can take minutes.
    pub first_byte: Duration,
    /// The longest gap between two body chunks after the first.
    pub idle: Duration,
    /// The whole call, retries and streaming included.
    pub total: Duration,
    /// How long the body of an error response (4xx/5xx) may take after its head, at most
    /// `idle`. The status already says what happened, so a body that stalls must not hold up
    /// the error or a retry; what arrived in time is kept.
    pub error_body: Duration,
}

impl Default for Timeouts {
    /// Connect 10 s, first byte 300 s, idle 120 s, total 600 s, error body 5 s.
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(300),
            idle: Duration::from_secs(120),
            total: Duration::from_secs(600),
            error_body: Duration::from_secs(5),
        }
    }
}

impl Timeouts {
    /// Sets the connect limit.
    pub fn with_connect(mut self, d: Duration) -> Self {
        self.connect = d;
        self
    }

    /// Sets the first-byte limit.
    pub fn with_first_byte(mut self, d: Duration) -> Self {
        self.first_byte = d;
        self
    }

    /// Sets the idle-gap limit.
    pub fn with_idle(mut self, d: Duration) -> Self {
        self.idle = d;
        self
    }

    /// Sets the total limit.
    pub fn with_total(mut self, d: Duration) -> Self {
        self.total = d;
        self
    }

    /// Sets the error-body limit.
    pub fn with_error_body(mut self, d: Duration) -> Self {
        self.error_body = d;
        self
    }
}

/// The API key. Its `Debug` never shows it.
#[derive(Clone)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Builds a [`Client`]: [`Client::builder`] or [`Client::builder_with`].
pub struct ClientBuilder {
    kind: ProviderKind,
    provider: Option<Box<dyn Provider>>,
    api_key: Option<Secret>,
    base_url: Option<String>,
    timeouts: Timeouts,
    retry: RetryPolicy,
    limits: Limits,
    record_to: Option<PathBuf>,
    headers: Vec<(String, Secret)>,
    query: Vec<(String, String)>,
    http: Option<reqwest::Client>,
    auth: Option<Auth>,
    key_required: bool,
    signer: Option<Arc<dyn RequestSigner>>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("kind", &self.kind)
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("limits", &self.limits)
            .field("record_to", &self.record_to)
            .field("headers", &self.headers)
            .field("query", &self.query)
            .field("http_client", &self.http.as_ref().map(|_| "<user's>"))
            .field("signer", &self.signer)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// The API key; without one, the provider's environment variables are read
    /// ([`crate::provider::ProviderInfo::key_vars`], first non-empty wins).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret(key.into()));
        self
    }

    /// Another base URL (the provider's paths are appended to it). For `openai` any URL other
    /// than OpenAI's own selects the OpenAI-compatible dialect, for vLLM, Ollama, DeepSeek or a
    /// gateway. With a base URL the key is optional: local servers often need none.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Time limits.
    pub fn timeouts(mut self, t: Timeouts) -> Self {
        self.timeouts = t;
        self
    }

    /// Retry policy.
    pub fn retry(mut self, r: RetryPolicy) -> Self {
        self.retry = r;
        self
    }

    /// Size limits.
    pub fn limits(mut self, l: Limits) -> Self {
        self.limits = l;
        self
    }

    /// Records every exchange as a fixture case folder `dir/<provider>/recorded_<time>_<n>/`
    /// (the layout in `docs/fixtures.md`; no keys or auth headers are written). A stream dropped
    /// before its end is recorded too, marked `incomplete` in its `meta.toml`.
    ///
    /// [`ClientBuilder::build`] fails when the folder cannot be created or written; a write
    /// that fails later is kept for [`Client::take_record_errors`] and never replaces the
    /// outcome of the exchange.
    pub fn record_to(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_to = Some(dir.into());
        self
    }

    /// An extra header sent with every request, after the provider's own and the auth header,
    /// so it replaces one of the same name: a gateway's auth (`Helicone-Auth`, a company
    /// proxy's token), a beta flag. Its value is treated like the key: `Debug` shows
    /// `<redacted>`, and it is taken out of errors and recordings wherever a server echoed it.
    /// [`ClientBuilder::build`] fails when the name or value cannot be an HTTP header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), Secret(value.into())));
        self
    }

    /// A query parameter appended to every request URL (`api-version` on Azure, a gateway's
    /// routing flag), after any the provider's path has. Query values are not secret: they
    /// show in `Debug` and may show in transport errors, so credentials belong in
    /// [`ClientBuilder::header`].
    pub fn query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push((name.into(), value.into()));
        self
    }

    /// Sends through the caller's own `reqwest::Client`: mTLS, a proxy, custom DNS or
    /// certificates, a shared pool. Then its settings are the caller's: the connect timeout
    /// ([`Timeouts::connect`] is not applied), the redirect policy (toolwire's own client
    /// follows none, so the key never goes to another host) and the user agent. The other
    /// [`Timeouts`] still apply: toolwire enforces them itself. Build it from
    /// [`http_client_builder`]: with the default `rustls` feature reqwest has no crypto provider
    /// of its own, and that builder installs ring first (`reqwest::Client::builder()` would
    /// panic when built unless the program installed a rustls provider itself).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Azure OpenAI with a Microsoft Entra ID token instead of the `api-key` header: sends
    /// `Authorization: Bearer <token>` (redacted like a key). See [`Client::azure`].
    pub fn azure_bearer(mut self, token: impl Into<String>) -> Self {
        self.api_key = Some(Secret(token.into()));
        self.auth = Some(Auth::Bearer);
        self
    }

    /// Signs every request just before it is sent, attempt by attempt (a retry is signed
    /// anew): the signer sees the method, URL, headers and body and returns headers to add.
    /// With a signer no API key is required (AWS SigV4 for Bedrock:
    /// [`sigv4::SigV4`], feature `sigv4`); a key found anyway is still sent.
    pub fn signer(mut self, signer: impl RequestSigner + 'static) -> Self {
        self.signer = Some(Arc::new(signer));
        self
    }

    /// The client. Fails with [`Error::Input`] when no key is found (naming the variables to
    /// set), the base URL is not an http(s) URL, the provider's auth header name is not a
    /// valid header name, an extra header cannot be sent, or the recording folder cannot be
    /// written.
    pub fn build(self) -> Result<Client> {
        let provider: Arc<dyn Provider> = match self.provider {
            Some(p) => Arc::from(p),
            None => Arc::from(crate::providers::provider_for_base_url(
                self.kind,
                self.base_url.as_deref(),
            )?),
        };
        let info = provider.info().clone();
        let key = self
            .api_key
            .filter(|Secret(k)| !k.trim().is_empty())
            .or_else(|| {
                info.key_vars.iter().find_map(|var| {
                    std::env::var(var)
                        .ok()
                        .filter(|v| !v.trim().is_empty())
                        .map(Secret)
                })
            });
        let signer = match (self.signer, &key, self.auth) {
            (None, None, None) => aws_signer(info.auth)?,
            (signer, _, _) => signer,
        };
        if key.is_none()
            && signer.is_none()
            && (self.base_url.is_none() || self.key_required)
            && !info.key_vars.is_empty()
        {
            let aws = match info.auth {
                Auth::BearerOrSigV4(_) if cfg!(feature = "sigv4") => {
                    ", or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for SigV4"
                }
                Auth::BearerOrSigV4(_) => ", or AWS credentials with the `sigv4` feature",
                _ => "",
            };
            return Err(Error::input(
                "api_key",
                format!(
                    "no API key for {}: set {}{aws}, or pass one with ClientBuilder::api_key",
                    info.kind,
                    info.key_vars.join(" or ")
                ),
            ));
        }
        let base_url = self
            .base_url
            .unwrap_or_else(|| expand_vars(info.base_url, |v| std::env::var(v).ok()))
            .trim_end_matches('/')
            .to_owned();
        match reqwest::Url::parse(&base_url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => {
                return Err(Error::input(
                    "base_url",
                    format!("{base_url:?} is not an http:// or https:// URL"),
                ));
            }
        }
        let auth = match &key {
            None => None,
            Some(Secret(k)) => {
                let (name, value) = match self.auth.unwrap_or(info.auth) {
                    Auth::Bearer | Auth::BearerOrSigV4(_) => {
                        (AUTHORIZATION, format!("Bearer {}", k.trim()))
                    }
                    Auth::Header(name) => (header_name(name)?, k.trim().to_owned()),
                };
                let mut value = HeaderValue::from_str(&value).map_err(|_| {
                    Error::input(
                        "api_key",
                        "the API key holds characters an HTTP header cannot carry",
                    )
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let mut headers = HeaderMap::new();
        let mut secrets = key
            .as_ref()
            .map(|Secret(k)| secret_forms(k.trim()))
            .unwrap_or_default();
        for (name, Secret(value)) in &self.headers {
            let header = header_name(name)?;
            let mut value_ok = HeaderValue::from_str(value).map_err(|_| {
                Error::input(
                    format!("header {name}"),
                    "the value holds characters an HTTP header cannot carry",
                )
            })?;
            value_ok.set_sensitive(true);
            headers.append(header, value_ok);
            let value = value.trim();
            if !value.is_empty() {
                secrets.extend(secret_forms(value));
            }
        }
        secrets.dedup();
        let http = match self.http {
            Some(http) => http,
            None => crate::tls::http_client_builder()
                .connect_timeout(self.timeouts.connect)
                // A redirect would turn the POST into a GET or carry the key to another host; a
                // 3xx is reported as the answer instead.
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("toolwire/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| Error::Transport {
                    provider: info.kind,
                    message: format!("cannot set up the HTTP client: {}", chain(&e)),
                    connect: false,
                    source: None,
                })?,
        };
        let recorder = match self.record_to {
            Some(dir) => Some(Recorder::open(dir, info.kind)?),
            None => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                provider,
                http,
                base_url,
                auth,
                key,
                headers,
                query: self.query,
                secrets,
                timeouts: self.timeouts,
                retry: self.retry,
                limits: self.limits,
                recorder,
                signer,
                #[cfg(feature = "server")]
                routes: raw::Routes::default(),
            }),
        })
    }
}

/// A default base URL with each `${VAR:-default}` replaced by the variable's value (when set
/// and not blank) or the default: Bedrock's region (`AWS_REGION`) is part of its host.
fn expand_vars(template: &str, var: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + len];
        let (name, default) = inner.split_once(":-").unwrap_or((inner, ""));
        let value = var(name).filter(|v| !v.trim().is_empty());
        out.push_str(value.as_deref().map_or(default, str::trim));
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// A custom provider's auth header name or an extra header's, lowercased (HTTP/2 requires it,
/// and `X-Api-Key` is as good as `x-api-key` on HTTP/1.1).
fn header_name(name: &str) -> Result<HeaderName> {
    HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| {
        Error::input(
            "header",
            format!("{name:?} is not a valid HTTP header name"),
        )
    })
}

/// The signer a provider with [`Auth::BearerOrSigV4`] gets when no key was found: SigV4 from
/// the environment's AWS credentials, when they are set (feature `sigv4`).
fn aws_signer(auth: Auth) -> Result<Option<Arc<dyn RequestSigner>>> {
    let Auth::BearerOrSigV4(_service) = auth else {
        return Ok(None);
    };
    #[cfg(feature = "sigv4")]
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok_and(|v| !v.trim().is_empty()) {
        return Ok(Some(Arc::new(sigv4::SigV4::from_env(_service)?)));
    }
    Ok(None)
}

/// Sends canonical requests to one provider. Cheap to clone; clones share the connection pool.
///
/// Its `Debug` shows the provider and settings, never the key.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    provider: Arc<dyn Provider>,
    http: reqwest::Client,
    base_url: String,
    auth: Option<(HeaderName, HeaderValue)>,
    key: Option<Secret>,
    /// The caller's extra headers, sent last.
    headers: HeaderMap,
    /// The caller's query parameters, appended to every URL.
    query: Vec<(String, String)>,
    /// Every form of the key and of the extra header values, for redaction.
    secrets: Vec<String>,
    timeouts: Timeouts,
    retry: RetryPolicy,
    limits: Limits,
    recorder: Option<Recorder>,
    /// Signs each attempt (SigV4), when set.
    signer: Option<Arc<dyn RequestSigner>>,
    /// The routes of raw sends, kept per model.
    #[cfg(feature = "server")]
    routes: raw::Routes,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.debug_struct("Client")
            .field("provider", &i.provider.info().kind)
            .field("base_url", &i.base_url)
            .field("api_key", &i.key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &i.headers
                    .keys()
                    .map(|name| (name.as_str(), "<redacted>"))
                    .collect::<Vec<_>>(),
            )
            .field("query", &i.query)
            .field("timeouts", &i.timeouts)
            .field("retry", &i.retry)
            .field("limits", &i.limits)
            .field("recorder", &i.recorder)
            .finish()
    }
}

/// A failed attempt, with the error response's exact bytes when there was one (for recording).
struct Failure {
    error: Error,
    answer: Option<(u16, Vec<u8>)>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self {
            error,
            answer: None,
        }
    }
}

impl Client {
    /// A client for `kind` with default settings and the key from the environment.
    pub fn new(kind: ProviderKind) -> Result<Client> {
        Self::builder(kind).build()
    }

    /// A builder for a built-in provider.
    pub fn builder(kind: ProviderKind) -> ClientBuilder {
        ClientBuilder {
            kind,
            provider: None,
            api_key: None,
            base_url: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            limits: Limits::default(),
            record_to: None,
            headers: Vec::new(),
            query: Vec::new(),
            http: None,
            auth: None,
            key_required: false,
            signer: None,
        }
    }

    /// A builder for an Azure OpenAI deployment, on the `openai` Chat Completions wire:
    /// requests go to `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`
    /// with the key in the `api-key` header, read from `AZURE_OPENAI_API_KEY` unless given with
    /// [`ClientBuilder::api_key`]; [`ClientBuilder::azure_bearer`] sends a Microsoft Entra ID
    /// token instead (`Authorization: Bearer`). `resource_or_endpoint` is a resource name
    /// (`my-resource` → `https://my-resource.openai.azure.com`) or a whole endpoint URL
    /// (anything with `://`). The shapes are those of the Azure OpenAI REST reference
    /// (<https://learn.microsoft.com/en-us/azure/ai-services/openai/reference>: "Authentication",
    /// "REST API versioning", "Chat completions"). The body keeps the canonical model name;
    /// Azure answers with the deployment's model.
    ///
    /// ```no_run
    /// # fn demo() -> toolwire::Result<()> {
    /// use toolwire::Client;
    /// let client = Client::azure("my-resource", "gpt-4o-mini", "2024-10-21").build()?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn azure(resource_or_endpoint: &str, deployment: &str, api_version: &str) -> ClientBuilder {
        let endpoint = if resource_or_endpoint.contains("://") {
            resource_or_endpoint.trim_end_matches('/').to_owned()
        } else {
            format!(
                "https://{}.openai.azure.com",
                path_segment(resource_or_endpoint)
            )
        };
        let mut b = Self::builder_with(Box::new(crate::providers::openai::OpenAi::with_dialect(
            &crate::providers::openai::AZURE_OPENAI,
        )))
        .base_url(format!(
            "{endpoint}/openai/deployments/{}",
            path_segment(deployment)
        ))
        .query("api-version", api_version);
        b.key_required = true;
        b
    }

    /// A builder for any provider value (a custom [`crate::providers::openai::Dialect`], say).
    pub fn builder_with(provider: Box<dyn Provider>) -> ClientBuilder {
        let mut b = Self::builder(provider.info().kind);
        b.provider = Some(provider);
        b
    }

    /// The provider doing the translation.
    pub fn provider(&self) -> &dyn Provider {
        self.inner.provider.as_ref()
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// One non-streamed turn. The body is read through the same [`crate::turn::TurnReader`]
    /// as a stream's, so limits, names and partial responses behave the same. Traced like
    /// [`Client::stream`].
    pub async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse> {
        self.start(req, false).await?.finish().await
    }

    /// One streamed turn: returns once the response head arrived; events follow as their bytes
    /// do. Retries happen only before that point.
    ///
    /// The request runs in an `info` span `gen_ai.chat` that lasts until the stream ends or is
    /// dropped, with the fields of the OpenTelemetry GenAI semantic conventions
    /// (<https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/>):
    /// `gen_ai.operation.name` (`chat`), `gen_ai.provider.name` (the provider's name, `openai`),
    /// `gen_ai.request.model`, and once known `gen_ai.response.finish_reasons` (the canonical
    /// finish reason), `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` and
    /// `error.type` (the failure's kind). `gen_ai.response.model` is declared for subscribers
    /// and recorded only when a response carries a `model` field.
    pub async fn stream(&self, req: &ChatRequest) -> Result<ChatStream> {
        self.start(req, true).await
    }

    /// Sends the request and wraps the answer's body in a reader.
    async fn start(&self, req: &ChatRequest, stream: bool) -> Result<ChatStream> {
        use tracing::Instrument;
        let span = tracing::info_span!(
            "gen_ai.chat",
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = self.inner.kind().name(),
            "gen_ai.request.model" = req.model.as_str(),
            "gen_ai.response.model" = tracing::field::Empty,
            "gen_ai.response.finish_reasons" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let started = self
            .start_in(req, stream, span.clone())
            .instrument(span.clone())
            .await;
        if let Err(e) = &started {
            span.record("error.type", e.kind_name());
        }
        started
    }

    async fn start_in(
        &self,
        req: &ChatRequest,
        stream: bool,
        span: tracing::Span,
    ) -> Result<ChatStream> {
        let inner = &self.inner;
        let total = after(inner.timeouts.total);
        let mut wire = inner.provider.encode(req, stream)?;
        let body = Bytes::from(json_bytes(&wire.body).map_err(|e| {
            Error::input("request", format!("cannot serialize the wire body: {e}"))
        })?);
        // The reader is made from the request (a decoder may read what was asked).
        let reader =
            TurnReader::shared(Arc::clone(&inner.provider), Some(&wire)).with_limits(inner.limits);
        if inner.recorder.is_none() {
            // Only a recording reads the JSON tree again: the bytes are what is sent, so a large
            // conversation is not held twice while the answer streams.
            wire.body = serde_json::Value::Null;
        }
        let (response, deadlines) = match inner.open(&wire, body, stream, total).await {
            Ok(ok) => ok,
            Err(f) => return Err(inner.fail_recorded(req, &wire, stream, f)),
        };
        let status = response.status().as_u16();
        // The reader enforces the body limit as bytes are appended.
        let body = Body::new(response, deadlines, usize::MAX);
        let recording = inner
            .recorder
            .as_ref()
            .map(|_| Recording::new(req, &wire, stream, status, Vec::new()));
        Ok(ChatStream::new(
            Arc::clone(&self.inner),
            body,
            reader,
            recording,
            span,
        ))
    }

    /// Takes the recording failures kept since the last call (a full disk, a folder removed
    /// while the client runs): each one says which file could not be written. Recording never
    /// replaces the outcome of an exchange, so this is where such failures show. At most
    /// [`Client::MAX_RECORD_ERRORS`] are kept between calls (the first ones, which say what
    /// went wrong); later ones are dropped. Empty when the client does not record.
    pub fn take_record_errors(&self) -> Vec<Error> {
        self.inner
            .recorder
            .as_ref()
            .map_or_else(Vec::new, Recorder::take_errors)
    }

    /// How many recording failures [`Client::take_record_errors`] keeps between calls.
    pub const MAX_RECORD_ERRORS: usize = record::MAX_ERRORS;
}

impl Inner {
    fn kind(&self) -> ProviderKind {
        self.provider.info().kind
    }

    fn url(&self, wire: &HttpRequest) -> String {
        let url =
            if wire.path.is_empty() || wire.path.starts_with('/') || wire.path.starts_with('?') {
                format!("{}{}", self.base_url, wire.path)
            } else {
                format!("{}/{}", self.base_url, wire.path)
            };
        if self.query.is_empty() {
            return url;
        }
        match reqwest::Url::parse(&url) {
            Ok(mut parsed) => {
                parsed.query_pairs_mut().extend_pairs(&self.query);
                parsed.into()
            }
            // Sending fails on it anyway, with reqwest's own error.
            Err(_) => url,
        }
    }

    /// Sends until a 2xx head arrives, retrying what the policy allows.
    async fn open(
        &self,
        wire: &HttpRequest,
        body: Bytes,
        stream: bool,
        total: Instant,
    ) -> std::result::Result<(reqwest::Response, Deadlines), Failure> {
        let url = self.url(wire);
        let mut retry = 0;
        loop {
            let failure = match self.attempt(&url, &body, wire, stream, total).await {
                Ok(ok) => return Ok(ok),
                Err(f) => f,
            };
            if retry >= self.retry.max_retries || !failure.error.is_retryable() {
                return Err(failure);
            }
            let asked = failure.error.api().and_then(|a| a.retry_after);
            let Some(wait) = self.retry.delay(retry, asked) else {
                return Err(failure);
            };
            if after(wait) >= total {
                return Err(failure);
            }
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Bytes,
        wire: &HttpRequest,
        stream: bool,
        total: Instant,
    ) -> std::result::Result<(reqwest::Response, Deadlines), Failure> {
        let t = &self.timeouts;
        let start = Instant::now();
        let first_byte = start.checked_add(t.first_byte).unwrap_or(total).min(total);
        let mut request = self.http.post(url).header(CONTENT_TYPE, "application/json");
        // The provider's own `accept` (Bedrock's event stream) replaces the default.
        if !wire
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("accept"))
        {
            request = request.header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        }
        for (name, value) in &wire.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(signer) = &self.signer {
            request = self.signed(signer.as_ref(), request, url, body)?;
        }
        if let Some((name, value)) = &self.auth {
            request = request.header(name.clone(), value.clone());
        }
        if !self.headers.is_empty() {
            // Replaces same-named headers set above.
            request = request.headers(self.headers.clone());
        }
        let sent = tokio::time::timeout_at(first_byte, request.body(body.clone()).send()).await;
        let deadlines = Deadlines {
            first_byte,
            first_byte_limit: t.first_byte,
            idle: t.idle,
            total,
            total_limit: t.total,
        };
        let response = match sent {
            Err(_) => {
                let (phase, limit) = if first_byte >= total {
                    (TimeoutPhase::Total, t.total)
                } else {
                    (TimeoutPhase::FirstByte, t.first_byte)
                };
                return Err(self.timeout(phase, limit, None).into());
            }
            Ok(Err(e)) => return Err(self.redact(self.transport(e)).into()),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok((response, deadlines));
        }
        let retry_after = retry::retry_after(response.headers());
        let mut body = Body::new(response, deadlines, self.limits.max_error_body_bytes);
        // The status is the answer. The body gets a short deadline of its own, and whatever of
        // it arrived before that deadline or a broken connection is kept.
        let wait_until = after(t.idle.min(t.error_body)).min(total);
        let mut bytes = Vec::new();
        let _ = tokio::time::timeout_at(wait_until, body.read_truncated(&mut bytes)).await;
        let mut api = self.provider.decode_error(Some(status.as_u16()), &bytes);
        api.retry_after = retry_after.or(api.retry_after);
        Err(Failure {
            error: self.redact(api.into()),
            answer: Some((status.as_u16(), bytes)),
        })
    }

    /// Adds the signer's headers to `request`, signed over the headers set so far (the auth
    /// and the caller's extra headers come after and are not signed).
    fn signed(
        &self,
        signer: &dyn RequestSigner,
        request: reqwest::RequestBuilder,
        url: &str,
        body: &Bytes,
    ) -> Result<reqwest::RequestBuilder> {
        let built = request.try_clone().and_then(|r| r.build().ok());
        let headers: Vec<(String, String)> = built
            .as_ref()
            .map(|r| {
                r.headers()
                    .iter()
                    .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let added = signer.sign(&SigningRequest {
            method: "POST",
            url,
            headers: &headers,
            body,
        })?;
        let mut request = request;
        for (name, value) in added {
            let name = header_name(&name)?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                Error::input(
                    "signer",
                    "the signer returned a header value HTTP cannot carry",
                )
            })?;
            value.set_sensitive(true);
            request = request.header(name, value);
        }
        Ok(request)
    }

    /// Records a failed exchange when it got an answer, then returns its error.
    fn fail_recorded(
        &self,
        req: &ChatRequest,
        wire: &HttpRequest,
        stream: bool,
        f: Failure,
    ) -> Error {
        if let (Some(_), Some((status, bytes))) = (&self.recorder, f.answer) {
            self.record(&Recording::new(req, wire, stream, status, bytes));
        }
        f.error
    }

    /// Writes a recording; a failure is kept for [`Client::take_record_errors`].
    fn record(&self, rec: &Recording) {
        if let Some(recorder) = &self.recorder
            && let Err(e) = recorder.write(self, rec)
        {
            recorder.keep_error(self.redact(e));
        }
    }

    fn timeout(
        &self,
        phase: TimeoutPhase,
        limit: Duration,
        partial: Option<Box<ChatResponse>>,
    ) -> Error {
        Error::Timeout {
            provider: self.kind(),
            phase,
            limit,
            partial,
        }
    }

    fn transport(&self, e: reqwest::Error) -> Error {
        if e.is_connect() && e.is_timeout() {
            return self.timeout(TimeoutPhase::Connect, self.timeouts.connect, None);
        }
        Error::Transport {
            provider: self.kind(),
            message: chain(&e),
            connect: e.is_connect(),
            source: Some(Box::new(e)),
        }
    }

    /// A body read that stopped early; `partial` is what a stream had delivered.
    fn body_error(
        &self,
        e: BodyError,
        partial: Option<Box<ChatResponse>>,
        received: usize,
    ) -> Error {
        match e {
            BodyError::Timeout(phase, limit) => self.timeout(phase, limit, partial),
            BodyError::Transport(e) if partial.is_some() => Error::Stream {
                provider: self.kind(),
                reason: format!("connection lost after {received} bytes: {}", chain(&e)),
                partial,
            },
            BodyError::Transport(e) => Error::Transport {
                provider: self.kind(),
                message: format!(
                    "connection lost after {received} bytes of the body: {}",
                    chain(&e)
                ),
                connect: false,
                source: Some(Box::new(e)),
            },
            BodyError::TooLarge(limit) => Error::Stream {
                provider: self.kind(),
                reason: format!("response larger than {limit} bytes (Limits::max_body_bytes)"),
                partial,
            },
        }
    }

    /// Takes the key out of every text an error carries (a server may echo it back).
    fn redact(&self, e: Error) -> Error {
        // Any key is replaced, however short: a short one may garble unrelated text (a key
        // `EMPTY` replaces that word), which is better than ever printing a secret.
        let forms = &self.secrets;
        if forms.is_empty() {
            return e;
        }
        let clean = |s: String| redact_text(s, forms);
        match e {
            Error::Transport {
                provider,
                message,
                connect,
                source,
            } => {
                let leaks = source.as_ref().is_some_and(|s| {
                    let (text, debug) = (s.to_string(), format!("{s:?}"));
                    forms.iter().any(|f| text.contains(f) || debug.contains(f))
                });
                Error::Transport {
                    provider,
                    message: clean(message),
                    connect,
                    source: if leaks { None } else { source },
                }
            }
            Error::Api(mut api) => {
                let a: &mut ApiError = &mut api;
                a.message = clean(std::mem::take(&mut a.message));
                a.body = clean(std::mem::take(&mut a.body));
                a.code = a.code.take().map(clean);
                Error::Api(api)
            }
            Error::Decode {
                provider,
                what,
                message,
                partial,
            } => Error::Decode {
                provider,
                what: clean(what),
                message: clean(message),
                partial,
            },
            Error::Stream {
                provider,
                reason,
                partial,
            } => Error::Stream {
                provider,
                reason: clean(reason),
                partial,
            },
            Error::Unsupported { provider, feature } => Error::Unsupported {
                provider,
                feature: clean(feature),
            },
            Error::Input { path, message } => Error::Input {
                path: clean(path),
                message: clean(message),
            },
            other => other,
        }
    }

    /// Every form of the key and the extra header values, for scrubbing recordings.
    fn secrets(&self) -> &[String] {
        &self.secrets
    }
}

/// The instant `d` from now; a limit too large to represent (`Duration::MAX` for "no limit")
/// becomes a century.
pub(crate) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))
        .unwrap_or(now)
}

/// The texts a secret may appear as in what a server sends back: itself, and JSON-escaped
/// (a server echoing it inside a JSON string may write `/` as `\/`, and must escape `"`, `\\`
/// and control characters).
pub(crate) fn secret_forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    let quoted = serde_json::to_string(secret).unwrap_or_default();
    let escaped = quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned();
    let slashed = escaped.replace('/', "\\/");
    for form in [escaped, slashed] {
        if !form.is_empty() && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// `text` with every form of a secret replaced by `<redacted>`.
pub(crate) fn redact_text(text: String, forms: &[String]) -> String {
    let mut text = text;
    for form in forms {
        if text.contains(form.as_str()) {
            text = text.replace(form.as_str(), "<redacted>");
        }
    }
    text
}

/// `text` percent-encoded as one URL path segment (or host label): unreserved characters kept.
fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An error and its sources on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// `value` as compact JSON in a buffer of exactly its size: measured first, so a large body is
/// never held in a buffer grown by doubling (up to twice its size, kept for the whole request).
fn json_bytes(value: &serde_json::Value) -> serde_json::Result<Vec<u8>> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value)?;
    let mut out = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut out, value)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand_vars;

    #[test]
    fn base_url_variables_take_the_environment_or_their_default() {
        let url = "https://bedrock-runtime.${AWS_REGION:-us-east-1}.amazonaws.com";
        let set = |v: &str| (v == "AWS_REGION").then(|| "eu-west-3".to_owned());
        assert_eq!(
            expand_vars(url, set),
            "https://bedrock-runtime.eu-west-3.amazonaws.com"
        );
        assert_eq!(
            expand_vars(url, |_| Some("  ".into())),
            "https://bedrock-runtime.us-east-1.amazonaws.com"
        );
        assert_eq!(expand_vars("https://x/${A}", |_| None), "https://x/");
        assert_eq!(
            expand_vars("https://x/${open", |_| None),
            "https://x/${open"
        );
        assert_eq!(
            expand_vars("https://api.x.com/v1", |_| None),
            "https://api.x.com/v1"
        );
    }
}
