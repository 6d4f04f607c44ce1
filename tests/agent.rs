//! The agent loop over the mock provider: every provider, concurrency, tool problems as data,
//! turn limit, cancellation, hot updates, switching providers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Barrier;
use toolwire::agent::{Agent, AgentEvent, PROVIDER_MARK, carry_over};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::tools::{Param, Params, Tool, ToolRegistry};
use toolwire::{
    AssistantMessage, ChatRequest, Client, Error, Message, ProviderKind, StreamEvent, ToolCall,
    ToolChoice, ToolDefinition,
};

fn weather_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let params = Params::new()
        .add("city", Param::string().required())
        .add("unit", Param::string().one_of(["celsius", "fahrenheit"]))
        .build()
        .unwrap();
    registry
        .register_fn(
            "get_weather",
            "Current weather",
            params,
            |args| async move {
                let city = args["city"].as_str().unwrap_or_default().to_owned();
                Ok(json!({"city": city, "forecast": format!("sunny-in-{city}")}))
            },
        )
        .unwrap();
    registry
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "tw-agent-model",
        vec![Message::user("Weather in Paris and Tokyo?")],
    )
}

fn call(id: &str, name: &str, raw: &str) -> ToolCall {
    ToolCall::new(id, name, raw)
}

async fn start(kind: ProviderKind, script: Script) -> Option<(MockServer, Agent)> {
    start_with(kind, script, weather_registry()).await
}

async fn start_with(
    kind: ProviderKind,
    script: Script,
    registry: ToolRegistry,
) -> Option<(MockServer, Agent)> {
    let server = match MockServer::start(kind, script).await {
        Ok(s) => s,
        Err(Error::Unsupported { .. }) => return None,
        Err(e) => panic!("{kind}: {e}"),
    };
    let client = Client::builder(kind)
        .base_url(server.url())
        .build()
        .unwrap();
    Some((server, Agent::new(client, registry)))
}

async fn collect(agent: &Agent, req: ChatRequest) -> (Vec<AgentEvent>, Option<Error>) {
    let mut stream = agent.run(req);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// A compact trace: model events collapsed, agent events named.
fn trace(events: &[AgentEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let line = match e {
            AgentEvent::Model(StreamEvent::ToolCallComplete { call, .. }) => {
                format!("call {} {}", call.name, call.raw_arguments)
            }
            AgentEvent::Model(StreamEvent::Finish { reason }) => format!("finish {reason}"),
            AgentEvent::Model(_) => continue,
            AgentEvent::ToolStarted(c) => format!("started {}", c.id),
            AgentEvent::ToolFinished(r) => format!("finished {}", r.call_id),
            AgentEvent::TurnDone { turn, results, .. } => {
                format!("turn {turn} done, {} results", results.len())
            }
            other => format!("{other:?}"),
        };
        out.push(line);
    }
    out
}

#[tokio::test]
async fn full_loop_on_every_provider() {
    let mut covered = Vec::new();
    for kind in ProviderKind::ALL {
        let script = Script::new()
            .then(MockReply::tool_calls([
                call("call_p", "get_weather", r#"{"city":"Paris"}"#),
                call("call_t", "get_weather", r#"{"city":"Tokyo"}"#),
            ]))
            .then(MockReply::text("Paris and Tokyo are both sunny."));
        let Some((server, agent)) = start(kind, script).await else {
            continue;
        };
        covered.push(kind);
        let mut stream = agent.run(request());
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            events.push(e.unwrap());
        }
        let t = trace(&events);
        let started = t.iter().position(|l| l.starts_with("started")).unwrap();
        assert_eq!(
            t[..started].last().map(String::as_str),
            Some("finish tool_calls"),
            "{kind}: {t:?}"
        );
        assert!(
            t.contains(&r#"call get_weather {"city":"Paris"}"#.to_owned()),
            "{kind}"
        );
        let turn1 = t
            .iter()
            .position(|l| l == "turn 1 done, 2 results")
            .unwrap();
        assert_eq!(t.iter().filter(|l| l.starts_with("finished")).count(), 2);
        assert!(
            t[started..turn1]
                .iter()
                .all(|l| l.starts_with("started") || l.starts_with("finished"))
        );
        assert_eq!(t.last().map(String::as_str), Some("turn 2 done, 0 results"));

        let outcome = stream.finish().await.unwrap();
        assert_eq!(outcome.turns, 2, "{kind}");
        assert_eq!(
            outcome.response.text.as_deref(),
            Some("Paris and Tokyo are both sunny.")
        );

        // The second request carried both results in this provider's wire format.
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{kind}");
        let sent = requests[1].body.to_string();
        assert!(
            sent.contains("sunny-in-Paris") && sent.contains("sunny-in-Tokyo"),
            "{kind}: {sent}"
        );
        assert!(!requests[0].body.to_string().contains("sunny-in-Paris"));
    }
    assert!(covered.contains(&ProviderKind::OpenAi), "{covered:?}");
}

#[tokio::test]
async fn outcome_holds_the_conversation_in_order() {
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("call_p", "get_weather", r#"{"city":"Paris"}"#),
            call("call_t", "get_weather", r#"{"city":"Tokyo"}"#),
        ]))
        .then(MockReply::text("Both sunny."));
    let (_server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent.run(request()).finish().await.unwrap();
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.provider, ProviderKind::OpenAi);
    assert_eq!(outcome.response.text.as_deref(), Some("Both sunny."));
    let roles: Vec<String> = outcome
        .messages
        .iter()
        .map(|m| match m {
            Message::User { .. } => "user".to_owned(),
            Message::Assistant(a) => format!("assistant:{}", a.tool_calls.len()),
            Message::Tool(r) => format!("tool:{}", r.call_id),
            Message::System { .. } => "system".to_owned(),
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant:2",
            "tool:call_p",
            "tool:call_t",
            "assistant:0"
        ]
    );
    let Message::Assistant(a) = &outcome.messages[1] else {
        unreachable!()
    };
    assert_eq!(a.extra[PROVIDER_MARK], "openai");
}

#[tokio::test]
async fn calls_of_a_turn_run_concurrently() {
    let barrier = Arc::new(Barrier::new(2));
    let registry = ToolRegistry::new();
    for name in ["left", "right"] {
        let barrier = Arc::clone(&barrier);
        let tool = Tool::from_fn(ToolDefinition::new(name, "waits").unwrap(), move |_| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(json!("met"))
            }
        })
        .with_timeout(Duration::from_secs(10));
        registry.register(tool).unwrap();
    }
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("c_r", "right", "{}"),
            call("c_l", "left", "{}"),
        ]))
        .then(MockReply::text("done"));
    let (_server, agent) = start_with(ProviderKind::OpenAi, script, registry)
        .await
        .unwrap();
    let outcome = agent.run(request()).finish().await.unwrap();
    let results: Vec<(&str, bool)> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some((r.call_id.as_str(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("c_r", false), ("c_l", false)]);
}

#[tokio::test]
async fn tool_problems_go_back_to_the_model_and_the_loop_goes_on() {
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("c1", "get_weather", r#"{"city": Paris"#),
            call("c2", "get_wether", r#"{"city":"Paris"}"#),
            call("c3", "get_weather", r#"{"city":"Paris","unit":"kelvin"}"#),
        ]))
        .then(MockReply::text("Sorry, let me fix that."));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let (events, error) = collect(&agent, request()).await;
    assert!(error.is_none(), "{error:?}");
    let results: Vec<_> = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TurnDone {
                turn: 1, results, ..
            } => Some(results.clone()),
            _ => None,
        })
        .unwrap();
    assert!(results.iter().all(|r| r.is_error));
    assert!(
        results[0]
            .error
            .as_deref()
            .unwrap()
            .contains("not a valid JSON object")
    );
    assert_eq!(
        results[1].error.as_deref(),
        Some(r#"Unknown tool "get_wether"; available tools: get_weather"#)
    );
    assert_eq!(
        results[2].error.as_deref(),
        Some(r#"Invalid parameter "unit": "kelvin" is not one of ["celsius", "fahrenheit"]"#)
    );
    // OpenAI needs one tool message per call id, errors included.
    let messages = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["c1", "c2", "c3"]);
    assert_eq!(
        messages[4]["content"],
        r#"Error: Invalid parameter "unit": "kelvin" is not one of ["celsius", "fahrenheit"]"#
    );
}

#[tokio::test]
async fn max_turns_ends_with_an_error_and_keeps_the_history() {
    let script = Script::new()
        .then(MockReply::tool_calls([call(
            "c1",
            "get_weather",
            r#"{"city":"Paris"}"#,
        )]))
        .repeat_last();
    let (_server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let agent = agent.with_max_turns(2);
    let mut stream = agent.run(request());
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    assert!(matches!(last, Some(Err(Error::MaxTurns(2)))), "{last:?}");
    let messages = stream.messages();
    let assistants = messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count();
    let results = messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count();
    assert_eq!((assistants, results), (2, 2));
    assert!(matches!(stream.finish().await, Err(Error::MaxTurns(2))));
}

#[tokio::test]
async fn provider_errors_end_the_run() {
    let script = Script::new(); // exhausted at once: the mock answers HTTP 400
    let (_server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let err = agent.run(request()).finish().await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
}

/// Flips a flag when dropped: proves a running tool was cancelled.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_running_tools() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let registry = ToolRegistry::new();
    registry
        .register(Tool::from_fn(
            ToolDefinition::new("forever", "never ends").unwrap(),
            move |_| {
                let guard = DropFlag(Arc::clone(&flag));
                async move {
                    let _guard = guard;
                    futures::future::pending::<()>().await;
                    Ok(Value::Null)
                }
            },
        ))
        .unwrap();
    let script = Script::new().then(MockReply::tool_calls([call("c1", "forever", "{}")]));
    let (_server, agent) = start_with(ProviderKind::OpenAi, script, registry)
        .await
        .unwrap();
    let mut stream = agent.run(request());
    loop {
        match stream.next().await {
            Some(Ok(AgentEvent::ToolStarted(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    // Poll once more so the tool is running, then give up on the run.
    let next = tokio::time::timeout(Duration::from_millis(20), stream.next()).await;
    assert!(next.is_err(), "the tool never finishes");
    assert!(!dropped.load(Ordering::SeqCst));
    drop(stream);
    // The tool runs as a task of its own: aborting it completes when the runtime next gets
    // to it, so wait (boundedly) for its future to be dropped.
    for _ in 0..200 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn tools_registered_during_a_run_are_offered_next_turn() {
    let registry = ToolRegistry::new();
    let handle = registry.clone();
    registry
        .register_fn(
            "install",
            "adds a tool",
            json!({"type": "object"}),
            move |_| {
                let handle = handle.clone();
                async move {
                    handle
                        .register_fn("fresh", "new tool", json!({"type": "object"}), |_| async {
                            Ok(json!(1))
                        })
                        .map_err(|e| toolwire::tools::ToolError::new(e.to_string()))?;
                    Ok(json!("installed"))
                }
            },
        )
        .unwrap();
    let script = Script::new()
        .then(MockReply::tool_calls([call("c1", "install", "{}")]))
        .then(MockReply::text("ok"));
    let (server, agent) = start_with(ProviderKind::OpenAi, script, registry)
        .await
        .unwrap();
    let req = request().with_tool_choice(ToolChoice::Required);
    agent.run(req).finish().await.unwrap();
    let requests = server.requests();
    let names = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(0), ["install"]);
    assert_eq!(names(1), ["install", "fresh"]);
    // tool_choice applies to the first turn only.
    assert_eq!(requests[0].body["tool_choice"], "required");
    assert!(requests[1].body.get("tool_choice").is_none());
}

#[tokio::test]
async fn conversation_continues_on_another_provider() {
    // Turn one ran on "gemini" (a hand-made history with its signature); the run continues on
    // OpenAI, which must not receive or keep Gemini's provider data.
    let mut signed = call("call_g", "get_weather", r#"{"city":"Paris"}"#);
    signed
        .extra
        .insert("thought_signature".into(), json!("c2ln"));
    let mut minted = call("call_1", "get_weather", r#"{"city":"Tokyo"}"#);
    minted
        .extra
        .insert(ToolCall::SYNTHETIC_ID.into(), json!(true));
    let mut earlier = AssistantMessage {
        tool_calls: vec![signed.clone(), minted.clone()],
        ..AssistantMessage::default()
    };
    earlier.extra.insert(PROVIDER_MARK.into(), json!("gemini"));
    earlier
        .extra
        .insert("reasoning_signature".into(), json!("cmVh"));
    let mut req = request();
    req.messages.push(Message::Assistant(earlier));
    req.messages.push(Message::Tool(toolwire::ToolResult::ok(
        &signed,
        json!("sunny"),
    )));
    req.messages.push(Message::Tool(toolwire::ToolResult::ok(
        &minted,
        json!("rain"),
    )));
    req.messages.push(Message::user("And in Oslo?"));

    let script = Script::new()
        .then(MockReply::tool_calls([call(
            "call_o",
            "get_weather",
            r#"{"city":"Oslo"}"#,
        )]))
        .then(MockReply::text("Oslo is sunny."));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent.run(req).finish().await.unwrap();
    let Message::Assistant(first) = &outcome.messages[1] else {
        unreachable!()
    };
    assert!(first.extra.is_empty(), "{:?}", first.extra);
    assert!(first.tool_calls[0].extra.is_empty());
    assert!(
        first.tool_calls[1].has_synthetic_id(),
        "toolwire's own mark stays"
    );
    let sent = server.requests()[0].body.to_string();
    assert!(!sent.contains("c2ln") && !sent.contains("cmVh"), "{sent}");
    assert!(
        sent.contains("call_g"),
        "the history is re-encoded for the new wire"
    );
    let Message::Assistant(later) = &outcome.messages[5] else {
        unreachable!()
    };
    assert_eq!(later.extra[PROVIDER_MARK], "openai");
}

#[test]
fn carry_over_keeps_data_of_the_same_provider() {
    let mut signed = call("c", "f", "{}");
    signed
        .extra
        .insert("thought_signature".into(), json!("c2ln"));
    let mut a = AssistantMessage {
        tool_calls: vec![signed],
        ..AssistantMessage::default()
    };
    a.extra.insert(PROVIDER_MARK.into(), json!("gemini"));
    let mut messages = vec![Message::Assistant(a)];
    carry_over(&mut messages, ProviderKind::Gemini);
    let Message::Assistant(a) = &messages[0] else {
        unreachable!()
    };
    assert_eq!(a.tool_calls[0].extra["thought_signature"], "c2ln");
    carry_over(&mut messages, ProviderKind::Glm);
    let Message::Assistant(a) = &messages[0] else {
        unreachable!()
    };
    assert!(a.tool_calls[0].extra.is_empty() && a.extra.is_empty());
}

#[tokio::test]
async fn minted_ids_stay_unique_across_turns() {
    // A server that sends no ids: toolwire mints call_1 on both turns.
    let no_id = |city: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"type\":\"function\",\"function\":{{\"name\":\"get_weather\",\"arguments\":\"{{\\\"city\\\":\\\"{city}\\\"}}\"}}}}]}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
        )
    };
    let script = Script::new()
        .then(MockReply::raw_sse(no_id("Paris")))
        .then(MockReply::raw_sse(no_id("Tokyo")))
        .then(MockReply::text("done"));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent.run(request()).finish().await.unwrap();
    let ids: Vec<String> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "{ids:?}");
    assert!(ids[1].ends_with("_t2"), "{ids:?}");
    let third = server.requests()[2].body.to_string();
    assert!(third.contains(&ids[0]) && third.contains(&ids[1]));
}
