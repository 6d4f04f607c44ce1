//! Tools the provider runs itself, declared in a request: web search, web fetch, code
//! execution, file search, tool search, a remote MCP server, or any provider tool verbatim.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the provider runs on its side, offered to the model beside the request's own
/// tools. Each kind goes to every provider that offers it, in that provider's form, with the
/// options that map; a provider without it refuses it by name (`Error::Unsupported`), or,
/// with the request's `drop_unsupported`, leaves it out and lists it on the encoded request.
///
/// JSON: `{"type": "web_search", "max_uses": 3, "allowed_domains": [...]}`,
/// `{"type": "code_execution"}`, `{"type": "provider", "provider": "anthropic", "tool": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum HostedTool {
    /// Search the web (Anthropic `web_search`, Responses `web_search`, Gemini
    /// `google_search`, Bedrock Nova `nova_grounding`).
    WebSearch(SearchOptions),
    /// Read pages by URL (Anthropic `web_fetch`, Gemini `url_context`).
    WebFetch(SearchOptions),
    /// Run code in the provider's sandbox (Anthropic `code_execution`, Responses
    /// `code_interpreter`, Gemini `code_execution`, Bedrock Nova `nova_code_interpreter`).
    CodeExecution,
    /// Search the caller's stored files (Responses `file_search` over vector stores, Gemini
    /// `file_search` over file search stores).
    FileSearch {
        /// The stores to search (vector store ids, file search store names).
        store_ids: Vec<String>,
        /// The most results to return.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_results: Option<u32>,
    },
    /// Let the model search the request's tools (Anthropic's regex tool search, Responses
    /// `tool_search`): the tools marked deferred are loaded only when found.
    ToolSearch,
    /// A remote MCP server the provider calls itself (Anthropic's MCP connector, Responses
    /// `mcp`).
    Mcp {
        /// A short name for the server.
        server_label: String,
        /// The server's URL.
        server_url: String,
        /// A bearer token for it, if it needs one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        authorization: Option<String>,
        /// Only these of its tools (all when empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allowed_tools: Vec<String>,
    },
    /// A provider's own tool definition, sent verbatim to that provider only (its `tools`
    /// entry as the provider spells it).
    Provider {
        /// The provider it is for (`anthropic`, `openai-responses`, `gemini`, `bedrock`).
        provider: String,
        /// The tool object, verbatim.
        tool: Value,
    },
}

impl HostedTool {
    /// The kind's canonical name (`web_search`, `code_execution`, …; `provider` for a
    /// verbatim tool), as errors and drop notes name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::WebSearch(_) => "web_search",
            Self::WebFetch(_) => "web_fetch",
            Self::CodeExecution => "code_execution",
            Self::FileSearch { .. } => "file_search",
            Self::ToolSearch => "tool_search",
            Self::Mcp { .. } => "mcp",
            Self::Provider { .. } => "provider",
        }
    }

    /// Web search with no options.
    pub fn web_search() -> Self {
        Self::WebSearch(SearchOptions::default())
    }
}

/// Options of a web search or web fetch tool. Each goes where the provider has it; an option
/// set for a provider without it is refused (or dropped with `drop_unsupported`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SearchOptions {
    /// The most searches or fetches in one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Only these domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never these domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// Where the user is, to localise results: `{"type": "approximate", "city", "region",
    /// "country", "timezone"}` as Anthropic and OpenAI take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_location: Option<Value>,
}

impl SearchOptions {
    /// Sets the most uses.
    pub fn with_max_uses(mut self, n: u32) -> Self {
        self.max_uses = Some(n);
        self
    }

    /// Sets the allowed domains.
    pub fn with_allowed_domains(mut self, d: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_domains = d.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the blocked domains.
    pub fn with_blocked_domains(mut self, d: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.blocked_domains = d.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the user's location.
    pub fn with_user_location(mut self, location: Value) -> Self {
        self.user_location = Some(location);
        self
    }
}
