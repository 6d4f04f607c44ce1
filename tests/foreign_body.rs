//! A whole body of another API, decoded with the wrong provider, is `Error::Decode` naming the
//! likely cause, never an empty answer; each wire's own minimal body still decodes. Bodies are
//! read as the library reads them (the turn reader, which names the API the body looks like
//! from the shapes the built-ins declare).

use toolwire::providers::provider_for;
use toolwire::replay::replay;
use toolwire::{Error, ProviderKind};

/// One minimal body per API (the fields that make it one), with the providers that speak it.
const BODIES: &[(&str, &str, &[ProviderKind])] = &[
    (
        "bedrock-converse",
        r#"{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":1}}}]}},"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":4,"totalTokens":7}}"#,
        &[],
    ),
    (
        "chat-completions",
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
        &[
            ProviderKind::OpenAi,
            ProviderKind::Glm,
            ProviderKind::Qwen,
            ProviderKind::StepFun,
        ],
    ),
    (
        "anthropic-messages",
        r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}"#,
        &[ProviderKind::Anthropic],
    ),
    (
        "gemini",
        r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}"#,
        &[ProviderKind::Gemini],
    ),
    (
        "responses",
        r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}"#,
        &[ProviderKind::OpenAiResponses],
    ),
    (
        "ollama",
        r#"{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"stop"}"#,
        &[ProviderKind::Ollama],
    ),
    (
        "dashscope",
        r#"{"output":{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]},"usage":{"input_tokens":1,"output_tokens":1},"request_id":"r1"}"#,
        &[ProviderKind::DashScope],
    ),
    ("empty-object", r#"{}"#, &[]),
];

const PROVIDERS: [ProviderKind; 9] = [
    ProviderKind::OpenAi,
    ProviderKind::Glm,
    ProviderKind::Qwen,
    ProviderKind::StepFun,
    ProviderKind::Gemini,
    ProviderKind::DashScope,
    ProviderKind::OpenAiResponses,
    ProviderKind::Anthropic,
    ProviderKind::Ollama,
];

#[test]
fn another_apis_body_is_a_decode_error_naming_the_cause() {
    for kind in PROVIDERS {
        let provider = provider_for(kind).unwrap();
        for (api, body, speakers) in BODIES {
            let result = match replay(&*provider, body.as_bytes()) {
                // Ollama's wire is lines of JSON, which the turn reader reads as a stream
                // (ending unfinished); its whole-body decoder is the one that judges the body.
                Err(Error::Stream { .. }) => provider.decode(body.as_bytes()),
                other => other.map(|r| r.response),
            };
            if speakers.contains(&kind) {
                let response = result.unwrap_or_else(|e| panic!("{kind:?} <- {api}: {e}"));
                assert_eq!(response.text.as_deref(), Some("hi"), "{kind:?} <- {api}");
                continue;
            }
            match result {
                Err(Error::Decode { message, .. }) => assert!(
                    message.contains(&format!(
                        " {} response body: likely another API's",
                        kind.name()
                    )),
                    "{kind:?} <- {api}: {message}"
                ),
                other => panic!("{kind:?} <- {api}: {other:?}"),
            }
        }
    }
}

#[test]
fn the_converse_body_is_named() {
    let provider = provider_for(ProviderKind::Anthropic).unwrap();
    let Err(err) = replay(&*provider, BODIES[0].1.as_bytes()) else {
        panic!("accepted");
    };
    assert!(err.to_string().contains("Bedrock Converse"), "{err}");
}
