//! The built-in providers: pure translation, no IO.
//!
//! Adding a provider: an OpenAI-compatible one is a [`openai::Dialect`] value (each quirk a
//! documented field naming its fixture); a native one gets its own folder with the same file
//! names (`encode`, `decode`, `wire`). Either way it needs: every finish reason mapped (the rest
//! verbatim), errors keeping the provider's code and message, the canonical fixture cases (or
//! `SKIP` lines), and a quirk sheet in `providers/<name>.md`.

pub mod dashscope;
pub mod gemini;
pub mod glm;
pub(crate) mod lenient;
pub mod openai;
pub mod qwen;
pub(crate) mod shared;
pub mod stepfun;

use crate::error::Result;
use crate::provider::{Provider, ProviderKind};

/// The provider for `kind` with its default settings.
pub fn provider_for(kind: ProviderKind) -> Result<Box<dyn Provider>> {
    match kind {
        ProviderKind::OpenAi => Ok(Box::new(openai::OpenAi::new())),
        ProviderKind::Gemini => Ok(Box::new(gemini::Gemini::new())),
        ProviderKind::DashScope => Ok(Box::new(dashscope::DashScope::new())),
        ProviderKind::Glm => Ok(Box::new(glm::provider())),
        ProviderKind::Qwen => Ok(Box::new(qwen::provider())),
        ProviderKind::StepFun => Ok(Box::new(stepfun::provider())),
    }
}
