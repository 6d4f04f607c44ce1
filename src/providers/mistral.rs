//! Mistral (api.mistral.ai): the Chat Completions wire as a [`Dialect`].
//!
//! Every quirk below is a field of [`MISTRAL`]; the shared [`OpenAi`] implementation reads them.
#![doc = include_str!("../../providers/mistral.md")]

use super::openai::{
    CallIds, Dialect, FilePart, InlineImage, MediaSupport, OpenAi, ParallelCalls, StructuredOutput,
    ThinkingSwitch, ToolChoiceSupport, openai_name,
};
#[cfg(feature = "respond")]
use super::openai::{
    DeltaRole, ErrorFields, IdleContent, OpenAiResponder, ResponseShape, RunningFinish,
    StreamUsage, StreamedCalls,
};
use crate::provider::{Auth, ProviderInfo, ProviderKind};
use crate::providers::settings::{ReasoningForm, ReasoningRule, SamplingNames};
use crate::types::FinishReason;

/// Mistral's dialect of the Chat Completions wire
/// (<https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post>).
pub const MISTRAL: Dialect = Dialect {
    info: ProviderInfo {
        kind: ProviderKind::Mistral,
        base_url: "https://api.mistral.ai/v1",
        key_vars: &["MISTRAL_API_KEY"],
        auth: Auth::Bearer,
        capabilities: "tools (auto, none, any, named), parallel calls, calls whole per chunk, \
                       9-character call ids, Magistral thinking chunks, json_schema answers",
    },
    path: "/chat/completions",
    max_tokens_field: "max_tokens",
    // Usage rides on the chunk with the finish_reason; `stream_options` is not in the reference.
    stream_usage: false,
    // Reasoning comes as `thinking` chunks in `content` (below), not in a field of its own.
    reasoning_fields: &[],
    echo_reasoning: None,
    reasoning_placeholder: None,
    reasoning_details: None,
    request_flags: &[],
    unfinished: &[""],
    // `model_length`: the model's context length was reached (the reference's finish_reason
    // enum: stop, length, model_length, error, tool_calls).
    finish_reasons: &[
        ("model_length", FinishReason::Length),
        ("error", FinishReason::Error),
    ],
    valid_name: openai_name,
    tool_choice: ToolChoiceSupport::All,
    thinking_tool_choice: ToolChoiceSupport::All,
    parallel_tool_calls: ParallelCalls::AsAsked,
    thinking: ThinkingSwitch::NotSent,
    thinking_models: &[],
    tool_stream_models: &[],
    empty_content_as_string: false,
    exclusive_with_tools: &[],
    check_property_keys: false,
    calls_end_at_next_index: false,
    // Images as `image_url` (a URL or a data URL); documents go as `document_url`, which is not
    // modelled yet, and audio as a bare base64 `input_audio` string, also not modelled: both
    // are refused rather than sent in a shape the server would reject.
    media: MediaSupport {
        image: Some(InlineImage::DataUrl),
        file: FilePart::None,
        audio: &[],
    },
    // https://docs.mistral.ai/capabilities/structured-output/custom_structured_output/
    structured_output: StructuredOutput::JsonSchema,
    // "Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9."
    // (karthink/gptel#1203, anomalyco/opencode#1680, nearai/ironclaw#1241).
    call_ids: CallIds::Alphanumeric(9),
    // https://docs.mistral.ai/capabilities/function_calling/ ("any": the model must call a tool).
    required_tool_choice: "any",
    allowed_tools_choice: false,
    // Magistral: `content` as `[{"type": "thinking", "thinking": [...]}, {"type": "text", ...}]`
    // (spring-projects/spring-ai#5019, https://docs.mistral.ai/capabilities/reasoning/).
    thinking_chunks: true,
    // The reference's request fields: `top_p`, `stop`, `random_seed`, `presence_penalty`,
    // `frequency_penalty`; no `top_k`.
    sampling: SamplingNames::OPENAI
        .with_stop(Some("stop"), None)
        .with_seed(Some("random_seed")),
    reasoning: MISTRAL_REASONING,
    reasoning_default: ReasoningForm::None,
};

/// Mistral's reasoning table: Magistral models always reason (thinking chunks), with no
/// setting for it.
pub const MISTRAL_REASONING: &[ReasoningRule] = &[ReasoningRule::new(
    &["magistral"],
    ReasoningForm::Always,
    "https://docs.mistral.ai/capabilities/reasoning/",
)];

/// How Mistral's server writes its answers, for the mock provider: a role-only opening chunk,
/// text fragments with `finish_reason: null` and `logprobs: null`, every call whole in one
/// chunk (`content: null` beside them) that carries the `finish_reason` and the usage and ends
/// the stream, a text turn ending on `{"content": ""}` with the finish and the usage (fixtures
/// `mistral/stream_single_call`, `mistral/stream_text_then_call`); errors as a top-level
/// `{"object": "error", ...}` body (fixture `mistral/error_body`).
#[cfg(feature = "respond")]
pub const MISTRAL_RESPONSE: ResponseShape = ResponseShape {
    role: DeltaRole::OpeningChunkEmptyFinish,
    idle_content: IdleContent::Null,
    running_finish: RunningFinish::Null,
    calls: StreamedCalls::WholeWithFinish,
    usage: StreamUsage::FinishChunk,
    null_fields: &[],
    null_choice_fields: &["logprobs"],
    body_call_index: false,
    finish_reasons: &[(FinishReason::Error, "error")],
    error_fields: ErrorFields::TopLevel,
    sse_errors: false,
};

/// The Mistral provider.
pub fn provider() -> OpenAi {
    OpenAi::with_dialect(&MISTRAL)
}

/// The Mistral writer for the mock provider: [`MISTRAL`] answering in [`MISTRAL_RESPONSE`].
#[cfg(feature = "respond")]
pub fn responder() -> OpenAiResponder {
    OpenAiResponder::new(&MISTRAL, &MISTRAL_RESPONSE)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::Provider;
    use crate::types::{
        AssistantMessage, ChatRequest, Message, ToolCall, ToolChoice, ToolDefinition, ToolResult,
    };

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "get_weather", r#"{"city":"Paris"}"#)
    }

    fn history(ids: &[&str]) -> ChatRequest {
        let mut messages = vec![
            Message::user("weather?"),
            Message::Assistant(
                AssistantMessage::default().with_tool_calls(ids.iter().map(|id| call(id))),
            ),
        ];
        for id in ids {
            messages.push(Message::Tool(ToolResult::new(
                *id,
                "get_weather",
                json!({"t": 1}),
            )));
        }
        ChatRequest::new("mistral-small-latest", messages).with_tools([ToolDefinition::new(
            "get_weather",
            "",
        )
        .unwrap()])
    }

    fn sent_ids(body: &serde_json::Value) -> (Vec<String>, Vec<String>) {
        let messages = body["messages"].as_array().unwrap();
        let calls = messages[1]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        let results = messages[2..]
            .iter()
            .map(|m| m["tool_call_id"].as_str().unwrap().to_owned())
            .collect();
        (calls, results)
    }

    #[test]
    fn foreign_ids_become_nine_alphanumerics_and_results_follow() {
        let ids = [
            "call_0fypS1hVX",
            "toolu_01A09q90qw90lq917835lq9",
            "D681PevKs",
            "",
        ];
        let body = provider().encode(&history(&ids), false).unwrap().body;
        let (calls, results) = sent_ids(&body);
        assert_eq!(calls, results, "each result answers its call");
        for id in &calls {
            assert!(CallIds::Alphanumeric(9).allows(id), "{id}");
        }
        assert_eq!(calls[2], "D681PevKs", "a valid id goes as it is");
        let unique: std::collections::BTreeSet<_> = calls.iter().collect();
        assert_eq!(unique.len(), calls.len(), "{calls:?}");
        // Deterministic: the same history gives the same ids in every request.
        let again = provider().encode(&history(&ids), true).unwrap().body;
        assert_eq!(sent_ids(&again).0, calls);
    }

    #[test]
    fn a_mapped_id_never_takes_a_valid_id_of_the_request() {
        // Find what a foreign id maps to alone, then put that very id in the history beside it.
        let alone = provider()
            .encode(&history(&["call_x"]), false)
            .unwrap()
            .body;
        let taken = sent_ids(&alone).0[0].clone();
        let body = provider()
            .encode(&history(&["call_x", &taken]), false)
            .unwrap()
            .body;
        let (calls, results) = sent_ids(&body);
        assert_eq!(calls[1], taken, "the valid id is kept");
        assert_ne!(calls[0], taken, "the foreign id moves aside");
        assert!(CallIds::Alphanumeric(9).allows(&calls[0]));
        assert_eq!(calls, results);
    }

    #[test]
    fn required_is_any_and_the_rest_as_openai() {
        let p = provider();
        let body = |choice| {
            p.encode(&history(&["D681PevKs"]).with_tool_choice(choice), false)
                .unwrap()
                .body["tool_choice"]
                .clone()
        };
        assert_eq!(body(ToolChoice::Required), json!("any"));
        assert_eq!(body(ToolChoice::Auto), json!("auto"));
        assert_eq!(body(ToolChoice::None), json!("none"));
        assert_eq!(
            body(ToolChoice::Tool("get_weather".into())),
            json!({"type": "function", "function": {"name": "get_weather"}})
        );
    }

    #[test]
    fn thinking_chunks_are_reasoning_in_bodies_and_streams() {
        let p = provider();
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Think "}, {"type": "text", "text": "twice."}]},
            {"type": "text", "text": "Paris."}
        ]}}]});
        let r = p.decode(body.to_string().as_bytes()).unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("Think twice."));
        assert_eq!(r.text.as_deref(), Some("Paris."));
        // A plain string is still text; a list without thinking is its texts.
        let plain = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        let r = p.decode(plain.to_string().as_bytes()).unwrap();
        assert_eq!(r.text.as_deref(), Some("ab"));
        assert!(r.reasoning.is_none());
    }

    #[test]
    fn images_go_documents_and_audio_are_refused() {
        use crate::types::Part;
        let p = provider();
        let image = Part::image("image/png", "iVBORw0KGgo=");
        let req = ChatRequest::new("m", vec![Message::user(vec![image])]);
        let body = p.encode(&req, false).unwrap().body;
        assert_eq!(
            body["messages"][0]["content"][0]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
        for part in [
            Part::file("application/pdf", "JVBERi0=", "a.pdf"),
            Part::audio("audio/wav", "UklGRg=="),
        ] {
            let req = ChatRequest::new("m", vec![Message::user(vec![part])]);
            let err = p.encode(&req, false).unwrap_err();
            assert!(
                matches!(
                    err,
                    crate::Error::Unsupported {
                        provider: ProviderKind::Mistral,
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn finish_reasons_map_and_unknown_stays_verbatim() {
        let p = provider();
        for (wire, canonical) in [
            ("model_length", "length"),
            ("error", "error"),
            ("length", "length"),
            ("brand_new_reason", "brand_new_reason"),
        ] {
            let body = json!({"choices": [{"index": 0, "finish_reason": wire,
                "message": {"role": "assistant", "content": "x"}}]});
            let r = p.decode(body.to_string().as_bytes()).unwrap();
            assert_eq!(r.finish_reason.as_str(), canonical);
            assert_eq!(r.raw_finish_reason.as_deref(), Some(wire));
        }
    }

    #[cfg(feature = "respond")]
    #[test]
    fn mock_answers_decode_back() {
        crate::test_support::assert_round_trips(&responder());
    }

    #[cfg(feature = "respond")]
    #[test]
    fn mock_streams_have_the_fixtures_fields() {
        crate::test_support::assert_streams_match_fixtures(&responder(), "mistral");
    }

    #[cfg(feature = "respond")]
    #[test]
    fn errors_are_top_level_objects() {
        use crate::error::ApiError;
        use crate::provider::Respond;
        let p = responder();
        let mut e = ApiError::new(ProviderKind::Mistral, Some(400), "Tool call id was x");
        e.code = Some("3280".into());
        let (status, body) = p.encode_error(&e, false);
        assert_eq!(status, 400);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["object"], "error");
        assert_eq!(v["code"], "3280");
        let back = p.decode_error(Some(status), &body);
        assert_eq!(back.code.as_deref(), Some("3280"));
        assert_eq!(back.message, "Tool call id was x");
    }
}
