//! `toolwire` subcommands. Exit status: 0 success; 1 the provider answered with an error (or a
//! conformance case failed); 2 bad input or usage, with a one-line message naming the file,
//! line and reason.

/// `println!` that ends the process quietly when standard output is a closed pipe
/// (`toolwire replay ... | head`) instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!($($arg)*))
    };
}

mod chat;
mod demo;
mod mcp;
mod offline;
#[cfg(feature = "otlp")]
mod otlp;
mod realtime;
#[cfg(feature = "server")]
mod serve;
mod view;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// toolwire: LLM tool calling that works the same on every provider.
#[derive(Debug, Parser)]
#[command(name = "toolwire", version, about)]
struct Cli {
    /// Print the request, agent-turn and tool spans (OpenTelemetry GenAI field names) on
    /// standard error; -vv adds debug events. `RUST_LOG` (e.g. `toolwire=debug`), when set,
    /// chooses instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode a captured response body (SSE, NDJSON, binary event stream or JSON, auto-detected)
    /// into a ChatResponse.
    Replay(offline::ReplayArgs),
    /// Encode a canonical ChatRequest into the provider's wire request body.
    Encode(offline::EncodeArgs),
    /// Show the parameters schema a provider will receive for a JSON Schema.
    Schema(offline::SchemaArgs),
    /// List the providers: names, endpoints, key variables, capabilities.
    Providers,
    /// Run the agent loop end to end: offline against the mock provider, or live with a key.
    Demo(demo::DemoArgs),
    /// Run fixture cases (the repository's or your own recordings) and print a table.
    Conformance(offline::ConformanceArgs),
    /// Talk to a live provider with two demo tools (clock, calculator), streaming the answer.
    Chat(chat::ChatArgs),
    /// Run the tool server: plugins register tools over HTTP, models call them back.
    #[cfg(feature = "server")]
    Serve(serve::ServeArgs),
    /// An MCP server's tools: list them (per provider, what it receives) or call one.
    Mcp(mcp::McpArgs),
}

/// Why a command failed, mapped to the exit status.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The exchange failed: the provider answered with an error, could not be reached or broke
    /// off (exit 1).
    Provider(String),
    /// Checks failed (exit 1); the report is already printed.
    Failed,
    /// Bad input or usage (exit 2).
    Input(String),
}

impl CliError {
    /// Classifies a library error: what the provider said is exit 1, everything about the
    /// input is exit 2.
    pub(crate) fn from_error(context: &str, e: &toolwire::Error) -> Self {
        use toolwire::Error;
        let line = if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        };
        match e {
            Error::Api(_)
            | Error::Stream { .. }
            | Error::Transport { .. }
            | Error::Timeout { .. } => Self::Provider(line),
            _ => Self::Input(line),
        }
    }
}

/// Writes one line to standard output; a closed pipe ends the process with status 0.
pub(crate) fn out(args: std::fmt::Arguments<'_>) {
    out_text(args, true);
}

/// Writes to standard output and flushes, for text that streams in pieces (`toolwire chat`);
/// a closed pipe ends the process with status 0, as for [`out`].
pub(crate) fn out_part(args: std::fmt::Arguments<'_>) {
    out_text(args, false);
}

fn out_text(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let result = stdout
        .write_fmt(args)
        .and_then(|()| {
            if newline {
                stdout.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|()| stdout.flush());
    if let Err(e) = result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("toolwire: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Runs the CLI and maps the outcome to an exit status.
pub(crate) fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // With feature `otlp`, the exporter lives until the command ends; dropping it sends what
    // is still queued.
    let _otlp = init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Replay(args) => offline::replay(&args),
        Command::Encode(args) => offline::encode(&args),
        Command::Schema(args) => offline::schema(&args),
        Command::Providers => offline::providers(),
        Command::Conformance(args) => offline::conformance(&args),
        Command::Demo(args) => demo::demo(&args),
        Command::Chat(args) => chat::chat(args),
        #[cfg(feature = "server")]
        Command::Serve(args) => serve::serve(&args),
        Command::Mcp(args) => mcp::mcp(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Failed) => ExitCode::from(1),
        Err(CliError::Provider(msg)) => {
            eprintln!("toolwire: {}", printable(&msg));
            ExitCode::from(1)
        }
        Err(CliError::Input(msg)) => {
            eprintln!("toolwire: {}", printable(&msg));
            ExitCode::from(2)
        }
    }
}

/// Prints spans on standard error when asked (`-v` or `RUST_LOG`), each when it closes, with
/// the fields it recorded; with feature `otlp` and `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, also exports them over OTLP (`RUST_LOG` filters
/// those too, `toolwire=info` without it). Nothing is set up otherwise, so tracing costs
/// nothing. What is returned must live until the command ends.
fn init_tracing(verbose: u8) -> Option<Telemetry> {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::Layer;
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let filter = |spec: &str| {
        EnvFilter::try_new(spec).unwrap_or_else(|e| {
            eprintln!("toolwire: RUST_LOG={spec:?} is not a filter ({e}); using toolwire=info");
            EnvFilter::new("toolwire=info")
        })
    };
    let printed = match (&from_env, verbose) {
        (Some(spec), _) => Some(filter(spec)),
        (None, 0) => None,
        (None, 1) => Some(EnvFilter::new("toolwire=info")),
        (None, _) => Some(EnvFilter::new("toolwire=debug")),
    };
    let telemetry = Telemetry::from_env();
    if printed.is_none() && telemetry.is_none() {
        return None;
    }
    let printed = printed.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_span_events(FmtSpan::CLOSE)
            .with_filter(f)
    });
    #[cfg(feature = "otlp")]
    let exported = telemetry.as_ref().map(|otlp| {
        otlp.layer()
            .with_filter(filter(from_env.as_deref().unwrap_or("toolwire=info")))
    });
    #[cfg(not(feature = "otlp"))]
    let exported: Option<tracing_subscriber::layer::Identity> = None;
    let _ = tracing_subscriber::registry()
        .with(printed)
        .with(exported)
        .try_init();
    telemetry
}

/// The OTLP exporter (feature `otlp`), kept until the command ends.
#[cfg(feature = "otlp")]
type Telemetry = otlp::Otlp;

/// Without feature `otlp` there is nothing to export.
#[cfg(not(feature = "otlp"))]
#[derive(Debug)]
enum Telemetry {}

#[cfg(not(feature = "otlp"))]
impl Telemetry {
    fn from_env() -> Option<Telemetry> {
        None
    }
}

/// `text` safe for a terminal: control characters (an error body's `ESC [2J`, a BEL, C1
/// codes) are written as `\u{..}` escapes, so a server's bytes can never drive the terminal.
/// Tabs and line ends stay.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}
