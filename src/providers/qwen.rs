//! Qwen through DashScope's OpenAI-compatible mode: the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`QWEN`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/qwen.md")]

use super::openai::{
    Dialect, OpenAi, ParallelCalls, ReasoningField, ThinkingSwitch, ToolChoiceSupport, openai_name,
};
use crate::provider::{Auth, ProviderInfo, ProviderKind};

/// Qwen's (DashScope compatible mode) dialect of the Chat Completions wire.
pub const QWEN: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Qwen,
        base_url: "https://dashscope.aliyuncs.com/compatible-mode/v1",
        key_vars: &["DASHSCOPE_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools, parallel calls (sent on by default), streamed arguments, \
                       thinking switch (enable_thinking), usage in stream",
    },
    path: "/chat/completions",
    max_tokens_field: "max_tokens",
    stream_usage: true,
    reasoning_fields: &[ReasoningField::ReasoningContent],
    echo_reasoning: None,
    unfinished: &[""],
    finish_reasons: &[],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::All,
    thinking_tool_choice: ToolChoiceSupport::AutoOrNone,
    parallel_tool_calls: ParallelCalls::DefaultTrue,
    thinking: ThinkingSwitch::Flag("enable_thinking"),
    thinking_models: &["-thinking"],
    tool_stream_models: &[],
    empty_content_as_string: true,
    exclusive_with_tools: &["enable_search"],
    check_property_keys: false,
    sse_error_bodies: true,
};

/// The Qwen provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&QWEN)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;
    use crate::provider::Provider;
    use crate::types::{ChatRequest, Message, ToolChoice, ToolDefinition};

    fn request() -> ChatRequest {
        ChatRequest::new("qwen-plus", vec![Message::user("hi")]).with_tools([ToolDefinition::new(
            "get_weather",
            "",
        )
        .unwrap()])
    }

    fn unsupported(req: &ChatRequest) -> bool {
        matches!(
            provider().encode(req, false),
            Err(Error::Unsupported {
                provider: ProviderKind::Qwen,
                ..
            })
        )
    }

    #[test]
    fn thinking_mode_limits_tool_choice() {
        let mut req = request().with_tool_choice(ToolChoice::Required);
        assert!(!unsupported(&req), "no thinking: required is fine");
        req.thinking = Some(true);
        assert!(unsupported(&req));
        req.thinking = None;
        req.extra_body.insert("enable_thinking".into(), json!(true));
        assert!(unsupported(&req), "thinking switched on through extra_body");
        req.thinking = Some(true);
        req.extra_body
            .insert("enable_thinking".into(), json!(false));
        assert!(
            !unsupported(&req),
            "extra_body wins over ChatRequest::thinking"
        );
        let mut req = request().with_tool_choice(ToolChoice::None);
        req.thinking = Some(true);
        assert!(!unsupported(&req), "none is allowed while thinking");
        let body = provider().encode(&req, false).unwrap().body;
        assert_eq!(body["enable_thinking"], json!(true));
        assert_eq!(body["tool_choice"], json!("none"));
    }

    #[test]
    fn enable_search_only_without_tools() {
        let mut req = request();
        req.extra_body.insert("enable_search".into(), json!(false));
        assert!(!unsupported(&req));
        req.extra_body.insert("enable_search".into(), json!(true));
        assert!(unsupported(&req));
        let mut plain = ChatRequest::new("qwen-plus", vec![Message::user("news?")]);
        plain.extra_body.insert("enable_search".into(), json!(true));
        let body = provider().encode(&plain, false).unwrap().body;
        assert_eq!(body["enable_search"], json!(true));
        assert!(body.get("parallel_tool_calls").is_none(), "only with tools");
    }
}
