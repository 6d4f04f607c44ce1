//! `toolwire serve`: the tool registration server (see `toolwire::server`).

use std::path::PathBuf;

use clap::Args;
use toolwire::server::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER,
    DEFAULT_PORT, ServerConfig,
};

use super::CliError;

/// Arguments of `toolwire serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Roles (TOML: [[role]] name, provider, model, system, ...); without it one offline
    /// role named "default".
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Keep registrations in this SQLite database across restarts (a JSON state file of an
    /// earlier version found there is imported once, and kept as FILE.json-imported).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Listen on this address instead of 127.0.0.1:PORT; anything but loopback needs gateway
    /// keys. /api/* and the page stay loopback-only.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<std::net::SocketAddr>,
    /// Keys gateway clients must send (one per line); also TOOLWIRE_GATEWAY_KEYS
    /// (comma-separated).
    #[arg(long, value_name = "FILE")]
    gateway_keys: Option<PathBuf>,
    /// Seconds a peer has to send a request head (also how long an idle keep-alive
    /// connection stays open).
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_HEADER_TIMEOUT.as_secs_f64())]
    header_timeout: f64,
    /// The most connections open at once; past it idle ones are closed and new ones wait.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// The most connections open at once from one address off loopback (with --listen);
    /// past it a new one from that address is closed at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_PEER)]
    max_connections_per_peer: usize,
}

pub(crate) fn serve(args: &ServeArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Input(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(run(args))
}

async fn run(args: &ServeArgs) -> Result<(), CliError> {
    let header_timeout = std::time::Duration::try_from_secs_f64(args.header_timeout)
        .map_err(|e| CliError::Input(format!("--header-timeout {}: {e}", args.header_timeout)))?;
    let mut config = ServerConfig::new()
        .with_port(args.port)
        .with_header_timeout(header_timeout)
        .with_max_connections(args.max_connections)
        .with_max_connections_per_peer(args.max_connections_per_peer);
    if let Some(path) = &args.config {
        config = config
            .with_roles_file(path)
            .map_err(|e| CliError::from_error("", &e))?;
    }
    if let Some(path) = &args.state {
        config = config.with_state_file(path);
    }
    if let Some(addr) = args.listen {
        config = config.with_listen(addr);
    }
    if let Ok(key) = std::env::var("TOOLWIRE_STATE_KEY")
        && !key.trim().is_empty()
    {
        config = config.with_state_key(key);
    }
    let from_env = ServerConfig::new()
        .with_gateway_keys_list(&std::env::var("TOOLWIRE_GATEWAY_KEYS").unwrap_or_default());
    let mut keys = from_env.gateway_keys;
    if let Some(path) = &args.gateway_keys {
        let from_file = ServerConfig::new()
            .with_gateway_keys_file(path)
            .map_err(|e| CliError::from_error("", &e))?;
        keys.extend(from_file.gateway_keys);
    }
    config = config.with_gateway_keys(keys);
    let gated = !config.gateway_keys.is_empty() || !config.gateway_key_entries.is_empty();
    let server = toolwire::server::start(config)
        .await
        .map_err(|e| CliError::from_error("", &e))?;
    // With OTLP export on, the gateway's counters go out as metrics beside the spans.
    #[cfg(feature = "otlp")]
    super::otlp::export_gateway_metrics(server.metrics());
    let roles: Vec<String> = server
        .roles()
        .iter()
        .map(|(name, offline)| {
            if *offline {
                format!("{name} (offline)")
            } else {
                name.clone()
            }
        })
        .collect();
    outln!("toolwire serve: listening on {}", server.url());
    outln!("roles: {}", roles.join(", "));
    if let Some(path) = &args.state {
        outln!("state: {}", path.display());
    }
    if let Some(kept) = server.imported() {
        outln!(
            "state: imported the JSON state file into the database; the old file is kept as {}",
            kept.display()
        );
    }
    outln!("page: {}/", server.url());
    outln!(
        "gateway: {0}/v1/chat/completions, {0}/v1/messages, {0}/v1/responses, {0}/v1/models{1}",
        server.url(),
        if gated {
            " (gateway keys required)"
        } else {
            ""
        }
    );
    stop_signal().await;
    outln!("toolwire serve: stopping");
    server.shutdown().await;
    Ok(())
}

/// Ctrl-C, or SIGTERM on Unix.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
