//! DeepSeek (`api.deepseek.com`): the Chat Completions wire as a [`Dialect`].
//!
//! In thinking mode the reasoning of every assistant turn that made tool calls must go back as
//! `reasoning_content` in all later requests, or the API answers 400
//! (<https://api-docs.deepseek.com/guides/thinking_mode>, "Tool calls"); thinking is switched
//! with `thinking: {"type": "enabled" | "disabled"}` and its depth with `reasoning_effort`
//! (`low`, `high`, `max`; the server maps the other levels itself).

use super::openai::{Dialect, OPENAI_COMPATIBLE, OpenAi, ReasoningField, ThinkingSwitch};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, ReasoningRule, SamplingNames};
use crate::types::Effort;

const THINKING_PAGE: &str = "https://api-docs.deepseek.com/guides/thinking_mode";

/// DeepSeek's reasoning table: `deepseek-reasoner` always reasons; the other models (V3.2,
/// V4) take the switch and a level, `none` turning thinking off.
pub const DEEPSEEK_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(&["deepseek-reasoner"], ReasoningForm::Always, THINKING_PAGE),
    ReasoningRule::new(
        &["deepseek-"],
        ReasoningForm::Levels(&[Effort::None, Effort::Low, Effort::High, Effort::Max]),
        THINKING_PAGE,
    ),
];

/// DeepSeek's dialect of the Chat Completions wire.
pub const DEEPSEEK: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Custom("deepseek"),
        base_url: "https://api.deepseek.com",
        key_vars: &["DEEPSEEK_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, reasoning_content echoed on tool-call turns, thinking switch and \
                       reasoning_effort",
    },
    reasoning_fields: &[ReasoningField::ReasoningContent],
    echo_reasoning: Some("reasoning_content"),
    thinking: ThinkingSwitch::TypeObjectEffort("thinking", "reasoning_effort"),
    // https://api-docs.deepseek.com/api/create-chat-completion: `top_p`, `stop` (up to 16),
    // both penalties; no `seed`, no `top_k`.
    sampling: SamplingNames::OPENAI
        .with_stop(Some("stop"), Some(16))
        .with_seed(None),
    reasoning: DEEPSEEK_REASONING,
    reasoning_default: ReasoningForm::None,
    ..OPENAI_COMPATIBLE
};

/// The DeepSeek provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&DEEPSEEK)
}

/// The mock provider's writer for this dialect: the Chat Completions answer with the
/// reasoning in the fields this server writes.
#[cfg(feature = "respond")]
pub fn responder() -> super::openai::OpenAiResponder {
    super::openai::OpenAiResponder::new(&DEEPSEEK, &super::openai::OPENAI_RESPONSE)
}
