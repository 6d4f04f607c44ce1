//! Sealed call state across `toolwire serve` processes: a call id one process made (a Gemini
//! thought signature sealed into it for a Chat Completions client) round-trips through a
//! second process given the same key, by `TOOLWIRE_STATE_KEY` or by the key file beside its
//! state file, and is refused (400 naming the call) by a process with another key, before
//! anything reaches the upstream.

#![cfg(feature = "cli")]

use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::{ChatResponse, FinishReason, ProviderKind, ToolCall};

use crate::support::{Serve, http, scratch};

/// The key the instances of one deployment share.
const SHARED_KEY: &str = "a-key-shared-by-two-serve-processes";

/// The thought signature the upstream sends with its call (base64 of `sig-paris`).
const SIGNATURE: &str = "c2lnLXBhcmlz";

fn config(upstream: &MockServer) -> String {
    format!(
        "[[role]]\nname = \"up\"\nprovider = \"gemini\"\nmodel = \"model-x\"\n\
         base_url = \"{}\"\napi_key_env = \"TW_SEAL_TEST_UPSTREAM\"\n",
        upstream.url()
    )
}

/// `toolwire serve` in front of `upstream`, its state key given by `key` (the variable) or,
/// when `None`, by the key file beside `state`.
fn serve(upstream: &MockServer, key: Option<&str>, state: Option<&std::path::Path>) -> Serve {
    let mut b = Serve::builder()
        .config(config(upstream))
        .env("TW_SEAL_TEST_UPSTREAM", "upstream-key")
        .env_remove("TOOLWIRE_STATE_KEY");
    if let Some(key) = key {
        b = b.env("TOOLWIRE_STATE_KEY", key);
    }
    if let Some(state) = state {
        b = b.arg("--state").arg(state.display().to_string());
    }
    b.start()
}

async fn post(server: &Serve, body: &Value) -> (u16, String) {
    let r = http(Duration::from_secs(30))
        .post(format!("{}/v1/chat/completions", server.url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_call_id_round_trips_through_a_second_process_with_the_same_key() {
    let mut call = ToolCall::new("call_tw_1", "get_weather", r#"{"city":"Paris"}"#);
    call.extra
        .insert("thought_signature".into(), json!(SIGNATURE));
    let first = ChatResponse::default()
        .with_tool_calls([call])
        .with_finish_reason(FinishReason::ToolCalls);
    let script = Script::new()
        .then(first)
        .then(MockReply::text("It is sunny in Paris."))
        .repeat_last();
    let upstream = MockServer::start(ProviderKind::Gemini, script)
        .await
        .unwrap();
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let user = json!({"role": "user", "content": "Weather in Paris?"});

    // Process A makes the call id.
    let a = serve(&upstream, Some(SHARED_KEY), None);
    let (status, text) = post(
        &a,
        &json!({"model": "up", "messages": [user], "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    drop(a);
    let turn1: Value = serde_json::from_str(&text).unwrap();
    let assistant = turn1["choices"][0]["message"].clone();
    let id = assistant["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !id.contains(SIGNATURE) && id.len() > "call_tw_1".len(),
        "the state rides sealed in the id: {id}"
    );
    let turn2 = json!({"model": "up", "tools": tools, "messages": [
        user, assistant,
        {"role": "tool", "tool_call_id": id, "content": "sunny"}]});

    // Process B, the same key by the variable: the signature reaches the upstream again.
    let b = serve(&upstream, Some(SHARED_KEY), None);
    let (status, text) = post(&b, &turn2).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("sunny in Paris"), "{text}");
    assert_eq!(upstream.requests().len(), 2);
    let sent = upstream.requests()[1].body.to_string();
    assert!(sent.contains(SIGNATURE), "the signature is lost: {sent}");
    assert!(
        !sent.contains("_tw2_"),
        "the packing leaked upstream: {sent}"
    );
    drop(b);

    // Process C, the same key from the key file beside its state file.
    let state = scratch("seal-state", "sqlite");
    let key_file = format!("{}.key", state.display());
    std::fs::write(&key_file, SHARED_KEY).unwrap();
    let c = serve(&upstream, None, Some(&state));
    let (status, text) = post(&c, &turn2).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(upstream.requests().len(), 3);
    assert!(upstream.requests()[2].body.to_string().contains(SIGNATURE));
    drop(c);
    for path in [state.display().to_string(), key_file.clone()] {
        let _ = std::fs::remove_file(&path);
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", state.display()));
    }

    // Process D, another key: refused by name, and nothing reaches the upstream.
    let d = serve(&upstream, Some("another-key-of-another-deployment"), None);
    let (status, text) = post(&d, &turn2).await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("messages[1].tool_calls[0].id") && text.contains("seal"),
        "{text}"
    );
    assert_eq!(
        upstream.requests().len(),
        3,
        "a refused turn reached the upstream"
    );
}
