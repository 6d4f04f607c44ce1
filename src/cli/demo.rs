//! `toolwire demo`: the agent loop end to end, offline against the mock provider (or live).
//!
//! Offline, a [`MockServer`] on 127.0.0.1 speaks the chosen provider's real wire format and
//! answers like a model would: it calls the demo tools (one call with a bad argument, which
//! comes back as an error result), calls again with the argument fixed, then answers using
//! the results. The tools really run; the output shows the streamed text, each call as its
//! argument fragments arrive, every result, and the results in the wire JSON sent back.
//! With `--provider P` and P's API key set, the same loop runs against the real API.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::Args;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolwire::agent::{Agent, AgentEvent, AgentOutcome};
use toolwire::tools::{Param, Params, ToolError, ToolRegistry, ToolSelection, TypedTool};
use toolwire::{
    ChatRequest, ChatResponse, Client, FinishReason, Message, ProviderKind, StreamEvent, ToolCall,
    provider_for,
};

use super::CliError;
use super::view::{Live, elapsed};

/// `print!` that ends the process quietly when standard output is a closed pipe, like
/// `outln!` does for whole lines.
macro_rules! out_inline {
    ($($arg:tt)*) => {
        write_inline(format_args!($($arg)*))
    };
}

fn write_inline(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("toolwire: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// `toolwire demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Provider whose wire the demo speaks (default openai). With its API key set in the
    /// environment the demo calls the real API; without it, the offline mock provider. A
    /// realtime name runs the loop over the realtime mock (offline).
    #[arg(long, short)]
    provider: Option<super::realtime::ProviderArg>,
    /// Model for a live run (default: a small model of the provider).
    #[arg(long)]
    model: Option<String>,
    /// Use the offline mock provider even when the provider's key is set.
    #[arg(long)]
    offline: bool,
    /// How hard the model reasons: none, minimal, low, medium, high, xhigh or max (sent in
    /// the form the model takes; refused by name where it has no such setting).
    #[arg(long, value_name = "LEVEL")]
    effort: Option<toolwire::types::Effort>,
}

const PROMPT: &str = "What is the weather in Paris and Tokyo, and how far apart are they?";

pub(crate) fn demo(args: &DemoArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Input(format!("cannot start the async runtime: {e}")))?;
    if let Some(super::realtime::ProviderArg::Realtime(kind)) = args.provider {
        let tools = demo_tools().map_err(|e| CliError::from_error("demo tools", &e))?;
        return runtime.block_on(super::realtime::demo(kind, tools, PROMPT));
    }
    runtime.block_on(run(args))
}

async fn run(args: &DemoArgs) -> Result<(), CliError> {
    let kind = args
        .provider
        .and_then(super::realtime::ProviderArg::http)
        .unwrap_or(ProviderKind::OpenAi);
    let info = provider_for(kind)
        .map_err(|e| CliError::from_error("", &e))?
        .info()
        .clone();
    let key_set = info
        .key_vars
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|k| !k.trim().is_empty()));
    let registry = demo_tools().map_err(|e| CliError::from_error("demo tools", &e))?;
    if args.provider.is_some() && key_set && !args.offline {
        let model = args
            .model
            .clone()
            .unwrap_or_else(|| super::chat::default_model(kind).to_owned());
        let client = Client::new(kind).map_err(|e| CliError::from_error("", &e))?;
        outln!(
            "toolwire demo: the agent loop, live against {kind} ({}), model {model}",
            client.base_url()
        );
        let (outcome, _) = drive(&client, registry, &model, args.effort).await?;
        summary(&outcome);
        return Ok(());
    }
    offline(kind, registry, args.effort).await
}

#[cfg(feature = "mock")]
async fn offline(
    kind: ProviderKind,
    registry: ToolRegistry,
    effort: Option<toolwire::types::Effort>,
) -> Result<(), CliError> {
    use toolwire::mock::MockServer;

    // On a terminal the mock streams at a readable pace, so the arguments visibly fill in.
    let pace = if std::io::stdout().is_terminal() {
        Duration::from_millis(40)
    } else {
        Duration::ZERO
    };
    let server = MockServer::start(kind, mock_model(kind, pace))
        .await
        .map_err(|e| CliError::from_error("mock provider", &e))?;
    let client = Client::builder(kind)
        .base_url(server.url())
        .build()
        .map_err(|e| CliError::from_error("", &e))?;
    outln!(
        "toolwire demo: the agent loop, offline against the mock provider speaking the {kind} \
         wire at {}",
        server.url()
    );
    let (outcome, shown) = drive(&client, registry, "toolwire-mock-model", effort).await?;
    summary(&outcome);
    // Each follow-up request the mock received must carry exactly the results shown.
    let received: Vec<Value> = server
        .requests()
        .iter()
        .skip(1)
        .map(|r| results_part(&r.body))
        .collect();
    if received == shown {
        outln!(
            "checked: the {} follow-up requests the mock provider received carry exactly the \
             wire JSON shown above",
            received.len()
        );
        Ok(())
    } else {
        eprintln!(
            "toolwire: the requests the mock provider received differ from the wire JSON shown:\n{}",
            pretty(&Value::Array(received))
        );
        Err(CliError::Failed)
    }
}

#[cfg(not(feature = "mock"))]
async fn offline(
    _: ProviderKind,
    _: ToolRegistry,
    _: Option<toolwire::types::Effort>,
) -> Result<(), CliError> {
    Err(CliError::Input(
        "this build has no mock provider (feature \"mock\"); set a provider's key and pass \
         --provider to run the demo live"
            .into(),
    ))
}

/// Runs the loop, printing as events arrive.
async fn drive(
    client: &Client,
    registry: ToolRegistry,
    model: &str,
    effort: Option<toolwire::types::Effort>,
) -> Result<(AgentOutcome, Vec<Value>), CliError> {
    let tools: Vec<String> = registry
        .definitions(&ToolSelection::default())
        .into_iter()
        .map(|d| d.name)
        .collect();
    outln!("tools: {}", tools.join(", "));
    let live = std::io::stdout().is_terminal();
    if live {
        outln!("(call arguments fill in on the status line as they stream)");
    } else {
        outln!("(call arguments are printed as they stream; | marks a fragment boundary)");
    }
    outln!("\nuser> {PROMPT}");
    let agent = Agent::new(client.clone(), registry.clone()).with_max_turns(6);
    let mut request = ChatRequest::new(model, vec![Message::user(PROMPT)]);
    if let Some(effort) = effort {
        // Checked here, so a model without the setting is refused before the loop starts.
        request = request.with_effort(effort);
        client
            .provider()
            .encode(&request, true)
            .map_err(|e| CliError::from_error("--effort", &e))?;
    }
    let mut stream = agent.run(request);
    let mut printer = Printer::new(live);
    let mut shown = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            _ = tick.tick(), if printer.live.is_some() => {
                printer.tick();
                continue;
            }
        };
        let Some(item) = item else { break };
        let event = item.map_err(|e| {
            printer.finish();
            CliError::from_error("demo", &e)
        })?;
        printer.event(&event);
        if let AgentEvent::TurnDone { results, .. } = &event
            && !results.is_empty()
        {
            let messages = stream.messages();
            let wire = sent_back(client, model, &registry, messages)?;
            let noun = if results.len() == 1 {
                "result"
            } else {
                "results"
            };
            printer.line(&format!(
                "\nwire JSON sent back ({} {noun}, {} format):\n{}",
                results.len(),
                client.provider().info().kind,
                pretty(&wire)
            ));
            shown.push(wire);
        }
    }
    printer.finish();
    let outcome = stream
        .finish()
        .await
        .map_err(|e| CliError::from_error("demo", &e))?;
    Ok((outcome, shown))
}

/// The results of the last turn as the provider's wire carries them: the messages after the
/// last assistant (`model`) turn in the encoded next request.
fn sent_back(
    client: &Client,
    model: &str,
    registry: &ToolRegistry,
    messages: Vec<Message>,
) -> Result<Value, CliError> {
    let mut next = ChatRequest::new(model, messages);
    next.tools = registry.definitions(&ToolSelection::default());
    let wire = client
        .provider()
        .encode(&next, true)
        .map_err(|e| CliError::from_error("encoding the next request", &e))?;
    Ok(results_part(&wire.body))
}

fn results_part(body: &Value) -> Value {
    let list = ["messages", "contents", "input"]
        .iter()
        .find_map(|k| body.get(*k).filter(|v| v.is_array()))
        .or_else(|| body.get("input").and_then(|i| i.get("messages")))
        .and_then(Value::as_array);
    let Some(list) = list else {
        return body.clone();
    };
    let after = list
        .iter()
        .rposition(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("assistant" | "model")
            ) || matches!(
                m.get("type").and_then(Value::as_str),
                Some("function_call" | "custom_tool_call")
            )
        })
        .map_or(0, |i| i + 1);
    Value::Array(list.iter().skip(after).cloned().collect())
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

fn summary(outcome: &AgentOutcome) {
    let results = outcome
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count();
    outln!(
        "\ndone: {} turns, {results} tool results, finish reason {}",
        outcome.turns,
        outcome.response.finish_reason
    );
}

/// Prints events as they stream. On a terminal: a live status line (the call whose arguments
/// are streaming, a spinner while tools run) under permanent lines. Otherwise plain lines: text
/// inline, call arguments fragment by fragment. Tool runs and turns carry their elapsed times.
struct Printer {
    /// Where the cursor is (plain output): mid-line in text, or in the arguments of a call.
    open: Open,
    live: Option<Live>,
    tools: HashMap<String, Instant>,
    turn_start: Instant,
}

#[derive(Default, PartialEq)]
enum Open {
    #[default]
    Nothing,
    Text,
    Call(usize),
}

impl Printer {
    fn new(live: bool) -> Self {
        Self {
            open: Open::Nothing,
            live: live.then(|| Live::new(false)),
            tools: HashMap::new(),
            turn_start: Instant::now(),
        }
    }

    fn line_break(&mut self) {
        if let Some(live) = &mut self.live {
            live.end_inline();
        } else if self.open != Open::Nothing {
            outln!("");
            self.open = Open::Nothing;
        }
    }

    /// A permanent line.
    fn line(&mut self, text: &str) {
        self.line_break();
        match &mut self.live {
            Some(live) => live.line(text),
            None => outln!("{text}"),
        }
    }

    fn tick(&mut self) {
        if let Some(live) = &mut self.live {
            live.tick();
        }
    }

    fn finish(&mut self) {
        self.line_break();
        if let Some(live) = &mut self.live {
            live.finish();
        }
    }

    fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Model(StreamEvent::TextDelta { text }) => match &mut self.live {
                Some(live) => {
                    if !live.is_inline() {
                        live.inline("model> ");
                    }
                    live.inline(text);
                }
                None => {
                    if self.open != Open::Text {
                        self.line_break();
                        out_inline!("model> ");
                        self.open = Open::Text;
                    }
                    out_inline!("{text}");
                }
            },
            AgentEvent::Model(StreamEvent::ToolCallStarted { index, id, name }) => {
                self.line_break();
                if let Some(live) = &mut self.live {
                    live.call_started(*index, name);
                    return;
                }
                let id = id.as_deref().unwrap_or("id pending");
                out_inline!("call [{index}] {name} ({id}) args: ");
                self.open = Open::Call(*index);
            }
            AgentEvent::Model(StreamEvent::ToolCallDelta { index, fragment }) => {
                if let Some(live) = &mut self.live {
                    live.call_fragment(*index, fragment);
                    return;
                }
                if self.open != Open::Call(*index) {
                    self.line_break();
                    out_inline!("call [{index}] args: ");
                    self.open = Open::Call(*index);
                }
                out_inline!("{fragment}|");
            }
            AgentEvent::Model(StreamEvent::ToolCallComplete { index, call }) => {
                let summary = format!(
                    "  assembled {}: {}",
                    describe_call(call),
                    call.raw_arguments
                );
                match &mut self.live {
                    Some(live) => live.call_complete(*index, &summary),
                    None => self.line(&summary),
                }
            }
            AgentEvent::Model(StreamEvent::Finish { reason }) => {
                self.line(&format!("  finish: {reason}"));
            }
            AgentEvent::Model(StreamEvent::HostedCall {
                index,
                name,
                status,
            }) => {
                self.line(&format!(
                    "hosted [{index}] {name}: {status} (run by the provider, never here)"
                ));
            }
            AgentEvent::Model(_) => {}
            AgentEvent::ToolStarted(call) => {
                self.tools.insert(call.id.clone(), Instant::now());
                self.line(&format!("run  {} ({})", call.name, call.id));
                if let Some(live) = &mut self.live {
                    live.tool_started(&call.id, &call.name);
                }
            }
            AgentEvent::ToolFinished(result) => {
                if let Some(live) = &mut self.live {
                    live.tool_finished(&result.call_id);
                }
                let took = self
                    .tools
                    .remove(&result.call_id)
                    .map_or_else(String::new, |t| format!(" ({})", elapsed(t.elapsed())));
                let line = if result.is_error {
                    format!(
                        "  <- {} ({}) error: {}{took}",
                        result.name,
                        result.call_id,
                        result.error.as_deref().unwrap_or("")
                    )
                } else {
                    format!(
                        "  <- {} ({}) ok: {}{took}",
                        result.name, result.call_id, result.output
                    )
                };
                self.line(&line);
            }
            AgentEvent::ToolSummary {
                call_id,
                name,
                summary,
            } => {
                self.line(&format!("  .. {name} ({call_id}): {summary}"));
            }
            AgentEvent::ToolProgress {
                call_id,
                name,
                progress,
            } => {
                self.line(&format!("  .. {name} ({call_id}): {progress}"));
            }
            AgentEvent::ToolDenied { call, message } => {
                self.line(&format!("  denied {} ({}): {message}", call.name, call.id));
            }
            AgentEvent::ToolRewritten { call, original } => {
                self.line(&format!(
                    "  rewritten {} ({}): {original} -> {}",
                    call.name, call.id, call.raw_arguments
                ));
            }
            AgentEvent::HookFailed { hook, message } => {
                self.line(&format!("  hook {hook} failed: {message}"));
            }
            AgentEvent::TurnDone { turn, .. } => {
                let took = elapsed(self.turn_start.elapsed());
                self.line(&format!("-- turn {turn} done ({took})"));
                self.turn_start = Instant::now();
            }
            AgentEvent::Stopped(reason) => self.line(&format!("-- stopped: {reason}")),
            _ => {}
        }
    }
}

fn describe_call(call: &ToolCall) -> String {
    match &call.error {
        None => format!("{} ({})", call.name, call.id),
        Some(e) => format!("{} ({}, {e})", call.name, call.id),
    }
}

// ---------------------------------------------------------------- the demo tools

/// A city the demo knows: coordinates and today's (fixed) weather.
#[derive(Debug)]
struct City {
    name: &'static str,
    lat: f64,
    lon: f64,
    temp_c: f64,
    sky: &'static str,
}

const CITIES: &[City] = &[
    City {
        name: "Paris",
        lat: 48.8566,
        lon: 2.3522,
        temp_c: 18.0,
        sky: "cloudy",
    },
    City {
        name: "Tokyo",
        lat: 35.6762,
        lon: 139.6503,
        temp_c: 24.0,
        sky: "sunny",
    },
    City {
        name: "London",
        lat: 51.5074,
        lon: -0.1278,
        temp_c: 15.0,
        sky: "rain",
    },
    City {
        name: "New York",
        lat: 40.7128,
        lon: -74.006,
        temp_c: 21.0,
        sky: "clear",
    },
    City {
        name: "Beijing",
        lat: 39.9042,
        lon: 116.4074,
        temp_c: 26.0,
        sky: "hazy",
    },
    City {
        name: "Sydney",
        lat: -33.8688,
        lon: 151.2093,
        temp_c: 13.0,
        sky: "windy",
    },
];

fn city(name: &str) -> Result<&'static City, ToolError> {
    CITIES
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            let known: Vec<&str> = CITIES.iter().map(|c| c.name).collect();
            ToolError::new(format!(
                "no data for {name:?}; known cities: {}",
                known.join(", ")
            ))
        })
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Arguments of `get_weather`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Paris".
    city: String,
    /// Temperature unit (default celsius).
    unit: Option<Unit>,
}

#[derive(Debug, Serialize)]
struct Weather {
    city: &'static str,
    temperature: f64,
    unit: &'static str,
    sky: &'static str,
}

fn weather(name: &str, unit: Option<Unit>) -> Result<Weather, ToolError> {
    let c = city(name)?;
    let (temperature, unit) = match unit.unwrap_or(Unit::Celsius) {
        Unit::Celsius => (c.temp_c, "celsius"),
        Unit::Fahrenheit => (
            ((c.temp_c * 9.0 / 5.0 + 32.0) * 10.0).round() / 10.0,
            "fahrenheit",
        ),
    };
    Ok(Weather {
        city: c.name,
        temperature,
        unit,
        sky: c.sky,
    })
}

/// `get_weather`: a typed tool, its schema derived from [`WeatherArgs`].
struct GetWeather;

impl TypedTool for GetWeather {
    type Args = WeatherArgs;
    type Output = Weather;

    fn name(&self) -> &str {
        "get_weather"
    }

    fn description(&self) -> &str {
        "Today's weather in a city"
    }

    async fn call(&self, args: WeatherArgs) -> Result<Weather, ToolError> {
        // For the people waiting (the demo prints it); the model never sees it.
        toolwire::tools::Reporter::current()
            .summary(format!("Looking at the sky over {}…", args.city));
        weather(&args.city, args.unit)
    }
}

/// Great-circle distance in kilometres.
fn distance_km(a: &City, b: &City) -> f64 {
    let (la1, la2) = (a.lat.to_radians(), b.lat.to_radians());
    let dla = la2 - la1;
    let dlo = (b.lon - a.lon).to_radians();
    let h = (dla / 2.0).sin().powi(2) + la1.cos() * la2.cos() * (dlo / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().asin()
}

fn distance(from: &str, to: &str, unit: &str) -> Result<Value, ToolError> {
    let km = distance_km(city(from)?, city(to)?);
    let (value, unit) = if unit == "mi" {
        (km / 1.609_344, "mi")
    } else {
        (km, "km")
    };
    Ok(json!({"from": from, "to": to, "distance": value.round(), "unit": unit}))
}

/// The registry the demo offers: a typed tool and one built with the parameter builder.
pub(super) fn demo_tools() -> toolwire::Result<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register_typed(GetWeather)?;
    let params = Params::new()
        .add("from", Param::string().description("Start city").required())
        .add("to", Param::string().description("End city").required())
        .add("unit", Param::string().one_of(["km", "mi"]).default("km"))
        .build()?;
    registry.register(
        toolwire::tools::Tool::from_fn(
            toolwire::ToolDefinition::new("distance", "Great-circle distance between two cities")?
                .with_parameters(params)?,
            |args| async move {
                let text = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
                let unit = args["unit"].as_str().unwrap_or("km").to_owned();
                distance(&text("from"), &text("to"), &unit)
            },
        )
        .with_parameter_list(),
    )?;
    Ok(registry)
}

/// The mock model: three turns, its final answer built from the same data the tools use.
#[cfg(feature = "mock")]
/// The scripted model; `pace` spaces its stream events so a terminal shows them forming.
fn mock_model(kind: ProviderKind, pace: Duration) -> toolwire::mock::Script {
    use toolwire::mock::{MockReply, Script};

    // On a wire with tools the provider runs itself, the first turn also has one: a web
    // search (Anthropic, Responses) or a code run (Gemini, Bedrock). It is shown, kept and
    // sent back, never run here.
    let hosted = hosted_demo_call(kind);

    let turn = |text: Option<&str>, calls: Vec<ToolCall>| {
        let first = calls.len() == 3;
        let mut r = ChatResponse::default()
            .with_tool_calls(calls)
            .with_hosted_calls(hosted.clone().filter(|_| first))
            .with_finish_reason(FinishReason::Stop);
        r.text = text.map(str::to_owned);
        r.settle_finish_reason();
        MockReply::from(r).delay(pace)
    };
    let answer = match (
        weather("Paris", None),
        weather("Tokyo", None),
        distance("Paris", "Tokyo", "km"),
    ) {
        (Ok(p), Ok(t), Ok(d)) => format!(
            "Paris is {} °C and {}; Tokyo is {} °C and {}. The two cities are about {:.0} km apart.",
            p.temperature,
            p.sky,
            t.temperature,
            t.sky,
            d["distance"].as_f64().unwrap_or_default()
        ),
        _ => "I could not get the data.".to_owned(),
    };
    Script::new()
        .then(turn(
            Some("Let me look that up."),
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
            Some("Kelvin is not allowed; asking in celsius."),
            vec![ToolCall::new(
                "call_tokyo_2",
                "get_weather",
                r#"{"city":"Tokyo","unit":"celsius"}"#,
            )],
        ))
        .then(turn(Some(&answer), Vec::new()))
}

/// The hosted call the demo's first turn makes on `kind`'s wire, where it has them.
#[cfg(feature = "mock")]
fn hosted_demo_call(kind: ProviderKind) -> Option<toolwire::HostedCall> {
    let (name, input, result) = match kind {
        ProviderKind::Anthropic => (
            "web_search",
            json!({"query": "Paris Tokyo distance"}),
            json!([{"type": "web_search_result", "url": "https://example.org/paris-tokyo",
                    "title": "Paris to Tokyo", "encrypted_content": "ZGVtbw=="}]),
        ),
        ProviderKind::OpenAiResponses => (
            "web_search",
            json!({"action": {"type": "search", "query": "Paris Tokyo distance"}}),
            Value::Null,
        ),
        ProviderKind::Gemini => (
            "code_execution",
            json!({"language": "PYTHON", "code": "print(len(['Paris', 'Tokyo']))"}),
            json!({"outcome": "OUTCOME_OK", "output": "2\n"}),
        ),
        ProviderKind::Bedrock => (
            "nova_code_interpreter",
            json!({"code": "print(len(['Paris', 'Tokyo']))"}),
            json!({"stdOut": "2", "exitCode": 0}),
        ),
        _ => return None,
    };
    toolwire::mock::hosted_call(kind, "srv_demo_1", name, input, result).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_compute() {
        let paris = city("paris").unwrap();
        let tokyo = city("Tokyo").unwrap();
        let km = distance_km(paris, tokyo);
        assert!((9700.0..9730.0).contains(&km), "{km}");
        assert_eq!(
            weather("Paris", Some(Unit::Fahrenheit))
                .unwrap()
                .temperature,
            64.4
        );
        assert!(
            city("Atlantis")
                .unwrap_err()
                .message()
                .contains("known cities")
        );
    }

    #[test]
    fn results_part_takes_what_follows_the_last_model_turn() {
        let openai = json!({"messages": [
            {"role": "user"}, {"role": "assistant"}, {"role": "tool", "n": 1}, {"role": "tool", "n": 2}
        ]});
        assert_eq!(
            results_part(&openai),
            json!([{"role": "tool", "n": 1}, {"role": "tool", "n": 2}])
        );
        let gemini = json!({"contents": [{"role": "user"}, {"role": "model"}, {"role": "user", "parts": []}]});
        assert_eq!(
            results_part(&gemini),
            json!([{"role": "user", "parts": []}])
        );
        let native = json!({"input": {"messages": [{"role": "assistant"}, {"role": "tool"}]}});
        assert_eq!(results_part(&native), json!([{"role": "tool"}]));
        let responses = json!({"input": [{"role": "user"}, {"type": "reasoning"},
            {"type": "function_call"}, {"type": "function_call_output", "n": 1}]});
        assert_eq!(
            results_part(&responses),
            json!([{"type": "function_call_output", "n": 1}])
        );
    }
}
