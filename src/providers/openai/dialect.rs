//! Quirk settings of the OpenAI Chat Completions wire. Every OpenAI-compatible provider is one
//! [`Dialect`] value; a quirk is a documented field here before it is ever code.

use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::types::FinishReason;

/// The settings that make one OpenAI-compatible wire differ from another.
#[derive(Debug, Clone)]
pub struct Dialect {
    /// Static facts: name, base URL, key variables.
    pub info: ProviderInfo,
    /// Path of the chat endpoint below the base URL.
    pub path: &'static str,
    /// Body field for the output token limit. OpenAI's reasoning models reject `max_tokens`
    /// ("Use 'max_completion_tokens' instead", research A.6); most compatible servers only know
    /// `max_tokens`.
    pub max_tokens_field: &'static str,
    /// Send `stream_options: {"include_usage": true}` when streaming, so usage arrives in a last
    /// chunk with empty `choices` (fixture `openai/quirk_usage_only_final_chunk`).
    pub stream_usage: bool,
    /// Delta and message fields read as reasoning text, in order (`reasoning_content` on
    /// DeepSeek/GLM/Qwen, `reasoning` on StepFun and OpenRouter).
    pub reasoning_fields: &'static [&'static str],
    /// Field that carries the reasoning back on assistant turns with tool calls, when the
    /// provider needs it (DeepSeek-style thinking models answer 400 otherwise).
    pub echo_reasoning: Option<&'static str>,
    /// `finish_reason` values that mean "not finished yet" besides null (`""` on StepFun,
    /// `"null"` on DashScope).
    pub unfinished: &'static [&'static str],
    /// Provider-specific finish reasons and their canonical meaning (GLM `sensitive`, ...).
    pub finish_reasons: &'static [(&'static str, FinishReason)],
    /// Whether a tool name is accepted on this wire; others are mapped reversibly.
    pub valid_name: fn(&str) -> bool,
}

/// `^[a-zA-Z0-9_-]{1,64}$`: OpenAI's function-name rule (no dots).
pub fn openai_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// OpenAI itself (`api.openai.com`).
pub const OPENAI: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::OpenAi,
        base_url: "https://api.openai.com/v1",
        key_vars: &["OPENAI_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, parallel calls, strict schemas, streamed arguments, usage in stream",
    },
    path: "/chat/completions",
    max_tokens_field: "max_completion_tokens",
    stream_usage: true,
    reasoning_fields: &["reasoning_content", "reasoning"],
    echo_reasoning: None,
    unfinished: &[""],
    finish_reasons: &[("function_call", FinishReason::ToolCalls)],
    valid_name: openai_name,
};

/// Any other OpenAI-compatible server (vLLM, Ollama, DeepSeek, a gateway): the `openai` wire
/// with the widely understood `max_tokens`, and reasoning echoed as `reasoning_content`, which
/// DeepSeek-style thinking servers require and others ignore.
pub const OPENAI_COMPATIBLE: Dialect = Dialect {
    max_tokens_field: "max_tokens",
    echo_reasoning: Some("reasoning_content"),
    ..OPENAI
};
