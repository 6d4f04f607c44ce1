//! OpenRouter (`openrouter.ai/api/v1`): the Chat Completions wire as a [`Dialect`].
//!
//! OpenRouter takes one `reasoning` object (`effort` or `max_tokens`) and maps it to each
//! model (<https://openrouter.ai/docs/use-cases/reasoning-tokens>); its answers carry
//! `reasoning_details`, a list of `reasoning.text` / `reasoning.summary` /
//! `reasoning.encrypted` entries that must be sent back unchanged on the assistant turn for
//! models that need their reasoning preserved across tool calls ("Preserving reasoning
//! blocks"). toolwire keeps the list verbatim on the response and echoes it.

use super::openai::{Dialect, OPENAI_COMPATIBLE, OpenAi, ReasoningField, ThinkingSwitch};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, SamplingNames};

/// OpenRouter's dialect of the Chat Completions wire.
pub const OPENROUTER: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Custom("openrouter"),
        base_url: "https://openrouter.ai/api/v1",
        key_vars: &["OPENROUTER_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, one reasoning object for every model, reasoning_details kept \
                       and echoed",
    },
    reasoning_fields: &[ReasoningField::Reasoning, ReasoningField::ReasoningContent],
    // The details carry the reasoning back; the plain text is not sent twice.
    echo_reasoning: None,
    reasoning_details: Some("reasoning_details"),
    thinking: ThinkingSwitch::ReasoningObject("reasoning"),
    // https://openrouter.ai/docs/api-reference/parameters: `top_p`, `top_k`, `stop`, `seed`,
    // both penalties.
    sampling: SamplingNames::OPENAI
        .with_stop(Some("stop"), None)
        .with_top_k(Some("top_k")),
    reasoning: &[],
    reasoning_default: ReasoningForm::Any,
    ..OPENAI_COMPATIBLE
};

/// The OpenRouter provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&OPENROUTER)
}

/// The mock provider's writer for this dialect: the Chat Completions answer with the
/// reasoning in the fields this server writes.
#[cfg(feature = "respond")]
pub fn responder() -> super::openai::OpenAiResponder {
    super::openai::OpenAiResponder::new(&OPENROUTER, &super::openai::OPENAI_RESPONSE)
}
