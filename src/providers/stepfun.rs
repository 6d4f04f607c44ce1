//! StepFun (api.stepfun.com): the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`STEPFUN`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/stepfun.md")]

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

/// StepFun's dialect of the Chat Completions wire.
pub const STEPFUN: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::StepFun,
        base_url: "https://api.stepfun.com/v1",
        key_vars: &["STEPFUN_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools (tool_choice auto only), streamed arguments, reasoning, \
                       usage on every chunk",
    },
    path: "/chat/completions",
    max_tokens_field: "max_tokens",
    // Usage rides on every chunk already; `stream_options` is not in StepFun's reference.
    stream_usage: false,
    reasoning_fields: &[ReasoningField::Reasoning, ReasoningField::ReasoningContent],
    echo_reasoning: None,
    reasoning_placeholder: None,
    reasoning_details: None,
    request_flags: &[],
    unfinished: &[""],
    finish_reasons: &[],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::AutoOnly,
    thinking_tool_choice: ToolChoiceSupport::All,
    parallel_tool_calls: ParallelCalls::Undocumented,
    thinking: ThinkingSwitch::NotSent,
    thinking_models: &[],
    tool_stream_models: &[],
    empty_content_as_string: false,
    exclusive_with_tools: &[],
    check_property_keys: true,
    calls_end_at_next_index: false,
    // https://platform.stepfun.ai/docs/en/api-reference/chat/chat-completion-create: images by
    // URL or data URL; no file part.
    media: MediaSupport {
        image: Some(InlineImage::DataUrl),
        file: FilePart::None,
        audio: &[],
    },
    // `response_format` documents `json_object`; a schema is model-dependent, so refused.
    structured_output: StructuredOutput::JsonObjectOnly,
    call_ids: super::openai::CallIds::AsGiven,
    required_tool_choice: "required",
    allowed_tools_choice: false,
    thinking_chunks: false,
    // https://platform.stepfun.ai/docs/en/api-reference/chat/chat-completion-create: `top_p`,
    // `stop`, `frequency_penalty`; no seed, top_k or presence_penalty.
    sampling: SamplingNames::NONE
        .with_top_p(Some("top_p"))
        .with_stop(Some("stop"), None)
        .with_frequency_penalty(Some("frequency_penalty")),
    reasoning: STEPFUN_REASONING,
    reasoning_default: ReasoningForm::None,
};

/// StepFun's reasoning table: the reasoning models (step-r1, step-3 and later) always reason
/// and have no setting for it.
pub const STEPFUN_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["step-r1", "step-3", "step-5"],
    ReasoningForm::Always,
    "https://platform.stepfun.ai/docs/en/guide/reasoning",
)];

/// How StepFun's server writes its answers, for the mock provider: as in the chat/streaming
/// doc example (platform.stepfun.ai, api-reference/chat/streaming), `role: ""`, `content: ""`
/// and `finish_reason: ""` on running chunks, running usage totals on every chunk; fixture
/// `stepfun/stream_single_call`. No error body is documented: OpenAI's shape is assumed.
#[cfg(feature = "respond")]
pub const STEPFUN_RESPONSE: ResponseShape = ResponseShape {
    role: DeltaRole::EveryDelta(""),
    idle_content: IdleContent::Empty,
    running_finish: RunningFinish::Empty,
    calls: StreamedCalls::Fragments {
        first_piece_in_opener: false,
        empty_id_continuations: false,
    },
    usage: StreamUsage::EveryChunk,
    null_fields: &[],
    null_choice_fields: &[],
    body_call_index: false,
    finish_reasons: &[],
    error_fields: ErrorFields::OpenAi,
    sse_errors: false,
};

/// The StepFun provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&STEPFUN)
}

/// The StepFun writer for the mock provider: [`STEPFUN`] answering in [`STEPFUN_RESPONSE`].
#[cfg(feature = "respond")]
pub fn responder() -> OpenAiResponder {
    OpenAiResponder::new(&STEPFUN, &STEPFUN_RESPONSE)
}

#[cfg(all(test, feature = "respond"))]
mod tests {
    #[allow(unused_imports)]
    use crate::provider::Respond;
    use serde_json::json;

    use super::*;
    use crate::error::Error;
    use crate::provider::Provider;
    use crate::types::{ChatRequest, Message, ToolDefinition};

    fn tool(parameters: serde_json::Value) -> ToolDefinition {
        ToolDefinition::new("lookup", "")
            .unwrap()
            .with_parameters(parameters)
            .unwrap()
    }

    #[test]
    fn property_keys_follow_the_name_rule() {
        let p = responder();
        let ok = tool(json!({"type": "object", "properties": {"zip-code": {}, "var_2": {}}}));
        assert!(p.encode_parameters(&ok, None).is_ok());
        for bad in ["zip.code", "城市", "has space", &"k".repeat(65)] {
            let t = tool(json!({"type": "object", "properties": {bad: {"type": "string"}}}));
            let err = p.encode_parameters(&t, None).unwrap_err();
            assert!(
                matches!(&err, Error::Unsupported { feature, .. } if feature.contains(&format!("{bad:?}"))),
                "{err}"
            );
        }
    }

    #[test]
    fn deltas_without_index_continue_the_call_at_their_position() {
        let chunk = |call: serde_json::Value, finish: &str| {
            json!({"choices": [{"index": 0, "delta": {"role": "", "content": "",
                "tool_calls": [call]}, "finish_reason": finish}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
            .to_string()
        };
        let body = [
            chunk(json!({"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}), ""),
            chunk(json!({"function": {"arguments": "{\"x\":"}}), ""),
            chunk(json!({"id": "", "function": {"arguments": "1}"}}), ""),
            chunk(json!({"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"y\""}}), ""),
            chunk(json!({"function": {"arguments": ":2}"}}), "tool_calls"),
        ]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
            + "data: [DONE]\n\n";
        let r = crate::replay::replay(&responder(), body.as_bytes())
            .unwrap()
            .response;
        let calls: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.raw_arguments.as_str()))
            .collect();
        assert_eq!(calls, [("a", "f", "{\"x\":1}"), ("b", "g", "{\"y\":2}")]);
    }

    #[test]
    fn undocumented_fields_are_not_sent() {
        let p = responder();
        let mut req = ChatRequest::new("step-3.5-flash", vec![Message::user("hi")])
            .with_tools([tool(json!({"type": "object", "properties": {}}))]);
        req.thinking = Some(true);
        req.parallel_tool_calls = Some(true);
        let body = p.encode(&req, true).unwrap().body;
        for field in [
            "parallel_tool_calls",
            "tool_choice",
            "stream_options",
            "thinking",
        ] {
            assert!(body.get(field).is_none(), "{field} sent: {body}");
        }
        req.parallel_tool_calls = Some(false);
        assert!(matches!(
            p.encode(&req, true),
            Err(Error::Unsupported {
                provider: ProviderKind::StepFun,
                ..
            })
        ));
    }

    #[test]
    fn mock_answers_decode_back() {
        crate::test_support::assert_round_trips(&responder());
    }

    #[test]
    fn mock_streams_have_the_fixtures_fields() {
        crate::test_support::assert_streams_match_fixtures(&responder(), "stepfun");
    }

    #[test]
    fn every_chunk_has_empty_role_and_finish_and_running_usage() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(&responder(), "parallel calls");
        let (last, running) = chunks.split_last().unwrap();
        for c in running {
            let choice = &c["choices"][0];
            assert_eq!(choice["finish_reason"], "", "{c}");
            assert_eq!(choice["delta"]["role"], "", "{c}");
            assert_eq!(choice["delta"]["content"], "", "{c}");
        }
        assert_eq!(running[0]["choices"][0]["delta"]["reasoning"], "Two ");
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            last["choices"][0]["delta"],
            json!({"role": "", "content": ""})
        );
        // Usage on every chunk: running totals that never fall and end at the turn's usage.
        let completion: Vec<u64> = chunks
            .iter()
            .map(|c| c["usage"]["completion_tokens"].as_u64().unwrap())
            .collect();
        assert!(
            completion.windows(2).all(|w| w[0] <= w[1]),
            "{completion:?}"
        );
        assert_eq!(completion.last(), Some(&30));
        assert!(chunks.iter().all(|c| c["usage"]["prompt_tokens"] == 12));
        assert_eq!(
            last["usage"]["completion_tokens_details"]["reasoning_tokens"],
            4
        );
        assert!(
            chunks
                .iter()
                .all(|c| c["choices"].as_array().unwrap().len() == 1)
        );
    }

    #[test]
    fn text_rides_in_content_with_the_empty_role() {
        use crate::test_support::sample_chunks;
        let chunks = sample_chunks(&responder(), "text");
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "", "content": "Hell"})
        );
        assert!(chunks.iter().all(|c| c.get("usage").is_some()));
    }
}
