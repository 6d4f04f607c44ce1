//! What a server runs: its port, its roles (one model session each) and its state file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agent::DEFAULT_MAX_TURNS;
use crate::error::{Error, Result};
use crate::provider::ProviderKind;

/// The port N.E.K.O.'s main server listens on, so its plugins find toolwire where they expect.
pub const DEFAULT_PORT: u16 = 48911;

/// The role a server without a config file has.
pub const DEFAULT_ROLE: &str = "default";

/// The model name sent to the offline mock provider when a role names none.
pub const OFFLINE_MODEL: &str = "toolwire-offline";

/// The most turns a role may allow one chat (a guard against a config typo like `10000`).
const MAX_TURNS_LIMIT: usize = 100;

/// One role: a model session with its own tools, like one character of N.E.K.O.
///
/// Non-exhaustive: build it with [`RoleConfig::offline`] or [`RoleConfig::live`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoleConfig {
    /// The role's name (`role` in the API).
    pub name: String,
    /// The provider; `None` runs the role offline on the embedded mock provider.
    pub provider: Option<ProviderKind>,
    /// The model name sent to the provider.
    pub model: String,
    /// Another base URL (an OpenAI-compatible server, a proxy).
    pub base_url: Option<String>,
    /// A system prompt put before every conversation that has none.
    pub system: Option<String>,
    /// Read the API key from this variable instead of the provider's usual ones.
    pub api_key_env: Option<String>,
    /// The most model turns one chat may take.
    pub max_turns: usize,
    /// Through the gateway, a setting the role's wire cannot carry is left out (and named in
    /// the `toolwire-dropped` response header) instead of refused.
    pub drop_unsupported: bool,
    /// More variables holding keys of the same provider account or of others (`api_key_envs`):
    /// with [`RoleConfig::api_key_env`] first, the role's key pool. Through the gateway, an
    /// upstream answering 429, 401, 5xx, a timeout or a refused connection moves the request to
    /// the next key before the first byte reaches the client.
    pub api_key_envs: Vec<String>,
    /// Other roles tried in order, after every key of this one, before the first byte reaches
    /// the client (`fallbacks`). Each is re-encoded for its own wire from the canonical request.
    pub fallbacks: Vec<String>,
}

impl RoleConfig {
    /// A role that always runs on the offline mock provider.
    pub fn offline(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            provider: None,
            model: OFFLINE_MODEL.to_owned(),
            base_url: None,
            system: None,
            api_key_env: None,
            max_turns: DEFAULT_MAX_TURNS,
            drop_unsupported: false,
            api_key_envs: Vec::new(),
            fallbacks: Vec::new(),
        }
    }

    /// A role on a provider; it runs offline when no key is found for it.
    pub fn live(name: impl Into<String>, provider: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            provider: Some(provider),
            model: model.into(),
            ..Self::offline(name)
        }
    }

    /// Sets the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Sets the base URL.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the variable the API key is read from.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Leaves out (and names) settings the role's wire cannot carry instead of refusing them.
    pub fn with_drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }

    /// Sets the key pool's further variables (after [`RoleConfig::api_key_env`]).
    pub fn with_api_key_envs(mut self, vars: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.api_key_envs = vars.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the roles tried, in order, when this one fails before answering.
    pub fn with_fallbacks(mut self, roles: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fallbacks = roles.into_iter().map(Into::into).collect();
        self
    }

    /// The variables of the key pool, in the order they are tried.
    pub fn key_vars(&self) -> impl Iterator<Item = &str> {
        self.api_key_env
            .iter()
            .chain(&self.api_key_envs)
            .map(String::as_str)
    }

    /// Sets the turn limit (at least 1).
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns.max(1);
        self
    }
}

/// A gateway key of the config file (`[[gateway_key]]`): a key clients send like those of
/// `--gateway-keys`, with a name (for `/metrics` and the logs), the roles it may use and its
/// limits. Its `Debug` never shows the key.
///
/// Non-exhaustive: build it with [`GatewayKey::new`] and the `with_*` setters.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayKey {
    /// The key's name (`name`).
    pub name: String,
    /// The key itself (read from the variable `key_env` when the file is read).
    pub key: String,
    /// The roles it may use (`roles`); `None`: every role. A key with roles never reaches
    /// `PROVIDER/MODEL` strings.
    pub roles: Option<Vec<String>>,
    /// Requests per minute (`requests_per_minute`).
    pub requests_per_minute: Option<u64>,
    /// Upstream tokens (input and output) per minute (`tokens_per_minute`).
    pub tokens_per_minute: Option<u64>,
    /// Upstream tokens per day (`tokens_per_day`).
    pub tokens_per_day: Option<u64>,
}

impl std::fmt::Debug for GatewayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayKey")
            .field("name", &self.name)
            .field("key", &"<redacted>")
            .field("roles", &self.roles)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("tokens_per_minute", &self.tokens_per_minute)
            .field("tokens_per_day", &self.tokens_per_day)
            .finish()
    }
}

impl GatewayKey {
    /// A key named `name`, for every role, without limits.
    pub fn new(name: impl Into<String>, key: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            key: key.into().trim().to_owned(),
            roles: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            tokens_per_day: None,
        }
    }

    /// Only these roles (and their fallbacks) may be used with the key.
    pub fn with_roles(mut self, roles: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.roles = Some(roles.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the limits (`None`: no limit).
    pub fn with_limits(
        mut self,
        requests_per_minute: Option<u64>,
        tokens_per_minute: Option<u64>,
        tokens_per_day: Option<u64>,
    ) -> Self {
        self.requests_per_minute = requests_per_minute;
        self.tokens_per_minute = tokens_per_minute;
        self.tokens_per_day = tokens_per_day;
        self
    }
}

/// What the gateway does when the shared limit store cannot be reached (`[limits] on_store_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StoreFailure {
    /// Requests go on unlimited while the store is away (`"open"`, the default).
    #[default]
    Open,
    /// Requests of keys with limits are refused with 503 while the store is away (`"closed"`).
    Closed,
}

/// Where the gateway keys' counters live (`[limits]`).
///
/// Non-exhaustive: start from [`LimitsConfig::default`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitsConfig {
    /// `redis://host:port[/db]` (Redis or Valkey), shared by every instance; `None`: in memory.
    pub store: Option<String>,
    /// What happens while the store is unreachable.
    pub on_store_error: StoreFailure,
    /// The length of a "minute" window (`window_secs`, default 60 s); a "day" is 1,440 of them.
    /// Shorter windows are for tests.
    pub window: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            store: None,
            on_store_error: StoreFailure::Open,
            window: Duration::from_secs(60),
        }
    }
}

impl LimitsConfig {
    /// Shares the counters through the Redis at `url`.
    pub fn with_store(mut self, url: impl Into<String>) -> Self {
        self.store = Some(url.into());
        self
    }

    /// Sets what happens while the store is unreachable.
    pub fn with_on_store_error(mut self, failure: StoreFailure) -> Self {
        self.on_store_error = failure;
        self
    }

    /// Sets the length of a "minute" window (at least a millisecond).
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window.max(Duration::from_millis(1));
        self
    }
}

/// The default [`ServerConfig::upstream_first_byte_timeout`]: 120 seconds.
pub const DEFAULT_UPSTREAM_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(120);

/// How to run a server: port, roles, state file.
///
/// Non-exhaustive: build it with [`ServerConfig::new`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The loopback port (0 picks a free one).
    pub port: u16,
    /// The roles, in order; never empty.
    pub roles: Vec<RoleConfig>,
    /// Where registrations are kept across restarts, if anywhere.
    pub state_file: Option<PathBuf>,
    /// MCP servers whose tools are mounted (`[[mcp]]` in the config file).
    #[cfg(feature = "mcp")]
    pub mcp: Vec<super::mount::McpMount>,
    /// Another address to listen on (`--listen`): anything but loopback needs gateway keys.
    /// `None` listens on 127.0.0.1 at [`ServerConfig::port`].
    pub listen: Option<SocketAddr>,
    /// Keys a gateway client must send (`Authorization: Bearer K` or `x-api-key: K`) on the
    /// gateway routes (`/v1/*`, `/metrics`). Empty: those routes are loopback-only like the rest.
    pub gateway_keys: Vec<String>,
    /// The time a peer has to send a whole request head, from the connection's start or the
    /// end of the previous answer: closes slowloris and idle keep-alive connections
    /// ([`DEFAULT_HEADER_TIMEOUT`]).
    pub header_timeout: Duration,
    /// The most connections open at once ([`DEFAULT_MAX_CONNECTIONS`]); past it idle ones are
    /// closed and new ones wait.
    pub max_connections: usize,
    /// How long shutdown waits for requests in flight ([`DEFAULT_DRAIN`]).
    pub drain: Duration,
    /// The most connections open at once from one peer (an IPv4 address, an IPv6 /64) off loopback
    /// ([`DEFAULT_MAX_CONNECTIONS_PER_PEER`]); past it a new connection from that address is
    /// closed as soon as it is accepted. Loopback peers are not counted (every local client is
    /// 127.0.0.1) unless [`ServerConfig::cap_loopback_peers`].
    pub max_connections_per_peer: usize,
    /// Applies [`ServerConfig::max_connections_per_peer`] to loopback peers too.
    pub cap_loopback_peers: bool,
    /// The key sealing the provider state the gateway hands to clients in call ids (at least
    /// 16 bytes; `toolwire serve` reads `TOOLWIRE_STATE_KEY`). `None`: the key file beside the
    /// state file (made on first start), else a random key per process. Instances that serve
    /// each other's conversations need the same key.
    pub state_key: Option<String>,
    /// Gateway keys with names, roles and limits (`[[gateway_key]]`); they gate like
    /// [`ServerConfig::gateway_keys`].
    pub gateway_key_entries: Vec<GatewayKey>,
    /// Where the gateway keys' counters live (`[limits]`).
    pub limits: LimitsConfig,
    /// `PROVIDER/MODEL` strings the gateway serves when it listens off loopback
    /// (`allow_provider_models`; `"openai/*"` allows every model of a provider). On loopback
    /// every `PROVIDER/MODEL` is served.
    pub allow_provider_models: Vec<String>,
    /// How long the gateway waits for an upstream's first byte before it moves to the next key
    /// or fallback, or answers 504 (`upstream_first_byte_timeout_secs`,
    /// [`DEFAULT_UPSTREAM_FIRST_BYTE_TIMEOUT`]).
    pub upstream_first_byte_timeout: Duration,
}

/// The default [`ServerConfig::header_timeout`]: 10 seconds.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`ServerConfig::max_connections`]: 128, well under the usual limit of 1,024 file
/// descriptors (and under 256), leaving room for callbacks and the offline model.
pub const DEFAULT_MAX_CONNECTIONS: usize = 128;

/// The default [`ServerConfig::max_connections_per_peer`]: 32, a quarter of
/// [`DEFAULT_MAX_CONNECTIONS`], so one address off loopback cannot take every place.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 32;

/// The default [`ServerConfig::drain`]: 5 seconds.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(5);

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerConfig {
    /// Port [`DEFAULT_PORT`], one offline role named [`DEFAULT_ROLE`], no state file.
    pub fn new() -> Self {
        Self {
            port: DEFAULT_PORT,
            roles: vec![RoleConfig::offline(DEFAULT_ROLE)],
            state_file: None,
            #[cfg(feature = "mcp")]
            mcp: Vec::new(),
            listen: None,
            gateway_keys: Vec::new(),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            drain: DEFAULT_DRAIN,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            cap_loopback_peers: false,
            state_key: None,
            gateway_key_entries: Vec::new(),
            limits: LimitsConfig::default(),
            allow_provider_models: Vec::new(),
            upstream_first_byte_timeout: DEFAULT_UPSTREAM_FIRST_BYTE_TIMEOUT,
        }
    }

    /// Adds gateway keys with names, roles and limits.
    pub fn with_gateway_key_entries(mut self, keys: impl IntoIterator<Item = GatewayKey>) -> Self {
        self.gateway_key_entries.extend(keys);
        self
    }

    /// Sets where the gateway keys' counters live.
    pub fn with_limits(mut self, limits: LimitsConfig) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the `PROVIDER/MODEL` strings served off loopback.
    pub fn with_allow_provider_models(
        mut self,
        models: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allow_provider_models = models.into_iter().map(Into::into).collect();
        self
    }

    /// Sets how long the gateway waits for an upstream's first byte (zero is refused at start).
    pub fn with_upstream_first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.upstream_first_byte_timeout = timeout;
        self
    }

    /// Sets the key sealing the state the gateway hands out in call ids.
    pub fn with_state_key(mut self, key: impl Into<String>) -> Self {
        self.state_key = Some(key.into());
        self
    }

    /// Sets the request-head (and idle keep-alive) deadline; zero is refused at start.
    pub fn with_header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// Sets the most connections open at once; zero is refused at start.
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets the most connections open at once from one peer address off loopback; zero is
    /// refused at start.
    pub fn with_max_connections_per_peer(mut self, max: usize) -> Self {
        self.max_connections_per_peer = max;
        self
    }

    /// Counts loopback peers against the per-peer cap too (off by default: every local client
    /// shares 127.0.0.1).
    pub fn with_cap_loopback_peers(mut self, cap: bool) -> Self {
        self.cap_loopback_peers = cap;
        self
    }

    /// Sets how long shutdown waits for requests in flight.
    pub fn with_drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }

    /// Sets the port.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Replaces the roles (checked when the server starts).
    pub fn with_roles(mut self, roles: impl IntoIterator<Item = RoleConfig>) -> Self {
        self.roles = roles.into_iter().collect();
        self
    }

    /// Keeps registrations in `path` (see the module docs for the format).
    pub fn with_state_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.state_file = Some(path.into());
        self
    }

    /// Listens on `addr` instead of 127.0.0.1 (a non-loopback address needs gateway keys).
    pub fn with_listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// Sets the keys gateway clients must send (blank ones are dropped).
    pub fn with_gateway_keys(mut self, keys: impl IntoIterator<Item = String>) -> Self {
        self.gateway_keys = keys
            .into_iter()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        self
    }

    /// Adds the gateway keys of `TOOLWIRE_GATEWAY_KEYS`'s form: comma-separated, each trimmed,
    /// blank ones and those starting with `#` skipped, as the file form skips `#` lines (so
    /// `#x` is never a key in either form).
    pub fn with_gateway_keys_list(self, list: &str) -> Self {
        let mut keys = self.gateway_keys.clone();
        keys.extend(
            list.split(',')
                .map(str::trim)
                .filter(|k| !k.starts_with('#'))
                .map(str::to_owned),
        );
        self.with_gateway_keys(keys)
    }

    /// Reads gateway keys from a file, one per line (blank lines and `#` comments skipped).
    pub fn with_gateway_keys_file(self, path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input(path.display().to_string(), format!("cannot read: {e}")))?;
        let keys: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect();
        if keys.is_empty() {
            return Err(Error::input(
                path.display().to_string(),
                "no key in the file",
            ));
        }
        Ok(self.with_gateway_keys(keys))
    }

    /// Reads the roles from a TOML file (format in the module docs). Errors name the file, the
    /// line and the reason.
    pub fn with_roles_file(self, path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input(path.display().to_string(), format!("cannot read: {e}")))?;
        let at_line = |(line, message): (Option<usize>, String)| {
            let at = match line {
                Some(line) => format!("{}:{line}", path.display()),
                None => path.display().to_string(),
            };
            Error::input(at, message)
        };
        let roles = parse_roles(&text).map_err(at_line)?;
        let gateway = parse_gateway(&text).map_err(at_line)?;
        let mut this = self
            .with_gateway_key_entries(gateway.keys)
            .with_limits(gateway.limits)
            .with_allow_provider_models(gateway.allow_provider_models);
        if let Some(first_byte) = gateway.first_byte {
            this = this.with_upstream_first_byte_timeout(first_byte);
        }
        #[cfg(feature = "mcp")]
        let config = Self {
            mcp: super::mount::parse(&text).map_err(at_line)?,
            ..this.with_roles(roles)
        };
        #[cfg(not(feature = "mcp"))]
        let config = this.with_roles(roles);
        config.check_gateway().map_err(|e| match e {
            Error::Input { path: at, message } => {
                Error::input(path.display().to_string(), format!("{at}: {message}"))
            }
            other => other,
        })?;
        Ok(config)
    }

    /// Checks the roles: at least one, unique non-empty names, a model for each live role,
    /// a sane turn limit.
    pub(crate) fn check(&self) -> Result<()> {
        if self.roles.is_empty() {
            return Err(Error::input("roles", "at least one role is needed"));
        }
        if let Some(addr) = self.listen
            && !super::gate::is_loopback_peer(addr.ip())
            && self.gateway_keys.is_empty()
            && self.gateway_key_entries.is_empty()
        {
            return Err(Error::input(
                "listen",
                format!(
                    "{addr} is not a loopback address: give gateway keys (--gateway-keys FILE \
                     or TOOLWIRE_GATEWAY_KEYS) so that only your clients can use the upstream keys"
                ),
            ));
        }
        if self.header_timeout.is_zero() {
            return Err(Error::input(
                "header_timeout",
                "must be more than zero (it closes connections that send nothing)",
            ));
        }
        if self.max_connections == 0 {
            return Err(Error::input("max_connections", "must be at least 1"));
        }
        if self.max_connections_per_peer == 0 {
            return Err(Error::input(
                "max_connections_per_peer",
                "must be at least 1",
            ));
        }
        for (i, role) in self.roles.iter().enumerate() {
            let at = format!("roles[{i}]");
            check_role_name(&role.name).map_err(|m| Error::input(format!("{at}.name"), m))?;
            if self.roles[..i].iter().any(|r| r.name == role.name) {
                return Err(Error::input(
                    format!("{at}.name"),
                    format!("role {:?} is defined twice", role.name),
                ));
            }
            if role.model.trim().is_empty() {
                return Err(Error::input(format!("{at}.model"), "the model is empty"));
            }
            if role.max_turns == 0 || role.max_turns > MAX_TURNS_LIMIT {
                return Err(Error::input(
                    format!("{at}.max_turns"),
                    format!("max_turns must be 1 to {MAX_TURNS_LIMIT}"),
                ));
            }
        }
        self.check_gateway()?;
        #[cfg(feature = "mcp")]
        super::mount::check(&self.mcp, self.roles.iter().map(|r| r.name.as_str()))?;
        Ok(())
    }

    /// Checks the gateway's parts: fallbacks and key roles name roles, key names are unique and
    /// keys are not empty, the limit store is a Redis URL, the first-byte timeout is positive.
    fn check_gateway(&self) -> Result<()> {
        let known = |name: &str| self.roles.iter().any(|r| r.name == name);
        for (i, role) in self.roles.iter().enumerate() {
            for fallback in &role.fallbacks {
                if fallback == &role.name || !known(fallback) {
                    return Err(Error::input(
                        format!("roles[{i}].fallbacks"),
                        format!(
                            "role {:?}: fallback {fallback:?} is not another role of the config",
                            role.name
                        ),
                    ));
                }
            }
        }
        for (i, key) in self.gateway_key_entries.iter().enumerate() {
            let at = format!("gateway_key[{i}]");
            if key.name.trim().is_empty() || key.name.len() > 64 {
                return Err(Error::input(
                    format!("{at}.name"),
                    "a gateway key needs a name of 1 to 64 bytes",
                ));
            }
            if self.gateway_key_entries[..i]
                .iter()
                .any(|k| k.name == key.name)
            {
                return Err(Error::input(
                    format!("{at}.name"),
                    format!("gateway key {:?} is defined twice", key.name),
                ));
            }
            if key.key.is_empty() {
                return Err(Error::input(
                    format!("{at}.key_env"),
                    format!("gateway key {:?}: the key is empty", key.name),
                ));
            }
            for role in key.roles.iter().flatten() {
                if !known(role) {
                    return Err(Error::input(
                        format!("{at}.roles"),
                        format!(
                            "gateway key {:?}: {role:?} is not a role of the config",
                            key.name
                        ),
                    ));
                }
            }
        }
        if let Some(store) = &self.limits.store {
            let redis = store.starts_with("redis://") || store.starts_with("rediss://");
            // Refused rather than ignored: N instances counting apart would let N times the
            // limit through.
            if !redis {
                return Err(Error::input(
                    "limits.store",
                    format!("{store:?} is not a redis:// URL"),
                ));
            }
            if !cfg!(feature = "redis") {
                return Err(Error::input(
                    "limits.store",
                    format!(
                        "{store:?}: counters shared through Redis need toolwire built with the `redis` feature"
                    ),
                ));
            }
        }
        if self.upstream_first_byte_timeout.is_zero() {
            return Err(Error::input(
                "upstream_first_byte_timeout",
                "must be more than zero",
            ));
        }
        Ok(())
    }
}

fn check_role_name(name: &str) -> std::result::Result<(), String> {
    if name.trim().is_empty() {
        return Err("the role name is empty".to_owned());
    }
    if name.len() > 64 {
        return Err(format!("role name {name:?} is longer than 64 bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("role name {name:?} has control characters"));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    role: Vec<RoleEntry>,
    /// MCP servers to mount, read by `super::mount::parse` (feature `mcp`).
    #[serde(default)]
    mcp: Vec<toml::Table>,
    #[serde(default)]
    gateway_key: Vec<GatewayKeyEntry>,
    #[serde(default)]
    limits: Option<LimitsEntry>,
    #[serde(default)]
    allow_provider_models: Vec<String>,
    #[serde(default)]
    upstream_first_byte_timeout_secs: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewayKeyEntry {
    name: String,
    key_env: String,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    requests_per_minute: Option<u64>,
    #[serde(default)]
    tokens_per_minute: Option<u64>,
    #[serde(default)]
    tokens_per_day: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsEntry {
    #[serde(default)]
    store: Option<String>,
    #[serde(default)]
    on_store_error: Option<String>,
    #[serde(default)]
    window_secs: Option<f64>,
}

/// The gateway's sections of a config file.
#[derive(Debug)]
struct GatewayParts {
    keys: Vec<GatewayKey>,
    limits: LimitsConfig,
    allow_provider_models: Vec<String>,
    first_byte: Option<Duration>,
}

/// The gateway's sections of a config file (keys read from their variables now), or the reason.
fn parse_gateway(text: &str) -> std::result::Result<GatewayParts, (Option<usize>, String)> {
    let file: File = toml::from_str(text).map_err(|e| (None, e.message().to_owned()))?;
    let mut keys = Vec::new();
    for (i, entry) in file.gateway_key.into_iter().enumerate() {
        let at = format!("gateway_key #{} ({})", i + 1, entry.name);
        let key = std::env::var(&entry.key_env).unwrap_or_default();
        if key.trim().is_empty() {
            return Err((
                None,
                format!("{at}: the variable {} is not set or empty", entry.key_env),
            ));
        }
        let mut k = GatewayKey::new(entry.name, key).with_limits(
            entry.requests_per_minute,
            entry.tokens_per_minute,
            entry.tokens_per_day,
        );
        k.roles = entry.roles;
        keys.push(k);
    }
    let mut limits = LimitsConfig::default();
    if let Some(entry) = file.limits {
        limits.store = entry.store;
        limits.on_store_error = match entry.on_store_error.as_deref() {
            None | Some("open") => StoreFailure::Open,
            Some("closed") => StoreFailure::Closed,
            Some(other) => {
                return Err((
                    None,
                    format!("limits.on_store_error: {other:?} is neither \"open\" nor \"closed\""),
                ));
            }
        };
        if let Some(secs) = entry.window_secs {
            let window = Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    (
                        None,
                        format!("limits.window_secs: {secs} is not a positive duration"),
                    )
                })?;
            limits.window = window;
        }
    }
    let first_byte = match file.upstream_first_byte_timeout_secs {
        None => None,
        Some(secs) => Some(
            Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    (
                        None,
                        format!(
                            "upstream_first_byte_timeout_secs: {secs} is not a positive duration"
                        ),
                    )
                })?,
        ),
    };
    Ok(GatewayParts {
        keys,
        limits,
        allow_provider_models: file.allow_provider_models,
        first_byte,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleEntry {
    name: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    max_turns: Option<usize>,
    #[serde(default)]
    drop_unsupported: Option<bool>,
    #[serde(default)]
    api_key_envs: Vec<String>,
    #[serde(default)]
    fallbacks: Vec<String>,
}

/// The roles of a config file, or the 1-based line (when known) and the reason.
fn parse_roles(text: &str) -> std::result::Result<Vec<RoleConfig>, (Option<usize>, String)> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        (line, e.message().to_owned())
    })?;
    if !file.mcp.is_empty() && !cfg!(feature = "mcp") {
        return Err((
            None,
            "[[mcp]] needs toolwire built with the `mcp` feature".to_owned(),
        ));
    }
    if file.role.is_empty() && !file.mcp.is_empty() {
        // A file that only mounts MCP servers keeps the one default role.
        return Ok(vec![RoleConfig::offline(DEFAULT_ROLE)]);
    }
    if file.role.is_empty() {
        return Err((
            None,
            "no [[role]] table: define at least one role (name, provider, model)".to_owned(),
        ));
    }
    let mut roles = Vec::new();
    for (i, entry) in file.role.into_iter().enumerate() {
        let at = |field: &str| format!("role #{} ({field})", i + 1);
        let provider = match entry.provider.as_deref() {
            None | Some("mock") => None,
            Some(name) => Some(name.parse::<ProviderKind>().map_err(|e| {
                // The place is said once: the role's, not the parser's own "at provider".
                let reason = match &e {
                    crate::Error::Input { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                (None, format!("{}: {reason}", at("provider")))
            })?),
        };
        let model = match (entry.model, provider) {
            (Some(m), _) => m,
            (None, None) => OFFLINE_MODEL.to_owned(),
            (None, Some(kind)) => {
                return Err((
                    None,
                    format!("{}: a role on {kind} needs a model", at("model")),
                ));
            }
        };
        let role = RoleConfig {
            name: entry.name,
            provider,
            model,
            base_url: entry.base_url,
            system: entry.system,
            api_key_env: entry.api_key_env,
            max_turns: entry.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            drop_unsupported: entry.drop_unsupported.unwrap_or(false),
            api_key_envs: entry.api_key_envs,
            fallbacks: entry.fallbacks,
        };
        roles.push(role);
    }
    let config = ServerConfig::new().with_roles(roles);
    if let Err(Error::Input { path, message }) = config.check() {
        return Err((None, format!("{path}: {message}")));
    }
    Ok(config.roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_keys_from_the_list_and_the_file_agree() {
        let listed = ServerConfig::new().with_gateway_keys_list(" k1 ,#x,, # y ,k2");
        assert_eq!(listed.gateway_keys, ["k1", "k2"]);
        let path = std::env::temp_dir().join(format!("tw-keys-{}.txt", std::process::id()));
        std::fs::write(&path, "k1\n#x\n\n k2 \n").unwrap();
        let filed = ServerConfig::new().with_gateway_keys_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(filed.gateway_keys, listed.gateway_keys);
        assert!(
            ServerConfig::new()
                .with_gateway_keys_list("#x")
                .gateway_keys
                .is_empty()
        );
    }

    #[test]
    fn roles_parse_with_defaults() {
        let roles = parse_roles(
            r#"
[[role]]
name = "Lanlan"
provider = "openai"
model = "gpt-4o-mini"
system = "You are Lanlan."

[[role]]
name = "offline"
"#,
        )
        .unwrap();
        assert_eq!(roles.len(), 2);
        assert_eq!(roles[0].provider, Some(ProviderKind::OpenAi));
        assert_eq!(roles[0].system.as_deref(), Some("You are Lanlan."));
        assert_eq!(roles[1].provider, None);
        assert_eq!(roles[1].model, OFFLINE_MODEL);
        assert_eq!(roles[1].max_turns, DEFAULT_MAX_TURNS);
    }

    #[test]
    fn bad_files_name_the_line_and_reason() {
        let (line, message) = parse_roles("[[role]]\nname = \"a\"\ncolour = 1\n").unwrap_err();
        assert_eq!(line, Some(3));
        assert!(message.contains("colour"), "{message}");
        let (_, message) =
            parse_roles("[[role]]\nname = \"a\"\nprovider = \"nope\"\n").unwrap_err();
        assert!(
            message.starts_with("role #1 (provider): unknown provider \"nope\""),
            "{message}"
        );
        assert!(
            !message.contains("invalid input"),
            "one place per message: {message}"
        );
        let (_, message) =
            parse_roles("[[role]]\nname = \"a\"\nprovider = \"openai\"\n").unwrap_err();
        assert!(message.contains("needs a model"), "{message}");
        let (_, message) =
            parse_roles("[[role]]\nname = \"a\"\n[[role]]\nname = \"a\"\n").unwrap_err();
        assert!(message.contains("twice"), "{message}");
        let (_, message) = parse_roles("").unwrap_err();
        assert!(message.contains("no [[role]]"), "{message}");
        let (_, message) = parse_roles("[[role]]\nname = \"a\"\nmax_turns = 0\n").unwrap_err();
        assert!(message.contains("max_turns"), "{message}");
    }

    #[test]
    fn gateway_sections_parse_and_are_checked() {
        let text = r#"
allow_provider_models = ["openai/gpt-4o-mini", "gemini/*"]
upstream_first_byte_timeout_secs = 2.5

[[role]]
name = "smart"
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_envs = ["ANTHROPIC_KEY_1", "ANTHROPIC_KEY_2"]
fallbacks = ["fast"]

[[role]]
name = "fast"

[limits]
on_store_error = "closed"
window_secs = 0.5

[[gateway_key]]
name = "team-a"
key_env = "CARGO_PKG_NAME"
roles = ["smart"]
requests_per_minute = 60
tokens_per_minute = 200000
tokens_per_day = 5000000
"#;
        let roles = parse_roles(text).unwrap();
        assert_eq!(
            roles[0].key_vars().collect::<Vec<_>>(),
            ["ANTHROPIC_KEY_1", "ANTHROPIC_KEY_2"]
        );
        assert_eq!(roles[0].fallbacks, ["fast"]);
        let parts = parse_gateway(text).unwrap();
        assert_eq!(parts.keys.len(), 1);
        let key = &parts.keys[0];
        assert_eq!(key.key, env!("CARGO_PKG_NAME"));
        assert!(!format!("{key:?}").contains(env!("CARGO_PKG_NAME")));
        assert_eq!(key.roles.as_deref(), Some(&["smart".to_owned()][..]));
        assert_eq!(
            (
                key.requests_per_minute,
                key.tokens_per_minute,
                key.tokens_per_day
            ),
            (Some(60), Some(200_000), Some(5_000_000))
        );
        assert_eq!(parts.limits.on_store_error, StoreFailure::Closed);
        assert_eq!(parts.limits.window, Duration::from_millis(500));
        assert_eq!(parts.first_byte, Some(Duration::from_millis(2_500)));
        assert_eq!(parts.allow_provider_models.len(), 2);

        // A fallback that is no role, a key for a role that does not exist, an unset key
        // variable, a store this build cannot share through: each refused, named.
        let (_, m) = parse_roles("[[role]]\nname = \"a\"\nfallbacks = [\"b\"]\n").unwrap_err();
        assert!(m.contains("fallback \"b\""), "{m}");
        let unset = "[[role]]\nname = \"a\"\n[[gateway_key]]\nname = \"k\"\n\
                     key_env = \"TOOLWIRE_TEST_SURELY_UNSET_VARIABLE\"\n";
        let (_, m) = parse_gateway(unset).unwrap_err();
        assert!(m.contains("TOOLWIRE_TEST_SURELY_UNSET_VARIABLE"), "{m}");
        let config = ServerConfig::new()
            .with_gateway_key_entries([GatewayKey::new("k", "s").with_roles(["nobody"])]);
        assert!(config.check().unwrap_err().to_string().contains("nobody"));
        let config =
            ServerConfig::new().with_limits(LimitsConfig::default().with_store("http://x"));
        assert!(config.check().unwrap_err().to_string().contains("redis://"));
        let (_, m) = parse_gateway("[limits]\non_store_error = \"maybe\"\n").unwrap_err();
        assert!(m.contains("maybe"), "{m}");
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn mcp_mounts_parse_and_are_checked() {
        use crate::mcp::Endpoint;
        let text = "[[mcp]]\nname = \"files\"\ncommand = [\"python3\", \"srv.py\"]\n\
                    [[mcp]]\nname = \"web\"\nurl = \"http://127.0.0.1:9000/mcp\"\nrole = \"default\"\n";
        // A file with only [[mcp]] keeps the default role.
        let roles = parse_roles(text).unwrap();
        assert_eq!(roles, vec![RoleConfig::offline(DEFAULT_ROLE)]);
        let mounts = super::super::mount::parse(text).unwrap();
        assert_eq!(mounts.len(), 2);
        assert_eq!(
            mounts[0].endpoint,
            Endpoint::command(["python3", "srv.py"]).unwrap()
        );
        assert_eq!(mounts[1].role.as_deref(), Some("default"));
        let config = ServerConfig {
            mcp: mounts,
            ..ServerConfig::new()
        };
        config.check().unwrap();

        let (_, message) = super::super::mount::parse("[[mcp]]\nname = \"x\"\n").unwrap_err();
        assert!(message.contains("either command"), "{message}");
        let (_, message) =
            super::super::mount::parse("[[mcp]]\nname = \"x\"\nurl = \"ftp://a\"\n").unwrap_err();
        assert!(message.contains("not an http"), "{message}");
        let (_, message) =
            super::super::mount::parse("[[mcp]]\nname = \"x\"\nurl = \"http://a\"\nport = 1\n")
                .unwrap_err();
        assert!(message.contains("port"), "{message}");
        let bad = |name: &str, role: Option<&str>| {
            let mut m =
                super::super::mount::McpMount::new(name, Endpoint::url("http://a").unwrap());
            m.role = role.map(str::to_owned);
            ServerConfig {
                mcp: vec![m],
                ..ServerConfig::new()
            }
            .check()
            .unwrap_err()
            .to_string()
        };
        assert!(bad("a b", None).contains("mount name"));
        assert!(bad("ok", Some("nobody")).contains("not defined"));
    }
}
