//! `toolwire serve` against hostile peers, as a real process over real loopback sockets:
//! memory bounded relative to the request (measured as the process's resident high-water mark,
//! never time), the exact `Host` rule.

#![cfg(feature = "cli")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use crate::support::Serve;
use std::time::Duration;

/// The largest `/api/chat` body the server takes (8 MiB).
const MAX_CHAT_BODY: usize = 8 << 20;

/// `toolwire serve --port 0 ARGS` ([`Serve`]), and its `host:port`.
fn serve(args: &[&str]) -> (Serve, String) {
    let server = Serve::builder()
        .args(args.iter().copied())
        .env_remove("OPENAI_API_KEY")
        .start();
    let addr = server.addr().to_owned();
    (server, addr)
}

/// A field of `/proc/<pid>/status` in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// One HTTP/1.1 request on a new connection; the status and the whole body.
fn request(addr: &str, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) before the whole body is sent and close.
    let _ = sock.write_all(body);
    let mut out = Vec::new();
    let _ = sock.read_to_end(&mut out);
    let text_end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&out)));
    let status_line = String::from_utf8_lossy(&out[..text_end]).into_owned();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {status_line:?}"));
    (status, out[text_end + 4..].to_vec())
}

fn chat_body(size: usize, stream: bool) -> Vec<u8> {
    let frame = format!(r#"{{"stream":{stream},"message":""}}"#);
    let text = "x".repeat(size - frame.len());
    format!(r#"{{"stream":{stream},"message":"{text}"}}"#).into_bytes()
}

#[test]
fn a_maximum_size_chat_peaks_at_a_small_multiple_of_its_size() {
    let (server, addr) = serve(&[]);
    let pid = server.pid();
    // Let the runtime settle, then take the resident size before the first large request.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_bytes(pid, "VmRSS");
    for stream in [false, true] {
        let body = chat_body(MAX_CHAT_BODY, stream);
        assert_eq!(body.len(), MAX_CHAT_BODY);
        let (status, answer) = request(
            &addr,
            "POST /api/chat HTTP/1.1\r\nContent-Type: application/json",
            &body,
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer[..200]));
        // The answer holds the conversation once (the message back) plus a short reply, not an
        // echo of the message cut into thousands of stream events.
        assert!(
            answer.len() < body.len() + 4096 + if stream { 64 << 10 } else { 0 },
            "the answer to a {} byte request is {} bytes",
            body.len(),
            answer.len()
        );
        let text = String::from_utf8_lossy(&answer[answer.len().saturating_sub(4096)..])
            .into_owned()
            + &String::from_utf8_lossy(&answer[..answer.len().min(4096)]);
        assert!(text.contains("more bytes)"), "the echo is not cut: {text}");
    }
    let peak = status_bytes(pid, "VmHWM");
    let grew = peak.saturating_sub(before);
    // A guard against amplification (it was 550x), with room for the debug build and the
    // allocator's arenas: this test binary's server is a debug build, which measured 6-10x
    // here; the release figure (under 10x) is what `benches/serve_load.sh` reports.
    assert!(
        grew < 16 * MAX_CHAT_BODY,
        "a {MAX_CHAT_BODY} byte chat grew the server from {before} to a peak of {peak} bytes \
         ({grew} bytes, {:.1}x)",
        grew as f64 / MAX_CHAT_BODY as f64
    );
    // One byte over the limit is refused with 413, counted as the bytes arrive.
    let mut over = chat_body(MAX_CHAT_BODY, false);
    over.insert(1, b' ');
    let (status, answer) = request(
        &addr,
        "POST /api/chat HTTP/1.1\r\nContent-Type: application/json",
        &over,
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&answer));
    // With feature `jemalloc` the memory goes back to the system afterwards (its background
    // thread returns freed pages within seconds; glibc's malloc kept 30 to 50 MB of it for
    // good). CI runs this test with the feature too.
    if !cfg!(feature = "jemalloc") {
        return;
    }
    let mut now = status_bytes(pid, "VmRSS");
    for _ in 0..80 {
        if now < before + 2 * MAX_CHAT_BODY {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        now = status_bytes(pid, "VmRSS");
    }
    assert!(
        now < before + 2 * MAX_CHAT_BODY,
        "40 s after the requests the server holds {now} bytes (it held {before} before them \
         and peaked at {peak})"
    );
}

/// The status of `GET /api/tools` sent with this `Host` header (or none).
fn status_with_host(addr: &str, host: Option<&str>) -> u16 {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let host = host.map_or(String::new(), |h| format!("Host: {h}\r\n"));
    let head = format!("GET /api/tools HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = sock.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

#[test]
fn the_host_rule_is_exact() {
    let (_server, addr) = serve(&[]);
    let port = addr.rsplit_once(':').unwrap().1;
    for good in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".to_owned(),
        "LOCALHOST".to_owned(),
    ] {
        assert_eq!(status_with_host(&addr, Some(&good)), 200, "{good}");
    }
    for bad in [
        "127.0.0.1:80@evil.com".to_owned(),
        format!("{addr}@evil.com"),
        "localhost.evil.com".to_owned(),
        format!("localhost.evil.com:{port}"),
        "evil.com".to_owned(),
        format!("[::1]:{port}@evil.com"),
        format!("[::2]:{port}"),
        format!("::1:{port}"),
        format!("127.0.0.1:{port}x"),
        "127.0.0.1:99999".to_owned(),
        "2130706433".to_owned(),
    ] {
        assert_eq!(status_with_host(&addr, Some(&bad)), 403, "{bad}");
    }
}

/// Whether the server has closed `sock` (a read sees the end, or a reset).
fn closed_by_server(sock: &mut TcpStream, within: Duration) -> bool {
    sock.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or other answer before the close is fine; keep reading to the end.
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn slowloris_and_idle_connections_are_closed_and_the_api_keeps_answering() {
    let (_server, addr) = serve(&["--header-timeout", "1", "--max-connections", "16"]);
    // 8 peers sending a request head a few bytes at a time and never finishing it.
    let mut slow: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /api/tools HTTP/1.1\r\nHo").unwrap();
            s
        })
        .collect();
    // 40 peers that connect and send nothing: more than the cap.
    let mut idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // One keep-alive connection that made a request and then says nothing.
    let mut kept = TcpStream::connect(&addr).unwrap();
    kept.write_all(format!("GET /api/tools HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    // The API answers while the cap is full of peers that send nothing.
    for _ in 0..5 {
        assert_eq!(status_with_host(&addr, Some(&addr)), 200);
    }
    for s in &mut slow {
        let _ = s.write_all(b"s");
    }
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(
            closed_by_server(s, Duration::from_secs(20)),
            "slowloris connection {i} is still open"
        );
    }
    for (i, s) in idle.iter_mut().enumerate() {
        assert!(
            closed_by_server(s, Duration::from_secs(20)),
            "idle connection {i} is still open"
        );
    }
    // The keep-alive connection got its answer, then was closed when idle.
    assert!(closed_by_server(&mut kept, Duration::from_secs(20)));
    assert_eq!(status_with_host(&addr, Some(&addr)), 200);
}

#[test]
fn the_header_timeout_is_what_closes_a_quiet_connection() {
    // With a long timeout and room under the cap, a quiet connection stays open: the closing
    // in the test above is the configured timeout, not something else.
    let (_server, addr) = serve(&["--header-timeout", "30"]);
    let mut quiet = TcpStream::connect(&addr).unwrap();
    assert!(!closed_by_server(&mut quiet, Duration::from_secs(2)));
}

// ---------------------------------------------------------------------------------------------
// The state database

/// `POST path` with a JSON body on a new connection: the status and body (`None` when the
/// connection failed, as when the server was killed).
fn try_post(addr: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut sock = TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(head.as_bytes()).ok()?;
    let mut out = Vec::new();
    sock.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

fn register_body(name: &str) -> String {
    format!(
        r#"{{"name":"{name}","callback_url":"http://127.0.0.1:9/cb/{name}","source":"plugin:load"}}"#
    )
}

/// The names `GET /api/tools` lists for the role `default`.
fn listed(addr: &str) -> Vec<String> {
    let mut sock = TcpStream::connect(addr).unwrap();
    let head = format!("GET /api/tools HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1;
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    json["tools_by_role"]["default"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A directory of its own for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolwire-serve-hardening-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_json_state_file_is_imported_once_and_kept() {
    let dir = scratch("import");
    let state = dir.join("state.json");
    let old = r#"{"format": "toolwire-serve-state", "version": 1, "tools": [
      {"role": "default", "name": "get_weather", "description": "Weather.", "parameters": {},
       "callback_url": "http://127.0.0.1:9333/cb", "source": "plugin:foo",
       "timeout_seconds": 30.0, "scope": null, "registered_at_ms": 1735732800000},
      {"role": "elsewhere", "name": "kept", "description": "", "parameters": {},
       "callback_url": "http://127.0.0.1:9333/kept", "source": "plugin:foo",
       "timeout_seconds": 5.0, "scope": "elsewhere", "registered_at_ms": 1}]}"#;
    std::fs::write(&state, old).unwrap();
    // A temporary file an older version left when it was killed mid-write.
    std::fs::write(dir.join("state.json.tmp-4242"), "{").unwrap();

    let (server, addr) = serve(&["--state", state.to_str().unwrap()]);
    let said = server.said(4, Duration::from_secs(30));
    let kept = dir.join("state.json.json-imported");
    assert!(
        said.iter()
            .any(|l| l.contains("imported") && l.contains(&kept.display().to_string())),
        "{said:?}"
    );
    assert_eq!(listed(&addr), ["get_weather"]);
    drop(server);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), old);
    let head = std::fs::read(&state).unwrap();
    assert!(head.starts_with(b"SQLite format 3\0"));
    assert!(!dir.join("state.json.tmp-4242").exists());
    assert!(!dir.join("state.json.importing").exists());

    // The next start reads the database: nothing imported again, the role that is not
    // configured now kept and back when it is.
    let config = dir.join("roles.toml");
    std::fs::write(
        &config,
        "[[role]]\nname = \"default\"\n\n[[role]]\nname = \"elsewhere\"\n",
    )
    .unwrap();
    let (server, addr) = serve(&[
        "--state",
        state.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(listed(&addr), ["get_weather"]);
    let (status, body) = try_post(&addr, "/api/tools/register", &register_body("more")).unwrap();
    assert_eq!(status, 200, "{body}");
    let mut sock = TcpStream::connect(&addr).unwrap();
    let head = format!(
        "GET /api/tools?role=elsewhere HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    assert!(
        out.contains("\"kept\"") && out.contains("\"more\""),
        "{out}"
    );
    drop(server);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), old);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kill_9_during_registration_bursts_loses_nothing_acknowledged() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let dir = scratch("kill9");
    let state = dir.join("state.db");
    let state_arg = state.to_str().unwrap().to_owned();
    // name -> whether it is registered, by the last acknowledged change; names with a change
    // in flight at the kill may be either.
    let mut expected: HashMap<String, bool> = HashMap::new();
    for round in 0..5 {
        let (mut server, addr) = serve(&["--state", &state_arg]);
        let acknowledged = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
        let in_flight = Arc::new(Mutex::new(Vec::<String>::new()));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let addr = addr.clone();
                let acknowledged = Arc::clone(&acknowledged);
                let in_flight = Arc::clone(&in_flight);
                std::thread::spawn(move || {
                    for i in 0.. {
                        let name = format!("r{round}_w{w}_{i}");
                        in_flight.lock().unwrap().push(name.clone());
                        match try_post(&addr, "/api/tools/register", &register_body(&name)) {
                            Some((200, _)) => {
                                acknowledged.lock().unwrap().push((name.clone(), true))
                            }
                            _ => return,
                        }
                        // Every third one is unregistered again.
                        if i % 3 == 0 {
                            let body = format!(r#"{{"name":"{name}"}}"#);
                            match try_post(&addr, "/api/tools/unregister", &body) {
                                Some((200, _)) => {
                                    acknowledged.lock().unwrap().push((name.clone(), false));
                                }
                                _ => return,
                            }
                        }
                        in_flight.lock().unwrap().retain(|n| *n != name);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + 150 * round));
        let status = Command::new("kill")
            .args(["-9", &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let _ = server.child().wait();
        for w in workers {
            w.join().unwrap();
        }
        let acknowledged = acknowledged.lock().unwrap();
        assert!(
            !acknowledged.is_empty(),
            "round {round}: nothing was acknowledged"
        );
        for (name, registered) in acknowledged.iter() {
            expected.insert(name.clone(), *registered);
        }
        for name in in_flight.lock().unwrap().iter() {
            expected.remove(name);
        }
        let (_server, addr) = serve(&["--state", &state_arg]);
        let now = listed(&addr);
        for (name, registered) in &expected {
            assert_eq!(
                now.contains(name),
                *registered,
                "round {round}: {name} was acknowledged as {}",
                if *registered {
                    "registered"
                } else {
                    "unregistered"
                }
            );
        }
        let leftovers: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.contains(".tmp") || f.contains(".importing"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bytes the process has written through system calls (`wchar` of `/proc/<pid>/io`): files
/// and sockets alike.
fn written(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_registration_writes_the_same_whatever_the_registry_size() {
    let dir = scratch("cost");
    let state = dir.join("state.db");
    let (server, addr) = serve(&["--state", state.to_str().unwrap()]);
    let pid = server.pid();
    let mut cost = Vec::new();
    let mut n = 0;
    for batch in [100, 900, 100] {
        let before = written(pid);
        for _ in 0..batch {
            let (status, body) = try_post(
                &addr,
                "/api/tools/register",
                &register_body(&format!("t{n}")),
            )
            .unwrap();
            assert_eq!(status, 200, "{body}");
            n += 1;
        }
        cost.push((written(pid) - before) / batch);
    }
    // The JSON file this replaced was rewritten whole per change: 10x the tools, 10x the bytes.
    let (first, last) = (cost[0], cost[2]);
    assert!(
        last < 2 * first,
        "bytes written per registration: {first} at 0-100 tools, {last} at 1000-1100 tools"
    );
    assert_eq!(listed(&addr).len(), 1100);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The largest gateway body (a 30 MiB Chat Completions request: 20,000 messages, the most a
/// body may hold) peaks the server (debug build, with the offline upstream in the same
/// process reading the forwarded request) at a bounded multiple of its size.
#[test]
fn a_30_mib_gateway_request_peaks_at_a_bounded_multiple_of_its_size() {
    const SIZE: usize = 30 << 20;
    const MESSAGES: usize = 20_000;
    let (server, addr) = serve(&[]);
    let pid = server.pid();
    std::thread::sleep(Duration::from_millis(200));
    let before = status_bytes(pid, "VmRSS");
    let frame = r#"{"role":"user","content":""}"#;
    let each = SIZE / MESSAGES - frame.len() - 1;
    let one = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(each));
    let messages = vec![one; MESSAGES].join(",");
    let body = format!(r#"{{"model":"default","messages":[{messages}]}}"#).into_bytes();
    assert!(
        body.len() > 29 << 20 && body.len() <= 32 << 20,
        "{}",
        body.len()
    );
    let (status, answer) = request(
        &addr,
        "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json",
        &body,
    );
    let head = String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned();
    assert_eq!(status, 200, "{head}");
    let peak = status_bytes(pid, "VmHWM");
    let grew = peak.saturating_sub(before);
    eprintln!(
        "a {} byte gateway request: peak {peak} bytes, grew {grew} ({:.1}x)",
        body.len(),
        grew as f64 / body.len() as f64
    );
    // Measured 6.0x here (debug build); the bound is the one the gateway promises.
    assert!(
        grew < 10 * body.len(),
        "a {} byte gateway request grew the server from {before} to a peak of {peak} bytes \
         ({grew} bytes, {:.1}x)",
        body.len(),
        grew as f64 / body.len() as f64
    );
}
