//! Kimi (Moonshot AI, `api.moonshot.ai`): the Chat Completions wire as a [`Dialect`].
//!
//! Kimi's thinking models need the reasoning of every assistant turn with tool calls sent back
//! as `reasoning_content` (<https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model>,
//! "multi-step tool calls"); toolwire echoes it whenever the turn has it. Kimi documents no
//! stand-in for a turn made by another model, so none is sent.

use super::openai::{Dialect, OPENAI_COMPATIBLE, OpenAi, ReasoningField, ThinkingSwitch};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, ReasoningRule, SamplingNames};

const THINKING_PAGE: &str = "https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model";

/// Kimi's reasoning table: the `-thinking` models always reason; K2.5 and later switch
/// thinking with `thinking: {"type": "enabled" | "disabled"}`.
pub const KIMI_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(&["-thinking"], ReasoningForm::Always, THINKING_PAGE),
    ReasoningRule::new(
        &["kimi-k2.5", "kimi-k2.6", "kimi-k3"],
        ReasoningForm::Switch,
        THINKING_PAGE,
    ),
];

/// Kimi's dialect of the Chat Completions wire.
pub const KIMI: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Custom("kimi"),
        base_url: "https://api.moonshot.ai/v1",
        key_vars: &["MOONSHOT_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, reasoning_content echoed on tool-call turns, thinking switch",
    },
    reasoning_fields: &[ReasoningField::ReasoningContent],
    echo_reasoning: Some("reasoning_content"),
    thinking: ThinkingSwitch::TypeObject("thinking"),
    // https://platform.moonshot.ai/docs/api/chat: `top_p`, `stop`, both penalties; no `seed`,
    // no `top_k`.
    sampling: SamplingNames::OPENAI
        .with_stop(Some("stop"), Some(5))
        .with_seed(None),
    reasoning: KIMI_REASONING,
    reasoning_default: ReasoningForm::None,
    ..OPENAI_COMPATIBLE
};

/// The Kimi provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&KIMI)
}

/// The mock provider's writer for this dialect: the Chat Completions answer with the
/// reasoning in the fields this server writes.
#[cfg(feature = "respond")]
pub fn responder() -> super::openai::OpenAiResponder {
    super::openai::OpenAiResponder::new(&KIMI, &super::openai::OPENAI_RESPONSE)
}
