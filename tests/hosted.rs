//! Calls the provider runs itself: decoded as hosted calls on every wire that has them (from
//! the mock, whole and streamed), never dispatched by the agent, sent back verbatim to the
//! same wire and as text to another.

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire::agent::Agent;
use toolwire::mock::{MockReply, MockServer, Script, hosted_call};
use toolwire::providers::provider_for;
use toolwire::tools::{Param, Params, ToolRegistry};
use toolwire::{
    AssistantMessage, ChatRequest, ChatResponse, Client, FinishReason, HostedCall, Message,
    ProviderKind, StreamEvent, ToolCall,
};

const WIRES: [ProviderKind; 4] = [
    ProviderKind::Anthropic,
    ProviderKind::Bedrock,
    ProviderKind::OpenAiResponses,
    ProviderKind::Gemini,
];

/// The hosted call each wire scripts: a web search where the wire has one, else code.
fn scripted(kind: ProviderKind) -> HostedCall {
    let (name, input, result) = match kind {
        ProviderKind::Gemini => (
            "code_execution",
            json!({"language": "PYTHON", "code": "print(6 * 7)"}),
            json!({"outcome": "OUTCOME_OK", "output": "42\n"}),
        ),
        ProviderKind::Bedrock => (
            "nova_code_interpreter",
            json!({"code": "print(6 * 7)"}),
            json!({"stdOut": "42", "exitCode": 0}),
        ),
        ProviderKind::OpenAiResponses => (
            "web_search",
            json!({"action": {"type": "search", "query": "lyon weather"}}),
            Value::Null,
        ),
        _ => (
            "web_search",
            json!({"query": "lyon weather"}),
            json!([{"type": "web_search_result", "url": "https://example.org/w", "title": "W", "encrypted_content": "ZQ=="}]),
        ),
    };
    hosted_call(kind, "srv_tw_1", name, input, result).unwrap()
}

fn weather_call(kind: ProviderKind) -> ToolCall {
    let id = match kind {
        ProviderKind::Anthropic => "toolu_tw_weather",
        _ => "call_tw_weather",
    };
    ToolCall::new(id, "get_weather", r#"{"city":"Lyon"}"#)
}

fn answer(kind: ProviderKind) -> ChatResponse {
    ChatResponse::default()
        .with_text("Checking.")
        .with_hosted_calls([scripted(kind)])
        .with_tool_calls([weather_call(kind)])
        .with_finish_reason(FinishReason::ToolCalls)
}

fn request(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![Message::user("Weather in Lyon?")])
}

/// What must survive the trip: name, input, result, wire and blocks (ids aside).
fn shape(c: &HostedCall) -> (String, Value, Option<Value>, String, usize) {
    (
        c.name.clone(),
        c.input.clone(),
        c.result.clone(),
        c.wire.clone(),
        c.blocks.len(),
    )
}

#[tokio::test]
async fn every_hosted_wire_decodes_its_calls_whole_and_streamed_never_as_tool_calls() {
    for kind in WIRES {
        for stream in [false, true] {
            let script = Script::new().then(MockReply::Response(answer(kind)).stream(stream));
            let server = MockServer::start(kind, script).await.unwrap();
            let client = Client::builder(kind)
                .base_url(server.url())
                .build()
                .unwrap();
            let req = request("tw-hosted-model");
            let (response, events) = if stream {
                let mut s = client.stream(&req).await.unwrap();
                let mut events = Vec::new();
                while let Some(e) = s.next().await {
                    events.push(e.unwrap());
                }
                (s.finish().await.unwrap(), events)
            } else {
                (client.chat(&req).await.unwrap(), Vec::new())
            };
            let what = format!("{kind} stream={stream}");
            assert_eq!(response.tool_calls.len(), 1, "{what}: {response:?}");
            assert_eq!(response.tool_calls[0].name, "get_weather", "{what}");
            assert_eq!(response.hosted_calls.len(), 1, "{what}: {response:?}");
            assert_eq!(
                shape(&response.hosted_calls[0]),
                shape(&scripted(kind)),
                "{what}"
            );
            if stream {
                let hosted: Vec<&str> = events
                    .iter()
                    .filter_map(|e| match e {
                        StreamEvent::HostedCall {
                            index: 0, status, ..
                        } => Some(status.as_str()),
                        _ => None,
                    })
                    .collect();
                assert_eq!(hosted.first(), Some(&"running"), "{what}: {events:?}");
                assert!(hosted.len() >= 2, "{what}: {hosted:?}");
                let started = events
                    .iter()
                    .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
                    .count();
                assert_eq!(started, 1, "{what}");
            }
        }
    }
}

/// The assistant turn of `r` and a result for its call, after the request's question.
fn second_turn(model: &str, r: ChatResponse) -> ChatRequest {
    let call = r.tool_calls[0].clone();
    let mut req = request(model);
    req.messages
        .push(Message::Assistant(AssistantMessage::from(r)));
    req.messages.push(Message::Tool(toolwire::ToolResult::ok(
        &call,
        json!({"temp_c": 4}),
    )));
    req
}

/// Every JSON object below `v` (depth first), to look for the blocks in a body.
fn objects(v: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                out.push(v);
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    out
}

#[test]
fn a_second_turn_to_the_same_wire_carries_the_blocks_verbatim_and_in_order() {
    for kind in WIRES {
        let hosted = scripted(kind);
        let model = if kind == ProviderKind::Bedrock {
            "us.amazon.nova-2-lite-v1:0"
        } else {
            "tw-model"
        };
        let req = second_turn(model, answer(kind));
        let sent = provider_for(kind).unwrap().encode(&req, false).unwrap();
        assert!(sent.downgrades.is_empty(), "{kind}: {:?}", sent.downgrades);
        let text = sent.body.to_string();
        // The blocks, as compact JSON, appear in the body in their order, before the call.
        let mut from = 0;
        for block in &hosted.blocks {
            let at = text[from..]
                .find(&block.to_string())
                .unwrap_or_else(|| panic!("{kind}: {block} not in {text}"));
            from += at + 1;
        }
        let weather = text.find("get_weather").unwrap();
        let last = text.find(&hosted.blocks[0].to_string()).unwrap();
        assert!(last < weather, "{kind}: {text}");
    }
}

#[test]
fn on_another_wire_a_hosted_call_becomes_text_with_a_note() {
    for from in WIRES {
        let r = answer(from);
        for to in [
            ProviderKind::OpenAi,
            ProviderKind::Anthropic,
            ProviderKind::Bedrock,
            ProviderKind::OpenAiResponses,
            ProviderKind::Gemini,
            ProviderKind::Cohere,
            ProviderKind::Ollama,
        ] {
            if to == from {
                continue;
            }
            let req = second_turn("tw-model", r.clone());
            let sent = provider_for(to).unwrap().encode(&req, false).unwrap();
            let what = format!("{from} -> {to}");
            assert_eq!(sent.downgrades.len(), 1, "{what}");
            assert_eq!(sent.downgrades[0].message, 1, "{what}");
            let name = &scripted(from).name;
            assert!(
                sent.downgrades[0].note.contains(name.as_str()),
                "{what}: {:?}",
                sent.downgrades
            );
            // No block of the hosted wire went along: the wire would refuse it.
            for block in &scripted(from).blocks {
                assert!(
                    !objects(&sent.body).contains(&block),
                    "{what}: {block} was sent"
                );
            }
            let body = sent.body.to_string();
            assert!(
                body.contains(&format!("[{} ran {name}", from.name())),
                "{what}: {body}"
            );
        }
    }
}

fn weather_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let params = Params::new()
        .add("city", Param::string().required())
        .build()
        .unwrap();
    registry
        .register_fn("get_weather", "Current weather", params, |_| async move {
            Ok(json!({"temp_c": 4}))
        })
        .unwrap();
    registry
}

#[tokio::test]
async fn the_agent_never_dispatches_a_web_search_and_resends_a_paused_turn() {
    let kind = ProviderKind::Anthropic;
    let search = hosted_call(
        kind,
        "srvtoolu_tw_1",
        "web_search",
        json!({"query": "lyon weather"}),
        json!([{"type": "web_search_result", "url": "https://example.org/w", "title": "W", "encrypted_content": "ZQ=="}]),
    )
    .unwrap();
    let paused = ChatResponse::default()
        .with_text("Searching.")
        .with_hosted_calls([search.clone()])
        .with_finish_reason(FinishReason::Pause);
    let script = Script::new()
        .then(MockReply::Response(paused))
        .then(MockReply::tool_calls([weather_call(kind)]))
        .then(MockReply::text("4 degrees in Lyon."));
    let server = MockServer::start(kind, script).await.unwrap();
    let client = Client::builder(kind)
        .base_url(server.url())
        .build()
        .unwrap();
    let agent = Agent::new(client, weather_registry());
    let outcome = agent.run(request("tw-agent-model")).finish().await.unwrap();
    assert_eq!(outcome.response.text.as_deref(), Some("4 degrees in Lyon."));
    assert_eq!(outcome.turns, 3);
    // Only the client's call ran: one tool result in the history, for get_weather.
    let results: Vec<&toolwire::ToolResult> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{:?}", outcome.messages);
    assert_eq!(results[0].name, "get_weather");
    assert!(!results[0].is_error);
    // The paused turn went back as it was: the last message of the second request is the
    // assistant turn holding the search blocks verbatim.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    let content = last["content"].as_array().unwrap();
    assert_eq!(&content[0], &search.blocks[0], "{content:?}");
    assert_eq!(&content[1], &search.blocks[1], "{content:?}");
    assert_eq!(content[2], json!({"type": "text", "text": "Searching."}));
    // And it stays in the history for the third request.
    let third = requests[2].body.to_string();
    assert!(third.contains("srvtoolu_tw_1"), "{third}");
}
