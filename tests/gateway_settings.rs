//! Sampling and reasoning settings through the gateway: each client wire's own names reach
//! every upstream wire translated (an effort survives every crossing), the defaults clients
//! send (`top_p: 1`, zero penalties, `n: 1`) are never refused, and a role with
//! `drop_unsupported = true` names what it left out in `toolwire-dropped`.

#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::ProviderKind;
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};

/// A variable cargo sets in every test process, standing in for a key the mock ignores.
const KEY_VAR: &str = "CARGO_PKG_NAME";

async fn gateway(
    kind: ProviderKind,
    model: &str,
    upstream: &MockServer,
    drop: bool,
) -> ServerHandle {
    let role = RoleConfig::live("up", kind, model)
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR)
        .with_drop_unsupported(drop);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

async fn post(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let r = http.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

async fn upstream(kind: ProviderKind) -> MockServer {
    let script = Script::new().then(MockReply::text("ok")).repeat_last();
    MockServer::start(kind, script).await.unwrap()
}

/// A body of `wire` asking for `effort`, with `extra` fields merged in.
fn body(wire: &str, effort: Option<&str>, extra: Value) -> Value {
    let mut b = match wire {
        "chat" => json!({"model": "up", "max_tokens": 64000,
                         "messages": [{"role": "user", "content": "hi"}]}),
        "messages" => json!({"model": "up", "max_tokens": 64000,
                             "messages": [{"role": "user", "content": "hi"}]}),
        _ => json!({"model": "up", "max_output_tokens": 64000, "input": "hi"}),
    };
    if let Some(e) = effort {
        match wire {
            "chat" => b["reasoning_effort"] = json!(e),
            "messages" => {
                b["thinking"] = json!({"type": "adaptive"});
                b["output_config"] = json!({"effort": e});
            }
            _ => b["reasoning"] = json!({"effort": e}),
        }
    }
    if let (Value::Object(b), Value::Object(extra)) = (&mut b, extra) {
        b.extend(extra);
    }
    b
}

fn route(wire: &str) -> &'static str {
    match wire {
        "chat" => "/v1/chat/completions",
        "messages" => "/v1/messages",
        _ => "/v1/responses",
    }
}

const WIRES: [&str; 3] = ["chat", "messages", "responses"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effort_survives_every_crossing() {
    let upstreams = [
        (
            ProviderKind::OpenAi,
            "gpt-5.2",
            "/reasoning_effort",
            json!("high"),
        ),
        (
            ProviderKind::OpenAiResponses,
            "gpt-5.2",
            "/reasoning/effort",
            json!("high"),
        ),
        (
            ProviderKind::Anthropic,
            "claude-opus-4-7",
            "/output_config/effort",
            json!("high"),
        ),
        (
            ProviderKind::Gemini,
            "gemini-3-pro-preview",
            "/generationConfig/thinkingConfig/thinkingLevel",
            json!("high"),
        ),
        (
            ProviderKind::Bedrock,
            "us.anthropic.claude-opus-4-7",
            "/additionalModelRequestFields/output_config/effort",
            json!("high"),
        ),
        (
            ProviderKind::Glm,
            "glm-4.6",
            "/thinking/type",
            json!("enabled"),
        ),
        (
            ProviderKind::Qwen,
            "qwen-plus",
            "/thinking_budget",
            json!(16384),
        ),
    ];
    for (kind, model, pointer, want) in upstreams {
        let up = upstream(kind).await;
        let gw = gateway(kind, model, &up, false).await;
        for wire in WIRES {
            let url = format!("{}{}", gw.url(), route(wire));
            let (status, _, text) = post(&url, &body(wire, Some("high"), json!({}))).await;
            assert_eq!(status, 200, "{wire} → {kind}: {text}");
            let sent = up.requests().pop().expect("the upstream was called").body;
            assert_eq!(
                sent.pointer(pointer),
                Some(&want),
                "{wire} → {kind}: {sent}"
            );
            if kind == ProviderKind::Anthropic || kind == ProviderKind::Bedrock {
                let text = sent.to_string();
                assert!(!text.contains("budget_tokens"), "{wire} → {kind}: {text}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_settings_arrive_in_the_upstream_names() {
    // (client wire, its fields) → upstream anthropic: top_p, top_k (Messages only), stop.
    let up = upstream(ProviderKind::Anthropic).await;
    let gw = gateway(ProviderKind::Anthropic, "claude-sonnet-4-5", &up, false).await;
    let cases = [
        ("chat", json!({"top_p": 0.5, "stop": "END"})),
        ("chat", json!({"top_p": 0.5, "stop": ["END"]})),
        (
            "messages",
            json!({"top_p": 0.5, "top_k": 40, "stop_sequences": ["END"]}),
        ),
        ("responses", json!({"top_p": 0.5})),
    ];
    for (wire, fields) in cases {
        let url = format!("{}{}", gw.url(), route(wire));
        let (status, _, text) = post(&url, &body(wire, None, fields.clone())).await;
        assert_eq!(status, 200, "{wire} {fields}: {text}");
        let sent = up.requests().pop().expect("called").body;
        assert_eq!(sent["top_p"], json!(0.5), "{wire}: {sent}");
        if wire != "responses" {
            assert_eq!(sent["stop_sequences"], json!(["END"]), "{wire}: {sent}");
        }
        if wire == "messages" {
            assert_eq!(sent["top_k"], json!(40), "{wire}: {sent}");
        }
    }
    // Chat's seed and penalties reach Gemini's generationConfig.
    let up = upstream(ProviderKind::Gemini).await;
    let gw = gateway(ProviderKind::Gemini, "gemini-2.5-flash", &up, false).await;
    let fields =
        json!({"seed": 7, "presence_penalty": 0.5, "frequency_penalty": -0.5, "top_p": 0.9});
    let url = format!("{}{}", gw.url(), route("chat"));
    let (status, _, text) = post(&url, &body("chat", None, fields)).await;
    assert_eq!(status, 200, "{text}");
    let sent = up.requests().pop().expect("called").body;
    let g = &sent["generationConfig"];
    assert_eq!(
        (
            &g["seed"],
            &g["presencePenalty"],
            &g["frequencyPenalty"],
            &g["topP"]
        ),
        (&json!(7), &json!(0.5), &json!(-0.5), &json!(0.9)),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_defaults_are_never_refused() {
    // What LangChain and other clients send by default, to a wire without penalties.
    let up = upstream(ProviderKind::Anthropic).await;
    let gw = gateway(ProviderKind::Anthropic, "claude-sonnet-4-5", &up, false).await;
    let url = format!("{}{}", gw.url(), route("chat"));
    let defaults = json!({"top_p": 1, "presence_penalty": 0, "frequency_penalty": 0, "n": 1,
                          "verbosity": "medium", "max_completion_tokens": 100});
    let (status, headers, text) = post(&url, &body("chat", None, defaults)).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        headers.get("toolwire-dropped").is_none(),
        "neutral values are not drops"
    );
    let sent = up.requests().pop().expect("called").body;
    assert_eq!(sent.get("presence_penalty"), None, "{sent}");
    assert_eq!(sent["max_tokens"], json!(100), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_that_drops_names_what_it_dropped() {
    let fields = json!({"seed": 7, "frequency_penalty": 0.5});
    for stream in [false, true] {
        let mut b = body("chat", None, fields.clone());
        b["stream"] = json!(stream);
        // Without the role option: refused by name.
        let up = upstream(ProviderKind::Anthropic).await;
        let strict = gateway(ProviderKind::Anthropic, "claude-sonnet-4-5", &up, false).await;
        let url = format!("{}{}", strict.url(), route("chat"));
        let (status, _, text) = post(&url, &b).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("seed"), "{text}");
        assert!(up.requests().is_empty(), "nothing reached the upstream");
        // With it: answered, and the header names both.
        let lenient = gateway(ProviderKind::Anthropic, "claude-sonnet-4-5", &up, true).await;
        let url = format!("{}{}", lenient.url(), route("chat"));
        let (status, headers, text) = post(&url, &b).await;
        assert_eq!(status, 200, "{text}");
        let named = headers
            .get("toolwire-dropped")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert_eq!(named, "seed, frequency_penalty", "stream {stream}");
        let sent = up.requests().pop().expect("called").body.to_string();
        assert!(
            !sent.contains("seed") && !sent.contains("penalty"),
            "{sent}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_naming_the_field() {
    // A Gemini upstream: every client wire crosses (a same-wire route passes the body through
    // for the upstream to judge).
    let up = upstream(ProviderKind::Gemini).await;
    let gw = gateway(ProviderKind::Gemini, "gemini-3-pro-preview", &up, false).await;
    let cases = [
        (
            "chat",
            json!({"reasoning_effort": "extreme"}),
            "reasoning_effort",
        ),
        ("chat", json!({"verbosity": "loud"}), "verbosity"),
        ("chat", json!({"n": 2}), "n"),
        ("chat", json!({"top_p": 3}), "top_p"),
        (
            "messages",
            json!({"thinking": {"type": "sometimes"}}),
            "thinking.type",
        ),
        (
            "responses",
            json!({"reasoning": {"summary": "long"}}),
            "reasoning.summary",
        ),
        (
            "responses",
            json!({"text": {"verbosity": "loud"}}),
            "text.verbosity",
        ),
    ];
    for (wire, fields, field) in cases {
        let url = format!("{}{}", gw.url(), route(wire));
        let (status, _, text) = post(&url, &body(wire, None, fields)).await;
        assert_eq!(status, 400, "{wire} {field}: {text}");
        assert!(text.contains(field), "{wire}: {text} names {field}");
    }
}
