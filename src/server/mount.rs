//! `[[mcp]]` in the config file: MCP servers whose tools the server mounts (feature `mcp`),
//! read and checked with the rest of the config; [`super::mcp`] connects them.
//!
//! ```toml
//! [[mcp]]
//! name = "files"                         # tools are named files_<tool>, source "mcp:files"
//! command = ["python3", "files_server.py"]  # or: url = "http://127.0.0.1:9000/mcp"
//! role = "Lanlan"                        # optional: only this role gets the tools
//! # with url only, static auth:
//! bearer_env = "FILES_TOKEN"             # Authorization: Bearer $FILES_TOKEN
//! headers = { "X-Api-Key" = "${FILES_KEY}" }  # a value "${VAR}" is read from VAR
//! # or OAuth, after `toolwire mcp login --url URL` (tokens refreshed when they expire):
//! oauth = true
//! token_dir = "/path/to/mcp-tokens"      # optional; default: toolwire mcp login's directory
//! ```
//!
//! Environment variables are read when the config is loaded; one that is not set is a config
//! error naming it. Header values and tokens are never logged.
//!
//! Each server is connected when the server starts and kept connected by a task of its own: its
//! tools are registered into the roles' registries (listed by `GET /api/tools`, called by
//! `/api/chat`), listed again on `tools/list_changed`, removed when the server goes away, and
//! mounted again when it comes back (reconnecting with a backoff of 1 s doubling to 60 s).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::mcp::Endpoint;

/// One `[[mcp]]` entry: a server whose tools are mounted as `<name>_<tool>`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpMount {
    /// The mount's name: the tools' prefix and their source `mcp:<name>`.
    pub name: String,
    /// Where the server is.
    pub endpoint: Endpoint,
    /// The one role that gets the tools; `None` for every role.
    pub role: Option<String>,
}

impl McpMount {
    /// A mount of the server at `endpoint` as `name`, for every role.
    pub fn new(name: impl Into<String>, endpoint: Endpoint) -> Self {
        Self {
            name: name.into(),
            endpoint,
            role: None,
        }
    }

    /// Gives the tools to one role only.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    headers: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    bearer_env: Option<String>,
    #[serde(default)]
    oauth: bool,
    #[serde(default)]
    token_dir: Option<std::path::PathBuf>,
}

/// The `[[mcp]]` entries of a config file, or the reason (no line: the roles' parse has
/// already checked the TOML itself).
pub(crate) fn parse(text: &str) -> std::result::Result<Vec<McpMount>, (Option<usize>, String)> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        mcp: Vec<toml::Table>,
    }
    let file: File = toml::from_str(text).map_err(|e| (None, e.message().to_owned()))?;
    let mut mounts = Vec::new();
    for (i, table) in file.mcp.into_iter().enumerate() {
        let at = |field: &str| format!("mcp #{} ({field})", i + 1);
        let entry: Entry = table
            .try_into()
            .map_err(|e: toml::de::Error| (None, format!("{}: {}", at("fields"), e.message())))?;
        let endpoint = match (entry.command, entry.url) {
            (Some(command), None) => Endpoint::command(command),
            (None, Some(url)) => Endpoint::url(url),
            _ => {
                return Err((
                    None,
                    format!(
                        "{}: give either command = [...] or url = \"...\"",
                        at("command")
                    ),
                ));
            }
        }
        .map_err(|e| (None, format!("{}: {}", at("command"), plain(&e))))?;
        let mut endpoint = endpoint;
        let is_url = matches!(endpoint, Endpoint::Url { .. });
        if !is_url
            && (entry.headers.is_some()
                || entry.bearer_env.is_some()
                || entry.oauth
                || entry.token_dir.is_some())
        {
            return Err((
                None,
                format!(
                    "{}: headers, bearer_env and oauth are for url = \"...\" servers",
                    at("headers")
                ),
            ));
        }
        for (name, value) in entry.headers.unwrap_or_default() {
            let value = match value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
                Some(var) => std::env::var(var).map_err(|_| {
                    (
                        None,
                        format!(
                            "{}: header {name:?} names environment variable {var}, which is not set",
                            at("headers")
                        ),
                    )
                })?,
                None => value,
            };
            endpoint = endpoint
                .with_header(&name, &value)
                .map_err(|e| (None, format!("{}: {}", at("headers"), plain(&e))))?;
        }
        if let Some(var) = &entry.bearer_env {
            endpoint = endpoint
                .with_bearer_env(var)
                .map_err(|e| (None, format!("{}: {}", at("bearer_env"), plain(&e))))?;
        }
        if entry.token_dir.is_some() && !entry.oauth {
            return Err((
                None,
                format!("{}: token_dir needs oauth = true", at("oauth")),
            ));
        }
        if entry.oauth
            && let Endpoint::Url { url, .. } = &endpoint
        {
            let file = match &entry.token_dir {
                Some(dir) => crate::mcp::TokenFile::new(dir, url),
                None => crate::mcp::TokenFile::in_default_dir(url)
                    .map_err(|e| (None, format!("{}: {}", at("oauth"), plain(&e))))?,
            };
            endpoint = endpoint
                .with_login(file)
                .map_err(|e| (None, format!("{}: {}", at("oauth"), plain(&e))))?;
        }
        mounts.push(McpMount {
            name: entry.name,
            endpoint,
            role: entry.role,
        });
    }
    Ok(mounts)
}

fn plain(e: &Error) -> String {
    match e {
        Error::Input { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Checks the mounts: names that make valid tool-name prefixes, unique, roles that exist.
pub(crate) fn check<'a>(
    mounts: &[McpMount],
    roles: impl Iterator<Item = &'a str> + Clone,
) -> Result<()> {
    for (i, m) in mounts.iter().enumerate() {
        let at = format!("mcp[{i}]");
        let valid = !m.name.is_empty()
            && m.name.len() <= 32
            && m.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        if !valid {
            return Err(Error::input(
                format!("{at}.name"),
                format!(
                    "mount name {:?} must be 1 to 32 letters, digits, `_` or `-` (it prefixes \
                     tool names)",
                    m.name
                ),
            ));
        }
        if mounts[..i].iter().any(|x| x.name == m.name) {
            return Err(Error::input(
                format!("{at}.name"),
                format!("MCP mount {:?} is defined twice", m.name),
            ));
        }
        if let Some(role) = &m.role
            && !roles.clone().any(|r| r == role)
        {
            return Err(Error::input(
                format!("{at}.role"),
                format!(
                    "MCP mount {:?} names role {role:?}, which is not defined",
                    m.name
                ),
            ));
        }
    }
    Ok(())
}
