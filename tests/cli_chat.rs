//! `toolwire chat` end to end against the mock provider: a tool round, a provider error, bad
//! usage, and recording.
#![cfg(feature = "mock")]

use std::process::{Command, Output};

use serde_json::json;
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::{ApiError, ProviderKind, ToolCall};

const KEY: &str = "sk-test-SECRET-1234";

/// Runs the binary off the async runtime so the mock keeps serving meanwhile.
async fn toolwire(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args(&args)
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn args(url: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["chat", "--provider", "openai", "--model", "tw-model"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    v.extend(["--base-url".to_owned(), url.to_owned()]);
    v.extend(extra.iter().map(|s| (*s).to_owned()));
    v
}

#[tokio::test]
async fn chat_runs_a_tool_round_and_streams_the_answer() {
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_tw_1",
            "calculator",
            r#"{"expression":"6*7"}"#,
        )]))
        .then(MockReply::text("The answer is 42."));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let out = toolwire(args(&server.url(), &["What", "is", "6*7?"])).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "The answer is 42.");
    assert!(stderr.contains("[call] calculator"), "{stderr}");
    assert!(
        stderr.contains("[result] calculator = {\"result\":42}"),
        "{stderr}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["messages"][0]["content"], "What is 6*7?");
    let names: Vec<_> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("clock"), json!("calculator")]);
    let history = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(history[1]["tool_calls"][0]["id"], "call_tw_1");
    assert_eq!(history[2]["role"], "tool");
    assert_eq!(history[2]["tool_call_id"], "call_tw_1");
    assert_eq!(history[2]["content"], r#"{"result":42}"#);
}

#[tokio::test]
async fn chat_reports_a_provider_error_on_one_line() {
    let mut e = ApiError::new(
        ProviderKind::OpenAi,
        Some(401),
        format!("Incorrect API key provided: {KEY}"),
    );
    e.code = Some("invalid_api_key".into());
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(e))
        .await
        .unwrap();
    let out = toolwire(args(&server.url(), &["hi"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("invalid_api_key"),
        "{stderr}"
    );
    assert!(!stderr.contains("SECRET"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
}

#[tokio::test]
async fn chat_bad_usage_exits_2() {
    let out = toolwire(vec!["chat".into(), "--provider".into(), "openai".into()]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = toolwire(vec![
        "chat".into(),
        "--provider".into(),
        "openai".into(),
        "--base-url".into(),
        "http://127.0.0.1:9".into(),
        "hi".into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));
}

#[tokio::test]
async fn chat_records_fixture_cases() {
    let dir = std::env::temp_dir().join(format!("toolwire-cli-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_tw_2",
            "clock",
            "{}",
        )]))
        .then(MockReply::text("It is late."));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let record = dir.display().to_string();
    let out = toolwire(args(&server.url(), &["--record", &record, "time?"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cases: Vec<_> = std::fs::read_dir(dir.join("openai")).unwrap().collect();
    assert_eq!(cases.len(), 2);
    let reports =
        toolwire::conformance::run_dir(&dir, None, toolwire::conformance::Mode::Check).unwrap();
    assert!(reports.iter().all(|r| r.passed()), "{reports:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn chat_ends_quietly_when_stdout_is_closed() {
    // The reader of standard output is gone before the answer streams: the command stops at
    // its first write with status 0, no panic, and runs no tool round for nobody.
    let first = toolwire::ChatResponse::default()
        .with_text("Nobody reads this.")
        .with_tool_calls([ToolCall::new("call_tw_3", "clock", "{}")])
        .with_finish_reason(toolwire::FinishReason::ToolCalls);
    let script = Script::new()
        .then(MockReply::from(first).head_delay(std::time::Duration::from_millis(300)))
        .then(MockReply::text("Nor this."));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let argv = args(&server.url(), &["hi"]);
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args(&argv)
            .env("OPENAI_API_KEY", KEY)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closing the read end: every write to standard output now fails with a broken pipe.
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn chat_refuses_an_unwritable_record_folder() {
    let dir = std::env::temp_dir().join(format!("toolwire-cli-unwritable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file"), "not a folder").unwrap();
    let server = MockServer::start(ProviderKind::OpenAi, Script::new())
        .await
        .unwrap();
    let record = dir.join("file").join("cases").display().to_string();
    let out = toolwire(args(&server.url(), &["--record", &record, "hi"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot record"), "{stderr}");
    assert!(
        server.requests().is_empty(),
        "refused before anything is sent"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn chat_on_the_responses_wire_records_cases_that_check() {
    let dir = std::env::temp_dir().join(format!(
        "toolwire-cli-record-responses-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_tw_r1",
            "clock",
            "{}",
        )]))
        .then(MockReply::text("It is late."));
    let server = MockServer::start(ProviderKind::OpenAiResponses, script)
        .await
        .unwrap();
    let record = dir.display().to_string();
    let mut argv = args(&server.url(), &["--record", &record, "time?"]);
    argv[2] = "openai-responses".into();
    let out = toolwire(argv).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "It is late.");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let input = requests[1].body["input"].as_array().unwrap();
    let result = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(result["call_id"], "call_tw_r1");
    let cases: Vec<_> = std::fs::read_dir(dir.join("openai-responses"))
        .unwrap()
        .collect();
    assert_eq!(cases.len(), 2);
    let reports =
        toolwire::conformance::run_dir(&dir, None, toolwire::conformance::Mode::Check).unwrap();
    assert!(reports.iter().all(|r| r.passed()), "{reports:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chat_without_a_key_tells_a_cli_user_what_to_do() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["chat", "--provider", "gemini", "hi"])
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("GEMINI_API_KEY")
            && stderr.contains("toolwire demo")
            && stderr.contains("--base-url")
            && !stderr.contains("ClientBuilder"),
        "{stderr}"
    );
}

#[tokio::test]
async fn chat_on_bedrock_signs_with_sigv4_when_aws_credentials_are_set_and_no_bearer_key() {
    let server = MockServer::start(
        ProviderKind::Bedrock,
        Script::new().then(MockReply::text("signed")),
    )
    .await
    .unwrap();
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args([
                "chat",
                "--provider",
                "bedrock",
                "--model",
                "tw-model",
                "--base-url",
            ])
            .args([url.as_str(), "hi"])
            .env_remove("AWS_BEARER_TOKEN_BEDROCK")
            .env_remove("AWS_SESSION_TOKEN")
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env(
                "AWS_SECRET_ACCESS_KEY",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            )
            .env("AWS_REGION", "eu-west-1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "signed");
    let request = &server.requests()[0];
    let auth = request.header("authorization").unwrap_or_default();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/eu-west-1/bedrock/aws4_request"),
        "{auth}"
    );
    assert!(request.header("x-amz-date").is_some());
}

/// `toolwire chat --provider gemini-interactions` over loopback: the key in `x-goog-api-key`,
/// `POST /v1beta/interactions` streamed and stateless, the call sent back with its result by
/// id, and the recorded cases check.
#[tokio::test]
async fn chat_on_the_interactions_wire_runs_a_tool_round() {
    let dir = std::env::temp_dir().join(format!(
        "toolwire-cli-record-interactions-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "fc_tw_i1",
            "calculator",
            r#"{"expression":"6*7"}"#,
        )]))
        .then(MockReply::text("The answer is 42."));
    let server = MockServer::start(ProviderKind::GeminiInteractions, script)
        .await
        .unwrap();
    let record = dir.display().to_string();
    let argv: Vec<String> = [
        "chat",
        "--provider",
        "gemini-interactions",
        "--model",
        "gemini-3-flash-preview",
        "--base-url",
        &server.url(),
        "--record",
        &record,
        "What is 6*7?",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args(&argv)
            .env_remove("GOOGLE_API_KEY")
            .env("GEMINI_API_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The answer is 42."
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1beta/interactions");
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
    assert_eq!(requests[0].body["store"], false);
    assert_eq!(requests[0].body["model"], "gemini-3-flash-preview");
    let input = requests[1].body["input"].as_array().unwrap();
    let call = input.iter().find(|s| s["type"] == "function_call").unwrap();
    assert_eq!(call["id"], "fc_tw_i1");
    assert_eq!(call["arguments"], json!({"expression": "6*7"}));
    let result = input
        .iter()
        .find(|s| s["type"] == "function_result")
        .unwrap();
    assert_eq!(result["call_id"], "fc_tw_i1");
    assert_eq!(result["result"], r#"{"result":42}"#);
    let reports =
        toolwire::conformance::run_dir(&dir, None, toolwire::conformance::Mode::Check).unwrap();
    assert!(!reports.is_empty());
    assert!(reports.iter().all(|r| r.passed()), "{reports:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
#[tokio::test]
async fn chat_sends_the_effort_on_every_turn() {
    let script = Script::new()
        .then(MockReply::tool_calls([ToolCall::new(
            "call_tw_1",
            "calculator",
            r#"{"expression":"6*7"}"#,
        )]))
        .then(MockReply::text("The answer is 42."));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let out = toolwire(args(&server.url(), &["--effort", "low", "6*7?"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.body["reasoning_effort"], "low", "{}", r.body);
    }
}
