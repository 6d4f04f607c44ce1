//! Every integration test of toolwire, in one crate (one binary, so the library is linked
//! once for all of them): one module per area, each the file of the same name in `tests/`.
//!
//! Run one area with `cargo test --features full --test all <module>::` (`gateway::`,
//! `server::`), one test with its full path (`cargo test --features full --test all
//! cli_replay::a_dash_reads_the_stream_from_standard_input`).
//!
//! Adding a test file: write `tests/<area>.rs` as before, and add `mod <area>;` here, behind
//! `#[cfg(feature = "...")]` for the features it needs (what a `[[test]]` entry's
//! `required-features` said before). All modules share one process: a test must not set
//! process-wide state (environment variables, the current directory, a global `tracing`
//! subscriber; `tracing::subscriber::set_default` is per thread and fine), and gives its
//! scratch files a name of its own under the temporary directory.

#[cfg(all(feature = "agent", feature = "mock"))]
mod agent;
#[cfg(all(
    feature = "client",
    feature = "tools",
    feature = "mock",
    feature = "realtime"
))]
mod api;
mod architecture;
#[cfg(feature = "conformance")]
mod builtins;
#[cfg(feature = "cli")]
mod cli_chat;
mod cli_conformance;
#[cfg(feature = "cli")]
mod cli_replay;
#[cfg(all(feature = "client", feature = "mock", feature = "conformance"))]
mod client;
#[cfg(all(feature = "client", feature = "mock"))]
mod client_ext;
#[cfg(all(feature = "agent", feature = "mock"))]
mod deferred;
#[cfg(feature = "cli")]
mod demo;
mod eventstream;
#[cfg(feature = "conformance")]
mod fixtures;
mod foreign_body;
mod gateway;
mod gateway_cancel;
mod gateway_fallback;
#[cfg(all(feature = "cli", feature = "redis"))]
mod gateway_redis;
mod gateway_sdk;
mod gateway_settings;
#[cfg(all(feature = "agent", feature = "mock", feature = "client"))]
mod hosted;
mod hosted_cross;
#[cfg(feature = "cli")]
mod hostile;
#[cfg(feature = "cli")]
mod mcp;
#[cfg(feature = "cli")]
mod mcp_input;
#[cfg(feature = "cli")]
mod mcp_tasks;
// Token file modes are Unix permissions.
#[cfg(all(feature = "cli", unix))]
mod mcp_oauth;
#[cfg(all(feature = "client", feature = "mock", feature = "conformance"))]
mod one_path;
#[cfg(all(feature = "cli", feature = "otlp"))]
mod otlp;
#[cfg(feature = "cli")]
mod partial_json;
mod parts;
mod passthrough;
#[cfg(feature = "conformance")]
mod props;
#[cfg(feature = "mock")]
mod real_clients;
#[cfg(feature = "conformance")]
mod realtime;
#[cfg(feature = "cli")]
mod realtime_cli;
#[cfg(all(feature = "realtime", feature = "mock"))]
mod realtime_session;
#[cfg(feature = "mock")]
mod reasoning_echo;
#[cfg(feature = "cli")]
mod seal_processes;
mod second_turn;
#[cfg(feature = "cli")]
mod serve_hardening;
#[cfg(feature = "cli")]
mod server;
mod settings;
mod standalone;
#[cfg(feature = "server")]
mod support;
#[cfg(feature = "respond")]
mod tool_fields;
#[cfg(feature = "tools")]
mod tool_macro;
#[cfg(feature = "tools")]
mod tools;
#[cfg(all(feature = "agent", feature = "mock"))]
mod tracing;
