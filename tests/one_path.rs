//! The client, `replay` and the conformance runner read turns through one `TurnReader`, so
//! they give identical results for every fixture: each captured body is served by the mock
//! exactly as recorded and read by the client, and its golden JSON must equal what the
//! conformance path computes from the file.
#![cfg(feature = "mock")]

use std::path::Path;

use toolwire::client::Client;
use toolwire::conformance::{self, STREAM_FILES};
use toolwire::fixture::{decode_body, golden_json};
use toolwire::mock::{MockReply, MockServer, Script, responder_for};
use toolwire::{ChatRequest, Message, ProviderKind, provider_for};

const KEY: &str = "tw-one-path-test-key-0000";

async fn client_result(
    kind: ProviderKind,
    req: &ChatRequest,
    body: &[u8],
    content_type: &str,
    stream: bool,
) -> toolwire::Result<toolwire::ChatResponse> {
    let reply = MockReply::Raw {
        status: 200,
        content_type: content_type.into(),
        body: body.to_vec(),
    };
    let server = MockServer::start_with(responder_for(kind)?, Script::new().then(reply)).await?;
    let client = Client::builder_with(provider_for(kind)?)
        .base_url(server.url())
        .api_key(KEY)
        .build()?;
    if stream {
        client.stream(req).await?.finish().await
    } else {
        client.chat(req).await
    }
}

#[tokio::test]
async fn client_replay_and_conformance_agree_on_every_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    let mut differ = Vec::new();
    for case in conformance::case_dirs(&root).expect("fixtures/ is readable") {
        let Ok(meta) = conformance::load_meta(&case) else {
            continue;
        };
        // Realtime sessions have their own reader; cases recorded elsewhere pick another
        // dialect by base URL; error bodies never reach a reader.
        let Some(kind) = conformance::case_provider(&case, Some(&meta)) else {
            continue;
        };
        if meta.base_url.is_some() || meta.status.is_some_and(|s| s >= 400) {
            continue;
        }
        let Some((path, stream)) = STREAM_FILES
            .iter()
            .map(|n| (case.join(n), true))
            .chain([(case.join("response.json"), false)])
            .find(|(p, _)| p.exists())
        else {
            continue;
        };
        let body = std::fs::read(&path).unwrap();
        let provider = provider_for(kind).unwrap();
        let req: ChatRequest = match std::fs::read(case.join("request.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
            Err(_) => ChatRequest::new("tw-model", vec![Message::user("hi")]),
        };
        let Ok(wire) = provider.encode(&req, stream) else {
            continue;
        };
        let expected = golden_json(&decode_body(provider.as_ref(), Some(&wire), &body, None));
        let content_type = match path.extension().and_then(|e| e.to_str()) {
            Some("sse") => "text/event-stream",
            Some("ndjson") => "application/x-ndjson",
            _ => "application/json",
        };
        let got = golden_json(&client_result(kind, &req, &body, content_type, stream).await);
        checked += 1;
        if got != expected {
            differ.push(format!(
                "{}: client {}\n  replay {}",
                case.display(),
                got,
                expected
            ));
        }
    }
    assert!(checked > 150, "only {checked} fixtures were checked");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
