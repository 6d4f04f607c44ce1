#![doc = include_str!("../README.md")]

pub mod agent;
pub mod assemble;
pub mod client;
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
pub mod sse;
pub mod tools;
pub mod turn;
pub mod types;

pub use client::{ChatStream, Client};
pub use error::{ApiError, Error, Result, TimeoutPhase};
pub use provider::{HttpRequest, NameMap, Provider, ProviderKind, StreamDecoder};
pub use providers::provider_for;
pub use types::{
    ArgumentsError, ArgumentsErrorKind, AssistantMessage, ChatRequest, ChatResponse, FinishReason,
    Message, SchemaMode, StreamEvent, ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};
