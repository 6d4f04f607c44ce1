//! Realtime sessions and the realtime agent over the WebSocket mock on loopback, for every
//! dialect: calls run at their end event, results accepted in the dialect's shape, cuts and
//! cancellations never run a call, error events keep the session going, recordings replay to
//! what was seen live, and the call-rate guard.
#![cfg(all(feature = "realtime", feature = "mock"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire::realtime::agent::{CallRateGuard, RealtimeAgent, RealtimeAgentEvent};
use toolwire::realtime::mock::{RealtimeMockServer, RealtimeReply, RealtimeScript};
use toolwire::realtime::replay;
use toolwire::realtime::{RealtimeEvent, RealtimeKind, RealtimeSession, SessionConfig};
use toolwire::tools::ToolRegistry;
use toolwire::{ApiError, ArgumentsErrorKind, ChatResponse, ToolCall};

fn registry() -> ToolRegistry {
    let tools = ToolRegistry::new();
    tools
        .register_fn(
            "get_weather",
            "Weather in a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            |args| async move { Ok(json!({"city": args["city"], "temp_c": 18})) },
        )
        .unwrap();
    tools
}

/// A session with `agent`'s tools against a mock server playing `script`.
async fn connect(
    kind: RealtimeKind,
    agent: &RealtimeAgent,
    script: RealtimeScript,
) -> (RealtimeSession, RealtimeMockServer) {
    let server = RealtimeMockServer::start(kind, script).await.unwrap();
    let config = SessionConfig::new("m", agent.definitions());
    let session = RealtimeSession::builder(kind, config)
        .url(server.url())
        .connect()
        .await
        .unwrap();
    (session, server)
}

/// Runs the agent until the session ends (the test script ends with a text answer, on which
/// the session is closed); returns every event.
async fn drive(
    kind: RealtimeKind,
    agent: RealtimeAgent,
    script: RealtimeScript,
) -> (Vec<RealtimeAgentEvent>, RealtimeMockServer) {
    let (session, server) = connect(kind, &agent, script).await;
    session.send_text("go").unwrap();
    let mut stream = agent.run(session);
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        let e = e.unwrap();
        if let RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) = &e
            && result.tool_calls.is_empty()
        {
            stream.close();
        }
        events.push(e);
    }
    (events, server)
}

fn calls(ids: &[(&str, &str)]) -> RealtimeReply {
    RealtimeReply::tool_calls(
        ids.iter()
            .map(|(id, city)| ToolCall::new(*id, "get_weather", json!({"city": city}).to_string())),
    )
}

fn errors(events: &[RealtimeAgentEvent]) -> Vec<&ApiError> {
    events
        .iter()
        .filter_map(|e| match e {
            RealtimeAgentEvent::Session(RealtimeEvent::Error(e)) => Some(e),
            _ => None,
        })
        .collect()
}

fn finished(events: &[RealtimeAgentEvent]) -> Vec<&toolwire::ToolResult> {
    events
        .iter()
        .filter_map(|e| match e {
            RealtimeAgentEvent::ToolFinished(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_dialect_runs_calls_at_their_end_and_the_server_accepts_the_results() {
    for kind in RealtimeKind::ALL {
        let script = RealtimeScript::new()
            .then(calls(&[("call_a", "Paris"), ("call_b", "Oslo")]))
            .then(RealtimeReply::text("Paris 18, Oslo 18."));
        let (events, server) = drive(kind, RealtimeAgent::new(registry()), script).await;
        assert!(errors(&events).is_empty(), "{kind}: {:?}", errors(&events));
        let results = finished(&events);
        assert_eq!(results.len(), 2, "{kind}");
        assert!(results.iter().all(|r| !r.is_error), "{kind}: {results:?}");
        // Each call starts before the response that made it is done.
        let first_start = events
            .iter()
            .position(|e| matches!(e, RealtimeAgentEvent::ToolStarted(_)))
            .unwrap();
        let first_done = events
            .iter()
            .position(|e| {
                matches!(
                    e,
                    RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { .. })
                )
            })
            .unwrap();
        assert!(
            first_start < first_done,
            "{kind}: calls must run at their end event"
        );
        assert_eq!(server.remaining(), 0, "{kind}");
        // The results went out together, then one response request.
        let received = server.received();
        let outputs: Vec<usize> = received
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e["item"]["type"] == "function_call_output" || e.get("toolResponse").is_some()
            })
            .map(|(i, _)| i)
            .collect();
        if kind == RealtimeKind::GeminiLive {
            assert_eq!(outputs.len(), 1, "one batched toolResponse");
            let ids: Vec<&Value> = received[outputs[0]]["toolResponse"]["functionResponses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| &r["id"])
                .collect();
            assert_eq!(ids, [&json!("call_a"), &json!("call_b")]);
        } else {
            assert_eq!(outputs.len(), 2, "{kind}");
            assert_eq!(
                received[outputs[1] + 1]["type"],
                "response.create",
                "{kind}"
            );
            let has_ids = received[outputs[0]]["item"].get("call_id").is_some();
            assert_eq!(has_ids, kind != RealtimeKind::GlmRealtime, "{kind}");
        }
    }
}

#[tokio::test]
async fn a_socket_cut_mid_arguments_truncates_the_call_and_never_runs_it() {
    for kind in RealtimeKind::ALL {
        let r = ChatResponse::default()
            .with_text("Checking.")
            .with_tool_calls([ToolCall::new(
                "call_cut",
                "get_weather",
                r#"{"city":"Reykjavik"}"#,
            )]);
        let script = RealtimeScript::new().then(RealtimeReply::CutMidCall(r));
        let server = RealtimeMockServer::start(kind, script).await.unwrap();
        let agent = RealtimeAgent::new(registry());
        let session = RealtimeSession::builder(kind, SessionConfig::new("m", agent.definitions()))
            .url(server.url())
            .connect()
            .await
            .unwrap();
        session.send_text("go").unwrap();
        let mut stream = agent.run(session);
        let mut events = Vec::new();
        let mut failures = Vec::new();
        while let Some(e) = stream.next().await {
            match e {
                Ok(e) => events.push(e),
                Err(e) => failures.push(e),
            }
        }
        // The dropped socket is reported after what had arrived.
        assert_eq!(failures.len(), 1, "{kind}: {failures:?}");
        assert!(
            failures[0].to_string().contains("transport"),
            "{}",
            failures[0]
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, RealtimeAgentEvent::ToolStarted(_))),
            "{kind}: a cut call never runs"
        );
        let done = events.iter().find_map(|e| match e {
            RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) => Some(result),
            _ => None,
        });
        let done = done.unwrap_or_else(|| panic!("{kind}: the cut response ends"));
        assert_eq!(done.finish_reason, toolwire::FinishReason::Error, "{kind}");
        if !matches!(kind, RealtimeKind::GeminiLive | RealtimeKind::GlmRealtime) {
            // Gemini and GLM send calls whole: there the cut comes before the call.
            let call = &done.tool_calls[0];
            assert_eq!(
                call.error.as_ref().map(|e| e.kind),
                Some(ArgumentsErrorKind::Truncated),
                "{kind}: {call:?}"
            );
        }
        assert!(matches!(
            events.last(),
            Some(RealtimeAgentEvent::Session(RealtimeEvent::Closed { .. }))
        ));
    }
}

#[tokio::test]
async fn a_cancelled_response_never_runs_its_call() {
    for kind in RealtimeKind::ALL
        .into_iter()
        .filter(|k| *k != RealtimeKind::GeminiLive)
    {
        let r = ChatResponse::default().with_tool_calls([ToolCall::new(
            "call_x",
            "get_weather",
            r#"{"city":"Lima"}"#,
        )]);
        let script = RealtimeScript::new()
            .then(RealtimeReply::Cancelled(r))
            .then(RealtimeReply::Close);
        let server = RealtimeMockServer::start(kind, script).await.unwrap();
        let agent = RealtimeAgent::new(registry());
        let session = RealtimeSession::builder(kind, SessionConfig::new("m", agent.definitions()))
            .url(server.url())
            .connect()
            .await
            .unwrap();
        session.send_text("go").unwrap();
        let mut stream = agent.run(session);
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            let e = e.unwrap();
            if matches!(
                e,
                RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { .. })
            ) {
                stream.close();
            }
            events.push(e);
        }
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, RealtimeAgentEvent::ToolStarted(_))),
            "{kind}: {events:#?}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, RealtimeAgentEvent::Session(RealtimeEvent::Stale(_)))),
            "{kind}: the late .done is stale"
        );
    }
}

#[tokio::test]
async fn gemini_cancellation_cancels_the_running_tool_and_sends_no_result() {
    let started = Arc::new(AtomicUsize::new(0));
    let tools = ToolRegistry::new();
    let count = Arc::clone(&started);
    tools
        .register_fn(
            "wait_forever",
            "Never returns",
            json!({"type": "object"}),
            move |_| {
                count.fetch_add(1, Ordering::SeqCst);
                async move {
                    futures::future::pending::<()>().await;
                    Ok(json!(null))
                }
            },
        )
        .unwrap();
    let kind = RealtimeKind::GeminiLive;
    let r = ChatResponse::default().with_tool_calls([ToolCall::new("fc_1", "wait_forever", "{}")]);
    let script = RealtimeScript::new().then(RealtimeReply::Cancelled(r));
    let server = RealtimeMockServer::start(kind, script).await.unwrap();
    let agent = RealtimeAgent::new(tools);
    let session = RealtimeSession::builder(kind, SessionConfig::new("m", agent.definitions()))
        .url(server.url())
        .connect()
        .await
        .unwrap();
    session.send_text("go").unwrap();
    let mut stream = agent.run(session);
    let mut events = Vec::new();
    // Only the cancellation ends the tool; a safety net turns a broken one into a failure
    // instead of a hang.
    let run = async {
        while let Some(e) = stream.next().await {
            let e = e.unwrap();
            let cancelled = matches!(e, RealtimeAgentEvent::ToolCancelled(_));
            events.push(e);
            if cancelled {
                stream.close();
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .expect("the cancellation never cancelled the running tool");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RealtimeAgentEvent::ToolCancelled(c) if c.id == "fc_1")),
        "{events:#?}"
    );
    assert!(finished(&events).is_empty());
    assert!(
        !server
            .received()
            .iter()
            .any(|e| e.get("toolResponse").is_some())
    );
}

#[tokio::test]
async fn an_error_event_keeps_the_session_going() {
    for kind in RealtimeKind::ALL
        .into_iter()
        .filter(|k| *k != RealtimeKind::GeminiLive)
    {
        let mut e = ApiError::new(kind.provider(), None, "Something went wrong");
        e.code = Some("server_error".into());
        let script = RealtimeScript::new()
            .then(RealtimeReply::Error(e))
            .then(RealtimeReply::text("Recovered."));
        let server = RealtimeMockServer::start(kind, script).await.unwrap();
        let agent = RealtimeAgent::new(registry());
        let session = RealtimeSession::builder(kind, SessionConfig::new("m", agent.definitions()))
            .url(server.url())
            .connect()
            .await
            .unwrap();
        session.send_text("first").unwrap();
        let mut stream = agent.run(session);
        let mut text = None;
        while let Some(ev) = stream.next().await {
            match ev.unwrap() {
                RealtimeAgentEvent::Session(RealtimeEvent::Error(e)) => {
                    assert_eq!(e.code.as_deref(), Some("server_error"));
                    stream.handle().send_text("again").unwrap();
                }
                RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) => {
                    text = result.text;
                    stream.close();
                }
                _ => {}
            }
        }
        assert_eq!(text.as_deref(), Some("Recovered."), "{kind}");
    }
}

#[tokio::test]
async fn the_rate_guard_refuses_calls_past_its_limit() {
    let script = RealtimeScript::new()
        .then(calls(&[
            ("c1", "A"),
            ("c2", "B"),
            ("c3", "C"),
            ("c4", "D"),
            ("c5", "E"),
        ]))
        .then(RealtimeReply::text("ok"));
    let agent = RealtimeAgent::new(registry()).with_rate_guard(CallRateGuard::default());
    let (events, _server) = drive(RealtimeKind::OpenAiRealtime, agent, script).await;
    let results = finished(&events);
    assert_eq!(results.len(), 5);
    let refused: Vec<&str> = results
        .iter()
        .filter(|r| r.is_error)
        .map(|r| r.call_id.as_str())
        .collect();
    assert_eq!(refused, ["c5"]);
    let r = results.iter().find(|r| r.call_id == "c5").unwrap();
    assert_eq!(r.output, json!({"stop": true}));
    assert!(r.error.as_deref().unwrap().contains("answer the user"));
}

#[tokio::test]
async fn a_nameless_call_gets_an_error_result_not_a_silent_skip() {
    let kind = RealtimeKind::OpenAiRealtime;
    let events_in = vec![
        json!({"type": "response.created", "response": {"id": "r1"}}),
        json!({"type": "response.function_call_arguments.delta", "response_id": "r1", "call_id": "c1", "delta": "{}"}),
        json!({"type": "response.function_call_arguments.done", "response_id": "r1", "call_id": "c1", "arguments": "{}"}),
        json!({"type": "response.done", "response": {"id": "r1", "status": "completed"}}),
    ];
    let script = RealtimeScript::new()
        .then(RealtimeReply::Events(events_in))
        .then(RealtimeReply::text("fine"));
    let (events, server) = drive(kind, RealtimeAgent::new(registry()), script).await;
    let results = finished(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .error
            .as_deref()
            .unwrap()
            .contains("without a tool name")
    );
    assert!(
        server
            .received()
            .iter()
            .any(|e| e["item"]["call_id"] == "c1"
                && e["item"]["output"].as_str().unwrap().contains("error"))
    );
}

#[tokio::test]
async fn a_result_for_an_unknown_call_is_refused() {
    let kind = RealtimeKind::QwenRealtime;
    let server = RealtimeMockServer::start(kind, RealtimeScript::new())
        .await
        .unwrap();
    let session = RealtimeSession::builder(kind, SessionConfig::new("m", vec![]))
        .url(server.url())
        .connect()
        .await
        .unwrap();
    let call = ToolCall::new("nobody", "get_weather", "{}");
    let err = session
        .send_results(&[toolwire::ToolResult::ok(&call, json!(1))])
        .unwrap_err();
    assert!(err.to_string().contains("\"nobody\""), "{err}");
}

#[tokio::test]
async fn a_recorded_session_replays_to_what_was_seen_live() {
    let dir = std::env::temp_dir().join(format!("toolwire-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for kind in RealtimeKind::ALL {
        let path = dir.join(format!("{kind}.jsonl"));
        let script = RealtimeScript::new()
            .then(calls(&[("call_a", "Paris")]))
            .then(RealtimeReply::text("It is 18."));
        let server = RealtimeMockServer::start(kind, script).await.unwrap();
        let agent = RealtimeAgent::new(registry());
        let session = RealtimeSession::builder(kind, SessionConfig::new("m", agent.definitions()))
            .url(server.url())
            .record(&path)
            .connect()
            .await
            .unwrap();
        session.send_text("go").unwrap();
        let mut stream = agent.run(session);
        let mut live = Vec::new();
        while let Some(e) = stream.next().await {
            if let RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) =
                e.unwrap()
            {
                if result.tool_calls.is_empty() {
                    stream.close();
                }
                live.push(result);
            }
        }
        drop(stream);
        let replayed = replay::replay(kind, &std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(replayed.responses, live, "{kind}");
        assert!(replayed.errors.is_empty(), "{kind}");
        assert!(
            replayed.awaiting.is_empty(),
            "{kind}: the results were recorded too"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn client_frames_pass_through_byte_for_byte() {
    let kind = RealtimeKind::OpenAiRealtime;
    let server = RealtimeMockServer::start(kind, RealtimeScript::new())
        .await
        .unwrap();
    let session = RealtimeSession::builder(kind, SessionConfig::new("m", vec![]))
        .url(server.url())
        .connect()
        .await
        .unwrap();
    // Key order, spacing and the number's spelling as written.
    let frame = r#"{"type":"input_audio_buffer.append",  "audio":"UklGRg==","n":1.50}"#;
    session.handle().send_frame(frame.to_owned()).unwrap();
    session
        .handle()
        .send_event(json!({"type": "input_audio_buffer.commit"}))
        .unwrap();
    let mut session = session;
    session.close();
    while session.next().await.is_some() {}
    let received = server.received();
    assert_eq!(server.received_frames()[1], frame.as_bytes());
    assert_eq!(received[1], serde_json::from_str::<Value>(frame).unwrap());
    assert_eq!(received[2]["type"], "input_audio_buffer.commit");
    assert_eq!(session.stats().client_events, 3);
}

#[tokio::test]
async fn answer_ends_the_run_at_the_answer_or_says_the_session_closed_first() {
    let tools = ToolRegistry::new();
    tools
        .register_fn(
            "add",
            "Adds",
            json!({"type": "object"}),
            |args| async move {
                Ok(json!(
                    args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
                ))
            },
        )
        .unwrap();
    let agent = RealtimeAgent::new(tools);
    let kind = RealtimeKind::GeminiLive;
    let script = RealtimeScript::new()
        .then(RealtimeReply::tool_calls([ToolCall::new(
            "c1",
            "add",
            r#"{"a":2,"b":2}"#,
        )]))
        .then(RealtimeReply::text("4"));
    let (session, _server) = connect(kind, &agent, script).await;
    session.send_text("2 + 2?").unwrap();
    let answer = agent.run(session).answer().await.unwrap();
    assert_eq!(answer.text.as_deref(), Some("4"));
    assert!(answer.tool_calls.is_empty());

    // A session closed before any answer ends with a stream error, never a hang.
    let (session, _server) = connect(kind, &agent, RealtimeScript::new()).await;
    let run = agent.run(session);
    run.close();
    let err = run.answer().await.unwrap_err();
    assert!(
        err.to_string().contains("closed before the model answered"),
        "{err}"
    );
}

#[tokio::test]
async fn a_running_calls_progress_is_an_event_and_never_sent_to_the_model() {
    use toolwire::tools::{Progress, Tool};
    let tools = ToolRegistry::new();
    let def = toolwire::ToolDefinition::new("get_weather", "Weather in a city").unwrap();
    tools
        .register(Tool::from_input_fn(def, |input| async move {
            input.progress.summary("Asking 2 weather stations…");
            for station in 1..=2 {
                tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                input.progress.report(
                    Progress::new(f64::from(station))
                        .with_total(2.0)
                        .with_message(format!("station {station} answered")),
                );
            }
            Ok(json!({"temp_c": 18}))
        }))
        .unwrap();
    for kind in [RealtimeKind::OpenAiRealtime, RealtimeKind::GeminiLive] {
        let script = RealtimeScript::new()
            .then(calls(&[("call_a", "Paris")]))
            .then(RealtimeReply::text("18 degrees."));
        let (events, server) = drive(kind, RealtimeAgent::new(tools.clone()), script).await;
        let steps: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                RealtimeAgentEvent::ToolStarted(c) => Some(format!("started {}", c.id)),
                RealtimeAgentEvent::ToolSummary {
                    call_id, summary, ..
                } => Some(format!("summary {call_id} {summary}")),
                RealtimeAgentEvent::ToolProgress {
                    call_id, progress, ..
                } => Some(format!(
                    "progress {call_id} {}/{:?} {}",
                    progress.progress,
                    progress.total,
                    progress.message.as_deref().unwrap_or_default()
                )),
                RealtimeAgentEvent::ToolFinished(r) => Some(format!("finished {}", r.call_id)),
                _ => None,
            })
            .collect();
        // Reports are spaced wider than the coalescing interval, so each normally arrives; on
        // a loaded machine two may merge (the latest wins): in order, ending with the last.
        let expected = [
            "started call_a",
            "summary call_a Asking 2 weather stations…",
            "progress call_a 1/Some(2.0) station 1 answered",
            "progress call_a 2/Some(2.0) station 2 answered",
            "finished call_a",
        ];
        let mut rest = expected.iter();
        assert!(
            steps.iter().all(|s| rest.any(|e| e == s)),
            "{kind}: {steps:?}"
        );
        assert_eq!(steps[..2], expected[..2], "{kind}");
        assert_eq!(steps[steps.len() - 2..], expected[3..], "{kind}: {steps:?}");
        let sent = serde_json::to_string(&server.received()).unwrap();
        assert!(sent.contains("temp_c"), "{kind}: {sent}");
        assert!(
            !sent.contains("weather stations") && !sent.contains("answered"),
            "{kind}: progress reached the model: {sent}"
        );
    }
}

#[tokio::test]
async fn session_settings_reach_the_server_in_each_dialects_place() {
    // What each server receives first, for a session asking for a token limit and a seed with
    // drops allowed: carried where the dialect documents them, else left out and listed.
    let cases: [(RealtimeKind, &str, &[&str]); 5] = [
        (
            RealtimeKind::OpenAiRealtime,
            "/session/max_output_tokens",
            &["seed"],
        ),
        (RealtimeKind::GlmRealtime, "", &["max_tokens", "seed"]),
        (RealtimeKind::QwenRealtime, "/session/max_tokens", &[]),
        (RealtimeKind::StepFunRealtime, "", &["max_tokens", "seed"]),
        (
            RealtimeKind::GeminiLive,
            "/setup/generationConfig/maxOutputTokens",
            &[],
        ),
    ];
    for (kind, max_tokens_at, dropped) in cases {
        let server = RealtimeMockServer::start(kind, RealtimeScript::new())
            .await
            .unwrap();
        let config = SessionConfig::new("m", vec![])
            .with_max_tokens(256)
            .with_drop_unsupported(true);
        let mut config = config;
        config.seed = Some(7);
        let mut session = RealtimeSession::builder(kind, config)
            .url(server.url())
            .connect()
            .await
            .unwrap();
        let names: Vec<String> = session.dropped().into_iter().map(|d| d.setting).collect();
        assert_eq!(names, dropped, "{kind}");
        session.close();
        while session.next().await.is_some() {}
        let first = &server.received()[0];
        if !max_tokens_at.is_empty() {
            assert_eq!(
                first.pointer(max_tokens_at),
                Some(&json!(256)),
                "{kind}: {first}"
            );
        }
        let text = first.to_string();
        assert!(
            !text.contains("256") || !max_tokens_at.is_empty(),
            "{kind}: {text}"
        );
        assert_eq!(
            text.contains(":7"),
            dropped.is_empty(),
            "{kind}: the seed: {text}"
        );
    }
}
