//! The gateway in production: key pools and fallback roles tried before the first byte reaches
//! the client (an upstream answering 429 or 500, hanging past the first-byte timeout, or
//! refusing the connection; streamed and not), a mid-conversation fallback across three wires
//! whose bodies each target accepts, gateway keys with roles and limits, `PROVIDER/MODEL` off
//! loopback only through the allow-list, and the per-key and per-attempt series of `/metrics`.

#![cfg(feature = "server")]

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::server::{GatewayKey, LimitsConfig, RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ApiError, ChatResponse, FinishReason, ProviderKind};

/// Variables cargo sets for every test process, standing in for upstream and gateway keys.
const KEY_A: &str = "CARGO_PKG_NAME";
const KEY_B: &str = "CARGO_PKG_VERSION";

fn http() -> reqwest::Client {
    crate::support::http(Duration::from_secs(60))
}

async fn post(
    url: &str,
    key: Option<&str>,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut r = http().post(url).json(body);
    if let Some(key) = key {
        r = r.bearer_auth(key);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    // A stream cut upstream reaches a same-wire client cut too: what arrived is kept.
    let bytes = r.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

async fn metrics(server: &ServerHandle, key: Option<&str>) -> String {
    let mut r = http().get(format!("{}/metrics", server.url()));
    if let Some(key) = key {
        r = r.bearer_auth(key);
    }
    r.send().await.unwrap().text().await.unwrap()
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream,
           "messages": [{"role": "user", "content": "Hello"}]})
}

/// A loopback port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn limited(retry_after: Option<u64>) -> MockReply {
    let mut e = ApiError::new(ProviderKind::OpenAi, Some(429), "Rate limit reached");
    e.code = Some("rate_limit_exceeded".into());
    e.retry_after = retry_after.map(Duration::from_secs);
    MockReply::Error(e)
}

fn server_error() -> MockReply {
    MockReply::Error(ApiError::new(ProviderKind::OpenAi, Some(500), "boom"))
}

async fn start(config: ServerConfig) -> ServerHandle {
    toolwire::server::start(config.with_port(0)).await.unwrap()
}

/// The text a client read from a Chat Completions answer, streamed or whole.
fn chat_text(stream: bool, body: &str) -> String {
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap();
        return v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Each failure of the first role's only upstream, streamed and not, moves the request to the
/// fallback role, which answers; the failing upstream was asked once per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_before_the_first_byte_moves_to_the_fallback() {
    for failure in ["429", "500", "hang", "refused"] {
        for stream in [false, true] {
            let reply = match failure {
                "429" => limited(Some(1)),
                "500" => server_error(),
                _ => MockReply::Hang,
            };
            let bad = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
                .await
                .unwrap();
            let good = MockServer::start(
                ProviderKind::Anthropic,
                Script::new().then(MockReply::text("From the fallback.")),
            )
            .await
            .unwrap();
            let primary_url = if failure == "refused" {
                closed_port()
            } else {
                bad.url()
            };
            let primary = RoleConfig::live("primary", ProviderKind::OpenAi, "gpt-x")
                .with_base_url(primary_url)
                .with_api_key_env(KEY_A)
                .with_fallbacks(["backup"]);
            let backup = RoleConfig::live("backup", ProviderKind::Anthropic, "claude-x")
                .with_base_url(good.url())
                .with_api_key_env(KEY_A);
            let server = start(
                ServerConfig::new()
                    .with_roles([primary, backup])
                    .with_upstream_first_byte_timeout(Duration::from_millis(700)),
            )
            .await;
            let (status, _, body) = post(
                &format!("{}/v1/chat/completions", server.url()),
                None,
                &chat("primary", stream),
            )
            .await;
            let case = format!("{failure}, stream {stream}");
            assert_eq!(status, 200, "{case}: {body}");
            assert_eq!(
                chat_text(stream, &body),
                "From the fallback.",
                "{case}: {body}"
            );
            if failure != "refused" {
                assert_eq!(bad.requests().len(), 1, "{case}");
            }
            let asked = good.requests();
            assert_eq!(asked.len(), 1, "{case}");
            // Re-encoded for the fallback's own wire and model.
            assert_eq!(asked[0].path, "/v1/messages", "{case}");
            assert_eq!(asked[0].body["model"], "claude-x", "{case}");
            assert_eq!(asked[0].body["messages"][0]["role"], "user", "{case}");
            let m = metrics(&server, None).await;
            assert!(
                m.contains("toolwire_gateway_fallbacks_total 1"),
                "{case}: {m}"
            );
            assert!(
                m.contains("role=\"backup\",key=\"CARGO_PKG_NAME\",outcome=\"ok\"} 1"),
                "{case}: {m}"
            );
            server.shutdown().await;
        }
    }
}

/// A key answering 429 moves the request to the pool's next key, and rests: the next request
/// goes to the second key first. A 400 is the answer (the request itself is wrong), not moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_pool_moves_on_and_a_limited_key_rests() {
    let upstream = MockServer::start(
        ProviderKind::OpenAi,
        Script::new()
            .then(limited(Some(60)))
            .then(MockReply::text("one"))
            .then(MockReply::text("two"))
            .then(MockReply::Error(ApiError::new(
                ProviderKind::OpenAi,
                Some(400),
                "bad request",
            ))),
    )
    .await
    .unwrap();
    let role = RoleConfig::live("pool", ProviderKind::OpenAi, "gpt-x")
        .with_base_url(upstream.url())
        .with_api_key_envs([KEY_A, KEY_B]);
    let server = start(ServerConfig::new().with_roles([role])).await;
    let url = format!("{}/v1/chat/completions", server.url());
    let (status, _, body) = post(&url, None, &chat("pool", true)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(chat_text(true, &body), "one");
    let (status, _, body) = post(&url, None, &chat("pool", false)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(chat_text(false, &body), "two");
    let (status, _, body) = post(&url, None, &chat("pool", false)).await;
    assert_eq!(status, 400, "{body}");
    let keys: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    let a = format!("Bearer {}", env!("CARGO_PKG_NAME"));
    let b = format!("Bearer {}", env!("CARGO_PKG_VERSION"));
    // 429 on A, then B; A rests, so B alone twice more (the 400 was not moved to A).
    assert_eq!(keys, [a.clone(), b.clone(), b.clone(), b]);
    server.shutdown().await;
}

/// An assistant turn with Anthropic thinking (and its signature), a call, and its result, sent
/// by an Anthropic client; the Anthropic upstream is overloaded, the Gemini one rate-limited,
/// the OpenAI one answers. Each target received the history in its own wire's shape, with the
/// call and its result paired, and no Anthropic signature left where it is not Anthropic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mid_conversation_fallback_crosses_three_wires() {
    const SIGNATURE: &str = "RXF1aXZhbGVudFNpZ25hdHVyZUZyb21DbGF1ZGU=";
    let overloaded = {
        let mut e = ApiError::new(ProviderKind::Anthropic, Some(529), "Overloaded");
        e.code = Some("overloaded_error".into());
        MockReply::Error(e)
    };
    let anthropic = MockServer::start(ProviderKind::Anthropic, Script::new().then(overloaded))
        .await
        .unwrap();
    let gemini = MockServer::start(ProviderKind::Gemini, Script::new().then(limited(Some(30))))
        .await
        .unwrap();
    let answer = ChatResponse::default()
        .with_text("It is 18 degrees in Paris.")
        .with_finish_reason(FinishReason::Stop);
    let openai = MockServer::start(ProviderKind::OpenAi, Script::new().then(answer))
        .await
        .unwrap();
    let role = |name: &str, kind, url: String| {
        RoleConfig::live(name, kind, format!("{name}-model"))
            .with_base_url(url)
            .with_api_key_env(KEY_A)
    };
    let server = start(ServerConfig::new().with_roles([
        role("claude", ProviderKind::Anthropic, anthropic.url()).with_fallbacks(["gem", "gpt"]),
        role("gem", ProviderKind::Gemini, gemini.url()),
        role("gpt", ProviderKind::OpenAi, openai.url()),
    ]))
    .await;
    let history = json!({
        "model": "claude",
        "max_tokens": 512,
        "stream": false,
        "tools": [{"name": "get_weather", "input_schema": {"type": "object",
                   "properties": {"city": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should call the tool.", "signature": SIGNATURE},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18 C, cloudy"}
            ]}
        ]
    });
    let (status, _, body) = post(&format!("{}/v1/messages", server.url()), None, &history).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "It is 18 degrees in Paris.");

    // Anthropic, same wire: the thinking block goes back with its signature, before the call.
    let sent = &anthropic.requests()[0].body;
    let turn = &sent["messages"][1]["content"];
    assert_eq!(turn[0]["type"], "thinking", "{sent}");
    assert_eq!(turn[0]["signature"], SIGNATURE, "{sent}");
    assert_eq!(turn[1]["type"], "tool_use");
    assert_eq!(sent["messages"][2]["content"][0]["tool_use_id"], "toolu_01");

    // Gemini: a model turn with the functionCall, a user turn with its functionResponse of the
    // same name; no Anthropic signature anywhere.
    let sent = &gemini.requests()[0].body;
    let text = sent.to_string();
    assert!(!text.contains(SIGNATURE), "{sent}");
    let contents = sent["contents"].as_array().unwrap();
    let model_turn = contents
        .iter()
        .find(|c| c["role"] == "model")
        .unwrap_or_else(|| panic!("{sent}"));
    let call = model_turn["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p.get("functionCall"))
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["args"], json!({"city": "Paris"}));
    let result = contents
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .find_map(|p| p.get("functionResponse").cloned())
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(result["name"], "get_weather");
    assert!(result.to_string().contains("18 C, cloudy"), "{sent}");

    // OpenAI Chat: an assistant message with tool_calls, a tool message answering its id; no
    // thinking blocks or signatures.
    let sent = &openai.requests()[0].body;
    assert!(!sent.to_string().contains(SIGNATURE), "{sent}");
    assert_eq!(sent["model"], "gpt-model");
    let messages = sent["messages"].as_array().unwrap();
    let assistant = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap_or_else(|| panic!("{sent}"));
    let call = &assistant["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(tool["tool_call_id"], call["id"]);
    assert!(tool["content"].to_string().contains("18 C, cloudy"));
    assert!(
        messages.iter().all(|m| m["content"]
            .as_array()
            .is_none_or(|parts| parts.iter().all(|p| p["type"] != "thinking"))),
        "{sent}"
    );
    server.shutdown().await;
}

/// Off loopback: a named gateway key reaches only its roles; `PROVIDER/MODEL` only through
/// the allow-list; requests per minute and a token budget (charged when a stream is cut) are
/// held with 429 and `retry-after` in the client's wire; `/metrics` counts them per key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_keys_hold_their_roles_and_limits() {
    let upstream = MockServer::start(
        ProviderKind::OpenAi,
        Script::new().then(MockReply::text("fine")).repeat_last(),
    )
    .await
    .unwrap();
    let cut = MockServer::start(
        ProviderKind::OpenAi,
        Script::new()
            .then(
                MockReply::from(ChatResponse::default().with_text("word ".repeat(300)))
                    .drop_after(900),
            )
            .then(MockReply::text("fine"))
            .repeat_last(),
    )
    .await
    .unwrap();
    let role = |name: &str, url: String| {
        RoleConfig::live(name, ProviderKind::OpenAi, "gpt-x")
            .with_base_url(url)
            .with_api_key_env(KEY_A)
    };
    let team = GatewayKey::new("team-a", "team-a-secret")
        .with_roles(["up"])
        .with_limits(Some(3), None, None);
    let budget = GatewayKey::new("budget", "budget-secret").with_limits(None, Some(20), None);
    let listen: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let server = toolwire::server::start(
        ServerConfig::new()
            .with_listen(listen)
            .with_roles([
                role("up", upstream.url()),
                role("other", upstream.url()),
                role("cutting", cut.url()),
            ])
            .with_gateway_keys(["anon-secret".to_owned()])
            .with_gateway_key_entries([team, budget])
            .with_allow_provider_models(["ollama/*"])
            .with_limits(LimitsConfig::default().with_window(Duration::from_secs(3_600))),
    )
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{}", server.addr().port());
    let chat_url = format!("{base}/v1/chat/completions");
    // Roles of the key only.
    let (status, _, body) = post(&chat_url, Some("team-a-secret"), &chat("other", false)).await;
    assert_eq!(status, 403, "{body}");
    let (status, _, body) = post(&chat_url, Some("team-a-secret"), &chat("ollama/x", false)).await;
    assert_eq!(status, 403, "{body}");
    // PROVIDER/MODEL off loopback: the allow-list only (ollama on a closed port: 502, not 403).
    let (status, _, body) = post(
        &chat_url,
        Some("anon-secret"),
        &chat("openai/gpt-4o", false),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("allow_provider_models"), "{body}");
    let (status, _, _) = post(&chat_url, Some("anon-secret"), &chat("other", false)).await;
    assert_eq!(status, 200);
    // Three requests a minute: the fourth is refused in the Messages wire with retry-after.
    for _ in 0..3 {
        let (status, _, body) = post(&chat_url, Some("team-a-secret"), &chat("up", false)).await;
        assert_eq!(status, 200, "{body}");
    }
    let messages = json!({"model": "up", "max_tokens": 16,
                          "messages": [{"role": "user", "content": "Hi"}]});
    let (status, headers, body) = post(
        &format!("{base}/v1/messages"),
        Some("team-a-secret"),
        &messages,
    )
    .await;
    assert_eq!(status, 429, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=3_600).contains(&after), "{after}");
    // A token budget of 20: a stream cut after 900 bytes is charged (an estimate: the upstream
    // never sent usage), and the budget is spent.
    let (status, _, _) = post(&chat_url, Some("budget-secret"), &chat("cutting", true)).await;
    assert_eq!(status, 200);
    let mut refused = None;
    for _ in 0..20 {
        let (status, _, body) =
            post(&chat_url, Some("budget-secret"), &chat("cutting", false)).await;
        if status == 429 {
            refused = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = refused.expect("the budget was never enforced");
    assert!(refused.contains("tokens_per_minute"), "{refused}");
    let m = metrics(&server, Some("anon-secret")).await;
    for line in [
        "toolwire_gateway_key_requests_total{key=\"team-a\"} 3",
        "toolwire_gateway_key_refusals_total{key=\"team-a\",limit=\"requests_per_minute\"} 1",
        "toolwire_gateway_key_refusals_total{key=\"budget\",limit=\"tokens_per_minute\"} 1",
    ] {
        assert!(m.contains(line), "{line}\n{m}");
    }
    assert!(
        m.lines().any(|l| l
            .starts_with("toolwire_gateway_key_estimated_tokens_total{key=\"budget\"}")
            && !l.ends_with(" 0")),
        "{m}"
    );
    server.shutdown().await;
}
