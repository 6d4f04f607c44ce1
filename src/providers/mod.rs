//! The built-in providers: pure translation, no IO.
//!
//! Adding a provider: an OpenAI-compatible one is a [`openai::Dialect`] value (each quirk a
//! documented field naming its fixture); a native one gets its own folder with the same file
//! names (`encode`, `decode`, `wire`). Either way it needs: every finish reason mapped (the rest
//! verbatim), errors keeping the provider's code and message, the canonical fixture cases (or
//! `SKIP` lines), and a quirk sheet in `providers/<name>.md`.

pub mod gemini;
pub mod openai;
pub(crate) mod shared;

use crate::error::{Error, Result};
use crate::provider::{Provider, ProviderKind};

/// The provider for `kind` with its default settings.
pub fn provider_for(kind: ProviderKind) -> Result<Box<dyn Provider>> {
    match kind {
        ProviderKind::OpenAi => Ok(Box::new(openai::OpenAi::new())),
        ProviderKind::Gemini => Ok(Box::new(gemini::Gemini::new())),
        other => Err(Error::unsupported(
            other,
            "provider not built into this version yet",
        )),
    }
}
