//! The realtime side of the CLI: provider names that may be realtime dialects, `toolwire
//! replay` of a recorded session, and `toolwire demo` over a realtime dialect.

use std::path::Path;

use toolwire::realtime::RealtimeKind;
use toolwire::{ProviderKind, realtime};

use super::CliError;

/// A `--provider` value: an HTTP provider or a realtime dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderArg {
    /// An HTTP provider.
    Http(ProviderKind),
    /// A realtime (WebSocket) dialect.
    Realtime(RealtimeKind),
}

impl ProviderArg {
    /// The HTTP provider, if it is one.
    pub(crate) fn http(self) -> Option<ProviderKind> {
        match self {
            Self::Http(k) => Some(k),
            Self::Realtime(_) => None,
        }
    }
}

impl std::str::FromStr for ProviderArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(k) = s.parse::<ProviderKind>() {
            return Ok(Self::Http(k));
        }
        if let Ok(k) = s.parse::<RealtimeKind>() {
            return Ok(Self::Realtime(k));
        }
        let names: Vec<&str> = ProviderKind::ALL
            .iter()
            .map(|k| k.name())
            .chain(RealtimeKind::ALL.iter().map(|k| k.name()))
            .collect();
        Err(format!(
            "unknown provider {s:?}; expected one of {}",
            names.join(", ")
        ))
    }
}

/// `toolwire replay --provider <realtime name> FILE`: one compact canonical response per line,
/// one line per model response. Error events go to stderr; a session with error events, or one
/// that ended mid-response, exits 1 after printing everything.
pub(crate) fn replay(kind: RealtimeKind, file: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let name = file.display().to_string();
    let lines = realtime::replay::parse_session(bytes).map_err(|e| match e {
        toolwire::Error::Input { path, message } => {
            CliError::Input(format!("{name}:{path}: {message}"))
        }
        other => CliError::Input(format!("{name}: {other}")),
    })?;
    let replay = realtime::replay::replay_lines(kind, &lines);
    for response in &replay.responses {
        outln!("{}", serde_json::to_string(response).unwrap_or_default());
    }
    for e in &replay.errors {
        eprintln!("toolwire: {name}: error event: {e}");
    }
    let s = replay.stats;
    if s.unknown_events + s.stale_events > 0 {
        eprintln!(
            "toolwire: {name}: {} events of unknown type, {} of cancelled or superseded \
             responses (kept, not interpreted)",
            s.unknown_events, s.stale_events
        );
    }
    if !replay.errors.is_empty() {
        return Err(CliError::Provider(format!(
            "{name}: the session has {} error events",
            replay.errors.len()
        )));
    }
    if replay.ended_mid_response {
        return Err(CliError::Provider(format!(
            "{name}: the session ended mid-response (its open calls are truncated)"
        )));
    }
    Ok(())
}

/// `toolwire providers`: the realtime dialects.
pub(crate) fn providers() {
    outln!("\nrealtime (WebSocket):");
    let width = (RealtimeKind::ALL.iter().map(|k| k.name().len()))
        .max()
        .unwrap_or(0);
    for kind in RealtimeKind::ALL {
        outln!(
            "{:<width$} {:<55} {}",
            kind.name(),
            short(kind.url()),
            kind.key_vars().join(" or ")
        );
    }
}

fn short(url: &str) -> String {
    match url.char_indices().nth(54) {
        Some((cut, _)) => format!("{}…", &url[..cut]),
        None => url.to_owned(),
    }
}

/// `toolwire demo --provider <realtime name>`: the agent loop over a realtime session, offline
/// against the WebSocket mock speaking that dialect. The mock model calls the demo tools (one
/// call with a bad argument, answered with an error result), calls again with it fixed, then
/// answers; the mock server checks every result the way the dialect's server does.
#[cfg(all(feature = "realtime", feature = "mock"))]
pub(crate) async fn demo(
    kind: RealtimeKind,
    tools: toolwire::tools::ToolRegistry,
    prompt: &str,
) -> Result<(), CliError> {
    use futures::StreamExt;
    use toolwire::realtime::agent::{CallRateGuard, RealtimeAgent, RealtimeAgentEvent};
    use toolwire::realtime::mock::RealtimeMockServer;
    use toolwire::realtime::{RealtimeEvent, RealtimeSession, SessionConfig};

    let script = demo_script(&tools).await;
    let server = RealtimeMockServer::start(kind, script)
        .await
        .map_err(|e| CliError::from_error("realtime mock", &e))?;
    outln!(
        "toolwire demo: the agent loop over a realtime session, offline against the mock \
         speaking the {kind} dialect at {}",
        server.url()
    );
    let agent = RealtimeAgent::new(tools).with_rate_guard(CallRateGuard::default());
    let names: Vec<String> = agent.definitions().into_iter().map(|d| d.name).collect();
    outln!("tools: {}", names.join(", "));
    let config = SessionConfig::new("toolwire-mock-model", agent.definitions())
        .with_instructions("You are a concise assistant. Use the tools for live data.");
    let session = RealtimeSession::builder(kind, config)
        .url(server.url())
        .connect()
        .await
        .map_err(|e| CliError::from_error("realtime session", &e))?;
    outln!("\nuser> {prompt}");
    session
        .send_text(prompt)
        .map_err(|e| CliError::from_error("realtime session", &e))?;
    let mut events = agent.run(session);
    let mut errors = Vec::new();
    let (mut responses, mut results) = (0, 0);
    let mut text_open = false;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| CliError::from_error("demo", &e))?;
        let line_break = |open: &mut bool| {
            if std::mem::take(open) {
                outln!("");
            }
        };
        match event {
            RealtimeAgentEvent::Session(RealtimeEvent::Model { event, .. }) => match event {
                toolwire::StreamEvent::TextDelta { text } => {
                    if !text_open {
                        super::out_part(format_args!("model> "));
                        text_open = true;
                    }
                    super::out_part(format_args!("{text}"));
                }
                toolwire::StreamEvent::ToolCallComplete { call, .. } => {
                    line_break(&mut text_open);
                    outln!("call {} ({}): {}", call.name, call.id, call.raw_arguments);
                }
                _ => {}
            },
            RealtimeAgentEvent::Session(RealtimeEvent::ResponseDone { result, .. }) => {
                line_break(&mut text_open);
                responses += 1;
                outln!(
                    "-- response {responses} done: finish reason {}",
                    result.finish_reason
                );
                if result.tool_calls.is_empty() {
                    events.close();
                }
            }
            RealtimeAgentEvent::Session(RealtimeEvent::Error(e)) => {
                line_break(&mut text_open);
                eprintln!("toolwire: error event: {e}");
                errors.push(e);
            }
            RealtimeAgentEvent::ToolFinished(r) => {
                line_break(&mut text_open);
                results += 1;
                match &r.error {
                    Some(e) => outln!("  <- {} ({}) error: {e}", r.name, r.call_id),
                    None => outln!("  <- {} ({}) ok: {}", r.name, r.call_id, r.output),
                }
            }
            _ => {}
        }
    }
    let sent: Vec<serde_json::Value> = server
        .received()
        .into_iter()
        .filter(|e| {
            e.get("toolResponse").is_some()
                || e["item"]["type"] == "function_call_output"
                || e["type"] == "response.create"
        })
        .collect();
    outln!(
        "\nwire JSON of the results as the mock server received them ({kind}):\n{}",
        serde_json::to_string_pretty(&sent).unwrap_or_default()
    );
    outln!("\ndone: {responses} responses, {results} tool results");
    if !errors.is_empty() {
        return Err(CliError::Provider(format!(
            "the mock server refused {} events",
            errors.len()
        )));
    }
    if responses != 3 || results != 4 {
        return Err(CliError::Provider(format!(
            "expected 3 responses and 4 results, got {responses} and {results}"
        )));
    }
    outln!("checked: the mock server accepted every result in the {kind} shape");
    Ok(())
}

#[cfg(not(all(feature = "realtime", feature = "mock")))]
pub(crate) async fn demo(
    kind: RealtimeKind,
    _: toolwire::tools::ToolRegistry,
    _: &str,
) -> Result<(), CliError> {
    Err(CliError::Input(format!(
        "the {kind} demo needs the \"realtime\" and \"mock\" features"
    )))
}

/// The mock model: three responses, the last built from what the tools really answer.
#[cfg(all(feature = "realtime", feature = "mock"))]
async fn demo_script(
    tools: &toolwire::tools::ToolRegistry,
) -> toolwire::realtime::mock::RealtimeScript {
    use toolwire::realtime::mock::{RealtimeReply, RealtimeScript};
    use toolwire::tools::ToolSelection;
    use toolwire::{ChatResponse, FinishReason, ToolCall};

    let turn = |text: &str, calls: Vec<ToolCall>| {
        let mut r = ChatResponse::default()
            .with_text(text)
            .with_tool_calls(calls)
            .with_finish_reason(FinishReason::Stop);
        r.settle_finish_reason();
        RealtimeReply::Response(r)
    };
    let all = ToolSelection::default();
    let ask = |name: &str, args: &str| ToolCall::new("probe", name, args);
    let paris = tools
        .dispatch(&ask("get_weather", r#"{"city":"Paris"}"#), &all)
        .await;
    let tokyo = tools
        .dispatch(&ask("get_weather", r#"{"city":"Tokyo"}"#), &all)
        .await;
    let km = tools
        .dispatch(&ask("distance", r#"{"from":"Paris","to":"Tokyo"}"#), &all)
        .await;
    let number =
        |v: &serde_json::Value| v.as_f64().map_or_else(|| "?".to_owned(), |n| n.to_string());
    let answer = format!(
        "Paris is {} °C and {}; Tokyo is {} °C and {}. They are about {} km apart.",
        number(&paris.output["temperature"]),
        paris.output["sky"].as_str().unwrap_or("?"),
        number(&tokyo.output["temperature"]),
        tokyo.output["sky"].as_str().unwrap_or("?"),
        number(&km.output["distance"])
    );
    RealtimeScript::new()
        .then(turn(
            "Let me look that up.",
            vec![
                ToolCall::new("call_paris", "get_weather", r#"{"city":"Paris"}"#),
                ToolCall::new(
                    "call_tokyo",
                    "get_weather",
                    r#"{"city":"Tokyo","unit":"kelvin"}"#,
                ),
                ToolCall::new(
                    "call_distance",
                    "distance",
                    r#"{"from":"Paris","to":"Tokyo"}"#,
                ),
            ],
        ))
        .then(turn(
            "Kelvin is not allowed; asking in celsius.",
            vec![ToolCall::new(
                "call_tokyo_2",
                "get_weather",
                r#"{"city":"Tokyo","unit":"celsius"}"#,
            )],
        ))
        .then(turn(&answer, Vec::new()))
}
