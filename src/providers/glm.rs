//! GLM (Zhipu open.bigmodel.cn, Z.ai api.z.ai): the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`GLM`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/glm.md")]

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
    reasoning_placeholder: None,
    reasoning_details: None,
    request_flags: &[],
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
    calls_end_at_next_index: false,
    // Images as bare base64 or a URL, documents by URL (`file_url`); no audio part on the chat
    // endpoint. See the quirk sheet for the evidence.
    media: MediaSupport {
        image: Some(InlineImage::Bare),
        file: FilePart::FileUrl,
        audio: &[],
    },
    // Only `{"type": "json_object"}` is documented; a `json_schema` is accepted and ignored.
    structured_output: StructuredOutput::JsonObjectOnly,
    call_ids: super::openai::CallIds::AsGiven,
    required_tool_choice: "required",
    allowed_tools_choice: false,
    thinking_chunks: false,
    // `top_p` and one stop word (`stop`: "only a single stop word is supported"); no seed,
    // top_k or penalties in the reference (https://docs.bigmodel.cn/api-reference).
    sampling: SamplingNames::NONE
        .with_top_p(Some("top_p"))
        .with_stop(Some("stop"), Some(1)),
    reasoning: GLM_REASONING,
    reasoning_default: ReasoningForm::None,
};

/// GLM's reasoning table: the GLM-4.5 family and later switch thinking on and off with
/// `thinking: {"type": "enabled" | "disabled"}` (no level, no budget).
pub const GLM_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["glm-4.5", "glm-4.6", "glm-4.7", "glm-5", "glm-z1"],
    ReasoningForm::Switch,
    "https://docs.bigmodel.cn/cn/guide/capabilities/thinking-mode",
)];

/// How GLM's server writes its answers, for the mock provider.
#[cfg(feature = "respond")]
pub const GLM_RESPONSE: ResponseShape = ResponseShape {
    role: DeltaRole::EveryDelta("assistant"),
    idle_content: IdleContent::Absent,
    running_finish: RunningFinish::Absent,
    // `tool_stream` is off unless the request turns it on (docs.z.ai/guides/tools/stream-tool),
    // so calls arrive whole; `-1` as the GLM-4.5 family sends (zai-org/GLM-4.5 issue 17).
    calls: StreamedCalls::Whole { index: Some(-1) },
    usage: StreamUsage::FinishChunk,
    null_fields: &[],
    null_choice_fields: &[],
    body_call_index: true,
    finish_reasons: &[
        (FinishReason::ContentFilter, "sensitive"),
        (FinishReason::Error, "network_error"),
    ],
    error_fields: ErrorFields::CodeMessage,
    sse_errors: false,
};

/// [`GLM_RESPONSE`] for a request that set `tool_stream: true` (glm-4.6, glm-4.7, glm-5): the
/// mock provider streams each call's arguments in fragments keyed by `index`, as in fixture
/// `glm/stream_single_call`. Requests encode exactly as with [`GLM`].
#[cfg(feature = "respond")]
pub const GLM_TOOL_STREAM_RESPONSE: ResponseShape = ResponseShape {
    calls: StreamedCalls::Fragments {
        first_piece_in_opener: false,
        empty_id_continuations: false,
    },
    ..GLM_RESPONSE
};

/// The GLM provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&GLM)
}

/// The GLM writer for the mock provider: [`GLM`] answering in [`GLM_RESPONSE`].
#[cfg(feature = "respond")]
pub fn responder() -> OpenAiResponder {
    OpenAiResponder::new(&GLM, &GLM_RESPONSE)
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

    fn request(model: &str) -> ChatRequest {
        ChatRequest::new(model, vec![Message::user("hi")]).with_tools([ToolDefinition::new(
            "get_weather",
            "",
        )
        .unwrap()])
    }

    #[test]
    fn tool_stream_only_when_streaming_with_tools_on_listed_models() {
        let p = responder();
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
        let p = responder();
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
        let p = responder();
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
            assert_eq!(r.raw_finish_reason.as_deref(), Some(wire), "kept verbatim");
        }
    }

    #[test]
    fn mock_answers_decode_back() {
        use crate::test_support::assert_round_trips;
        assert_round_trips(&responder());
        assert_round_trips(&OpenAiResponder::new(&GLM, &GLM_TOOL_STREAM_RESPONSE));
    }

    #[test]
    fn mock_streams_have_the_fixtures_fields() {
        use crate::test_support::assert_streams_match_fixtures;
        assert_streams_match_fixtures(&responder(), "glm");
        assert_streams_match_fixtures(
            &OpenAiResponder::new(&GLM, &GLM_TOOL_STREAM_RESPONSE),
            "glm",
        );
    }

    #[test]
    fn whole_calls_carry_the_finish_which_repeats_with_usage() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(&responder(), "parallel calls");
        let (last, running) = chunks.split_last().unwrap();
        let (whole, running) = running.split_last().unwrap();
        // Reasoning fragments, each delta with its role and no finish_reason key.
        for c in running {
            let choice = &c["choices"][0];
            assert!(choice.get("finish_reason").is_none(), "{c}");
            assert_eq!(choice["delta"]["role"], "assistant");
            assert!(choice["delta"].get("reasoning_content").is_some(), "{c}");
            assert!(c.get("usage").is_none());
        }
        // Both calls whole in one chunk that already carries the finish.
        let choice = &whole["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        let calls = choice["delta"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2);
        for c in calls {
            assert_eq!(c["index"], -1);
            assert_eq!(c["type"], "function");
        }
        assert_eq!(calls[1]["id"], "call_tw_2");
        assert_eq!(
            calls[1]["function"]["arguments"],
            r#"{"city": "北京", "q": "a\"b"}"#
        );
        assert!(whole.get("usage").is_none());
        // The finish repeated, with the usage: one call each, usage once.
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            last["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        assert_eq!(last["usage"]["prompt_tokens"], 12);
        let p = responder();
        let sse = p
            .encode_response(&crate::test_support::samples()[1].1, true)
            .unwrap();
        let replayed = crate::replay::replay(&p, &sse).unwrap();
        let usage_events = replayed
            .events
            .iter()
            .filter(|e| matches!(e, crate::StreamEvent::Usage { .. }))
            .count();
        assert_eq!(usage_events, 1);
        assert_eq!(replayed.response.tool_calls.len(), 2);
    }

    #[test]
    fn text_only_turn_finishes_once_with_usage() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(&responder(), "text");
        let finishes = chunks
            .iter()
            .filter(|c| c["choices"][0].get("finish_reason").is_some())
            .count();
        assert_eq!(finishes, 1);
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["usage"]["completion_tokens"], 30);
    }

    #[test]
    fn tool_stream_answers_stream_arguments_by_index() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(
            &OpenAiResponder::new(&GLM, &GLM_TOOL_STREAM_RESPONSE),
            "parallel calls",
        );
        let calls: Vec<&serde_json::Value> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
            .collect();
        assert_eq!(calls[0][0]["id"], "call_tw_1");
        assert_eq!(calls[0][0]["index"], 0);
        assert_eq!(calls[0][0]["function"]["arguments"], "");
        assert_eq!(calls[1][0]["index"], 0);
        assert!(calls[1][0].get("id").is_none());
        assert!(calls.len() > 4, "arguments in fragments");
        let finishes: Vec<_> = chunks
            .iter()
            .filter_map(|c| c["choices"][0].get("finish_reason"))
            .collect();
        assert_eq!(finishes, [&json!("tool_calls")]);
        assert_eq!(chunks.last().unwrap()["usage"]["prompt_tokens"], 12);
    }

    #[test]
    fn finish_reasons_are_sent_in_glms_words() {
        use crate::test_support::{sample_chunks, samples};
        let p = responder();
        for (name, wire) in [
            ("content filter", "sensitive"),
            ("failed", "network_error"),
            ("cut short", "length"),
            ("unknown finish", "brand_new_reason"),
        ] {
            let last = sample_chunks(&p, name).pop().unwrap();
            assert_eq!(last["choices"][0]["finish_reason"], wire, "{name}");
            let (_, response) = samples().into_iter().find(|(n, _)| *n == name).unwrap();
            let body: serde_json::Value =
                serde_json::from_slice(&p.encode_response(&response, false).unwrap()).unwrap();
            assert_eq!(body["choices"][0]["finish_reason"], wire, "{name}");
        }
    }

    #[test]
    fn bodies_and_errors_have_glms_shape() {
        use crate::error::ApiError;
        use crate::test_support::samples;
        let p = responder();
        let body: serde_json::Value =
            serde_json::from_slice(&p.encode_response(&samples()[1].1, false).unwrap()).unwrap();
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], "");
        assert_eq!(message["reasoning_content"], "Two cities, two calls.");
        assert_eq!(message["tool_calls"][1]["index"], 1);

        let mut e = ApiError::new(ProviderKind::Glm, Some(429), "Insufficient balance");
        e.code = Some("1113".into());
        for stream in [false, true] {
            let (status, body) = p.encode_error(&e, stream);
            assert_eq!(status, 429);
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                v,
                json!({"error": {"code": "1113", "message": "Insufficient balance"}})
            );
            let back = p.decode_error(Some(status), &body);
            assert_eq!(back.code.as_deref(), Some("1113"));
            assert_eq!(back.message, "Insufficient balance");
        }
    }
}
