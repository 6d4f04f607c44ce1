//! Upstream selection for the gateway: which upstreams a model name may reach (a role, its key
//! pool and its fallbacks; `PROVIDER/MODEL` where allowed), the clients kept for them, and the
//! attempt loop that moves to the next key, then the next fallback role, while nothing has
//! reached the client yet.
//!
//! - An attempt that fails with a 429, a 401, a 408/409, a 5xx, a timeout (connect or first
//!   byte) or a transport failure (a refused connection) moves on; any other failure (a 400: the
//!   request itself) is the answer. After the first event of a stream, nothing is retried.
//! - Each attempt encodes the canonical request for its role's wire and model, so the history
//!   reaches a fallback in the shape its own wire takes (provider state of another wire is left
//!   out by that wire's encoder).
//! - A key answering 429 rests for its `retry-after` (30 s when it sent none, 10 min at most);
//!   one answering 401 rests 5 minutes. A resting key is skipped while any other upstream of the
//!   request is awake; when all rest, the one waking first is tried anyway.
//! - Clients are kept per provider, base URL and key variable (the model is per request), at
//!   most [`MAX_CLIENTS`]: memory stays flat whatever model strings clients send.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::app::App;
use super::config::{GatewayKey, OFFLINE_MODEL};
use super::offline;
use crate::client::{ChatStream, Client, RetryPolicy, Timeouts};
use crate::error::{ApiError, Error};
use crate::mock::{MockServer, Script};
use crate::provider::ProviderKind;
use crate::types::{ChatRequest, ChatResponse, StreamEvent};

/// The most upstream clients kept; past it the cache starts again empty.
pub(crate) const MAX_CLIENTS: usize = 256;

/// How long a key that answered 429 without `retry-after` rests.
pub(crate) const RATE_LIMIT_REST: Duration = Duration::from_secs(30);

/// The longest rest a `retry-after` can ask for.
pub(crate) const MAX_REST: Duration = Duration::from_secs(600);

/// How long a key that answered 401 rests.
pub(crate) const UNAUTHORIZED_REST: Duration = Duration::from_secs(300);

/// Which client a cache entry is: provider, base URL, key variable.
type ClientKey = (String, Option<String>, Option<String>);

/// What the gateway keeps for its upstreams.
#[derive(Debug)]
pub(crate) struct Upstreams {
    clients: Mutex<HashMap<ClientKey, Client>>,
    resting: Mutex<HashMap<String, Instant>>,
    offline: OnceCell<MockServer>,
    first_byte: Duration,
    /// `PROVIDER/MODEL` served to everyone (the server listens on loopback only).
    any_provider_model: bool,
    allow_provider_models: Vec<String>,
    /// Attempts by role (or `PROVIDER/MODEL`'s provider), key variable and outcome.
    attempts: Mutex<BTreeMap<(String, String, &'static str), u64>>,
    /// Attempts that were not the first of their request.
    pub(crate) fallbacks: AtomicU64,
}

/// How the gateway reaches upstreams, from the server's config.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamSettings {
    pub(crate) first_byte: Duration,
    pub(crate) any_provider_model: bool,
    pub(crate) allow_provider_models: Vec<String>,
}

/// One upstream an attempt may go to.
pub(crate) struct Step {
    /// The role's name, or the `PROVIDER/MODEL` string.
    label: String,
    /// The key variable (`None`: the provider's usual ones, or the offline upstream).
    key_var: Option<String>,
    client: Client,
    model: String,
    drop_unsupported: bool,
}

impl Step {
    /// The step's client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The model sent upstream.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }
}

/// What an upstream answered.
pub(crate) enum Answered {
    /// A whole answer.
    Whole(ChatResponse),
    /// A stream, with its first item already read (so the answer is known to have begun).
    Stream(Box<ChatStream>, Option<crate::error::Result<StreamEvent>>),
}

/// A request that got no answer.
pub(crate) enum Failed {
    /// Refused before any upstream was called.
    Refused(ApiError),
    /// The last upstream's failure.
    Upstream(Error),
}

/// A request refused before it reached an upstream.
fn refuse(status: u16, code: &str, message: impl Into<String>) -> ApiError {
    let mut e = ApiError::new(ProviderKind::Custom("toolwire"), Some(status), message);
    e.code = Some(code.to_owned());
    e
}

/// The outcome of an attempt, as counted.
fn outcome(result: &Result<(), &Error>) -> &'static str {
    match result {
        Ok(()) => "ok",
        Err(Error::Api(api)) => match api.status {
            Some(429) => "rate_limited",
            Some(401) => "unauthorized",
            Some(s) if s >= 500 => "server_error",
            _ => "refused",
        },
        Err(Error::Timeout { .. }) => "timeout",
        Err(Error::Transport { connect: true, .. }) => "connect_error",
        Err(Error::Transport { .. }) => "transport_error",
        Err(_) => "error",
    }
}

/// Whether a failure before the first byte moves the request to the next upstream.
fn moves_on(e: &Error) -> bool {
    match e {
        Error::Api(api) => {
            matches!(api.status, Some(401 | 408 | 409 | 429))
                || api.status.is_some_and(|s| s >= 500)
        }
        Error::Timeout { .. } | Error::Transport { .. } => true,
        _ => false,
    }
}

/// How long the key of a failed attempt rests, if it does.
fn rest_for(e: &Error) -> Option<Duration> {
    match e {
        Error::Api(api) if api.status == Some(429) => {
            Some(api.retry_after.unwrap_or(RATE_LIMIT_REST).min(MAX_REST))
        }
        Error::Api(api) if api.status == Some(401) => Some(UNAUTHORIZED_REST),
        _ => None,
    }
}

impl Upstreams {
    pub(crate) fn new(settings: UpstreamSettings) -> Self {
        Self {
            clients: Mutex::new(HashMap::new()),
            resting: Mutex::new(HashMap::new()),
            offline: OnceCell::new(),
            first_byte: settings.first_byte,
            any_provider_model: settings.any_provider_model,
            allow_provider_models: settings.allow_provider_models,
            attempts: Mutex::new(BTreeMap::new()),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// How many clients are kept now.
    #[cfg(test)]
    pub(crate) fn cached_clients(&self) -> usize {
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The attempts so far: (role, key variable, outcome) → count.
    pub(crate) fn attempts(&self) -> Vec<((String, String, &'static str), u64)> {
        self.attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Whether `model` (`PROVIDER/MODEL`) may be served.
    fn allows(&self, model: &str, provider: &str) -> bool {
        self.any_provider_model
            || self.allow_provider_models.iter().any(|allowed| {
                allowed == model
                    || allowed
                        .strip_suffix("/*")
                        .is_some_and(|p| p.eq_ignore_ascii_case(provider))
            })
    }

    /// The client for a provider, base URL and key (variable), from the cache or new.
    fn client(
        &self,
        kind: ProviderKind,
        base_url: Option<&str>,
        key_var: Option<&str>,
        key: Option<String>,
    ) -> Result<Client, String> {
        let id: ClientKey = (
            kind.name().to_owned(),
            base_url.map(str::to_owned),
            key_var.map(str::to_owned),
        );
        if let Some(found) = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            return Ok(found.clone());
        }
        let mut b = Client::builder(kind)
            .retry(RetryPolicy::none())
            .timeouts(Timeouts::default().with_first_byte(self.first_byte));
        if let Some(url) = base_url {
            b = b.base_url(url);
        }
        if let Some(key) = key {
            b = b.api_key(key);
        }
        let client = b.build().map_err(|e| e.to_string())?;
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(id, client.clone());
        Ok(client)
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

    /// The upstreams `model` may reach for a client holding `key` (`None`: an anonymous
    /// gateway key, or loopback), in the order they are tried.
    pub(crate) async fn plan(
        &self,
        app: &App,
        model: &str,
        key: Option<&GatewayKey>,
    ) -> Result<Vec<Step>, ApiError> {
        let may_use = |role: &str| {
            key.and_then(|k| k.roles.as_ref())
                .is_none_or(|roles| roles.iter().any(|r| r == role))
        };
        if let Some(first) = app.role(model) {
            if !may_use(model) {
                return Err(refuse(
                    403,
                    "model_not_allowed",
                    format!("model {model:?} is not one of this gateway key's roles"),
                ));
            }
            let mut steps = Vec::new();
            let mut missing = Vec::new();
            let chain = std::iter::once(first)
                .chain(first.config.fallbacks.iter().filter_map(|f| app.role(f)));
            for role in chain {
                let config = &role.config;
                let Some(kind) = config.provider else {
                    steps.push(Step {
                        label: config.name.clone(),
                        key_var: None,
                        client: self.offline_client().await?,
                        model: if config.model.is_empty() {
                            OFFLINE_MODEL.to_owned()
                        } else {
                            config.model.clone()
                        },
                        drop_unsupported: config.drop_unsupported,
                    });
                    continue;
                };
                let vars: Vec<&str> = config.key_vars().collect();
                let keys: Vec<(Option<&str>, Option<String>)> = if vars.is_empty() {
                    vec![(None, None)]
                } else {
                    vars.iter()
                        .filter_map(|var| {
                            let key = std::env::var(var).unwrap_or_default();
                            if key.trim().is_empty() {
                                missing.push(format!("${var}"));
                                None
                            } else {
                                Some((Some(*var), Some(key)))
                            }
                        })
                        .collect()
                };
                for (var, key) in keys {
                    let client = self
                        .client(kind, config.base_url.as_deref(), var, key)
                        .map_err(|e| {
                            refuse(500, "upstream_config", format!("model {model:?}: {e}"))
                        })?;
                    steps.push(Step {
                        label: config.name.clone(),
                        key_var: var.map(str::to_owned),
                        client,
                        model: config.model.clone(),
                        drop_unsupported: config.drop_unsupported,
                    });
                }
            }
            if steps.is_empty() {
                return Err(refuse(
                    500,
                    "upstream_key_missing",
                    format!(
                        "model {model:?}: the server has no key in {}",
                        missing.join(", ")
                    ),
                ));
            }
            return Ok(steps);
        }
        if model.contains('/') {
            // The same PROVIDER/MODEL strings as `client::Router`.
            let (kind, name) = crate::providers::parse_model(model)
                .map_err(|e| refuse(404, "model_not_found", format!("model {model:?}: {e}")))?;
            if key.is_some_and(|k| k.roles.is_some()) || !self.allows(model, kind.name()) {
                return Err(refuse(
                    403,
                    "model_not_allowed",
                    format!(
                        "model {model:?}: PROVIDER/MODEL strings off loopback need the \
                         server's allow_provider_models; ask for a role of this server"
                    ),
                ));
            }
            let client = self
                .client(kind, None, None, None)
                .map_err(|e| refuse(500, "upstream_config", format!("model {model:?}: {e}")))?;
            return Ok(vec![Step {
                label: kind.name().to_owned(),
                key_var: None,
                client,
                model: name.to_owned(),
                drop_unsupported: false,
            }]);
        }
        let roles: Vec<&str> = app
            .roles
            .iter()
            .map(|r| r.config.name.as_str())
            .filter(|r| may_use(r))
            .collect();
        Err(refuse(
            404,
            "model_not_found",
            format!(
                "model {model:?} is neither a role of this server ({}) nor PROVIDER/MODEL",
                roles.join(", ")
            ),
        ))
    }

    /// The rest key of a step.
    fn rest_id(step: &Step) -> Option<String> {
        step.key_var
            .as_ref()
            .map(|var| format!("{}\u{0}{var}", step.label))
    }

    /// The steps to try now: those awake, or (all resting) the one waking first.
    fn awake(&self, steps: Vec<Step>) -> Vec<Step> {
        let now = Instant::now();
        let mut resting = self.resting.lock().unwrap_or_else(PoisonError::into_inner);
        resting.retain(|_, until| *until > now);
        let until = |s: &Step| Self::rest_id(s).and_then(|id| resting.get(&id).copied());
        if steps.iter().any(|s| until(s).is_none()) {
            return steps.into_iter().filter(|s| until(s).is_none()).collect();
        }
        let first = steps.into_iter().min_by_key(|s| until(s).unwrap_or(now));
        first.into_iter().collect()
    }

    fn rest(&self, step: &Step, e: &Error) {
        if let (Some(id), Some(rest)) = (Self::rest_id(step), rest_for(e)) {
            tracing::info!(
                role = step.label.as_str(),
                key = step.key_var.as_deref().unwrap_or(""),
                rest_secs = rest.as_secs_f64(),
                "upstream key rests"
            );
            self.resting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, Instant::now() + rest);
        }
    }

    fn count(&self, step: &Step, outcome: &'static str) {
        let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        if attempts.len() < 4_096 {
            *attempts
                .entry((
                    step.label.clone(),
                    step.key_var.clone().unwrap_or_default(),
                    outcome,
                ))
                .or_default() += 1;
        }
    }

    /// Answers `request` from the first of `steps` ([`Upstreams::plan`]) that answers before
    /// anything reached the client. `request.model` and `request.drop_unsupported` are
    /// set for each attempt; on success the second value names settings left out.
    pub(crate) async fn call(
        &self,
        steps: Vec<Step>,
        request: &mut ChatRequest,
        stream: bool,
    ) -> Result<(Answered, Option<String>), Failed> {
        use tracing::Instrument;
        let steps = self.awake(steps);
        let mut last = None;
        for (n, step) in steps.iter().enumerate() {
            if n > 0 {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
            }
            request.model.clone_from(&step.model);
            request.drop_unsupported = step.drop_unsupported;
            let span = tracing::info_span!(
                "gateway.attempt",
                "toolwire.attempt" = n + 1,
                "toolwire.role" = step.label.as_str(),
                "toolwire.key" = step.key_var.as_deref().unwrap_or(""),
                "gen_ai.provider.name" = step.client.provider().info().kind.name(),
                "gen_ai.request.model" = step.model.as_str(),
                "toolwire.outcome" = tracing::field::Empty,
            );
            let result = attempt(&step.client, request, stream)
                .instrument(span.clone())
                .await;
            let what = outcome(&result.as_ref().map(|_| ()));
            span.record("toolwire.outcome", what);
            self.count(step, what);
            match result {
                Ok(answered) => {
                    let dropped = dropped(&step.client, request, stream);
                    return Ok((answered, dropped));
                }
                Err(e) => {
                    self.rest(step, &e);
                    if !moves_on(&e) {
                        return Err(Failed::Upstream(e));
                    }
                    tracing::info!(
                        parent: &span,
                        error = %e,
                        "upstream attempt failed; trying the next"
                    );
                    last = Some(e);
                }
            }
        }
        Err(match last {
            Some(e) => Failed::Upstream(e),
            None => Failed::Refused(refuse(503, "no_upstream", "no upstream to try")),
        })
    }
}

/// One attempt: a whole answer, or a stream whose first item has arrived.
async fn attempt(
    client: &Client,
    request: &ChatRequest,
    stream: bool,
) -> crate::error::Result<Answered> {
    if !stream {
        return client.chat(request).await.map(Answered::Whole);
    }
    let mut upstream = client.stream(request).await?;
    match upstream.next().await {
        Some(Err(e)) => Err(e),
        first => Ok(Answered::Stream(Box::new(upstream), first)),
    }
}

/// With `drop_unsupported`, the names of the settings the wire left out.
fn dropped(client: &Client, request: &ChatRequest, stream: bool) -> Option<String> {
    if !request.drop_unsupported {
        return None;
    }
    let http = client.provider().encode(request, stream).ok()?;
    let names: Vec<&str> = http.dropped.iter().map(|d| d.setting.as_str()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstreams(any: bool, allow: &[&str]) -> Upstreams {
        Upstreams::new(UpstreamSettings {
            first_byte: Duration::from_secs(5),
            any_provider_model: any,
            allow_provider_models: allow.iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    /// 10,000 distinct `PROVIDER/MODEL` strings keep one client per provider: the cache does
    /// not grow with the model names clients send.
    #[test]
    fn model_strings_do_not_grow_the_client_cache() {
        let u = upstreams(true, &[]);
        for i in 0..10_000 {
            let model = format!("openai/m{i}");
            let (kind, _) = crate::providers::parse_model(&model).unwrap();
            u.client(kind, None, None, Some("k".into())).unwrap();
        }
        assert_eq!(u.cached_clients(), 1);
        for i in 0..(MAX_CLIENTS * 3) {
            let url = format!("http://127.0.0.1:{}", 1_000 + i);
            u.client(ProviderKind::OpenAi, Some(&url), None, Some("k".into()))
                .unwrap();
        }
        assert!(u.cached_clients() <= MAX_CLIENTS, "{}", u.cached_clients());
    }

    #[test]
    fn provider_models_off_loopback_need_the_allow_list() {
        let u = upstreams(false, &["openai/gpt-4o-mini", "gemini/*"]);
        assert!(u.allows("openai/gpt-4o-mini", "openai"));
        assert!(!u.allows("openai/gpt-4o", "openai"));
        assert!(u.allows("gemini/anything", "gemini"));
        assert!(!u.allows("ollama/x", "ollama"));
        assert!(upstreams(true, &[]).allows("ollama/x", "ollama"));
    }

    #[test]
    fn rests_follow_the_status() {
        let mut api = ApiError::new(ProviderKind::OpenAi, Some(429), "slow");
        api.retry_after = Some(Duration::from_secs(7));
        assert_eq!(
            rest_for(&Error::Api(Box::new(api.clone()))),
            Some(Duration::from_secs(7))
        );
        api.retry_after = Some(Duration::from_secs(100_000));
        assert_eq!(rest_for(&Error::Api(Box::new(api.clone()))), Some(MAX_REST));
        api.retry_after = None;
        assert_eq!(
            rest_for(&Error::Api(Box::new(api.clone()))),
            Some(RATE_LIMIT_REST)
        );
        api.status = Some(401);
        assert_eq!(
            rest_for(&Error::Api(Box::new(api.clone()))),
            Some(UNAUTHORIZED_REST)
        );
        api.status = Some(500);
        assert_eq!(rest_for(&Error::Api(Box::new(api.clone()))), None);
        assert!(moves_on(&Error::Api(Box::new(api.clone()))));
        api.status = Some(400);
        assert!(!moves_on(&Error::Api(Box::new(api))));
    }
}
