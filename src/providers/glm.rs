//! GLM (Zhipu open.bigmodel.cn, Z.ai api.z.ai): the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`GLM`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/glm.md")]

use super::openai::{
    Dialect, OpenAi, ParallelCalls, ReasoningField, ThinkingSwitch, ToolChoiceSupport, openai_name,
};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::types::FinishReason;

/// GLM's dialect of the Chat Completions wire.
pub const GLM: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Glm,
        base_url: "https://open.bigmodel.cn/api/paas/v4",
        key_vars: &["ZAI_API_KEY", "ZHIPUAI_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools (tool_choice auto only), streamed arguments with tool_stream \
                       (glm-4.6/4.7/5), reasoning, thinking switch",
    },
    path: "/chat/completions",
    max_tokens_field: "max_tokens",
    // Usage arrives on the last chunk anyway; `stream_options` is not in GLM's reference.
    stream_usage: false,
    reasoning_fields: &[ReasoningField::ReasoningContent],
    echo_reasoning: Some("reasoning_content"),
    unfinished: &[""],
    finish_reasons: &[
        ("sensitive", FinishReason::ContentFilter),
        ("network_error", FinishReason::Error),
        ("model_context_window_exceeded", FinishReason::Length),
    ],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::AutoOnly,
    thinking_tool_choice: ToolChoiceSupport::All,
    parallel_tool_calls: ParallelCalls::Undocumented,
    thinking: ThinkingSwitch::TypeObject("thinking"),
    thinking_models: &[],
    tool_stream_models: &["glm-4.6", "glm-4.7", "glm-5"],
    empty_content_as_string: true,
    exclusive_with_tools: &[],
    check_property_keys: false,
    sse_error_bodies: false,
};

/// The GLM provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&GLM)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;
    use crate::provider::Provider;
    use crate::types::{ChatRequest, Message, ToolChoice, ToolDefinition};

    fn request(model: &str) -> ChatRequest {
        ChatRequest::new(model, vec![Message::user("hi")]).with_tools([ToolDefinition::new(
            "get_weather",
            "",
        )
        .unwrap()])
    }

    #[test]
    fn tool_stream_only_when_streaming_with_tools_on_listed_models() {
        let p = provider();
        let body = |req: &ChatRequest, stream| p.encode(req, stream).unwrap().body;
        assert_eq!(body(&request("glm-4.7"), true)["tool_stream"], json!(true));
        assert_eq!(body(&request("glm-5"), true)["tool_stream"], json!(true));
        assert!(
            body(&request("glm-4.7"), false)
                .get("tool_stream")
                .is_none()
        );
        assert!(body(&request("glm-4.5"), true).get("tool_stream").is_none());
        assert!(
            body(&request("glm-4.6v"), true)
                .get("tool_stream")
                .is_none()
        );
        let no_tools = ChatRequest::new("glm-4.7", vec![Message::user("hi")]);
        assert!(body(&no_tools, true).get("tool_stream").is_none());
        let mut forced = request("glm-4.5");
        forced.extra_body.insert("tool_stream".into(), json!(true));
        assert_eq!(body(&forced, true)["tool_stream"], json!(true));
        assert!(
            body(&request("glm-4.7"), true)
                .get("stream_options")
                .is_none()
        );
    }

    #[test]
    fn only_auto_tool_choice_and_no_parallel_promise() {
        let p = provider();
        for choice in [
            ToolChoice::None,
            ToolChoice::Required,
            ToolChoice::Tool("get_weather".into()),
        ] {
            let err = p
                .encode(&request("glm-4.7").with_tool_choice(choice), false)
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Unsupported {
                        provider: ProviderKind::Glm,
                        ..
                    }
                ),
                "{err}"
            );
        }
        let body = p
            .encode(
                &request("glm-4.7").with_tool_choice(ToolChoice::Auto),
                false,
            )
            .unwrap()
            .body;
        assert_eq!(body["tool_choice"], json!("auto"));
        let mut req = request("glm-4.7");
        req.parallel_tool_calls = Some(true);
        assert!(
            p.encode(&req, false)
                .unwrap()
                .body
                .get("parallel_tool_calls")
                .is_none()
        );
        req.parallel_tool_calls = Some(false);
        let err = p.encode(&req, false).unwrap_err().to_string();
        assert!(err.contains("parallel_tool_calls"), "{err}");
    }

    #[test]
    fn finish_reasons_map_and_unknown_stays_verbatim() {
        let p = provider();
        for (wire, canonical) in [
            ("sensitive", "content_filter"),
            ("network_error", "error"),
            ("model_context_window_exceeded", "length"),
            ("brand_new_reason", "brand_new_reason"),
        ] {
            let body = json!({"choices": [{"index": 0, "finish_reason": wire,
                "message": {"role": "assistant", "content": "x"}}]});
            let r = p.decode(body.to_string().as_bytes()).unwrap();
            assert_eq!(r.finish_reason.as_str(), canonical);
        }
    }
}
