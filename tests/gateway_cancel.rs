//! A client that leaves cancels the gateway's upstream request: a raw-TCP upstream that
//! answers slowly records when the gateway closes its connection, and a raw-TCP client hangs up
//! in the middle of a stream (after its first event) or while a whole answer is awaited. The
//! upstream connection must close soon after (polled with a generous bound), and the
//! open-streams gauge of `/metrics` must fall back to zero.

#![cfg(feature = "server")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolwire::ProviderKind;
use toolwire::server::{RoleConfig, ServerConfig, ServerHandle};

/// The variable the upstream key is read from (one cargo sets for every test process).
const KEY_VAR: &str = "CARGO_PKG_NAME";

/// How long a closed connection may take to be noticed: generous, this is not a speed test.
const BOUND: Duration = Duration::from_secs(20);

/// What the upstream saw: requests whose body arrived, and connections closed by the gateway.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    closed: AtomicUsize,
}

/// One Chat Completions chunk of text.
fn chunk(text: &str) -> String {
    let v = json!({"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 0,
        "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
        "finish_reason": null}]});
    format!("data: {v}\n\n")
}

/// Reads one HTTP/1.1 request (head and `Content-Length` body); false when the peer left.
async fn read_request(socket: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0_u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return true;
            }
        }
        match socket.read(&mut byte).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
    }
}

/// Waits until the peer closes (a read of zero bytes or an error).
async fn closed(socket: &mut TcpStream) {
    let mut byte = [0_u8; 512];
    while let Ok(n) = socket.read(&mut byte).await {
        if n == 0 {
            return;
        }
    }
}

/// An upstream that, per connection, reads the request and then: streams a first chunk and
/// then goes silent (`stream`), or never answers (not `stream`). Counts requests and closes.
async fn slow_upstream(stream: bool) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = Arc::clone(&counts);
            tokio::spawn(async move {
                if !read_request(&mut socket).await {
                    return;
                }
                seen.requests.fetch_add(1, Ordering::SeqCst);
                if stream {
                    let first = chunk("Hel");
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                         transfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
                        first.len()
                    );
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        seen.closed.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
                // Silent from here on: only the gateway hanging up ends this connection.
                closed(&mut socket).await;
                seen.closed.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (url, seen)
}

async fn gateway(upstream: &str) -> ServerHandle {
    let role = RoleConfig::live("up", ProviderKind::OpenAi, "m")
        .with_base_url(upstream)
        .with_api_key_env(KEY_VAR);
    toolwire::server::start(ServerConfig::new().with_port(0).with_roles([role]))
        .await
        .unwrap()
}

/// The body each client wire sends for one short turn.
fn body(route: &str, stream: bool) -> Value {
    let messages = json!([{"role": "user", "content": "Hello?"}]);
    match route {
        "/v1/messages" => {
            json!({"model": "up", "max_tokens": 64, "stream": stream, "messages": messages})
        }
        "/v1/responses" => json!({"model": "up", "stream": stream, "input": "Hello?"}),
        _ => json!({"model": "up", "stream": stream, "messages": messages}),
    }
}

/// Opens a raw connection to the gateway and sends one request on it.
async fn send(server: &ServerHandle, route: &str, stream: bool) -> TcpStream {
    let addr = server.url().trim_start_matches("http://").to_owned();
    let mut socket = TcpStream::connect(&addr).await.unwrap();
    let body = body(route, stream).to_string();
    let request = format!(
        "POST {route} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    socket
}

/// Reads from the gateway until `want` has arrived.
async fn read_until(socket: &mut TcpStream, want: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0_u8; 4096];
    tokio::time::timeout(BOUND, async {
        while !String::from_utf8_lossy(&got).contains(want) {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "the gateway closed first: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {want:?} from the gateway: {got:?}"));
    String::from_utf8_lossy(&got).into_owned()
}

/// Polls until `count` reaches `want`, failing after [`BOUND`].
async fn reaches(count: &AtomicUsize, want: usize, what: &str) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while count.load(Ordering::SeqCst) < want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} of {want} after {BOUND:?}",
            count.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn open_streams(server: &ServerHandle) -> String {
    let metrics = toolwire::client::http_client_builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{}/metrics", server.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    metrics
        .lines()
        .filter(|l| l.starts_with("toolwire_gateway_open_streams{"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A client leaving a stream after its first event closes the upstream connection, on every
/// client wire, and the open-streams gauge falls back to zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_a_stream_closes_the_upstream() {
    let (url, seen) = slow_upstream(true).await;
    let server = gateway(&url).await;
    let routes = [
        ("/v1/chat/completions", "Hel"),
        ("/v1/messages", "Hel"),
        ("/v1/responses", "Hel"),
    ];
    for (n, (route, first)) in routes.into_iter().enumerate() {
        let mut client = send(&server, route, true).await;
        let got = read_until(&mut client, first).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{route}: {got}");
        reaches(&seen.requests, n + 1, "upstream requests").await;
        let open = open_streams(&server).await;
        assert!(open.contains(&format!("route=\"{route}\"}} 1")), "{open}");
        assert_eq!(seen.closed.load(Ordering::SeqCst), n, "{route}");
        drop(client);
        reaches(&seen.closed, n + 1, route).await;
    }
    // The gauge is decremented when the response body is dropped, which may follow the upstream
    // close by a moment: poll it too.
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let open = open_streams(&server).await;
        if open.lines().all(|l| l.ends_with(" 0")) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{open}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client leaving while a whole (non-streamed) answer is awaited closes the upstream
/// connection too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_a_whole_answer_closes_the_upstream() {
    let (url, seen) = slow_upstream(false).await;
    let server = gateway(&url).await;
    for (n, route) in ["/v1/chat/completions", "/v1/messages", "/v1/responses"]
        .into_iter()
        .enumerate()
    {
        let client = send(&server, route, false).await;
        reaches(&seen.requests, n + 1, "upstream requests").await;
        assert_eq!(seen.closed.load(Ordering::SeqCst), n, "{route}");
        drop(client);
        reaches(&seen.closed, n + 1, route).await;
    }
}
