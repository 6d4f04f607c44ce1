//! Client extension over the mock: extra headers (kept out of Debug, errors and recordings),
//! default query parameters, the caller's own `reqwest::Client`, and Azure OpenAI.
#![cfg(feature = "mock")]

use std::path::PathBuf;

use serde_json::json;
use toolwire::client::{Client, RetryPolicy};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::{ChatRequest, ChatResponse, FinishReason, Message, ProviderKind};

const HEADER_SECRET: &str = "gw-tok/en-SECRET-9876";

fn request() -> ChatRequest {
    ChatRequest::new("tw-test-model", vec![Message::user("Hi")])
}

fn text_reply() -> ChatResponse {
    ChatResponse::default()
        .with_text("Hello.")
        .with_finish_reason(FinishReason::Stop)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-ext-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn files_below(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn extra_headers_and_query_reach_the_server_and_never_leak() {
    // The second answer echoes the header value back in a 401 body, JSON-escaped.
    let echoed = serde_json::to_string(HEADER_SECRET).unwrap();
    let body = format!(
        r#"{{"error":{{"message":"bad gateway token {} ({})","code":"invalid_token"}}}}"#,
        HEADER_SECRET,
        echoed.trim_matches('"')
    );
    let script = Script::new().then(text_reply()).then(MockReply::Raw {
        status: 401,
        content_type: "application/json".into(),
        body: body.clone().into_bytes(),
    });
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let dir = temp_dir("headers");
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key("sk-test-key")
        .header("X-Gateway-Auth", HEADER_SECRET)
        .query("route", "eu west")
        .query("tier", "1")
        .retry(RetryPolicy::none())
        .record_to(&dir)
        .build()
        .unwrap();
    client.chat(&request()).await.unwrap();
    let err = client.chat(&request()).await.unwrap_err();

    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/chat/completions?route=eu+west&tier=1");
    assert_eq!(seen.header("x-gateway-auth"), Some(HEADER_SECRET));
    assert_eq!(seen.header("authorization"), Some("Bearer sk-test-key"));

    assert_eq!(err.status(), Some(401));
    let api = err.api().unwrap();
    assert_eq!(
        api.message, "bad gateway token <redacted> (<redacted>)",
        "{api:?}"
    );
    let debug = format!("{client:?}");
    assert!(debug.contains("x-gateway-auth"), "{debug}");
    for text in [err.to_string(), format!("{err:?}"), api.body.clone(), debug] {
        assert!(!text.contains("SECRET"), "{text}");
    }
    let builder = Client::builder(ProviderKind::OpenAi).header("x-a", HEADER_SECRET);
    assert!(!format!("{builder:?}").contains("SECRET"));

    let files = files_below(&dir);
    assert_eq!(files.len(), 10, "{files:?}");
    let mut saw_error_body = false;
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains("SECRET"), "{}: {text}", file.display());
        saw_error_body |= text.contains("bad gateway token <redacted>");
    }
    assert!(saw_error_body);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_extra_header_replaces_the_auth_header_of_the_same_name() {
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(text_reply()))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key("sk-test-key")
        .header("Authorization", "Bearer gateway")
        .build()
        .unwrap();
    client.chat(&request()).await.unwrap();
    let seen = &server.requests()[0];
    let auth: Vec<_> = seen
        .headers
        .iter()
        .filter(|(n, _)| n == "authorization")
        .collect();
    assert_eq!(auth.len(), 1, "{auth:?}");
    assert_eq!(auth[0].1, "Bearer gateway");
}

#[test]
fn a_bad_extra_header_is_refused_when_building() {
    for (name, value) in [("bad name:", "v"), ("x-ok", "line\nbreak")] {
        let err = Client::builder(ProviderKind::OpenAi)
            .api_key("k")
            .header(name, value)
            .build()
            .unwrap_err();
        assert!(matches!(err, toolwire::Error::Input { .. }), "{err:?}");
    }
}

#[tokio::test]
async fn a_user_supplied_http_client_is_used() {
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(text_reply()))
        .await
        .unwrap();
    let http = toolwire::client::http_client_builder()
        .user_agent("my-agent/1")
        .build()
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .http_client(http)
        .build()
        .unwrap();
    client.chat(&request()).await.unwrap();
    assert_eq!(
        server.requests()[0].header("user-agent"),
        Some("my-agent/1")
    );
}

#[tokio::test]
async fn azure_uses_the_deployment_path_api_version_and_api_key() {
    let script = Script::new().then(text_reply()).then(text_reply());
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::azure(&server.url(), "D", "V")
        .api_key("azure-SECRET-key")
        .build()
        .unwrap();
    let response = client.chat(&request()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("Hello."));
    let bearer = Client::azure(&server.url(), "D", "V")
        .azure_bearer("entra-SECRET-token")
        .build()
        .unwrap();
    bearer.chat(&request()).await.unwrap();
    assert!(!format!("{client:?}{bearer:?}").contains("SECRET"));

    let seen = server.requests();
    assert_eq!(
        seen[0].path,
        "/openai/deployments/D/chat/completions?api-version=V"
    );
    assert_eq!(seen[0].header("api-key"), Some("azure-SECRET-key"));
    assert_eq!(seen[0].header("authorization"), None);
    assert_eq!(
        seen[0].body["messages"][0],
        json!({"role": "user", "content": "Hi"})
    );
    assert_eq!(seen[1].path, seen[0].path);
    assert_eq!(seen[1].header("api-key"), None);
    assert_eq!(
        seen[1].header("authorization"),
        Some("Bearer entra-SECRET-token")
    );
}

#[test]
fn azure_builds_the_resource_url_and_needs_a_key() {
    let client = Client::azure("my-res", "gpt 4o", "2024-10-21")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(
        client.base_url(),
        "https://my-res.openai.azure.com/openai/deployments/gpt%204o"
    );
    // Only checked where the variable is not set.
    if std::env::var_os("AZURE_OPENAI_API_KEY").is_none() {
        let err = Client::azure("my-res", "d", "v").build().unwrap_err();
        assert!(err.to_string().contains("AZURE_OPENAI_API_KEY"), "{err}");
    }
}

#[tokio::test]
async fn recordings_drive_the_mock_in_order() {
    let dir = temp_dir("replay");
    let mut replies = Script::new();
    for i in 0..11 {
        replies = replies.then(
            ChatResponse::default()
                .with_text(format!("answer {i}"))
                .with_finish_reason(FinishReason::Stop),
        );
    }
    let mut failure = toolwire::ApiError::new(ProviderKind::OpenAi, Some(429), "slow down");
    failure.code = Some("rate_limit_exceeded".into());
    replies = replies.then(failure);
    let server = MockServer::start(ProviderKind::OpenAi, replies)
        .await
        .unwrap();
    // A key that occurs in no body: the recorder redacts the key wherever it appears.
    let recording = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key("sk-tw-recording-key")
        .retry(RetryPolicy::none())
        .record_to(&dir)
        .build()
        .unwrap();
    let mut live = Vec::new();
    for i in 0..11 {
        // Streamed and not, alternately: `.sse` and `.json` cases.
        let response = if i % 2 == 0 {
            recording.chat(&request()).await.unwrap()
        } else {
            recording
                .stream(&request())
                .await
                .unwrap()
                .finish()
                .await
                .unwrap()
        };
        live.push(response);
    }
    recording.chat(&request()).await.unwrap_err();

    // Padded numbers: the eleventh case sorts after the second.
    let mut names: Vec<String> = std::fs::read_dir(dir.join("openai"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names[1].ends_with("_0002") && names[10].ends_with("_0011"),
        "{names:?}"
    );

    let script = Script::from_recordings(&dir).unwrap();
    assert_eq!(script.len(), 12);
    let replay = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(replay.url())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    for (i, expected) in live.iter().enumerate() {
        let response = client.chat(&request()).await.unwrap();
        assert_eq!(&response, expected, "case {i}");
    }
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(
        err.api().unwrap().code.as_deref(),
        Some("rate_limit_exceeded")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn from_recordings_names_what_is_missing() {
    let dir = temp_dir("empty-recordings");
    std::fs::create_dir_all(&dir).unwrap();
    let err = Script::from_recordings(&dir).unwrap_err();
    assert!(matches!(err, toolwire::Error::Input { .. }), "{err:?}");
    assert!(err.to_string().contains("response.sse"), "{err}");
    let missing = Script::from_recordings(dir.join("nope")).unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A provider of the user's own (here an OpenAI-compatible gateway) names itself with
/// `ProviderKind::Custom`, without claiming a built-in kind: the client's errors say its name.
#[tokio::test]
async fn a_custom_provider_is_named_in_errors() {
    use toolwire::ApiError;
    use toolwire::provider::ProviderInfo;
    use toolwire::providers::openai::{
        Dialect, OPENAI_COMPATIBLE, OPENAI_RESPONSE, OpenAi, OpenAiResponder,
    };

    static ACME: Dialect = OPENAI_COMPATIBLE.with_info(ProviderInfo::new(
        ProviderKind::Custom("acme"),
        "https://llm.acme.example/v1",
    ));
    let acme = ProviderKind::Custom("acme");
    let mut refusal = ApiError::new(acme, Some(400), "model not found");
    refusal.code = Some("model_not_found".into());
    let server = MockServer::start_with(
        Box::new(OpenAiResponder::new(&ACME, &OPENAI_RESPONSE)),
        Script::new().then(MockReply::Error(refusal)),
    )
    .await
    .unwrap();
    let client = Client::builder_with(Box::new(OpenAi::with_dialect(&ACME)))
        .base_url(server.url())
        .api_key("k")
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(err.provider(), Some(acme));
    assert!(err.to_string().contains("acme"), "{err}");
    assert_eq!(err.api().unwrap().provider.name(), "acme");
    assert_eq!(serde_json::to_value(acme).unwrap(), json!("acme"));
    // A custom kind has no built-in value to fall back on.
    assert!(
        toolwire::provider_for(acme)
            .unwrap_err()
            .to_string()
            .contains("acme")
    );
}

/// A scripted reply without usage gets the mock's estimate on every wire, as a body and as a
/// stream; `without_usage` sends none.
#[tokio::test]
async fn the_mock_reports_usage_a_script_left_out() {
    use toolwire::mock::estimate_usage;

    for kind in ProviderKind::ALL {
        let script = Script::new()
            .then(MockReply::text("Hello."))
            .then(MockReply::text("Hello."))
            .then(MockReply::text("Hello.").without_usage());
        let server = MockServer::start(kind, script).await.unwrap();
        let client = Client::builder(kind)
            .base_url(server.url())
            .api_key("k")
            .build()
            .unwrap();
        let whole = client.chat(&request()).await.unwrap();
        let sent = &server.requests()[0].body;
        let expected = estimate_usage(sent.to_string().chars().count(), &text_reply());
        assert_eq!(whole.usage, Some(expected), "{kind}");
        let stream = client.stream(&request()).await.unwrap();
        let streamed = stream.finish().await.unwrap();
        assert!(
            streamed.usage.is_some_and(|u| u.output_tokens == 2),
            "{kind}"
        );
        let none = client.chat(&request()).await.unwrap();
        // Anthropic's message always has a usage object: zeros, not nothing.
        assert!(
            none.usage
                .is_none_or(|u| u.input_tokens == 0 && u.output_tokens == 0),
            "{kind}: {:?}",
            none.usage
        );
    }
}

#[test]
fn usage_estimates_are_a_token_per_four_characters() {
    use toolwire::ToolCall;
    use toolwire::mock::estimate_usage;
    let u = estimate_usage(401, &text_reply());
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.reasoning_tokens),
        (101, 2, None)
    );
    let r = ChatResponse::default()
        .with_reasoning("x".repeat(9))
        .with_tool_calls([ToolCall::new("c1", "clock", "{}")]);
    let u = estimate_usage(0, &r);
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.reasoning_tokens),
        (1, 4, Some(3))
    );
}
