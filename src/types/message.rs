//! Conversation messages and tool results.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, HostedCall, Part, ToolCall};

/// One message of a conversation. JSON: `{"role": "system" | "user" | "assistant" | "tool", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instruction text.
        content: String,
    },
    /// What the user said: text, or text and media ([`Part`]s).
    User {
        /// A string, or a list of parts.
        content: Content,
    },
    /// A model turn: text, reasoning and tool calls, as a [`crate::ChatResponse`] reported them.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message: text (`&str`, `String`) or parts (`Vec<Part>`).
    pub fn user(content: impl Into<Content>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant(AssistantMessage {
            content: Some(content.into()),
            ..AssistantMessage::default()
        })
    }
}

/// A model turn kept in the history.
///
/// Non-exhaustive: build it from a [`crate::ChatResponse`] (`From`), with
/// [`Message::assistant`], or from [`AssistantMessage::default`] and the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantMessage {
    /// The visible text, if any.
    #[serde(default)]
    pub content: Option<String>,
    /// The reasoning text, if any (some providers need it sent back with tool-call turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The calls the provider ran itself, as the response reported them: sent back verbatim
    /// to the wire they came from, as text to another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted_calls: Vec<HostedCall>,
    /// Provider data to echo back (e.g. a signature on the text); flattened into the object.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AssistantMessage {
    /// Sets the visible text.
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.content = Some(content.into());
        self
    }

    /// Sets the reasoning text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Adds tool calls.
    pub fn with_tool_calls(mut self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls.extend(calls);
        self
    }

    /// Adds calls the provider ran itself.
    pub fn with_hosted_calls(mut self, calls: impl IntoIterator<Item = HostedCall>) -> Self {
        self.hosted_calls.extend(calls);
        self
    }

    /// Adds one provider field to echo back, flattened into the JSON object.
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }
}

impl From<crate::ChatResponse> for AssistantMessage {
    fn from(r: crate::ChatResponse) -> Self {
        Self {
            content: r.text,
            reasoning: r.reasoning,
            tool_calls: r.tool_calls,
            hosted_calls: r.hosted_calls,
            extra: r.extra,
        }
    }
}

/// The result of running one tool call, sent back to the model.
///
/// `output` is any JSON, the program's value; on failure `is_error` is true and `error` is a
/// message for the model (the output may still carry detail). `content`, when not empty, is
/// what the model sees instead: text and media parts (a screenshot, a chart, a PDF page), as an
/// MCP tool's `content` beside its `structuredContent`.
///
/// Non-exhaustive: build it with [`ToolResult::ok`] or [`ToolResult::error`] from the call it
/// answers, or with [`ToolResult::new`] from an id and a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's canonical name (Gemini matches results by name).
    pub name: String,
    /// What the tool returned.
    #[serde(default)]
    pub output: Value,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// A human-readable failure message.
    #[serde(default)]
    pub error: Option<String>,
    /// What the model sees, when it is more than the output as JSON: text and media parts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Part>,
}

impl ToolResult {
    /// A successful result for the call with this id and tool name.
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, output: Value) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            output,
            is_error: false,
            error: None,
            content: Vec::new(),
        }
    }

    /// Sets what the model sees: text and media parts (the output stays the program's value).
    pub fn with_content(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.content = parts.into_iter().collect();
        self
    }

    /// Marks the result failed, with `message` for the model (the output is kept).
    pub fn with_error(mut self, message: impl Into<String>) -> Self {
        self.is_error = true;
        self.error = Some(message.into());
        self
    }

    /// Marks the result failed or not, without a message; a result marked not failed has no
    /// failure message either (encoders read a message as a failure).
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        if !is_error {
            self.error = None;
        }
        self
    }

    /// A successful result.
    pub fn ok(call: &ToolCall, output: Value) -> Self {
        Self {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output,
            is_error: false,
            error: None,
            content: Vec::new(),
        }
    }

    /// A failed result carrying `message` for the model.
    pub fn error(call: &ToolCall, message: impl Into<String>) -> Self {
        Self {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: Value::Null,
            is_error: true,
            error: Some(message.into()),
            content: Vec::new(),
        }
    }

    /// The result as one text: the text parts of `content` when it has any, else a string
    /// output as is, other JSON serialized; an error result leads with its message. Used by
    /// wires whose tool message content is a string (media parts are the encoder's to place).
    pub fn content_text(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(Part::as_text).collect();
        let output = if !texts.is_empty() {
            texts.concat()
        } else if !self.content.is_empty() {
            String::new()
        } else {
            match &self.output {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            }
        };
        match (&self.error, self.is_error) {
            (Some(message), _) if output.is_empty() => format!("Error: {message}"),
            (Some(message), _) => format!("Error: {message}\n{output}"),
            (None, true) if output.is_empty() => "Error".to_owned(),
            (None, true) => format!("Error: {output}"),
            (None, false) => output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_marked_not_failed_has_no_failure_message() {
        let r = ToolResult::new("c1", "f", Value::Null).with_error("boom");
        assert!(r.is_error && r.error.as_deref() == Some("boom"));
        let r = r.with_is_error(false);
        assert!(!r.is_error && r.error.is_none(), "{r:?}");
        let r = ToolResult::new("c1", "f", Value::Null).with_is_error(true);
        assert!(r.is_error && r.error.is_none());
    }
    use serde_json::json;

    #[test]
    fn message_json_shapes() {
        let m: Message = serde_json::from_value(json!({
            "role": "tool", "call_id": "c", "name": "f", "output": {"t": 1}
        }))
        .unwrap();
        let Message::Tool(r) = &m else {
            panic!("not a tool message")
        };
        assert!(!r.is_error);
        assert_eq!(r.content_text(), r#"{"t":1}"#);
        let m: Message = serde_json::from_value(json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "c", "name": "f", "raw_arguments": "{}"}]
        }))
        .unwrap();
        let Message::Assistant(a) = m else {
            panic!("not an assistant message")
        };
        assert_eq!(a.tool_calls.len(), 1);
    }

    #[test]
    fn content_text_of_errors() {
        let call = ToolCall::new("c", "f", "{}");
        assert_eq!(
            ToolResult::error(&call, "boom").content_text(),
            "Error: boom"
        );
        assert_eq!(ToolResult::ok(&call, json!("hi")).content_text(), "hi");
    }
}
