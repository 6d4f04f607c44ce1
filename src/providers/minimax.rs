//! MiniMax (`api.minimax.io`): the Chat Completions wire as a [`Dialect`].
//!
//! With `reasoning_split: true` the M-series models put their thinking in
//! `reasoning_details` instead of `<think>` tags in the text, and in multi-turn tool calling
//! "the complete model response (i.e., the assistant message) must be appended to the
//! conversation history" (<https://platform.minimax.io/docs/api-reference/text-openai-api>,
//! "Important Note"). toolwire always asks for the split, keeps `reasoning_details` verbatim
//! and sends it back on the assistant turn.

use super::openai::{Dialect, OPENAI_COMPATIBLE, OpenAi, ThinkingSwitch};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, ReasoningRule, SamplingNames};

/// MiniMax's reasoning table: the M2 models always think (no setting).
pub const MINIMAX_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["minimax-m2"],
    ReasoningForm::Always,
    "https://platform.minimax.io/docs/api-reference/text-openai-api",
)];

/// MiniMax's dialect of the Chat Completions wire.
pub const MINIMAX: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Custom("minimax"),
        base_url: "https://api.minimax.io/v1",
        key_vars: &["MINIMAX_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, reasoning_details kept and echoed (reasoning_split)",
    },
    reasoning_fields: &[],
    echo_reasoning: None,
    reasoning_details: Some("reasoning_details"),
    request_flags: &["reasoning_split"],
    thinking: ThinkingSwitch::NotSent,
    // The OpenAI-compatible page lists `temperature` and `top_p`; other sampling fields are
    // ignored by the server, so they are not sent.
    sampling: SamplingNames::NONE.with_top_p(Some("top_p")),
    reasoning: MINIMAX_REASONING,
    reasoning_default: ReasoningForm::None,
    ..OPENAI_COMPATIBLE
};

/// The MiniMax provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&MINIMAX)
}

/// The mock provider's writer for this dialect: the Chat Completions answer with the
/// reasoning in the fields this server writes.
#[cfg(feature = "respond")]
pub fn responder() -> super::openai::OpenAiResponder {
    super::openai::OpenAiResponder::new(&MINIMAX, &super::openai::OPENAI_RESPONSE)
}
