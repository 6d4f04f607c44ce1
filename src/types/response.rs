//! The canonical response: text, reasoning, tool calls, finish reason and usage.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{HostedCall, ToolCall};

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end.
    #[default]
    Stop,
    /// The model called tools (reported whenever the turn ended normally with a complete call).
    ToolCalls,
    /// The output hit the token limit.
    Length,
    /// A safety filter stopped the output.
    ContentFilter,
    /// The provider failed while generating.
    Error,
    /// The provider paused a long turn of its own tool calls (Anthropic `pause_turn`): send
    /// the turn back as it is to let it continue.
    Pause,
    /// Any other value, verbatim as the provider sent it.
    Other(String),
}

impl FinishReason {
    /// The canonical string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::Error => "error",
            Self::Pause => "pause",
            Self::Other(s) => s,
        }
    }

    /// Parses a canonical name; anything else is [`FinishReason::Other`].
    pub fn from_canonical(s: &str) -> Self {
        match s {
            "stop" => Self::Stop,
            "tool_calls" => Self::ToolCalls,
            "length" => Self::Length,
            "content_filter" => Self::ContentFilter,
            "error" => Self::Error,
            "pause" => Self::Pause,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Whether the turn ended normally (not cut short, filtered or failed): the only case in
    /// which complete tool calls turn the reason into `tool_calls`.
    pub fn is_normal_end(&self) -> bool {
        matches!(self, Self::Stop | Self::ToolCalls)
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::from_canonical(&s))
    }
}

/// Token counts.
///
/// Non-exhaustive: build it with [`Usage::new`] and [`Usage::with_reasoning_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens (including reasoning, where the provider counts it there).
    pub output_tokens: u64,
    /// Reasoning tokens, when the provider reports them separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Input tokens read from the provider's prompt cache, when it reports them (OpenAI
    /// `cached_tokens`, Anthropic `cache_read_input_tokens`, Gemini `cachedContentTokenCount`).
    /// Whether they are also counted in `input_tokens` is the wire's convention, kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache, when it reports them (Anthropic
    /// `cache_creation_input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
}

impl Usage {
    /// Input and output token counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            reasoning_tokens: None,
            cached_input_tokens: None,
            cache_creation_input_tokens: None,
        }
    }

    /// Sets the reasoning token count.
    pub fn with_reasoning_tokens(mut self, n: u64) -> Self {
        self.reasoning_tokens = Some(n);
        self
    }

    /// Sets the count of input tokens read from the prompt cache.
    pub fn with_cached_input_tokens(mut self, n: u64) -> Self {
        self.cached_input_tokens = Some(n);
        self
    }

    /// Sets the count of input tokens written to the prompt cache.
    pub fn with_cache_creation_input_tokens(mut self, n: u64) -> Self {
        self.cache_creation_input_tokens = Some(n);
        self
    }
}

/// What the model answered in one turn.
///
/// Non-exhaustive: a response to script (the mock provider, tests) starts from
/// [`ChatResponse::default`] (no text, `stop`) and continues with the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The visible text; `None` when there was none.
    pub text: Option<String>,
    /// The reasoning text; `None` when there was none.
    pub reasoning: Option<String>,
    /// The tool calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// The calls the provider ran itself (web search, code execution, …), in the order they
    /// came: never in `tool_calls`, never dispatched. Not serialized when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted_calls: Vec<HostedCall>,
    /// Why the turn ended, in canonical terms.
    pub finish_reason: FinishReason,
    /// The provider's own finish value, verbatim (GLM `sensitive`, Gemini `MAX_TOKENS`, the
    /// `stop` a turn with calls had before it settled to `tool_calls`); `None` when the wire
    /// sent none (a stream that ended at `[DONE]` or broke off). Always serialized, as `null`
    /// when absent.
    #[serde(default)]
    pub raw_finish_reason: Option<String>,
    /// Token counts; `None` when the provider sent none.
    pub usage: Option<Usage>,
    /// The provider's own usage report, verbatim (OpenAI-style `usage`, Gemini
    /// `usageMetadata`, Anthropic's `message_start` usage with `message_delta`'s laid over it):
    /// the counts `usage` was read from, and every field it has no place for. `None` exactly
    /// when `usage` is; not serialized then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_usage: Option<Value>,
    /// Provider data (e.g. a Gemini text signature, a finish message); flattened into the object.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatResponse {
    /// Sets the visible text.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets the reasoning text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Adds tool calls (the finish reason stays as set).
    pub fn with_tool_calls(mut self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls.extend(calls);
        self
    }

    /// Adds calls the provider ran itself.
    pub fn with_hosted_calls(mut self, calls: impl IntoIterator<Item = HostedCall>) -> Self {
        self.hosted_calls.extend(calls);
        self
    }

    /// Sets the canonical finish reason.
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish_reason = reason;
        self
    }

    /// Sets the provider's own finish value.
    pub fn with_raw_finish_reason(mut self, raw: impl Into<String>) -> Self {
        self.raw_finish_reason = Some(raw.into());
        self
    }

    /// Sets the token counts.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the provider's own usage report.
    pub fn with_raw_usage(mut self, raw: Value) -> Self {
        self.raw_usage = Some(raw);
        self
    }

    /// Adds one provider field, flattened into the JSON object.
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Applies the rule every provider shares: a turn that ended normally with at least one
    /// complete tool call reports `tool_calls`, whatever the wire said.
    pub fn settle_finish_reason(&mut self) {
        if self.finish_reason.is_normal_end() && self.tool_calls.iter().any(ToolCall::is_complete) {
            self.finish_reason = FinishReason::ToolCalls;
        }
    }

    /// The calls that can be executed.
    pub fn complete_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.tool_calls.iter().filter(|c| c.is_complete())
    }
}
