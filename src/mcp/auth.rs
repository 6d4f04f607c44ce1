//! OAuth 2.1 for MCP servers reached by URL, on the SDK's own `auth` support (rmcp).
//!
//! [`login`] runs the authorization code flow of the MCP authorization specification once:
//! discovery from the server's protected resource metadata (RFC 9728) and its authorization
//! server's metadata (RFC 8414), dynamic client registration (RFC 7591) where the server offers
//! it, PKCE (S256), and the code exchange; the redirect comes back to a listener on a loopback
//! port. The tokens go into a [`TokenFile`]: one JSON file per server URL, readable only by its
//! owner (mode 0600), under [`default_token_dir`] unless another directory is given.
//!
//! An [`Endpoint`](super::Endpoint) with [`with_login`](super::Endpoint::with_login) sends the
//! saved access token with each request; a token at or near its expiry is refreshed (with the
//! saved refresh token) before it is sent, and a token the server refuses is refreshed once and
//! the request retried once. The refreshed tokens are saved back to the file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, Result};

/// The environment variable that overrides [`default_token_dir`].
pub const TOKEN_DIR_ENV: &str = "TOOLWIRE_MCP_TOKEN_DIR";

/// The longest request head the login's redirect listener reads (the browser's request for
/// the redirect URL, with its query).
const MAX_REDIRECT_HEAD: usize = 16 * 1024;

/// The largest token file read.
const MAX_TOKEN_FILE: u64 = 1024 * 1024;

/// Where saved logins go unless told otherwise: `$TOOLWIRE_MCP_TOKEN_DIR`, else
/// `$XDG_CONFIG_HOME/toolwire/mcp-tokens`, else `$HOME/.config/toolwire/mcp-tokens`
/// (`%APPDATA%\toolwire\mcp-tokens` on Windows). `None` when none of these is set.
pub fn default_token_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(TOKEN_DIR_ENV) {
        return Some(dir);
    }
    let config = var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".config")))
        .or_else(|| var("APPDATA"))?;
    Some(config.join("toolwire").join("mcp-tokens"))
}

/// The saved login for one MCP server: a JSON file named after the server's URL in a token
/// directory, holding the OAuth client id and tokens. Written with mode 0600 (its directory
/// 0700); a file others can read is refused when loaded. Its `Debug` shows the path only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFile {
    url: String,
    path: PathBuf,
}

/// What a token file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    url: String,
    credentials: StoredCredentials,
}

impl TokenFile {
    /// The login for the server at `url`, kept in `dir`.
    pub fn new(dir: impl AsRef<Path>, url: &str) -> Self {
        Self {
            url: url.to_owned(),
            path: dir.as_ref().join(file_name(url)),
        }
    }

    /// The login for `url` in [`default_token_dir`]; an error when no directory can be found.
    pub fn in_default_dir(url: &str) -> Result<Self> {
        let dir = default_token_dir().ok_or_else(|| {
            Error::input(
                "token_dir",
                format!(
                    "no directory for MCP logins: set {TOKEN_DIR_ENV} (or HOME or XDG_CONFIG_HOME)"
                ),
            )
        })?;
        Ok(Self::new(dir, url))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server URL the login is for.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether a login has been saved (the file exists).
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    fn read(&self) -> std::result::Result<Option<StoredCredentials>, String> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = file
                .metadata()
                .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(format!(
                    "{} is readable by others (mode {:o}); it holds tokens: chmod 600 it or log in again",
                    self.path.display(),
                    mode & 0o777
                ));
            }
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_TOKEN_FILE), &mut text)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let saved: Saved = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a toolwire MCP login ({e}); log in again",
                self.path.display()
            )
        })?;
        if saved.url != self.url {
            return Err(format!(
                "{} holds the login for {}, not {}",
                self.path.display(),
                saved.url,
                self.url
            ));
        }
        Ok(Some(saved.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::result::Result<(), String> {
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(fail)?;
        let saved = Saved {
            url: self.url.clone(),
            credentials,
        };
        let text = serde_json::to_vec_pretty(&saved).map_err(|e| e.to_string())?;
        // Written beside the file and renamed over it: a reader never sees half a file, and
        // the file never exists with a wider mode.
        let temp =
            self.path
                .with_extension(format!("tmp-{}-{}", std::process::id(), unique_suffix()));
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut file = options.open(&temp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(fail)
    }
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// A file name for `url`: its readable part (host, port, path; other bytes as `_`) and a
/// hash of the whole URL, so two URLs never share a file by their readable part.
fn file_name(url: &str) -> String {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/');
    let readable: String = rest
        .chars()
        .take(60)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // FNV-1a, 64 bits: stable across versions and platforms.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in url.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{readable}-{hash:016x}.json")
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> std::result::Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> std::result::Result<(), AuthError> {
        self.write(credentials)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> std::result::Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(format!(
                "cannot remove {}: {e}",
                self.path.display()
            ))),
        }
    }
}

/// How [`login`] runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoginOptions {
    /// The loopback port the redirect comes back to; 0 (the default) for any free one.
    pub port: u16,
    /// How long the person has to finish in the browser (default 5 minutes).
    pub timeout: Duration,
    /// The client name sent in dynamic client registration (default `toolwire`).
    pub client_name: String,
}

impl Default for LoginOptions {
    fn default() -> Self {
        Self {
            port: 0,
            timeout: Duration::from_secs(300),
            client_name: "toolwire".to_owned(),
        }
    }
}

impl LoginOptions {
    /// Sets the redirect port.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Sets how long the login may wait for the redirect.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// An OAuth failure for the server at `url` as toolwire's error.
fn oauth_error(url: &str, what: &str, e: &AuthError) -> Error {
    let mut message = format!("OAuth {what}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    Error::Mcp {
        server: url.to_owned(),
        message,
    }
}

/// The SDK's authorization manager for `url`, its tokens kept in `store`.
async fn manager(url: &str, store: &TokenFile) -> Result<AuthorizationManager> {
    // The SDK builds its own HTTP client for discovery and tokens; with rustls it needs the
    // process's default crypto provider, which toolwire's client builder installs.
    let _ = crate::tls::http_client_builder();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| oauth_error(url, "setup", &e))?;
    manager.set_credential_store(store.clone());
    Ok(manager)
}

/// Runs the OAuth authorization code flow for the MCP server at `url` once and saves the
/// tokens to `store`. `show_url` gets the authorization URL to open in a browser (print it,
/// open it); the login then waits (up to `options.timeout`) for the browser's redirect to
/// `http://127.0.0.1:PORT/callback`, exchanges the code, and saves the tokens.
pub async fn login(
    url: &str,
    store: &TokenFile,
    options: &LoginOptions,
    show_url: impl FnOnce(&str),
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| Error::Mcp {
            server: url.to_owned(),
            message: format!(
                "cannot listen on 127.0.0.1:{} for the login redirect: {e}",
                options.port
            ),
        })?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut manager = manager(url, store).await?;
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| oauth_error(url, "discovery", &e))?;
    manager.set_metadata(resolution.metadata);
    let request =
        AuthorizationRequest::new(redirect.clone()).with_client_name(&options.client_name);
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| oauth_error(url, "client registration", &e))?;
    show_url(session.get_authorization_url());
    let target = tokio::time::timeout(options.timeout, redirected(&listener))
        .await
        .map_err(|_| Error::Mcp {
            server: url.to_owned(),
            message: format!(
                "no browser came back to {redirect} within {:?}",
                options.timeout
            ),
        })?
        .map_err(|message| Error::Mcp {
            server: url.to_owned(),
            message,
        })?;
    session
        .handle_callback_url(&format!("http://127.0.0.1:{port}{target}"))
        .await
        .map_err(|e| oauth_error(url, "code exchange", &e))?;
    if !store.exists() {
        return Err(Error::Mcp {
            server: url.to_owned(),
            message: "the authorization server issued no token".to_owned(),
        });
    }
    Ok(())
}

/// Waits for the browser's request for `/callback?...` and answers it; returns its target
/// (path and query). Other requests (a favicon) get 404 and the wait goes on; a redirect
/// carrying `error=` ends the login with that error.
async fn redirected(listener: &tokio::net::TcpListener) -> std::result::Result<String, String> {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let Some(target) = request_target(&mut stream).await else {
            let _ = respond(&mut stream, "400 Bad Request", "Not an HTTP request.").await;
            continue;
        };
        if !target.starts_with("/callback") {
            let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
            continue;
        }
        let query = target.split_once('?').map_or("", |(_, q)| q);
        let param = |name: &str| {
            query.split('&').find_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (k == name).then(|| percent_decode(v))
            })
        };
        if let Some(error) = param("error") {
            let description = param("error_description").unwrap_or_default();
            let _ = respond(
                &mut stream,
                "200 OK",
                "Login refused; back to the terminal.",
            )
            .await;
            return Err(format!(
                "the authorization server refused the login: {error} {description}"
            )
            .trim_end()
            .to_owned());
        }
        let _ = respond(
            &mut stream,
            "200 OK",
            "toolwire is logged in; you can close this tab.",
        )
        .await;
        return Ok(target);
    }
}

/// The request target of one HTTP request head, read up to [`MAX_REDIRECT_HEAD`] bytes.
async fn request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 || head.len() + n > MAX_REDIRECT_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET" && target.starts_with('/')).then(|| target.to_owned())
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// `%XX` and `+` decoded (a redirect's query value); bad escapes are kept as they are.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The HTTP client of a server with a saved login: the SDK's [`rmcp::transport::AuthClient`]
/// over toolwire's client, which sends the saved access token, refreshes it when it has
/// expired, and refreshes once more (retrying once) when the server refuses it.
pub(super) async fn client(
    url: &str,
    store: &TokenFile,
    http: reqwest::Client,
) -> Result<rmcp::transport::AuthClient<reqwest::Client>> {
    if !store.exists() {
        return Err(Error::Mcp {
            server: url.to_owned(),
            message: format!(
                "no saved login ({} does not exist): run `toolwire mcp login --url {url}` first",
                store.path().display()
            ),
        });
    }
    let mut manager = manager(url, store).await?;
    let ready = manager
        .initialize_from_store()
        .await
        .map_err(|e| oauth_error(url, "saved login", &e))?;
    if !ready {
        return Err(Error::Mcp {
            server: url.to_owned(),
            message: format!(
                "the saved login in {} holds no token for this server's authorization server: \
                 run `toolwire mcp login --url {url}` again",
                store.path().display()
            ),
        });
    }
    Ok(rmcp::transport::AuthClient::new(http, manager))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_readable_and_apart() {
        let a = file_name("https://mcp.example.com/mcp");
        let b = file_name("https://mcp.example.com/mcp/");
        assert!(a.starts_with("mcp.example.com_mcp-"), "{a}");
        assert!(a.ends_with(".json"));
        assert_ne!(a, b);
        let long = file_name(&format!("http://h/{}", "x/../".repeat(100)));
        assert!(long.len() < 100 && !long.contains('/'), "{long}");
    }

    #[test]
    fn redirect_values_are_percent_decoded() {
        assert_eq!(percent_decode("a%20b+c"), "a b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }
}
