//! OTLP export (feature `otlp`): `toolwire serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at
//! a loopback OTLP/HTTP receiver, which decodes what arrives with the official OpenTelemetry
//! protobuf definitions (`opentelemetry-proto`). One gateway request to an offline role, then
//! SIGTERM: the spans, with their `gen_ai.*` attributes, arrive when the server stops (the
//! batch delay is an hour, so only the flush at exit can deliver them).

#![cfg(all(feature = "cli", feature = "otlp"))]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

/// Kills the child when the test ends, however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the receiver got: each request's headers and decoded body.
type Received = Arc<Mutex<Vec<(HeaderMap, ExportTraceServiceRequest)>>>;

async fn traces(
    State(got): State<Received>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Vec<u8>) {
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            got.lock().unwrap().push((headers, request));
            (
                StatusCode::OK,
                ExportTraceServiceResponse::default().encode_to_vec(),
            )
        }
        Err(_) => (StatusCode::BAD_REQUEST, Vec::new()),
    }
}

/// An OTLP/HTTP receiver on a free loopback port: its base URL and what it received.
async fn receiver() -> (String, Received) {
    let got = Received::default();
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(traces))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), got)
}

fn string(value: &Option<Any>) -> Option<&str> {
    match value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s),
        _ => None,
    }
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Option<Any>> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| &kv.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_with_gen_ai_fields_arrive_at_the_otlp_receiver() {
    let (endpoint, got) = receiver().await;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let config =
        std::env::temp_dir().join(format!("toolwire-otlp-{}-{nanos}.toml", std::process::id()));
    std::fs::write(
        &config,
        "[[role]]\nname = \"offline\"\nprovider = \"mock\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["serve", "--port", "0", "--config"])
        .arg(&config)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-otlp-test=yes")
        .env("OTEL_SERVICE_NAME", "toolwire-otlp-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "3600000")
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut proc = Proc(child);
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    let _ = std::fs::remove_file(&config);
    let base = first
        .strip_prefix("toolwire serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    std::thread::spawn(move || for _ in lines {});

    let http = toolwire::client::http_client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let body = json!({"model": "offline", "messages": [{"role": "user", "content": "Hi"}]});
    let answer = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let _ = answer.bytes().await.unwrap();
    assert!(
        got.lock().unwrap().is_empty(),
        "nothing is sent before the batch delay or the exit"
    );

    // SIGTERM: the graceful path, which sends what is queued.
    let status = Command::new("kill")
        .args(["-TERM".to_owned(), proc.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = proc.0.try_wait().unwrap() {
            break exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "toolwire serve did not stop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit}");

    let got = got.lock().unwrap();
    assert!(!got.is_empty(), "no OTLP request arrived");
    for (headers, _) in got.iter() {
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/x-protobuf")
        );
        assert_eq!(
            headers.get("x-otlp-test").and_then(|v| v.to_str().ok()),
            Some("yes"),
            "OTEL_EXPORTER_OTLP_HEADERS is sent"
        );
    }
    let resources: Vec<_> = got
        .iter()
        .flat_map(|(_, r)| r.resource_spans.iter())
        .collect();
    for rs in &resources {
        let resource = rs.resource.as_ref().expect("a resource");
        assert_eq!(
            attribute(&resource.attributes, "service.name").and_then(string),
            Some("toolwire-otlp-test")
        );
    }
    let spans: Vec<&Span> = resources
        .iter()
        .flat_map(|rs| rs.scope_spans.iter())
        .flat_map(|ss| ss.spans.iter())
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let chat = spans
        .iter()
        .find(|s| s.name == "gen_ai.chat")
        .unwrap_or_else(|| panic!("no gen_ai.chat span among {names:?}"));
    assert_eq!(
        attribute(&chat.attributes, "gen_ai.operation.name").and_then(string),
        Some("chat")
    );
    assert_eq!(
        attribute(&chat.attributes, "gen_ai.provider.name").and_then(string),
        Some("openai"),
        "the offline role speaks OpenAI's wire"
    );
    assert!(
        attribute(&chat.attributes, "gen_ai.request.model")
            .and_then(string)
            .is_some_and(|m| !m.is_empty()),
        "{:?}",
        chat.attributes
    );
    let attempt = spans
        .iter()
        .find(|s| s.name == "gateway.attempt")
        .unwrap_or_else(|| panic!("no gateway.attempt span among {names:?}"));
    assert_eq!(
        attribute(&attempt.attributes, "toolwire.role").and_then(string),
        Some("offline")
    );
    assert!(attempt.end_time_unix_nano >= attempt.start_time_unix_nano);
    assert_eq!(
        chat.trace_id, attempt.trace_id,
        "the chat span is in the attempt's trace"
    );
}
