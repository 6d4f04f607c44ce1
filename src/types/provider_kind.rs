//! Which provider: the one spelling of each provider's name.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The built-in providers. One spelling everywhere: module, `fixtures/`, `providers/*.md`, CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI Chat Completions, and any OpenAI-compatible server given a base URL.
    OpenAi,
    /// Google Gemini API (`generateContent`).
    Gemini,
    /// Zhipu GLM (open.bigmodel.cn, api.z.ai).
    Glm,
    /// Qwen through DashScope's OpenAI-compatible mode.
    Qwen,
    /// DashScope's native protocol.
    DashScope,
    /// StepFun.
    StepFun,
    /// OpenAI Responses API (`POST /responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages API.
    Anthropic,
    /// Ollama's native chat API (`/api/chat`).
    Ollama,
}

impl ProviderKind {
    /// Every provider, in display order.
    pub const ALL: [ProviderKind; 9] = [
        Self::OpenAi,
        Self::Gemini,
        Self::Glm,
        Self::Qwen,
        Self::DashScope,
        Self::StepFun,
        Self::OpenAiResponses,
        Self::Anthropic,
        Self::Ollama,
    ];

    /// The provider's one spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Gemini => "gemini",
            Self::Glm => "glm",
            Self::Qwen => "qwen",
            Self::DashScope => "dashscope",
            Self::StepFun => "stepfun",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
