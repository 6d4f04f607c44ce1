//! `toolwire serve` over loopback: the registration protocol with exact bodies, every 422 rule,
//! the gates, callbacks that fail in every way, offline chat through a callback tool (JSON and
//! SSE), the state database across a restart, concurrency, the Rust plugin, the Python example
//! against the binary, and the live page in headless Chromium.

#![cfg(feature = "server")]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use axum::routing::post as route_post;
use serde_json::{Value, json};
use toolwire::plugin::Plugin;
use toolwire::server::{
    RoleConfig, ServerConfig, ServerHandle, is_loopback_host, is_loopback_peer,
};
use toolwire::tools::ToolRegistry;

// ---------------------------------------------------------------------------------------------
// Helpers

fn http() -> reqwest::Client {
    crate::support::http(Duration::from_secs(60))
}

async fn start(config: ServerConfig) -> ServerHandle {
    toolwire::server::start(config.with_port(0)).await.unwrap()
}

async fn post(server: &str, path: &str, body: Value) -> (u16, Value) {
    let r = http()
        .post(format!("{server}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

async fn get(server: &str, path: &str) -> (u16, Value) {
    let r = http().get(format!("{server}{path}")).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// A directory of its own for one test.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolwire-server-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A plugin's callback server with every behaviour a test needs; it records what it receives.
struct Callbacks {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<(String, Value)>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Callbacks {
    async fn start() -> Self {
        type Log = Arc<Mutex<Vec<(String, Value)>>>;
        let received: Log = Arc::default();
        async fn record(log: &Log, path: &str, body: &[u8]) -> Value {
            let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            log.lock().unwrap().push((path.to_owned(), value.clone()));
            value
        }
        let app = Router::new()
            .route(
                "/weather",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        let call = record(&log, "/weather", &body).await;
                        let city = call["arguments"]["city"].clone();
                        Json(
                            json!({"output": {"city": city, "temp_c": 21, "marker": "cb-weather"},
                                "is_error": false}),
                        )
                    },
                ),
            )
            .route(
                "/plain",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/plain", &body).await;
                        Json(json!({"temp": 3, "note": "no envelope"}))
                    },
                ),
            )
            .route(
                "/text",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/text", &body).await;
                        "just text, not JSON"
                    },
                ),
            )
            .route(
                "/refuse",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/refuse", &body).await;
                        Json(json!({"is_error": true, "error": "no such city"}))
                    },
                ),
            )
            .route(
                "/broken",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/broken", &body).await;
                        (StatusCode::INTERNAL_SERVER_ERROR, "plugin exploded")
                    },
                ),
            )
            .route(
                "/hang",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/hang", &body).await;
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        "never"
                    },
                ),
            )
            .route(
                "/redirect",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/redirect", &body).await;
                        Redirect::temporary("/target").into_response()
                    },
                ),
            )
            .route(
                "/target",
                route_post(
                    |State(log): State<Log>, body: axum::body::Bytes| async move {
                        record(&log, "/target", &body).await;
                        Json(json!({"output": "redirect followed"}))
                    },
                ),
            )
            .with_state(Arc::clone(&received));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            received,
            _task: task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn received(&self, path: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

fn registration(name: &str, callback_url: &str) -> Value {
    json!({
        "name": name,
        "description": "Get weather for a location.",
        "parameters": weather_schema(),
        "callback_url": callback_url,
        "role": null,
        "source": "plugin:foo",
        "timeout_seconds": 30
    })
}

fn tools_of<'a>(listing: &'a Value, role: &str) -> &'a Vec<Value> {
    listing["tools_by_role"][role].as_array().unwrap()
}

fn tool<'a>(listing: &'a Value, role: &str, name: &str) -> &'a Value {
    tools_of(listing, role)
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed in {role}: {listing}"))
}

fn tool_result<'a>(messages: &'a Value, name: &str) -> &'a Value {
    messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["name"] == name)
        .unwrap_or_else(|| panic!("no result of {name} in {messages}"))
}

// ---------------------------------------------------------------------------------------------
// The registration protocol

#[tokio::test]
async fn register_list_unregister_clear_with_exact_bodies() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;

    let (status, body) = post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"ok": true, "registered": "get_weather", "affected_roles": ["default"],
               "failed_roles": []})
    );

    let (status, listing) = get(&url, "/api/tools").await;
    assert_eq!(status, 200);
    assert_eq!(listing["ok"], true);
    let t = tool(&listing, "default", "get_weather");
    for (k, v) in [
        ("name", json!("get_weather")),
        ("description", json!("Get weather for a location.")),
        ("source", json!("plugin:foo")),
        ("callback_url", json!(cb.url("/weather"))),
        ("is_remote", json!(true)),
        ("role", Value::Null),
        ("parameters", weather_schema()),
        ("timeout_seconds", json!(30.0)),
        ("calls", json!(0)),
        ("last_answered_at", Value::Null),
        ("last_error", Value::Null),
    ] {
        assert_eq!(t[k], v, "{k} in {t}");
    }
    let (_, same) = get(&url, "/api/tools?role=default").await;
    assert_eq!(same, listing);

    // Registering again replaces the tool in place (a hot update).
    let mut updated = registration("get_weather", &cb.url("/weather"));
    updated["description"] = json!("Weather, now with units.");
    let (status, _) = post(&url, "/api/tools/register", updated).await;
    assert_eq!(status, 200);
    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(tools_of(&listing, "default").len(), 1);
    assert_eq!(
        tool(&listing, "default", "get_weather")["description"],
        "Weather, now with units."
    );

    let (status, body) = post(
        &url,
        "/api/tools/unregister",
        json!({"name": "get_weather", "role": null}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"ok": true, "removed": true, "name": "get_weather",
               "affected_roles": ["default"], "failed_roles": []})
    );
    let (_, body) = post(
        &url,
        "/api/tools/unregister",
        json!({"name": "get_weather"}),
    )
    .await;
    assert_eq!(
        body,
        json!({"ok": true, "removed": false, "name": "get_weather",
               "affected_roles": [], "failed_roles": []})
    );

    for name in ["a", "b"] {
        post(
            &url,
            "/api/tools/register",
            registration(name, &cb.url("/weather")),
        )
        .await;
    }
    let mut other = registration("c", &cb.url("/weather"));
    other["source"] = json!("plugin:bar");
    post(&url, "/api/tools/register", other).await;
    let (status, body) = post(
        &url,
        "/api/tools/clear",
        json!({"source": "plugin:foo", "role": null}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"ok": true, "removed": 2, "source": "plugin:foo",
               "affected_roles": ["default"], "failed_roles": []})
    );
    let (_, listing) = get(&url, "/api/tools").await;
    let names: Vec<&Value> = tools_of(&listing, "default")
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(names, [&json!("c")]);
    server.shutdown().await;
}

#[tokio::test]
async fn roles_scope_registrations_like_neko() {
    let config = ServerConfig::new()
        .with_roles([RoleConfig::offline("Lanlan"), RoleConfig::offline("Other")]);
    let server = start(config).await;
    let url = server.url();
    let cb = Callbacks::start().await;

    let (_, body) = post(
        &url,
        "/api/tools/register",
        registration("t", &cb.url("/weather")),
    )
    .await;
    assert_eq!(body["affected_roles"], json!(["Lanlan", "Other"]));
    let mut scoped = registration("t", &cb.url("/plain"));
    scoped["role"] = json!("Lanlan");
    let (_, body) = post(&url, "/api/tools/register", scoped).await;
    assert_eq!(body["affected_roles"], json!(["Lanlan"]));

    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(
        tool(&listing, "Lanlan", "t")["callback_url"],
        cb.url("/plain")
    );
    assert_eq!(tool(&listing, "Lanlan", "t")["role"], "Lanlan");
    assert_eq!(
        tool(&listing, "Other", "t")["callback_url"],
        cb.url("/weather")
    );
    let (_, only) = get(&url, "/api/tools?role=Other").await;
    assert_eq!(
        only["tools_by_role"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["Other"]
    );

    let (_, body) = post(
        &url,
        "/api/tools/unregister",
        json!({"name": "t", "role": "Other"}),
    )
    .await;
    assert_eq!(body["affected_roles"], json!(["Other"]));
    let (_, listing) = get(&url, "/api/tools").await;
    assert!(tools_of(&listing, "Other").is_empty());
    assert_eq!(tools_of(&listing, "Lanlan").len(), 1);

    for (path, body) in [
        ("/api/tools/register", {
            let mut r = registration("t", &cb.url("/weather"));
            r["role"] = json!("Nobody");
            r
        }),
        (
            "/api/tools/unregister",
            json!({"name": "t", "role": "Nobody"}),
        ),
        ("/api/tools/clear", json!({"source": "x", "role": "Nobody"})),
        ("/api/chat", json!({"role": "Nobody", "message": "hi"})),
    ] {
        let (status, answer) = post(&url, path, body).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(answer["error"], "unknown role: Nobody", "{path}");
    }
    let (status, _) = get(&url, "/api/tools?role=Nobody").await;
    assert_eq!(status, 404);

    // Two roles: a chat must say which.
    let (status, answer) = post(&url, "/api/chat", json!({"message": "hi"})).await;
    assert_eq!(status, 422);
    assert_eq!(answer["detail"][0]["loc"], json!(["body", "role"]));
    server.shutdown().await;
}

/// One bad body, the field the 422 must name, and a word its message must contain.
fn invalid_registrations(cb: &str) -> Vec<(Value, &'static str, &'static str)> {
    let with = |field: &str, value: Value| {
        let mut r = registration("get_weather", cb);
        r[field] = value;
        r
    };
    let without = |field: &str| {
        let mut r = registration("get_weather", cb);
        r.as_object_mut().unwrap().remove(field);
        r
    };
    vec![
        (without("name"), "name", "required"),
        (with("name", json!("get weather")), "name", "does not match"),
        (with("name", json!("")), "name", "at least 1"),
        (with("name", json!("x".repeat(65))), "name", "at most 64"),
        (with("name", json!("名字")), "name", "does not match"),
        (with("name", json!(5)), "name", "string"),
        (
            with("timeout_seconds", json!(0)),
            "timeout_seconds",
            "out of range",
        ),
        (
            with("timeout_seconds", json!(-1)),
            "timeout_seconds",
            "out of range",
        ),
        (
            with("timeout_seconds", json!(300.5)),
            "timeout_seconds",
            "out of range",
        ),
        (
            with("timeout_seconds", json!(1e300)),
            "timeout_seconds",
            "out of range",
        ),
        (
            with("timeout_seconds", json!("30")),
            "timeout_seconds",
            "number",
        ),
        (
            with("timeout_seconds", json!(true)),
            "timeout_seconds",
            "number",
        ),
        (
            with("parameters", json!([])),
            "parameters",
            "JSON Schema object",
        ),
        (
            with("parameters", json!("object")),
            "parameters",
            "JSON Schema object",
        ),
        (
            with("parameters", json!({"type": "string"})),
            "parameters",
            "must be \"object\"",
        ),
        (
            with(
                "parameters",
                json!({"type": "object", "properties": {"a": {"type": "nope"}}}),
            ),
            "parameters",
            "not a valid JSON Schema",
        ),
        (without("callback_url"), "callback_url", "required"),
        (
            with("callback_url", json!("http://8.8.8.8/cb")),
            "callback_url",
            "loopback",
        ),
        (with("callback_url", json!(7)), "callback_url", "string"),
        (with("description", json!(1)), "description", "string"),
        (with("role", json!(["a"])), "role", "string"),
        (with("source", json!("")), "source", "at least 1"),
        (with("source", json!({})), "source", "string"),
        (with("colour", json!("red")), "colour", "unknown field"),
    ]
}

#[tokio::test]
async fn every_validation_rule_answers_422_naming_the_field() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    for (body, field, word) in invalid_registrations("http://127.0.0.1:9/cb") {
        let (status, answer) = post(&url, "/api/tools/register", body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["ok"], false);
        let detail = answer["detail"].as_array().unwrap();
        assert!(
            detail
                .iter()
                .any(|d| d["loc"] == json!(["body", field])
                    && d["msg"].as_str().unwrap().contains(word)),
            "{body}: expected {field} / {word:?} in {answer}"
        );
        assert!(
            answer["error"].as_str().unwrap().contains(field),
            "{answer}"
        );
    }
    // The edges that pass.
    for timeout in [json!(300), json!(0.001), Value::Null] {
        let mut r = registration("edge", "http://127.0.0.1:9/cb");
        r["timeout_seconds"] = timeout.clone();
        let (status, answer) = post(&url, "/api/tools/register", r).await;
        assert_eq!(status, 200, "{timeout}: {answer}");
    }
    let minimal = json!({"name": "m.in-1_x", "callback_url": "http://localhost:9/cb"});
    let (status, _) = post(&url, "/api/tools/register", minimal).await;
    assert_eq!(status, 200);
    let (_, listing) = get(&url, "/api/tools").await;
    let m = tool(&listing, "default", "m.in-1_x");
    assert_eq!(m["source"], "external");
    assert_eq!(m["timeout_seconds"], 30.0);
    assert_eq!(m["parameters"], json!({"type": "object", "properties": {}}));
    let name64 = "x".repeat(64);
    let (status, _) = post(
        &url,
        "/api/tools/register",
        registration(&name64, "http://127.0.0.1:9/cb"),
    )
    .await;
    assert_eq!(status, 200);

    // Every problem of one body is listed.
    let (status, answer) = post(
        &url,
        "/api/tools/register",
        json!({"name": "a b", "timeout_seconds": 0, "callback_url": "http://example.com/"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(answer["detail"].as_array().unwrap().len(), 3, "{answer}");

    for (path, body, field) in [
        ("/api/tools/unregister", json!({}), "name"),
        ("/api/tools/unregister", json!({"name": "a b"}), "name"),
        ("/api/tools/unregister", json!({"name": "a", "x": 1}), "x"),
        ("/api/tools/clear", json!({}), "source"),
        ("/api/tools/clear", json!({"source": ""}), "source"),
        ("/api/tools/clear", json!({"source": null}), "source"),
        ("/api/tools/clear", json!({"source": 3}), "source"),
        (
            "/api/chat",
            json!({"message": "a", "messages": []}),
            "messages",
        ),
        ("/api/chat", json!({}), "message"),
        ("/api/chat", json!({"message": ""}), "message"),
        ("/api/chat", json!({"messages": []}), "messages"),
        (
            "/api/chat",
            json!({"messages": {"role": "user"}}),
            "messages",
        ),
        (
            "/api/chat",
            json!({"message": "hi", "stream": "yes"}),
            "stream",
        ),
        (
            "/api/chat",
            json!({"message": "hi", "temperature": 1}),
            "temperature",
        ),
    ] {
        let (status, answer) = post(&url, path, body.clone()).await;
        assert_eq!(status, 422, "{path} {body}: {answer}");
        assert!(
            answer["detail"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["loc"] == json!(["body", field])),
            "{path} {body}: {answer}"
        );
    }
    let (status, answer) = post(
        &url,
        "/api/chat",
        json!({"messages": [{"role": "user", "content": "hi"}, {"role": "wizard"}]}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(answer["detail"][0]["loc"], json!(["body", "messages", "1"]));
    server.shutdown().await;
}

#[tokio::test]
async fn non_loopback_callbacks_are_refused() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    for cb in [
        "http://8.8.8.8/cb",
        "http://192.168.1.5/cb",
        "http://10.0.0.1/cb",
        "http://example.com/cb",
        "http://localhost.example.com/cb",
        "http://127.0.0.1.nip.io/cb",
        "http://0x08080808/cb",
        "http://134744072/cb",
        "http://[::ffff:8.8.8.8]/cb",
        "http://[2001:db8::1]/cb",
        "http://127.0.0.1@evil.com/cb",
        "http://evil.com#@127.0.0.1/cb",
        "ftp://127.0.0.1/cb",
        "file:///etc/passwd",
        "http:///cb",
        "http://127.0.0.1:0/cb",
        "http://127.0.0.1:abc/cb",
    ] {
        let (status, answer) = post(&url, "/api/tools/register", registration("t", cb)).await;
        assert_eq!(status, 422, "{cb}: {answer}");
        assert_eq!(
            answer["detail"][0]["loc"],
            json!(["body", "callback_url"]),
            "{cb}"
        );
    }
    for cb in [
        "http://127.0.0.1:9000/cb",
        "http://localhost:9000/cb",
        "http://[::1]:9000/cb",
        "http://127.0.0.5/cb",
        "https://localhost/cb",
        "http://2130706433/cb",
        "http://[::ffff:127.0.0.1]/cb",
    ] {
        let (status, answer) = post(&url, "/api/tools/register", registration("t", cb)).await;
        assert_eq!(status, 200, "{cb}: {answer}");
    }
    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(tools_of(&listing, "default").len(), 1);
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The gates and bad requests

#[test]
fn the_peer_gate_admits_loopback_only() {
    for ip in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
        assert!(is_loopback_peer(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "192.168.1.5",
        "10.1.2.3",
        "172.16.0.1",
        "8.8.8.8",
        "0.0.0.0",
        "::",
        "::ffff:192.168.1.5",
        "fe80::1",
        "2001:db8::1",
    ] {
        assert!(!is_loopback_peer(ip.parse().unwrap()), "{ip}");
    }
    assert!(is_loopback_host(Some("127.0.0.1:48911")));
    assert!(!is_loopback_host(Some("rebind.example:48911")));
}

/// Connects to `addr` from `from` (any loopback address: 127.0.0.0/8 is this machine).
async fn connect_from(from: &str, addr: SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Sends `GET /api/tools` (the connection closes after the answer) and reads until the server
/// closes: the status, or `None` when it closed without answering.
async fn status_over(mut stream: tokio::net::TcpStream) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = "GET /api/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    // A write can fail when the server has closed already: that is no answer too.
    let _ = stream.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(_) => {}
        Err(_) => panic!("the connection was neither answered nor closed within 10 s"),
    }
    let text = String::from_utf8_lossy(&answer);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
}

#[tokio::test]
async fn one_peer_gets_at_most_its_share_of_connections() {
    let server = start(
        ServerConfig::new()
            .with_max_connections_per_peer(3)
            .with_cap_loopback_peers(true),
    )
    .await;
    let addr = server.addr();
    // Three open connections from 127.0.0.1 that have sent nothing yet.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from("127.0.0.1", addr).await);
    }
    // The fourth from that address is closed unanswered.
    let fourth = connect_from("127.0.0.1", addr).await;
    assert_eq!(status_over(fourth).await, None);
    // Another address has places of its own.
    let other = connect_from("127.0.0.2", addr).await;
    assert_eq!(status_over(other).await, Some(200));
    // The three held connections are served.
    assert_eq!(status_over(held.pop().unwrap()).await, Some(200));
    // A connection that ended gives its place back (once the server has seen it end).
    let mut served = None;
    for _ in 0..50 {
        served = status_over(connect_from("127.0.0.1", addr).await).await;
        if served.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(served, Some(200));
    for stream in held {
        assert_eq!(status_over(stream).await, Some(200));
    }
    server.shutdown().await;

    // By default loopback peers share only the global cap: every local client is 127.0.0.1.
    let server = start(ServerConfig::new().with_max_connections_per_peer(2)).await;
    let addr = server.addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from("127.0.0.1", addr).await);
    }
    assert_eq!(
        status_over(connect_from("127.0.0.1", addr).await).await,
        Some(200)
    );
    for stream in held {
        assert_eq!(status_over(stream).await, Some(200));
    }
    server.shutdown().await;
    let zero = toolwire::server::start(ServerConfig::new().with_max_connections_per_peer(0)).await;
    assert!(
        zero.unwrap_err()
            .to_string()
            .contains("max_connections_per_peer"),
        "a cap of zero is refused"
    );
}

#[tokio::test]
async fn the_server_binds_loopback_and_refuses_foreign_hosts_and_bad_requests() {
    let server = start(ServerConfig::new()).await;
    assert!(server.addr().ip().is_loopback());
    let url = server.url();
    let client = http();

    // DNS rebinding: a loopback peer asking for another host name.
    for path in ["/", "/api/tools"] {
        let r = client
            .get(format!("{url}{path}"))
            .header("host", "rebind.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403);
        let body: Value = r.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains("rebind.example"));
    }
    let r = client
        .get(format!("{url}/api/tools"))
        .header("host", format!("localhost:{}", server.addr().port()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);

    // Not JSON: 415, so a web page's form cannot post here.
    let r = client
        .post(format!("{url}/api/tools/register"))
        .header("content-type", "text/plain")
        .body(registration("t", "http://127.0.0.1:9/cb").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);

    // Malformed JSON, a body that is not an object, an empty body.
    for (body, word) in [
        ("{\"name\": ", "malformed JSON at line 1"),
        ("[1, 2]", "got an array"),
        ("", "empty"),
        ("\u{feff}{}", "malformed"),
    ] {
        let r = client
            .post(format!("{url}/api/tools/register"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 422, "{body:?}");
        let answer: Value = r.json().await.unwrap();
        assert!(answer["error"].as_str().unwrap().contains(word), "{answer}");
    }

    // Over the size limit, declared or streamed.
    let huge = format!(
        r#"{{"name": "t", "description": "{}"}}"#,
        "x".repeat(2 << 20)
    );
    let r = client
        .post(format!("{url}/api/tools/register"))
        .header("content-type", "application/json")
        .body(huge.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = huge
        .into_bytes()
        .chunks(64 << 10)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let r = client
        .post(format!("{url}/api/tools/register"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);

    let r = client.get(format!("{url}/nope")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = client
        .get(format!("{url}/api/tools/register"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let (status, answer) = get(&url, "/api/tools?colour=red").await;
    assert_eq!(status, 422, "{answer}");
    server.shutdown().await;
}

/// The raw body of `GET path`, checked to be the compact JSON serde writes for its own value.
async fn listing_bytes(server: &str, path: &str) -> Value {
    let r = http().get(format!("{server}{path}")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let bytes = r.bytes().await.unwrap();
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        serde_json::to_vec(&value).unwrap(),
        bytes,
        "the listing is not compact serde JSON"
    );
    value
}

#[tokio::test]
async fn the_listing_follows_every_change() {
    // The listing is assembled from entries written once at registration: a hot update, a
    // call, an unregistration and a clear must each show at once (nothing cached goes stale).
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    let listed = |listing: &Value| -> Vec<String> {
        tools_of(listing, "default")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    let listing = listing_bytes(&url, "/api/tools").await;
    let t = tool(&listing, "default", "get_weather");
    assert_eq!(t["description"], "Get weather for a location.");
    assert_eq!(
        (t["calls"].clone(), t["timeout_seconds"].clone()),
        (json!(0), json!(30.0))
    );

    let mut updated = registration("get_weather", &cb.url("/weather"));
    updated["description"] = json!("Now in Kelvin.");
    updated["timeout_seconds"] = json!(5);
    post(&url, "/api/tools/register", updated).await;
    let listing = listing_bytes(&url, "/api/tools?role=default").await;
    let t = tool(&listing, "default", "get_weather");
    assert_eq!(t["description"], "Now in Kelvin.");
    assert_eq!(t["timeout_seconds"], 5.0);

    let (status, _) = post(&url, "/api/chat", json!({"message": "Use get_weather."})).await;
    assert_eq!(status, 200);
    let listing = listing_bytes(&url, "/api/tools").await;
    let t = tool(&listing, "default", "get_weather");
    assert_eq!(t["calls"], 1, "{t}");
    assert!(t["last_called_at"].is_string(), "{t}");

    post(
        &url,
        "/api/tools/register",
        registration("other", &cb.url("/plain")),
    )
    .await;
    let listing = listing_bytes(&url, "/api/tools").await;
    assert_eq!(listed(&listing), ["get_weather", "other"]);
    assert_eq!(tool(&listing, "default", "get_weather")["calls"], 1);

    post(
        &url,
        "/api/tools/unregister",
        json!({"name": "get_weather"}),
    )
    .await;
    let listing = listing_bytes(&url, "/api/tools").await;
    assert_eq!(listed(&listing), ["other"]);

    // Registered again: a new entry, with no statistics of the one that went.
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    let listing = listing_bytes(&url, "/api/tools").await;
    assert_eq!(listed(&listing), ["other", "get_weather"]);
    let t = tool(&listing, "default", "get_weather");
    assert_eq!(
        (t["calls"].clone(), t["description"].clone()),
        (json!(0), json!("Get weather for a location."))
    );

    post(&url, "/api/tools/clear", json!({"source": "plugin:foo"})).await;
    let listing = listing_bytes(&url, "/api/tools").await;
    assert!(listed(&listing).is_empty(), "{listing}");
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Chat and callbacks

#[tokio::test]
async fn offline_chat_calls_a_registered_callback_tool() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;

    let (status, answer) = post(
        &url,
        "/api/chat",
        json!({"role": "default", "message": "What is the weather? Use get_weather."}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let text = answer["response"]["text"].as_str().unwrap();
    assert!(
        text.contains(
            r#"get_weather returned {"city":"example","marker":"cb-weather","temp_c":21}"#
        ) || text.contains("cb-weather"),
        "{text}"
    );
    assert!(text.contains("cb-weather"), "{text}");
    assert_eq!(answer["response"]["finish_reason"], "stop");
    let messages = &answer["messages"];
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": "What is the weather? Use get_weather."})
    );
    let result = tool_result(messages, "get_weather");
    assert_eq!(result["output"]["marker"], "cb-weather");
    assert_eq!(result["is_error"], false);

    // The callback got exactly the protocol's four fields.
    let received = cb.received("/weather");
    assert_eq!(received.len(), 1);
    let call_id = result["call_id"].as_str().unwrap();
    assert_eq!(
        received[0],
        json!({"name": "get_weather", "arguments": {"city": "example"}, "call_id": call_id,
               "raw_arguments": "{\"city\":\"example\"}"})
    );

    // Statistics and the call log.
    let (_, listing) = get(&url, "/api/tools").await;
    let t = tool(&listing, "default", "get_weather");
    assert_eq!(t["calls"], 1);
    assert_eq!(t["errors"], 0);
    assert!(t["last_answered_at"].is_string(), "{t}");
    assert!(t["last_latency_ms"].is_u64(), "{t}");
    let (_, calls) = get(&url, "/api/calls").await;
    assert_eq!(calls["calls"][0]["name"], "get_weather");
    assert_eq!(calls["calls"][0]["status"], "ok");
    assert_eq!(calls["calls"][0]["source"], "plugin:foo");

    // A conversation can go on from the messages answered.
    let mut history = messages.as_array().unwrap().clone();
    history.push(json!({"role": "user", "content": "Thanks!"}));
    let (status, answer) = post(&url, "/api/chat", json!({"messages": history})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["messages"].as_array().unwrap().len(),
        history.len() + 3
    );
    server.shutdown().await;
}

#[tokio::test]
async fn failing_callbacks_become_error_results_never_crashes() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cases = [
        ("hang_tool", cb.url("/hang"), 0.5),
        ("redirect_tool", cb.url("/redirect"), 5.0),
        ("broken_tool", cb.url("/broken"), 5.0),
        ("refuse_tool", cb.url("/refuse"), 5.0),
        ("text_tool", cb.url("/text"), 5.0),
        ("plain_tool", cb.url("/plain"), 5.0),
        ("closed_tool", format!("http://127.0.0.1:{closed}/cb"), 5.0),
    ];
    for (name, cb_url, timeout) in &cases {
        let mut r = registration(name, cb_url);
        r["timeout_seconds"] = json!(timeout);
        let (status, _) = post(&url, "/api/tools/register", r).await;
        assert_eq!(status, 200);
    }
    let (status, answer) = post(&url, "/api/chat", json!({"message": "call everything"})).await;
    assert_eq!(status, 200, "{answer}");
    let messages = &answer["messages"];
    let error_of = |name: &str| {
        let r = tool_result(messages, name);
        assert_eq!(r["is_error"], true, "{r}");
        r["error"].as_str().unwrap().to_owned()
    };
    assert!(error_of("hang_tool").contains("timed out"));
    assert!(error_of("redirect_tool").contains("redirect, which is not followed"));
    assert!(
        cb.received("/target").is_empty(),
        "the redirect was followed"
    );
    assert!(error_of("broken_tool").contains("HTTP 500: plugin exploded"));
    assert_eq!(error_of("refuse_tool"), "no such city");
    assert!(error_of("closed_tool").contains("callback request failed"));
    assert_eq!(
        tool_result(messages, "text_tool")["output"],
        "just text, not JSON"
    );
    assert_eq!(
        tool_result(messages, "plain_tool")["output"],
        json!({"temp": 3, "note": "no envelope"})
    );
    let text = answer["response"]["text"].as_str().unwrap();
    assert!(text.contains("no such city"), "{text}");

    let (_, listing) = get(&url, "/api/tools").await;
    let hang = tool(&listing, "default", "hang_tool");
    assert_eq!(hang["errors"], 1);
    assert!(
        hang["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{hang}"
    );
    assert!(hang["last_answered_at"].is_null());
    let plain = tool(&listing, "default", "plain_tool");
    assert!(plain["last_error"].is_null() && plain["last_answered_at"].is_string());
    server.shutdown().await;
}

#[tokio::test]
async fn chat_streams_agent_events_as_sse() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    let r = http()
        .post(format!("{url}/api/chat"))
        .json(&json!({"message": "get_weather please", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = r.text().await.unwrap();
    let mut events: Vec<(String, Value)> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !name.is_empty() {
            let value: Value = serde_json::from_str(&data).unwrap();
            assert_eq!(value["type"], name.as_str());
            events.push((name, value));
        }
    }
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} in {kinds:?}"))
    };
    assert!(pos("model") < pos("tool_started"));
    assert!(pos("tool_started") < pos("tool_finished"));
    assert!(pos("tool_finished") < pos("turn_done"));
    assert_eq!(kinds.last(), Some(&"done"));
    let (_, started) = &events[pos("tool_started")];
    assert_eq!(started["call"]["name"], "get_weather");
    let (_, finished) = &events[pos("tool_finished")];
    assert_eq!(finished["result"]["output"]["marker"], "cb-weather");
    let (_, done) = events.last().unwrap();
    assert!(
        done["response"]["text"]
            .as_str()
            .unwrap()
            .contains("cb-weather")
    );
    assert_eq!(done["messages"].as_array().unwrap().len(), 4);
    server.shutdown().await;
}

#[tokio::test]
async fn chat_without_tools_and_with_a_system_prompt() {
    let config =
        ServerConfig::new().with_roles([RoleConfig::offline("solo").with_system("You are terse.")]);
    let server = start(config).await;
    let (status, answer) = post(
        &server.url(),
        "/api/chat",
        json!({"role": null, "message": "hello"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("no tools are registered for this role. You said: hello")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_live_role_whose_provider_fails_answers_502_with_the_conversation() {
    // A role pointed at a port where nothing answers: the provider call fails.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let role = RoleConfig::live("live", toolwire::ProviderKind::OpenAi, "m")
        .with_base_url(format!("http://127.0.0.1:{closed}/v1"));
    let server = start(ServerConfig::new().with_roles([role])).await;
    assert_eq!(server.roles(), [("live".to_owned(), false)]);
    let (status, answer) = post(&server.url(), "/api/chat", json!({"message": "hi"})).await;
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["messages"][0]["content"], "hi");
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// State, concurrency

#[tokio::test]
async fn registrations_survive_a_restart_with_a_state_file() {
    let dir = scratch("state");
    let state = dir.join("state.json");
    let cb = Callbacks::start().await;
    let server = start(ServerConfig::new().with_state_file(&state)).await;
    post(
        &server.url(),
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    post(
        &server.url(),
        "/api/tools/register",
        registration("gone", &cb.url("/weather")),
    )
    .await;
    post(
        &server.url(),
        "/api/tools/unregister",
        json!({"name": "gone"}),
    )
    .await;
    server.shutdown().await;
    assert_eq!(
        stored(&state),
        [("default".to_owned(), "get_weather".to_owned())]
    );
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.contains(".tmp") || f.contains(".importing"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );

    // Restarted: the tool is there at once and callable, without the plugin registering again.
    let server = start(ServerConfig::new().with_state_file(&state)).await;
    let (_, listing) = get(&server.url(), "/api/tools").await;
    assert_eq!(
        tool(&listing, "default", "get_weather")["callback_url"],
        cb.url("/weather")
    );
    assert_eq!(tools_of(&listing, "default").len(), 1);
    let (status, answer) = post(
        &server.url(),
        "/api/chat",
        json!({"message": "get_weather"}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("cb-weather")
    );
    server.shutdown().await;

    // A role missing from a later config keeps its entries in the file.
    let other = ServerConfig::new()
        .with_roles([RoleConfig::offline("other")])
        .with_state_file(&state);
    let server = start(other).await;
    post(
        &server.url(),
        "/api/tools/register",
        registration("x", &cb.url("/weather")),
    )
    .await;
    server.shutdown().await;
    assert_eq!(
        stored(&state),
        [
            ("default".to_owned(), "get_weather".to_owned()),
            ("other".to_owned(), "x".to_owned())
        ]
    );

    // A damaged state file stops the start with a message naming it.
    std::fs::write(&state, "{\"format\": \"toolwire-serve-state\", ").unwrap();
    let err = toolwire::server::start(ServerConfig::new().with_port(0).with_state_file(&state))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("state.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_unwritable_state_changes_nothing() {
    let dir = scratch("unwritable");
    // A state path that cannot be opened stops the start, naming it.
    let missing = dir.join("missing-dir").join("state.db");
    let err = toolwire::server::start(ServerConfig::new().with_port(0).with_state_file(&missing))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing-dir"), "{err}");

    // A store that cannot take a write (another process holds its write lock) answers 500 and
    // changes nothing, in memory or on disk.
    let state = dir.join("state.db");
    let server = start(ServerConfig::new().with_state_file(&state)).await;
    let lock = rusqlite::Connection::open(&state).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (status, answer) = post(
        &server.url(),
        "/api/tools/register",
        registration("t", "http://127.0.0.1:9/cb"),
    )
    .await;
    assert_eq!(status, 500, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("nothing was changed")
    );
    let (_, listing) = get(&server.url(), "/api/tools").await;
    assert!(tools_of(&listing, "default").is_empty());
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    assert!(stored(&state).is_empty());
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `(role, name)` rows of a state database, in registration order.
fn stored(path: &std::path::Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut select = conn
        .prepare("SELECT role, name FROM registration ORDER BY seq, role")
        .unwrap();
    select
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn concurrent_changes_during_calls_lose_nothing() {
    let dir = scratch("concurrent");
    let state = dir.join("state.json");
    let server = start(ServerConfig::new().with_state_file(&state)).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;

    let mut tasks = Vec::new();
    for i in 0..10 {
        let url = url.clone();
        let cb_url = cb.url("/weather");
        tasks.push(tokio::spawn(async move {
            let name = format!("tool_{i}");
            let (s1, _) = post(&url, "/api/tools/register", registration(&name, &cb_url)).await;
            let (s2, _) = post(&url, "/api/chat", json!({"message": "get_weather"})).await;
            let (s3, _) = if i % 2 == 0 {
                post(&url, "/api/tools/unregister", json!({"name": name})).await
            } else {
                (200, Value::Null)
            };
            let mut clear = registration(&format!("temp_{i}"), &cb_url);
            clear["source"] = json!(format!("plugin:temp{i}"));
            let (s4, _) = post(&url, "/api/tools/register", clear).await;
            let (s5, _) = post(
                &url,
                "/api/tools/clear",
                json!({"source": format!("plugin:temp{i}")}),
            )
            .await;
            [s1, s2, s3, s4, s5]
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), [200; 5]);
    }
    let (_, listing) = get(&url, "/api/tools").await;
    let mut names: Vec<String> = tools_of(&listing, "default")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = (0..10)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("tool_{i}"))
        .chain(["get_weather".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    let mut saved: Vec<String> = stored(&state).into_iter().map(|(_, name)| name).collect();
    saved.sort();
    assert_eq!(saved, expected);
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The plugin side

#[tokio::test]
async fn the_rust_plugin_registers_when_the_server_comes_up_and_after_a_restart() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tools = ToolRegistry::new();
    tools
        .register_fn(
            "shout",
            "Upper-cases text",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            |args| async move {
                Ok(json!(format!("{}!", args["text"].as_str().unwrap_or_default().to_uppercase())))
            },
        )
        .unwrap();
    // The plugin starts first; the server is not up yet.
    let plugin = Plugin::new(format!("http://127.0.0.1:{port}"), tools.clone())
        .with_source("plugin:shout")
        .with_retry_interval(Duration::from_millis(50))
        .with_check_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(plugin.publications(), 0);
    assert!(plugin.last_error().is_some());

    let server = toolwire::server::start(ServerConfig::new().with_port(port))
        .await
        .unwrap();
    let url = server.url();
    plugin.registered().await;
    let (_, listing) = get(&url, "/api/tools").await;
    let t = tool(&listing, "default", "shout");
    assert_eq!(t["callback_url"], plugin.callback_url("shout"));
    assert_eq!(t["source"], "plugin:shout");
    assert_eq!(t["timeout_seconds"], 32.0);
    let (_, answer) = post(&url, "/api/chat", json!({"message": "shout it"})).await;
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("shout returned EXAMPLE!"),
        "{answer}"
    );

    // The server restarts without a state file: the plugin notices and registers again.
    let before = plugin.publications();
    server.shutdown().await;
    let server = toolwire::server::start(ServerConfig::new().with_port(port))
        .await
        .unwrap();
    plugin.published_after(before).await;
    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(tool(&listing, "default", "shout")["source"], "plugin:shout");

    // A tool added to the registry is published; a removed one is unregistered.
    tools
        .register_fn(
            "whisper",
            "Lower-cases text",
            json!({"type": "object"}),
            |_| async { Ok(json!("...")) },
        )
        .unwrap();
    let n = plugin.publications();
    plugin.published_after(n).await;
    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(tools_of(&listing, "default").len(), 2);
    tools.unregister("whisper");
    let n = plugin.publications();
    plugin.published_after(n).await;
    let (_, listing) = get(&url, "/api/tools").await;
    assert_eq!(tools_of(&listing, "default").len(), 1);

    // The plugin's callback answers the protocol directly too, and checks arguments.
    let (status, body) = post(
        &format!("http://{}", plugin.addr()),
        "/tools/shout",
        json!({"name": "shout", "arguments": {"text": 5}, "call_id": "c1", "raw_arguments": "{\"text\":5}"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["is_error"], true);
    assert!(body["error"].as_str().unwrap().contains("text"), "{body}");

    plugin.shutdown().await.unwrap();
    let (_, listing) = get(&url, "/api/tools").await;
    assert!(tools_of(&listing, "default").is_empty());
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The binary, the Python example, the page

/// A child process killed when the test ends, also when it fails.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `toolwire serve --port 0 ARGS`, and its URL read from its first line.
fn serve_binary(args: &[&str]) -> (Proc, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .strip_prefix("toolwire serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), url)
}

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([format!("-{sig}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for a child with a deadline, killing it past the deadline.
fn wait_for(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_binary_refuses_a_bad_config_with_exit_2() {
    let dir = scratch("config");
    let config = dir.join("roles.toml");
    std::fs::write(&config, "[[role]]\nname = \"a\"\ncolour = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args(["serve", "--port", "0", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("roles.toml:3") && stderr.contains("colour"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_python_example_plugin_serves_a_tool_the_model_uses() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 is not installed; skipping the Python plugin example");
        return;
    }
    let (mut server, url) = serve_binary(&[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plugin.py");
    let mut plugin = Proc(
        Command::new("python3")
            .arg(script)
            .args(["--server", &url, "--check-every", "0.2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(plugin.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("registered get_weather at http://127.0.0.1:"),
        "{first}"
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (status, answer) = post(
            &url,
            "/api/chat",
            json!({"message": "What is the weather? Use get_weather."}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        let text = answer["response"]["text"].as_str().unwrap();
        assert!(
            text.contains(r#""reported_by":"plugin.py""#) && text.contains(r#""temperature":20"#),
            "the answer did not use the tool's output: {text}"
        );
        let (_, listing) = get(&url, "/api/tools").await;
        assert_eq!(
            tool(&listing, "default", "get_weather")["source"],
            "plugin:python-weather"
        );
        // The plugin told the people waiting what it was doing; the model never saw it.
        let (_, calls) = get(&url, "/api/calls").await;
        assert_eq!(
            calls["calls"][0]["summary"], "Looking up the weather in example…",
            "{calls}"
        );
        assert!(!answer.to_string().contains("Looking up"), "{answer}");
    });

    signal(&plugin.0, "TERM");
    assert!(wait_for(&mut plugin.0, Duration::from_secs(20)).success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter()
            .any(|l| l == "unregistered get_weather (removed: True)"),
        "{rest:?}"
    );
    runtime.block_on(async {
        let (_, listing) = get(&url, "/api/tools").await;
        assert!(tools_of(&listing, "default").is_empty(), "{listing}");
    });
    signal(&server.0, "TERM");
    assert!(wait_for(&mut server.0, Duration::from_secs(20)).success());
}

#[tokio::test]
async fn the_event_feed_reports_registrations_and_calls_as_they_happen() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    let mut feed = http()
        .get(format!("{url}/api/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status().as_u16(), 200);
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    post(&url, "/api/chat", json!({"message": "get_weather"})).await;
    let mut text = String::new();
    // A bound so a broken feed fails the test instead of hanging it.
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(chunk) = feed.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("\"status\":\"ok\"") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no finished call in the feed: {text}");
    let tools = text.find("event: tools").expect("a tools event");
    let running = text.find("\"status\":\"running\"").expect("a running call");
    let ok = text.find("\"status\":\"ok\"").unwrap();
    assert!(tools < running && running < ok, "{text}");
    assert!(text.contains("event: call\ndata: {"), "{text}");
    server.shutdown().await;
}

/// Waits for the plugin to receive a call at `path`; its call id.
async fn call_received(cb: &Callbacks, path: &str) -> String {
    let started = std::time::Instant::now();
    loop {
        let found = cb
            .received
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, body)| body["call_id"].as_str().unwrap_or_default().to_owned());
        if let Some(id) = found {
            return id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no call at {path}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `POST /api/tools/progress`: a plugin reports how far a running call of its tool is; the
/// chat streams it, the call log keeps the latest, and a call no longer running refuses it.
#[tokio::test]
async fn a_plugin_reports_progress_of_its_running_call() {
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/hang")),
    )
    .await;
    for (body, status, field) in [
        (json!({}), 422, "call_id"),
        (json!({"call_id": "c"}), 422, "progress"),
        (json!({"call_id": "c", "progress": -1}), 422, "progress"),
        (json!({"call_id": "c", "total": 3}), 422, "progress"),
        (
            json!({"call_id": "c", "progress": 1, "colour": "red"}),
            422,
            "colour",
        ),
        (
            json!({"call_id": "c", "progress": 1}),
            404,
            "of a callback tool is running",
        ),
    ] {
        let (got, answer) = post(&url, "/api/tools/progress", body.clone()).await;
        assert_eq!(got, status, "{body} -> {answer}");
        assert!(answer.to_string().contains(field), "{body} -> {answer}");
    }

    let mut stream = http()
        .post(format!("{url}/api/chat"))
        .json(&json!({"message": "get_weather", "stream": true}))
        .send()
        .await
        .unwrap();
    let call_id = call_received(&cb, "/hang").await;
    let report = json!({"call_id": call_id, "name": "get_weather",
                        "summary": "Looking at the sky over Paris…",
                        "progress": 2, "total": 3, "message": "2 of 3 stations"});
    let (status, answer) = post(&url, "/api/tools/progress", report.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let mut text = String::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("event: tool_progress") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no progress in the stream: {text}");
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let summary = data.iter().find(|d| d["type"] == "tool_summary").unwrap();
    assert_eq!(summary["summary"], "Looking at the sky over Paris…");
    assert_eq!(summary["call_id"], call_id.as_str());
    let progress = data.iter().find(|d| d["type"] == "tool_progress").unwrap();
    assert_eq!(
        (
            &progress["progress"],
            &progress["total"],
            &progress["message"]
        ),
        (&json!(2.0), &json!(3.0), &json!("2 of 3 stations"))
    );
    let (_, calls) = get(&url, "/api/calls").await;
    let running = &calls["calls"][0];
    assert_eq!(running["status"], "running", "{calls}");
    assert_eq!(running["summary"], "Looking at the sky over Paris…");
    assert_eq!(running["progress"]["message"], "2 of 3 stations");

    // The client leaves: the run and its call end, and the call takes no more reports.
    drop(stream);
    let started = std::time::Instant::now();
    loop {
        let (status, _) = post(&url, "/api/tools/progress", report.clone()).await;
        if status == 404 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.shutdown().await;
}

/// A Rust plugin's handler reports through its `ToolInput::progress`; the plugin forwards each
/// report to the server, and the chat streams it before the result.
#[tokio::test]
async fn a_rust_plugins_progress_reaches_the_chat() {
    use toolwire::tools::{Progress, Tool};
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let tools = ToolRegistry::new();
    let def = toolwire::ToolDefinition::new("survey", "Asks the weather stations").unwrap();
    tools
        .register(Tool::from_input_fn(def, |input| async move {
            input.progress.summary("Asking 3 weather stations…");
            for station in 1..=3 {
                tokio::time::sleep(Duration::from_millis(150)).await;
                input.progress.report(
                    Progress::new(f64::from(station))
                        .with_total(3.0)
                        .with_message(format!("station {station} answered")),
                );
            }
            Ok(json!({"stations": 3}))
        }))
        .unwrap();
    let plugin = Plugin::new(url.clone(), tools)
        .with_source("plugin:survey")
        .start()
        .await
        .unwrap();
    plugin.registered().await;
    let text = http()
        .post(format!("{url}/api/chat"))
        .json(&json!({"message": "please run survey", "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let kinds: Vec<&str> = data
        .iter()
        .filter_map(|d| d["type"].as_str())
        .filter(|t| t.starts_with("tool_"))
        .collect();
    let summary = kinds.iter().position(|k| *k == "tool_summary");
    let finished = kinds.iter().position(|k| *k == "tool_finished");
    assert!(summary.is_some() && summary < finished, "{kinds:?}");
    let messages: Vec<&str> = data
        .iter()
        .filter(|d| d["type"] == "tool_progress")
        .filter_map(|d| d["message"].as_str())
        .collect();
    // Reports are 150 ms apart, longer than the coalescing interval, so each normally arrives;
    // on a loaded machine two may merge (the latest wins): in order, ending with the last.
    let expected = [
        "station 1 answered",
        "station 2 answered",
        "station 3 answered",
    ];
    let mut rest = expected.iter();
    assert!(messages.iter().all(|m| rest.any(|e| e == m)), "{text}");
    assert_eq!(messages.last(), expected.last(), "{text}");
    let done = data.iter().find(|d| d["type"] == "done").unwrap();
    assert!(!done.to_string().contains("weather stations…"), "{done}");
    plugin.shutdown().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn the_page_shows_a_call_made_through_chat_in_headless_chromium() {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(chromium) = chromium else {
        // CI installs Chromium (.ci/run); there its absence is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed, and CI is set: the page test must run in CI"
        );
        eprintln!("chromium is not installed; skipping the page test (CI installs it)");
        return;
    };
    let server = start(ServerConfig::new()).await;
    let url = server.url();
    let cb = Callbacks::start().await;
    post(
        &url,
        "/api/tools/register",
        registration("get_weather", &cb.url("/weather")),
    )
    .await;
    let (status, _) = post(
        &url,
        "/api/chat",
        json!({"message": "get_weather in Paris"}),
    )
    .await;
    assert_eq!(status, 200);
    // A call still running, whose plugin has reported a summary and progress.
    post(
        &url,
        "/api/tools/register",
        registration("slow_weather", &cb.url("/hang")),
    )
    .await;
    let chatting = {
        let url = url.clone();
        tokio::spawn(
            async move { post(&url, "/api/chat", json!({"message": "slow_weather"})).await },
        )
    };
    let call_id = call_received(&cb, "/hang").await;
    let report = json!({"call_id": call_id, "summary": "Looking at the sky over Paris…",
                        "progress": 2, "total": 3, "message": "2 of 3 stations"});
    let (status, answer) = post(&url, "/api/tools/progress", report).await;
    assert_eq!(status, 200, "{answer}");

    let profile = scratch("chromium");
    let page = format!("{url}/");
    let dom = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--dump-dom", &page])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
            out
        });
        wait_for(&mut child, Duration::from_secs(120));
        let out = reader.join().unwrap();
        let _ = std::fs::remove_dir_all(&profile);
        out
    })
    .await
    .unwrap();
    assert!(dom.contains("<h1>toolwire serve</h1>"), "{dom}");
    // The call row the page's script rendered (the state also rides in the page as JSON, so
    // only the rendered table counts).
    let start = dom.find(r#"<table id="calls">"#).expect("the calls table");
    let end = start + dom[start..].find("</table>").unwrap();
    let calls = &dom[start..end];
    assert!(
        calls.contains(r#"<tr class="call ok""#),
        "no call row in the page:\n{dom}"
    );
    assert!(
        calls.contains(r#"<td class="mono tool-name nowrap">get_weather</td>"#),
        "{calls}"
    );
    // Names and times never wrap mid-word; only the JSON cells may break, where they must.
    assert!(
        calls.contains(r#"<td class="nowrap">20"#),
        "started_at: {calls}"
    );
    assert!(
        calls.contains("cb-weather"),
        "the call's result is not shown:\n{calls}"
    );
    assert!(calls.contains("plugin:foo"), "{calls}");
    assert!(
        calls.contains(r#"{"city":"example"}"#),
        "the arguments are not shown:\n{calls}"
    );
    let running = calls
        .find(r#"<tr class="call running""#)
        .map(|at| &calls[at..at + calls[at..].find("</tr>").unwrap()])
        .unwrap_or_else(|| panic!("no running call row:\n{calls}"));
    assert!(
        running.contains(
            "<td class=\"mono result progress\">Looking at the sky over Paris…\n2 / 3 (67%) — 2 of 3 stations</td>"
        ),
        "the running call's summary and progress are not shown:\n{running}"
    );
    // And the tools table with the call counted.
    let start = dom.find(r#"<div id="tools">"#).expect("the tools section");
    let tools = &dom[start..start + dom[start..].find("</div>").unwrap()];
    assert!(
        tools.contains(r#"<tr class="tool" data-name="get_weather">"#),
        "{tools}"
    );
    assert!(
        tools.contains("<td>1</td>"),
        "the call is not counted:\n{tools}"
    );
    chatting.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_taken_port_says_how_to_go_on() {
    let first = start(ServerConfig::default()).await;
    let taken = first.addr().port();
    let Err(err) = toolwire::server::start(ServerConfig::default().with_port(taken)).await else {
        panic!("port {taken} is taken, yet a second server started on it");
    };
    let text = err.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{taken}")) && text.contains("--port 0"),
        "{text}"
    );
}
