//! The fake upstream `benches/gateway.sh` puts behind both gateways: an OpenAI Chat Completions
//! server on 127.0.0.1 that answers every request at once with the same turn (a text and two
//! parallel calls), written by toolwire's own OpenAI writer: a JSON body, or its SSE stream when
//! the request says `"stream": true`. Keeps connections alive, as real services do. A request
//! for the model `hold` gets its first chunk and then a stream held open for a minute, for
//! measuring memory per open stream. Bodies up to 64 MiB are taken (the gateway's own limit is
//! 32 MiB), so `benches/gateway_memory.sh` can forward its largest requests here.
//!
//! Run: `cargo run --release --features server --example gateway_upstream -- PORT`

use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt as _;
use toolwire::mock::responder_for;
use toolwire::{ChatResponse, FinishReason, ProviderKind, ToolCall, Usage};

fn turn() -> ChatResponse {
    let calls = [
        ToolCall::new(
            "call_1",
            "get_weather",
            r#"{"city":"Paris","unit":"celsius"}"#,
        ),
        ToolCall::new(
            "call_2",
            "get_weather",
            r#"{"city":"Tokyo","unit":"celsius"}"#,
        ),
    ];
    let mut r = ChatResponse::default()
        .with_text("Let me check both cities.")
        .with_tool_calls(calls)
        .with_finish_reason(FinishReason::ToolCalls);
    r.usage = Some(Usage::new(40, 30));
    r
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "0".into())
        .parse()?;
    let writer = responder_for(ProviderKind::OpenAi)?;
    let body = Bytes::from(writer.encode_response(&turn(), false)?);
    let stream = Bytes::from(writer.encode_response(&turn(), true)?);
    let answer = move |request: Bytes| {
        let (body, stream) = (body.clone(), stream.clone());
        async move {
            let text = String::from_utf8_lossy(&request);
            let streamed = text.contains("\"stream\":true") || text.contains("\"stream\": true");
            if text.contains("\"model\":\"hold\"") || text.contains("\"model\": \"hold\"") {
                let first =
                    stream.slice(..stream.iter().position(|b| *b == b'\n').unwrap_or(0) + 2);
                let held = futures::stream::once(async move { Ok::<Bytes, std::io::Error>(first) })
                    .chain(futures::stream::once(async {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        Ok(Bytes::from_static(b"data: [DONE]\n\n"))
                    }));
                return (
                    [(header::CONTENT_TYPE, "text/event-stream")],
                    Body::from_stream(held),
                )
                    .into_response();
            }
            let response: Response = if streamed {
                ([(header::CONTENT_TYPE, "text/event-stream")], stream).into_response()
            } else {
                ([(header::CONTENT_TYPE, "application/json")], body).into_response()
            };
            response
        }
    };
    let app = Router::new()
        .route("/chat/completions", post(answer.clone()))
        .route("/v1/chat/completions", post(answer))
        .layer(DefaultBodyLimit::max(64 << 20));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
