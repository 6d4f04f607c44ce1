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
//! | `respond` | writing each wire: `provider::Respond`, `provider::StreamWriter`, the client wires' request readers, `seal` (RustCrypto `hmac`, `sha2`) | yes |
//! | `mock` | `mock`: the loopback mock provider (`client`, `respond`) | yes |
//! | `rustls` | TLS with rustls and the ring provider | yes |
//! | `native-tls` | TLS with the platform's library instead (use without default features) | no |
//! | `server` | `server`: the tool registration server (axum, toml); `plugin`: publishing tools to one | no |
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
pub mod eventstream;
pub mod fixture;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mock")]
pub mod mock;
pub mod partial_json;
#[cfg(feature = "server")]
pub mod plugin;
pub mod provider;
pub mod providers;
pub mod realtime;
pub mod replay;
pub mod schema;
#[cfg(feature = "respond")]
pub mod seal;
#[cfg(feature = "server")]
pub mod server;
pub(crate) mod sse;
#[cfg(all(test, feature = "respond"))]
mod test_support;
pub mod text_calls;
#[cfg(feature = "client")]
mod tls;
#[cfg(feature = "tools")]
pub mod tools;
pub mod turn;
pub mod types;

// The types every user touches, at the root: `toolwire::Agent`, `toolwire::ToolRegistry`, …
#[cfg(feature = "agent")]
pub use agent::Agent;
#[cfg(feature = "client")]
pub use client::{ChatStream, Client};
pub use error::{ApiError, Error, Result, TimeoutPhase};
#[cfg(feature = "mock")]
pub use mock::MockServer;
pub use provider::{HttpRequest, NameMap, Provider, ProviderKind, StreamDecoder};
pub use providers::provider_for;
#[cfg(feature = "tools")]
pub use tools::{Tool, ToolRegistry, TypedTool};
/// Makes a typed tool of a function: `#[toolwire::tool]` on an `async fn` (or a plain `fn`)
/// keeps the function and adds a unit struct named after it in CamelCase that implements
/// [`TypedTool`], so `Tool::typed(GetWeather)` is the tool.
///
/// The tool's name is the function's, its description the function's doc comment, its
/// parameters schema is derived from the argument types exactly as a [`TypedTool`]'s
/// `Args` struct would be (each argument's doc comment is its description; `Option<T>`
/// arguments are optional). `#[toolwire::tool(name = "...", description = "...")]` overrides
/// either. The function returns `Result<T, E>` (`T: Serialize`, `E` any `std::error::Error` or
/// [`ToolError`](tools::ToolError)) or a plain `T: Serialize`; a
/// [`ToolReply`](tools::ToolReply) carries content parts. While it runs, the function reports
/// progress for the people waiting through [`Reporter::current`](tools::Reporter::current).
///
/// ```
/// use toolwire::tools::{Tool, ToolError};
///
/// /// Current weather for a city.
/// #[toolwire::tool]
/// async fn get_weather(/** City name. */ city: String) -> Result<String, ToolError> {
///     Ok(format!("21 °C and sunny in {city}"))
/// }
///
/// let tool = Tool::typed(GetWeather)?;
/// assert_eq!(tool.definition().name, "get_weather");
/// assert_eq!(tool.definition().description, "Current weather for a city.");
/// assert_eq!(tool.definition().parameters["properties"]["city"]["description"], "City name.");
/// # Ok::<(), toolwire::Error>(())
/// ```
///
/// Arguments are owned values deserialized from the model's JSON, so a borrowed one is refused
/// at compile time:
///
/// ```compile_fail
/// /// Shouts.
/// #[toolwire::tool]
/// async fn shout(text: &str) -> String {
///     text.to_uppercase()
/// }
/// ```
///
/// and so is a function without a description:
///
/// ```compile_fail
/// #[toolwire::tool]
/// async fn undocumented(x: i64) -> i64 {
///     x
/// }
/// ```
#[cfg(feature = "tools")]
pub use toolwire_macros::tool;

/// What `#[toolwire::tool]` expands to refers to; not a public API.
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
}

pub use types::{
    ArgumentsError, ArgumentsErrorKind, AssistantMessage, ChatRequest, ChatResponse, FinishReason,
    HostedCall, HostedTool, Message, SchemaMode, StreamEvent, TextCallFormat, ToolCall, ToolChoice,
    ToolDefinition, ToolResult, Usage,
};
