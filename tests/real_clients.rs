//! Real clients through the gateway: Claude Code (`claude -p`), Codex CLI (`codex exec`) and
//! opencode (`opencode run`), from npm, headless, HOME in a scratch folder, telemetry and
//! updates off, loopback only. Each is pointed at the gateway, which has a mock upstream
//! behind it scripted to call the client's shell tool (`echo toolwire-ok > done.txt`) and to
//! answer once the tool's result comes back: the file exists and the result reached the
//! upstream.
//!
//! The packages are installed once into `target/real-clients` (pinned versions) when missing.
//! In CI (`CI` set) a failed install fails the test; elsewhere it skips with the reason.

#![cfg(feature = "server")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, RecordedRequest, Script};
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};
use toolwire::{ChatResponse, FinishReason, ProviderKind, ToolCall};

/// The variable the upstream key is read from (one cargo sets for every test process).
const KEY_VAR: &str = "CARGO_PKG_NAME";

/// The packages, pinned.
const PACKAGES: [&str; 3] = [
    "@anthropic-ai/claude-code@2.1.332",
    "@openai/codex@0.171.0",
    "opencode-ai@1.18.33",
];

/// What the shell tool runs; its output is what the upstream must get back.
const COMMAND: &str = "echo toolwire-ok > done.txt && cat done.txt";
const MARK: &str = "toolwire-ok";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    )
}

/// The folder of the clients' executables, installing them once; `None` (with the reason
/// printed) when they cannot be had outside CI.
fn bin_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = DIR.get_or_init(|| {
        let root = target_dir().join("real-clients");
        let bin = root.join("node_modules").join(".bin");
        if ["claude", "codex", "opencode"]
            .iter()
            .all(|b| bin.join(b).exists())
        {
            return Ok(bin);
        }
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&root)
            .args(PACKAGES)
            .output()
            .map_err(|e| format!("npm: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "npm install {}: {}",
                PACKAGES.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(bin)
    });
    match found {
        Ok(dir) => Some(dir.clone()),
        Err(why) if std::env::var_os("CI").is_some() => panic!("cannot install the clients: {why}"),
        Err(why) => {
            eprintln!("skipped: the real clients cannot be installed here: {why}");
            None
        }
    }
}

/// The client's shell tool in an upstream request of any wire (a declaration: a name and a
/// schema, wherever the wire puts them), and arguments for it that run [`COMMAND`] (by its
/// schema: `command` as a string or an argv array, or `cmd`).
fn shell_call(body: &Value) -> Option<(String, String)> {
    fn walk(v: &Value) -> Option<(String, String)> {
        match v {
            Value::Object(o) => {
                let schema = [
                    "parameters",
                    "input_schema",
                    "parametersJsonSchema",
                    "inputSchema",
                ]
                .iter()
                .find_map(|k| o.get(*k));
                if let (Some(Value::String(name)), Some(schema)) = (o.get("name"), schema)
                    && matches!(
                        name.as_str(),
                        "Bash" | "bash" | "shell" | "shell_command" | "exec_command"
                    )
                {
                    let schema = schema.get("json").unwrap_or(schema);
                    let props = schema.get("properties");
                    let args = match props {
                        Some(p) if p.get("cmd").is_some() => json!({"cmd": COMMAND}),
                        Some(p) if p.pointer("/command/type") == Some(&json!("array")) => {
                            json!({"command": ["bash", "-lc", COMMAND]})
                        }
                        _ => json!({"command": COMMAND, "description": "Write done.txt"}),
                    };
                    return Some((name.clone(), args.to_string()));
                }
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "messages" | "contents" | "input"))
                    .find_map(|(_, v)| walk(v))
            }
            Value::Array(items) => items.iter().find_map(walk),
            _ => None,
        }
    }
    walk(body)
}

/// Whether an upstream request carries the command's output (the mark beside the command
/// itself, which the call's arguments carry).
fn has_result(text: &str) -> bool {
    text.matches(MARK).count() > text.matches("echo toolwire-ok").count()
}

/// The upstream's script: a request that has the result answers in text; one offering the
/// shell tool gets a call to it; any other (a title, a summary) gets a short text.
fn script() -> Script {
    Script::new().respond_with(|request: &RecordedRequest| {
        if has_result(&request.body.to_string()) {
            return MockReply::text("Done: done.txt written.");
        }
        match shell_call(&request.body) {
            Some((name, args)) => ChatResponse::default()
                .with_text("Running it.")
                .with_tool_calls([ToolCall::new("call_sh_1", name, args)])
                .with_finish_reason(FinishReason::ToolCalls)
                .into(),
            None => MockReply::text("ok"),
        }
    })
}

/// The gateway, its one role `up` on `upstream`, with the one line the README gives such
/// roles: `drop_unsupported = true` (a client's setting the upstream's model has no knob for,
/// Claude Code's effort toward a Bedrock model, is left out and named in `toolwire-dropped`).
async fn gateway(kind: ProviderKind, upstream: &MockServer) -> ServerHandle {
    let role = RoleConfig::live("up", kind, "model-x")
        .with_base_url(upstream.url())
        .with_api_key_env(KEY_VAR)
        .with_drop_unsupported(true);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

/// A scratch folder: HOME and the working folder of one run.
fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!(
        "toolwire-real-{name}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let home = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    (home, work)
}

/// Environment every client gets: HOME, no proxy, telemetry and updates off, the path of
/// node and of the clients.
fn base_env(cmd: &mut tokio::process::Command, home: &Path, bin: &Path) {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
}

/// Runs the client to its end (at most 90 s) and checks the task was done: the file exists
/// and the command's output reached the upstream.
async fn run_and_check(
    who: &str,
    mut cmd: tokio::process::Command,
    work: &Path,
    upstream: &MockServer,
) -> Result<(), String> {
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{who}: still running after 90 s"))
        .unwrap_or_else(|e| panic!("{who}: cannot run: {e}"));
    let requests: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let report = format!(
        "{who}: status {:?}\nstdout: {}\nstderr: {}\nupstream got {} requests: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        requests.len(),
        requests
            .iter()
            .map(|r| r.chars().take(3000).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    let file = std::fs::read_to_string(work.join("done.txt")).unwrap_or_default();
    if file.trim() != MARK {
        return Err(format!("no done.txt: {report}"));
    }
    if !requests.iter().any(|r| has_result(r)) {
        return Err(format!(
            "the tool result never reached the upstream: {report}"
        ));
    }
    Ok(())
}

/// Every upstream wire.
const EVERY_WIRE: &[ProviderKind] = &[
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::OpenAiResponses,
    ProviderKind::Gemini,
    ProviderKind::Bedrock,
];

/// Runs `client` against a mock upstream of each of `upstreams`; fails naming every one that
/// failed.
async fn on_upstreams<F, Fut>(who: &str, upstreams: &[ProviderKind], client: F)
where
    F: Fn(ProviderKind) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut failed = Vec::new();
    for kind in upstreams.iter().copied() {
        if let Err(e) = client(kind).await {
            failed.push(format!("{who} → {kind}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n=====\n"));
}

async fn claude(bin: &Path, kind: ProviderKind) -> Result<(), String> {
    let upstream = MockServer::start(kind, script()).await.unwrap();
    let server = gateway(kind, &upstream).await;
    let (home, work) = scratch("claude");
    let mut cmd = tokio::process::Command::new(bin.join("claude"));
    base_env(&mut cmd, &home, bin);
    cmd.current_dir(&work)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-gateway-ignores-it")
        .env("ANTHROPIC_MODEL", "up")
        .env("ANTHROPIC_SMALL_FAST_MODEL", "up")
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "up")
        .env("ANTHROPIC_DEFAULT_SONNET_MODEL", "up")
        .env("ANTHROPIC_DEFAULT_OPUS_MODEL", "up")
        .args([
            "-p",
            "Run the shell command the task needs.",
            "--allowedTools",
            "Bash",
            "--output-format",
            "text",
        ]);
    run_and_check("claude", cmd, &work, &upstream).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_runs_its_shell_tool_through_the_gateway() {
    let Some(bin) = bin_dir() else { return };
    on_upstreams("claude", EVERY_WIRE, |kind| claude(&bin, kind)).await;
}

async fn codex(bin: &Path, kind: ProviderKind) -> Result<(), String> {
    let upstream = MockServer::start(kind, script()).await.unwrap();
    let server = gateway(kind, &upstream).await;
    let (home, work) = scratch("codex");
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"up\"\nmodel_provider = \"toolwire\"\ncheck_for_update_on_startup = false\n\
             [model_providers.toolwire]\nname = \"toolwire\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"TOOLWIRE_GATEWAY_KEY\"\n\
             [analytics]\nenabled = false\n",
            server.url()
        ),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(bin.join("codex"));
    base_env(&mut cmd, &home, bin);
    cmd.current_dir(&work)
        .env("CODEX_HOME", &codex_home)
        .env("TOOLWIRE_GATEWAY_KEY", "unused")
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "Run the shell command the task needs.",
        ]);
    run_and_check("codex", cmd, &work, &upstream).await?;
    // Across wires its `namespace` tools reach the upstream as flat tools (on its own wire
    // the body goes through as sent).
    if kind != ProviderKind::OpenAiResponses {
        let flat = upstream.requests().iter().any(|r| {
            r.body
                .to_string()
                .contains("\"multi_agent_v1__close_agent\"")
        });
        if !flat {
            return Err("no upstream request declares multi_agent_v1__close_agent".into());
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_its_shell_tool_through_the_gateway() {
    let Some(bin) = bin_dir() else { return };
    // Across wires Codex's `namespace` tools become flat canonical tools (their calls go back
    // namespaced) and its hosted `web_search` follows the role's `drop_unsupported = true`.
    on_upstreams("codex", EVERY_WIRE, |kind| codex(&bin, kind)).await;
}

async fn opencode(bin: &Path, kind: ProviderKind) -> Result<(), String> {
    let upstream = MockServer::start(kind, script()).await.unwrap();
    let server = gateway(kind, &upstream).await;
    let (home, work) = scratch("opencode");
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "model": "toolwire/up",
        "small_model": "toolwire/up",
        "permission": {"bash": "allow", "edit": "allow"},
        "provider": {"toolwire": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "toolwire",
            "options": {"baseURL": format!("{}/v1", server.url()), "apiKey": "unused"},
            "models": {"up": {"name": "up", "tool_call": true}}
        }}
    });
    std::fs::write(work.join("opencode.json"), config.to_string()).unwrap();
    let mut cmd = tokio::process::Command::new(bin.join("opencode"));
    base_env(&mut cmd, &home, bin);
    // opencode fetches its provider packages from npm into its cache: one shared cache.
    cmd.current_dir(&work)
        .env(
            "XDG_CACHE_HOME",
            target_dir().join("real-clients").join("cache"),
        )
        .args(["run", "Run the shell command the task needs."]);
    run_and_check("opencode", cmd, &work, &upstream).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_runs_its_shell_tool_through_the_gateway() {
    let Some(bin) = bin_dir() else { return };
    // Its Chat wire to the same wire and to every other (~20 s a run).
    on_upstreams("opencode", EVERY_WIRE, |kind| opencode(&bin, kind)).await;
}
