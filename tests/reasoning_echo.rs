//! Compatible servers that need reasoning back: the second turn carries what each documents,
//! over loopback against a mock upstream that answers with the server's own reasoning fields.
//!
//! - DeepSeek thinking mode: `reasoning_content` on every assistant turn with tool calls
//!   (<https://api-docs.deepseek.com/guides/thinking_mode>, "Tool calls").
//! - Kimi thinking models: the same field
//!   (<https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model>).
//! - OpenRouter: `reasoning_details` kept verbatim and sent back
//!   (<https://openrouter.ai/docs/use-cases/reasoning-tokens>, "Preserving reasoning blocks").
//! - MiniMax with `reasoning_split`: the whole assistant message, `reasoning_details` included
//!   (<https://platform.minimax.io/docs/api-reference/text-openai-api>, "Important Note").

#![cfg(feature = "mock")]

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::providers::openai::OpenAi;
use toolwire::providers::{deepseek, kimi, minimax, openrouter};
use toolwire::types::Effort;
use toolwire::{AssistantMessage, ChatRequest, Client, Message, ProviderKind, ToolResult};

fn sse(chunks: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn call_chunk(extra: Value) -> Value {
    let mut delta = json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
        "id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]});
    if let (Value::Object(d), Value::Object(e)) = (&mut delta, extra) {
        d.extend(e);
    }
    json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish_chunk() -> Value {
    json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
}

/// Runs two turns against a mock that answers the first with `first` (SSE bytes): returns the
/// second request's assistant message as the upstream received it, and the first request.
async fn second_turn(provider: OpenAi, model: &str, first: Vec<u8>) -> (Value, Value) {
    let script = Script::new()
        .then(MockReply::raw_sse(first))
        .then(MockReply::text("Sunny."));
    let mock = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder_with(Box::new(provider))
        .base_url(mock.url())
        .api_key("k")
        .build()
        .unwrap();
    let mut req = ChatRequest::new(model, vec![Message::user("Weather in Paris?")]);
    let turn = client.stream(&req).await.unwrap().finish().await.unwrap();
    assert_eq!(turn.tool_calls.len(), 1);
    let call = turn.tool_calls[0].clone();
    req.messages
        .push(Message::Assistant(AssistantMessage::from(turn)));
    req.messages.push(Message::Tool(ToolResult::ok(
        &call,
        json!({"sky": "sunny"}),
    )));
    client.stream(&req).await.unwrap().finish().await.unwrap();
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    (
        requests[1].body["messages"][1].clone(),
        requests[0].body.clone(),
    )
}

#[tokio::test]
async fn deepseek_and_kimi_get_reasoning_content_back() {
    for (provider, model) in [
        (deepseek::provider(), "deepseek-v4-pro"),
        (kimi::provider(), "kimi-k2-thinking"),
    ] {
        let first = sse(&[
            json!({"id": "x", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "reasoning_content": "Check the "}}]}),
            json!({"id": "x", "model": "m", "choices": [{"index": 0,
                "delta": {"reasoning_content": "weather tool."}}]}),
            call_chunk(json!({})),
            finish_chunk(),
        ]);
        let (assistant, _) = second_turn(provider, model, first).await;
        assert_eq!(
            assistant["reasoning_content"], "Check the weather tool.",
            "{model}: {assistant}"
        );
        assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    }
}

#[tokio::test]
async fn openrouter_and_minimax_get_reasoning_details_back_verbatim() {
    let details_a = json!([{"type": "reasoning.text", "text": "Check the ", "format": "unknown",
                            "index": 0}]);
    let details_b = json!([{"type": "reasoning.encrypted", "data": "ZW5jcnlwdGVk", "id": "r1",
                            "format": "google-gemini-v1", "index": 1}]);
    for (provider, model) in [
        (openrouter::provider(), "google/gemini-3-pro-preview"),
        (minimax::provider(), "MiniMax-M2.5"),
    ] {
        let first = sse(&[
            json!({"id": "x", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "reasoning_details": details_a}}]}),
            call_chunk(json!({"reasoning_details": details_b})),
            finish_chunk(),
        ]);
        let (assistant, first_request) = second_turn(provider, model, first).await;
        let want: Vec<Value> = [&details_a, &details_b]
            .iter()
            .flat_map(|d| d.as_array().unwrap().clone())
            .collect();
        assert_eq!(
            assistant["reasoning_details"],
            Value::Array(want),
            "{model}: {assistant}"
        );
        if model.starts_with("MiniMax") {
            assert_eq!(first_request["reasoning_split"], true, "{first_request}");
        }
    }
}

#[test]
fn each_dialect_takes_reasoning_in_its_own_form() {
    use toolwire::Provider;
    let req = |model: &str, effort: Effort| {
        ChatRequest::new(model, vec![Message::user("hi")]).with_effort(effort)
    };
    let body = |p: OpenAi, r: ChatRequest| p.encode(&r, false).unwrap().body;

    let b = body(deepseek::provider(), req("deepseek-v4-pro", Effort::Medium));
    assert_eq!(b["thinking"], json!({"type": "enabled"}));
    assert_eq!(b["reasoning_effort"], "high");
    let b = body(deepseek::provider(), req("deepseek-v4-pro", Effort::None));
    assert_eq!(b["thinking"], json!({"type": "disabled"}));
    assert!(b.get("reasoning_effort").is_none());
    let err = deepseek::provider()
        .encode(&req("deepseek-reasoner", Effort::None), false)
        .unwrap_err();
    assert!(err.to_string().contains("reasoning.effort"), "{err}");

    let b = body(
        openrouter::provider(),
        req("anthropic/claude-opus-4.7", Effort::Xhigh),
    );
    assert_eq!(b["reasoning"], json!({"effort": "xhigh"}));
    let r = ChatRequest::new("m", vec![Message::user("hi")])
        .with_reasoning(toolwire::types::Reasoning::budget(2048));
    assert_eq!(
        body(openrouter::provider(), r)["reasoning"],
        json!({"max_tokens": 2048})
    );

    let b = body(kimi::provider(), req("kimi-k2.5", Effort::None));
    assert_eq!(b["thinking"], json!({"type": "disabled"}));

    // Seeds: OpenRouter carries one, DeepSeek and MiniMax refuse it by name.
    let seeded = ChatRequest::new("m", vec![Message::user("hi")]).with_seed(3);
    assert_eq!(body(openrouter::provider(), seeded.clone())["seed"], 3);
    for p in [deepseek::provider(), minimax::provider()] {
        let err = p.encode(&seeded, false).unwrap_err();
        assert!(err.to_string().contains("seed"), "{err}");
    }
}
