//! `toolwire mcp tools`, `toolwire mcp call` and `toolwire mcp login`: an MCP server's tools as
//! toolwire sees them, one call, and an OAuth login, from the command line.

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};
use toolwire::mcp::{
    Connection, Endpoint, InputAnswer, InputHandler, InputRequest, LoginOptions, TokenFile,
};
use toolwire::tools::{Reporter, Update};
use toolwire::{ProviderKind, provider_for};

use super::CliError;

/// `toolwire mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// List the server's tools as canonical tool definitions (with --provider, what that
    /// provider receives for each, or why it cannot take it).
    Tools(ToolsArgs),
    /// Call one tool and print the result ({"output", "content", "is_error", "error"}); the
    /// progress the server reports while it runs goes to stderr, a line per update, and a
    /// question the server asks meanwhile (elicitation) is asked on the terminal.
    Call(CallArgs),
    /// Log in to an MCP server that uses OAuth, once: prints the authorization URL (and opens
    /// it in a browser), waits for the browser's redirect on a loopback port, and saves the
    /// tokens in a file only you can read. `mcp tools`, `mcp call` and `[[mcp]]` mounts with
    /// `oauth = true` then use them, refreshing them when they expire.
    Login(LoginArgs),
}

#[derive(Debug, Args)]
struct LoginArgs {
    /// The streamable HTTP MCP server.
    #[arg(long)]
    url: String,
    /// The loopback port the browser is redirected to (default: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Only print the authorization URL; do not try to open a browser.
    #[arg(long)]
    no_browser: bool,
    /// Where logins are saved (default: $TOOLWIRE_MCP_TOKEN_DIR, else
    /// ~/.config/toolwire/mcp-tokens).
    #[arg(long, value_name = "DIR")]
    token_dir: Option<std::path::PathBuf>,
    /// Seconds to wait for the browser to come back.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

/// Where the server is, shared by both subcommands.
#[derive(Debug, Args)]
struct ServerArgs {
    /// A streamable HTTP MCP server.
    #[arg(long, conflicts_with = "command")]
    url: Option<String>,
    /// A header sent with every request to the --url server, `Name: value` (repeatable; for
    /// API keys). Its value is never printed.
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    headers: Vec<String>,
    /// Send `Authorization: Bearer <token>` to the --url server, the token read from this
    /// environment variable.
    #[arg(long, value_name = "VAR", requires = "url")]
    bearer_env: Option<String>,
    /// Where saved OAuth logins are (`toolwire mcp login`; default: $TOOLWIRE_MCP_TOKEN_DIR,
    /// else ~/.config/toolwire/mcp-tokens). A --url server without --header or --bearer-env
    /// is sent the access token of its saved login, when there is one.
    #[arg(long, value_name = "DIR", requires = "url")]
    token_dir: Option<std::path::PathBuf>,
    /// Seconds the server may take to start and answer (each of: connecting, the request).
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// A command that runs an MCP server on its stdio (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    /// Show what this provider receives for each tool.
    #[arg(long, short)]
    provider: Option<ProviderKind>,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool, by the server's name.
    name: String,
    /// The arguments, a JSON object.
    arguments: String,
    #[command(flatten)]
    server: ServerArgs,
}

/// Runs `toolwire mcp ...`.
pub(crate) fn mcp(args: McpArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Input(format!("cannot start the async runtime: {e}")))?;
    let result = match args.command {
        McpCommand::Tools(args) => runtime.block_on(tools(args)),
        McpCommand::Call(args) => runtime.block_on(call(args)),
        McpCommand::Login(args) => runtime.block_on(login(args)),
    };
    // A child server that ignores its closed stdin must not hold the command open.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

fn endpoint(args: &ServerArgs) -> Result<Endpoint, CliError> {
    let endpoint = match (&args.url, args.command.is_empty()) {
        (Some(url), true) => Endpoint::url(url.clone()),
        (None, false) => Endpoint::command(args.command.iter().cloned()),
        _ => {
            return Err(CliError::Input(
                "name the MCP server: --url URL, or -- CMD [ARGS...]".to_owned(),
            ));
        }
    };
    let mut endpoint = endpoint.map_err(|e| CliError::Input(e.to_string()))?;
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(CliError::Input(format!(
                "--header takes 'Name: value'; got a header without ':' (named {:?})",
                header.trim()
            )));
        };
        endpoint = endpoint
            .with_header(name, value)
            .map_err(|e| CliError::Input(e.to_string()))?;
    }
    if let Some(var) = &args.bearer_env {
        endpoint = endpoint
            .with_bearer_env(var)
            .map_err(|e| CliError::Input(format!("--bearer-env: {e}")))?;
    }
    // A saved login is used when no static credentials are given.
    if let Some(url) = &args.url
        && args.headers.is_empty()
        && args.bearer_env.is_none()
    {
        let file = token_file(args.token_dir.as_deref(), url);
        if let Some(file) = file.filter(TokenFile::exists) {
            endpoint = endpoint
                .with_login(file)
                .map_err(|e| CliError::Input(e.to_string()))?;
        } else if args.token_dir.is_some() {
            return Err(CliError::Input(format!(
                "no saved login for {url} in --token-dir: run `toolwire mcp login --url {url} \
                 --token-dir DIR` first"
            )));
        }
    }
    Ok(endpoint)
}

/// The login file for `url`: in `dir`, else in the default directory (`None` when there is
/// none).
fn token_file(dir: Option<&std::path::Path>, url: &str) -> Option<TokenFile> {
    match dir {
        Some(dir) => Some(TokenFile::new(dir, url)),
        None => TokenFile::in_default_dir(url).ok(),
    }
}

async fn login(args: LoginArgs) -> Result<(), CliError> {
    Endpoint::url(args.url.clone()).map_err(|e| CliError::Input(e.to_string()))?;
    if args.timeout == 0 {
        return Err(CliError::Input(
            "--timeout must be at least 1 second".to_owned(),
        ));
    }
    let file = match &args.token_dir {
        Some(dir) => TokenFile::new(dir, &args.url),
        None => TokenFile::in_default_dir(&args.url).map_err(|e| CliError::Input(e.to_string()))?,
    };
    let options = LoginOptions::default()
        .with_port(args.port)
        .with_timeout(Duration::from_secs(args.timeout));
    let no_browser = args.no_browser;
    toolwire::mcp::login(&args.url, &file, &options, |url| {
        eprintln!("toolwire: to log in, open this URL in a browser:\n{url}");
        if !no_browser {
            open_browser(url);
        }
    })
    .await
    .map_err(|e| failed(&e))?;
    eprintln!(
        "toolwire: logged in; tokens saved in {}",
        file.path().display()
    );
    Ok(())
}

/// Asks the desktop to open `url`; failing is fine (the URL is printed).
fn open_browser(url: &str) {
    let opener: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["cmd", "/c", "start", ""]
    } else {
        &["xdg-open"]
    };
    let _ = std::process::Command::new(opener[0])
        .args(&opener[1..])
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

fn timeout(args: &ServerArgs) -> Result<Duration, CliError> {
    if args.timeout == 0 {
        return Err(CliError::Input(
            "--timeout must be at least 1 second".to_owned(),
        ));
    }
    Ok(Duration::from_secs(args.timeout))
}

/// A server failure as one line (exit 2): the server is bad input to this command.
fn failed(e: &toolwire::Error) -> CliError {
    CliError::Input(one_line(&e.to_string()))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn connect(args: &ServerArgs) -> Result<Connection, CliError> {
    let endpoint = endpoint(args)?;
    Connection::connect_with_timeout(&endpoint, timeout(args)?)
        .await
        .map_err(|e| failed(&e))
}

/// [`connect`], with the server's input requests asked on the terminal
/// ([`ask_on_terminal`]).
async fn connect_asking(args: &ServerArgs) -> Result<Connection, CliError> {
    let endpoint = endpoint(args)?;
    let handler = InputHandler::new(|request| async move {
        tokio::task::spawn_blocking(move || ask_on_terminal(&request))
            .await
            .unwrap_or(InputAnswer::Decline)
    });
    Connection::connect_asking(&endpoint, timeout(args)?, handler)
        .await
        .map_err(|e| failed(&e))
}

/// Asks a server's input request on the terminal: the question and the form's fields on
/// stderr, the answer a line on stdin: a JSON object to accept (or, for a form of one field,
/// its value as typed), `decline` or `cancel`. The end of stdin declines.
fn ask_on_terminal(request: &InputRequest) -> InputAnswer {
    use std::io::BufRead;
    eprintln!("toolwire: the server asks: {}", one_line(&request.message));
    if let Some(url) = &request.url {
        eprintln!("toolwire: open {url} to answer there");
    }
    let properties = request.schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = request
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, field) in properties.into_iter().flatten() {
        let kind = field.get("type").and_then(Value::as_str).unwrap_or("any");
        let need = if required.contains(&name.as_str()) {
            ", required"
        } else {
            ""
        };
        let about = field
            .get("description")
            .or_else(|| field.get("title"))
            .and_then(Value::as_str)
            .map(|d| format!(": {}", one_line(d)))
            .unwrap_or_default();
        eprintln!("toolwire:   {name} ({kind}{need}){about}");
    }
    let single = properties
        .filter(|p| p.len() == 1)
        .and_then(|p| p.iter().next());
    let stdin = std::io::stdin();
    loop {
        eprintln!("toolwire: answer (a JSON object, or decline / cancel):");
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return InputAnswer::Decline,
            Ok(_) => {}
        }
        let line = line.trim();
        match line {
            "decline" | "d" | "" => return InputAnswer::Decline,
            "cancel" | "c" => return InputAnswer::Cancel,
            _ => {}
        }
        match (serde_json::from_str::<Value>(line), single) {
            (Ok(Value::Object(content)), _) => return InputAnswer::Accept(Value::Object(content)),
            (parsed, Some((name, field))) => {
                let kind = field
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("string");
                let value = match (kind, parsed) {
                    ("string", _) => Value::String(line.to_owned()),
                    (_, Ok(value)) => value,
                    (_, Err(_)) => Value::String(line.to_owned()),
                };
                return InputAnswer::Accept(json!({ name.as_str(): value }));
            }
            _ => eprintln!("toolwire: that is not a JSON object"),
        }
    }
}

async fn within<T>(
    args: &ServerArgs,
    what: &str,
    work: impl Future<Output = toolwire::Result<T>>,
) -> Result<T, CliError> {
    let limit = timeout(args)?;
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(failed(&e)),
        Err(_) => Err(CliError::Input(format!(
            "MCP server {}: no answer to {what} within {limit:?}",
            endpoint(args).map(|e| e.label()).unwrap_or_default()
        ))),
    }
}

async fn tools(args: ToolsArgs) -> Result<(), CliError> {
    let provider = match args.provider {
        Some(kind) => Some(provider_for(kind).map_err(|e| CliError::Input(e.to_string()))?),
        None => None,
    };
    let connection = connect(&args.server).await?;
    let listing = within(&args.server, "tools/list", connection.listing()).await?;
    let tools = listing.tools;
    let mut out = Vec::with_capacity(tools.len());
    for tool in &tools {
        let mut entry = Map::new();
        entry.insert("name".into(), json!(tool.name));
        entry.insert("description".into(), json!(tool.description));
        entry.insert("parameters".into(), tool.input_schema.clone());
        entry.insert("strict".into(), json!(false));
        if let Some(schema) = &tool.output_schema {
            entry.insert("output_schema".into(), schema.clone());
        }
        if !tool.annotations.is_empty() {
            entry.insert("annotations".into(), json!(tool.annotations));
        }
        if let Err(e) = tool.definition(&tool.name) {
            eprintln!(
                "toolwire: {:?} left out: {}",
                tool.name,
                one_line(&e.to_string())
            );
            entry.insert("excluded".into(), json!(e.to_string()));
        } else if let Some(provider) = &provider {
            match tool.lowered_for(provider.as_ref()) {
                Ok(schema) => entry.insert("provider_parameters".into(), schema),
                Err(reason) => {
                    eprintln!(
                        "toolwire: {}: {:?} left out: {}",
                        provider.info().kind,
                        tool.name,
                        one_line(&reason)
                    );
                    entry.insert("excluded".into(), json!(reason))
                }
            };
        }
        out.push(Value::Object(entry));
    }
    for bad in &listing.left_out {
        eprintln!(
            "toolwire: {:?} left out: {}",
            bad.name,
            one_line(&bad.reason)
        );
        out.push(json!({"name": bad.name, "excluded": bad.reason}));
    }
    connection.close().await;
    print(&Value::Array(out));
    Ok(())
}

async fn call(args: CallArgs) -> Result<(), CliError> {
    let arguments: Value = serde_json::from_str(&args.arguments)
        .map_err(|e| CliError::Input(format!("ARGUMENTS_JSON is not JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(CliError::Input(
            "ARGUMENTS_JSON must be a JSON object".to_owned(),
        ));
    }
    let connection = connect_asking(&args.server).await?;
    let what = format!("tools/call {:?}", args.name);
    // The server's progress goes to stderr as it arrives; stdout stays the result alone.
    let (reporter, mut reports) = Reporter::channel();
    let work = async {
        let call = connection.call_reporting(&args.name, arguments, reporter);
        let mut call = std::pin::pin!(call);
        loop {
            tokio::select! {
                result = &mut call => break result,
                update = reports.next() => print_progress(&update),
            }
        }
    };
    let result = within(&args.server, &what, work).await?;
    print_progress(&reports.take());
    connection.close().await;
    print(&json!({
        "output": result.output,
        "content": result.content,
        "is_error": result.is_error,
        "error": result.error,
    }));
    Ok(())
}

/// One stderr line per update: `toolwire: progress 2/4 (50%): step 2 of 4`.
fn print_progress(update: &Update) {
    if let Some(summary) = &update.summary {
        eprintln!("toolwire: {}", one_line(summary));
    }
    if let Some(progress) = &update.progress {
        eprintln!("toolwire: progress {}", one_line(&progress.to_string()));
    }
}

fn print(value: &Value) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => outln!("{text}"),
        Err(e) => eprintln!("toolwire: cannot print JSON: {e}"),
    }
}
