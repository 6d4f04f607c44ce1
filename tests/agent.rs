//! The agent loop over the mock provider: every provider, concurrency, tool problems as data,
//! turn limit, cancellation, hot updates, switching providers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Barrier;
use toolwire::agent::{
    AfterTurn, Agent, AgentEvent, HOOK_MARK, PROVIDER_MARK, StopReason, StopWhen, ToolDecision,
    TurnReport, carry_over,
};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::tools::{Param, Params, Tool, ToolRegistry};
use toolwire::{
    AssistantMessage, ChatRequest, ChatResponse, Client, Error, FinishReason, Message,
    ProviderKind, StreamEvent, ToolCall, ToolChoice, ToolDefinition, Usage,
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
        let at = |line: &str| t.iter().position(|l| l == line);
        // Each call starts once it is final (its completion event), and finishes before the
        // turn is done.
        let paris = at(r#"call get_weather {"city":"Paris"}"#).unwrap();
        let tokyo = at(r#"call get_weather {"city":"Tokyo"}"#).unwrap();
        let turn1 = at("turn 1 done, 2 results").unwrap();
        assert!(paris < at("started call_p").unwrap(), "{kind}: {t:?}");
        assert!(tokyo < at("started call_t").unwrap(), "{kind}: {t:?}");
        assert!(at("finished call_p").unwrap() < turn1, "{kind}: {t:?}");
        assert!(at("finished call_t").unwrap() < turn1, "{kind}: {t:?}");
        assert!(at("finish tool_calls").unwrap() < turn1, "{kind}: {t:?}");
        assert_eq!(t.iter().filter(|l| l.starts_with("finished")).count(), 2);
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
            other => format!("{other:?}"),
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
    // Read on (the rest of the turn may still stream) until nothing more comes: the tool is
    // running and never finishes. Then give up on the run.
    loop {
        match tokio::time::timeout(Duration::from_millis(50), stream.next()).await {
            Err(_) => break,
            Ok(Some(Ok(AgentEvent::Model(_)))) => {}
            other => panic!("the tool never finishes: {other:?}"),
        }
    }
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
    let earlier = AssistantMessage::default()
        .with_tool_calls([signed.clone(), minted.clone()])
        .with_extra(PROVIDER_MARK, json!("gemini"))
        .with_extra("reasoning_signature", json!("cmVh"));
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
    let a = AssistantMessage::default()
        .with_tool_calls([signed])
        .with_extra(PROVIDER_MARK, json!("gemini"));
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

#[test]
fn a_history_made_on_several_wires_encodes_for_every_wire() {
    // One call turn replayed from each of four wires' own captures (Anthropic with signed
    // thinking, Ollama without ids, Gemini with thought signatures, OpenAI), each answered,
    // then a user message: after `carry_over` every built-in provider encodes the history.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let turns = [
        (
            ProviderKind::Anthropic,
            "anthropic/quirk_thinking_blocks/response.sse",
        ),
        (
            ProviderKind::Ollama,
            "ollama/quirk_missing_ids_and_index/response.ndjson",
        ),
        (
            ProviderKind::Gemini,
            "gemini/quirk_parallel_one_per_chunk/response.sse",
        ),
        (
            ProviderKind::OpenAi,
            "openai/stream_parallel_calls/response.sse",
        ),
    ];
    let mut messages = vec![Message::user("Plan my trip.")];
    let mut names = std::collections::BTreeSet::new();
    for (t, (kind, path)) in turns.iter().enumerate() {
        let provider = toolwire::provider_for(*kind).unwrap();
        let body = std::fs::read(root.join(path)).unwrap();
        let mut response = toolwire::replay::replay(provider.as_ref(), &body)
            .unwrap()
            .response;
        // Minted ids are unique per turn, as the agent makes them.
        for call in &mut response.tool_calls {
            if call.has_synthetic_id() {
                call.id = format!("call_t{t}_{}", call.id);
            }
            names.insert(call.name.clone());
        }
        let calls = response.tool_calls.clone();
        let mut assistant = AssistantMessage::from(response);
        assistant
            .extra
            .insert(PROVIDER_MARK.into(), json!(kind.name()));
        messages.push(Message::Assistant(assistant));
        for call in &calls {
            messages.push(Message::Tool(toolwire::ToolResult::ok(
                call,
                json!({"ok": t}),
            )));
        }
    }
    messages.push(Message::user("Summarize."));
    let tools: Vec<ToolDefinition> = names
        .iter()
        .map(|n| ToolDefinition::new(n.as_str(), "").unwrap())
        .collect();
    for kind in ProviderKind::ALL {
        let mut history = messages.clone();
        carry_over(&mut history, kind);
        let req = ChatRequest::new("m", history).with_tools(tools.clone());
        let provider = toolwire::provider_for(kind).unwrap();
        let body = provider
            .encode(&req, true)
            .unwrap_or_else(|e| panic!("{kind}: {e}"))
            .body
            .to_string();
        // Anthropic's signed thinking goes back to Anthropic only.
        let signed = body.contains("EqQBCkYIBxgCKkDTwThinkingSignatureOne");
        assert_eq!(signed, kind == ProviderKind::Anthropic, "{kind}");
    }
}

// ---- Early start, hooks and stop conditions ----

/// A registry with `slow`: sleeps `ms` milliseconds, answers its `n`.
fn slow_registry(ms: u64) -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_fn(
            "slow",
            "sleeps",
            json!({"type": "object"}),
            move |args| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!({"n": args["n"]}))
            },
        )
        .unwrap();
    registry
}

/// A Gemini stream of three whole calls (one per event) and the finish: each call is final as
/// it arrives.
fn gemini_three_calls() -> Vec<u8> {
    let mut body = String::new();
    for n in 1..=3 {
        body.push_str(&format!(
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"functionCall\": {{\"name\": \"slow\", \"args\": {{\"n\": {n}}}}}}}], \"role\": \"model\"}}, \"index\": 0}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}], \"role\": \"model\"}, \"finishReason\": \"STOP\", \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 20, \"candidatesTokenCount\": 9, \"totalTokenCount\": 29}}\n\n");
    body.into_bytes()
}

/// Runs the three-call Gemini turn with tools of `tool_ms` and `gap_ms` between stream events;
/// returns the trace and the time until the first turn was done (the test's own clock).
async fn three_slow_calls(early: bool, tool_ms: u64, gap_ms: u64) -> (Vec<String>, Duration) {
    let script = Script::new()
        .then(MockReply::raw_sse(gemini_three_calls()).delay(Duration::from_millis(gap_ms)))
        .then(MockReply::text("done"));
    let (_server, agent) = start_with(ProviderKind::Gemini, script, slow_registry(tool_ms))
        .await
        .unwrap();
    let agent = agent.with_early_start(early);
    let clock = std::time::Instant::now();
    let mut stream = agent.run(request());
    let mut events = Vec::new();
    let mut turn1 = None;
    while let Some(e) = stream.next().await {
        let e = e.unwrap();
        if matches!(e, AgentEvent::TurnDone { turn: 1, .. }) {
            turn1 = Some(clock.elapsed());
        }
        events.push(e);
    }
    let results: Vec<Value> = stream
        .finish()
        .await
        .unwrap()
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.output["n"].clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [json!(1), json!(2), json!(3)],
        "results in call order"
    );
    (trace(&events), turn1.unwrap())
}

#[tokio::test]
async fn calls_start_as_soon_as_they_are_final() {
    let (tool_ms, gap_ms) = (300, 150);
    let (early, early_time) = three_slow_calls(true, tool_ms, gap_ms).await;
    let (late, late_time) = three_slow_calls(false, tool_ms, gap_ms).await;
    let at = |t: &[String], line: &str| t.iter().position(|l| l == line).unwrap();
    // Early: each call starts right after its completion, before the turn's finish.
    let finish = at(&early, "finish tool_calls");
    for (i, id) in ["call_0", "call_1", "call_2"].iter().enumerate() {
        let started = at(&early, &format!("started {id}"));
        assert!(started < finish, "{early:?}");
        assert!(at(&early, &format!("call slow {{\"n\":{}}}", i + 1)) < started);
    }
    // The first call was running while the next one streamed.
    assert!(at(&early, "started call_0") < at(&early, r#"call slow {"n":2}"#));
    // End of turn: nothing starts before the finish.
    let finish = at(&late, "finish tool_calls");
    assert!(
        late.iter().take(finish).all(|l| !l.starts_with("started")),
        "{late:?}"
    );
    // The gain is measured, not asserted (no timing assertions): printed for the record.
    eprintln!(
        "three calls of {tool_ms} ms, {gap_ms} ms between stream events: first turn done after \
         {early_time:?} (early start) vs {late_time:?} (end of turn), saved {:?}",
        late_time.saturating_sub(early_time)
    );
}

#[tokio::test]
async fn openai_calls_start_when_the_next_index_begins() {
    // OpenAI's own dialect (the compatible one, used for other base URLs, waits for the end).
    let script = Script::new()
        .then(
            MockReply::tool_calls([
                call("c_a", "get_weather", r#"{"city":"Paris"}"#),
                call("c_b", "get_weather", r#"{"city":"Tokyo"}"#),
            ])
            .delay(Duration::from_millis(5)),
        )
        .then(MockReply::text("ok"));
    let server = MockServer::start(ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let official = Box::new(toolwire::providers::openai::OpenAi::new());
    let client = Client::builder_with(official)
        .base_url(server.url())
        .build()
        .unwrap();
    let agent = Agent::new(client, weather_registry());
    let (events, error) = collect(&agent, request()).await;
    assert!(error.is_none(), "{error:?}");
    let t = trace(&events);
    let at = |line: &str| t.iter().position(|l| l == line).unwrap();
    assert!(
        at("started c_a") < at(r#"call get_weather {"city":"Tokyo"}"#),
        "{t:?}"
    );
    assert!(
        at("started c_b") > at(r#"call get_weather {"city":"Tokyo"}"#),
        "{t:?}"
    );
}

#[tokio::test]
async fn before_tool_hook_approves_denies_and_rewrites() {
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("c_ok", "get_weather", r#"{"city":"Paris"}"#),
            call("c_no", "get_weather", r#"{"city":"Atlantis"}"#),
            call("c_re", "get_weather", r#"{"city":"Oslo "}"#),
            call("c_bad", "get_weather", r#"{"city": Oslo"#),
        ]))
        .then(MockReply::text("Done."));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let agent = agent.before_tool(move |call: ToolCall| {
        seen.lock().unwrap().push(call.id.clone());
        async move {
            match call.arguments.as_ref().and_then(|a| a["city"].as_str()) {
                Some("Atlantis") => ToolDecision::Deny("Atlantis is off limits.".into()),
                Some(city) if city.ends_with(' ') => {
                    ToolDecision::Rewrite(json!({"city": city.trim()}))
                }
                _ => ToolDecision::Approve,
            }
        }
    });
    let (events, error) = collect(&agent, request()).await;
    assert!(error.is_none(), "{error:?}");
    // Only runnable calls are asked.
    let mut asked = asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, ["c_no", "c_ok", "c_re"]);
    // Events: the denial and the rewrite; denied calls never start.
    let denied: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolDenied { call, message } => Some((call.id.clone(), message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        denied,
        [("c_no".to_owned(), "Atlantis is off limits.".to_owned())]
    );
    let rewritten: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolRewritten { call, original } => {
                Some((original.clone(), call.raw_arguments.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        rewritten,
        [(
            r#"{"city":"Oslo "}"#.to_owned(),
            r#"{"city":"Oslo"}"#.to_owned()
        )]
    );
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolStarted(c) => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    assert!(!started.contains(&"c_no"), "{started:?}");
    // History: results in call order, the decisions marked on the model's calls.
    let outcome_messages = {
        let Some(AgentEvent::TurnDone {
            response, results, ..
        }) = events
            .iter()
            .find(|e| matches!(e, AgentEvent::TurnDone { turn: 1, .. }))
        else {
            panic!("no first turn")
        };
        (response.clone(), results.clone())
    };
    let (response, results) = outcome_messages;
    assert_eq!(results[0].output["forecast"], "sunny-in-Paris");
    assert!(results[1].is_error);
    assert_eq!(results[1].error.as_deref(), Some("Atlantis is off limits."));
    assert_eq!(results[2].output["forecast"], "sunny-in-Oslo");
    assert!(results[3].is_error, "malformed: never run");
    assert!(response.tool_calls[0].extra.get(HOOK_MARK).is_none());
    assert_eq!(
        response.tool_calls[1].extra[HOOK_MARK],
        json!({"decision": "denied", "message": "Atlantis is off limits."})
    );
    assert_eq!(
        response.tool_calls[2].extra[HOOK_MARK],
        json!({"decision": "rewritten", "arguments": {"city": "Oslo"}})
    );
    // The model's own text is kept byte for byte.
    assert_eq!(response.tool_calls[2].raw_arguments, r#"{"city":"Oslo "}"#);
    // The model sees the denial message.
    let sent = server.requests()[1].body.to_string();
    assert!(sent.contains("Atlantis is off limits."), "{sent}");
}

#[tokio::test]
async fn a_hook_that_panics_or_hangs_is_an_error_result_and_the_loop_goes_on() {
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("c_panic", "get_weather", r#"{"city":"Paris"}"#),
            call("c_hang", "get_weather", r#"{"city":"Tokyo"}"#),
        ]))
        .then(MockReply::text("Done."));
    let (_server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let agent = agent
        .with_hook_timeout(Duration::from_millis(50))
        .before_tool(|call: ToolCall| async move {
            if call.id == "c_panic" {
                panic!("approval service exploded");
            }
            futures::future::pending::<()>().await;
            ToolDecision::Approve
        })
        .after_turn(|_report: TurnReport| async move {
            panic!("after-turn hook exploded");
        });
    let (events, error) = collect(&agent, request()).await;
    assert!(error.is_none(), "{error:?}");
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookFailed { hook, message } => Some(format!("{hook}: {message}")),
            _ => None,
        })
        .collect();
    assert!(
        failed.contains(&"before_tool: the hook panicked: approval service exploded".to_owned()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&"before_tool: the hook did not answer within 50ms".to_owned()),
        "{failed:?}"
    );
    assert!(
        failed.contains(&"after_turn: the hook panicked: after-turn hook exploded".to_owned()),
        "{failed:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStarted(_)))
    );
    let t = trace(&events);
    assert!(
        t.contains(&"turn 2 done, 0 results".to_owned()),
        "the loop went on: {t:?}"
    );
}

#[tokio::test]
async fn stop_when_a_named_tool_is_called() {
    let script = Script::new()
        .then(MockReply::tool_calls([call(
            "c1",
            "get_weather",
            r#"{"city":"Paris"}"#,
        )]))
        .then(MockReply::tool_calls([call(
            "c2",
            "final_answer",
            r#"{"text":"sunny"}"#,
        )]))
        .then(MockReply::text("never asked"));
    let registry = weather_registry();
    registry
        .register_fn(
            "final_answer",
            "ends",
            json!({"type": "object"}),
            |a| async move { Ok(a["text"].clone()) },
        )
        .unwrap();
    let (server, agent) = start_with(ProviderKind::OpenAi, script, registry)
        .await
        .unwrap();
    let agent = agent.with_stop(StopWhen::ToolCalled("final_answer".into()));
    let mut stream = agent.run(request());
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e.unwrap());
    }
    assert_eq!(
        events.last(),
        Some(&AgentEvent::Stopped(StopReason::ToolCalled(
            "final_answer".into()
        )))
    );
    let outcome = stream.finish().await.unwrap();
    assert_eq!(outcome.turns, 2);
    assert_eq!(
        outcome.stopped,
        Some(StopReason::ToolCalled("final_answer".into()))
    );
    // The named tool ran; its result is the last message; no third request.
    let Some(Message::Tool(last)) = outcome.messages.last() else {
        panic!("{:?}", outcome.messages.last())
    };
    assert_eq!(last.output, json!("sunny"));
    assert_eq!(server.requests().len(), 2);
}

/// A tool-call turn that reports `input` + `output` tokens.
fn costly_turn(id: &str, input: u64, output: u64) -> MockReply {
    let response = ChatResponse::default()
        .with_tool_calls([call(id, "get_weather", r#"{"city":"Paris"}"#)])
        .with_finish_reason(FinishReason::ToolCalls)
        .with_usage(Usage::new(input, output));
    MockReply::Response(response)
}

#[tokio::test]
async fn stop_on_a_token_or_time_budget() {
    let script = Script::new()
        .then(costly_turn("c1", 30, 10))
        .then(costly_turn("c2", 45, 10))
        .then(costly_turn("c3", 60, 10));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent
        .with_stop(StopWhen::TokenBudget(90))
        .run(request())
        .finish()
        .await
        .unwrap();
    assert_eq!(
        outcome.stopped,
        Some(StopReason::TokenBudget {
            used: 95,
            budget: 90
        })
    );
    assert_eq!((outcome.turns, server.requests().len()), (2, 2));

    let script = Script::new().then(costly_turn("c1", 1, 1)).repeat_last();
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent
        .with_stop(StopWhen::TimeBudget(Duration::ZERO))
        .run(request())
        .finish()
        .await
        .unwrap();
    assert!(
        matches!(outcome.stopped, Some(StopReason::TimeBudget { .. })),
        "{:?}",
        outcome.stopped
    );
    assert_eq!((outcome.turns, server.requests().len()), (1, 1));
}

#[tokio::test]
async fn after_turn_hook_stops_or_edits_the_next_request() {
    // Stop after the first turn.
    let script = Script::new()
        .then(MockReply::tool_calls([call(
            "c1",
            "get_weather",
            r#"{"city":"Paris"}"#,
        )]))
        .then(MockReply::text("never asked"));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let outcome = agent
        .after_turn(|_report: TurnReport| async { AfterTurn::Stop })
        .run(request())
        .finish()
        .await
        .unwrap();
    assert_eq!(outcome.stopped, Some(StopReason::Hook));
    assert_eq!(server.requests().len(), 1);

    // Edit: a reminder after the tool turn, and a follow-up after the answer continues the run.
    let script = Script::new()
        .then(MockReply::tool_calls([call(
            "c1",
            "get_weather",
            r#"{"city":"Paris"}"#,
        )]))
        .then(MockReply::text("Sunny in Paris."))
        .then(MockReply::text("Bring sunglasses."));
    let (server, agent) = start(ProviderKind::OpenAi, script).await.unwrap();
    let agent = agent.after_turn(|report: TurnReport| async move {
        let mut next = report.next;
        match report.turn {
            1 => {
                assert_eq!(report.results.len(), 1);
                next.messages.push(Message::user("Answer in one sentence."));
                next.temperature = Some(0.0);
                AfterTurn::Edit(Box::new(next))
            }
            2 => {
                next.messages.push(Message::user("Any advice?"));
                AfterTurn::Edit(Box::new(next))
            }
            _ => AfterTurn::Continue,
        }
    });
    let outcome = agent.run(request()).finish().await.unwrap();
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.stopped, None);
    assert_eq!(outcome.response.text.as_deref(), Some("Bring sunglasses."));
    let requests = server.requests();
    let second = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(second.last().unwrap()["content"], "Answer in one sentence.");
    assert_eq!(requests[1].body["temperature"], 0.0);
    let third = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(third.last().unwrap()["content"], "Any advice?");
    // The edits are the conversation.
    assert!(
        outcome
            .messages
            .iter()
            .any(|m| m == &Message::user("Answer in one sentence."))
    );
}

/// Adds two integers.
#[toolwire::tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test]
async fn one_router_picks_the_provider_by_model_string_and_prompt_is_one_call() {
    use toolwire::client::Router;
    let openai = MockServer::start(
        ProviderKind::OpenAi,
        Script::new()
            .then(MockReply::tool_calls([call(
                "c1",
                "add",
                r#"{"a":2,"b":3}"#,
            )]))
            .then(MockReply::text("2 + 3 = 5")),
    )
    .await
    .unwrap();
    let gemini = MockServer::start(
        ProviderKind::Gemini,
        Script::new().then(MockReply::text("hello from gemini")),
    )
    .await
    .unwrap();
    let router = Router::new()
        .with_client(
            Client::builder(ProviderKind::OpenAi)
                .base_url(openai.url())
                .api_key("k")
                .build()
                .unwrap(),
        )
        .with_client(
            Client::builder(ProviderKind::Gemini)
                .base_url(gemini.url())
                .api_key("k")
                .build()
                .unwrap(),
        );

    let registry = ToolRegistry::new();
    registry.register_typed(Add).unwrap();
    let agent = Agent::routed(&router, "openai/gpt-4o-mini", registry).unwrap();
    assert_eq!(agent.provider(), ProviderKind::OpenAi);
    assert_eq!(agent.prompt("add 2 and 3").await.unwrap(), "2 + 3 = 5");
    let sent = openai.requests();
    assert_eq!(sent.len(), 2, "a call, then the final answer");
    assert_eq!(
        sent[0].body["model"], "gpt-4o-mini",
        "the provider prefix is not sent"
    );
    assert_eq!(
        sent[1].body["messages"][2]["content"], "5",
        "the tool ran: {}",
        sent[1].body
    );

    // The same router, another string: another provider.
    let reply = router
        .chat(&ChatRequest::new(
            "gemini/gemini-2.5-flash",
            vec![Message::user("hi")],
        ))
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("hello from gemini"));
    assert!(gemini.requests()[0].path.contains("gemini-2.5-flash"));
    assert!(openai.requests().len() == 2, "nothing more went to openai");

    // A string that names no provider says what to write.
    let err = router
        .chat(&ChatRequest::new("gpt-4o", vec![Message::user("hi")]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("PROVIDER/MODEL"), "{err}");
    let err = Agent::routed(&router, "opnai/gpt-4o", ToolRegistry::new()).unwrap_err();
    assert!(
        err.to_string().contains("unknown provider \"opnai\""),
        "{err}"
    );
}

#[tokio::test]
async fn prompt_uses_the_providers_default_model_when_none_is_set() {
    let Some((server, agent)) = start(
        ProviderKind::Anthropic,
        Script::new().then(MockReply::text("hi")),
    )
    .await
    else {
        return;
    };
    assert_eq!(agent.prompt("hello").await.unwrap(), "hi");
    assert_eq!(server.requests()[0].body["model"], "claude-haiku-4-5");
}

/// Looks through three wikis, reporting as it goes (through the reporter of its task).
#[toolwire::tool]
async fn search_wikis(query: String) -> String {
    let progress = toolwire::tools::Reporter::current();
    progress.summary(format!("Searching 3 wikis for {query}…"));
    for wiki in 1..=3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        progress.report(
            toolwire::tools::Progress::new(f64::from(wiki))
                .with_total(3.0)
                .with_message(format!("wiki {wiki} searched")),
        );
    }
    format!("found {query} in wiki 2")
}

#[tokio::test]
async fn progress_and_summary_are_events_before_the_result_and_never_reach_the_model() {
    use toolwire::tools::Progress;
    let registry = ToolRegistry::new();
    registry.register_typed(SearchWikis).unwrap();
    // A closure tool reporting through its input, in a tight loop: coalesced, not flooded.
    let def = ToolDefinition::new("count", "Counts").unwrap();
    registry
        .register(Tool::from_input_fn(def, |input| async move {
            input.progress.summary("Counting to 100000");
            for i in 1..=100_000u32 {
                input
                    .progress
                    .report(Progress::new(f64::from(i)).with_total(100_000.0));
            }
            Ok(json!("counted"))
        }))
        .unwrap();
    let script = Script::new()
        .then(MockReply::tool_calls([
            call("call_w", "search_wikis", r#"{"query":"maid"}"#),
            call("call_c", "count", "{}"),
        ]))
        .then(MockReply::text("It is in wiki 2."));
    let (server, agent) = start_with(ProviderKind::OpenAi, script, registry)
        .await
        .unwrap();
    let (events, err) = collect(&agent, request()).await;
    assert!(err.is_none(), "{err:?}");

    let of = |id: &str| -> Vec<&AgentEvent> {
        events
            .iter()
            .filter(|e| match e {
                AgentEvent::ToolStarted(c) => c.id == id,
                AgentEvent::ToolFinished(r) => r.call_id == id,
                AgentEvent::ToolProgress { call_id, .. }
                | AgentEvent::ToolSummary { call_id, .. } => call_id == id,
                _ => false,
            })
            .collect()
    };
    let wiki = of("call_w");
    assert!(
        matches!(wiki.first(), Some(AgentEvent::ToolStarted(_))),
        "{wiki:?}"
    );
    assert!(
        matches!(wiki.last(), Some(AgentEvent::ToolFinished(_))),
        "{wiki:?}"
    );
    assert_eq!(
        wiki[1],
        &AgentEvent::ToolSummary {
            call_id: "call_w".into(),
            name: "search_wikis".into(),
            summary: "Searching 3 wikis for maid…".into(),
        }
    );
    let reported: Vec<(f64, Option<f64>, Option<String>)> = wiki
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { progress: p, .. } => {
                Some((p.progress, p.total, p.message.clone()))
            }
            _ => None,
        })
        .collect();
    // The reports are 150 ms apart, three times the coalescing interval, so each normally
    // arrives; on a loaded machine two may merge (the latest wins): in order, ending with the
    // last.
    let expected = [1.0, 2.0, 3.0].map(|n| (n, Some(3.0), Some(format!("wiki {n} searched"))));
    let mut rest = expected.iter();
    assert!(
        reported.iter().all(|r| rest.any(|e| e == r)),
        "{reported:?}"
    );
    assert_eq!(reported.last(), expected.last(), "{reported:?}");
    let count = of("call_c");
    let progress_events = count
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolProgress { .. }))
        .count();
    // 100,000 reports in a tight loop: coalesced to a handful (one per 50 ms at most).
    assert!((1..=50).contains(&progress_events), "{count:?}");
    assert!(
        matches!(count[count.len() - 2], AgentEvent::ToolProgress { progress, .. } if progress.progress == 100_000.0),
        "the last report goes out before the result: {count:?}"
    );

    // Neither the summaries nor the progress messages reach the model, the results or the
    // conversation.
    let second = serde_json::to_string(&server.requests()[1].body).unwrap();
    assert!(second.contains("found maid in wiki 2"), "{second}");
    for secret in ["Searching 3 wikis", "Counting to", "wiki 3 searched"] {
        assert!(
            !second.contains(secret),
            "{secret} reached the model: {second}"
        );
    }
    let history = format!("{:?}", events.last());
    assert!(!history.contains("Searching 3 wikis"), "{history}");
}
