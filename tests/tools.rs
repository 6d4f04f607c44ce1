//! Tool registry, typed tools, parameter builder, dispatch and HTTP callback tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Barrier;
use toolwire::tools::{
    Callback, Param, Params, Tool, ToolError, ToolRegistry, ToolReply, ToolSelection, TypedTool,
};
use toolwire::types::Part;
use toolwire::{Error, ToolCall, ToolDefinition};

fn everything() -> ToolSelection {
    ToolSelection::new()
}

fn def(name: &str) -> ToolDefinition {
    ToolDefinition::new(name, format!("the {name} tool")).unwrap()
}

fn echo(name: &str) -> Tool {
    Tool::from_fn(def(name), |args| async move { Ok(json!({"echo": args})) })
}

fn names(registry: &ToolRegistry, selection: &ToolSelection) -> Vec<String> {
    registry
        .definitions(selection)
        .into_iter()
        .map(|d| d.name)
        .collect()
}

fn input_error(result: toolwire::Result<()>) -> (String, String) {
    match result {
        Err(Error::Input { path, message }) => (path, message),
        other => panic!("expected an input error, got {other:?}"),
    }
}

fn weather_params() -> Value {
    Params::new()
        .add("city", Param::string().description("City name").required())
        .add(
            "unit",
            Param::string()
                .one_of(["celsius", "fahrenheit"])
                .default("celsius"),
        )
        .build()
        .unwrap()
}

// ---------------------------------------------------------------- registry

#[test]
fn register_replaces_by_default() {
    let registry = ToolRegistry::new();
    registry.register(echo("a")).unwrap();
    registry.register(echo("b")).unwrap();
    let newer = Tool::from_fn(
        ToolDefinition::new("a", "version two").unwrap(),
        |_| async { Ok(json!(2)) },
    )
    .with_source("plugin:v2");
    registry.register(newer).unwrap();
    let list = registry.list();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].name, "a", "a hot update keeps the tool's place");
    assert_eq!(list[0].description, "version two");
    assert_eq!(list[0].source, "plugin:v2");
}

#[test]
fn list_by_source_picks_tools_by_their_source_in_order() {
    let registry = ToolRegistry::new();
    registry
        .register(echo("a").with_source("plugin:x"))
        .unwrap();
    registry
        .register(echo("b").with_source("mcp:files"))
        .unwrap();
    registry.register(echo("c")).unwrap();
    registry.register(echo("d").with_source("mcp:web")).unwrap();
    let picked: Vec<String> = (registry.list_by_source(|s| s.starts_with("mcp:")))
        .into_iter()
        .map(|t| format!("{} {}", t.name, t.source))
        .collect();
    assert_eq!(picked, ["b mcp:files", "d mcp:web"]);
    assert!(registry.list_by_source(|s| s == "nobody").is_empty());
}

#[test]
fn strict_mode_refuses_duplicates_naming_both_sources() {
    let registry = ToolRegistry::new().with_strict(true);
    registry
        .register(echo("search").with_source("builtin"))
        .unwrap();
    let (path, message) = input_error(registry.register(echo("search").with_source("plugin:web")));
    assert_eq!(path, "name");
    assert!(
        message.contains("\"builtin\"") && message.contains("\"plugin:web\""),
        "{message}"
    );
    // Another role is another registration.
    registry
        .register(echo("search").with_role("alice").with_source("plugin:web"))
        .unwrap();
    assert_eq!(registry.list().len(), 2);
}

#[test]
fn unregister_and_clear_source() {
    let registry = ToolRegistry::new();
    registry
        .register(echo("a").with_source("plugin:x"))
        .unwrap();
    registry
        .register(echo("b").with_source("plugin:x"))
        .unwrap();
    registry.register(echo("c").with_source("builtin")).unwrap();
    registry
        .register(echo("c").with_source("builtin").with_role("alice"))
        .unwrap();
    assert!(registry.unregister("a"));
    assert!(!registry.unregister("a"));
    assert_eq!(registry.clear_source("plugin:x"), 1);
    assert_eq!(registry.clear_source("plugin:x"), 0);
    assert!(registry.unregister_scoped("c", Some("alice")));
    assert!(!registry.unregister_scoped("c", Some("alice")));
    assert!(registry.contains("c"));
    assert_eq!(names(&registry, &everything()), ["c"]);
}

#[test]
fn list_shows_every_setting() {
    let registry = ToolRegistry::new();
    registry
        .register(
            Tool::from_fn(
                def("weather").with_parameters(weather_params()).unwrap(),
                |_| async { Ok(Value::Null) },
            )
            .with_source("plugin:weather")
            .with_toolset("outdoor")
            .with_role("alice")
            .with_timeout(Duration::from_secs(12)),
        )
        .unwrap();
    let info = &registry.list()[0];
    assert_eq!(info.name, "weather");
    assert_eq!(info.description, "the weather tool");
    assert_eq!(info.parameters, weather_params());
    assert_eq!(info.source, "plugin:weather");
    assert_eq!(info.toolset.as_deref(), Some("outdoor"));
    assert_eq!(info.role.as_deref(), Some("alice"));
    assert_eq!(info.timeout, Duration::from_secs(12));
    assert_eq!(info.callback_url, None);
    assert_eq!(info.unavailable, None);
}

#[test]
fn roles_scope_tools() {
    let registry = ToolRegistry::new();
    registry.register(echo("shared")).unwrap();
    registry.register(echo("diary").with_role("alice")).unwrap();
    let alice_search = Tool::from_fn(
        ToolDefinition::new("shared", "alice's version").unwrap(),
        |_| async { Ok(json!("alice")) },
    )
    .with_role("alice");
    registry.register(alice_search).unwrap();
    assert_eq!(names(&registry, &everything()), ["shared"]);
    let bob = ToolSelection::new().with_role("bob");
    assert_eq!(names(&registry, &bob), ["shared"]);
    let alice = ToolSelection::new().with_role("alice");
    let defs = registry.definitions(&alice);
    let got: Vec<(&str, &str)> = defs
        .iter()
        .map(|d| (d.name.as_str(), d.description.as_str()))
        .collect();
    assert_eq!(
        got,
        [("shared", "alice's version"), ("diary", "the diary tool")]
    );
}

#[test]
fn toolsets_are_enabled_per_request() {
    let registry = ToolRegistry::new();
    registry.register(echo("core")).unwrap();
    registry
        .register(echo("browse").with_toolset("web"))
        .unwrap();
    registry
        .register(echo("shell").with_toolset("dev"))
        .unwrap();
    assert_eq!(names(&registry, &everything()), ["core"]);
    assert_eq!(
        names(&registry, &ToolSelection::new().with_toolset("web")),
        ["core", "browse"]
    );
    assert_eq!(
        names(&registry, &ToolSelection::new().with_all_toolsets()),
        ["core", "browse", "shell"]
    );
}

#[tokio::test]
async fn unavailable_tools_are_hidden_and_reported() {
    let registry = ToolRegistry::new();
    let missing = "TOOLWIRE_TEST_SURELY_UNSET_VARIABLE";
    registry
        .register(echo("ok").with_required_env("PATH"))
        .unwrap();
    registry
        .register(echo("needs_key").with_required_env(missing))
        .unwrap();
    registry
        .register(echo("offline").with_check(|| Err("the service is down".into())))
        .unwrap();
    assert_eq!(names(&registry, &everything()), ["ok"]);
    let report = registry.availability_report();
    assert_eq!(report.len(), 2);
    assert_eq!(report[0].name, "needs_key");
    assert_eq!(
        report[0].reason,
        format!("missing environment variable {missing}")
    );
    assert_eq!(report[1].name, "offline");
    assert_eq!(report[1].reason, "check failed: the service is down");
    assert_eq!(
        registry.list()[1].unavailable.as_deref(),
        Some(report[0].reason.as_str())
    );
    // A call to it anyway is answered with the reason, not run.
    let result = registry
        .dispatch(&ToolCall::new("c1", "needs_key", "{}"), &everything())
        .await;
    assert!(result.is_error);
    let message = result.error.unwrap();
    assert!(
        message.contains("is not available") && message.contains(missing),
        "{message}"
    );
}

#[test]
fn registration_errors_name_the_field() {
    let registry = ToolRegistry::new();
    // The fields stay public: a definition edited after `new` is checked again at registration.
    let mut bad_name = def("x");
    bad_name.name = "has space".into();
    let (path, _) =
        input_error(registry.register(Tool::from_fn(bad_name, |_| async { Ok(Value::Null) })));
    assert_eq!(path, "name");
    let mut bad_schema = def("x");
    bad_schema.parameters = json!(["not", "an", "object"]);
    let (path, message) =
        input_error(registry.register(Tool::from_fn(bad_schema, |_| async { Ok(Value::Null) })));
    assert_eq!(path, "parameters");
    assert!(message.contains("got array"), "{message}");
    let mut invalid_schema = def("x");
    invalid_schema.parameters =
        json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}});
    let (path, _) = input_error(
        registry.register(Tool::from_fn(invalid_schema, |_| async { Ok(Value::Null) })),
    );
    assert_eq!(path, "parameters");
    for timeout in [Duration::ZERO, Duration::from_secs(301)] {
        let (path, message) = input_error(registry.register(echo("x").with_timeout(timeout)));
        assert_eq!(path, "timeout");
        assert!(message.contains("at most 300s"), "{message}");
    }
    registry
        .register(echo("x").with_timeout(Duration::from_secs(300)))
        .unwrap();
    let (path, _) = input_error(registry.register(echo("y").with_source(" ")));
    assert_eq!(path, "source");
    let (path, _) =
        input_error(registry.register_fn("bad name", "", json!({}), |_| async { Ok(Value::Null) }));
    assert_eq!(path, "name");
    let (path, _) =
        input_error(registry.register_fn("ok", "", json!(true), |_| async { Ok(Value::Null) }));
    assert_eq!(path, "parameters");
}

#[test]
fn parameter_list_in_description() {
    let registry = ToolRegistry::new();
    registry
        .register(
            Tool::from_fn(
                ToolDefinition::new("weather", "Current weather.")
                    .unwrap()
                    .with_parameters(weather_params())
                    .unwrap(),
                |_| async { Ok(Value::Null) },
            )
            .with_parameter_list(),
        )
        .unwrap();
    assert_eq!(
        registry.definitions(&everything())[0].description,
        "Current weather.\n\nParameters:\n\
         - city (string, required): City name\n\
         - unit (string, optional, default \"celsius\"): one of \"celsius\", \"fahrenheit\""
    );
}

// ---------------------------------------------------------------- typed tools

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Weather query.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name.
    city: String,
    /// Temperature unit.
    unit: Option<Unit>,
}

#[derive(Serialize)]
struct Weather {
    city: String,
    temp: f64,
    unit: &'static str,
}

struct WeatherTool;

impl TypedTool for WeatherTool {
    type Args = WeatherArgs;
    type Output = Weather;

    fn name(&self) -> &str {
        "get_weather"
    }

    fn description(&self) -> &str {
        "Current weather for a city"
    }

    async fn call(&self, args: WeatherArgs) -> Result<Weather, ToolError> {
        if args.city == "Atlantis" {
            return Err(ToolError::new("no weather station in Atlantis"));
        }
        let (temp, unit) = match args.unit.unwrap_or(Unit::Celsius) {
            Unit::Celsius => (21.0, "celsius"),
            Unit::Fahrenheit => (69.8, "fahrenheit"),
        };
        Ok(Weather {
            city: args.city,
            temp,
            unit,
        })
    }
}

#[tokio::test]
async fn typed_tool_schema_and_call() {
    let registry = ToolRegistry::new();
    registry.register_typed(WeatherTool).unwrap();
    let def = &registry.definitions(&everything())[0];
    assert_eq!(def.name, "get_weather");
    assert_eq!(def.parameters["type"], "object");
    assert_eq!(def.parameters["required"], json!(["city"]));
    assert_eq!(
        def.parameters["properties"]["city"]["description"],
        "City name."
    );
    assert!(def.parameters.get("$schema").is_none());

    let call = ToolCall::new(
        "c1",
        "get_weather",
        r#"{"city":"Paris","unit":"fahrenheit"}"#,
    );
    let result = registry.dispatch(&call, &everything()).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.call_id, "c1");
    assert_eq!(result.name, "get_weather");
    assert_eq!(
        result.output,
        json!({"city": "Paris", "temp": 69.8, "unit": "fahrenheit"})
    );

    let call = ToolCall::new("c2", "get_weather", r#"{"city":"Paris","unit":"kelvin"}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert!(result.is_error);
    let message = result.error.unwrap();
    assert!(
        message.starts_with(r#"Invalid parameter "unit": "kelvin" is not "#),
        "{message}"
    );

    let call = ToolCall::new("c3", "get_weather", r#"{"city":"Atlantis"}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert_eq!(
        result.error.as_deref(),
        Some("no weather station in Atlantis")
    );
}

// ---------------------------------------------------------------- dispatch

fn counting_registry() -> (ToolRegistry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let counter = Arc::clone(&runs);
    registry
        .register_fn(
            "get_weather",
            "Current weather",
            weather_params(),
            move |args| {
                let counter = Arc::clone(&counter);
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"city": args["city"], "temp_c": 21}))
                }
            },
        )
        .unwrap();
    (registry, runs)
}

#[tokio::test]
async fn schema_violation_names_parameter_problem_and_allowed_values() {
    let (registry, runs) = counting_registry();
    let call = ToolCall::new("c1", "get_weather", r#"{"city":"Paris","unit":"kelvin"}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some(r#"Invalid parameter "unit": "kelvin" is not one of ["celsius", "fahrenheit"]"#)
    );
    let call = ToolCall::new("c2", "get_weather", r#"{"unit":"celsius","town":"x"}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert_eq!(
        result.error.as_deref(),
        Some(
            r#"Unknown parameter "town"; allowed: "city", "unit"; Missing required parameter "city""#
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never ran");
}

#[tokio::test]
async fn malformed_and_truncated_arguments_never_run() {
    let (registry, runs) = counting_registry();
    let malformed = ToolCall::new("c1", "get_weather", r#"{"city": Paris}"#);
    let result = registry.dispatch(&malformed, &everything()).await;
    assert!(result.is_error);
    let message = result.error.unwrap();
    assert!(
        message.contains("not a valid JSON object") && message.contains("line 1"),
        "{message}"
    );
    assert_eq!(result.output["raw_arguments"], r#"{"city": Paris}"#);

    let truncated = ToolCall::new_cut_short("c2", "get_weather", r#"{"city": "Par"#);
    let result = registry.dispatch(&truncated, &everything()).await;
    let message = result.error.unwrap();
    assert!(message.contains("cut off"), "{message}");
    assert_eq!(result.output["raw_arguments"], r#"{"city": "Par"#);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn unknown_tool_lists_available_tools() {
    let (registry, _) = counting_registry();
    registry.register(echo("lookup")).unwrap();
    registry.register(echo("hidden").with_toolset("x")).unwrap();
    let result = registry
        .dispatch(&ToolCall::new("c1", "get_wether", "{}"), &everything())
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some(r#"Unknown tool "get_wether"; available tools: get_weather, lookup"#)
    );
    assert_eq!(
        result.output,
        json!({"available_tools": ["get_weather", "lookup"]})
    );
    let result = registry
        .dispatch(&ToolCall::new("c2", "hidden", "{}"), &everything())
        .await;
    assert!(result.error.unwrap().starts_with("Unknown tool \"hidden\""));
}

#[tokio::test]
async fn timeout_becomes_an_error_result() {
    let registry = ToolRegistry::new();
    registry
        .register(
            Tool::from_fn(def("slow"), |_| async {
                futures::future::pending::<()>().await;
                Ok(Value::Null)
            })
            .with_timeout(Duration::from_millis(20)),
        )
        .unwrap();
    let result = registry
        .dispatch(&ToolCall::new("c1", "slow", "{}"), &everything())
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some(r#"Tool "slow" timed out after 20ms and was stopped."#)
    );
}

#[tokio::test]
async fn errors_and_panics_are_results_and_other_calls_go_on() {
    let registry = ToolRegistry::new();
    registry.register(echo("fine")).unwrap();
    registry
        .register(Tool::from_fn(def("boom"), |_| async {
            if true {
                panic!("kaboom at step 3");
            }
            Ok(Value::Null)
        }))
        .unwrap();
    registry
        .register(Tool::from_fn(def("fails"), |_| async {
            Err::<Value, _>(ToolError::new("disk full").with_output(json!({"free": 0})))
        }))
        .unwrap();
    registry
        .register(Tool::from_fn(def("io"), |_| async {
            let n: i32 = "x".parse()?;
            Ok(json!(n))
        }))
        .unwrap();
    let calls = [
        ToolCall::new("c1", "boom", "{}"),
        ToolCall::new("c2", "fine", r#"{"a":1}"#),
        ToolCall::new("c3", "fails", "{}"),
        ToolCall::new("c4", "io", "{}"),
    ];
    let results = registry.dispatch_all(&calls, &everything()).await;
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    assert_eq!(
        results[0].error.as_deref(),
        Some(r#"Tool "boom" failed: it panicked: kaboom at step 3"#)
    );
    assert!(!results[1].is_error);
    assert_eq!(results[1].output, json!({"echo": {"a": 1}}));
    assert_eq!(results[2].error.as_deref(), Some("disk full"));
    assert_eq!(results[2].output, json!({"free": 0}));
    assert_eq!(
        results[3].error.as_deref(),
        Some("invalid digit found in string")
    );
}

#[tokio::test]
async fn calls_run_concurrently_with_results_in_call_order() {
    // Each call waits until the other has started: sequential dispatch would time out.
    let barrier = Arc::new(Barrier::new(2));
    let registry = ToolRegistry::new();
    for name in ["first", "second"] {
        let barrier = Arc::clone(&barrier);
        registry
            .register(
                Tool::from_fn(def(name), move |_| {
                    let barrier = Arc::clone(&barrier);
                    async move {
                        barrier.wait().await;
                        Ok(json!("met"))
                    }
                })
                .with_timeout(Duration::from_secs(10)),
            )
            .unwrap();
    }
    let calls = [
        ToolCall::new("b", "second", "{}"),
        ToolCall::new("a", "first", "{}"),
    ];
    let results = registry.dispatch_all(&calls, &everything()).await;
    assert_eq!(results[0].call_id, "b");
    assert_eq!(results[1].call_id, "a");
    assert!(results.iter().all(|r| !r.is_error && r.output == "met"));
}

#[tokio::test]
async fn large_results_are_truncated_with_a_marker() {
    let registry = ToolRegistry::new().with_max_result_bytes(1000);
    registry
        .register(Tool::from_fn(def("dump"), |_| async {
            Ok(json!({"rows": "r".repeat(10_000)}))
        }))
        .unwrap();
    let result = registry
        .dispatch(&ToolCall::new("c1", "dump", "{}"), &everything())
        .await;
    assert!(!result.is_error);
    let text = result.output.as_str().unwrap();
    assert!(text.len() <= 1000, "{}", text.len());
    assert!(text.starts_with(r#"{"rows":"rrr"#));
    assert!(text.ends_with("of 10011 bytes shown]"), "{text}");
}

#[tokio::test]
async fn strict_tools_treat_null_as_absent() {
    let seen = Arc::new(std::sync::Mutex::new(Value::Null));
    let registry = ToolRegistry::new();
    let store = Arc::clone(&seen);
    registry
        .register(Tool::from_fn(
            def("weather")
                .with_parameters(weather_params())
                .unwrap()
                .with_strict(true),
            move |args| {
                let store = Arc::clone(&store);
                async move {
                    *store.lock().unwrap() = args;
                    Ok(Value::Null)
                }
            },
        ))
        .unwrap();
    let call = ToolCall::new("c1", "weather", r#"{"city":"Oslo","unit":null}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(*seen.lock().unwrap(), json!({"city": "Oslo"}));
    let call = ToolCall::new("c2", "weather", r#"{"city":null}"#);
    let result = registry.dispatch(&call, &everything()).await;
    assert_eq!(
        result.error.as_deref(),
        Some(r#"Invalid parameter "city": null is not of type "string""#)
    );
}

#[tokio::test]
async fn hot_update_is_seen_by_the_next_dispatch() {
    let registry = ToolRegistry::new();
    registry
        .register(Tool::from_fn(def("v"), |_| async { Ok(json!(1)) }))
        .unwrap();
    let shared = registry.clone();
    let call = ToolCall::new("c1", "v", "{}");
    assert_eq!(shared.dispatch(&call, &everything()).await.output, 1);
    registry
        .register(Tool::from_fn(def("v"), |_| async { Ok(json!(2)) }))
        .unwrap();
    assert_eq!(shared.dispatch(&call, &everything()).await.output, 2);
}

// ---------------------------------------------------------------- callback tools

/// What the test server saw and how it answers one request.
struct Reply {
    status: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(body: Value) -> Self {
        Self {
            status: "200 OK",
            headers: vec![("Content-Type", "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }
}

/// A one-request HTTP server on 127.0.0.1:0; the handle yields the request body it read.
async fn serve_once(reply: Reply) -> (String, tokio::task::JoinHandle<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let body = read_request(&mut socket).await;
        let mut head = format!(
            "HTTP/1.1 {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            reply.status,
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(&reply.body).await.unwrap();
        socket.shutdown().await.ok();
        body
    });
    (format!("http://{addr}/tools/cb"), handle)
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Value {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the request was complete");
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        assert!(head.starts_with("post /tools/cb "), "{head}");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        if buf.len() >= end + 4 + length {
            return serde_json::from_slice(&buf[end + 4..end + 4 + length]).unwrap();
        }
    }
}

fn callback_registry(url: &str, timeout: Duration) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let tool = Tool::callback(
        def("remote").with_parameters(weather_params()).unwrap(),
        Callback::new(url).unwrap().with_max_response_bytes(4096),
    )
    .with_timeout(timeout);
    registry.register(tool).unwrap();
    registry
}

async fn call_remote(registry: &ToolRegistry) -> toolwire::ToolResult {
    let call = ToolCall::new("call_7", "remote", r#"{"city":"Lyon"}"#);
    registry.dispatch(&call, &everything()).await
}

#[tokio::test]
async fn callback_posts_the_call_and_reads_the_envelope() {
    let (url, server) = serve_once(Reply::json(json!({"output": {"temp_c": 18}}))).await;
    let registry = callback_registry(&url, Duration::from_secs(10));
    let info = &registry.list()[0];
    assert_eq!(info.callback_url.as_deref(), Some(url.as_str()));
    assert_eq!(info.source, "external");
    let result = call_remote(&registry).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.output, json!({"temp_c": 18}));
    assert_eq!(
        server.await.unwrap(),
        json!({"name": "remote", "arguments": {"city": "Lyon"}, "call_id": "call_7",
               "raw_arguments": "{\"city\":\"Lyon\"}"})
    );
}

#[tokio::test]
async fn callback_error_envelope_and_bare_bodies() {
    let (url, _s) = serve_once(Reply::json(
        json!({"is_error": true, "error": "city not found", "output": {"q": "Lyon"}}),
    ))
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    assert_eq!(result.error.as_deref(), Some("city not found"));
    assert_eq!(result.output, json!({"q": "Lyon"}));

    let (url, _s) = serve_once(Reply::json(json!({"temp_c": 3}))).await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert_eq!(
        result.output,
        json!({"temp_c": 3}),
        "no output field: the body is the output"
    );

    let (url, _s) = serve_once(Reply {
        status: "200 OK",
        headers: vec![],
        body: b"sunny".to_vec(),
    })
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert_eq!(result.output, json!("sunny"));
}

#[tokio::test]
async fn callback_http_error_is_a_result() {
    let (url, _s) = serve_once(Reply {
        status: "500 Internal Server Error",
        headers: vec![],
        body: b"plugin crashed".to_vec(),
    })
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some("callback answered HTTP 500: plugin crashed")
    );
}

#[tokio::test]
async fn callback_redirects_are_not_followed() {
    // The redirect target is a live loopback server that must never be asked.
    let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target_addr = target.local_addr().unwrap();
    let (url, _s) = serve_once(Reply {
        status: "302 Found",
        headers: vec![("Location", format!("http://{target_addr}/tools/cb"))],
        body: Vec::new(),
    })
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some("callback answered HTTP 302 (a redirect, which is not followed)")
    );
    let asked = tokio::time::timeout(Duration::from_millis(50), target.accept()).await;
    assert!(asked.is_err(), "the redirect target was contacted");
}

#[tokio::test]
async fn callback_answer_size_is_limited() {
    let (url, _s) = serve_once(Reply::json(json!({"output": "x".repeat(10_000)}))).await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    assert_eq!(
        result.error.as_deref(),
        Some("callback answer is larger than the 4096 byte limit")
    );
}

#[tokio::test]
async fn callback_timeout_and_refused_connection() {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tools/cb", silent.local_addr().unwrap());
    let result = call_remote(&callback_registry(&url, Duration::from_millis(100))).await;
    assert_eq!(
        result.error.as_deref(),
        Some(r#"Tool "remote" timed out after 100ms and was stopped."#)
    );
    drop(silent);

    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tools/cb", closed.local_addr().unwrap());
    drop(closed);
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    assert!(
        result
            .error
            .as_deref()
            .unwrap()
            .starts_with("callback request failed"),
        "{result:?}"
    );
}

#[tokio::test]
async fn callback_to_localhost_is_pinned_to_loopback() {
    let (url, server) = serve_once(Reply::json(json!({"output": "via localhost"}))).await;
    let url = url.replace("127.0.0.1", "localhost");
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert_eq!(result.output, json!("via localhost"), "{result:?}");
    assert_eq!(server.await.unwrap()["call_id"], "call_7");
}

#[test]
fn callback_urls_outside_loopback_are_refused() {
    for url in [
        "http://127.0.0.1@evil.example/cb",
        "http://0x08080808/cb",
        "http://134744072/cb",
        "http://[::ffff:8.8.8.8]/cb",
        "http://example.com/cb",
    ] {
        match Callback::new(url) {
            Err(Error::Input { path, .. }) => assert_eq!(path, "callback_url"),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert_eq!(
        Callback::new("http://2130706433:8080/cb")
            .unwrap()
            .url()
            .as_str(),
        "http://127.0.0.1:8080/cb"
    );
}

#[tokio::test]
async fn callback_handler_is_not_run_for_bad_arguments() {
    // Nothing listens on port 9: had a request been made, the error would say so.
    let registry = callback_registry("http://127.0.0.1:9/cb", Duration::from_secs(1));
    let result = registry
        .dispatch(
            &ToolCall::new("c1", "remote", r#"{"unit":"kelvin","city":"x"}"#),
            &everything(),
        )
        .await;
    assert!(
        result
            .error
            .as_deref()
            .unwrap()
            .starts_with("Invalid parameter \"unit\"")
    );
}

#[tokio::test]
async fn checks_and_handlers_may_use_the_registry() {
    // User code runs without the registry lock held: a check that writes must not deadlock.
    let registry = ToolRegistry::new();
    let handle = registry.clone();
    registry
        .register(echo("a").with_check(move || {
            handle.unregister("no_such_tool");
            Ok(())
        }))
        .unwrap();
    assert_eq!(names(&registry, &everything()), ["a"]);
    assert!(registry.availability_report().is_empty());
    let result = registry
        .dispatch(&ToolCall::new("c1", "a", "{}"), &everything())
        .await;
    assert!(!result.is_error, "{result:?}");
}

// ---------------------------------------------------------------- content parts

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

struct Screenshot;

impl TypedTool for Screenshot {
    type Args = WeatherArgs;
    type Output = ToolReply;

    fn name(&self) -> &str {
        "screenshot"
    }

    fn description(&self) -> &str {
        "A picture of the weather page"
    }

    async fn call(&self, args: WeatherArgs) -> Result<ToolReply, ToolError> {
        Ok(ToolReply::new(json!({"city": args.city, "width": 1}))
            .with_content([Part::text("The page:"), Part::image("image/png", PNG)]))
    }
}

#[tokio::test]
async fn handlers_return_content_parts_the_model_sees() {
    let registry = ToolRegistry::new();
    registry
        .register(Tool::from_fn(def("chart"), |_| async {
            Ok(ToolReply::new(json!({"points": 3})).with_content([Part::image("image/png", PNG)]))
        }))
        .unwrap();
    registry.register_typed(Screenshot).unwrap();
    let result = registry
        .dispatch(&ToolCall::new("c1", "chart", "{}"), &everything())
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.output,
        json!({"points": 3}),
        "the output stays the value"
    );
    assert_eq!(result.content, vec![Part::image("image/png", PNG)]);
    let result = registry
        .dispatch(
            &ToolCall::new("c2", "screenshot", r#"{"city":"Lyon"}"#),
            &everything(),
        )
        .await;
    assert_eq!(result.output, json!({"city": "Lyon", "width": 1}));
    assert_eq!(result.content.len(), 2);
    assert_eq!(result.content[0].as_text(), Some("The page:"));
    // In the history, the result carries its parts in the pinned JSON.
    let history = serde_json::to_value(toolwire::Message::Tool(result)).unwrap();
    assert_eq!(
        history["content"][1],
        json!({"type": "image", "media_type": "image/png", "data": PNG})
    );
}

#[tokio::test]
async fn a_callback_answers_with_content_parts() {
    let image = json!({"type": "image", "media_type": "image/png", "data": PNG});
    let (url, _s) = serve_once(Reply::json(
        json!({"output": {"w": 1}, "content": [{"type": "text", "text": "the page"}, image]}),
    ))
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.output, json!({"w": 1}));
    assert_eq!(result.content[1], Part::image("image/png", PNG));
    // Only `content`: the envelope still, with a null output.
    let (url, _s) = serve_once(Reply::json(json!({"content": [image]}))).await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert_eq!(
        (result.output.clone(), result.content.len()),
        (Value::Null, 1)
    );
    // A part that is not one is an error result naming it, never dropped.
    let (url, _s) = serve_once(Reply::json(
        json!({"output": 1, "content": [{"type": "image", "media_type": "image/png"}]}),
    ))
    .await;
    let result = call_remote(&callback_registry(&url, Duration::from_secs(10))).await;
    assert!(result.is_error);
    let message = result.error.unwrap_or_default();
    assert!(
        message.contains("content[0]") && message.contains("needs `data` or `url`"),
        "{message}"
    );
}
