//! The built-in providers: pure translation, no IO.
//!
//! Adding a provider: an OpenAI-compatible one is a [`openai::Dialect`] value (each quirk a
//! documented field naming its fixture); a native one gets its own folder with the same file
//! names (`encode`, `decode`, `wire`). Either way it needs: every finish reason mapped (the rest
//! verbatim), errors keeping the provider's code and message, the canonical fixture cases (or
//! `SKIP` lines), and a quirk sheet in `providers/<name>.md`.

pub mod anthropic;
pub mod dashscope;
pub mod gemini;
pub mod glm;
pub(crate) mod lenient;
pub mod ollama;
pub mod openai;
pub mod openai_responses;
pub mod qwen;
pub(crate) mod shared;
pub mod stepfun;

use crate::error::{Error, Result};
use crate::provider::{Provider, ProviderKind};

/// Parsing a provider name: here, above the canonical model, because the names are the
/// built-in providers' (and errors are `Error::Input`, which `types` does not know).
impl std::str::FromStr for ProviderKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
                Error::input(
                    "provider",
                    format!(
                        "unknown provider {s:?}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// The provider for `kind` with its default settings.
pub fn provider_for(kind: ProviderKind) -> Result<Box<dyn Provider>> {
    match kind {
        ProviderKind::OpenAi => Ok(Box::new(openai::OpenAi::new())),
        ProviderKind::Gemini => Ok(Box::new(gemini::Gemini::new())),
        ProviderKind::DashScope => Ok(Box::new(dashscope::DashScope::new())),
        ProviderKind::Glm => Ok(Box::new(glm::provider())),
        ProviderKind::Qwen => Ok(Box::new(qwen::provider())),
        ProviderKind::StepFun => Ok(Box::new(stepfun::provider())),
        ProviderKind::OpenAiResponses => Ok(Box::new(openai_responses::OpenAiResponses::new())),
        ProviderKind::Anthropic => Ok(Box::new(anthropic::Anthropic::new())),
        ProviderKind::Ollama => Ok(Box::new(ollama::Ollama::new())),
    }
}

/// The provider for `kind` answering at `base_url` (`None`: the provider's own endpoint).
///
/// A base URL other than OpenAI's own, for `openai`, means another OpenAI-compatible server
/// (vLLM, Ollama, DeepSeek, a gateway), which gets [`openai::OpenAi::compatible`]; every other
/// provider speaks its own wire wherever it is served. The client, its recorder and
/// [`crate::conformance`] all choose with this, so a recording is checked with the dialect that
/// produced it.
pub fn provider_for_base_url(
    kind: ProviderKind,
    base_url: Option<&str>,
) -> Result<Box<dyn Provider>> {
    let default = provider_for(kind)?;
    let elsewhere = base_url.is_some_and(|url| !is_default_base_url(default.as_ref(), url));
    if kind == ProviderKind::OpenAi && elsewhere {
        return Ok(Box::new(openai::OpenAi::compatible()));
    }
    Ok(default)
}

/// Whether `url` is `provider`'s own endpoint (a trailing `/` aside).
pub(crate) fn is_default_base_url(provider: &dyn Provider, url: &str) -> bool {
    url.trim_end_matches('/') == provider.info().base_url.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_selects_the_compatible_dialect_only_for_openai() {
        let mut req = crate::ChatRequest::new("m", vec![crate::Message::user("hi")]);
        req.max_tokens = Some(9);
        let name_of = |kind, url| {
            let p = provider_for_base_url(kind, url).unwrap();
            p.encode(&req, false)
                .unwrap()
                .body
                .as_object()
                .unwrap()
                .keys()
                .find(|k| k.starts_with("max_"))
                .cloned()
        };
        let official = Some("max_completion_tokens".to_owned());
        let compatible = Some("max_tokens".to_owned());
        assert_eq!(name_of(ProviderKind::OpenAi, None), official);
        assert_eq!(
            name_of(ProviderKind::OpenAi, Some("https://api.openai.com/v1/")),
            official
        );
        assert_eq!(
            name_of(ProviderKind::OpenAi, Some("http://127.0.0.1:8000/v1")),
            compatible
        );
        let qwen = provider_for_base_url(ProviderKind::Qwen, Some("http://127.0.0.1:1")).unwrap();
        assert_eq!(qwen.info().kind, ProviderKind::Qwen);
        assert!(is_default_base_url(qwen.as_ref(), qwen.info().base_url));
    }
}
