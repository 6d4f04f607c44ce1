//! OAuth 2.1 against the official Python SDK's own auth helpers: `tests/mcp/oauth.py` is an MCP
//! server whose authorization server (discovery metadata, dynamic client registration, PKCE,
//! code and refresh grants) runs on the same loopback port. `toolwire mcp login` runs the flow
//! (the test follows the authorization URL with an HTTP client, as a browser would), the token
//! file is private, `toolwire mcp` and `[[mcp]]` mounts use it, and an expired token is
//! refreshed.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp::{chat, here, http, json_out, python, runtime, toolwire_env};

/// `tests/mcp/oauth.py` on a free port, killed when dropped.
struct OauthServer {
    child: Child,
    base: String,
    url: String,
}

impl OauthServer {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python())
            .args([here("oauth.py"), port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Python OAuth server starts");
        let base = format!("http://127.0.0.1:{port}");
        let server = Self {
            child,
            url: format!("{base}/mcp"),
            base,
        };
        // Listening is not enough: the app answers once uvicorn has started it.
        let started = Instant::now();
        while server.stats().is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the OAuth server did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// `GET /stats`: what the authorization server has done.
    fn stats(&self) -> Option<Value> {
        let url = format!("{}/stats", self.base);
        runtime().block_on(async {
            http()
                .get(url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()
        })
    }
}

impl Drop for OauthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The one token file in `dir`.
fn token_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// `toolwire mcp login --no-browser`: reads the authorization URL it prints, follows it like a
/// browser (the authorization server approves at once and redirects to toolwire's loopback
/// listener), and waits for the login to end.
fn login(url: &str, dir: &Path) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolwire"))
        .args([
            "mcp",
            "login",
            "--url",
            url,
            "--no-browser",
            "--timeout",
            "30",
        ])
        .arg("--token-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let authorize = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("login ended without an authorization URL: {seen}");
        }
        seen.push_str(&line);
        if line.starts_with("http") {
            break line.trim().to_owned();
        }
    };
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    assert!(authorize.contains("resource="), "{authorize}");
    let page = runtime().block_on(async {
        http()
            .get(&authorize)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "login failed: {seen}{rest}");
    (page, format!("{seen}{rest}"))
}

fn call_whoami(url: &str, dir: &Path) -> Value {
    let out = toolwire_env(
        &[
            "mcp",
            "call",
            "whoami",
            "{}",
            "--url",
            url,
            "--token-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let result = json_out(&out);
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| panic!("{result}"))
}

/// Before logging in, a 401 says to log in; `toolwire mcp login` registers a client, runs PKCE
/// and saves the tokens in a 0600 file (directory 0700); `mcp tools` and `mcp call` then send
/// the token; an expired token is refreshed once (the server counts one refresh grant) and the
/// new one saved, still 0600; a file others can read is refused.
#[test]
fn login_saves_a_private_token_that_calls_use_and_refresh() {
    let server = OauthServer::start();
    let dir = scratch("mcp-oauth-cli");

    // No login yet: the 401 names the login command (the default directory, through the
    // environment variable, holds nothing for this server).
    let empty = scratch("mcp-oauth-empty");
    let out = toolwire_env(
        &["mcp", "tools", "--timeout", "10", "--url", &server.url],
        &[("TOOLWIRE_MCP_TOKEN_DIR", empty.to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    assert!(
        stderr.contains(&format!("toolwire mcp login --url {}", server.url)),
        "{stderr}"
    );

    let (page, said) = login(&server.url, &dir);
    assert!(page.contains("logged in"), "{page}");
    let file = token_file(&dir);
    assert!(said.contains(file.to_str().unwrap()), "{said}");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&dir), 0o700);
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let client_id = saved["credentials"]["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = saved["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The token is not printed.
    assert!(!said.contains(&first), "{said}");
    let stats = server.stats().unwrap();
    assert_eq!(stats["registered"], 1, "{stats}");
    assert_eq!(stats["codes"], 1, "{stats}");

    let out = toolwire_env(
        &[
            "mcp",
            "tools",
            "--url",
            &server.url,
            "--token-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let tools = json_out(&out);
    assert_eq!(tools[0]["name"], "whoami", "{tools}");
    let who = call_whoami(&server.url, &dir);
    assert_eq!(who["client_id"], client_id.as_str());
    assert_eq!(who["token"], json!(first[first.len() - 6..]));
    assert_eq!(server.stats().unwrap()["refreshes"], 0);

    // The token has expired (received long ago): refreshed before it is sent, saved back.
    let mut expired = saved.clone();
    expired["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&file, serde_json::to_vec(&expired).unwrap()).unwrap();
    let who = call_whoami(&server.url, &dir);
    assert_eq!(server.stats().unwrap()["refreshes"], 1);
    let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let second = saved["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(second, first);
    assert_eq!(who["token"], json!(second[second.len() - 6..]));
    assert_eq!(mode(&file), 0o600);
    // Not expired now: no second refresh.
    call_whoami(&server.url, &dir);
    assert_eq!(server.stats().unwrap()["refreshes"], 1);

    // A token file others can read is refused, saying so.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = toolwire_env(
        &[
            "mcp",
            "tools",
            "--url",
            &server.url,
            "--token-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("readable by others"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}

/// `[[mcp]]` with `oauth = true` mounts the server with the saved login: its tool is listed
/// and called through `/api/chat`; through the library, [`Endpoint::with_login`] does the
/// same.
#[test]
fn mounts_and_connections_use_the_saved_login() {
    use toolwire::mcp::{Connection, Endpoint, TokenFile};
    use toolwire::server::ServerConfig;

    let server = OauthServer::start();
    let dir = scratch("mcp-oauth-mount");
    login(&server.url, &dir);

    runtime().block_on(async {
        let endpoint = Endpoint::url(server.url.clone())
            .unwrap()
            .with_login(TokenFile::new(&dir, &server.url))
            .unwrap();
        let connection = Connection::connect(&endpoint).await.unwrap();
        let result = connection.call("whoami", json!({})).await.unwrap();
        assert!(!result.is_error, "{result:?}");
        connection.close().await;

        // Without a saved login, the error says how to make one.
        let nowhere = Endpoint::url(server.url.clone())
            .unwrap()
            .with_login(TokenFile::new(dir.join("none"), &server.url))
            .unwrap();
        let e = Connection::connect(&nowhere).await.unwrap_err().to_string();
        assert!(e.contains("toolwire mcp login --url"), "{e}");
    });

    let config_file = dir.join("serve.toml");
    std::fs::write(
        &config_file,
        format!(
            "[[mcp]]\nname = \"o\"\nurl = \"{}\"\noauth = true\ntoken_dir = \"{}\"\n",
            server.url,
            dir.display()
        ),
    )
    .unwrap();
    runtime().block_on(async {
        let config = ServerConfig::new()
            .with_port(0)
            .with_roles_file(&config_file)
            .unwrap();
        let running = toolwire::server::start(config).await.unwrap();
        let base = running.url();
        let started = Instant::now();
        loop {
            let listed: Value = http()
                .get(format!("{base}/api/tools"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let mounted = listed["tools_by_role"]["default"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["name"] == "o_whoami");
            if mounted {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{listed}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let answer = chat(&base, "please run o_whoami").await;
        let results: Vec<&Value> = answer["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .collect();
        assert_eq!(results.len(), 1, "{answer}");
        assert_eq!(results[0]["is_error"], json!(false), "{answer}");
        running.shutdown().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
