#![doc = include_str!("../README.md")]
//!
//! # Features
//!
//! A library build compiles only what it uses. Without default features only the sans-IO core
//! remains: types, providers (encode/decode), stream assembly, replay, schema lowering and the
//! realtime codecs, with no async runtime, HTTP, JSON Schema or TOML crate.
//!
//! | Feature | Enables | Default |
//! |---|---|---|
//! | `client` | [`Client`] over HTTP (reqwest, tokio) | yes |
//! | `tools` | `tools`: registry, dispatch validated with jsonschema, typed tools (schemars) | yes |
//! | `agent` | `agent`: the streaming agent loop (`client` + `tools`) | yes |
//! | `mock` | `mock`: the loopback mock provider (`client`) | yes |
//! | `rustls` | TLS with rustls and the ring provider | yes |
//! | `native-tls` | TLS with the platform's library instead (use without default features) | no |
//! | `server` | `server`: the tool registration server (axum, toml) | no |
//! | `realtime` | realtime sessions over WebSocket (tokio-tungstenite) | no |
//! | `conformance` | `conformance`: the conformance runner and `fixture::load_meta` (toml) | no |
//! | `cli` | the `toolwire` binary (clap) with every subcommand | no |
//! | `full` | everything except `native-tls` | no |
//!
//! With `rustls`, ring is installed as the process's default rustls crypto provider before
//! toolwire builds an HTTP client, unless a provider is installed already.
//!
//! The minimum supported Rust version (MSRV) is 1.95: the oldest toolchain CI builds with. It is
//! raised only in a minor release.

#[cfg(feature = "agent")]
pub mod agent;
pub(crate) mod assemble;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod error;
pub mod fixture;
#[cfg(feature = "mock")]
pub mod mock;
pub mod partial_json;
pub mod provider;
pub mod providers;
pub mod realtime;
pub mod replay;
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
pub(crate) mod sse;
#[cfg(all(test, feature = "mock"))]
mod test_support;
pub mod text_calls;
#[cfg(feature = "client")]
mod tls;
#[cfg(feature = "tools")]
pub mod tools;
pub mod turn;
pub mod types;

#[cfg(feature = "client")]
pub use client::{ChatStream, Client};
pub use error::{ApiError, Error, Result, TimeoutPhase};
pub use provider::{HttpRequest, NameMap, Provider, ProviderKind, StreamDecoder};
pub use providers::provider_for;
pub use types::{
    ArgumentsError, ArgumentsErrorKind, AssistantMessage, ChatRequest, ChatResponse, FinishReason,
    Message, SchemaMode, StreamEvent, TextCallFormat, ToolCall, ToolChoice, ToolDefinition,
    ToolResult, Usage,
};
