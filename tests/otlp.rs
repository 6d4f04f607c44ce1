//! OTLP export (feature `otlp`): `toolwire serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at
//! a loopback OTLP/HTTP receiver, which decodes what arrives with the official OpenTelemetry
//! protobuf definitions (`opentelemetry-proto`). One gateway request to an offline role, then
//! SIGTERM: the spans, with their `gen_ai.*` attributes, arrive when the server stops (the
//! batch delay is an hour, so only the flush at exit can deliver them), and so do the gateway's
//! counters as OTLP metrics (the export interval is an hour too): the request counted on its
//! route, the per-route and per-attempt series of `GET /metrics`.

#![cfg(all(feature = "cli", feature = "otlp"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

use crate::support::{Serve, http};

/// What the receiver got: each request's headers and decoded body.
type Received = Arc<Mutex<Vec<(HeaderMap, ExportTraceServiceRequest)>>>;

/// The metrics requests the receiver got, decoded.
type ReceivedMetrics = Arc<Mutex<Vec<ExportMetricsServiceRequest>>>;

async fn metrics(State(got): State<ReceivedMetrics>, body: Bytes) -> (StatusCode, Vec<u8>) {
    match ExportMetricsServiceRequest::decode(body) {
        Ok(request) => {
            got.lock().unwrap().push(request);
            (
                StatusCode::OK,
                ExportMetricsServiceResponse::default().encode_to_vec(),
            )
        }
        Err(_) => (StatusCode::BAD_REQUEST, Vec::new()),
    }
}

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

/// An OTLP/HTTP receiver on a free loopback port: its base URL and what it received (spans,
/// metrics).
async fn receiver() -> (String, Received, ReceivedMetrics) {
    let got = Received::default();
    let got_metrics = ReceivedMetrics::default();
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(traces))
        .with_state(got.clone())
        .merge(
            axum::Router::new()
                .route("/v1/metrics", axum::routing::post(metrics))
                .with_state(got_metrics.clone()),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), got, got_metrics)
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
    let (endpoint, got, got_metrics) = receiver().await;
    let mut server = Serve::builder()
        .config("[[role]]\nname = \"offline\"\nprovider = \"mock\"\n")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-otlp-test=yes")
        .env("OTEL_SERVICE_NAME", "toolwire-otlp-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "3600000")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "3600000")
        .env_remove("RUST_LOG")
        .start();
    let base = server.url();
    let http = http(Duration::from_secs(30));
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

    assert!(
        got_metrics.lock().unwrap().is_empty(),
        "no metrics are sent before the export interval or the exit"
    );

    // SIGTERM: the graceful path, which sends what is queued.
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "{exit}");

    // The gateway's counters, as OTLP metrics: the request counted on its route.
    {
        let got = got_metrics.lock().unwrap();
        assert!(!got.is_empty(), "no OTLP metrics request arrived");
        let metrics: Vec<_> = got
            .iter()
            .flat_map(|r| r.resource_metrics.iter())
            .flat_map(|rm| rm.scope_metrics.iter())
            .flat_map(|sm| sm.metrics.iter())
            .collect();
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        let requests = metrics
            .iter()
            .find(|m| m.name == "toolwire_gateway_requests_total")
            .unwrap_or_else(|| panic!("no requests counter among {names:?}"));
        let Some(Data::Sum(sum)) = &requests.data else {
            panic!("the requests counter is not a sum: {requests:?}")
        };
        assert!(sum.is_monotonic);
        let on_chat: Vec<_> = sum
            .data_points
            .iter()
            .filter(|p| {
                attribute(&p.attributes, "route").and_then(string) == Some("/v1/chat/completions")
            })
            .collect();
        assert_eq!(on_chat.len(), 1, "{sum:?}");
        assert_eq!(on_chat[0].value, Some(Number::AsInt(1)), "{sum:?}");
        let open = metrics
            .iter()
            .find(|m| m.name == "toolwire_gateway_open_streams")
            .unwrap_or_else(|| panic!("no open-streams gauge among {names:?}"));
        assert!(matches!(open.data, Some(Data::Gauge(_))), "{open:?}");
        for name in [
            "toolwire_gateway_fallbacks_total",
            "toolwire_gateway_upstream_attempts_total",
        ] {
            assert!(names.contains(&name), "no {name} among {names:?}");
        }
    }

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
