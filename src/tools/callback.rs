//! HTTP callback tools: a call is POSTed to a URL on this machine and its answer is the result.
//!
//! Only loopback targets are allowed (127.0.0.0/8, `::1`, IPv4-mapped loopback, `localhost`),
//! checked on the parsed address, the same [`Url`] the request is sent to: decimal, hex or
//! octal IPv4 spellings are read as the address they denote, userinfo is refused, `localhost`
//! is pinned to the loopback addresses (no DNS), no proxy is used and redirects are not
//! followed. Answers are read up to a size limit.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::Url;
use reqwest::redirect::Policy;
use serde_json::{Value, json};

#[cfg(test)]
use super::ToolOutput;
use super::dispatch::floor_char_boundary;
use super::{Reply, ToolError, ToolInput, ToolReply};
use crate::error::{Error, Result};
use crate::types::Part;

/// The largest callback answer read unless the callback sets its own limit (1 MiB).
pub const DEFAULT_CALLBACK_RESPONSE_BYTES: usize = 1 << 20;

/// How long connecting to a callback may take; the tool's timeout bounds the whole call.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How much of an error answer is quoted in the result.
const ERROR_QUOTE_BYTES: usize = 200;

/// Where a callback tool sends its calls.
///
/// The request is `POST {"name", "arguments", "call_id", "raw_arguments"}`. The answer is an
/// envelope `{"output": .., "content": [parts], "is_error": bool, "error": ".."}`, or any other
/// JSON (or text), which is then the output itself. A JSON object is read as an envelope when
/// it has an `output`, a `content` or an `is_error` field; `content` holds the parts the model
/// sees (`{"type": "image", "media_type": "image/png", "data": ".."}`, as in a tool result), and
/// a part that is not one is an error result naming it. An HTTP status of 300 or more is an error result quoting
/// the start of the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Callback {
    url: Url,
    max_response_bytes: usize,
}

impl Callback {
    /// A callback to `url`, which must be a loopback `http`/`https` URL, its host judged after
    /// parsing (`http://2130706433/` is 127.0.0.1; userinfo tricks and IPv4-mapped outside
    /// addresses are refused).
    pub fn new(url: &str) -> Result<Self> {
        Ok(Self {
            url: check_callback_url(url)?,
            max_response_bytes: DEFAULT_CALLBACK_RESPONSE_BYTES,
        })
    }

    /// Answers longer than this many bytes become an error result (default 1 MiB).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The checked URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    pub(super) async fn invoke(&self, input: &ToolInput) -> Reply {
        let client = http_client().map_err(ToolError::new)?;
        let body = json!({
            "name": input.name,
            "arguments": input.arguments,
            "call_id": input.call_id,
            "raw_arguments": input.raw_arguments,
        });
        let mut response = client
            .post(self.url.clone())
            .json(&body)
            .send()
            .await
            .map_err(|e| ToolError::new(format!("callback request failed: {e}")))?;
        let status = response.status();
        if response
            .content_length()
            .is_some_and(|n| n > self.max_response_bytes as u64)
        {
            return Err(self.too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ToolError::new(format!("reading the callback answer failed: {e}")))?
        {
            if bytes.len() + chunk.len() > self.max_response_bytes {
                return Err(self.too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        if status.is_redirection() {
            return Err(ToolError::new(format!(
                "callback answered HTTP {} (a redirect, which is not followed)",
                status.as_u16()
            )));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let cut = floor_char_boundary(&text, ERROR_QUOTE_BYTES);
            return Err(ToolError::new(format!(
                "callback answered HTTP {}: {}",
                status.as_u16(),
                &text[..cut]
            )));
        }
        read_answer(&bytes)
    }

    fn too_large(&self) -> ToolError {
        ToolError::new(format!(
            "callback answer is larger than the {} byte limit",
            self.max_response_bytes
        ))
    }
}

/// An answer body → output and content, or the error the envelope reports.
fn read_answer(bytes: &[u8]) -> Reply {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(Value::String(String::from_utf8_lossy(bytes).into_owned()).into());
    };
    let Value::Object(mut map) = value else {
        return Ok(value.into());
    };
    if !["output", "is_error", "content"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return Ok(Value::Object(map).into());
    }
    let output = map.remove("output").unwrap_or(Value::Null);
    let content = match map.remove("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => (items.into_iter().enumerate())
            .map(|(i, item)| {
                serde_json::from_value::<Part>(item)
                    .map_err(|e| ToolError::new(format!("the callback's answer content[{i}]: {e}")))
            })
            .collect::<Result<Vec<Part>, ToolError>>()?,
        Some(_) => {
            return Err(ToolError::new(
                "the callback's answer content is not a list of parts",
            ));
        }
    };
    let is_error = map.get("is_error").and_then(Value::as_bool) == Some(true);
    if !is_error {
        return Ok(ToolReply::new(output).with_content(content));
    }
    let message = match map.get("error") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Null) | None => "the callback reported an error".to_owned(),
        Some(other) => other.to_string(),
    };
    Err(ToolError::new(message)
        .with_output(output)
        .with_content(content))
}

/// One client for every callback: no proxy (a proxy would carry the request off the machine),
/// no redirects, `localhost` pinned to loopback, no pooled connections (a pool would tie
/// connections to the runtime that opened them).
fn http_client() -> std::result::Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<std::result::Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::tls::http_client_builder()
                .no_proxy()
                .redirect(Policy::none())
                .resolve_to_addrs(
                    "localhost",
                    &[
                        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
                        SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0),
                    ],
                )
                .connect_timeout(CONNECT_TIMEOUT)
                .pool_max_idle_per_host(0)
                .build()
                .map_err(|e| format!("cannot build the callback HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Checks that `text` is an `http`/`https` URL whose host is a loopback address or
/// `localhost`, and returns the parsed URL (send to this value, not the text).
///
/// The host is judged after parsing, so `http://2130706433/` (127.0.0.1) passes while
/// `http://0x08080808/` (8.8.8.8) does not; `http://127.0.0.1@evil.com/` (userinfo) and
/// `http://[::ffff:8.8.8.8]/` are refused; `[::ffff:127.0.0.1]` is loopback.
pub(crate) fn check_callback_url(text: &str) -> Result<Url> {
    let refuse = |why: String| Error::input("callback_url", format!("{text:?}: {why}"));
    let url = Url::parse(text).map_err(|e| refuse(format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse(format!(
            "scheme {:?} is not allowed; use http or https",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "a user name or password in the URL is not allowed".to_owned(),
        ));
    }
    // The parser has already normalized the host: IPv4 in any spelling is dotted decimal and
    // IPv6 is bracketed, so anything that does not parse as an address is a domain name.
    let host = url.host_str().unwrap_or_default();
    if host.is_empty() {
        return Err(refuse("the URL has no host".to_owned()));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) if host == "localhost" => true,
        Err(_) => {
            return Err(refuse(format!(
                "host {host:?} is a domain name; only loopback targets are allowed \
                 (127.0.0.0/8, ::1, localhost)"
            )));
        }
    };
    if !loopback {
        return Err(refuse(format!(
            "host {host} is not a loopback address; only 127.0.0.0/8, ::1 and localhost are \
             allowed"
        )));
    }
    if url.port() == Some(0) {
        return Err(refuse("port 0 is not a port one can connect to".to_owned()));
    }
    Ok(url)
}

/// `output` values of envelopes, shared with tests.
#[cfg(test)]
fn answer(body: &str) -> ToolOutput {
    read_answer(body.as_bytes()).map(|reply| reply.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_pass() {
        for url in [
            "http://127.0.0.1:9000/cb",
            "http://localhost:9000/cb",
            "http://LOCALHOST/cb",
            "http://[::1]:9000/cb",
            "http://127.0.0.5/cb",
            "https://localhost/cb",
            "http://2130706433/cb",
            "http://0x7f000001/cb",
            "http://0177.0.0.1/cb",
            "http://127.1/cb",
            "http://[::ffff:127.0.0.1]/cb",
            "http://[::ffff:7f00:1]/cb",
        ] {
            assert!(check_callback_url(url).is_ok(), "{url}");
        }
    }

    #[test]
    fn other_urls_are_refused() {
        for url in [
            "http://8.8.8.8/cb",
            "http://192.168.1.5/cb",
            "http://10.0.0.1/cb",
            "http://0.0.0.0/cb",
            "http://[::]/cb",
            "http://example.com/cb",
            "http://localhost.example.com/cb",
            "http://127.0.0.1.nip.io/cb",
            "http://localhost./cb",
            "ftp://127.0.0.1/cb",
            "file:///etc/passwd",
            "http:///cb",
            "http://[2001:db8::1]/cb",
            "http://134744072/cb",
            "http://0x08080808/cb",
            "http://010.010.010.010/cb",
            "http://[::ffff:8.8.8.8]/cb",
            "http://[::127.0.0.1]/cb",
            "http://127.0.0.1@evil.com/cb",
            "http://user:pw@127.0.0.1/cb",
            "http://evil.com#@127.0.0.1/cb",
            "http://127.0.0.1:0/cb",
            "http://127.0.0.1:abc/cb",
            "not a url",
        ] {
            match check_callback_url(url) {
                Err(Error::Input { path, message }) => {
                    assert_eq!(path, "callback_url", "{url}: {message}")
                }
                other => panic!("{url} should be refused, got {other:?}"),
            }
        }
    }

    #[test]
    fn answers() {
        assert_eq!(answer(r#"{"output": {"t": 1}}"#), Ok(json!({"t": 1})));
        assert_eq!(answer(r#"{"output": 5, "is_error": false}"#), Ok(json!(5)));
        assert_eq!(answer(r#"{"temp": 3}"#), Ok(json!({"temp": 3})));
        assert_eq!(answer("[1, 2]"), Ok(json!([1, 2])));
        assert_eq!(answer("plain text"), Ok(json!("plain text")));
        let err = answer(r#"{"is_error": true, "error": "no such city", "output": {"q": "x"}}"#)
            .unwrap_err();
        assert_eq!(err.message(), "no such city");
        assert_eq!(err.output(), &json!({"q": "x"}));
        let err = answer(r#"{"is_error": true}"#).unwrap_err();
        assert_eq!(err.message(), "the callback reported an error");
        // An error keeps the parts the plugin sent beside its message.
        let body = r#"{"is_error": true, "error": "no chart",
                       "content": [{"type": "text", "text": "the axes were empty"}]}"#;
        let err = answer(body).unwrap_err();
        assert_eq!(err.content(), [Part::text("the axes were empty")]);
    }
}
