//! The gateway (`/v1/chat/completions`, `/v1/messages`, `/v1/models`, `/metrics`) in front of
//! a mock upstream of every built-in wire: the calls a client reads (decoded by our own client
//! wire decoders) are the calls the upstream sent, streamed and not, parallel calls apart; the
//! second turn reaches the upstream with the provider state intact, also through a second
//! gateway process; an upstream 429 keeps its status and retry-after.

#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::replay::replay;
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ApiError, ChatResponse, FinishReason, Provider, ProviderKind, ToolCall};

/// The variable the upstream key is read from, in the server's environment (never from the
/// client): one cargo sets for every test process, standing in for a key the mock ignores.
const KEY_VAR: &str = "CARGO_PKG_NAME";

fn http() -> reqwest::Client {
    crate::support::http(Duration::from_secs(60))
}

/// Two parallel calls; the Gemini one carries a thought signature the next turn must return.
fn answer() -> ChatResponse {
    let mut a = ToolCall::new("call_tw_1", "get_weather", r#"{"city":"Paris"}"#);
    a.extra
        .insert("thought_signature".into(), json!("c2lnLXBhcmlz"));
    let b = ToolCall::new("call_tw_2", "get_weather", r#"{"city":"Tokyo","unit":"c"}"#);
    ChatResponse::default()
        .with_tool_calls([a, b])
        .with_finish_reason(FinishReason::ToolCalls)
}

/// The key sealing call state, shared by the gateway processes of one test.
const STATE_KEY: &str = "a-state-key-shared-by-instances";

async fn gateway(kind: ProviderKind, upstream: &MockServer) -> ServerHandle {
    gateway_keyed(kind, upstream, STATE_KEY).await
}

async fn gateway_keyed(kind: ProviderKind, upstream: &MockServer, key: &str) -> ServerHandle {
    let role = RoleConfig::live("up", kind, "model-x")
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR);
    let config = ServerConfig::new()
        .with_port(0)
        .with_roles([role])
        .with_state_key(key);
    toolwire::server::start(config).await.unwrap()
}

/// The first sealed state in `body` (a call id `<id>_tw2_<hex>`, else a reasoning item's
/// `toolwire.state.2.<hex>`), and `body` with it altered by one hex digit, everywhere it
/// appears.
fn altered(body: &Value) -> (String, Value) {
    let text = body.to_string();
    let (start, mark) = match text.find("_tw2_") {
        Some(start) => (start, "_tw2_".len()),
        None => (
            text.find("toolwire.state.2.")
                .unwrap_or_else(|| panic!("no sealed state in {text}")),
            "toolwire.state.2.".len(),
        ),
    };
    let head = text[..start].rfind('"').unwrap() + 1;
    let end = start + text[start..].find('"').unwrap();
    let id = text[head..end].to_owned();
    let mut bytes = id.clone().into_bytes();
    let at = start - head + mark + 3;
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    let changed = String::from_utf8(bytes).unwrap();
    (
        id.clone(),
        serde_json::from_str(&text.replace(&id, &changed)).unwrap(),
    )
}

async fn post(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let r = http().post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.bytes().await.unwrap().to_vec())
}

fn chat_body(stream: bool) -> Value {
    json!({
        "model": "up",
        "stream": stream,
        "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null },
        "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}]
    })
}

fn messages_body(stream: bool) -> Value {
    json!({
        "model": "up",
        "max_tokens": 256,
        "stream": stream,
        "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        "tools": [{"name": "get_weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}]
    })
}

fn same_calls(kind: ProviderKind, got: &ChatResponse, want: &ChatResponse) {
    assert_eq!(
        got.tool_calls.len(),
        want.tool_calls.len(),
        "{kind}: {got:?}"
    );
    for (g, w) in got.tool_calls.iter().zip(&want.tool_calls) {
        assert_eq!(g.name, w.name, "{kind}");
        assert_eq!(g.raw_arguments, w.raw_arguments, "{kind}");
        let upstream_id = g.id.split("_tw2_").next().unwrap();
        if !w.has_synthetic_id() {
            // Wires that send ids pass them through.
            assert!(
                upstream_id == w.id
                    || kind == ProviderKind::Gemini
                    || upstream_id.starts_with("call_"),
                "{kind}: {} vs {}",
                g.id,
                w.id
            );
        }
    }
    assert_eq!(got.finish_reason, FinishReason::ToolCalls, "{kind}");
}

/// Every client wire × every built-in upstream wire, streamed and not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_wire_reads_the_upstream_calls() {
    for kind in ProviderKind::ALL.iter().copied() {
        let script = Script::new().then(answer()).repeat_last();
        let upstream = MockServer::start(kind, script).await.unwrap();
        let server = gateway(kind, &upstream).await;
        for stream in [false, true] {
            let url = format!("{}/v1/chat/completions", server.url());
            let (status, _, bytes) = post(&url, &chat_body(stream)).await;
            assert_eq!(
                status,
                200,
                "{kind} stream {stream}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let openai = toolwire::providers::openai::OpenAi::new();
            let got = if stream {
                replay(&openai, &bytes).unwrap().response
            } else {
                openai.decode(&bytes).unwrap()
            };
            same_calls(kind, &got, &upstream_answer(kind));

            let url = format!("{}/v1/messages", server.url());
            let (status, _, bytes) = post(&url, &messages_body(stream)).await;
            assert_eq!(
                status,
                200,
                "{kind} stream {stream}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let anthropic = toolwire::providers::anthropic::Anthropic::new();
            let got = if stream {
                replay(&anthropic, &bytes).unwrap().response
            } else {
                anthropic.decode(&bytes).unwrap()
            };
            same_calls(kind, &got, &upstream_answer(kind));

            let url = format!("{}/v1/responses", server.url());
            let (status, _, bytes) = post(&url, &responses_body(stream)).await;
            assert_eq!(
                status,
                200,
                "{kind} stream {stream}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let native = toolwire::providers::openai_responses::OpenAiResponses::new();
            let got = if stream {
                replay(&native, &bytes).unwrap().response
            } else {
                native.decode(&bytes).unwrap()
            };
            same_calls(kind, &got, &upstream_answer(kind));
        }
    }
}

fn responses_body(stream: bool) -> Value {
    json!({
        "model": "up",
        "stream": stream,
        "input": "Weather in Paris and Tokyo?",
        "tools": [{"type": "function", "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}]
    })
}

/// What the upstream's own wire gives back for [`answer`] (ids some wires do not carry are
/// minted on decoding).
fn upstream_answer(_kind: ProviderKind) -> ChatResponse {
    answer()
}

/// Turn two comes back through a *different* gateway process, with the ids turn one gave the
/// client: the upstream sees its own ids and the Gemini thought signature.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_turn_through_another_gateway_keeps_provider_state() {
    for kind in [
        ProviderKind::Gemini,
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
    ] {
        let script = Script::new()
            .then(answer())
            .then(MockReply::text("Paris is sunny, Tokyo is rainy."));
        let upstream = MockServer::start(kind, script).await.unwrap();
        let first = gateway(kind, &upstream).await;
        let second = gateway(kind, &upstream).await;
        let url = format!("{}/v1/chat/completions", first.url());
        let (status, _, bytes) = post(&url, &chat_body(true)).await;
        assert_eq!(status, 200);
        let turn = replay(&toolwire::providers::openai::OpenAi::new(), &bytes)
            .unwrap()
            .response;
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.raw_arguments}})
            })
            .collect();
        let mut body = chat_body(false);
        let messages = body["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
        for c in &turn.tool_calls {
            messages.push(json!({"role": "tool", "tool_call_id": c.id, "content": "sunny"}));
        }
        drop(first);
        let url = format!("{}/v1/chat/completions", second.url());
        let (status, _, bytes) = post(&url, &body).await;
        assert_eq!(status, 200, "{kind}: {}", String::from_utf8_lossy(&bytes));
        let requests = upstream.requests();
        assert_eq!(requests.len(), 2);
        let sent = requests[1].body.to_string();
        assert!(
            !sent.contains(".tw1."),
            "{kind}: the gateway's packing reached the upstream: {sent}"
        );
        if kind == ProviderKind::Gemini {
            assert!(
                sent.contains("c2lnLXBhcmlz"),
                "{kind}: the thought signature was lost: {sent}"
            );
        } else {
            assert!(
                sent.contains("call_tw_1") && sent.contains("call_tw_2"),
                "{kind}: {sent}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_answer_in_the_client_wire() {
    let mut limited = ApiError::new(ProviderKind::OpenAi, Some(429), "Rate limit reached");
    limited.code = Some("rate_limit_exceeded".into());
    limited.retry_after = Some(Duration::from_secs(7));
    let script = Script::new().then(MockReply::Error(limited)).repeat_last();
    let upstream = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let server = gateway(ProviderKind::OpenAi, &upstream).await;
    for stream in [false, true] {
        let (status, headers, bytes) = post(
            &format!("{}/v1/chat/completions", server.url()),
            &chat_body(stream),
        )
        .await;
        assert_eq!(status, 429);
        assert_eq!(headers["retry-after"], "7");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        // OpenAI's class of a rate limit (its "Rate limit reached for requests"); the reason is
        // the code.
        assert_eq!(body["error"]["type"], "requests");
        let (status, headers, bytes) = post(
            &format!("{}/v1/messages", server.url()),
            &messages_body(stream),
        )
        .await;
        assert_eq!(status, 429);
        assert_eq!(headers["retry-after"], "7");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "rate_limit_error");
    }
    // On the same wire (Chat to an OpenAI upstream) a field the gateway does not model goes
    // through as sent, and the upstream's answer (here its 429) comes back.
    let mut bias = chat_body(false);
    bias["logit_bias"] = json!({"50256": -100});
    let (status, _, _) = post(&format!("{}/v1/chat/completions", server.url()), &bias).await;
    assert_eq!(status, 429);
    let sent = upstream.requests().last().unwrap().body.clone();
    assert_eq!(sent["logit_bias"], json!({"50256": -100}));
    assert_eq!(sent["model"], "model-x");
    // Across wires, a field the gateway does not translate: 400 naming it, in the wire's shape.
    let mut bad = messages_body(false);
    bad["container"] = json!("c");
    let (status, _, bytes) = post(&format!("{}/v1/messages", server.url()), &bad).await;
    assert_eq!(status, 400);
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("container"),
        "{body}"
    );
    // An unknown model: 404.
    let mut unknown = chat_body(false);
    unknown["model"] = json!("nope");
    let (status, _, _) = post(&format!("{}/v1/chat/completions", server.url()), &unknown).await;
    assert_eq!(status, 404);

    let models: Value = http()
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "up");
    let metrics = http()
        .get(format!("{}/metrics", server.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("toolwire_gateway_requests_total{route=\"/v1/chat/completions\"} 4"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolwire_gateway_upstream_errors_total{route=\"/v1/messages\"} 2"),
        "{metrics}"
    );
}

/// A role with `provider = "mock"` answers offline, streamed through the Messages wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_role_answers_without_an_upstream() {
    let server = toolwire::server::start(ServerConfig::new().with_port(0))
        .await
        .unwrap();
    let mut body = messages_body(true);
    body["model"] = json!("default");
    let (status, _, bytes) = post(&format!("{}/v1/messages", server.url()), &body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let got = replay(&toolwire::providers::anthropic::Anthropic::new(), &bytes)
        .unwrap()
        .response;
    assert!(got.text.is_some() || !got.tool_calls.is_empty(), "{got:?}");
}

/// An upstream turn whose calls carry the state the next turn must return: a Gemini thought
/// signature, an Anthropic signed thinking block, Responses reasoning items with encrypted
/// content. The marker is the state's text, looked for in the upstream's second request.
fn stateful(kind: ProviderKind) -> (ChatResponse, &'static str) {
    let mut a = ToolCall::new("call_tw_1", "get_weather", r#"{"city":"Paris"}"#);
    let b = ToolCall::new("call_tw_2", "get_weather", r#"{"city":"Tokyo"}"#);
    let mut response = ChatResponse::default().with_finish_reason(FinishReason::ToolCalls);
    let marker = match kind {
        ProviderKind::GeminiInteractions => {
            // The thought step before the calls, signed, and the first call's own signature.
            response.extra.insert(
                "steps".into(),
                json!([{"type": "thought", "signature": "R0lOVC10aG91Z2h0"},
                       {"type": "function_call", "id": "call_tw_1"},
                       {"type": "function_call", "id": "call_tw_2"}]),
            );
            a.extra.insert("signature".into(), json!("R0lOVC1jYWxs"));
            "R0lOVC10aG91Z2h0"
        }
        ProviderKind::Gemini => {
            a.extra
                .insert("thought_signature".into(), json!("R0VNLXNpZw"));
            "R0VNLXNpZw"
        }
        ProviderKind::Anthropic => {
            a.extra.insert(
                "thinking_blocks".into(),
                json!([{"type": "thinking", "thinking": "Two cities.", "signature": "QU5ULXNpZw"}]),
            );
            "QU5ULXNpZw"
        }
        _ => {
            a.extra.insert(
                "reasoning_items".into(),
                json!([{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "UkVTUC1lbmM"}]),
            );
            a.extra.insert("item_id".into(), json!("fc_up_1"));
            "UkVTUC1lbmM"
        }
    };
    (response.with_tool_calls([a, b]), marker)
}

/// Turn one through one gateway process, turn two (as each client wire echoes it) through
/// another: the upstream gets its own state back, for every client wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_state_survives_every_client_wire_and_a_second_process() {
    for kind in [
        ProviderKind::Gemini,
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
        ProviderKind::GeminiInteractions,
    ] {
        for client in ["chat", "messages", "responses"] {
            // A streamed Interactions call opens before its state is known (its signature and
            // the signed thought steps come apart from the call's start, and no reasoning text
            // tells the gateway to hold it): only whole answers carry that state so far.
            if kind == ProviderKind::GeminiInteractions && client != "responses" {
                continue;
            }
            // On a same-wire route the client's own echo carries the state (the upstream's
            // answer reaches it unchanged, tests/passthrough.rs); this test echoes only calls.
            if (kind, client) == (ProviderKind::Anthropic, "messages")
                || (kind, client) == (ProviderKind::OpenAiResponses, "responses")
            {
                continue;
            }
            let (answer, marker) = stateful(kind);
            let script = Script::new().then(answer).then(MockReply::text("Done."));
            let upstream = MockServer::start(kind, script).await.unwrap();
            let first = gateway(kind, &upstream).await;
            let second = gateway(kind, &upstream).await;
            // Turn one streamed for the Chat and Messages clients, whole for Responses (whose
            // clients echo `output` verbatim). A Responses upstream's encrypted-only reasoning
            // shows no text, but its reasoning item is an event: the calls after it wait for
            // their state.
            let stream = true;
            let (path, turn1, body2) = match client {
                "chat" => {
                    let (_, _, bytes) = post(
                        &format!("{}/v1/chat/completions", first.url()),
                        &chat_body(stream),
                    )
                    .await;
                    let openai = toolwire::providers::openai::OpenAi::new();
                    let r = if stream {
                        replay(&openai, &bytes).unwrap().response
                    } else {
                        openai.decode(&bytes).unwrap()
                    };
                    let calls: Vec<Value> = r
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.raw_arguments}})
                        })
                        .collect();
                    let mut body = chat_body(false);
                    let m = body["messages"].as_array_mut().unwrap();
                    m.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
                    for c in &r.tool_calls {
                        m.push(json!({"role": "tool", "tool_call_id": c.id, "content": "sunny"}));
                    }
                    ("/v1/chat/completions", r, body)
                }
                "messages" => {
                    let (_, _, bytes) = post(
                        &format!("{}/v1/messages", first.url()),
                        &messages_body(stream),
                    )
                    .await;
                    let anthropic = toolwire::providers::anthropic::Anthropic::new();
                    let r = if stream {
                        replay(&anthropic, &bytes).unwrap().response
                    } else {
                        anthropic.decode(&bytes).unwrap()
                    };
                    let uses: Vec<Value> = r
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({"type": "tool_use", "id": c.id,
                        "name": c.name, "input": c.arguments})
                        })
                        .collect();
                    let results: Vec<Value> = r
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({"type": "tool_result",
                        "tool_use_id": c.id, "content": "sunny"})
                        })
                        .collect();
                    let mut body = messages_body(false);
                    let m = body["messages"].as_array_mut().unwrap();
                    m.push(json!({"role": "assistant", "content": uses}));
                    m.push(json!({"role": "user", "content": results}));
                    ("/v1/messages", r, body)
                }
                _ => {
                    let (_, _, bytes) = post(
                        &format!("{}/v1/responses", first.url()),
                        &responses_body(false),
                    )
                    .await;
                    let whole: Value = serde_json::from_slice(&bytes).unwrap();
                    let r = toolwire::providers::openai_responses::OpenAiResponses::new()
                        .decode(&bytes)
                        .unwrap();
                    let mut input =
                        vec![json!({"role": "user", "content": "Weather in Paris and Tokyo?"})];
                    input.extend(whole["output"].as_array().unwrap().iter().cloned());
                    for c in &r.tool_calls {
                        input.push(json!({"type": "function_call_output", "call_id": c.id, "output": "sunny"}));
                    }
                    let mut body = responses_body(false);
                    body["input"] = json!(input);
                    ("/v1/responses", r, body)
                }
            };
            assert_eq!(turn1.tool_calls.len(), 2, "{kind} via {client}");
            drop(first);
            let (status, _, bytes) = post(&format!("{}{path}", second.url()), &body2).await;
            assert_eq!(
                status,
                200,
                "{kind} via {client}: {}",
                String::from_utf8_lossy(&bytes)
            );
            let sent = upstream.requests()[1].body.to_string();
            assert!(
                sent.contains(marker),
                "{kind} via {client}: state lost: {sent}"
            );
            assert!(
                !sent.contains("_tw2_") && !sent.contains("toolwire.state"),
                "{kind} via {client}: packing leaked: {sent}"
            );
            // An id altered by one digit is refused by name, and reaches no upstream.
            let (id, changed) = altered(&body2);
            assert!(
                id.starts_with("toolwire.state.")
                    || id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{kind} via {client}: {id} is outside Anthropic's id alphabet"
            );
            let (status, _, bytes) = post(&format!("{}{path}", second.url()), &changed).await;
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(status, 400, "{kind} via {client}: {text}");
            let field = match client {
                "chat" => "messages[1].tool_calls[0].id",
                "messages" => "messages[1].content[",
                _ if id.starts_with("toolwire.state.") => "].encrypted_content",
                _ => "].call_id",
            };
            assert!(
                text.contains(field) && text.contains("seal"),
                "{kind} via {client}: {text}"
            );
            // A gateway with another key refuses the genuine turn.
            let third = gateway_keyed(kind, &upstream, "another-key-of-another-gateway").await;
            let (status, _, bytes) = post(&format!("{}{path}", third.url()), &body2).await;
            assert_eq!(
                status,
                400,
                "{kind} via {client}: {}",
                String::from_utf8_lossy(&bytes)
            );
            assert_eq!(upstream.requests().len(), 2, "{kind} via {client}");
            assert!(
                sent.contains("call_tw_2") || kind == ProviderKind::Gemini,
                "{kind} via {client}: {sent}"
            );
        }
    }
}

/// `listen` on another address needs gateway keys; with keys, the gateway routes take a client
/// that sends one (either header) and refuse one that does not, in the route's error shape,
/// while `/api/*` stays loopback-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_keys_guard_the_gateway_routes() {
    let anywhere: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
    let err = toolwire::server::start(ServerConfig::new().with_listen(anywhere))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("gateway keys"), "{err}");

    let script = Script::new().then(answer()).repeat_last();
    let upstream = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let role = RoleConfig::live("up", ProviderKind::OpenAi, "model-x")
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR);
    let server = toolwire::server::start(
        ServerConfig::new()
            .with_listen(anywhere)
            .with_gateway_keys(["k-one".to_owned(), "k-two".to_owned()])
            .with_roles([role]),
    )
    .await
    .unwrap();
    let port = server.addr().port();
    // A non-loopback address of this machine, when it has one, else loopback.
    let host = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|()| s))
        .and_then(|s| s.local_addr())
        .map_or_else(|_| "127.0.0.1".to_owned(), |a| a.ip().to_string());
    let base = format!("http://{host}:{port}");
    let chat = format!("{base}/v1/chat/completions");
    let r = http()
        .post(&chat)
        .json(&chat_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");
    let r = http()
        .post(&chat)
        .bearer_auth("k-wrong")
        .json(&chat_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = http()
        .post(&chat)
        .bearer_auth("k-two")
        .json(&chat_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The scheme is case-insensitive (RFC 9110, section 11.1), the key is not.
    for (header, status) in [
        ("bearer k-two", 200),
        ("BEARER k-two", 200),
        ("Bearer K-TWO", 401),
        ("Basic k-two", 401),
        ("Bearerk-two", 401),
    ] {
        let r = http()
            .post(&chat)
            .header("authorization", header)
            .json(&chat_body(false))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{header}");
    }
    let r = http()
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "k-one")
        .json(&messages_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = http()
        .post(format!("{base}/v1/messages"))
        .json(&messages_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error", "Anthropic's error shape: {body}");
    if host != "127.0.0.1" {
        let r = http()
            .get(format!("{base}/api/tools"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403, "/api stays loopback-only");
    }
}

/// However the upstream's bytes are cut (a few bytes per write, with pauses so each piece
/// is its own read), the client reads the same calls, text and finish: the writers are
/// incremental, never relying on an event arriving whole with its neighbours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_upstream_chunking_gives_the_client_the_same_turn() {
    for kind in [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::OpenAiResponses,
    ] {
        for size in [5, 61] {
            let reply = MockReply::from(answer().with_text("Checking both."))
                .chunk_size(size)
                .delay(Duration::from_micros(200));
            let upstream = MockServer::start(kind, Script::new().then(reply).repeat_last())
                .await
                .unwrap();
            let server = gateway(kind, &upstream).await;
            let (status, _, bytes) = post(
                &format!("{}/v1/chat/completions", server.url()),
                &chat_body(true),
            )
            .await;
            assert_eq!(status, 200);
            let got = replay(&toolwire::providers::openai::OpenAi::new(), &bytes)
                .unwrap()
                .response;
            assert_eq!(got.text.as_deref(), Some("Checking both."), "{kind} {size}");
            same_calls(kind, &got, &answer());
            let (_, _, bytes) = post(
                &format!("{}/v1/messages", server.url()),
                &messages_body(true),
            )
            .await;
            let got = replay(&toolwire::providers::anthropic::Anthropic::new(), &bytes)
                .unwrap()
                .response;
            assert_eq!(got.text.as_deref(), Some("Checking both."), "{kind} {size}");
            same_calls(kind, &got, &answer());
        }
    }
}

// Thinking and reasoning state through the gateway's streams: a streamed Anthropic thinking
// block reaches a Messages client with its `signature_delta` (the signature exactly as the
// upstream sent it), a Responses upstream's reasoning item reaches a Responses client with its
// id and `encrypted_content`, and the second turn, echoed as a client echoes it, brings them
// back to the upstream exactly.

const SIGNATURE: &str = "RXFVS0NrWUlCaEFCR0FJcUFBLXNpZw==";
const ENCRYPTED: &str = "Z0FBQUFBQm9fZW5jcnlwdGVkLXN0YXRl";

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

/// A Messages client streams a thinking turn from an Anthropic upstream and from a Bedrock one
/// (Claude on Bedrock signs its reasoning too; a route across wires, so the gateway's own
/// writer): the thinking block it reads carries the upstream's signature; echoed back to
/// Anthropic, it reaches the upstream exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_thinking_block_reaches_a_messages_client_signed() {
    for (kind, model) in [
        (ProviderKind::Anthropic, "model-x"),
        (
            ProviderKind::Bedrock,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
    ] {
        let script = Script::new()
            .then(thinking_then_text(kind))
            .then(MockReply::text("Done."));
        let upstream = MockServer::start(kind, script).await.unwrap();
        let role = RoleConfig::live("up", kind, model)
            .with_base_url(upstream.url())
            .with_api_key_env(KEY_VAR);
        let server = toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
            .await
            .unwrap();
        let url = format!("{}/v1/messages", server.url());
        let turn1 = json!({"model": "up", "max_tokens": 4096, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "Weather in Paris?"}]});
        let (status, _, bytes) = post(&url, &turn1).await;
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
        let (status, _, bytes) = post(&url, &turn2).await;
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
    let server = gateway(kind, &upstream).await;
    let url = format!("{}/v1/responses", server.url());
    let tools = json!([{"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let turn1 = json!({"model": "up", "stream": true, "input": "Weather in Paris?",
        "tools": tools, "include": ["reasoning.encrypted_content"], "store": false});
    let (status, _, bytes) = post(&url, &turn1).await;
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
    let (status, _, bytes) = post(&url, &turn2).await;
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

/// A forged call id (state the gateway never sealed: the provider input a key holder would
/// inject, a Responses `input_file` and `item_reference`; or the old unsealed `.tw1.` form)
/// from each client wire toward each upstream wire of another wire is a 400 naming the call,
/// and no upstream hears of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_call_state_is_refused_from_every_client_wire_to_every_upstream() {
    let state = json!({"reasoning_items": [
        {"type": "input_file", "file_id": "file-x"},
        {"type": "item_reference", "id": "msg_x"}]});
    let hexed: String = state
        .to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let forged_ids = [
        format!("call_1_tw2_{hexed}{}", "0".repeat(32)),
        format!("call_1_tw2_{hexed}"),
        "call_1.tw1.eyJyZWFzb25pbmdfaXRlbXMiOltdfQ".to_owned(),
    ];
    for kind in [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::OpenAiResponses,
        ProviderKind::Gemini,
        ProviderKind::GeminiInteractions,
        ProviderKind::Mistral,
    ] {
        let upstream = MockServer::start(kind, Script::new()).await.unwrap();
        let server = gateway(kind, &upstream).await;
        for id in &forged_ids {
            let cases = [
                (
                    "/v1/chat/completions",
                    json!({"model": "up", "messages": [
                        {"role": "user", "content": "Weather?"},
                        {"role": "assistant", "tool_calls": [{"id": id, "type": "function",
                          "function": {"name": "get_weather", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": id, "content": "sunny"}]}),
                    "messages[1].tool_calls[0].id",
                ),
                (
                    "/v1/messages",
                    json!({"model": "up", "max_tokens": 64, "messages": [
                        {"role": "user", "content": "Weather?"},
                        {"role": "assistant", "content": [{"type": "tool_use", "id": id,
                          "name": "get_weather", "input": {}}]},
                        {"role": "user", "content": [{"type": "tool_result",
                          "tool_use_id": id, "content": "sunny"}]}]}),
                    "messages[1].content[0].id",
                ),
                (
                    "/v1/responses",
                    json!({"model": "up", "input": [
                        {"role": "user", "content": "Weather?"},
                        {"type": "function_call", "call_id": id, "name": "get_weather",
                         "arguments": "{}"},
                        {"type": "function_call_output", "call_id": id, "output": "sunny"}]}),
                    "input[1].call_id",
                ),
            ];
            for (path, body, field) in cases {
                // A same-wire route passes the client's ids through as strings and opens no
                // state: there is nothing to forge there.
                let same_wire = matches!(
                    (kind, path),
                    (ProviderKind::OpenAi, "/v1/chat/completions")
                        | (ProviderKind::Anthropic, "/v1/messages")
                        | (ProviderKind::OpenAiResponses, "/v1/responses")
                );
                if same_wire {
                    continue;
                }
                let (status, _, bytes) = post(&format!("{}{path}", server.url()), &body).await;
                let text = String::from_utf8_lossy(&bytes);
                assert_eq!(status, 400, "{kind} via {path}: {text}");
                assert!(text.contains(field), "{kind} via {path}: {text}");
            }
        }
        assert!(upstream.requests().is_empty(), "{kind}");
    }
}

/// An unreachable upstream is a 502 that does not name the upstream's address (an internal
/// one, perhaps) to the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_errors_do_not_name_the_upstream_url() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let role = RoleConfig::live("up", ProviderKind::OpenAi, "model-x")
        .with_base_url(format!("http://127.0.0.1:{port}/internal-path"))
        .with_api_key_env(KEY_VAR);
    let server = toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap();
    let (status, _, bytes) = post(
        &format!("{}/v1/chat/completions", server.url()),
        &chat_body(false),
    )
    .await;
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(status, 502, "{text}");
    assert!(
        !text.contains(&port.to_string()) && !text.contains("internal-path"),
        "{text}"
    );
    assert!(text.contains("upstream"), "{text}");
}

/// A top-level key given twice and a body past its bounds are refused by name, in the wire's
/// error shape, before any upstream is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_their_bounds_are_refused_by_name() {
    let upstream = MockServer::start(ProviderKind::OpenAi, Script::new())
        .await
        .unwrap();
    let server = gateway(ProviderKind::OpenAi, &upstream).await;
    let url = format!("{}/v1/chat/completions", server.url());
    let send = |body: String| {
        let url = url.clone();
        async move {
            let r = http()
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, text) = send(
        r#"{"model":"up","messages":[{"role":"user","content":"Hi"}],"model":"openai/x"}"#.into(),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("model: given twice"), "{text}");
    let many = vec![r#"{"role":"user","content":"x"}"#; 20_001].join(",");
    let (status, text) = send(format!(r#"{{"model":"up","messages":[{many}]}}"#)).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("messages: more than 20000"), "{text}");
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let (status, text) = send(format!(r#"{{"model":"up","messages":{deep}}}"#)).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("nests deeper"), "{text}");
    assert!(upstream.requests().is_empty());
}
