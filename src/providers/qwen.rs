//! Qwen through DashScope's OpenAI-compatible mode: the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`QWEN`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/qwen.md")]

#[cfg(feature = "respond")]
use super::openai::{
    DeltaRole, ErrorFields, IdleContent, OpenAiResponder, ResponseShape, RunningFinish,
    StreamUsage, StreamedCalls,
};
use super::openai::{
    Dialect, FilePart, InlineImage, MediaSupport, OpenAi, ParallelCalls, ReasoningField,
    StructuredOutput, ThinkingSwitch, ToolChoiceSupport, openai_name,
};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, ReasoningRule, SamplingNames};

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
    reasoning_placeholder: None,
    reasoning_details: None,
    request_flags: &[],
    unfinished: &[""],
    finish_reasons: &[],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::All,
    thinking_tool_choice: ToolChoiceSupport::AutoOrNone,
    parallel_tool_calls: ParallelCalls::DefaultTrue,
    thinking: ThinkingSwitch::FlagBudget("enable_thinking", "thinking_budget"),
    thinking_models: &["-thinking"],
    tool_stream_models: &[],
    empty_content_as_string: true,
    exclusive_with_tools: &["enable_search"],
    check_property_keys: false,
    calls_end_at_next_index: false,
    // https://www.alibabacloud.com/help/en/model-studio/vision: images by URL or data URL.
    media: MediaSupport {
        image: Some(InlineImage::DataUrl),
        file: FilePart::None,
        audio: &[],
    },
    // https://www.alibabacloud.com/help/en/model-studio/qwen-structured-output (non-thinking).
    structured_output: StructuredOutput::JsonSchemaNotThinking,
    call_ids: super::openai::CallIds::AsGiven,
    required_tool_choice: "required",
    allowed_tools_choice: false,
    thinking_chunks: false,
    // https://www.alibabacloud.com/help/en/model-studio/use-qwen-by-calling-api: `top_p`,
    // `top_k` (a top-level field beside OpenAI's), `stop`, `seed`, `presence_penalty`; no
    // `frequency_penalty`.
    sampling: SamplingNames::OPENAI
        .with_top_k(Some("top_k"))
        .with_stop(Some("stop"), None)
        .with_frequency_penalty(None),
    reasoning: QWEN_REASONING,
    reasoning_default: ReasoningForm::None,
};

const QWEN_THINKING_PAGE: &str = "https://www.alibabacloud.com/help/en/model-studio/deep-thinking";

/// Qwen's reasoning table: thinking-only models (`…-thinking…`, QwQ) cannot turn thinking
/// off ("The value of the enable_thinking parameter is restricted to True"); hybrid models
/// (Qwen3, qwen-plus, qwen-flash, qwen-turbo, qwen3.x) take `enable_thinking` and a
/// `thinking_budget` (an effort maps to a budget; the server caps it at the model's limit).
pub const QWEN_REASONING: &[ReasoningRule] = &[
    ReasoningRule::new(
        &["-thinking", "qwq"],
        ReasoningForm::Always,
        QWEN_THINKING_PAGE,
    ),
    ReasoningRule::new(
        &["qwen3", "qwen-plus", "qwen-flash", "qwen-turbo"],
        ReasoningForm::Budget {
            min: 1,
            max: u32::MAX,
            off: true,
        },
        QWEN_THINKING_PAGE,
    ),
];

/// How Qwen's server writes its answers, for the mock provider: as in the Alibaba doc example
/// (pattern B) and a recorded qwen-max stream (pattern A); fixtures `qwen/stream_single_call`,
/// `qwen/single_call`.
#[cfg(feature = "respond")]
pub const QWEN_RESPONSE: ResponseShape = ResponseShape {
    role: DeltaRole::FirstDelta,
    idle_content: IdleContent::Null,
    running_finish: RunningFinish::Null,
    calls: StreamedCalls::Fragments {
        first_piece_in_opener: true,
        empty_id_continuations: true,
    },
    usage: StreamUsage::LastChunk,
    null_fields: &["usage", "system_fingerprint"],
    null_choice_fields: &["logprobs"],
    body_call_index: true,
    finish_reasons: &[],
    error_fields: ErrorFields::OpenAi,
    sse_errors: true,
};

/// The Qwen provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&QWEN)
}

/// The Qwen writer for the mock provider: [`QWEN`] answering in [`QWEN_RESPONSE`].
#[cfg(feature = "respond")]
pub fn responder() -> OpenAiResponder {
    OpenAiResponder::new(&QWEN, &QWEN_RESPONSE)
}

#[cfg(all(test, feature = "respond"))]
mod tests {
    #[allow(unused_imports)]
    use crate::provider::Respond;
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

    #[test]
    fn mock_answers_decode_back() {
        crate::test_support::assert_round_trips(&responder());
    }

    #[test]
    fn mock_streams_have_the_fixtures_fields() {
        crate::test_support::assert_streams_match_fixtures(&responder(), "qwen");
    }

    #[test]
    fn continuations_carry_an_empty_id_and_usage_comes_last() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(&responder(), "parallel calls");
        // The role rides on the first delta, which already carries reasoning; no role after.
        let first = &chunks[0]["choices"][0]["delta"];
        assert_eq!(first["role"], "assistant");
        assert_eq!(first["content"], serde_json::Value::Null);
        assert!(first.get("reasoning_content").is_some());
        assert!(
            chunks[1..]
                .iter()
                .all(|c| c["choices"][0]["delta"].get("role").is_none())
        );
        let calls: Vec<&serde_json::Value> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
            .collect();
        // The opener already holds the first piece of the arguments.
        assert_eq!(calls[0]["id"], "call_tw_1");
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert_eq!(calls[0]["function"]["arguments"], "{\"cit");
        assert_eq!(
            calls[1],
            &json!({"index": 0, "id": "", "type": "function", "function": {"arguments": "y\":\"P"}})
        );
        let (usage, rest) = chunks.split_last().unwrap();
        let (finish, running) = rest.split_last().unwrap();
        for c in running {
            assert_eq!(c["choices"][0]["finish_reason"], serde_json::Value::Null);
            assert_eq!(c["choices"][0]["logprobs"], serde_json::Value::Null);
            assert_eq!(c["usage"], serde_json::Value::Null);
            assert_eq!(c["system_fingerprint"], serde_json::Value::Null);
        }
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(finish["choices"][0]["delta"], json!({}));
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["completion_tokens"], 30);
    }

    #[test]
    fn bodies_have_empty_content_and_call_index() {
        use crate::test_support::samples;
        let body: serde_json::Value =
            serde_json::from_slice(&responder().encode_response(&samples()[1].1, false).unwrap())
                .unwrap();
        let choice = &body["choices"][0];
        assert_eq!(choice["message"]["content"], "");
        assert_eq!(choice["message"]["tool_calls"][1]["index"], 1);
        assert_eq!(choice["logprobs"], serde_json::Value::Null);
        assert_eq!(body["system_fingerprint"], serde_json::Value::Null);
    }

    #[test]
    fn stream_errors_are_sse_framed() {
        use crate::error::ApiError;
        let p = responder();
        let mut e = ApiError::new(
            ProviderKind::Qwen,
            Some(400),
            "<400> InternalError.Algo.InvalidParameter: bad tool_choice",
        );
        e.code = Some("invalid_parameter_error".into());
        let (status, body) = p.encode_error(&e, true);
        assert_eq!(status, 400);
        let text = String::from_utf8(body.clone()).unwrap();
        assert!(
            text.starts_with("data: {\"error\":") && text.ends_with("}\n\n"),
            "{text}"
        );
        let back = p.decode_error(Some(status), &body);
        assert_eq!(back.code, e.code);
        assert_eq!(back.message, e.message);
        // Not framed: the same error without stream, or a 5xx.
        let (_, plain) = p.encode_error(&e, false);
        assert!(plain.starts_with(b"{\"error\""));
        e.status = Some(500);
        let (status, plain) = p.encode_error(&e, true);
        assert_eq!(status, 500);
        assert!(plain.starts_with(b"{\"error\""));
        // An error event after partial text: the partial is kept.
        let mut e = ApiError::new(
            ProviderKind::Qwen,
            None,
            "Output data may contain inappropriate content.",
        );
        e.code = Some("data_inspection_failed".into());
        e.partial = Some(Box::new(crate::types::ChatResponse {
            text: Some("Here is the story:".into()),
            ..Default::default()
        }));
        let (status, sse) = p.encode_error(&e, true);
        assert_eq!(status, 200);
        let err = crate::replay::replay(&p, &sse).unwrap_err();
        assert_eq!(
            err.api().unwrap().code.as_deref(),
            Some("data_inspection_failed")
        );
        assert_eq!(
            err.partial().unwrap().text.as_deref(),
            Some("Here is the story:")
        );
    }
}
