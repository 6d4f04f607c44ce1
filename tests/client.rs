//! The client over the mock provider: every provider that can encode responses, streamed and
//! not, odd chunking, retries, timeouts, broken streams, limits, key hygiene and recording.
//!
//! Time limits here are small (a few hundred milliseconds) and only ever bound a wait from
//! above; the one lower-bound check (Retry-After honoured) cannot flake.
#![cfg(feature = "mock")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire::client::{Client, Limits, RetryPolicy, Timeouts};
use toolwire::conformance;
use toolwire::mock::{MockReply, MockServer, Respond, Script, Shape};
use toolwire::provider::{Auth, ProviderInfo};
use toolwire::providers::openai::{Dialect, OPENAI, OpenAi, OpenAiResponder};
use toolwire::{
    ApiError, ArgumentsErrorKind, ChatRequest, ChatResponse, Error, FinishReason, Message,
    Provider, ProviderKind, StreamEvent, TimeoutPhase, ToolCall, ToolDefinition, Usage,
};

const KEY: &str = "sk-test-SECRET-1234";

fn request() -> ChatRequest {
    let weather = ToolDefinition::new("get_weather", "Current weather in a city")
        .unwrap()
        .with_parameters(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }))
        .unwrap();
    let clock = ToolDefinition::new("clock", "The current time").unwrap();
    ChatRequest::new(
        "tw-test-model",
        vec![Message::user("Weather in Paris and Beijing?")],
    )
    .with_tools([weather, clock])
}

fn text_reply() -> ChatResponse {
    ChatResponse::default()
        .with_text("It is 22 °C in 北京 and sunny.")
        .with_finish_reason(FinishReason::Stop)
        // The mock provider sends the raw value as scripted, and it decodes back verbatim.
        .with_raw_finish_reason("stop")
        .with_usage(Usage::new(21, 9))
        // The usage object the mock writes for those counts, as it decodes back.
        .with_raw_usage(json!({"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}))
}

fn parallel_reply() -> ChatResponse {
    ChatResponse::default()
        .with_text("Checking both.")
        .with_tool_calls([
            ToolCall::new("call_tw_a", "get_weather", r#"{"city":"Paris"}"#),
            ToolCall::new("call_tw_b", "get_weather", r#"{"city":"北京"}"#),
        ])
        .with_finish_reason(FinishReason::ToolCalls)
        .with_raw_finish_reason("tool_calls")
        .with_usage(Usage::new(40, 18))
        .with_raw_usage(json!({"prompt_tokens": 40, "completion_tokens": 18, "total_tokens": 58}))
}

fn zero_arg_reply() -> ChatResponse {
    ChatResponse::default()
        .with_tool_calls([ToolCall::new("call_tw_c", "clock", "")])
        .with_finish_reason(FinishReason::ToolCalls)
        .with_raw_finish_reason("tool_calls")
}

/// A byte offset in the middle of the chunk carrying the second argument fragment of call 1,
/// so the call has started but its arguments are incomplete.
fn inside_second_fragment(reply: &ChatResponse) -> usize {
    let sse = String::from_utf8(
        OpenAiResponder::default()
            .encode_response(reply, true)
            .unwrap(),
    )
    .unwrap();
    let first = sse
        .find(r#""index":1,"function":{"arguments":"#)
        .expect("call 1 has argument fragments");
    let next = first + sse[first..].find("data: ").unwrap();
    next + 20
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy::default()
        .with_base_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_secs(2))
        .with_jitter(0.0)
}

fn short_timeouts() -> Timeouts {
    Timeouts::default()
        .with_first_byte(Duration::from_millis(300))
        .with_idle(Duration::from_millis(200))
        .with_total(Duration::from_secs(10))
}

fn client(kind: ProviderKind, server: &MockServer) -> Client {
    Client::builder(kind)
        .base_url(server.url())
        .api_key(KEY)
        .retry(fast_retry())
        .timeouts(short_timeouts())
        .build()
        .unwrap()
}

async fn openai(script: Script) -> (MockServer, Client) {
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = client(ProviderKind::OpenAi, &server);
    (server, client)
}

/// Every event, then the final result.
async fn drain(
    client: &Client,
    req: &ChatRequest,
) -> (Vec<StreamEvent>, Result<ChatResponse, Error>) {
    let mut stream = match client.stream(req).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Err(e)),
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(e) => return (events, Err(e)),
        }
    }
    let response = stream
        .response()
        .cloned()
        .expect("a clean end has a response");
    assert_eq!(stream.finish().await.unwrap(), response);
    (events, Ok(response))
}

fn streamed_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// What any provider must keep: text, call names and parsed arguments, finish reason.
fn essentials(r: &ChatResponse) -> Value {
    let calls: Vec<Value> = r
        .tool_calls
        .iter()
        .map(|c| json!([c.name, c.arguments]))
        .collect();
    json!({"text": r.text, "calls": calls, "finish": r.finish_reason.as_str()})
}

#[tokio::test]
async fn every_provider_streams_and_answers_over_the_mock() {
    let replies = [text_reply(), parallel_reply(), zero_arg_reply()];
    let mut covered = Vec::new();
    for kind in ProviderKind::ALL {
        let script: Script = replies
            .iter()
            .flat_map(|r| [MockReply::from(r.clone()), MockReply::from(r.clone())])
            .collect();
        let server = match MockServer::start(kind, script).await {
            Ok(s) => s,
            Err(Error::Unsupported { .. }) => continue,
            Err(e) => panic!("{kind}: {e}"),
        };
        covered.push(kind);
        let client = client(kind, &server);
        for expected in &replies {
            let got = client.chat(&request()).await.unwrap();
            assert_eq!(essentials(&got), essentials(expected), "{kind} body");

            let (events, got) = drain(&client, &request()).await;
            let got = got.unwrap();
            assert_eq!(essentials(&got), essentials(expected), "{kind} stream");
            assert_eq!(streamed_text(&events), got.text.clone().unwrap_or_default());
            let completed = events
                .iter()
                .filter(|e| matches!(e, StreamEvent::ToolCallComplete { .. }))
                .count();
            assert_eq!(completed, expected.tool_calls.len(), "{kind}");
            let finish = events
                .iter()
                .position(|e| matches!(e, StreamEvent::Finish { .. }))
                .expect("a Finish event");
            assert!(
                events[finish..]
                    .iter()
                    .all(|e| matches!(e, StreamEvent::Finish { .. } | StreamEvent::Usage { .. }))
            );
        }
        let requests = server.requests();
        assert_eq!(requests.len(), 2 * replies.len());
        // A stream asks for the wire's framing (one `accept`, the provider's own when it has
        // one: Bedrock's binary event stream).
        let accept = match toolwire::provider_for(kind).unwrap().framing() {
            toolwire::provider::Framing::EventStream => "application/vnd.amazon.eventstream",
            _ => "text/event-stream",
        };
        assert_eq!(requests[1].header("accept"), Some(accept), "{kind}");
        // The model rides in the body, or in the path (Gemini: /v1beta/models/{model}:…,
        // Bedrock: /model/{model}/converse).
        assert!(
            requests[0].body["model"] == "tw-test-model"
                || requests[0].path.contains("/models/tw-test-model:")
                || requests[0].path.starts_with("/model/tw-test-model/"),
            "{kind}: model neither in the body nor in the path {}",
            requests[0].path
        );
    }
    assert!(covered.contains(&ProviderKind::OpenAi), "{covered:?}");
}

#[tokio::test]
async fn openai_answers_are_exact_over_the_wire() {
    let replies = [text_reply(), parallel_reply(), zero_arg_reply()];
    let script: Script = replies
        .iter()
        // A reply scripted without usage is sent without (the mock would estimate it).
        .flat_map(|r| {
            [
                MockReply::from(r.clone()).without_usage(),
                MockReply::from(r.clone()).without_usage(),
            ]
        })
        .collect();
    let (server, client) = openai(script).await;
    for expected in &replies {
        assert_eq!(&client.chat(&request()).await.unwrap(), expected);
        assert_eq!(&drain(&client, &request()).await.1.unwrap(), expected);
    }
    let first = &server.requests()[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some("Bearer sk-test-SECRET-1234")
    );
    assert_eq!(first.body["tools"][0]["function"]["name"], "get_weather");
}

#[tokio::test]
async fn chunking_down_to_one_byte_gives_the_same_answer() {
    let expected = parallel_reply();
    let sizes = [1, 2, 3, 7, 64];
    let script: Script = sizes
        .iter()
        .flat_map(|&n| {
            [
                MockReply::from(expected.clone()).chunk_size(n),
                MockReply::from(expected.clone()).chunk_size(n),
            ]
        })
        .collect();
    let (_server, client) = openai(script).await;
    for n in sizes {
        assert_eq!(
            client.chat(&request()).await.unwrap(),
            expected,
            "body, {n}-byte chunks"
        );
        let (events, got) = drain(&client, &request()).await;
        assert_eq!(got.unwrap(), expected, "stream, {n}-byte chunks");
        let fragments: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { index: 1, fragment } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(fragments, r#"{"city":"北京"}"#);
    }
}

#[tokio::test]
async fn events_arrive_before_the_body_ends() {
    // The stream stalls after the role chunk and the first text fragments; those must reach
    // the caller before the idle timeout, which proves the body is not buffered.
    let reply = parallel_reply();
    let sse = OpenAiResponder::default()
        .encode_response(&reply, true)
        .unwrap();
    let text = String::from_utf8(sse).unwrap();
    let cut = text.find("\"tool_calls\"").unwrap();
    let script = Script::new().then(MockReply::from(reply).stall_after(cut));
    let (_server, client) = openai(script).await;
    let mut stream = client.stream(&request()).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, StreamEvent::TextDelta { .. }), "{first:?}");
    let mut rest = Vec::new();
    let err = loop {
        match stream.next().await {
            Some(Ok(e)) => rest.push(e),
            Some(Err(e)) => break e,
            None => panic!("a stalled stream cannot end cleanly"),
        }
    };
    assert!(
        matches!(
            err,
            Error::Timeout {
                phase: TimeoutPhase::Idle,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.partial().unwrap().text.as_deref(),
        Some("Checking both.")
    );
    assert!(stream.response().is_none());
    assert!(stream.next().await.is_none(), "an error ends the stream");
}

#[tokio::test]
async fn stalled_stream_mid_call_is_an_idle_timeout_with_truncated_calls() {
    let reply = parallel_reply();
    let cut = inside_second_fragment(&reply);
    let script = Script::new().then(MockReply::from(reply).stall_after(cut));
    let (server, client) = openai(script).await;
    let (events, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                phase: TimeoutPhase::Idle,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
    );
    let partial = err.partial().unwrap();
    assert_eq!(partial.finish_reason, FinishReason::Error);
    let last = partial.tool_calls.last().unwrap();
    assert_eq!(
        last.error.as_ref().unwrap().kind,
        ArgumentsErrorKind::Truncated
    );
    assert!(!last.is_complete());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn no_answer_is_a_first_byte_timeout_and_is_retried() {
    let script = Script::new().then(MockReply::Hang).repeat_last();
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .retry(fast_retry().with_max_retries(1))
        .timeouts(short_timeouts().with_first_byte(Duration::from_millis(150)))
        .build()
        .unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn total_timeout_bounds_a_slow_stream() {
    let reply = MockReply::from(text_reply())
        .chunk_size(8)
        .delay(Duration::from_millis(40));
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .timeouts(
            Timeouts::default()
                .with_idle(Duration::from_secs(2))
                .with_total(Duration::from_millis(250)),
        )
        .build()
        .unwrap();
    let (_, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                phase: TimeoutPhase::Total,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn rate_limit_then_success_honours_retry_after() {
    let mut limited = ApiError::new(ProviderKind::OpenAi, Some(429), "Rate limit reached");
    limited.code = Some("rate_limit_exceeded".into());
    limited.retry_after = Some(Duration::from_millis(150));
    let script = Script::new().then(limited).then(text_reply());
    let (server, client) = openai(script).await;
    let started = Instant::now();
    let got = client.chat(&request()).await.unwrap();
    // Base delay is 1 ms: only the server's wait explains a longer pause.
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(got, text_reply());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn retry_after_beyond_max_delay_is_returned_at_once() {
    let mut limited = ApiError::new(ProviderKind::OpenAi, Some(429), "Slow down");
    limited.retry_after = Some(Duration::from_secs(30));
    let (server, client) = openai(Script::new().then(limited).then(text_reply())).await;
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(
        err.api().unwrap().retry_after,
        Some(Duration::from_secs(30))
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let mut e = ApiError::new(ProviderKind::OpenAi, Some(500), "The server had an error");
    e.code = Some("server_error".into());
    let (server, client) = openai(Script::new().then(e).repeat_last()).await;
    let (_, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.status, Some(500));
    assert_eq!(api.code.as_deref(), Some("server_error"));
    assert_eq!(api.message, "The server had an error");
    assert!(api.body.contains("server_error"));
    assert!(err.is_retryable());
    assert_eq!(err.provider(), Some(ProviderKind::OpenAi));
    assert_eq!(server.requests().len(), 3, "first try + 2 retries");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let mut e = ApiError::new(
        ProviderKind::OpenAi,
        Some(400),
        "Unsupported parameter: 'max_tokens'",
    );
    e.code = Some("unsupported_parameter".into());
    let (server, client) = openai(Script::new().then(e).repeat_last()).await;
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(
        err.api().unwrap().code.as_deref(),
        Some("unsupported_parameter")
    );
    assert!(!err.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropped_connection_mid_stream_is_a_broken_stream() {
    let reply = parallel_reply();
    let cut = inside_second_fragment(&reply);
    let script = Script::new()
        .then(MockReply::from(reply).drop_after(cut))
        .then(text_reply());
    let (server, client) = openai(script).await;
    let (events, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    assert!(!err.is_retryable());
    assert!(events.len() > 3, "events before the drop were delivered");
    let partial = err.partial().unwrap();
    assert_eq!(partial.tool_calls.len(), 2);
    assert!(partial.tool_calls[1].raw_arguments.starts_with('{'));
    assert_eq!(
        partial.tool_calls[1].error.as_ref().unwrap().kind,
        ArgumentsErrorKind::Truncated
    );
    // Never resent after partial output: the second scripted reply is still unserved.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn dropped_connection_in_a_body_is_a_transport_error() {
    let script = Script::new().then(MockReply::from(parallel_reply()).drop_after(40));
    let (server, client) = openai(script).await;
    let err = client.chat(&request()).await.unwrap_err();
    assert!(
        matches!(err, Error::Transport { connect: false, .. }),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn error_event_mid_stream_keeps_the_partial() {
    let mut e = ApiError::new(ProviderKind::OpenAi, None, "The model is overloaded");
    e.code = Some("server_overloaded".into());
    e.partial = Some(Box::new(
        ChatResponse::default()
            .with_text("Let me check")
            .with_tool_calls([ToolCall::new("call_tw_d", "get_weather", r#"{"city":"Par"#)]),
    ));
    let (server, client) = openai(Script::new().then(e).then(text_reply())).await;
    let (events, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.code.as_deref(), Some("server_overloaded"));
    assert_eq!(api.status, None);
    assert_eq!(streamed_text(&events), "Let me check");
    let call = &err.partial().unwrap().tool_calls[0];
    assert_eq!(call.raw_arguments, r#"{"city":"Par"#);
    assert_eq!(
        call.error.as_ref().unwrap().kind,
        ArgumentsErrorKind::Truncated
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_without_its_terminal_signal_is_broken() {
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
               data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_tw_e\",\"function\":{\"name\":\"clock\",\"arguments\":\"{\"}}]}}]}\n\n";
    let (_server, client) = openai(Script::new().then(MockReply::raw_sse(sse))).await;
    let (events, result) = drain(&client, &request()).await;
    assert_eq!(streamed_text(&events), "Hi");
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    let call = &err.partial().unwrap().tool_calls[0];
    assert_eq!(
        call.error.as_ref().unwrap().kind,
        ArgumentsErrorKind::Truncated
    );
}

#[tokio::test]
async fn invalid_utf8_is_a_decode_error_naming_the_line() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n".to_vec();
    let (_server, client) = openai(
        Script::new()
            .then(MockReply::raw_sse(body.clone()))
            .then(MockReply::raw_sse(body).chunk_size(1)),
    )
    .await;
    for _ in 0..2 {
        let (events, result) = drain(&client, &request()).await;
        assert_eq!(streamed_text(&events), "ok");
        let err = result.unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err:?}");
        assert!(err.to_string().contains("line 3"), "{err}");
    }
}

#[tokio::test]
async fn garbage_is_a_decode_error() {
    let (_server, client) = openai(
        Script::new()
            .then(MockReply::raw_sse("data: {not json}\n\n"))
            .then(MockReply::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: b"{\"choices\": 7".to_vec(),
            }),
    )
    .await;
    let (_, result) = drain(&client, &request()).await;
    assert!(matches!(result, Err(Error::Decode { .. })), "{result:?}");
    let result = client.chat(&request()).await;
    assert!(matches!(result, Err(Error::Decode { .. })), "{result:?}");
}

#[tokio::test]
async fn oversized_bodies_and_arguments_are_refused() {
    let big = text_reply().with_text("x".repeat(4096));
    let long_call = ChatResponse::default()
        .with_tool_calls([ToolCall::new(
            "call_tw_f",
            "get_weather",
            format!(r#"{{"city":"{}"}}"#, "y".repeat(300)),
        )])
        .with_finish_reason(FinishReason::ToolCalls);
    let script = Script::new()
        .then(big.clone())
        .then(big)
        .then(long_call.clone())
        .then(long_call);
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let limited = |limits: Limits| {
        Client::builder(ProviderKind::OpenAi)
            .base_url(server.url())
            .api_key(KEY)
            .limits(limits)
            .build()
            .unwrap()
    };
    let client = limited(Limits::default().with_max_body_bytes(2048));
    let (_, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    assert!(err.to_string().contains("max_body_bytes"), "{err}");
    let err = client.chat(&request()).await.unwrap_err();
    assert!(err.to_string().contains("max_body_bytes"), "{err}");

    let client = limited(Limits::default().with_max_argument_bytes(128));
    let (_, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(err.to_string().contains("max_argument_bytes"), "{err}");
    let call = &err.partial().unwrap().tool_calls[0];
    assert!(
        call.raw_arguments.len() <= 128 + 5,
        "bounded: {}",
        call.raw_arguments.len()
    );
    assert!(!call.is_complete());
    let err = client.chat(&request()).await.unwrap_err();
    assert!(err.to_string().contains("max_argument_bytes"), "{err}");
}

#[tokio::test]
async fn oversized_sse_event_is_refused() {
    let line = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
        "z".repeat(600)
    );
    let server = MockServer::start(
        ProviderKind::OpenAi,
        Script::new().then(MockReply::raw_sse(line)),
    )
    .await
    .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .limits(Limits::default().with_max_event_bytes(256))
        .build()
        .unwrap();
    let (_, result) = drain(&client, &request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    assert!(err.to_string().contains("max_event_bytes"), "{err}");
}

#[tokio::test]
async fn json_answer_to_a_stream_request_is_decoded() {
    let script = Script::new().then(MockReply::from(parallel_reply()).stream(false));
    let (_server, client) = openai(script).await;
    let (events, result) = drain(&client, &request()).await;
    assert_eq!(result.unwrap(), parallel_reply());
    assert_eq!(streamed_text(&events), "Checking both.");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallComplete { .. }))
            .count(),
        2
    );
}

#[tokio::test]
async fn tool_names_are_restored() {
    // OpenAI names may not hold dots: the encoder sends `weather_get`, callers see `weather.get`.
    let tool = ToolDefinition::new("weather.get", "Weather").unwrap();
    let req = ChatRequest::new("m", vec![Message::user("hi")]).with_tools([tool]);
    let reply = MockReply::tool_calls([ToolCall::new("call_tw_g", "weather_get", "{}")]);
    let (server, client) = openai(Script::new().then(reply.clone()).then(reply)).await;
    let got = client.chat(&req).await.unwrap();
    assert_eq!(got.tool_calls[0].name, "weather.get");
    let (events, got) = drain(&client, &req).await;
    assert_eq!(got.unwrap().tool_calls[0].name, "weather.get");
    for e in &events {
        if let StreamEvent::ToolCallStarted { name, .. } = e {
            assert_eq!(name, "weather.get");
        }
    }
    assert_eq!(
        server.requests()[0].body["tools"][0]["function"]["name"],
        "weather_get"
    );
}

#[tokio::test]
async fn api_key_never_leaks() {
    // A server that echoes the key back in its error body.
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let script = Script::new()
        .then(MockReply::Raw {
            status: 401,
            content_type: "application/json".into(),
            body: echo.clone().into_bytes(),
        })
        .then(MockReply::raw_sse(format!("data: {echo}\n\n")))
        .then(MockReply::Hang);
    let (server, client) = openai(script).await;
    let impatient = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .retry(RetryPolicy::none())
        .timeouts(short_timeouts().with_first_byte(Duration::from_millis(100)))
        .build()
        .unwrap();
    let mut errors = vec![
        client.chat(&request()).await.unwrap_err(),
        drain(&client, &request()).await.1.unwrap_err(),
        impatient.chat(&request()).await.unwrap_err(),
    ];
    assert_eq!(errors[0].status(), Some(401));
    assert_eq!(
        errors[0].api().unwrap().code.as_deref(),
        Some("invalid_api_key")
    );
    assert!(matches!(errors[2], Error::Timeout { .. }));
    // The key did go out, in the header, to the server.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-test-SECRET-1234")
    );

    // A transport error: nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = Client::builder(ProviderKind::OpenAi)
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .api_key(KEY)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let refused = closed.chat(&request()).await.unwrap_err();
    assert!(
        matches!(refused, Error::Transport { connect: true, .. }),
        "{refused:?}"
    );
    assert!(refused.is_retryable());
    errors.push(refused);

    for e in &errors {
        for text in [
            format!("{e}"),
            format!("{e:?}"),
            format!("{:?}", e.partial()),
        ] {
            assert!(!text.contains(KEY) && !text.contains("SECRET"), "{text}");
        }
    }
    for text in [format!("{client:?}"), format!("{closed:?}")] {
        assert!(!text.contains("SECRET"), "{text}");
    }
    let builder = Client::builder(ProviderKind::OpenAi).api_key(KEY);
    assert!(!format!("{builder:?}").contains("SECRET"));
}

/// A provider like OpenAI but with Gemini-style header auth and its own key variable.
static HEADER_AUTH: Dialect = OPENAI.with_info(
    OPENAI
        .info
        .with_key_vars(&["TOOLWIRE_TEST_NEVER_SET_KEY"])
        .with_auth(Auth::Header("x-goog-api-key")),
);

#[tokio::test]
async fn header_auth_keeps_the_key_out_of_the_url() {
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(text_reply()))
        .await
        .unwrap();
    let client = Client::builder_with(Box::new(OpenAi::with_dialect(&HEADER_AUTH)))
        .base_url(server.url())
        .api_key(KEY)
        .build()
        .unwrap();
    client.chat(&request()).await.unwrap();
    let seen = &server.requests()[0];
    assert_eq!(seen.header("x-goog-api-key"), Some(KEY));
    assert_eq!(seen.header("authorization"), None);
    assert!(!seen.path.contains("SECRET"));
}

/// A custom provider whose auth header is spelled with capitals, as documentation often does.
static CAPITAL_HEADER: Dialect = OPENAI.with_info(OPENAI.info.with_auth(Auth::Header("X-Api-Key")));

/// A custom provider whose auth header name is not a header name.
static BAD_HEADER: Dialect = OPENAI.with_info(OPENAI.info.with_auth(Auth::Header("api key:")));

#[tokio::test]
async fn custom_auth_header_names_are_lowercased_or_refused() {
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(text_reply()))
        .await
        .unwrap();
    let client = Client::builder_with(Box::new(OpenAi::with_dialect(&CAPITAL_HEADER)))
        .base_url(server.url())
        .api_key(KEY)
        .build()
        .unwrap();
    client.chat(&request()).await.unwrap();
    assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));

    let err = Client::builder_with(Box::new(OpenAi::with_dialect(&BAD_HEADER)))
        .base_url(server.url())
        .api_key(KEY)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    assert!(err.to_string().contains("\"api key:\""), "{err}");
    assert!(!err.to_string().contains("SECRET"), "{err}");
}

#[tokio::test]
async fn short_keys_are_redacted_too() {
    let key = "k3y";
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {key}","code":"invalid_api_key"}}}}"#
    );
    let script = Script::new().then(MockReply::Raw {
        status: 401,
        content_type: "application/json".into(),
        body: echo.into_bytes(),
    });
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(key)
        .build()
        .unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.message, "Incorrect API key provided: <redacted>");
    for text in [err.to_string(), format!("{err:?}"), api.body.clone()] {
        assert!(!text.contains(key), "{text}");
    }
    assert!(!format!("{client:?}").contains(key));
}

#[test]
fn missing_key_names_the_variables() {
    let err = Client::builder_with(Box::new(OpenAi::with_dialect(&HEADER_AUTH)))
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    assert!(
        err.to_string().contains("TOOLWIRE_TEST_NEVER_SET_KEY"),
        "{err}"
    );
    let err = Client::builder(ProviderKind::OpenAi)
        .base_url("ftp://example.invalid")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("base_url"), "{err}");
}

#[tokio::test]
async fn mock_script_exhausted_is_a_clear_error() {
    let (_server, client) = openai(Script::new().then(text_reply())).await;
    client.chat(&request()).await.unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(
        err.api().unwrap().code.as_deref(),
        Some("mock_script_exhausted")
    );
    assert!(err.to_string().contains("request 2"), "{err}");
}

/// OpenAI whose response encoder refuses every reply, to show the mock refuses such a
/// provider up front rather than at the first request.
#[derive(Debug)]
struct NoEncoder(OpenAi);

impl Provider for NoEncoder {
    fn info(&self) -> &ProviderInfo {
        self.0.info()
    }
    fn encode(&self, req: &ChatRequest, stream: bool) -> toolwire::Result<toolwire::HttpRequest> {
        self.0.encode(req, stream)
    }
    fn decode(&self, body: &[u8]) -> toolwire::Result<ChatResponse> {
        self.0.decode(body)
    }
    fn decoder(&self) -> Box<dyn toolwire::StreamDecoder> {
        self.0.decoder()
    }
}

impl Respond for NoEncoder {
    fn encode_response(&self, _: &ChatResponse, _: bool) -> toolwire::Result<Vec<u8>> {
        Err(Error::Unsupported {
            provider: ProviderKind::OpenAi,
            feature: "encoding responses (mock provider)".into(),
        })
    }
}

#[tokio::test]
async fn mock_refuses_a_provider_without_an_encoder() {
    let err = MockServer::start_with(
        Box::new(NoEncoder(OpenAi::new())),
        Script::new().then(text_reply()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("mock"), "{err}");
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&dir);
    dir
}

fn case_dirs(root: &std::path::Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("openai"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

#[tokio::test]
async fn recording_writes_fixture_cases_without_the_key() {
    let dir = temp_dir("record");
    let mut e = ApiError::new(ProviderKind::OpenAi, Some(400), "Bad tool schema");
    e.code = Some("invalid_json_schema".into());
    let script = Script::new()
        .then(parallel_reply())
        .then(text_reply())
        .then(e);
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .record_to(&dir)
        .build()
        .unwrap();
    let streamed = drain(&client, &request()).await.1.unwrap();
    let whole = client.chat(&request()).await.unwrap();
    client.chat(&request()).await.unwrap_err();

    let cases = case_dirs(&dir);
    assert_eq!(cases.len(), 3);
    let read = |case: &PathBuf, file: &str| std::fs::read_to_string(case.join(file)).unwrap();
    let json =
        |case: &PathBuf, file: &str| -> Value { serde_json::from_str(&read(case, file)).unwrap() };
    for case in &cases {
        for file in std::fs::read_dir(case).unwrap() {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            assert!(!text.contains("SECRET") && !text.to_lowercase().contains("bearer"));
        }
        let request: ChatRequest = serde_json::from_value(json(case, "request.json")).unwrap();
        assert_eq!(request, self::request());
    }
    let by_order: Vec<_> = cases
        .iter()
        .map(|c| (c.file_name().unwrap().to_string_lossy().into_owned(), c))
        .collect();
    let find = |suffix: &str| {
        by_order
            .iter()
            .find(|(n, _)| n.ends_with(suffix))
            .map(|(_, c)| (*c).clone())
            .unwrap()
    };
    let (first, second, third) = (find("_0001"), find("_0002"), find("_0003"));

    assert!(first.join("response.sse").exists());
    assert_eq!(
        json(&first, "expected.json"),
        serde_json::to_value(&streamed).unwrap()
    );
    assert_eq!(json(&first, "wire_request.json")["stream"], true);
    let meta = read(&first, "meta.toml");
    assert!(meta.contains("source = \"recorded 2"), "{meta}");
    assert!(meta.contains("tw-test-model\""), "{meta}");
    assert!(meta.contains("provider = \"openai\""), "{meta}");
    assert!(
        meta.contains("stream = true") && meta.contains("status = 200"),
        "{meta}"
    );

    assert!(second.join("response.json").exists());
    assert_eq!(
        json(&second, "expected.json"),
        serde_json::to_value(&whole).unwrap()
    );
    assert!(read(&second, "meta.toml").contains("stream = false"));

    let expected = json(&third, "expected.json");
    assert_eq!(expected["error"]["kind"], "api");
    assert_eq!(expected["error"]["status"], 400);
    assert_eq!(expected["error"]["code"], "invalid_json_schema");
    assert_eq!(expected["partial"], Value::Null);
    assert!(read(&third, "meta.toml").contains("status = 400"));

    // The folders pass conformance as they are.
    let reports = conformance::run_dir(&dir, None, conformance::Mode::Check).unwrap();
    assert_eq!(reports.len(), 3);
    for report in &reports {
        assert!(report.passed(), "{report}: {:?}", report.failures());
        assert!(report.checks.iter().any(|c| c.name == "encode"));
        assert!(report.checks.iter().any(|c| c.name == "decode"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn recording_through_a_compatible_server_is_checked_with_its_dialect() {
    // Against a non-OpenAI base URL the compatible dialect sends `max_tokens`; the recording
    // keeps that body as its golden and names the server, so conformance picks the same
    // dialect. Expected output is decoded with the request sent (its tool-name mapping).
    let dir = temp_dir("record-compatible");
    let tool = ToolDefinition::new("weather.get", "Weather").unwrap();
    let reply = MockReply::tool_calls([ToolCall::new("call_tw_h", "weather_get", "{}")]);
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .record_to(&dir)
        .build()
        .unwrap();
    let mut req = request().with_tools([tool]);
    req.max_tokens = Some(64);
    let got = client.chat(&req).await.unwrap();
    assert_eq!(got.tool_calls[0].name, "weather.get");
    let case = &case_dirs(&dir)[0];
    let read = |file: &str| std::fs::read_to_string(case.join(file)).unwrap();
    let golden: Value = serde_json::from_str(&read("wire_request.json")).unwrap();
    assert_eq!(golden["max_tokens"], 64);
    assert_eq!(server.requests()[0].body, golden);
    assert!(!case.join("sent_request.json").exists());
    let expected: Value = serde_json::from_str(&read("expected.json")).unwrap();
    assert_eq!(expected["tool_calls"][0]["name"], "weather.get");
    let meta = read("meta.toml");
    assert!(
        meta.contains(&format!("base_url = \"{}\"", server.url())),
        "{meta}"
    );
    assert!(!meta.contains("incomplete"), "{meta}");
    let reports = conformance::run_dir(&dir, None, conformance::Mode::Check).unwrap();
    assert!(reports[0].passed(), "{:?}", reports[0].failures());

    // Without `base_url` the same folder is an `openai` case, and the official dialect's
    // encoding (`max_completion_tokens`) no longer matches the body sent.
    let without: String = meta
        .lines()
        .filter(|l| !l.starts_with("base_url"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(case.join("meta.toml"), without).unwrap();
    let reports = conformance::run_dir(&dir, None, conformance::Mode::Check).unwrap();
    assert!(!reports[0].passed());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_record_folder_is_refused_when_building() {
    let dir = temp_dir("record-unwritable");
    std::fs::create_dir_all(&dir).unwrap();
    // A file where a folder must go: no permission games, so this holds for root too.
    let file = dir.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let err = Client::builder(ProviderKind::OpenAi)
        .base_url("http://127.0.0.1:9")
        .record_to(file.join("cases"))
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    assert!(err.to_string().contains("a-file"), "{err}");
    assert!(err.to_string().contains("cannot record"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn recording_failures_never_replace_the_outcome() {
    let dir = temp_dir("record-breaks");
    let mut overloaded = ApiError::new(ProviderKind::OpenAi, None, "The model is overloaded");
    overloaded.partial = Some(Box::new(ChatResponse::default().with_text("Let me")));
    let mut bad = ApiError::new(ProviderKind::OpenAi, Some(400), "Bad tool schema");
    bad.code = Some("invalid_json_schema".into());
    let script = Script::new()
        .then(text_reply())
        .then(text_reply())
        .then(overloaded)
        .then(bad);
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .retry(RetryPolicy::none())
        .record_to(&dir)
        .build()
        .unwrap();
    assert!(client.take_record_errors().is_empty());
    // The folder goes away after the client was built: every write fails from now on.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, "in the way").unwrap();

    assert_eq!(client.chat(&request()).await.unwrap(), text_reply());
    assert_eq!(drain(&client, &request()).await.1.unwrap(), text_reply());
    let (events, result) = drain(&client, &request()).await;
    assert_eq!(streamed_text(&events), "Let me");
    let err = result.unwrap_err();
    assert_eq!(err.api().unwrap().message, "The model is overloaded");
    assert_eq!(err.partial().unwrap().text.as_deref(), Some("Let me"));
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(
        err.api().unwrap().code.as_deref(),
        Some("invalid_json_schema")
    );

    let failures = client.take_record_errors();
    assert_eq!(failures.len(), 4, "{failures:?}");
    for f in &failures {
        assert!(matches!(f, Error::Input { .. }), "{f:?}");
        assert!(f.to_string().contains("cannot record"), "{f}");
        assert!(!f.to_string().contains("SECRET"), "{f}");
    }
    assert!(client.take_record_errors().is_empty(), "taken once");
    let _ = std::fs::remove_file(&dir);
}

#[tokio::test]
async fn a_stream_dropped_early_is_recorded_as_incomplete() {
    let dir = temp_dir("record-dropped");
    let server = MockServer::start(
        ProviderKind::OpenAi,
        // Past the opening chunk and the first text chunk (each choice carries
        // `"logprobs": null`, as OpenAI's do), before the end.
        Script::new().then(MockReply::from(parallel_reply()).stall_after(450)),
    )
    .await
    .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .record_to(&dir)
        .build()
        .unwrap();
    let mut stream = client.stream(&request()).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, StreamEvent::TextDelta { .. }), "{first:?}");
    drop(stream);

    let cases = case_dirs(&dir);
    assert_eq!(cases.len(), 1);
    let meta = std::fs::read_to_string(cases[0].join("meta.toml")).unwrap();
    assert!(meta.contains("incomplete = true"), "{meta}");
    let body = std::fs::read(cases[0].join("response.sse")).unwrap();
    assert!(!body.is_empty() && body.len() <= 450, "{}", body.len());
    let expected: Value =
        serde_json::from_slice(&std::fs::read(cases[0].join("expected.json")).unwrap()).unwrap();
    assert_eq!(expected["error"]["kind"], "stream", "{expected}");
    let reports = conformance::run_dir(&dir, None, conformance::Mode::Check).unwrap();
    assert!(reports[0].passed(), "{:?}", reports[0].failures());
    assert!(client.take_record_errors().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn odd_sse_framing_and_a_byte_order_mark_are_tolerated() {
    // CRLF line ends, comments and keep-alive pings, an `id:` line, two data lines without the
    // blank line between them, and a last event without its blank line; with and without a BOM.
    let sse = "\u{feff}: keep-alive\r\n\r\n\
        id: 1\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"He\"}}]}\r\n\r\n\
        : ping\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"llo\"}}]}\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n\
        data: [DONE]";
    let plain = &sse["\u{feff}".len()..];
    let mut script = Script::new();
    for body in [sse, plain] {
        for n in [1, 3, 1000] {
            script = script.then(MockReply::raw_sse(body).chunk_size(n));
        }
    }
    let json = OpenAiResponder::default()
        .encode_response(&text_reply(), false)
        .unwrap();
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend_from_slice(&json);
    let script = script
        .then(MockReply::Raw {
            status: 200,
            content_type: "application/json".into(),
            body: with_bom.clone(),
        })
        .then(MockReply::Raw {
            status: 200,
            content_type: "application/json".into(),
            body: with_bom,
        });
    let (_server, client) = openai(script).await;
    for _ in 0..6 {
        let (events, result) = drain(&client, &request()).await;
        let response = result.unwrap();
        assert_eq!(response.text.as_deref(), Some("Hello"));
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert_eq!(streamed_text(&events), "Hello");
    }
    assert_eq!(client.chat(&request()).await.unwrap(), text_reply());
    assert_eq!(drain(&client, &request()).await.1.unwrap(), text_reply());
}

#[tokio::test]
async fn empty_and_redirect_answers_are_typed_errors() {
    let script = Script::new()
        .then(MockReply::Raw {
            status: 200,
            content_type: "application/json".into(),
            body: Vec::new(),
        })
        .then(MockReply::raw_sse(""))
        .then(
            MockReply::Raw {
                status: 302,
                content_type: "text/plain".into(),
                body: b"moved".to_vec(),
            }
            .header("location", "http://127.0.0.1:9/elsewhere"),
        );
    let (server, client) = openai(script).await;
    let err = client.chat(&request()).await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("empty"), "{err}");
    // A stream with no bytes at all reads the same way: one reader for both.
    let err = drain(&client, &request()).await.1.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("empty"), "{err}");
    // Redirects are not followed: the key never travels to another host.
    let err = client.chat(&request()).await.unwrap_err();
    assert_eq!(err.status(), Some(302));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn connection_closed_without_an_answer() {
    let (server, client) = openai(Script::new().then(MockReply::Close).then(text_reply())).await;
    let err = client.chat(&request()).await.unwrap_err();
    // The server may have started the turn: not resent (it would be billed twice).
    assert!(
        matches!(err, Error::Transport { connect: false, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("connection closed"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn error_bodies_are_cut_at_their_limit() {
    let body = format!(
        r#"{{"error":{{"message":"upstream failed","code":"bad_gateway","detail":"{}"}}}}"#,
        "d".repeat(100_000)
    );
    let reply = MockReply::Raw {
        status: 502,
        content_type: "application/json".into(),
        body: body.into_bytes(),
    };
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .retry(RetryPolicy::none())
        .limits(Limits::default().with_max_error_body_bytes(1024))
        .build()
        .unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.status, Some(502));
    assert!(api.body.len() <= 1024, "{}", api.body.len());
    assert!(
        api.body
            .starts_with(r#"{"error":{"message":"upstream failed""#)
    );
}

#[tokio::test]
async fn client_and_streams_move_across_tasks() {
    fn send_sync<T: Send + Sync + Clone>(_: &T) {}
    fn send_unpin<T: Send + Unpin + futures::Stream>(_: &T) {}
    let (_server, client) = openai(Script::new().then(text_reply()).then(text_reply())).await;
    send_sync(&client);
    // Both futures are Send: they can run on a spawned task.
    let c = client.clone();
    let whole = tokio::spawn(async move { c.chat(&request()).await })
        .await
        .unwrap();
    assert_eq!(whole.unwrap(), text_reply());
    let stream = client.stream(&request()).await.unwrap();
    send_unpin(&stream);
    let streamed = tokio::spawn(stream.finish()).await.unwrap();
    assert_eq!(streamed.unwrap(), text_reply());
}

#[tokio::test]
async fn unbounded_limits_do_not_overflow() {
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(text_reply()))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .timeouts(
            Timeouts::default()
                .with_first_byte(Duration::MAX)
                .with_idle(Duration::MAX)
                .with_total(Duration::MAX),
        )
        .limits(Limits::default().with_max_body_bytes(usize::MAX))
        .build()
        .unwrap();
    assert_eq!(drain(&client, &request()).await.1.unwrap(), text_reply());
}

/// A client whose idle limit is long and whose error-body limit is short, so only the
/// error-body limit can explain a quick answer.
fn patient_with_error_bodies(server: &MockServer, retry: RetryPolicy) -> Client {
    Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(KEY)
        .retry(retry)
        .timeouts(
            Timeouts::default()
                .with_idle(Duration::from_secs(60))
                .with_error_body(Duration::from_millis(100)),
        )
        .build()
        .unwrap()
}

fn server_error() -> ApiError {
    let mut e = ApiError::new(
        ProviderKind::OpenAi,
        Some(503),
        "Service temporarily unavailable",
    );
    e.code = Some("service_unavailable".into());
    e
}

#[tokio::test]
async fn error_bodies_that_stall_or_drop_keep_what_arrived() {
    let (_, full) = OpenAiResponder::default().encode_error(&server_error(), false);
    let script = Script::new()
        .then(MockReply::from(server_error()).stall_after(30))
        .then(MockReply::from(server_error()).drop_after(30));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = patient_with_error_bodies(&server, RetryPolicy::none());
    for _ in 0..2 {
        let err = client.chat(&request()).await.unwrap_err();
        let api = err.api().unwrap();
        assert_eq!(api.status, Some(503));
        assert_eq!(
            api.body.as_bytes(),
            &full[..30],
            "the bytes that came are kept"
        );
        assert!(err.is_retryable());
    }
}

#[tokio::test]
async fn a_stalled_error_body_does_not_hold_up_the_retry() {
    let script = Script::new()
        .then(MockReply::from(server_error()).stall_after(10))
        .then(text_reply());
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = patient_with_error_bodies(&server, fast_retry());
    // With the 60 s idle limit as the only bound this would take a minute.
    assert_eq!(client.chat(&request()).await.unwrap(), text_reply());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn leading_blank_lines_keep_sse_line_numbers() {
    // 300 blank lines (CRLF) before the stream, one byte at a time: the bad line is still
    // reported where it is in the body.
    let mut body = "\r\n".repeat(300).into_bytes();
    body.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: \xff\n\n",
    );
    let script = Script::new()
        .then(MockReply::raw_sse(body.clone()).chunk_size(1))
        .then(MockReply::raw_sse(body));
    let (_server, client) = openai(script).await;
    for _ in 0..2 {
        let (events, result) = drain(&client, &request()).await;
        assert_eq!(streamed_text(&events), "ok");
        let err = result.unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err:?}");
        assert!(err.to_string().contains("line 303"), "{err}");
    }
}

#[tokio::test]
async fn leading_blank_lines_before_a_json_answer() {
    let mut body = b"\n \t\r\n".repeat(50);
    body.extend_from_slice(
        &OpenAiResponder::default()
            .encode_response(&text_reply(), false)
            .unwrap(),
    );
    let reply = MockReply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body,
    };
    let (_server, client) = openai(Script::new().then(reply.chunk_size(2))).await;
    let (events, result) = drain(&client, &request()).await;
    assert_eq!(result.unwrap(), text_reply());
    assert_eq!(streamed_text(&events), text_reply().text.unwrap());
}

/// A loopback listener that accepts nothing, with its queue full: a connection attempt gets
/// no answer at all (Linux drops the SYN when the accept queue is full).
#[cfg(target_os = "linux")]
fn full_listener() -> (tokio::net::TcpListener, Vec<std::net::TcpStream>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    // Backlog 0 queues one connection; fill until an attempt goes unanswered.
    for _ in 0..16 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            Ok(s) => fillers.push(s),
            Err(_) => return (listener, fillers),
        }
    }
    panic!("the listen queue never filled");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_unanswered_connection_is_a_connect_timeout() {
    let (listener, _fillers) = full_listener();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(url)
        .retry(RetryPolicy::none())
        .timeouts(
            Timeouts::default()
                .with_connect(Duration::from_millis(150))
                .with_first_byte(Duration::from_secs(30)),
        )
        .build()
        .unwrap();
    let err = client.chat(&request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                phase: TimeoutPhase::Connect,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable(), "nothing was sent: safe to retry");
}

#[tokio::test]
async fn qwen_stream_errors_come_sse_framed_with_their_status() {
    let mut e = ApiError::new(
        ProviderKind::Qwen,
        Some(400),
        "<400> InternalError.Algo.InvalidParameter: The tool_choice parameter does not support being set to required or object in thinking mode",
    );
    e.code = Some("invalid_parameter_error".into());
    let server = MockServer::start(
        ProviderKind::Qwen,
        Script::new().then(e.clone()).then(e).repeat_last(),
    )
    .await
    .unwrap();
    // On the wire: the status, an event-stream, a `data:` frame.
    let raw = toolwire::client::http_client_builder()
        .build()
        .unwrap()
        .post(format!("{}/chat/completions", server.url()))
        .header("accept", "text/event-stream")
        .body(r#"{"model":"qwen-plus","messages":[],"stream":true}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
    assert_eq!(
        raw.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert!(raw.text().await.unwrap().starts_with("data: {\"error\":"));
    // Through the client: the API error, code and message verbatim.
    let err = drain(&client(ProviderKind::Qwen, &server), &request())
        .await
        .1
        .unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.status, Some(400));
    assert_eq!(api.code.as_deref(), Some("invalid_parameter_error"));
    assert!(api.message.contains("thinking mode"), "{}", api.message);
}

#[tokio::test]
async fn nested_shapes_all_apply() {
    // The inner shape cuts the connection; the outer one slows the pieces down. Both happen.
    let reply = parallel_reply();
    let cut = inside_second_fragment(&reply);
    let inner = MockReply::from(reply).drop_after(cut);
    let mut outer = Shape::default();
    outer.chunk_size = Some(64);
    let script = Script::new().then(MockReply::Shaped(Box::new(inner), outer));
    let (_server, client) = openai(script).await;
    let err = drain(&client, &request()).await.1.unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    assert!(err.partial().unwrap().tool_calls[1].error.is_some());
}

#[tokio::test]
async fn dashscope_repeating_fragments_stream_through_the_client() {
    // Incremental pieces that repeat ("abababab" twice) would read as a cumulative stream to
    // a decoder guessing; the client's decoder knows from the request.
    let reply = MockReply::text("abababababababababababab");
    let server = MockServer::start(
        ProviderKind::DashScope,
        Script::new().then(reply.clone()).then(reply.chunk_size(5)),
    )
    .await
    .unwrap();
    let client = client(ProviderKind::DashScope, &server);
    for _ in 0..2 {
        let (events, got) = drain(&client, &request()).await;
        let got = got.unwrap();
        assert_eq!(got.text.as_deref(), Some("abababababababababababab"));
        assert_eq!(streamed_text(&events), "abababababababababababab");
    }
}

#[tokio::test]
async fn anthropic_sends_its_key_header_and_version_and_completes_calls_early() {
    let script = Script::new().then(parallel_reply()).then(parallel_reply());
    let server = MockServer::start(ProviderKind::Anthropic, script)
        .await
        .unwrap();
    let client = client(ProviderKind::Anthropic, &server);
    let (events, got) = drain(&client, &request()).await;
    let got = got.unwrap();
    assert_eq!(essentials(&got), essentials(&parallel_reply()));
    // The first call is complete before the second one starts: its block ended first.
    let complete_0 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
        .unwrap();
    let start_1 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 1, .. }))
        .unwrap();
    assert!(complete_0 < start_1, "{events:?}");
    client.chat(&request()).await.unwrap();
    for seen in server.requests() {
        assert_eq!(seen.path, "/v1/messages");
        assert_eq!(seen.header("x-api-key"), Some(KEY));
        assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(seen.header("authorization"), None);
        assert!(seen.body["max_tokens"].is_u64(), "{}", seen.body);
    }
}

#[tokio::test]
async fn ollama_needs_no_key_and_streams_ndjson() {
    // No key anywhere, no base URL: the local default.
    let local = Client::builder(ProviderKind::Ollama).build().unwrap();
    assert_eq!(local.base_url(), "http://localhost:11434");

    let script = Script::new().then(parallel_reply()).then(text_reply());
    let server = MockServer::start(ProviderKind::Ollama, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::Ollama)
        .base_url(server.url())
        .build()
        .unwrap();
    let (events, got) = drain(&client, &request()).await;
    assert_eq!(essentials(&got.unwrap()), essentials(&parallel_reply()));
    // Each call arrives whole, so it is complete before the next one starts.
    let complete_0 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::ToolCallComplete { index: 0, .. }))
        .unwrap();
    let start_1 = events
        .iter()
        .position(|e| matches!(e, StreamEvent::ToolCallStarted { index: 1, .. }))
        .unwrap();
    assert!(complete_0 < start_1, "{events:?}");
    let got = client.chat(&request()).await.unwrap();
    assert_eq!(essentials(&got), essentials(&text_reply()));
    let seen = server.requests();
    assert_eq!(seen[0].path, "/api/chat");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(seen[1].body["stream"], false);
    assert!(seen.iter().all(|r| r.header("authorization").is_none()));
}

/// Bedrock with SigV4: the signer's headers go on every attempt (a retry signs anew), no
/// key is needed, and no bearer header is sent.
#[cfg(feature = "sigv4")]
#[tokio::test]
async fn bedrock_requests_are_signed_per_attempt_without_a_key() {
    use toolwire::client::sigv4::SigV4;
    let mut overloaded = ApiError::new(ProviderKind::Bedrock, Some(503), "Service unavailable");
    overloaded.code = Some("ServiceUnavailableException".into());
    let script: Script = [MockReply::from(overloaded), MockReply::from(text_reply())]
        .into_iter()
        .collect();
    let server = MockServer::start(ProviderKind::Bedrock, script)
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::Bedrock)
        .base_url(server.url())
        .signer(SigV4::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            "us-west-2",
            "bedrock",
        ))
        .retry(fast_retry())
        .timeouts(short_timeouts())
        .build()
        .unwrap();
    let (_, got) = drain(&client, &request()).await;
    assert_eq!(got.unwrap().text, text_reply().text);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one retry");
    for r in &requests {
        let auth = r.header("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
                && auth.contains("/us-west-2/bedrock/aws4_request"),
            "{auth}"
        );
        assert!(r.header("x-amz-date").is_some());
        assert!(r.path.ends_with("/converse-stream"), "{}", r.path);
    }
}
