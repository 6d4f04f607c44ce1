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
            // Content that breaks the form is never sent: declined.
            (InputAnswer::Accept(json!({"seat": 5})), "decline"),
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

/// Runs an agent (a mock OpenAI model that calls `air_book` once, then answers) over a
/// connection made without a handler, and answers each `InputRequested` event with `answer`
/// (`None`: the events are not read at all). Returns what the server said the client
/// answered, and the errors the reply gave.
async fn agent_run(
    answer: Option<fn(&toolwire::tools::InputReply) -> Vec<String>>,
) -> (Value, Vec<String>, usize) {
    use futures::StreamExt;
    use toolwire::agent::AgentEvent;
    use toolwire::{ChatRequest, Message};

    let connection = Connection::connect(&endpoint()).await.unwrap();
    let call = ToolCall::new("call_7", "air_book", r#"{"flight":"BA5"}"#);
    let (agent, _mock) = crate::mcp::agent_calling(&connection, "air", call, "booked").await;
    let request = ChatRequest::new("gpt-4.1", vec![Message::user("book it")]);
    let mut run = agent.run(request);
    let (mut errors, mut asked) = (Vec::new(), 0);
    let outcome = match answer {
        None => run.finish().await.unwrap(),
        Some(answer) => {
            while let Some(event) = run.next().await {
                if let AgentEvent::InputRequested {
                    call_id,
                    name,
                    request,
                    reply,
                } = event.unwrap()
                {
                    asked += 1;
                    assert_eq!((call_id.as_str(), name.as_str()), ("call_7", "air_book"));
                    assert_eq!(request.message, "Which seat on BA5?");
                    assert_eq!(request.tool.as_deref(), Some("book"));
                    assert_eq!(request.call_id.as_deref(), Some("call_7"));
                    assert_eq!(request.schema["properties"]["seat"]["type"], "string");
                    errors.extend(answer(&reply));
                }
            }
            run.finish().await.unwrap()
        }
    };
    assert_eq!(outcome.response.text.as_deref(), Some("booked"));
    let said = crate::mcp::first_result_json(&outcome);
    connection.close().await;
    (said, errors, asked)
}

/// An agent's caller answers the server's question through `AgentEvent::InputRequested`.
#[test]
fn input_requests_become_agent_events_answered_by_the_caller() {
    runtime().block_on(async {
        let (said, errors, asked) = agent_run(Some(|reply| {
            reply.accept(json!({"seat": "1A", "window": true})).unwrap();
            Vec::new()
        }))
        .await;
        assert_eq!(asked, 1);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            said,
            json!({"action": "accept", "seat": "1A", "window": true})
        );

        let (said, _, asked) = agent_run(Some(|reply| {
            reply.cancel().unwrap();
            Vec::new()
        }))
        .await;
        assert_eq!(asked, 1);
        assert_eq!(said["action"], "cancel");
    });
}

/// Nobody reads the events (`finish`), or the reply is dropped: declined.
#[test]
fn an_unanswered_input_request_is_declined() {
    runtime().block_on(async {
        let (said, _, asked) = agent_run(None).await;
        assert_eq!(asked, 0);
        assert_eq!(said["action"], "decline");

        let (said, _, asked) = agent_run(Some(|_reply| Vec::new())).await;
        assert_eq!(asked, 1);
        assert_eq!(said["action"], "decline");
    });
}

/// Content that breaks the form is refused by the reply, naming the property, and never
/// reaches the server; the answer given after it does.
#[test]
fn an_invalid_accept_is_refused_by_name() {
    runtime().block_on(async {
        let (said, errors, _) = agent_run(Some(|reply| {
            let mut errors = Vec::new();
            for bad in [
                json!({"seat": 12}),
                json!({"window": true}),
                json!({"seat": "2B", "window": "yes"}),
                json!({"seat": "2B", "meal": "fish"}),
            ] {
                let e = reply.accept(bad).unwrap_err();
                assert!(matches!(e, toolwire::Error::Input { .. }), "{e:?}");
                errors.push(e.to_string());
            }
            assert!(!reply.is_answered());
            reply.accept(json!({"seat": "2B"})).unwrap();
            errors
        }))
        .await;
        assert!(
            errors[0].contains("\"seat\"") && errors[0].contains("string"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("\"seat\"") && errors[1].contains("requires"),
            "{errors:?}"
        );
        assert!(errors[2].contains("\"window\""), "{errors:?}");
        assert!(errors[3].contains("\"meal\""), "{errors:?}");
        assert_eq!(
            said,
            json!({"action": "accept", "seat": "2B", "window": false})
        );
    });
}
