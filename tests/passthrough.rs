//! Same-wire routes (an Anthropic client to an Anthropic upstream, Responses to Responses,
//! Chat Completions to an OpenAI-compatible server): the body the upstream gets is the client's,
//! byte for byte, only `model` replaced, fields the gateway does not model included; auth is the
//! role's; the wire's client headers go through; and the bytes the upstream answers (whole,
//! streamed, or an error) are the bytes the client gets.

#![cfg(feature = "server")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use toolwire::ProviderKind;
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};

/// The variable the upstream key is read from (one cargo sets for every test process).
const KEY_VAR: &str = "CARGO_PKG_NAME";

/// What the upstream received: path, headers, body bytes.
type Seen = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

/// An upstream on loopback that keeps every request as it came and answers `status` with
/// `chunks`, each written as its own write.
async fn upstream(
    status: u16,
    content_type: &'static str,
    chunks: Vec<&'static str>,
) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let keep = Arc::clone(&seen);
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
            let keep = Arc::clone(&keep);
            let chunks = chunks.clone();
            async move {
                keep.lock()
                    .unwrap()
                    .push((uri.path().to_owned(), headers, body.to_vec()));
                let stream = futures::stream::iter(chunks).then(|c| async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Ok::<Bytes, std::io::Error>(Bytes::from_static(c.as_bytes()))
                });
                let mut r = Response::new(Body::from_stream(stream));
                *r.status_mut() = StatusCode::from_u16(status).unwrap();
                r.headers_mut()
                    .insert("content-type", content_type.parse().unwrap());
                r.headers_mut()
                    .insert("request-id", "req_upstream_1".parse().unwrap());
                r
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (url, seen)
}

use futures::StreamExt;

async fn gateway(kind: ProviderKind, base_url: &str) -> ServerHandle {
    let base = if kind == ProviderKind::Anthropic {
        base_url.to_owned()
    } else {
        format!("{base_url}/v1")
    };
    let role = RoleConfig::live("up", kind, "upstream-model-1")
        .with_base_url(base)
        .with_api_key_env(KEY_VAR);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

/// One same-wire case: the client route, the upstream provider, the client's body (with
/// fields the gateway does not model and its own spacing), the upstream's answer, whole and
/// streamed.
struct Case {
    route: &'static str,
    kind: ProviderKind,
    body: &'static str,
    whole: &'static str,
    stream: Vec<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            route: "/v1/messages",
            kind: ProviderKind::Anthropic,
            body: r#"{ "model" : "up", "max_tokens": 64, "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
  "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "omitted"},
  "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "mid-conversation"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "c2lnLTE="}, {"type": "tool_use", "id": "toolu_01A", "name": "sh", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "ok"}]}],
  "tools": [{"name": "sh", "input_schema": {"type": "object"}, "defer_loading": true, "cache_control": {"type": "ephemeral"}}], "STREAM_HERE": 1 }"#,
            whole: r#"{"id":"msg_01XYZ","type":"message","role":"assistant","model":"upstream-model-1","content":[{"type":"thinking","thinking":"hm","signature":"U0lHTkVE"},{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3,"cache_read_input_tokens":0}}"#,
            stream: vec![
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XYZ\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"upstream-model-1\",\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"U0lHTkVE\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"sh\",\"input\":{}}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
                "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            ],
        },
        Case {
            route: "/v1/responses",
            kind: ProviderKind::OpenAiResponses,
            body: r#"{"model":"up","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC"},{"type":"function_call","call_id":"call_1","name":"sh","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"ok"}],
"reasoning":{"effort":"medium","summary":"auto"},"text":{"verbosity":"low"},"client_metadata":{"x":"y"},"prompt_cache_key":"k-1","include":["reasoning.encrypted_content"],"store":false,"STREAM_HERE":1}"#,
            whole: r#"{"id":"resp_01","object":"response","status":"completed","model":"upstream-model-1","output":[{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"ENC2"},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],"usage":{"input_tokens":9,"output_tokens":3,"total_tokens":12}}"#,
            stream: vec![
                "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_01\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
                "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[]}}\n\n",
                "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"ENC2\"}}\n\n",
                "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_01\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"ENC2\"}],\"usage\":{\"input_tokens\":9,\"output_tokens\":3,\"total_tokens\":12}}}\n\n",
            ],
        },
        Case {
            route: "/v1/chat/completions",
            kind: ProviderKind::OpenAi,
            body: r#"{"messages":[{"role":"system","content":"s","cache_control":{"type":"ephemeral"}},{"role":"user","content":"hi"}],"logit_bias":{"50256":-100},"model":"up","STREAM_HERE":1}"#,
            whole: r#"{"id":"chatcmpl-up1","object":"chat.completion","created":1,"model":"upstream-model-1","choices":[{"index":0,"message":{"role":"assistant","content":"done","reasoning_content":"r"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12},"system_fingerprint":"fp_x"}"#,
            stream: vec![
                "data: {\"id\":\"chatcmpl-up1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"upstream-model-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_up_1\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"\"}}]}}]}\n\n",
                "data: {\"id\":\"chatcmpl-up1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"upstream-model-1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
                "data: {\"id\":\"chatcmpl-up1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"upstream-model-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\n",
                "data: [DONE]\n\n",
            ],
        },
    ]
}

/// The client's body for `stream`: the case's body with its marker made the `stream` field.
fn client_body(case: &Case, stream: bool) -> String {
    case.body
        .replace("\"STREAM_HERE\":1", &format!("\"stream\":{stream}"))
        .replace("\"STREAM_HERE\": 1", &format!("\"stream\": {stream}"))
}

/// What the upstream must get: the client's body, the model's value replaced, nothing else.
fn expected_upstream_body(body: &str) -> String {
    body.replacen("\"up\"", "\"upstream-model-1\"", 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_wire_routes_pass_bytes_both_ways() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    for case in cases() {
        for stream in [false, true] {
            let (content_type, chunks) = if stream {
                ("text/event-stream", case.stream.clone())
            } else {
                ("application/json", vec![case.whole])
            };
            let (url, seen) = upstream(200, content_type, chunks.clone()).await;
            let server = gateway(case.kind, &url).await;
            let body = client_body(&case, stream);
            let at = format!("{} stream {stream}", case.route);
            let r = http
                .post(format!("{}{}", server.url(), case.route))
                .header("content-type", "application/json")
                .header("authorization", "Bearer client-key")
                .header("x-api-key", "client-key")
                .header("anthropic-version", "2023-06-01")
                .header("anthropic-beta", "interleaved-thinking-2025-05-14")
                .header("anthropic-beta", "context-management-2025-06-27")
                .header("openai-beta", "responses=v1")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{at}");
            assert_eq!(r.headers()["content-type"], content_type, "{at}");
            assert_eq!(r.headers()["request-id"], "req_upstream_1", "{at}");
            let got = r.bytes().await.unwrap();
            // The bytes the upstream sent are the bytes the client got.
            assert_eq!(
                String::from_utf8_lossy(&got),
                chunks.concat(),
                "{at}: answer changed"
            );
            let seen = seen.lock().unwrap();
            let (path, headers, sent) = &seen[0];
            assert_eq!(
                String::from_utf8_lossy(sent),
                expected_upstream_body(&body),
                "{at}: body changed"
            );
            assert!(case.route.ends_with(path.as_str()), "{at}: {path}");
            // Auth is the role's key, never the client's.
            let auth: Vec<_> = ["authorization", "x-api-key"]
                .iter()
                .filter_map(|h| headers.get(*h))
                .map(|v| v.to_str().unwrap().to_owned())
                .collect();
            assert!(!auth.is_empty(), "{at}: no auth");
            assert!(
                auth.iter().all(|a| !a.contains("client-key")),
                "{at}: client key forwarded: {auth:?}"
            );
            assert!(
                auth.iter().any(|a| a.contains("toolwire")),
                "{at}: not the role's key: {auth:?}"
            );
            if case.kind == ProviderKind::Anthropic {
                assert_eq!(headers["anthropic-version"], "2023-06-01", "{at}");
                assert_eq!(
                    headers["anthropic-beta"],
                    "interleaved-thinking-2025-05-14,context-management-2025-06-27",
                    "{at}"
                );
                assert!(headers.get("openai-beta").is_none(), "{at}");
            } else {
                assert_eq!(headers["openai-beta"], "responses=v1", "{at}");
                assert!(headers.get("anthropic-beta").is_none(), "{at}");
            }
        }
    }
}

/// An upstream's error answer comes back with its status and its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_wire_errors_come_back_as_sent() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let error = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.thinking.signature: Invalid `signature` in `thinking` block"},"request_id":"req_011"}"#;
    let (url, seen) = upstream(400, "application/json", vec![error]).await;
    let server = gateway(ProviderKind::Anthropic, &url).await;
    let case = &cases()[0];
    for stream in [false, true] {
        let r = http
            .post(format!("{}/v1/messages", server.url()))
            .header("content-type", "application/json")
            .body(client_body(case, stream))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(r.bytes().await.unwrap(), error.as_bytes());
    }
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// A cross-wire route still translates: a Messages client to an OpenAI upstream sends the
/// upstream a Chat Completions body, not its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_wires_are_translated_not_passed() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let whole = cases()[2].whole;
    let (url, seen) = upstream(200, "application/json", vec![whole]).await;
    let server = gateway(ProviderKind::OpenAi, &url).await;
    let r = http
        .post(format!("{}/v1/messages", server.url()))
        .header("content-type", "application/json")
        .body(r#"{"model":"up","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["type"], "message", "{body}");
    let seen = seen.lock().unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&seen[0].2).unwrap();
    assert_eq!(sent["model"], "upstream-model-1");
    assert!(
        sent.get("max_tokens").is_none() || sent.get("messages").is_some(),
        "{sent}"
    );
    assert_eq!(seen[0].0, "/v1/chat/completions");
}

/// `POST /v1/messages/count_tokens`: an Anthropic upstream's own count (the body passed to its
/// `/v1/messages/count_tokens`); for another upstream an estimate, said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_asks_anthropic_and_estimates_elsewhere() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let body = r#"{"model":"up","messages":[{"role":"user","content":"hi"}],"system":"s"}"#;
    let (url, seen) = upstream(200, "application/json", vec![r#"{"input_tokens":17}"#]).await;
    let server = gateway(ProviderKind::Anthropic, &url).await;
    let r = http
        .post(format!("{}/v1/messages/count_tokens", server.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("toolwire-count").is_none());
    assert_eq!(r.text().await.unwrap(), r#"{"input_tokens":17}"#);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, "/v1/messages/count_tokens");
    assert_eq!(
        String::from_utf8_lossy(&seen[0].2),
        body.replace("\"up\"", "\"upstream-model-1\"")
    );

    let (url, seen) = upstream(200, "application/json", vec!["{}"]).await;
    let server = gateway(ProviderKind::OpenAi, &url).await;
    let r = http
        .post(format!("{}/v1/messages/count_tokens", server.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["toolwire-count"], "estimate");
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["toolwire_estimate"], true);
    assert_eq!(v["input_tokens"], body.len().div_ceil(4));
    assert!(
        seen.lock().unwrap().is_empty(),
        "no upstream call for an estimate"
    );
}

/// `POST /v1/messages/count_tokens` to a Gemini upstream asks Gemini's own
/// `models/{model}:countTokens` with the Messages body translated into a
/// `generateContentRequest` (model, system instruction, tools and contents), and answers its
/// `totalTokens` as `input_tokens`, not an estimate; an error answer from Gemini is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_asks_gemini_count_tokens() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let body = r#"{"model":"up","system":"be brief","messages":[{"role":"user","content":"hi there"}],
        "tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}"#;
    let (url, seen) = upstream(
        200,
        "application/json",
        vec![r#"{"totalTokens": 31, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}]}"#],
    )
    .await;
    let server = gateway(ProviderKind::Gemini, &url).await;
    let r = http
        .post(format!("{}/v1/messages/count_tokens", server.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("toolwire-count").is_none());
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v, serde_json::json!({"input_tokens": 31}));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "/v1/v1beta/models/upstream-model-1:countTokens");
    let sent: serde_json::Value = serde_json::from_slice(&seen[0].2).unwrap();
    let inner = &sent["generateContentRequest"];
    assert_eq!(inner["model"], "models/upstream-model-1");
    assert_eq!(inner["contents"][0]["parts"][0]["text"], "hi there");
    assert_eq!(inner["systemInstruction"]["parts"][0]["text"], "be brief");
    assert_eq!(
        inner["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    assert!(sent.get("contents").is_none(), "one form only: {sent}");

    // Gemini's error comes back as an error in the Messages shape, never an estimate.
    let (url, _) = upstream(
        404,
        "application/json",
        vec![r#"{"error":{"code":404,"message":"models/x is not found","status":"NOT_FOUND"}}"#],
    )
    .await;
    let server = gateway(ProviderKind::Gemini, &url).await;
    let r = http
        .post(format!("{}/v1/messages/count_tokens", server.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{v}"
    );
}

/// `GET /v1/models/{id}`; error bodies carry `param` and a request id, and no Rust Debug text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_route_and_error_shapes() {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let (url, _) = upstream(200, "application/json", vec!["{}"]).await;
    let server = gateway(ProviderKind::Gemini, &url).await;
    let one: serde_json::Value = http
        .get(format!("{}/v1/models/up", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["id"], "up");
    let r = http
        .get(format!("{}/v1/models/nope", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A Chat body with a bad part: 400, `param` names the field.
    let r = http
        .post(format!("{}/v1/chat/completions", server.url()))
        .header("content-type", "application/json")
        .body(r#"{"model":"up","messages":[{"role":"user","content":[{"text":"hi"}]}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("x-request-id").is_some());
    let e: serde_json::Value = r.json().await.unwrap();
    assert_eq!(e["error"]["param"], "messages[0].content[0].type", "{e}");
    let text = e.to_string();
    assert!(!text.contains("Some(") && !text.contains("None"), "{text}");
    // Anthropic's shape has a top-level request_id.
    let r = http
        .post(format!("{}/v1/messages", server.url()))
        .header("content-type", "application/json")
        .body(r#"{"model":"up","max_tokens":5,"messages":[{"role":"tool","content":"x"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: serde_json::Value = r.json().await.unwrap();
    assert_eq!(e["type"], "error");
    assert!(
        e["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("req_")),
        "{e}"
    );
}

/// An upstream that writes `first`, then waits for the test's release before writing `rest`.
async fn pausing_upstream(
    first: &'static str,
    rest: &'static str,
) -> (String, tokio::sync::mpsc::UnboundedSender<()>) {
    let (release, wait) = tokio::sync::mpsc::unbounded_channel::<()>();
    let wait = Arc::new(tokio::sync::Mutex::new(wait));
    let app = axum::Router::new().fallback(move || {
        let wait = Arc::clone(&wait);
        async move {
            let head = futures::stream::once(async move {
                Ok::<Bytes, std::io::Error>(Bytes::from_static(first.as_bytes()))
            });
            let tail = futures::stream::once(async move {
                wait.lock().await.recv().await;
                Ok::<Bytes, std::io::Error>(Bytes::from_static(rest.as_bytes()))
            });
            let mut r = Response::new(Body::from_stream(head.chain(tail)));
            r.headers_mut()
                .insert("content-type", "text/event-stream".parse().unwrap());
            r
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (url, release)
}

/// A call reaches the client as soon as the upstream starts it: the upstream writes the
/// call's first event and then waits until the test, having seen the call start in what the
/// client received, releases it. A gateway holding the call would never show it (the read is
/// guarded so that such a gateway fails instead of hanging). Same wire (Anthropic to
/// Anthropic) and across wires (Anthropic to a Chat client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaches_the_client_as_it_starts() {
    let first = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01P\",\"name\":\"sh\",\"input\":{}}}\n\n";
    let rest = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let cases = [
        (
            "/v1/messages",
            r#"{"model":"up","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"sh","input_schema":{"type":"object"}}]}"#,
            "toolu_01P",
        ),
        (
            "/v1/chat/completions",
            r#"{"model":"up","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"sh","parameters":{"type":"object"}}}]}"#,
            "toolu_01P",
        ),
    ];
    for (route, body, id) in cases {
        starts_while_paused(ProviderKind::Anthropic, first, rest, route, body, id).await;
    }
}

/// Sends `body` to `route` of a gateway in front of a [`pausing_upstream`] of `kind` writing
/// `first` then `rest`, and asserts that `expect` (the call's id as the client sees it, or
/// its start) reached the client while the upstream waited, then that the turn ended.
async fn starts_while_paused(
    kind: ProviderKind,
    first: &'static str,
    rest: &'static str,
    route: &str,
    body: &'static str,
    expect: &str,
) {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let (url, release) = pausing_upstream(first, rest).await;
    let server = gateway(kind, &url).await;
    let mut r = http
        .post(format!("{}{route}", server.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{route}");
    let mut seen = Vec::new();
    let started = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = r.chunk().await.unwrap() {
            seen.extend_from_slice(&chunk);
            if String::from_utf8_lossy(&seen).contains(expect) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        started,
        Ok(true),
        "{kind:?} to {route}: the call did not reach the client while the upstream paused: {}",
        String::from_utf8_lossy(&seen)
    );
    release.send(()).unwrap();
    while let Some(chunk) = r.chunk().await.unwrap() {
        seen.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(
        text.contains("message_stop")
            || text.contains("[DONE]")
            || text.contains("response.completed"),
        "{kind:?} to {route}: {text}"
    );
}

const CHAT_BODY: &str = r#"{"model":"up","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"sh","parameters":{"type":"object"}}}]}"#;
const MESSAGES_BODY: &str = r#"{"model":"up","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"sh","input_schema":{"type":"object"}}]}"#;
const RESPONSES_BODY: &str = r#"{"model":"up","stream":true,"input":"hi","tools":[{"type":"function","name":"sh","parameters":{"type":"object"}}]}"#;

/// A call after reasoning reaches the client as it starts too, its id already carrying the
/// reasoning's sealed state where the client wire has no other place for it: an Anthropic
/// upstream's signed thinking block then a `tool_use`, and a Responses upstream's encrypted
/// reasoning item then a `function_call`, each behind the other client wires. The upstream
/// waits, after the call's first event, until the test saw the call in what the client got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_reasoning_reaches_the_client_as_it_starts() {
    let anthropic_first = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Run it.\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"U0lHTg==\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01S\",\"name\":\"sh\",\"input\":{}}}\n\n";
    let anthropic_rest = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    // Chat has no place for a signature: the thinking rides sealed in the call's id. Responses
    // gives the turn's state an item of its own at the end, so the id is the upstream's.
    let anthropic = [
        ("/v1/chat/completions", CHAT_BODY, "toolu_01S_tw2_"),
        ("/v1/responses", RESPONSES_BODY, "\"call_id\":\"toolu_01S\""),
    ];
    for (route, body, expect) in anthropic {
        starts_while_paused(
            ProviderKind::Anthropic,
            anthropic_first,
            anthropic_rest,
            route,
            body,
            expect,
        )
        .await;
    }
    let responses_first = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_01\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\nevent: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[]}}\n\nevent: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"ENC2\"}}\n\nevent: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":3,\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_9\",\"name\":\"sh\",\"arguments\":\"\",\"status\":\"in_progress\"}}\n\n";
    let responses_rest = "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":4,\"item_id\":\"fc_1\",\"output_index\":1,\"delta\":\"{}\"}\n\nevent: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":5,\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_9\",\"name\":\"sh\",\"arguments\":\"{}\",\"status\":\"completed\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":6,\"response\":{\"id\":\"resp_01\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],\"encrypted_content\":\"ENC2\"},{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_9\",\"name\":\"sh\",\"arguments\":\"{}\",\"status\":\"completed\"}],\"usage\":{\"input_tokens\":9,\"output_tokens\":3,\"total_tokens\":12}}}\n\n";
    // The reasoning item rides sealed in the call's id on both wires.
    let responses = [
        ("/v1/chat/completions", CHAT_BODY, "call_9_tw2_"),
        ("/v1/messages", MESSAGES_BODY, "call_9_tw2_"),
    ];
    for (route, body, expect) in responses {
        starts_while_paused(
            ProviderKind::OpenAiResponses,
            responses_first,
            responses_rest,
            route,
            body,
            expect,
        )
        .await;
    }
}
