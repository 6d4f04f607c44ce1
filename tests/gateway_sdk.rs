//! The official OpenAI (Chat Completions and Responses) and Anthropic Python SDKs as clients of
//! the gateway, in front of a mock upstream of every built-in wire: each SDK assembles the
//! calls the upstream sent (ids, names, argument text), streamed and not, and its second turn
//! with the tool results reaches the upstream valid (a Gemini thought signature intact). An
//! upstream 429 reaches each SDK as its RateLimitError with the retry-after.
//!
//! The SDKs are installed by the test into a venv under the target dir when missing
//! (`pip install openai anthropic`).

#![cfg(feature = "server")]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ApiError, ChatResponse, FinishReason, ProviderKind, ToolCall};

/// The upstream key variable: one cargo sets for every test process, standing in for a key.
const KEY_VAR: &str = "CARGO_PKG_NAME";
const SIGNATURE: &str = "c2lnLXBhcmlz";

/// The venv's python, made (with the SDKs) when missing; once per test process, so tests
/// running in parallel never build the same venv at the same time.
fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sdk-venv");
            let python = venv.join("bin").join("python");
            let ready = Command::new(&python)
                .args(["-c", "import openai, anthropic"])
                .status()
                .is_ok_and(|s| s.success());
            if !ready {
                let made = Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .expect("python3 runs");
                assert!(made.success(), "python3 -m venv {}", venv.display());
                let pip = Command::new(venv.join("bin").join("pip"))
                    .args(["install", "-q", "openai", "anthropic"])
                    .status()
                    .expect("pip runs");
                assert!(pip.success(), "pip install openai anthropic");
            }
            python
        })
        .clone()
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/gateway_sdk.py")
}

/// Two parallel calls, the first with a Gemini thought signature; after tool results, text.
fn calls() -> Vec<ToolCall> {
    let mut a = ToolCall::new("call_tw_1", "get_weather", r#"{"city":"Paris"}"#);
    a.extra.insert("thought_signature".into(), json!(SIGNATURE));
    let b = ToolCall::new("call_tw_2", "get_weather", r#"{"city":"Tokyo","unit":"c"}"#);
    vec![a, b]
}

async fn gateway(kind: ProviderKind, upstream: &MockServer) -> ServerHandle {
    let role = RoleConfig::live("up", kind, "model-x")
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

async fn run(args: Vec<String>) -> Value {
    let python = python();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script())
            .args(args)
            .env("NO_PROXY", "*")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "the SDK script failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One gateway with a role per built-in upstream wire (`up-<provider>`), each on its own mock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_assemble_the_upstream_calls() {
    let mut upstreams = Vec::new();
    let mut roles = Vec::new();
    for kind in ProviderKind::ALL.iter().copied() {
        let script = Script::new().respond_with(|request| {
            if request.body.to_string().contains("sunny") {
                MockReply::text("Done.")
            } else {
                ChatResponse::default()
                    .with_tool_calls(calls())
                    .with_finish_reason(FinishReason::ToolCalls)
                    .into()
            }
        });
        let upstream = MockServer::start(kind, script).await.unwrap();
        roles.push(
            RoleConfig::live(format!("up-{kind}"), kind, "model-x")
                .with_base_url(upstream.url())
                .with_api_key_env(KEY_VAR),
        );
        upstreams.push((kind, upstream));
    }
    let server = toolwire::server::start(ServerConfig::new().with_port(0).with_roles(roles))
        .await
        .unwrap();
    let models: Vec<String> = upstreams.iter().map(|(k, _)| format!("up-{k}")).collect();
    let got = run(vec![server.url(), models.join(",")]).await;
    let cases = got.as_object().unwrap();
    assert_eq!(cases.len(), 6 * upstreams.len(), "{got}");
    for (case, result) in cases {
        let seen = result["calls"].as_array().unwrap();
        assert_eq!(seen.len(), 2, "{case}: {result}");
        for (s, want) in seen.iter().zip(calls()) {
            assert_eq!(s["name"], want.name, "{case}");
            assert_eq!(s["arguments"], want.raw_arguments, "{case}");
            let id = s["id"].as_str().unwrap();
            assert!(
                id.starts_with(&want.id) || id.starts_with("call_"),
                "{case}: {id}"
            );
        }
        assert_eq!(result["second"], "Done.", "{case}");
    }
    // Every second turn reached its upstream with the upstream's own ids, and Gemini's with
    // its thought signature.
    for (kind, upstream) in &upstreams {
        let seconds: Vec<String> = upstream
            .requests()
            .iter()
            .map(|r| r.body.to_string())
            .filter(|b| b.contains("sunny"))
            .collect();
        assert_eq!(seconds.len(), 6, "{kind}");
        for sent in seconds {
            assert!(!sent.contains(".tw1."), "{kind}: {sent}");
            if *kind == ProviderKind::Gemini {
                assert!(sent.contains(SIGNATURE), "{kind}: signature lost: {sent}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_429_reaches_each_sdk_with_its_retry_after() {
    let mut limited = ApiError::new(ProviderKind::Anthropic, Some(429), "Rate limited");
    limited.code = Some("rate_limit_error".into());
    limited.retry_after = Some(Duration::from_secs(3));
    let script = Script::new().then(MockReply::Error(limited)).repeat_last();
    let upstream = MockServer::start(ProviderKind::Anthropic, script)
        .await
        .unwrap();
    let server = gateway(ProviderKind::Anthropic, &upstream).await;
    let got = run(vec![server.url(), "up".into(), "429".into()]).await;
    for wire in ["chat", "responses", "messages"] {
        assert_eq!(got[wire]["status"], 429, "{wire}: {got}");
        assert_eq!(got[wire]["retry_after"], "3", "{wire}: {got}");
    }
}

/// One upstream of the settings test: its wire, its model, where the effort lands and its
/// value, where `top_p` lands (`None`: the model refuses it).
type Upstream = (
    ProviderKind,
    &'static str,
    Option<(&'static str, Value)>,
    Option<&'static str>,
);

/// The official SDKs send sampling and reasoning settings in their own names; each upstream
/// wire receives the effort in the form its model takes, and `top_p` where the wire has it.
/// The roles drop what a wire cannot carry and name it in `toolwire-dropped`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_settings_reach_every_upstream_translated() {
    // (upstream, model, where the effort lands, where top_p lands)
    let upstreams: [Upstream; 12] = [
        (
            ProviderKind::OpenAi,
            "gpt-5.2",
            Some(("/reasoning_effort", json!("high"))),
            Some("/top_p"),
        ),
        (
            ProviderKind::Gemini,
            "gemini-3-pro-preview",
            Some((
                "/generationConfig/thinkingConfig/thinkingLevel",
                json!("high"),
            )),
            Some("/generationConfig/topP"),
        ),
        (
            ProviderKind::Glm,
            "glm-4.6",
            Some(("/thinking/type", json!("enabled"))),
            Some("/top_p"),
        ),
        (
            ProviderKind::Qwen,
            "qwen-plus",
            Some(("/thinking_budget", json!(16384))),
            Some("/top_p"),
        ),
        (
            ProviderKind::DashScope,
            "qwen-plus",
            Some(("/parameters/thinking_budget", json!(16384))),
            Some("/parameters/top_p"),
        ),
        (ProviderKind::StepFun, "step-3", None, Some("/top_p")),
        (
            ProviderKind::OpenAiResponses,
            "gpt-5.2",
            Some(("/reasoning/effort", json!("high"))),
            Some("/top_p"),
        ),
        (
            ProviderKind::Anthropic,
            "claude-opus-4-7",
            Some(("/output_config/effort", json!("high"))),
            None,
        ),
        (
            ProviderKind::Ollama,
            "gpt-oss:20b",
            Some(("/think", json!("high"))),
            Some("/options/top_p"),
        ),
        (
            ProviderKind::Mistral,
            "magistral-medium-latest",
            None,
            Some("/top_p"),
        ),
        (
            ProviderKind::Cohere,
            "command-a-reasoning-08-2025",
            Some(("/thinking/token_budget", json!(16384))),
            Some("/p"),
        ),
        (
            ProviderKind::Bedrock,
            "us.anthropic.claude-opus-4-7",
            Some((
                "/additionalModelRequestFields/output_config/effort",
                json!("high"),
            )),
            None,
        ),
    ];
    let mut mocks = Vec::new();
    let mut roles = Vec::new();
    for (kind, model, _, _) in &upstreams {
        let script = Script::new().then(MockReply::text("Done.")).repeat_last();
        let upstream = MockServer::start(*kind, script).await.unwrap();
        roles.push(
            RoleConfig::live(format!("up-{kind}"), *kind, *model)
                .with_base_url(upstream.url())
                .with_api_key_env(KEY_VAR)
                .with_drop_unsupported(true),
        );
        mocks.push(upstream);
    }
    let server = toolwire::server::start(ServerConfig::new().with_port(0).with_roles(roles))
        .await
        .unwrap();
    let names: Vec<String> = upstreams.iter().map(|(k, ..)| format!("up-{k}")).collect();
    let got = run(vec![server.url(), names.join(","), "settings".into()]).await;
    for ((kind, model, effort, top_p), mock) in upstreams.iter().zip(&mocks) {
        // One request per SDK call (a client may repeat one under load: every one is checked).
        let requests = mock.requests();
        assert!(requests.len() >= 3, "{kind}: one request per SDK");
        for r in &requests {
            let at = format!("{kind} ({model})");
            if let Some((pointer, want)) = effort {
                assert_eq!(r.body.pointer(pointer), Some(want), "{at}: {}", r.body);
            }
            if let Some(pointer) = top_p {
                assert_eq!(
                    r.body.pointer(pointer),
                    Some(&json!(0.5)),
                    "{at}: {}",
                    r.body
                );
            }
            let text = r.body.to_string();
            assert!(!text.contains("budget_tokens"), "{at}: {text}");
        }
        if top_p.is_none() {
            // Claude Opus 4.7 refuses top_p: dropped, and named on every wire's answer.
            // Not on the same wire: an Anthropic client's body reaches Anthropic as sent.
            for wire in ["chat", "responses", "messages"] {
                if (*kind, wire) == (ProviderKind::Anthropic, "messages") {
                    continue;
                }
                let named = got[format!("up-{kind}")][wire].as_str().unwrap_or_default();
                assert!(named.contains("top_p"), "{wire} → {kind}: {got}");
            }
        }
    }
}
