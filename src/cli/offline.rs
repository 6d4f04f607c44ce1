//! The subcommands that need no network: replay, encode, schema, providers, conformance.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use toolwire::conformance::{self, Mode, Outcome};
use toolwire::partial_json::{ArgumentEvent, CallArguments};
use toolwire::providers::provider_for_base_url;
use toolwire::{
    ChatRequest, Message, ProviderKind, SchemaMode, TextCallFormat, ToolDefinition, provider_for,
};

use super::CliError;
use super::realtime::ProviderArg;

/// `toolwire replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// Provider whose wire format the file is in (a realtime name reads a recorded session).
    #[arg(long, short)]
    provider: ProviderArg,
    /// HTTP status the body came with; 4xx/5xx bodies are decoded as error bodies.
    #[arg(long)]
    status: Option<u16>,
    /// Print the stream events (one JSON object per line) before the response.
    #[arg(long)]
    events: bool,
    /// With --events: after each argument fragment, what it did to the arguments' structure
    /// (`{"type": "tool_call_arguments", "index", "event", "pointer", …}` lines: a value started,
    /// string text appended, a scalar completed, a container closed, or where the text stopped
    /// being JSON).
    #[arg(long, requires = "events")]
    partial_json: bool,
    /// The canonical request the body answers: tool names it mapped for the wire (e.g.
    /// `weather.get` sent as `weather_get`) are mapped back.
    #[arg(long, value_name = "REQUEST")]
    request: Option<PathBuf>,
    /// The base URL the capture was recorded from: a server other than the provider's own
    /// endpoint is read with the OpenAI-compatible dialect (as `meta.toml`'s `base_url` does
    /// for conformance), e.g. a vLLM capture whose parallel calls interleave.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Recover tool calls the model wrote into its text, in FORMAT: auto, hermes, qwen-xml,
    /// deepseek, mistral, llama, glm, kimi (openai and compatible wires, ollama). With
    /// --request, parameter values are typed by its tools' schemas; without, they stay strings.
    #[arg(long, value_name = "FORMAT")]
    text_calls: Option<TextCallFormat>,
    /// The captured body (`-` for standard input).
    file: PathBuf,
}

/// `toolwire encode`.
#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// Provider to encode for.
    #[arg(long, short)]
    provider: ProviderKind,
    /// Encode the streaming form of the request.
    #[arg(long)]
    stream: bool,
    /// A canonical ChatRequest JSON file (`-` for standard input).
    request: PathBuf,
}

/// `toolwire schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Provider whose schema rules apply.
    #[arg(long, short)]
    provider: ProviderKind,
    /// Lower the schema as a strict tool (OpenAI strict mode).
    #[arg(long)]
    strict: bool,
    /// Send JSON Schema unchanged where the provider offers that (Gemini `parametersJsonSchema`).
    #[arg(long)]
    json_schema: bool,
    /// A JSON Schema file (`-` for standard input).
    schema: PathBuf,
}

/// `toolwire conformance`.
#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// Only this provider's cases.
    #[arg(long, short)]
    provider: Option<ProviderArg>,
    /// Rewrite goldens that differ with the current output (review the diff before committing).
    #[arg(long)]
    bless: bool,
    /// A fixtures root, one provider's folder or one case folder (default: ./fixtures).
    dir: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    let result = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map(|_| buf)
    } else {
        std::fs::read(path)
    };
    result.map_err(|e| CliError::Input(format!("{}: {e}", path.display())))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        // serde_json appends " at line L column C"; the location leads the message instead.
        let text = e.to_string();
        let reason = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(r, _)| r);
        CliError::Input(format!(
            "{}:{}:{}: {reason}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

fn print_json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => outln!("{text}"),
        Err(e) => eprintln!("toolwire: cannot print JSON: {e}"),
    }
}

fn provider(kind: ProviderKind) -> Result<Box<dyn toolwire::Provider>, CliError> {
    provider_for(kind).map_err(|e| CliError::Input(e.to_string()))
}

/// One `--partial-json` line: the call's argument event, tagged like the stream events.
#[derive(serde::Serialize)]
struct ArgumentsLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    event: &'a ArgumentEvent,
}

pub(crate) fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    let kind = match args.provider {
        ProviderArg::Realtime(k) => {
            return super::realtime::replay(k, &args.file, &read(&args.file)?);
        }
        ProviderArg::Http(k) => k,
    };
    let provider = provider_for_base_url(kind, args.base_url.as_deref())
        .map_err(|e| CliError::Input(e.to_string()))?;
    let request = match &args.request {
        Some(path) => {
            let mut req: ChatRequest = read_json(path)?;
            if let Some(format) = args.text_calls {
                req.text_calls = Some(format);
            }
            let file = path.display().to_string();
            // The streaming form: a captured stream answers that one; the name map is the same.
            Some(
                provider
                    .encode(&req, true)
                    .map_err(|e| CliError::from_error(&file, &e))?,
            )
        }
        // No request: only the text-call format, read without tools' schemas.
        None => match args.text_calls {
            Some(format) => {
                let req =
                    ChatRequest::new("replay", vec![Message::user("")]).with_text_calls(format);
                Some(
                    provider
                        .encode(&req, true)
                        .map_err(|e| CliError::from_error("--text-calls", &e))?,
                )
            }
            None => None,
        },
    };
    let file = args.file.display().to_string();
    let result = match args.status {
        Some(s) if s >= 400 => Err(provider.decode_error(Some(s), &read(&args.file)?).into()),
        // Streamed from the file (or standard input, `-`) through the turn reader: memory
        // holds the turn, not the body.
        _ => {
            let source: Box<dyn std::io::Read> = if args.file == Path::new("-") {
                Box::new(std::io::stdin().lock())
            } else {
                Box::new(
                    std::fs::File::open(&args.file)
                        .map_err(|e| CliError::Input(format!("{file}: {e}")))?,
                )
            };
            let source = std::io::BufReader::with_capacity(1 << 16, source);
            toolwire::replay::replay_reader(
                provider.as_ref(),
                request.as_ref(),
                source,
                args.events,
            )
        }
    };
    match result {
        Ok(replay) => {
            if args.events {
                let mut calls = args.partial_json.then(CallArguments::new);
                let mut structure = Vec::new();
                for event in &replay.events {
                    outln!("{}", serde_json::to_string(event).unwrap_or_default());
                    let Some(calls) = calls.as_mut() else {
                        continue;
                    };
                    calls.observe(event, &mut structure);
                    for event in structure.drain(..) {
                        let line = ArgumentsLine {
                            kind: "tool_call_arguments",
                            event: &event,
                        };
                        outln!("{}", serde_json::to_string(&line).unwrap_or_default());
                    }
                }
            }
            print_json(&replay.response);
            Ok(())
        }
        Err(e) => {
            // Nothing is lost: what arrived before the failure goes to stdout.
            if let Some(partial) = e.partial() {
                print_json(partial);
            }
            Err(CliError::from_error(&file, &e))
        }
    }
}

pub(crate) fn encode(args: &EncodeArgs) -> Result<(), CliError> {
    let provider = provider(args.provider)?;
    let req: ChatRequest = read_json(&args.request)?;
    let file = args.request.display().to_string();
    let http = provider
        .encode(&req, args.stream)
        .map_err(|e| CliError::from_error(&file, &e))?;
    // Parts the wire could not carry where they stood: said on stderr, the body stays clean.
    for d in &http.downgrades {
        eprintln!("note: messages[{}] part {}: {}", d.message, d.part, d.note);
    }
    // Settings left out (drop_unsupported): one line each, never unseen.
    for d in &http.dropped {
        eprintln!("note: {} left out: {}", d.setting, d.note);
    }
    print_json(&http.body);
    Ok(())
}

pub(crate) fn schema(args: &SchemaArgs) -> Result<(), CliError> {
    let provider = provider(args.provider)?;
    let parameters: Value = read_json(&args.schema)?;
    let file = args.schema.display().to_string();
    let tool = ToolDefinition::new("schema", "")
        .and_then(|t| t.with_parameters(parameters))
        .map_err(|e| CliError::from_error(&file, &e))?
        .with_strict(args.strict);
    let mode = if args.json_schema {
        Some(SchemaMode::JsonSchema)
    } else {
        None
    };
    let lowered = provider
        .encode_parameters(&tool, mode)
        .map_err(|e| CliError::from_error(&file, &e))?;
    print_json(&lowered);
    Ok(())
}

pub(crate) fn providers() -> Result<(), CliError> {
    let rows: Vec<[String; 4]> = toolwire::providers::BUILTINS
        .iter()
        .map(|builtin| {
            let provider = (builtin.provider)();
            let info = provider.info();
            [
                builtin.name().to_owned(),
                info.base_url.to_owned(),
                info.key_vars.join(" or "),
                info.capabilities.to_owned(),
            ]
        })
        .collect();
    // Columns as wide as their longest cell, so no name runs into the next column.
    let width = |i: usize, head: &str| {
        (rows.iter().map(|r| r[i].chars().count()))
            .chain([head.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (
        width(0, "name"),
        width(1, "endpoint"),
        width(2, "key variables"),
    );
    outln!(
        "{:<w0$} {:<w1$} {:<w2$} capabilities",
        "name",
        "endpoint",
        "key variables"
    );
    for [name, url, keys, capabilities] in &rows {
        outln!("{name:<w0$} {url:<w1$} {keys:<w2$} {capabilities}");
    }
    super::realtime::providers();
    Ok(())
}

pub(crate) fn conformance(args: &ConformanceArgs) -> Result<(), CliError> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None if Path::new("fixtures").is_dir() => PathBuf::from("fixtures"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
    };
    let mode = if args.bless { Mode::Bless } else { Mode::Check };
    let before = if args.bless {
        goldens(&dir)
    } else {
        Vec::new()
    };
    let mut reports = conformance::run_dir(&dir, args.provider.and_then(ProviderArg::http), mode)
        .map_err(|e| CliError::Input(e.to_string()))?;
    if args.bless {
        // Say which files were written, so a bless is never a silent rewrite.
        let after = goldens(&dir);
        let rewritten: Vec<&PathBuf> = after
            .iter()
            .filter(|(path, bytes)| !before.iter().any(|(p, b)| p == path && b == bytes))
            .map(|(path, _)| path)
            .collect();
        for path in &rewritten {
            eprintln!("rewrote {}", path.display());
        }
        eprintln!("--bless: {} golden files rewritten", rewritten.len());
    }
    if let Some(ProviderArg::Realtime(k)) = args.provider {
        reports.retain(|r| r.realtime == Some(k));
    }
    if reports.is_empty() {
        return Err(CliError::Input(format!(
            "{}: no case folders (a case folder holds meta.toml)",
            dir.display()
        )));
    }
    let cell = |report: &conformance::CaseReport, name: &str| match report
        .checks
        .iter()
        .find(|c| c.name == name)
    {
        None => "-",
        Some(c) if c.outcome == Outcome::Pass => "pass",
        Some(_) => "FAIL",
    };
    let provider_of = |r: &conformance::CaseReport| match r.realtime {
        Some(k) => k.name(),
        None => r.provider.map_or("?", ProviderKind::name),
    };
    // Columns as wide as their longest cell (`openai-responses`, long case names).
    let wp = (reports.iter().map(|r| provider_of(r).len()))
        .chain(["provider".len()])
        .max()
        .unwrap_or(0);
    let wc = (reports.iter().map(|r| r.case.chars().count()))
        .chain(["case".len()])
        .max()
        .unwrap_or(0);
    outln!(
        "{:<wp$} {:<wc$} {:<6} {:<6} {:<6} result",
        "provider",
        "case",
        "encode",
        "decode",
        "schema"
    );
    let mut failed = 0;
    for r in &reports {
        let provider = provider_of(r);
        let result = if r.passed() { "ok" } else { "FAILED" };
        outln!(
            "{:<wp$} {:<wc$} {:<6} {:<6} {:<6} {result}",
            provider,
            r.case,
            cell(r, "encode"),
            cell(r, "decode"),
            cell(r, "schema")
        );
        if !r.passed() {
            failed += 1;
        }
    }
    for r in reports.iter().filter(|r| !r.passed()) {
        for line in r.failures() {
            eprintln!("{}: {line}", r.path.display());
        }
    }
    outln!("{} passed, {failed} failed", reports.len() - failed);
    if failed > 0 {
        Err(CliError::Failed)
    } else {
        Ok(())
    }
}

/// Every golden file of the case folders below `dir`, with its bytes (to tell what `--bless`
/// rewrote).
fn goldens(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    const GOLDENS: [&str; 7] = [
        "wire_request.json",
        "expected.json",
        "expected_schema.json",
        "expected.jsonl",
        "wire_config.json",
        "wire_update.json",
        "wire_results.json",
    ];
    let cases = conformance::case_dirs(dir).unwrap_or_default();
    cases
        .iter()
        .flat_map(|case| GOLDENS.iter().map(move |name| case.join(name)))
        .filter_map(|path| std::fs::read(&path).ok().map(|bytes| (path, bytes)))
        .collect()
}
