//! Input requests (MCP elicitation) against the official Python SDK: `tests/mcp/elicit.py`'s
//! tool asks "Which seat?" with `ctx.elicit(...)` mid-call. The question reaches the
//! connection's [`InputHandler`] (also when the call runs from a registry, as the agent runs
//! it), its answer (accept with content, decline, cancel) reaches the server, a connection
//! without a handler declines, and `toolwire mcp call` asks on the terminal.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolwire::ToolCall;
use toolwire::mcp::{Connection, Endpoint, InputAnswer, InputHandler, InputRequest, Mount};
use toolwire::tools::{ToolRegistry, ToolSelection};

use crate::mcp::{here, json_out, python, runtime};

fn endpoint() -> Endpoint {
    Endpoint::command([python().to_owned(), here("elicit.py")]).unwrap()
}

/// The tool's answer: what the server says the client answered.
fn said(result: &toolwire::mcp::McpResult) -> Value {
    let text = result.content[0].as_text().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("{result:?}"))
}

/// A handler that records each request and gives `answer`.
fn answering(answer: InputAnswer) -> (InputHandler, Arc<Mutex<Vec<InputRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let handler = InputHandler::new(move |request| {
        kept.lock().unwrap().push(request);
        let answer = answer.clone();
        async move { answer }
    });
    (handler, seen)
}

#[test]
fn input_requests_reach_the_handler_and_its_answer_reaches_the_server() {
    runtime().block_on(async {
        let limit = Duration::from_secs(30);
        let accept = InputAnswer::Accept(json!({"seat": "12A", "window": true}));
        let (handler, seen) = answering(accept);
        let connection = Connection::connect_asking(&endpoint(), limit, handler)
            .await
            .unwrap();
        let result = connection
            .call("book", json!({"flight": "LH123"}))
            .await
            .unwrap();
        assert_eq!(
            said(&result),
            json!({"action": "accept", "seat": "12A", "window": true})
        );
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1);
            assert_eq!(seen[0].message, "Which seat on LH123?");
            assert_eq!(seen[0].schema["properties"]["seat"]["type"], "string");
            assert_eq!(seen[0].schema["properties"]["window"]["type"], "boolean");
            assert!(seen[0].url.is_none());
        }

        // From a registry (the agent's path): the same handler is asked.
        let registry = ToolRegistry::new();
        connection
            .register(&registry, &Mount::new("air"))
            .await
            .unwrap();
        let call = ToolCall::new("c1", "air_book", r#"{"flight":"AF9"}"#);
        let result = registry.dispatch(&call, &ToolSelection::default()).await;
        assert!(!result.is_error, "{result:?}");
        let text = result
            .content
            .iter()
            .filter_map(|p| p.as_text())
            .collect::<String>();
        assert!(text.contains("12A"), "{text}");
        assert_eq!(seen.lock().unwrap()[1].message, "Which seat on AF9?");
        connection.close().await;

        for (answer, action) in [
            (InputAnswer::Decline, "decline"),
            (InputAnswer::Cancel, "cancel"),
        ] {
            let (handler, _) = answering(answer);
            let connection = Connection::connect_asking(&endpoint(), limit, handler)
                .await
                .unwrap();
            let result = connection
                .call("book", json!({"flight": "X1"}))
                .await
                .unwrap();
            assert_eq!(said(&result)["action"], action);
            connection.close().await;
        }

        // Nobody listens: declined.
        let connection = Connection::connect(&endpoint()).await.unwrap();
        let result = connection
            .call("book", json!({"flight": "X2"}))
            .await
            .unwrap();
        assert_eq!(said(&result)["action"], "decline");
        connection.close().await;
    });
}

/// `toolwire mcp call` asks the question on stderr and reads the answer from stdin.
#[test]
fn mcp_call_asks_on_the_terminal() {
    for (typed, want) in [
        (
            "{\"seat\": \"3C\"}\n",
            json!({"action": "accept", "seat": "3C", "window": false}),
        ),
        (
            "cancel\n",
            json!({"action": "cancel", "seat": null, "window": null}),
        ),
        (
            "",
            json!({"action": "decline", "seat": null, "window": null}),
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
            .args(["mcp", "call", "book", r#"{"flight":"LH1"}"#, "--", python()])
            .arg(here("elicit.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(typed.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("the server asks: Which seat on LH1?"),
            "{stderr}"
        );
        assert!(stderr.contains("seat (string, required)"), "{stderr}");
        let result = json_out(&out);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            want,
            "{stderr}"
        );
    }
}
