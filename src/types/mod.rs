//! The canonical model: pure data with serde, no IO. Its JSON is pinned: fixtures, the CLI and
//! users' files use it.

mod call;
mod content;
mod event;
mod hosted;
mod hosted_tool;
mod message;
mod provider_kind;
mod reasoning;
mod request;
mod response;
mod tool;

pub use call::{ArgumentsError, ArgumentsErrorKind, ToolCall, parse_arguments};
pub use content::{Content, Part, Source};
pub use event::StreamEvent;
pub use hosted::HostedCall;
pub use hosted_tool::{HostedTool, SearchOptions};
pub use message::{AssistantMessage, Message, ToolResult};
pub use provider_kind::ProviderKind;
pub use reasoning::{Effort, Reasoning, ReasoningSummary};
pub(crate) use request::Thinking;
pub use request::{ChatRequest, ResponseFormat, SchemaMode, TextCallFormat};
pub use response::{ChatResponse, FinishReason, Usage};
pub use tool::{
    AllowedMode, NAME_RULE, ToolChoice, ToolDefinition, empty_parameters, is_valid_name,
};

pub(crate) use tool::check_name;

/// Names the kind of a JSON value, for error messages.
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
