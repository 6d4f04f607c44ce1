//! Calls the provider runs itself (web search, code execution, file search, tool search, remote
//! MCP): kept, echoed, never dispatched.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call the provider ran itself: Anthropic `server_tool_use` and its `*_tool_result` block,
/// a Bedrock `toolUse` of `type: server_tool_use` and its `toolResult`, a Responses
/// `web_search_call` / `file_search_call` / `code_interpreter_call` / `mcp_call` /
/// `tool_search_call` item, a Gemini `executableCode` / `codeExecutionResult` pair.
///
/// It is never in [`crate::ChatResponse::tool_calls`] and never dispatched. The wire's own
/// blocks, items or parts are kept verbatim in `blocks` and sent back, in order, when the
/// history goes to the same wire (`wire`); another wire gets the call and its result as text.
///
/// JSON: `{"id", "name", "input", "result", "wire", "at", "blocks"}`.
///
/// Non-exhaustive: build it with [`HostedCall::new`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostedCall {
    /// The provider's id for the call (empty when the wire has none, e.g. Gemini code).
    #[serde(default)]
    pub id: String,
    /// What ran, as the wire names it (`web_search`, `code_execution`, `file_search`,
    /// `nova_code_interpreter`, …).
    pub name: String,
    /// The call's input as the wire sent it (`{}` when it sent none).
    #[serde(default)]
    pub input: Value,
    /// The result, as the wire sent it; `null` while none came (a paused turn, an item still
    /// running, a provider that keeps results to itself).
    #[serde(default)]
    pub result: Option<Value>,
    /// The wire the call was made on (a provider name: `anthropic`, `bedrock`,
    /// `openai-responses`, `gemini`): only that wire is sent `blocks` back.
    #[serde(default)]
    pub wire: String,
    /// Where the call stood in the turn: the byte offset, in the response's text, of the text
    /// that came before it (`0`: before any text).
    #[serde(default)]
    pub at: usize,
    /// The wire's blocks, items or parts for this call and its result, verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Value>,
}

impl HostedCall {
    /// A call named `name` with this id, made on `wire`, with no input or result yet.
    pub fn new(id: impl Into<String>, name: impl Into<String>, wire: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input: Value::Object(serde_json::Map::new()),
            result: None,
            wire: wire.into(),
            at: 0,
            blocks: Vec::new(),
        }
    }

    /// Sets the input.
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = input;
        self
    }

    /// Sets the result.
    pub fn with_result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }

    /// Sets the byte offset, in the turn's text, where the call stood.
    pub fn with_at(mut self, at: usize) -> Self {
        self.at = at;
        self
    }

    /// Adds wire blocks, verbatim.
    pub fn with_blocks(mut self, blocks: impl IntoIterator<Item = Value>) -> Self {
        self.blocks.extend(blocks);
        self
    }

    /// The call as text, for a wire that cannot carry it: what ran, with what input, and the
    /// result's text (a string as is, other JSON compact); `(no result)` when none came.
    pub fn as_text(&self) -> String {
        let result = match &self.result {
            None | Some(Value::Null) => "(no result)".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        format!(
            "[{} ran {} {}]\n{}\n",
            self.wire, self.name, self.input, result
        )
    }
}
