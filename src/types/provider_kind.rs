//! Which provider: the one spelling of each provider's name.

use std::fmt;

use serde::{Serialize, Serializer};

/// Which provider. One spelling everywhere: module, `fixtures/`, `providers/*.md`, CLI, JSON.
///
/// The built-in providers are listed in `providers::BUILTINS` (which `ALL` and parsing read);
/// a provider of the user's own names itself with [`ProviderKind::Custom`], so errors and
/// traces say its name. In JSON a kind is its name, a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    OpenAiResponses,
    /// Anthropic Messages API.
    Anthropic,
    /// Ollama's native chat API (`/api/chat`).
    Ollama,
    /// Mistral's chat completions (`api.mistral.ai`), with Mistral's rules.
    Mistral,
    /// Cohere's v2 chat API (`/v2/chat`).
    Cohere,
    /// Amazon Bedrock's Converse API (and ConverseStream).
    Bedrock,
    /// Google's Interactions API (`POST /v1beta/interactions`).
    GeminiInteractions,
    /// A provider that is not built in, by its own name (`ProviderKind::Custom("acme")`).
    Custom(&'static str),
}

impl ProviderKind {
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
            Self::Mistral => "mistral",
            Self::Cohere => "cohere",
            Self::Bedrock => "bedrock",
            Self::GeminiInteractions => "gemini-interactions",
            Self::Custom(name) => name,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Its name, as a string (what `#[serde(rename_all = "lowercase")]` wrote for the built-ins,
/// `openai-responses` included). Reading one back is beside the built-ins' list, in
/// `providers`.
impl Serialize for ProviderKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
