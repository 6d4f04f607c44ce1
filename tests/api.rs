//! The public API from outside the crate: every struct a user builds is built through its
//! constructor and setters (struct literals are refused: the structs are `#[non_exhaustive]`),
//! and serializes exactly as the struct literal did before (the expected texts were printed from
//! those literals), key order included.

use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use toolwire::client::{Limits, RetryPolicy, Timeouts};
use toolwire::provider::{Auth, HttpRequest, NameMap, ProviderInfo, ProviderKind};
use toolwire::providers::openai::{Dialect, OPENAI, OPENAI_COMPATIBLE, OpenAi};
use toolwire::realtime::agent::CallRateGuard;
use toolwire::realtime::replay::{Direction, SessionLine};
use toolwire::realtime::{OPENAI_REALTIME, RealtimeDialect, SessionConfig};
use toolwire::tools::ToolInput;
use toolwire::{
    ApiError, ArgumentsError, ArgumentsErrorKind, AssistantMessage, ChatRequest, ChatResponse,
    FinishReason, Message, SchemaMode, ToolCall, ToolChoice, ToolDefinition, ToolResult, Usage,
};

/// The JSON text of `value`, keys in serialization order.
fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap()
}

const DEF: &str = r#"{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}"#;
const CALL: &str = r#"{"id":"call_1","name":"get_weather","raw_arguments":"{\"city\":\"Paris\"}","arguments":{"city":"Paris"},"error":null,"thought_signature":"c2ln"}"#;
const USAGE: &str = r#"{"input_tokens":12,"output_tokens":7,"reasoning_tokens":3}"#;

fn def() -> ToolDefinition {
    ToolDefinition::new("get_weather", "Weather")
        .unwrap()
        .with_parameters(json!({"type": "object", "properties": {"city": {"type": "string"}}}))
        .unwrap()
        .with_strict(true)
}

fn call() -> ToolCall {
    ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#)
        .with_extra("thought_signature", json!("c2ln"))
}

fn usage() -> Usage {
    Usage::new(12, 7).with_reasoning_tokens(3)
}

#[test]
fn definitions_calls_and_usage() {
    assert_eq!(json_text(&def()), DEF);
    assert_eq!(json_text(&call()), CALL);
    assert_eq!(json_text(&usage()), USAGE);
    assert_eq!(
        json_text(&Usage::new(1, 2)),
        r#"{"input_tokens":1,"output_tokens":2}"#
    );
    let error = ArgumentsError::new(ArgumentsErrorKind::Truncated, "EOF at 1:9");
    assert_eq!(
        json_text(&error),
        r#"{"kind":"truncated","message":"EOF at 1:9"}"#
    );
}

#[test]
fn request_with_every_setting() {
    let request = ChatRequest::new("m", vec![Message::system("Be brief."), Message::user("hi")])
        .with_tools([def()])
        .with_tool_choice(ToolChoice::Tool("get_weather".into()))
        .with_parallel_tool_calls(false)
        .with_max_tokens(256)
        .with_temperature(0.5)
        .with_thinking(true)
        .with_schema_mode(SchemaMode::JsonSchema)
        .with_extra_body("user", json!("u1"));
    let expected = format!(
        r#"{{"model":"m","messages":[{{"role":"system","content":"Be brief."}},{{"role":"user","content":"hi"}}],"tools":[{DEF}],"tool_choice":{{"name":"get_weather"}},"parallel_tool_calls":false,"max_tokens":256,"temperature":0.5,"thinking":true,"schema_mode":"json_schema","extra_body":{{"user":"u1"}}}}"#
    );
    assert_eq!(json_text(&request), expected);
    // And it reads back as the same value.
    let back: ChatRequest = serde_json::from_str(&expected).unwrap();
    assert_eq!(back, request);
}

#[test]
fn response_and_assistant_message() {
    let response = ChatResponse::default()
        .with_text("Checking.")
        .with_reasoning("Think.")
        .with_tool_calls([call()])
        .with_finish_reason(FinishReason::ToolCalls)
        .with_raw_finish_reason("tool_calls")
        .with_usage(usage())
        .with_extra("finish_message", json!("done"));
    assert_eq!(
        json_text(&response),
        format!(
            r#"{{"text":"Checking.","reasoning":"Think.","tool_calls":[{CALL}],"finish_reason":"tool_calls","raw_finish_reason":"tool_calls","usage":{USAGE},"finish_message":"done"}}"#
        )
    );
    let message = AssistantMessage::default()
        .with_content("Checking.")
        .with_reasoning("Think.")
        .with_tool_calls([call()])
        .with_extra("reasoning_signature", json!("cmVh"));
    assert_eq!(
        json_text(&Message::Assistant(message)),
        format!(
            r#"{{"role":"assistant","content":"Checking.","reasoning":"Think.","tool_calls":[{CALL}],"reasoning_signature":"cmVh"}}"#
        )
    );
}

#[test]
fn tool_results() {
    let ok = r#"{"call_id":"call_1","name":"get_weather","output":{"temp_c":21},"is_error":false,"error":null}"#;
    let failed = r#"{"call_id":"call_1","name":"get_weather","output":{"detail":"timeout"},"is_error":true,"error":"upstream timed out"}"#;
    let by_id = ToolResult::new("call_1", "get_weather", json!({"temp_c": 21}));
    assert_eq!(json_text(&by_id), ok);
    assert_eq!(
        json_text(&ToolResult::ok(&call(), json!({"temp_c": 21}))),
        ok
    );
    let error = ToolResult::new("call_1", "get_weather", json!({"detail": "timeout"}))
        .with_error("upstream timed out");
    assert_eq!(json_text(&error), failed);
}

#[test]
fn realtime_session_config_and_recorded_lines() {
    let config = SessionConfig::new("gpt-realtime", vec![def()])
        .with_instructions("Be brief.")
        .with_tool_choice(ToolChoice::Required)
        .with_modalities(["text"])
        .with_turn_detection(json!({"type": "server_vad"}))
        .with_extra("voice", json!("alloy"));
    assert_eq!(
        json_text(&config),
        format!(
            r#"{{"model":"gpt-realtime","instructions":"Be brief.","tools":[{DEF}],"tool_choice":"required","modalities":["text"],"turn_detection":{{"type":"server_vad"}},"extra":{{"voice":"alloy"}}}}"#
        )
    );
    let close = SessionLine::close(Direction::Server, Some(1000), "bye");
    assert_eq!(
        json_text(&close),
        r#"{"dir":"server","close":{"code":1000,"reason":"bye"}}"#
    );
}

/// A custom dialect is still a constant, derived from a built-in one.
static GATEWAY: Dialect = OPENAI_COMPATIBLE
    .with_info(
        OPENAI_COMPATIBLE
            .info
            .with_base_url("https://gateway.example/v1")
            .with_key_vars(&["GATEWAY_KEY"])
            .with_auth(Auth::Header("x-api-key")),
    )
    .with_path("/v2/chat")
    .with_stream_usage(false);

static QUIET_REALTIME: RealtimeDialect = OPENAI_REALTIME
    .with_url("wss://realtime.example/v1")
    .with_speech_interrupts(false);

#[test]
fn dialects_derive_from_a_base_constant() {
    assert_eq!(GATEWAY.info.kind, ProviderKind::OpenAi);
    assert_eq!(GATEWAY.info.base_url, "https://gateway.example/v1");
    assert_eq!(GATEWAY.info.key_vars, ["GATEWAY_KEY"]);
    assert_eq!(GATEWAY.info.auth, Auth::Header("x-api-key"));
    assert_eq!(GATEWAY.path, "/v2/chat");
    assert!(!GATEWAY.stream_usage);
    // What was not set is the base's.
    assert_eq!(GATEWAY.max_tokens_field, OPENAI_COMPATIBLE.max_tokens_field);
    assert_eq!(GATEWAY.echo_reasoning, OPENAI_COMPATIBLE.echo_reasoning);
    assert_ne!(GATEWAY.max_tokens_field, OPENAI.max_tokens_field);
    let request = ChatRequest::new("m", vec![Message::user("hi")]);
    let http = toolwire::Provider::encode(&OpenAi::with_dialect(&GATEWAY), &request, true).unwrap();
    assert_eq!(http.path, "/v2/chat");
    assert_eq!(http.body.get("stream_options"), None);

    assert_eq!(QUIET_REALTIME.url, "wss://realtime.example/v1");
    assert!(!QUIET_REALTIME.speech_interrupts);
    assert_eq!(QUIET_REALTIME.kind, OPENAI_REALTIME.kind);

    const INFO: ProviderInfo = ProviderInfo::new(ProviderKind::OpenAi, "https://x.example/v1")
        .with_key_vars(&["X_KEY"])
        .with_capabilities("tools");
    assert_eq!(INFO.auth, Auth::Bearer);
    assert_eq!(INFO.capabilities, "tools");
}

#[test]
fn settings_and_provider_values() {
    let limits = Limits::default()
        .with_max_body_bytes(1)
        .with_max_event_bytes(2)
        .with_max_argument_bytes(3)
        .with_max_error_body_bytes(4);
    assert_eq!(
        (
            limits.max_body_bytes,
            limits.max_event_bytes,
            limits.max_argument_bytes,
            limits.max_error_body_bytes
        ),
        (1, 2, 3, 4)
    );
    let timeouts = Timeouts::default()
        .with_connect(Duration::from_secs(1))
        .with_first_byte(Duration::from_secs(2));
    assert_eq!(timeouts.connect, Duration::from_secs(1));
    assert_eq!(timeouts.first_byte, Duration::from_secs(2));
    let retry = RetryPolicy::none().with_max_retries(3).with_jitter(0.0);
    assert_eq!((retry.max_retries, retry.jitter), (3, 0.0));

    let http = HttpRequest::new("/chat", json!({"model": "m"}))
        .with_header("x-trace", "1")
        .with_names(NameMap::default());
    assert_eq!(http.path, "/chat");
    assert_eq!(http.headers, [("x-trace".to_owned(), "1".to_owned())]);
    assert_eq!(http.body, json!({"model": "m"}));
    assert!(http.names.is_empty());

    let error = ApiError::new(ProviderKind::OpenAi, Some(429), "slow down")
        .with_code("rate_limit_exceeded")
        .with_retry_after(Duration::from_secs(2))
        .with_body("{}")
        .with_partial(ChatResponse::default().with_text("Let me"));
    assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(error.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(error.body, "{}");
    assert_eq!(error.partial.unwrap().text.as_deref(), Some("Let me"));

    let guard = CallRateGuard::new(2, Duration::from_secs(1));
    assert_eq!((guard.max_calls, guard.window), (2, Duration::from_secs(1)));

    let input = ToolInput::new("call_1", "get_weather", json!({"city": "Paris"}));
    assert_eq!(input.raw_arguments, r#"{"city":"Paris"}"#);
    assert_eq!(input.arguments["city"], "Paris");
}
