//! `toolwire chat`: a live conversation with tool calls, streamed to the terminal.
//!
//! Text goes to standard output as it arrives; tool-call progress (name, argument fragments,
//! the local result and how long it took) goes to standard error: on a terminal as a live
//! status line (see `view.rs`), otherwise as plain lines. Two small demo tools run locally: `clock` and
//! `calculator`. A failure prints one line (never the key) and sets the exit status. When
//! standard output is a closed pipe the command ends quietly with status 0, as the others do.
//! With `--record`, a case that could not be written is a warning line on standard error; the
//! conversation goes on.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use futures::StreamExt;
use serde_json::{Value, json};
use toolwire::{
    ChatRequest, Client, Error, Message, ProviderKind, StreamEvent, ToolCall, ToolDefinition,
    ToolResult,
};

use super::CliError;
use super::view::{Live, elapsed};

/// `toolwire chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Provider to talk to (its key comes from the usual environment variable).
    #[arg(long, short)]
    provider: ProviderKind,
    /// Model name (default: a small model of the provider; required with --base-url).
    #[arg(long, short)]
    model: Option<String>,
    /// Base URL of an OpenAI-compatible server (vLLM, Ollama, DeepSeek, a gateway).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Record every exchange as a fixture case folder below DIR (DIR/<provider>/<case>/).
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// Most model turns before giving up (each tool round is one turn).
    #[arg(long, default_value_t = 6, value_name = "N")]
    max_turns: usize,
    /// How hard the model reasons: none, minimal, low, medium, high, xhigh or max (sent in
    /// the form the model takes; refused by name where it has no such setting).
    #[arg(long, value_name = "LEVEL")]
    effort: Option<toolwire::types::Effort>,
    /// What to ask.
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    prompt: Vec<String>,
}

/// A model to use when none is given: small, cheap, tool-capable (the provider table's
/// `default_model`; a provider it does not list needs `--model`).
pub(crate) fn default_model(kind: ProviderKind) -> &'static str {
    toolwire::providers::builtin(kind).map_or("", |b| b.default_model)
}

/// Runs the conversation.
pub(crate) fn chat(args: ChatArgs) -> Result<(), CliError> {
    let model = match (&args.model, &args.base_url) {
        (Some(m), _) => m.clone(),
        (None, Some(_)) => {
            return Err(CliError::Input(
                "--model is required with --base-url (the server decides what models exist)".into(),
            ));
        }
        (None, None) => match default_model(args.provider) {
            "" => {
                return Err(CliError::Input(format!(
                    "no default model for {}: pass --model",
                    args.provider
                )));
            }
            m => m.to_owned(),
        },
    };
    if args.max_turns == 0 {
        return Err(CliError::Input("--max-turns must be at least 1".into()));
    }
    let mut builder = Client::builder(args.provider);
    if let Some(url) = &args.base_url {
        builder = builder.base_url(url);
    }
    if let Some(dir) = &args.record {
        builder = builder.record_to(dir);
    }
    let client = builder.build().map_err(|e| match &e {
        // Said for a CLI user: what to set, or how to go on without a key.
        Error::Input { path, .. } if path == "api_key" => {
            let vars = toolwire::provider_for(args.provider)
                .map(|p| p.info().key_vars.join(" or "))
                .unwrap_or_default();
            CliError::Input(format!(
                "no API key for {}: set {vars}, or point --base-url at a local OpenAI-compatible \
                 server (with --model), or run `toolwire demo` to try the agent offline",
                args.provider
            ))
        }
        _ => classify(&e),
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Provider(format!("cannot start the async runtime: {e}")))?;
    let prompt = args.prompt.join(" ");
    let result = runtime.block_on(converse(
        &client,
        &model,
        &prompt,
        args.max_turns,
        args.effort,
    ));
    for e in client.take_record_errors() {
        eprintln!("toolwire: warning: not recorded: {e}");
    }
    result
}

/// What the CLI does next: bad input is exit 2, anything the exchange produced is exit 1.
fn classify(e: &Error) -> CliError {
    match e {
        Error::Input { .. } | Error::Unsupported { .. } => CliError::Input(e.to_string()),
        _ => CliError::Provider(e.to_string()),
    }
}

async fn converse(
    client: &Client,
    model: &str,
    prompt: &str,
    max_turns: usize,
    effort: Option<toolwire::types::Effort>,
) -> Result<(), CliError> {
    let mut messages = vec![Message::user(prompt)];
    // On a terminal: a live status line under the answer; otherwise plain progress lines.
    let mut view = Progress {
        live: (std::io::stdout().is_terminal() && std::io::stderr().is_terminal())
            .then(|| Live::new(true)),
        thinking: false,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    for _ in 0..max_turns {
        let mut req = ChatRequest::new(model, messages.clone()).with_tools(demo_tools());
        if let Some(effort) = effort {
            req = req.with_effort(effort);
        }
        let mut stream = client.stream(&req).await.map_err(|e| classify(&e))?;
        view.thinking = false;
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = tick.tick(), if view.live.is_some() => {
                    view.tick();
                    continue;
                }
            };
            let Some(event) = event else { break };
            let event = event.map_err(|e| {
                // The error is what matters here, even when standard output is gone.
                view.finish();
                let _ = writeln!(std::io::stdout());
                classify(&e)
            })?;
            view.event(&event);
        }
        let response = stream.finish().await.map_err(|e| classify(&e))?;
        if response.tool_calls.is_empty() {
            view.end();
            return Ok(());
        }
        let calls = response.tool_calls.clone();
        messages.push(Message::Assistant(response.into()));
        for call in &calls {
            let started = Instant::now();
            let result = run_tool(call);
            let shown = if result.is_error {
                format!("error: {}", result.error.as_deref().unwrap_or("failed"))
            } else {
                result.output.to_string()
            };
            view.line(&format!(
                "[result] {} = {shown} ({})",
                call.name,
                elapsed(started.elapsed())
            ));
            messages.push(Message::Tool(result));
        }
    }
    view.end();
    Err(CliError::Provider(format!(
        "no final answer after {max_turns} turns (--max-turns)"
    )))
}

/// Tool-call progress on standard error: a live view on a terminal, plain lines otherwise.
struct Progress {
    live: Option<Live>,
    thinking: bool,
}

impl Progress {
    fn event(&mut self, event: &StreamEvent) {
        let mut err = std::io::stderr();
        match (event, &mut self.live) {
            (StreamEvent::TextDelta { text }, Some(live)) => live.inline(text),
            (StreamEvent::TextDelta { text }, None) => super::out_part(format_args!("{text}")),
            (StreamEvent::ReasoningDelta { text }, live) => {
                let head = if self.thinking { "" } else { "[thinking] " };
                self.thinking = true;
                match live {
                    Some(live) => live.inline_note(&format!("{head}{text}")),
                    None => {
                        let _ = write!(err, "{head}{text}");
                    }
                }
            }
            (StreamEvent::ToolCallStarted { index, name, .. }, Some(live)) => {
                live.call_started(*index, name);
            }
            (StreamEvent::ToolCallStarted { name, .. }, None) => {
                let _ = write!(err, "\n[call] {name} ");
            }
            (StreamEvent::ToolCallDelta { index, fragment }, Some(live)) => {
                live.call_fragment(*index, fragment);
            }
            (StreamEvent::ToolCallDelta { fragment, .. }, None) => {
                let _ = write!(err, "{fragment}");
            }
            (StreamEvent::ToolCallComplete { index, call }, Some(live)) => {
                live.call_complete(
                    *index,
                    &format!("[call] {} {}", call.name, call.raw_arguments),
                );
            }
            (StreamEvent::ToolCallComplete { .. }, None) => {
                let _ = writeln!(err);
            }
            _ => {}
        }
    }

    fn line(&mut self, text: &str) {
        match &mut self.live {
            Some(live) => live.line(text),
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }

    fn tick(&mut self) {
        if let Some(live) = &mut self.live {
            live.tick();
        }
    }

    fn finish(&mut self) {
        if let Some(live) = &mut self.live {
            live.finish();
        }
    }

    /// The answer is over: its line ends.
    fn end(&mut self) {
        match &mut self.live {
            Some(live) if live.is_inline() => live.finish(),
            Some(live) => {
                live.finish();
                outln!("");
            }
            None => outln!(""),
        }
    }
}

fn demo_tools() -> Vec<ToolDefinition> {
    let clock = ToolDefinition::new("clock", "The current date and time in UTC.");
    let calculator = ToolDefinition::new(
        "calculator",
        "Evaluates an arithmetic expression with + - * / ^ and parentheses.",
    )
    .and_then(|t| {
        t.with_parameters(json!({
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "For example (2 + 3) * 4.5"}
            },
            "required": ["expression"]
        }))
    });
    // Both definitions are constants known to be valid; a failure would be a bug caught by the
    // tests, so skip rather than panic.
    [clock, calculator].into_iter().flatten().collect()
}

/// Runs one demo tool. Problems become error results for the model, never errors here.
fn run_tool(call: &ToolCall) -> ToolResult {
    if let Some(problem) = &call.error {
        return ToolResult::error(call, format!("not run: {problem}"));
    }
    match call.name.as_str() {
        "clock" => ToolResult::ok(call, clock(SystemTime::now())),
        "calculator" => {
            let expression = call
                .arguments
                .as_ref()
                .and_then(|a| a.get("expression"))
                .and_then(Value::as_str);
            match expression.map(calculate) {
                Some(Ok(result)) => ToolResult::ok(call, json!({ "result": number(result) })),
                Some(Err(why)) => ToolResult::error(call, format!("cannot evaluate: {why}")),
                None => ToolResult::error(call, "missing string argument `expression`"),
            }
        }
        other => ToolResult::error(call, format!("unknown tool {other:?}")),
    }
}

/// A whole result as a JSON integer (`42`, not `42.0`), anything else as a float.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// `{"utc": "YYYY-MM-DDTHH:MM:SSZ", "unix_seconds": N}`.
fn clock(now: SystemTime) -> Value {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    json!({
        "utc": format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        ),
        "unix_seconds": secs,
    })
}

/// Evaluates `+ - * / ^`, unary minus and parentheses over decimal numbers.
fn calculate(text: &str) -> Result<f64, String> {
    let mut p = Calc {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.skip_ws();
    if p.i < p.s.len() {
        return Err(format!("unexpected {:?} at {}", p.s[p.i] as char, p.i + 1));
    }
    if v.is_finite() {
        Ok(v)
    } else {
        Err("the result is not a finite number".into())
    }
}

struct Calc<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Calc<'_> {
    const MAX_DEPTH: usize = 64;

    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        loop {
            if self.eat(b'+') {
                v += self.product()?;
            } else if self.eat(b'-') {
                v -= self.product()?;
            } else {
                return Ok(v);
            }
        }
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.factor()?;
        loop {
            if self.eat(b'*') {
                v *= self.factor()?;
            } else if self.eat(b'/') {
                let d = self.factor()?;
                if d == 0.0 {
                    return Err("division by zero".into());
                }
                v /= d;
            } else {
                return Ok(v);
            }
        }
    }

    /// A signed power: unary minus binds looser than `^` (`-2^2` is -4).
    fn factor(&mut self) -> Result<f64, String> {
        if self.eat(b'-') {
            self.nest()?;
            let v = self.factor();
            self.depth -= 1;
            return v.map(|v| -v);
        }
        self.eat(b'+');
        self.power()
    }

    /// `^` is right-associative and its exponent may be signed (`2^-1`).
    fn power(&mut self) -> Result<f64, String> {
        let base = self.atom()?;
        if self.eat(b'^') {
            self.nest()?;
            let exp = self.factor();
            self.depth -= 1;
            return Ok(base.powf(exp?));
        }
        Ok(base)
    }

    fn nest(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > Self::MAX_DEPTH {
            Err(format!("nested deeper than {}", Self::MAX_DEPTH))
        } else {
            Ok(())
        }
    }

    fn atom(&mut self) -> Result<f64, String> {
        if self.eat(b'(') {
            self.nest()?;
            let v = self.sum();
            self.depth -= 1;
            let v = v?;
            if !self.eat(b')') {
                return Err(format!("missing ) at {}", self.i + 1));
            }
            return Ok(v);
        }
        self.skip_ws();
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_digit() || *c == b'.')
        {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
        if digits.is_empty() {
            return Err(match self.s.get(self.i) {
                Some(c) => format!("unexpected {:?} at {}", *c as char, self.i + 1),
                None => "unexpected end of the expression".into(),
            });
        }
        digits
            .parse()
            .map_err(|_| format!("bad number {digits:?} at {}", start + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculator_evaluates_and_refuses() {
        assert_eq!(calculate("(2 + 3) * 4.5"), Ok(22.5));
        assert_eq!(calculate("2 ^ 3 ^ 2"), Ok(512.0));
        assert_eq!(calculate("-2^2"), Ok(-4.0));
        assert_eq!(calculate("2^-1"), Ok(0.5));
        assert_eq!(calculate("10 / 4 - 1"), Ok(1.5));
        assert!(calculate("1 / 0").unwrap_err().contains("division by zero"));
        assert!(calculate("2 +").is_err());
        assert!(calculate("2 ) 3").unwrap_err().contains("at 3"));
        assert!(calculate("1..2").is_err());
        assert!(
            calculate(&"(".repeat(10_000))
                .unwrap_err()
                .contains("deeper")
        );
        assert!(
            calculate(&"-".repeat(10_000))
                .unwrap_err()
                .contains("deeper")
        );
        assert!(calculate("10 ^ 400").is_err());
        assert!(calculate("é").is_err());
    }

    #[test]
    fn clock_formats_utc() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(784_111_777);
        assert_eq!(clock(t)["utc"], "1994-11-06T08:49:37Z");
    }

    #[test]
    fn tools_turn_problems_into_results() {
        assert_eq!(demo_tools().len(), 2);
        let ok = run_tool(&ToolCall::new(
            "c1",
            "calculator",
            r#"{"expression":"6*7"}"#,
        ));
        assert_eq!(ok.output, json!({"result": 42}));
        let half = run_tool(&ToolCall::new(
            "c5",
            "calculator",
            r#"{"expression":"1/2"}"#,
        ));
        assert_eq!(half.output, json!({"result": 0.5}));
        let bad = run_tool(&ToolCall::new("c2", "calculator", r#"{"expression":"#));
        assert!(bad.is_error);
        let unknown = run_tool(&ToolCall::new("c3", "nope", "{}"));
        assert!(unknown.error.unwrap().contains("unknown tool"));
        let clock = run_tool(&ToolCall::new("c4", "clock", ""));
        assert!(clock.output["utc"].as_str().unwrap().ends_with('Z'));
    }
}
