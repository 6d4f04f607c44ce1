//! Gateway keys' limits shared through a real Redis (`redis-server`, started here on a free
//! loopback port without persistence) by three `toolwire serve` processes: a 60-requests-per-
//! minute key holds to 60 ± 1 across them, and a token budget holds when a stream is cut
//! mid-way on one instance and the next request goes to another.
//!
//! Without `redis-server` on the PATH the test is skipped, except in CI (`CI` set), where
//! `.ci/run` installs it and its absence fails the test.

#![cfg(all(feature = "cli", feature = "redis"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use toolwire::mock::{MockReply, MockServer, Script};
use toolwire::{ChatResponse, ProviderKind};

use crate::support::{Serve, http as http_within};

/// Kills the child (`redis-server`) when the test ends, however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `redis-server` on a free loopback port, once it answers PING; `None` when it is not
/// installed (outside CI).
fn redis() -> Option<(Proc, u16)> {
    let installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is not installed (.ci/run installs it)"
        );
        eprintln!("skipped: redis-server is not installed");
        return None;
    }
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let proc = Proc(child);
    for _ in 0..100 {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
            let mut buf = [0_u8; 7];
            if s.write_all(b"PING\r\n").is_ok()
                && s.read_exact(&mut buf).is_ok()
                && &buf == b"+PONG\r\n"
            {
                return Some((proc, port));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("redis-server did not answer on port {port}");
}

/// `toolwire serve` with `config` and the gateway keys' variables.
fn serve(config: &str) -> Serve {
    Serve::builder()
        .config(config)
        .env("TW_REDIS_TEST_TEAM", "team-secret")
        .env("TW_REDIS_TEST_BUDGET", "budget-secret")
        .env("TW_REDIS_TEST_UPSTREAM", "upstream-key")
        .start()
}

fn http() -> reqwest::Client {
    http_within(Duration::from_secs(30))
}

async fn post(base: &str, key: &str, body: &Value) -> (u16, String) {
    let r = http()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    // A stream cut upstream reaches a same-wire client cut too: what arrived is kept.
    let bytes = r.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

const WINDOW_SECS: u64 = 3_600;

fn window() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / WINDOW_SECS
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_share_one_limit_through_redis() {
    let Some((_redis, port)) = redis() else {
        return;
    };
    let cut = MockServer::start(
        ProviderKind::OpenAi,
        Script::new()
            .then(
                MockReply::from(ChatResponse::default().with_text("word ".repeat(300)))
                    .drop_after(900),
            )
            .then(MockReply::text("fine"))
            .repeat_last(),
    )
    .await
    .unwrap();
    let config = format!(
        r#"
[[role]]
name = "offline"

[[role]]
name = "cutting"
provider = "openai"
model = "gpt-x"
base_url = "{}"
api_key_env = "TW_REDIS_TEST_UPSTREAM"

[limits]
store = "redis://127.0.0.1:{port}"
window_secs = {WINDOW_SECS}

[[gateway_key]]
name = "team"
key_env = "TW_REDIS_TEST_TEAM"
requests_per_minute = 60

[[gateway_key]]
name = "budget"
key_env = "TW_REDIS_TEST_BUDGET"
tokens_per_minute = 20
"#,
        cut.url()
    );
    let instances: Vec<Serve> = (0..3).map(|_| serve(&config)).collect();
    let urls: Vec<String> = instances.iter().map(Serve::url).collect();
    let bases: Vec<&str> = urls.iter().map(String::as_str).collect();

    // 90 requests, 30 to each instance, 15 at a time: 60 ± 1 let through.
    let body = json!({"model": "offline", "messages": [{"role": "user", "content": "Hi"}]});
    let mut tries = 0;
    let (ok, refused) = loop {
        tries += 1;
        let before = window();
        let mut ok = 0;
        let mut refused = 0;
        for round in 0..6 {
            let sent = (0..15).map(|i| post(bases[(round * 15 + i) % 3], "team-secret", &body));
            for (status, text) in futures::future::join_all(sent).await {
                match status {
                    200 => ok += 1,
                    429 => {
                        assert!(text.contains("requests_per_minute"), "{text}");
                        refused += 1;
                    }
                    other => panic!("status {other}: {text}"),
                }
            }
        }
        // A window that ended during the run restarts the count: run again in the new one.
        if window() == before || tries == 2 {
            break (ok, refused);
        }
    };
    assert!(
        (59..=61).contains(&ok),
        "{ok} let through, {refused} refused"
    );
    assert_eq!(ok + refused, 90);

    // A stream cut mid-way on one instance is charged (an estimate: no usage came); the budget
    // of 20 tokens is then spent for the other instances too.
    let stream = json!({"model": "cutting", "stream": true,
                        "messages": [{"role": "user", "content": "Hi"}]});
    let (status, _) = post(bases[0], "budget-secret", &stream).await;
    assert_eq!(status, 200);
    let whole = json!({"model": "cutting", "messages": [{"role": "user", "content": "Hi"}]});
    let mut refused = None;
    for _ in 0..40 {
        let (status, text) = post(bases[1], "budget-secret", &whole).await;
        if status == 429 {
            refused = Some(text);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = refused.expect("instance 2 never saw the budget spent on instance 1");
    assert!(refused.contains("tokens_per_minute"), "{refused}");
    let (status, text) = post(bases[2], "budget-secret", &whole).await;
    assert_eq!(status, 429, "{text}");
}
