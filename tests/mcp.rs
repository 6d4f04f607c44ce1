//! MCP against real implementations: a server written with the official Python SDK (`mcp` on
//! PyPI, `tests/mcp/server.py`) over stdio and streamable HTTP, listed and called through
//! `toolwire::mcp` and `toolwire mcp`, compared with the SDK's own client
//! (`tests/mcp/client.py`). The SDK is installed into a venv under the target directory when
//! missing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolwire::mcp::{Connection, Endpoint, Mount};
use toolwire::tools::{ToolRegistry, ToolSelection};
use toolwire::types::Part;
use toolwire::{ProviderKind, ToolCall, provider_for};

/// The 1x1 PNG `image` returns, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAIB5Sc+3gAAAABJRU5ErkJggg==";

pub(crate) fn here(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(file)
        .display()
        .to_string()
}

/// A Python with the official MCP SDK: the venv under the target directory, created and
/// filled (`pip install mcp`) on first use.
pub(crate) fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
        let py = venv.join("bin/python").display().to_string();
        let has_sdk = || {
            Command::new(&py)
                .args(["-c", "import mcp.server.mcpserver, mcp.client"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !has_sdk() {
            let base = ["python3.11", "python3"]
                .into_iter()
                .find(|p| Command::new(p).arg("--version").output().is_ok())
                .expect("python3 is needed for the MCP tests");
            let made = Command::new(base)
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .expect("python -m venv runs");
            assert!(made.success(), "python -m venv {} failed", venv.display());
            let pip = Command::new(&py)
                .args(["-m", "pip", "install", "--quiet", "mcp"])
                .status()
                .expect("pip runs");
            assert!(
                pip.success(),
                "pip install mcp failed (PyPI must be reachable)"
            );
            assert!(
                has_sdk(),
                "the mcp package does not import after pip install"
            );
        }
        py
    })
}

fn stdio_server() -> Vec<String> {
    vec![python().to_owned(), here("server.py")]
}

fn stdio_endpoint() -> Endpoint {
    Endpoint::command(stdio_server()).unwrap()
}

fn toolwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(args)
        .output()
        .expect("toolwire runs")
}

fn toolwire_stdio(args: &[&str]) -> Output {
    let server = stdio_server();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.extend(server.iter().map(String::as_str));
    toolwire(&all)
}

pub(crate) fn json_out(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// A streamable HTTP server from the Python SDK on a free port, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python())
            .args([here("server.py"), "http".into(), port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Python server starts");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the Python HTTP server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent over a mock OpenAI model whose first answer is `call` and whose second is the text
/// `then`, with `connection`'s tools mounted under `mount`. The mock is handed back to keep it
/// up while the agent runs.
pub(crate) async fn agent_calling(
    connection: &toolwire::mcp::Connection,
    mount: &str,
    call: toolwire::ToolCall,
    then: &str,
) -> (toolwire::agent::Agent, toolwire::mock::MockServer) {
    use toolwire::mock::{MockReply, MockServer, Script};
    let registry = toolwire::tools::ToolRegistry::new();
    connection
        .register(&registry, &toolwire::mcp::Mount::new(mount))
        .await
        .unwrap();
    let script = Script::new()
        .then(MockReply::tool_calls([call]))
        .then(MockReply::text(then));
    let mock = MockServer::start(toolwire::ProviderKind::OpenAi, script)
        .await
        .unwrap();
    let client = toolwire::Client::builder(toolwire::ProviderKind::OpenAi)
        .base_url(mock.url())
        .api_key("test")
        .build()
        .unwrap();
    (toolwire::agent::Agent::new(client, registry), mock)
}

/// The text of an agent run's first tool result, read as JSON; panics when the result is an
/// error or its text is not JSON.
pub(crate) fn first_result_json(outcome: &toolwire::agent::AgentOutcome) -> serde_json::Value {
    let result = outcome
        .messages
        .iter()
        .find_map(|m| match m {
            toolwire::Message::Tool(r) => Some(r.clone()),
            _ => None,
        })
        .expect("a tool result");
    assert!(!result.is_error, "{result:?}");
    let text: String = result.content.iter().filter_map(|p| p.as_text()).collect();
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("{result:?}"))
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `toolwire mcp tools` lists every tool exactly as the SDK's own client lists it: names,
/// descriptions, input schemas and annotations.
#[test]
fn tools_are_listed_as_the_sdks_own_client_lists_them() {
    let ours = json_out(&toolwire_stdio(&["mcp", "tools"]));
    let server = stdio_server();
    let mut args = vec![here("client.py"), "list".into(), "--".into()];
    args.extend(server);
    let theirs: Value = {
        let out = Command::new(python()).args(&args).output().unwrap();
        json_out(&out)
    };
    let (ours, theirs) = (ours.as_array().unwrap(), theirs.as_array().unwrap());
    assert_eq!(ours.len(), theirs.len());
    assert!(ours.len() >= 8, "{ours:?}");
    for (o, t) in ours.iter().zip(theirs) {
        assert_eq!(o["name"], t["name"]);
        assert_eq!(o["description"], t["description"]);
        assert_eq!(o["parameters"], t["inputSchema"], "{}", o["name"]);
        assert_eq!(o["strict"], json!(false));
        // The output schema is kept as the server declared it, and left out when there is none.
        assert_eq!(
            o.get("output_schema"),
            t.get("outputSchema"),
            "{}",
            o["name"]
        );
        let hints = &t["annotations"];
        assert_eq!(
            o["annotations"]["read_only"], hints["readOnlyHint"],
            "{}",
            o["name"]
        );
        assert_eq!(o["annotations"]["destructive"], hints["destructiveHint"]);
        // Each entry is a canonical ToolDefinition (extra fields aside).
        let mut definition = o.clone();
        definition.as_object_mut().unwrap().remove("annotations");
        serde_json::from_value::<toolwire::ToolDefinition>(definition).unwrap();
    }
}

/// `--provider gemini`: every tool has the schema Gemini receives or the reason it is left
/// out; the recursive schema (a pydantic model that contains itself) is left out, and the
/// reason is also on standard error.
#[test]
fn gemini_gets_a_lowered_schema_or_an_exclusion_reason_for_every_tool() {
    let out = toolwire_stdio(&["mcp", "tools", "--provider", "gemini"]);
    let tools = json_out(&out);
    let gemini = provider_for(ProviderKind::Gemini).unwrap();
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        match (tool.get("provider_parameters"), tool.get("excluded")) {
            (Some(lowered), None) => {
                // What Gemini receives is what its encoder sends for that tool.
                let definition = toolwire::ToolDefinition::new(name, "").unwrap();
                let definition = definition
                    .with_parameters(tool["parameters"].clone())
                    .unwrap();
                assert_eq!(
                    &gemini.encode_parameters(&definition, None).unwrap(),
                    lowered,
                    "{name}"
                );
            }
            (None, Some(reason)) => {
                assert_eq!(
                    name, "tree",
                    "only the recursive schema is left out: {reason}"
                );
                assert!(reason.as_str().unwrap().contains("cyclic $ref"), "{reason}");
            }
            other => panic!("{name}: neither or both: {other:?}"),
        }
    }
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "tree" && t.get("excluded").is_some())
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"tree\" left out"), "{stderr}");
}

/// `toolwire mcp call`: structured output, an image part, and an error, as the server sent them.
#[test]
fn calls_return_output_images_and_errors_as_sent() {
    let add = json_out(&toolwire_stdio(&["mcp", "call", "add", r#"{"a":2,"b":3}"#]));
    assert_eq!(add["output"], json!({"sum": 5}));
    assert_eq!(add["is_error"], json!(false));
    assert_eq!(add["error"], Value::Null);
    assert_eq!(add["content"][0]["type"], "text");

    let image = json_out(&toolwire_stdio(&["mcp", "call", "image", "{}"]));
    assert_eq!(
        image["content"],
        json!([{"type": "image", "media_type": "image/png", "data": PNG}])
    );

    let fail = json_out(&toolwire_stdio(&[
        "mcp",
        "call",
        "fail",
        r#"{"reason":"x"}"#,
    ]));
    assert_eq!(fail["is_error"], json!(true));
    let message = fail["error"].as_str().unwrap();
    assert!(message.contains("fail"), "{message}");
    assert_eq!(fail["content"][0]["text"], fail["error"]);
}

/// `toolwire mcp call` writes the server's progress to stderr as it arrives; stdout stays the
/// result alone.
#[test]
fn call_prints_progress_on_stderr() {
    let out = toolwire_stdio(&["mcp", "call", "slow", r#"{"seconds":0.8}"#]);
    let result = json_out(&out);
    assert_eq!(result["content"], json!([{"type": "text", "text": "done"}]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("toolwire: progress "))
        .collect();
    // Reports may merge on a loaded machine (the latest wins); the last always arrives.
    assert!(!lines.is_empty(), "{stderr}");
    assert_eq!(
        lines.last().copied(),
        Some("toolwire: progress 3/4 (75%): step 4 of 4"),
        "{stderr}"
    );
}

/// Bad servers (exits at once, cannot start, writes garbage and hangs, refuses connections)
/// give one line on standard error and exit 2, within the timeout.
#[test]
fn bad_servers_give_one_line_and_exit_2_in_bounded_time() {
    let cases: [&[&str]; 5] = [
        &["mcp", "tools", "--timeout", "3", "--", "false"],
        &["mcp", "tools", "--", "/nonexistent/mcp-server"],
        &[
            "mcp",
            "tools",
            "--timeout",
            "2",
            "--",
            "sh",
            "-c",
            "echo garbage; sleep 60",
        ],
        &[
            "mcp",
            "call",
            "x",
            "{}",
            "--timeout",
            "2",
            "--",
            "sleep",
            "60",
        ],
        &[
            "mcp",
            "tools",
            "--timeout",
            "3",
            "--url",
            "http://127.0.0.1:9/mcp",
        ],
    ];
    for args in cases {
        let started = Instant::now();
        let out = toolwire(args);
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("toolwire: MCP server "),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    // Usage errors: no server, arguments that are not an object.
    assert_eq!(toolwire(&["mcp", "tools"]).status.code(), Some(2));
    let out = toolwire_stdio(&["mcp", "call", "add", "[1]"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Mounted into a registry: names `<mount>_<tool>`, source `mcp:<mount>`, annotations kept,
/// calls dispatched to the server with content parts, errors and the registry's timeout.
#[test]
fn registered_tools_run_through_the_registry() {
    runtime().block_on(async {
        let connection = Connection::connect(&stdio_endpoint()).await.unwrap();
        let registry = ToolRegistry::new();
        let mount = Mount::new("py").with_timeout(Duration::from_secs(2));
        let names = connection.register(&registry, &mount).await.unwrap();
        assert!(names.contains(&"py_add".to_owned()) && names.contains(&"py_tree".to_owned()));
        let info = registry.list();
        assert!(info.iter().all(|t| t.source == "mcp:py"));
        let all = ToolSelection::default();
        let wipe = registry.annotations("py_wipe", &all).unwrap();
        assert!(wipe.may_destroy());
        assert_eq!(wipe.destructive, Some(true));
        let echo = registry.annotations("py_echo", &all).unwrap();
        assert!(!echo.may_destroy());

        let call = ToolCall::new("c1", "py_add", r#"{"a":20,"b":22}"#);
        let result = registry.dispatch(&call, &all).await;
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.output, json!({"sum": 42}));

        // `weather` declares an outputSchema: a conforming structuredContent is the output, a
        // violating one an error result naming the JSON path (the output and text kept).
        let weather = registry.definitions(&all);
        let weather = weather.iter().find(|d| d.name == "py_weather").unwrap();
        assert_eq!(
            weather.output_schema.as_ref().unwrap()["properties"]["temp_c"],
            json!({"type": "number"})
        );
        let call = ToolCall::new("w1", "py_weather", r#"{"city":"Oslo"}"#);
        let result = registry.dispatch(&call, &all).await;
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.output, json!({"temp_c": 21.5}));
        let call = ToolCall::new("w2", "py_weather", r#"{"city":"Bergen"}"#);
        let result = registry.dispatch(&call, &all).await;
        assert!(result.is_error, "{result:?}");
        let message = result.error.as_deref().unwrap();
        assert!(
            message.contains(r#"/temp_c: "warm" is not of type "number""#),
            "{message}"
        );
        assert!(message.contains("py_weather"), "{message}");
        assert_eq!(result.output, json!({"temp_c": "warm"}));

        let call = ToolCall::new("c2", "py_image", "{}");
        let result = registry.dispatch(&call, &all).await;
        assert_eq!(result.content, vec![Part::image("image/png", PNG)]);

        let call = ToolCall::new("c3", "py_fail", r#"{"reason":"no"}"#);
        let result = registry.dispatch(&call, &all).await;
        assert!(result.is_error);
        // The message is the text; it is not repeated as a part.
        assert!(result.content.is_empty(), "{result:?}");

        // An error with more than text keeps its parts and its structuredContent.
        let call = ToolCall::new("c3b", "py_broke", "{}");
        let result = registry.dispatch(&call, &all).await;
        assert!(result.is_error);
        assert_eq!(result.error.as_deref(), Some("the chart did not render"));
        assert_eq!(result.output, json!({"code": 7}));
        assert_eq!(
            result.content,
            vec![
                Part::text("the chart did not render"),
                Part::image("image/png", PNG)
            ]
        );

        // The registry's timeout stops a slow call (and cancels it on the server); the
        // connection still answers afterwards.
        let started = Instant::now();
        let call = ToolCall::new("c4", "py_slow", r#"{"seconds":20}"#);
        let result = registry.dispatch(&call, &all).await;
        assert!(result.is_error);
        assert!(
            result.error.as_deref().unwrap().contains("timed out"),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(8));
        let again = connection
            .call("echo", json!({"text": "still here"}))
            .await
            .unwrap();
        assert_eq!(again.content, vec![Part::text("still here")]);
        connection.close().await;
    });
}

/// A FastMCP tool's `ctx.report_progress(...)`: the call carries a progress token, and each
/// notification reaches the call's reporter (through the registry, as the agent runs it, and
/// through `Connection::call_reporting`); the result is unchanged by it.
#[test]
fn progress_notifications_reach_the_calls_reporter() {
    use toolwire::tools::{Progress, Reporter};
    runtime().block_on(async {
        let connection = Connection::connect(&stdio_endpoint()).await.unwrap();
        let registry = ToolRegistry::new();
        connection
            .register(&registry, &Mount::new("py"))
            .await
            .unwrap();
        let all = ToolSelection::default();

        let (reporter, mut reports) = Reporter::channel();
        let call = ToolCall::new("c1", "py_slow", r#"{"seconds":0.8}"#);
        let running = registry.dispatch_reporting(&call, &all, reporter);
        let mut running = std::pin::pin!(running);
        let mut seen: Vec<Progress> = Vec::new();
        let result = loop {
            tokio::select! {
                result = &mut running => break result,
                update = reports.next() => seen.extend(update.progress),
            }
        };
        seen.extend(reports.take().progress);
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.content, vec![Part::text("done")]);
        // The server sleeps 0.2 s between reports, longer than the coalescing interval, so
        // each report normally arrives; on a loaded machine two may merge (the latest wins).
        // What arrives is in order and ends with the last report.
        let expected: Vec<Progress> = (0..4)
            .map(|i| {
                Progress::new(f64::from(i))
                    .with_total(4.0)
                    .with_message(format!("step {} of 4", i + 1))
            })
            .collect();
        let mut rest = expected.iter();
        assert!(seen.iter().all(|s| rest.any(|e| e == s)), "{seen:?}");
        assert_eq!(seen.last(), expected.last(), "{seen:?}");

        let (reporter, mut reports) = Reporter::channel();
        let answer = connection
            .call_reporting("slow", json!({"seconds": 0.2}), reporter)
            .await
            .unwrap();
        assert_eq!(answer.content, vec![Part::text("done")]);
        let last = reports.take().progress.unwrap();
        assert_eq!((last.progress, last.total), (3.0, Some(4.0)));
        // Without a listener the call is not watched, and works as before.
        let plain = connection
            .call("slow", json!({"seconds": 0.1}))
            .await
            .unwrap();
        assert_eq!(plain.content, vec![Part::text("done")]);
        connection.close().await;
    });
}

/// `notifications/tools/list_changed`: a tool the server adds appears in the registry.
#[test]
fn list_changed_brings_new_tools_into_the_registry() {
    runtime().block_on(async {
        let connection = Connection::connect(&stdio_endpoint()).await.unwrap();
        let registry = ToolRegistry::new();
        let mount = Mount::new("py");
        connection.register(&registry, &mount).await.unwrap();
        assert!(!registry.contains("py_extra"));
        let _follow = connection.follow(registry.clone(), mount);
        let grown = connection.call("grow", json!({})).await.unwrap();
        assert!(!grown.is_error, "{grown:?}");
        let started = Instant::now();
        while !registry.contains("py_extra") {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "py_extra never appeared"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let result = registry
            .dispatch(
                &ToolCall::new("c1", "py_extra", "{}"),
                &ToolSelection::default(),
            )
            .await;
        assert_eq!(result.content, vec![Part::text("extra here")]);
    });
}

/// The same server over streamable HTTP: listed and called through the library and the CLI.
#[test]
fn streamable_http_server_is_listed_and_called() {
    let server = HttpServer::start();
    let tools = json_out(&toolwire(&["mcp", "tools", "--url", &server.url]));
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "add"));
    let out = json_out(&toolwire(&[
        "mcp",
        "call",
        "add",
        r#"{"a":1,"b":1}"#,
        "--url",
        &server.url,
    ]));
    assert_eq!(out["output"], json!({"sum": 2}));
    runtime().block_on(async {
        let connection = Connection::connect(&Endpoint::url(&server.url).unwrap())
            .await
            .unwrap();
        let image = connection.call("image", json!({})).await.unwrap();
        assert_eq!(image.content, vec![Part::image("image/png", PNG)]);
    });
}

/// In an agent run on Gemini: the tool with the recursive schema is left out of the request
/// (the turn goes on), the destructive tool's annotations reach `before_tool`, which denies it,
/// and the other call runs on the server.
#[test]
fn agent_leaves_out_what_the_provider_cannot_take_and_sees_annotations() {
    use toolwire::agent::{Agent, ToolDecision};
    use toolwire::mock::{MockReply, MockServer, Script};
    use toolwire::{ChatRequest, Client, Message};

    runtime().block_on(async {
        let connection = Connection::connect(&stdio_endpoint()).await.unwrap();
        let registry = ToolRegistry::new();
        connection
            .register(&registry, &Mount::new("py"))
            .await
            .unwrap();
        let script = Script::new()
            .then(MockReply::tool_calls([
                ToolCall::new("c1", "py_wipe", r#"{"path":"/"}"#),
                ToolCall::new("c2", "py_add", r#"{"a":2,"b":3}"#),
            ]))
            .then(MockReply::text("done"));
        let mock = MockServer::start(ProviderKind::Gemini, script)
            .await
            .unwrap();
        let client = Client::builder(ProviderKind::Gemini)
            .base_url(mock.url())
            .api_key("test")
            .build()
            .unwrap();
        let tools = registry.clone();
        let agent = Agent::new(client, registry).before_tool(move |call| {
            let destructive = tools
                .annotations(&call.name, &ToolSelection::default())
                .is_some_and(|a| a.destructive == Some(true));
            async move {
                if destructive {
                    ToolDecision::Deny(format!("{} needs approval", call.name))
                } else {
                    ToolDecision::Approve
                }
            }
        });
        let request = ChatRequest::new("gemini-2.5-flash", vec![Message::user("go")]);
        let outcome = agent.run(request).finish().await.unwrap();
        assert_eq!(outcome.response.text.as_deref(), Some("done"));

        let sent = &mock.requests()[0].body;
        let names: Vec<&str> = sent["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"py_add") && names.contains(&"py_wipe"),
            "{names:?}"
        );
        assert!(!names.contains(&"py_tree"), "{names:?}");

        let results: Vec<&toolwire::ToolResult> = outcome
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2);
        assert!(results[0].is_error);
        assert_eq!(results[0].error.as_deref(), Some("py_wipe needs approval"));
        assert!(!results[1].is_error, "{:?}", results[1]);
        assert_eq!(results[1].output, json!({"sum": 5}));
    });
}

pub(crate) fn http() -> reqwest::Client {
    toolwire::client::http_client_builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The tool names `GET /api/tools` lists for the default role (each checked to be mounted).
pub(crate) async fn listed(base: &str) -> Vec<String> {
    let body: Value = http()
        .get(format!("{base}/api/tools"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["tools_by_role"]["default"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["source"], "mcp:py");
            t["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

async fn wait_for(base: &str, want: &str, present: bool) {
    let started = Instant::now();
    while listed(base).await.iter().any(|n| n == want) != present {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{want} never became present={present}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn chat(base: &str, message: &str) -> Value {
    http()
        .post(format!("{base}/api/chat"))
        .json(&json!({"message": message}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `toolwire serve` with `[[mcp]]`: the server's tools are listed by `GET /api/tools` as
/// `py_<tool>` (source `mcp:py`), called through `/api/chat`, appear after list_changed, go
/// when the server dies and come back when it is restarted.
#[test]
fn serve_mounts_mcp_servers() {
    use toolwire::server::ServerConfig;

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let config_file = dir.join("serve.toml");
    let command = serde_json::to_string(&stdio_server()).unwrap();
    std::fs::write(
        &config_file,
        format!("[[mcp]]\nname = \"py\"\ncommand = {command}\n"),
    )
    .unwrap();
    runtime().block_on(async {
        let config = ServerConfig::new()
            .with_port(0)
            .with_roles_file(&config_file)
            .unwrap();
        assert_eq!(config.mcp.len(), 1);
        let server = toolwire::server::start(config).await.unwrap();
        let base = server.url();
        let base = base.as_str();
        wait_for(base, "py_add", true).await;

        // `/mcp` advertises the mounted tools' output schemas (the official client lists
        // them), and a call whose structuredContent breaks its schema is an error there too.
        let url = format!("{base}/mcp");
        let listed_there = {
            let (py, client, url) = (python().to_owned(), here("client.py"), url.clone());
            tokio::task::spawn_blocking(move || {
                json_out(
                    &Command::new(&py)
                        .args([&client, "list", &url])
                        .output()
                        .unwrap(),
                )
            })
            .await
            .unwrap()
        };
        let weather = listed_there
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "py_weather")
            .unwrap();
        assert_eq!(
            weather["outputSchema"]["properties"]["temp_c"],
            json!({"type": "number"}),
            "{weather}"
        );
        let image = listed_there
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "py_image");
        assert!(image.unwrap().get("outputSchema").is_none());
        let connection = Connection::connect(&Endpoint::url(&url).unwrap())
            .await
            .unwrap();
        let broken = connection
            .call("py_weather", json!({"city": "Bergen"}))
            .await
            .unwrap();
        assert!(broken.is_error, "{broken:?}");
        assert!(
            broken.error.as_deref().unwrap().contains("/temp_c:"),
            "{broken:?}"
        );
        let fine = connection
            .call("py_weather", json!({"city": "Oslo"}))
            .await
            .unwrap();
        assert_eq!(fine.output, json!({"temp_c": 21.5}));
        connection.close().await;

        // The offline model calls the tools the message names, with example arguments.
        let answer = chat(base, "please run py_echo").await;
        let tool_messages: Vec<&Value> = answer["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .collect();
        assert_eq!(tool_messages.len(), 1, "{answer}");
        assert_eq!(tool_messages[0]["name"], "py_echo");
        assert_eq!(tool_messages[0]["is_error"], json!(false), "{answer}");

        // A slow MCP tool's progress streams as `tool_progress` events, and the log shows
        // the latest report.
        let streamed = http()
            .post(format!("{base}/api/chat"))
            .json(&json!({"message": "please run py_slow seconds=0.8", "stream": true}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let progress: Vec<Value> = streamed
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["type"] == "tool_progress")
            .collect();
        assert!(progress.len() >= 2, "{streamed}");
        assert_eq!(progress[0]["name"], "py_slow");
        assert_eq!(progress[0]["total"], json!(4.0));
        assert!(
            progress.iter().any(|p| p["message"] == "step 2 of 4"),
            "{streamed}"
        );
        let finished = streamed.find("event: tool_finished").unwrap();
        assert!(streamed.find("event: tool_progress").unwrap() < finished);
        let calls: Value = http()
            .get(format!("{base}/api/calls"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let slow = &calls["calls"][0];
        assert_eq!(slow["name"], "py_slow", "{calls}");
        assert_eq!(slow["progress"]["message"], "step 4 of 4", "{calls}");

        chat(base, "please run py_grow").await;
        wait_for(base, "py_extra", true).await;

        chat(base, "please run py_die").await;
        wait_for(base, "py_add", false).await;
        // Restarted after the backoff: a fresh process without py_extra.
        wait_for(base, "py_add", true).await;
        assert!(!listed(base).await.contains(&"py_extra".to_owned()));
        server.shutdown().await;
    });
}

/// `/mcp`: the official Python client lists and calls a tool a plugin registered over HTTP
/// (N.E.K.O.'s way), and toolwire's own client (rmcp) reaches the same tools, image parts
/// included.
#[test]
fn serve_is_an_mcp_server_for_plugin_tools() {
    use toolwire::plugin::Plugin;
    use toolwire::server::ServerConfig;
    use toolwire::tools::ToolReply;

    runtime().block_on(async {
        let server = toolwire::server::start(ServerConfig::new().with_port(0))
            .await
            .unwrap();
        let base = server.url();
        let tools = ToolRegistry::new();
        tools
            .register_fn(
                "shout",
                "Upper-cases text",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                |args| async move {
                    Ok(json!({"shouted": args["text"].as_str().unwrap_or_default().to_uppercase()}))
                },
            )
            .unwrap();
        tools
            .register_fn("picture", "A 1x1 PNG", json!({"type": "object"}), |_| async {
                Ok(ToolReply::new(json!({"w": 1})).with_content([Part::image("image/png", PNG)]))
            })
            .unwrap();
        let plugin = Plugin::new(base.clone(), tools.clone())
            .with_source("plugin:shout")
            .start()
            .await
            .unwrap();
        plugin.registered().await;
        let url = format!("{base}/mcp");

        // The official Python client.
        let py = python().to_owned();
        let client = here("client.py");
        let (listed, called) = tokio::task::spawn_blocking({
            let url = url.clone();
            move || {
                let listed = Command::new(&py).args([&client, "list", &url]).output().unwrap();
                let called = Command::new(&py)
                    .args([&client, "call", "shout", r#"{"text":"hi"}"#, &url])
                    .output()
                    .unwrap();
                (json_out(&listed), json_out(&called))
            }
        })
        .await
        .unwrap();
        let names: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["shout", "picture"]);
        assert_eq!(listed[0]["inputSchema"]["required"], json!(["text"]));
        assert_eq!(called["structuredContent"], json!({"shouted": "HI"}));
        assert_eq!(called["isError"], json!(false));

        // toolwire's own client (the Rust SDK) on the same endpoint.
        let connection = Connection::connect(&Endpoint::url(&url).unwrap())
            .await
            .unwrap();
        let picture = connection.call("picture", json!({})).await.unwrap();
        assert_eq!(picture.content, vec![Part::image("image/png", PNG)]);
        assert_eq!(picture.output, json!({"w": 1}));
        let missing = connection.call("nope", json!({})).await.unwrap();
        assert!(missing.is_error);
        assert!(missing.error.as_deref().unwrap().contains("nope"), "{missing:?}");

        // Not a role of this server.
        let status = http()
            .post(format!("{url}?role=nobody"))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404);
        drop(plugin);
        server.shutdown().await;
    });
}

fn hostile_server() -> Vec<String> {
    vec![python().to_owned(), here("hostile.py")]
}

/// A tool listed without `inputSchema` is left out with a reason; the server's other tools
/// stay (through the CLI, which reports it as `excluded`, and through a registry).
#[test]
fn a_tool_without_input_schema_leaves_out_only_itself() {
    let mut args = vec!["mcp", "tools", "--"];
    let server = hostile_server();
    args.extend(server.iter().map(String::as_str));
    let out = toolwire(&args);
    let tools = json_out(&out);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["good", "big", "big_id_last", "noschema"], "{tools}");
    let bad = &tools[3];
    assert!(
        bad["excluded"].as_str().unwrap().contains("inputSchema"),
        "{bad}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"noschema\" left out"), "{stderr}");
    runtime().block_on(async {
        let connection = Connection::connect(&Endpoint::command(hostile_server()).unwrap())
            .await
            .unwrap();
        let registry = ToolRegistry::new();
        let names = connection
            .register(&registry, &Mount::new("h"))
            .await
            .unwrap();
        assert_eq!(names, ["h_good", "h_big", "h_big_id_last"]);
        let good = connection.call("good", json!({})).await.unwrap();
        assert_eq!(good.content, vec![Part::text("good")]);
    });
}

/// A 50 MiB result fails with a size error as it arrives (not a timeout), whether its id
/// comes before or after the result, and the connection still answers afterwards.
#[test]
fn an_oversized_result_is_a_size_error_not_a_timeout() {
    runtime().block_on(async {
        let connection = Connection::connect(&Endpoint::command(hostile_server()).unwrap())
            .await
            .unwrap();
        for name in ["big", "big_id_last"] {
            let started = Instant::now();
            let answer =
                tokio::time::timeout(Duration::from_secs(25), connection.call(name, json!({})))
                    .await
                    .expect("a size error, not a wait");
            let message = answer.unwrap_err().to_string();
            assert!(message.contains("larger than"), "{name}: {message}");
            assert!(
                message.contains(&toolwire::mcp::MAX_MESSAGE_BYTES.to_string()),
                "{message}"
            );
            assert!(started.elapsed() < Duration::from_secs(25));
        }
        let good = connection.call("good", json!({})).await.unwrap();
        assert_eq!(good.content, vec![Part::text("good")]);
    });
}

/// `/mcp` answers a JSON-RPC batch and deeply nested arguments with 400 and a JSON-RPC error
/// body (not 415).
#[test]
fn serve_mcp_answers_batches_and_deep_json_with_400() {
    use toolwire::server::ServerConfig;
    runtime().block_on(async {
        let server = toolwire::server::start(ServerConfig::new().with_port(0))
            .await
            .unwrap();
        let url = format!("{}/mcp", server.url());
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let batch = Value::Array(vec![call; 10_000]).to_string();
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(50_000),
            "]".repeat(50_000)
        );
        for (what, body, code) in [("batch", batch, -32600), ("deep", deep, -32700)] {
            let response = http()
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 400, "{what}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
            assert_eq!(body["error"]["code"], json!(code), "{what}: {body}");
        }
        server.shutdown().await;
    });
}

/// `tests/mcp/authed.py`: the test server behind a header check (`bearer TOKEN` or `header
/// NAME VALUE`), on a free port, killed when dropped.
fn authed_server(check: &[&str]) -> HttpServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut args = vec![here("authed.py"), port.to_string()];
    args.extend(check.iter().map(|s| (*s).to_owned()));
    let child = Command::new(python())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the Python server starts");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the authed server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

const BEARER: &str = "tw-bearer-s3cret-7781";
const KEY: &str = "tw-key-s3cret-4402";

pub(crate) fn toolwire_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolwire"));
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("toolwire runs")
}

fn no_secret(out: &Output) {
    for secret in [BEARER, KEY] {
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains(secret), "a secret was printed: {text}");
        }
    }
}

/// A server that requires a bearer token: listed and called with `--bearer-env`; without it
/// (or with a wrong one) one line that says what to pass; the token never printed.
#[test]
fn bearer_and_header_servers_are_listed_and_called() {
    let bearer = authed_server(&["bearer", BEARER]);
    let env = [("TW_TEST_TOKEN", BEARER), ("TW_WRONG", "nope")];
    let out = toolwire_env(
        &[
            "mcp",
            "tools",
            "--url",
            &bearer.url,
            "--bearer-env",
            "TW_TEST_TOKEN",
        ],
        &env,
    );
    no_secret(&out);
    let tools = json_out(&out);
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "add"));
    let out = toolwire_env(
        &[
            "mcp",
            "call",
            "add",
            r#"{"a":4,"b":5}"#,
            "--url",
            &bearer.url,
            "--bearer-env",
            "TW_TEST_TOKEN",
        ],
        &env,
    );
    no_secret(&out);
    assert_eq!(json_out(&out)["output"], json!({"sum": 9}));
    for extra in [&[][..], &["--bearer-env", "TW_WRONG"][..]] {
        let mut args = vec!["mcp", "tools", "--timeout", "10", "--url", &bearer.url];
        args.extend(extra);
        let out = toolwire_env(&args, &env);
        no_secret(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("401"), "{stderr}");
        assert!(stderr.contains("--bearer-env"), "{stderr}");
        assert!(stderr.contains("--header"), "{stderr}");
    }
    // A variable that is not set is named.
    let out = toolwire_env(
        &[
            "mcp",
            "tools",
            "--url",
            &bearer.url,
            "--bearer-env",
            "TW_UNSET_VAR",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TW_UNSET_VAR"));

    let keyed = authed_server(&["header", "X-Api-Key", KEY]);
    let header = format!("X-Api-Key: {KEY}");
    let out = toolwire_env(
        &[
            "mcp",
            "call",
            "echo",
            r#"{"text":"hi"}"#,
            "--url",
            &keyed.url,
            "--header",
            &header,
        ],
        &[],
    );
    // The header's value is on our own command line, not in what toolwire prints.
    no_secret(&out);
    assert_eq!(json_out(&out)["content"][0]["text"], "hi");
    let out = toolwire_env(
        &["mcp", "tools", "--timeout", "10", "--url", &keyed.url],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--header"));
}

/// `toolwire serve` mounts both servers through `[[mcp]]` (`bearer_env`, and `headers` with a
/// value read from the environment): their tools are listed and called; no secret in the log.
#[test]
fn serve_mounts_servers_with_static_auth() {
    let bearer = authed_server(&["bearer", BEARER]);
    let keyed = authed_server(&["header", "X-Api-Key", KEY]);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-auth-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp]]\nname = \"b\"\nurl = \"{}\"\nbearer_env = \"TW_TEST_TOKEN\"\n\n\
             [[mcp]]\nname = \"k\"\nurl = \"{}\"\nheaders = {{ \"X-Api-Key\" = \"${{TW_TEST_KEY}}\" }}\n",
            bearer.url, keyed.url
        ),
    )
    .unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.join("serve.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["serve", "--port", &port.to_string(), "--config"])
        .arg(&config)
        .env("TW_TEST_TOKEN", BEARER)
        .env("TW_TEST_KEY", KEY)
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    runtime().block_on(async {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("toolwire serve exited ({status}): {log}");
            }
            let listed = match http().get(format!("{base}/api/tools")).send().await {
                Ok(r) => r.json::<Value>().await.unwrap_or_default(),
                Err(_) => Value::Null,
            };
            let names: Vec<String> = listed["tools_by_role"]["default"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect();
            if names.contains(&"b_add".to_owned()) && names.contains(&"k_echo".to_owned()) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{names:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for tool in ["b_echo", "k_echo"] {
            let answer = chat(&base, &format!("please run {tool}")).await;
            let results: Vec<&Value> = answer["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .collect();
            assert_eq!(results.len(), 1, "{answer}");
            assert_eq!(results[0]["is_error"], json!(false), "{answer}");
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains(BEARER) && !text.contains(KEY),
        "a secret in the log"
    );

    // A variable that is not set is a config error naming it.
    let out = toolwire_env(
        &["serve", "--port", "0", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TW_TEST"), "{stderr}");
}

/// Over streamable HTTP too, a 50 MiB result fails as it arrives, well within the call's time
/// limit: as a size error when the server answers with JSON; when it answers with an SSE event,
/// the SDK closes the transport at the event limit (its message says "Transport closed").
#[test]
fn an_oversized_http_result_fails_as_it_arrives() {
    for mode in ["json", "sse"] {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python())
            .args([here("big.py"), port.to_string(), mode.to_owned()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "big.py did not listen"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let server = HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let out = toolwire(&[
            "mcp",
            "call",
            "big",
            "{}",
            "--timeout",
            "60",
            "--url",
            &server.url,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode}: {stderr}");
        assert!(!stderr.contains("within"), "{mode}: a timeout: {stderr}");
        if mode == "json" {
            assert!(
                stderr.contains("exceeded the maximum size of 16777216"),
                "{stderr}"
            );
        }
        assert!(out.stdout.is_empty());
        let small = toolwire(&["mcp", "call", "small", "{}", "--url", &server.url]);
        assert_eq!(json_out(&small)["content"][0]["text"], "small");
    }
}
