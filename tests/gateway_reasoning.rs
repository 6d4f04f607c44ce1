//! Thinking and reasoning state through the gateway's streams: a streamed Anthropic thinking
//! block reaches a Messages client with its `signature_delta` (the signature exactly as the
//! upstream sent it), a Responses upstream's reasoning item reaches a Responses client with its
//! id and `encrypted_content`, and the second turn, echoed as a client echoes it, brings them
//! back to the upstream exactly.

#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ChatResponse, FinishReason, ProviderKind, ToolCall};

/// The variable the upstream key is read from (one cargo sets for every test process).
const KEY_VAR: &str = "CARGO_PKG_NAME";

const SIGNATURE: &str = "RXFVS0NrWUlCaEFCR0FJcUFBLXNpZw==";
const ENCRYPTED: &str = "Z0FBQUFBQm9fZW5jcnlwdGVkLXN0YXRl";

fn http() -> reqwest::Client {
    toolwire::client::http_client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

async fn gateway(kind: ProviderKind, model: &str, upstream: &MockServer) -> ServerHandle {
    let role = RoleConfig::live("up", kind, model)
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

async fn post(url: &str, body: &Value) -> (u16, Vec<u8>) {
    let r = http().post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

/// The `data:` objects of an SSE stream, in order.
fn events(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// An Anthropic turn that thinks (signed), then answers in text: the thinking block has no
/// call to ride on, so only the stream's `signature_delta` can give it to the client.
fn thinking_then_text(kind: ProviderKind) -> ChatResponse {
    let mut r = ChatResponse::default()
        .with_text("Sunny in Paris.")
        .with_finish_reason(FinishReason::Stop);
    r.reasoning = Some("Paris first.".into());
    let (key, blocks) = if kind == ProviderKind::Bedrock {
        (
            "reasoning_blocks",
            json!([{"reasoningText": {"text": "Paris first.", "signature": SIGNATURE}}]),
        )
    } else {
        (
            "thinking_blocks",
            json!([{"type": "thinking", "thinking": "Paris first.", "signature": SIGNATURE}]),
        )
    };
    r.extra.insert(key.into(), blocks);
    r
}

/// A Messages client streams a thinking turn from an Anthropic upstream: the thinking block it
/// reads carries the upstream's signature; echoed back, it reaches the upstream exactly. (A
/// Bedrock upstream goes through the same writer; the mock answers Bedrock's
/// `converse-stream` with a whole body, whose events carry no signature yet.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_thinking_block_reaches_a_messages_client_signed() {
    for (kind, model) in [(ProviderKind::Anthropic, "model-x")] {
        let script = Script::new()
            .then(thinking_then_text(kind))
            .then(MockReply::text("Done."));
        let upstream = MockServer::start(kind, script).await.unwrap();
        let server = gateway(kind, model, &upstream).await;
        let url = format!("{}/v1/messages", server.url());
        let turn1 = json!({"model": "up", "max_tokens": 4096, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "Weather in Paris?"}]});
        let (status, bytes) = post(&url, &turn1).await;
        assert_eq!(status, 200, "{kind}: {}", String::from_utf8_lossy(&bytes));
        let events = events(&bytes);
        let signatures: Vec<&str> = events
            .iter()
            .filter(|e| e["delta"]["type"] == "signature_delta")
            .filter_map(|e| e["delta"]["signature"].as_str())
            .collect();
        assert_eq!(signatures, [SIGNATURE], "{kind}: {events:?}");
        // The signature closes the thinking block, before the text block opens.
        let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
        let signed = at(&|e| e["delta"]["type"] == "signature_delta");
        let text = at(&|e| e["content_block"]["type"] == "text");
        assert!(signed < text, "{kind}: {events:?}");

        // Claude Code's second turn: the block as it read it, then the tool-free next question.
        let got =
            toolwire::replay::replay(&toolwire::providers::anthropic::Anthropic::new(), &bytes)
                .unwrap()
                .response;
        assert_eq!(got.text.as_deref(), Some("Sunny in Paris."));
        let block = &got.extra["thinking_blocks"][0];
        assert_eq!(block["signature"], SIGNATURE, "{kind}: {block}");
        if kind != ProviderKind::Anthropic {
            continue;
        }
        let mut turn2 = turn1.clone();
        turn2["messages"] = json!([
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [block, {"type": "text", "text": "Sunny in Paris."}]},
            {"role": "user", "content": "And tomorrow?"}
        ]);
        let (status, bytes) = post(&url, &turn2).await;
        assert_eq!(status, 200, "{kind}: {}", String::from_utf8_lossy(&bytes));
        let sent = upstream.requests()[1].body.to_string();
        assert!(sent.contains(SIGNATURE), "{kind}: signature lost: {sent}");
        assert!(
            sent.contains("Paris first."),
            "{kind}: thinking lost: {sent}"
        );
    }
}

/// A Responses upstream's reasoning (encrypted, with a summary) before a call: a Responses
/// client's stream shows the item with the upstream's id and `encrypted_content`; echoed
/// back (as Codex does, `output` items in `input`), the upstream gets it exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_client_streams_the_reasoning_item_with_its_encrypted_content() {
    let item = json!({"type": "reasoning", "id": "rs_up_7", "encrypted_content": ENCRYPTED,
        "summary": [{"type": "summary_text", "text": "Look it up."}]});
    let mut call = ToolCall::new("call_w1", "get_weather", r#"{"city":"Paris"}"#);
    call.extra.insert("reasoning_items".into(), json!([item]));
    call.extra.insert("item_id".into(), json!("fc_up_1"));
    let mut answer = ChatResponse::default()
        .with_tool_calls([call])
        .with_finish_reason(FinishReason::ToolCalls);
    answer.reasoning = Some("Look it up.".into());
    let script = Script::new().then(answer).then(MockReply::text("Sunny."));
    let kind = ProviderKind::OpenAiResponses;
    let upstream = MockServer::start(kind, script).await.unwrap();
    let server = gateway(kind, "model-x", &upstream).await;
    let url = format!("{}/v1/responses", server.url());
    let tools = json!([{"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let turn1 = json!({"model": "up", "stream": true, "input": "Weather in Paris?",
        "tools": tools, "include": ["reasoning.encrypted_content"], "store": false});
    let (status, bytes) = post(&url, &turn1).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let events = events(&bytes);
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .map(|e| &e["item"])
        .collect();
    let upstream_item = done
        .iter()
        .find(|i| i["id"] == "rs_up_7")
        .unwrap_or_else(|| panic!("no reasoning item rs_up_7: {events:?}"));
    assert_eq!(upstream_item["encrypted_content"], ENCRYPTED);
    assert_eq!(upstream_item["summary"][0]["text"], "Look it up.");
    let added = events
        .iter()
        .find(|e| e["type"] == "response.output_item.added" && e["item"]["type"] == "reasoning")
        .unwrap();
    assert_eq!(
        added["item"]["id"], "rs_up_7",
        "announced with the id it ends with"
    );

    // Codex's second turn: the finished output items, then the call's output.
    let completed = events
        .iter()
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    let mut input = vec![json!({"role": "user", "content": "Weather in Paris?"})];
    let mut call_id = String::new();
    for item in completed["response"]["output"].as_array().unwrap() {
        if item["type"] == "function_call" {
            call_id = item["call_id"].as_str().unwrap().to_owned();
        }
        input.push(item.clone());
    }
    input.push(json!({"type": "function_call_output", "call_id": call_id, "output": "sunny"}));
    let mut turn2 = turn1.clone();
    turn2["input"] = json!(input);
    let (status, bytes) = post(&url, &turn2).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let sent = &upstream.requests()[1].body;
    let items: Vec<&Value> = sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .collect();
    assert_eq!(items.len(), 1, "{sent}");
    assert_eq!(items[0]["id"], "rs_up_7", "{sent}");
    assert_eq!(items[0]["encrypted_content"], ENCRYPTED, "{sent}");
}
