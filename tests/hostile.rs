//! Hostile input is normal input: each defect found by attacking the decoders, the client and
//! the tools has a regression test here that fails on the old code without timing anything
//! (it counts work, bounds output against input, or asserts on structure). The quadratic SSE
//! and id-minting cases count work inside the crate (`sse.rs`, `assemble.rs` unit tests).
#![cfg(feature = "mock")]

use std::process::Command;

use futures::StreamExt;
use std::time::Duration;

use serde_json::json;
use toolwire::client::{Client, Timeouts};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::providers::gemini::Gemini;
use toolwire::providers::openai::OpenAi;
use toolwire::replay::replay;
use toolwire::tools::{Tool, ToolRegistry, ToolSelection};
use toolwire::{ChatRequest, Error, Message, ProviderKind, TimeoutPhase, ToolCall, ToolDefinition};

/// A Vertex `partialArgs` stream whose pieces each jump `step` array elements ahead.
fn partial_args_stream(pieces: usize, step: usize) -> String {
    let open = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "f", "willContinue": true}}]}}]});
    let args: Vec<_> = (1..=pieces)
        .map(|k| json!({"jsonPath": format!("$.a[{}]", k * step), "boolValue": true}))
        .collect();
    let body = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"partialArgs": args, "willContinue": true}}]}}]});
    let close = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {}}]}, "finishReason": "STOP"}]});
    format!("data: {open}\n\ndata: {body}\n\ndata: {close}\n\n")
}

#[test]
fn gemini_partial_args_cannot_amplify_themselves() {
    // Each ~40-byte piece could open 1024 null slots: a 247 KB capture became 20.5 MB of
    // arguments. Now a jump that large is a typed error...
    let hostile = partial_args_stream(2_000, 1_024);
    let err = replay(&Gemini::new(), hostile.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("jumps"), "{err}");
    // ...and the largest jump allowed keeps the text within a small constant of the input.
    let stream = partial_args_stream(2_000, 8);
    let r = replay(&Gemini::new(), stream.as_bytes()).unwrap();
    let args = &r.response.tool_calls[0].raw_arguments;
    assert!(
        args.len() <= 2 * stream.len(),
        "{} bytes of arguments from {} bytes of stream",
        args.len(),
        stream.len()
    );
    assert!(r.response.tool_calls[0].is_complete());
}

#[test]
fn a_stream_cut_inside_an_event_is_a_broken_stream() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",",
        "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"argu"
    );
    let err = replay(&OpenAi::new(), body.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Stream { .. }), "{err:?}");
    assert!(
        err.to_string().contains("cut inside the event at line 3"),
        "{err}"
    );
    let partial = err.partial().expect("the call that arrived is kept");
    assert_eq!(partial.tool_calls[0].raw_arguments, "{\"a\":");
    assert!(!partial.tool_calls[0].is_complete());
}

#[test]
fn html_pages_and_empty_bodies_say_what_they_are() {
    let page = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head></html>";
    let err = replay(&OpenAi::new(), page).unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("HTML page"), "{err}");
    assert!(err.to_string().contains("502 Bad Gateway"), "{err}");
    for body in [&b""[..], b"\n\r\n  ", b"\0\0\0\0", b"\xEF\xBB\xBF"] {
        let err = replay(&OpenAi::new(), body).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{body:?}: {err:?}");
    }
}

fn toolwire(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn replay_of_empty_or_nul_files_is_bad_input() {
    let dir = std::env::temp_dir().join(format!("toolwire-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in [("empty", &b""[..]), ("nul", b"\0\0\0\0\0\0")] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = toolwire(&["replay", "--provider", "openai", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {out:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn error_bodies_cannot_drive_the_terminal() {
    let dir = std::env::temp_dir().join(format!("toolwire-hostile-esc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("body.json");
    std::fs::write(
        &path,
        b"{\"error\":{\"message\":\"\x1b[2J\x1b]0;pwned\x07 gone\",\"code\":\"x\"}}",
    )
    .unwrap();
    let out = toolwire(&[
        "replay",
        "--provider",
        "openai",
        "--status",
        "500",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    assert!(stderr.contains("\\u{1b}[2J"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_deadline_holds_while_bytes_keep_arriving() {
    // A fast server and a slower reader: bytes are (nearly) always waiting. The deadline is
    // checked on every chunk, not only when the body reports "pending", so it holds however
    // the transport schedules its frames.
    let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"drip\"}}]}\n\n";
    let reply = MockReply::raw_sse(chunk.repeat(40_000)).chunk_size(64 << 10);
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .timeouts(
            Timeouts::default()
                .with_idle(Duration::from_secs(30))
                .with_total(Duration::from_millis(800)),
        )
        .limits(toolwire::client::Limits::default().with_max_body_bytes(usize::MAX))
        .build()
        .unwrap();
    let req = ChatRequest::new("m", vec![Message::user("hi")]);
    let mut stream = client.stream(&req).await.unwrap();
    let mut seen = 0usize;
    let err = loop {
        match stream.next().await {
            Some(Ok(_)) => {
                seen += 1;
                if seen.is_multiple_of(500) {
                    // A slow consumer (80 pauses of 20 ms, well past the deadline): the socket
                    // keeps filling meanwhile.
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Some(Err(e)) => break e,
            None => panic!("the turn ran to its end past the total deadline ({seen} events)"),
        }
    };
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
    assert!(err.partial().is_some(), "what arrived is kept");
}

#[tokio::test]
async fn an_escaped_echo_of_the_key_is_redacted() {
    let key = "sk-a/b\"c";
    // The server echoes the key inside a JSON string, escaped as JSON allows (`/` as `\/`).
    let body = br#"{"error":{"message":"Incorrect API key provided: sk-a\/b\"c.","code":"invalid_api_key"}}"#;
    let reply = MockReply::Raw {
        status: 401,
        content_type: "application/json".into(),
        body: body.to_vec(),
    };
    let server = MockServer::start(ProviderKind::OpenAi, Script::new().then(reply))
        .await
        .unwrap();
    let client = Client::builder(ProviderKind::OpenAi)
        .base_url(server.url())
        .api_key(key)
        .build()
        .unwrap();
    let req = ChatRequest::new("m", vec![Message::user("hi")]);
    let err = client.chat(&req).await.unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("sk-a"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_handler_is_reported_at_its_timeout() {
    // The handler blocks its thread for 3 s; its timeout is 200 ms. The old dispatch awaited
    // it on the caller's task, so the timer could not fire and the call returned ok after 3 s.
    let tools = ToolRegistry::new();
    let def = ToolDefinition::new("stuck", "Blocks its thread").unwrap();
    let tool = Tool::from_fn(def, |_| async {
        std::thread::sleep(Duration::from_secs(3));
        Ok(json!("finished late"))
    })
    .with_timeout(Duration::from_millis(200));
    tools.register(tool).unwrap();
    let call = ToolCall::new("call_1", "stuck", "{}");
    let result = tools.dispatch(&call, &ToolSelection::default()).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.error.as_deref().unwrap_or("").contains("timed out"),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_blocking_handlers_than_workers_all_time_out() {
    // Four handlers block their threads for 3 s on a 2-worker runtime, each with a 300 ms
    // timeout. Run as worker tasks, two of them held both workers, so no timer could fire and
    // the others came back `ok` once the sleeps ended: every result must be the timeout error.
    let tools = ToolRegistry::new();
    let def = ToolDefinition::new("stuck", "Blocks its thread").unwrap();
    let tool = Tool::from_fn(def, |_| async {
        std::thread::sleep(Duration::from_secs(3));
        Ok(json!("finished late"))
    })
    .with_timeout(Duration::from_millis(300));
    tools.register(tool).unwrap();
    let calls: Vec<ToolCall> = (0..4)
        .map(|i| ToolCall::new(format!("call_{i}"), "stuck", "{}"))
        .collect();
    let selection = ToolSelection::default();
    let results =
        futures::future::join_all(calls.iter().map(|c| tools.dispatch(c, &selection))).await;
    for result in &results {
        assert!(result.is_error, "{result:?}");
        assert!(
            result.error.as_deref().unwrap_or("").contains("timed out"),
            "{result:?}"
        );
    }
    // The same calls dispatched from tasks of their own, as the agent runs a turn's calls.
    let tools = std::sync::Arc::new(tools);
    let tasks: Vec<_> = calls
        .into_iter()
        .map(|call| {
            let tools = tools.clone();
            tokio::spawn(async move { tools.dispatch(&call, &ToolSelection::default()).await })
        })
        .collect();
    for task in tasks {
        let result = task.await.unwrap();
        assert!(
            result.error.as_deref().unwrap_or("").contains("timed out"),
            "{result:?}"
        );
    }
}
