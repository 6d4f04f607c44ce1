//! Hosted calls across wires through the gateway: a web search the upstream ran reaches a
//! client on another wire as that wire's own hosted blocks (Anthropic `server_tool_use` and
//! `web_search_tool_result`,
//! <https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool>), whole
//! and streamed, and when the client sends them back the upstream gets its own item again
//! (Responses `web_search_call`, <https://platform.openai.com/docs/guides/tools-web-search>),
//! byte for byte.

#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script, hosted_call};
use toolwire::replay::replay;
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ChatResponse, FinishReason, Provider, ProviderKind};

/// The variable the upstream key is read from (one cargo sets; the mock ignores keys).
const KEY_VAR: &str = "CARGO_PKG_NAME";

fn http() -> reqwest::Client {
    crate::support::http(Duration::from_secs(60))
}

async fn gateway(kind: ProviderKind, upstream: &MockServer) -> ServerHandle {
    let role = RoleConfig::live("up", kind, "model-x")
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR);
    let config = ServerConfig::new()
        .with_port(0)
        .with_roles([role])
        .with_state_key("a-state-key-for-hosted-calls");
    toolwire::server::start(config).await.unwrap()
}

async fn post(url: &str, body: &Value) -> (u16, Vec<u8>) {
    let r = http().post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

/// The `web_search_call` item the Responses upstream sends (its sources included, as with
/// `include: ["web_search_call.action.sources"]`).
fn responses_item() -> Value {
    json!({"id": "ws_tw_search_1", "type": "web_search_call", "status": "completed",
           "action": {"type": "search", "query": "lyon weather",
                      "sources": [{"type": "url", "url": "https://example.org/lyon"}]}})
}

/// A Responses upstream that searched, then answered; then "Done." on the next turn.
fn searched() -> Script {
    let item = responses_item();
    let search = hosted_call(
        ProviderKind::OpenAiResponses,
        "ws_tw_search_1",
        "web_search",
        json!({"action": item["action"]}),
        Value::Null,
    )
    .unwrap();
    let answer = ChatResponse::default()
        .with_hosted_calls([search])
        .with_text("4 degrees in Lyon.")
        .with_finish_reason(FinishReason::Stop);
    Script::new()
        .then(MockReply::Response(answer))
        .then(MockReply::text("Done."))
}

/// A Messages client of a Responses upstream: turn one gives it the upstream's web search as
/// `server_tool_use` + `web_search_tool_result` (the source's url, nothing made up), whole and
/// streamed; turn two, with those blocks sent back, gives the upstream its `web_search_call`
/// item exactly as it sent it, before the text that followed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_search_reaches_a_messages_client_and_goes_back_as_the_item() {
    for stream in [false, true] {
        let upstream = MockServer::start(ProviderKind::OpenAiResponses, searched())
            .await
            .unwrap();
        let gw = gateway(ProviderKind::OpenAiResponses, &upstream).await;
        let url = format!("{}/v1/messages", gw.url());
        let question = json!({"role": "user", "content": "Weather in Lyon?"});
        let body = json!({"model": "up", "max_tokens": 256, "stream": stream,
                          "messages": [question],
                          "tools": [{"type": "web_search_20250305", "name": "web_search"}]});
        let (status, bytes) = post(&url, &body).await;
        let what = format!("stream={stream}");
        assert_eq!(status, 200, "{what}: {}", String::from_utf8_lossy(&bytes));
        let anthropic = toolwire::providers::anthropic::Anthropic::new();
        let r = if stream {
            replay(&anthropic, &bytes).unwrap().response
        } else {
            anthropic.decode(&bytes).unwrap()
        };
        assert_eq!(r.text.as_deref(), Some("4 degrees in Lyon."), "{what}");
        assert_eq!(r.hosted_calls.len(), 1, "{what}: {r:?}");
        let call = &r.hosted_calls[0];
        assert_eq!((call.name.as_str(), call.at), ("web_search", 0), "{what}");
        assert!(call.id.contains("_tw2_"), "{what}: {}", call.id);
        let [server_tool_use, result] = &call.blocks[..] else {
            panic!("{what}: {:?}", call.blocks)
        };
        assert_eq!(
            *server_tool_use,
            json!({"type": "server_tool_use", "id": call.id, "name": "web_search",
                   "input": {"query": "lyon weather"}}),
            "{what}"
        );
        assert_eq!(
            *result,
            json!({"type": "web_search_tool_result", "tool_use_id": call.id,
                   "content": [{"type": "web_search_result", "url": "https://example.org/lyon"}]}),
            "{what}"
        );
        if stream {
            // Each block went out whole, before the text.
            let text = String::from_utf8_lossy(&bytes);
            let block = text.find("\"server_tool_use\"").unwrap();
            assert!(block < text.find("text_delta").unwrap(), "{text}");
        }

        // Turn two: the client's history as Messages clients send it back.
        let mut content = call.blocks.clone();
        content.push(json!({"type": "text", "text": "4 degrees in Lyon."}));
        let body = json!({"model": "up", "max_tokens": 256, "messages": [
            question,
            {"role": "assistant", "content": content},
            {"role": "user", "content": "Thanks."}]});
        let (status, bytes) = post(&url, &body).await;
        assert_eq!(status, 200, "{what}: {}", String::from_utf8_lossy(&bytes));
        let requests = upstream.requests();
        assert_eq!(requests.len(), 2, "{what}");
        let input = requests[1].body["input"].as_array().unwrap().clone();
        let at = input
            .iter()
            .position(|i| i["type"] == "web_search_call")
            .unwrap_or_else(|| panic!("{what}: no web_search_call in {input:?}"));
        assert_eq!(input[at], responses_item(), "{what}");
        assert_eq!(input[at + 1]["role"], "assistant", "{what}: {input:?}");
        let sent = requests[1].body.to_string();
        assert!(!sent.contains("_tw2_"), "{what}: packing leaked: {sent}");

        // A block whose sealed id was altered is refused by name, and reaches no upstream.
        let mut forged = body.clone();
        let id = call.id.clone();
        let changed = format!("{}0", &id[..id.len() - 1]);
        let changed = if changed == id {
            format!("{}1", &id[..id.len() - 1])
        } else {
            changed
        };
        forged["messages"][1]["content"][0]["id"] = json!(changed);
        let (status, bytes) = post(&url, &forged).await;
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(status, 400, "{what}: {text}");
        assert!(
            text.contains("messages[1].hosted_calls[0]"),
            "{what}: {text}"
        );
        assert_eq!(upstream.requests().len(), 2, "{what}");
    }
}

/// An Anthropic upstream that searched (`server_tool_use` + `web_search_tool_result` with one
/// result), then answered; then "Done." on the next turn.
fn anthropic_searched() -> (Script, toolwire::HostedCall) {
    let search = hosted_call(
        ProviderKind::Anthropic,
        "srvtoolu_tw_search_1",
        "web_search",
        json!({"query": "lyon weather"}),
        json!([{"type": "web_search_result", "url": "https://example.org/lyon",
                "title": "Lyon weather", "encrypted_content": "ZW5jcnlwdGVk",
                "page_age": "1 day ago"}]),
    )
    .unwrap();
    let answer = ChatResponse::default()
        .with_hosted_calls([search.clone()])
        .with_text("4 degrees in Lyon.")
        .with_finish_reason(FinishReason::Stop);
    let script = Script::new()
        .then(MockReply::Response(answer))
        .then(MockReply::text("Done."));
    (script, search)
}

/// A Responses client of an Anthropic upstream: turn one gives it a `web_search_call` item
/// (the results' urls as sources), streamed with the `response.web_search_call.in_progress`,
/// `.searching` and `.completed` events the Responses streaming reference lists
/// (<https://platform.openai.com/docs/api-reference/responses-streaming>); turn two, with the
/// output sent back as input, gives Anthropic its own two blocks, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_search_reaches_a_responses_client_and_goes_back_as_the_blocks() {
    for stream in [false, true] {
        let (script, search) = anthropic_searched();
        let upstream = MockServer::start(ProviderKind::Anthropic, script)
            .await
            .unwrap();
        let gw = gateway(ProviderKind::Anthropic, &upstream).await;
        let url = format!("{}/v1/responses", gw.url());
        let question = json!({"role": "user", "content": "Weather in Lyon?"});
        let body = json!({"model": "up", "stream": stream, "input": [question],
                          "tools": [{"type": "web_search"}]});
        let (status, bytes) = post(&url, &body).await;
        let what = format!("stream={stream}");
        assert_eq!(status, 200, "{what}: {}", String::from_utf8_lossy(&bytes));
        let output: Vec<Value> = if stream {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let statuses: Vec<usize> = ["in_progress", "searching", "completed"]
                .iter()
                .map(|s| {
                    text.find(&format!("response.web_search_call.{s}"))
                        .unwrap_or_else(|| panic!("{what}: no {s} event in {text}"))
                })
                .collect();
            assert!(statuses.windows(2).all(|w| w[0] < w[1]), "{what}: {text}");
            let done = text
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .find(|e| e["type"] == "response.completed")
                .unwrap_or_else(|| panic!("{what}: {text}"));
            done["response"]["output"].as_array().unwrap().clone()
        } else {
            let whole: Value = serde_json::from_slice(&bytes).unwrap();
            whole["output"].as_array().unwrap().clone()
        };
        let item = output
            .iter()
            .find(|i| i["type"] == "web_search_call")
            .unwrap_or_else(|| panic!("{what}: no web_search_call in {output:?}"));
        assert_eq!(item["status"], "completed", "{what}");
        assert_eq!(
            item["action"],
            json!({"type": "search", "query": "lyon weather",
                   "sources": [{"type": "url", "url": "https://example.org/lyon"}]}),
            "{what}"
        );

        // Turn two: the output as input, as Responses clients with `store: false` send it.
        let mut input = vec![question.clone()];
        input.extend(output.iter().cloned());
        input.push(json!({"role": "user", "content": "Thanks."}));
        let body = json!({"model": "up", "input": input});
        let (status, bytes) = post(&url, &body).await;
        assert_eq!(status, 200, "{what}: {}", String::from_utf8_lossy(&bytes));
        let requests = upstream.requests();
        let content = requests[1].body["messages"][1]["content"].clone();
        assert_eq!(content[0], search.blocks[0], "{what}: {content}");
        assert_eq!(content[1], search.blocks[1], "{what}: {content}");
        assert!(!requests[1].body.to_string().contains("_tw2_"), "{what}");
    }
}
