//! Recording live exchanges as fixture case folders (DESIGN.md section 5).
//!
//! A case folder holds the canonical request (`request.json`), its encoding
//! (`wire_request.json`), the provider's bytes exactly as received (`response.sse` or
//! `response.json`), `meta.toml` and the golden `expected.json`: the bytes decoded again with no
//! IO, exactly as [`crate::conformance`] decodes them (tool names as on the wire), so the folder
//! passes `toolwire conformance` as is. The auth header is never written, and
//! the key is replaced wherever a server echoed it.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use serde_json::Value;

use super::Inner;
use crate::conformance::{decode_body, error_json, golden_json};
use crate::error::{Error, Result};
use crate::provider::{HttpRequest, Provider};
use crate::replay::is_json_body;
use crate::types::ChatRequest;

/// Writes one case folder per exchange below `dir/<provider>/`.
#[derive(Debug)]
pub(crate) struct Recorder {
    dir: PathBuf,
    seq: AtomicUsize,
}

/// One exchange, as it happened.
#[derive(Debug)]
pub(crate) struct Recording {
    request: Value,
    request_value: Option<ChatRequest>,
    wire: Value,
    model: String,
    stream: bool,
    status: u16,
    /// The response bytes exactly as received.
    pub bytes: Vec<u8>,
}

impl Recording {
    pub(crate) fn new(
        req: &ChatRequest,
        wire: &HttpRequest,
        stream: bool,
        status: u16,
        bytes: Vec<u8>,
    ) -> Self {
        Self {
            request: serde_json::to_value(req).unwrap_or(Value::Null),
            request_value: Some(req.clone()),
            wire: wire.body.clone(),
            model: req.model.clone(),
            stream,
            status,
            bytes,
        }
    }
}

impl Recorder {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            seq: AtomicUsize::new(1),
        }
    }

    /// Writes the case folder and returns its path.
    pub(crate) fn write(&self, inner: &Inner, rec: &Recording) -> Result<PathBuf> {
        let provider = inner.provider.as_ref();
        let parent = self.dir.join(provider.info().kind.name());
        fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        let now = SystemTime::now();
        let case = loop {
            let n = self.seq.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("recorded_{}_{n}", super::time::stamp(now)));
            match fs::create_dir(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_error(&path, e)),
            }
        };
        let scrub = |text: String| match inner.key() {
            Some(key) if text.contains(key) => text.replace(key, "<redacted>"),
            _ => text,
        };
        let bytes = match inner.key() {
            Some(key) => replace_bytes(&rec.bytes, key.as_bytes(), b"<redacted>"),
            None => rec.bytes.clone(),
        };
        let response_file = if is_json_body(&bytes) {
            "response.json"
        } else {
            "response.sse"
        };
        // The goldens are what `toolwire conformance` computes for this provider name, so the
        // folder passes as is. A client with another dialect (an OpenAI-compatible base URL)
        // may have sent a different body; that one is kept as `sent_request.json`.
        let reference = crate::providers::provider_for(provider.info().kind).ok();
        let golden_provider = reference.as_deref().unwrap_or(provider);
        let expected = golden_json(&decode_body(
            golden_provider,
            None,
            &bytes,
            Some(rec.status),
        ));
        let wire = match &rec.request_value {
            Some(req) => golden_provider
                .encode(req, rec.stream)
                .map_or_else(|e| error_json(&e), |w| w.body),
            None => rec.wire.clone(),
        };
        let mut files: Vec<(&str, Vec<u8>)> = vec![
            ("request.json", scrub(pretty(&rec.request)).into_bytes()),
            ("wire_request.json", scrub(pretty(&wire)).into_bytes()),
            (response_file, bytes),
            ("expected.json", scrub(pretty(&expected)).into_bytes()),
            ("meta.toml", scrub(meta(provider, rec, now)).into_bytes()),
        ];
        if wire != rec.wire {
            files.push(("sent_request.json", scrub(pretty(&rec.wire)).into_bytes()));
        }
        for (name, content) in files {
            let path = case.join(name);
            fs::write(&path, content).map_err(|e| io_error(&path, e))?;
        }
        Ok(case)
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::input(path.display().to_string(), format!("cannot record: {e}"))
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    s.push('\n');
    s
}

fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

fn meta(provider: &dyn Provider, rec: &Recording, now: SystemTime) -> String {
    let kind = provider.info().kind;
    let date = super::time::date(now);
    let how = if rec.stream {
        "streamed"
    } else {
        "non-streamed"
    };
    let model = if rec.model.is_empty() {
        "unknown-model"
    } else {
        &rec.model
    };
    format!(
        "description = {}\nsource = {}\nprovider = {}\nmodel = {}\nstream = {}\nstatus = {}\nrecorded = {}\n",
        toml_str(&format!(
            "Live {how} exchange with {kind} recorded by toolwire"
        )),
        toml_str(&format!("recorded {date} {model}")),
        toml_str(kind.name()),
        toml_str(&rec.model),
        rec.stream,
        rec.status,
        toml_str(&super::time::rfc3339(now)),
    )
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_escape() {
        assert_eq!(toml_str("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
    }

    #[test]
    fn key_is_replaced_in_bytes() {
        assert_eq!(
            replace_bytes(b"xx sk-1 yy sk-1", b"sk-1", b"<r>"),
            b"xx <r> yy <r>"
        );
    }
}
