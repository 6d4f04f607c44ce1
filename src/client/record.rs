//! Recording live exchanges as fixture case folders (the layout in `docs/fixtures.md`).
//!
//! A case folder holds the canonical request (`request.json`), the body sent
//! (`wire_request.json`), the provider's bytes exactly as received (`response.sse`,
//! `response.ndjson` or `response.json`), `meta.toml` and the golden `expected.json`: the
//! bytes decoded again with no IO, by the provider that sent the request and with that
//! request (its decoder hint and tool names), exactly as [`crate::conformance`] decodes them,
//! so the folder passes `toolwire conformance` as is. A server other than the provider's own
//! is written as `base_url`, which conformance uses to pick the same provider
//! ([`crate::providers::provider_for_base_url`]). The auth header is never written, and the key
//! is replaced wherever a server echoed it.
//!
//! Case folders are named `recorded_<time>_<n>` with `n` counted per client and padded to four
//! digits, so they sort in the order they were recorded
//! (`toolwire::mock::Script::from_recordings` replays them in that order).
//!
//! Recording is best effort: the folder is checked once, when the client is built
//! ([`Recorder::open`]); later failures are kept (bounded) for
//! [`super::Client::take_record_errors`] instead of replacing an exchange's outcome.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use serde_json::Value;

use super::Inner;
use crate::error::{Error, Result};
use crate::fixture::{decode_body, golden_json};
use crate::provider::{Framing, HttpRequest, Provider, ProviderKind};
use crate::replay::is_json_body;
use crate::types::ChatRequest;

/// How many write failures are kept until taken.
pub(crate) const MAX_ERRORS: usize = 16;

/// Writes one case folder per exchange below `dir/<provider>/`.
#[derive(Debug)]
pub(crate) struct Recorder {
    dir: PathBuf,
    seq: AtomicUsize,
    errors: Mutex<Vec<Error>>,
}

/// One exchange, as it happened.
#[derive(Debug)]
pub(crate) struct Recording {
    request: Value,
    /// The request as sent: its body, the names it mapped and its decoder hint.
    wire: HttpRequest,
    model: String,
    stream: bool,
    status: u16,
    /// The response bytes exactly as received.
    pub bytes: Vec<u8>,
    /// The caller stopped reading before the response ended.
    pub incomplete: bool,
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
            wire: wire.clone(),
            model: req.model.clone(),
            stream,
            status,
            bytes,
            incomplete: false,
        }
    }
}

impl Recorder {
    /// A recorder writing below `dir/<kind>/`, which is created and checked for writing now,
    /// so a folder that cannot be used is an [`Error::Input`] before anything is sent.
    pub(crate) fn open(dir: PathBuf, kind: ProviderKind) -> Result<Self> {
        let parent = dir.join(kind.name());
        fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        let probe = parent.join(format!(".toolwire-write-check-{}", std::process::id()));
        fs::write(&probe, b"").map_err(|e| io_error(&parent, e))?;
        // Only the write matters; a probe left behind is harmless (it is no case folder).
        let _ = fs::remove_file(&probe);
        Ok(Self {
            dir,
            seq: AtomicUsize::new(1),
            errors: Mutex::new(Vec::new()),
        })
    }

    /// Keeps a write failure for [`super::Client::take_record_errors`].
    pub(crate) fn keep_error(&self, e: Error) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.len() < MAX_ERRORS {
            errors.push(e);
        }
    }

    /// The failures kept so far, emptying the list.
    pub(crate) fn take_errors(&self) -> Vec<Error> {
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Writes the case folder and returns its path.
    pub(crate) fn write(&self, inner: &Inner, rec: &Recording) -> Result<PathBuf> {
        let provider = inner.provider.as_ref();
        let parent = self.dir.join(provider.info().kind.name());
        fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        let now = SystemTime::now();
        let case = loop {
            let n = self.seq.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("recorded_{}_{n:04}", super::time::stamp(now)));
            match fs::create_dir(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_error(&path, e)),
            }
        };
        let forms = inner.secrets();
        let scrub = |text: String| super::redact_text(text, forms);
        let mut bytes = rec.bytes.clone();
        for form in forms {
            bytes = replace_bytes(&bytes, form.as_bytes(), b"<redacted>");
        }
        let response_file = if rec.stream && provider.framing() == Framing::Ndjson {
            "response.ndjson"
        } else if is_json_body(&bytes) {
            "response.json"
        } else if provider.framing() == Framing::EventStream {
            "response.eventstream"
        } else {
            "response.sse"
        };
        // Decoded by the provider that sent the request, with that request: what conformance
        // computes from `request.json` and `meta.toml` (`base_url` picks the same provider).
        let expected = golden_json(&decode_body(
            provider,
            Some(&rec.wire),
            &bytes,
            Some(rec.status),
        ));
        let base_url = (!crate::providers::is_default_base_url(provider, &inner.base_url))
            .then_some(inner.base_url.as_str());
        let files: [(&str, Vec<u8>); 5] = [
            ("request.json", scrub(pretty(&rec.request)).into_bytes()),
            (
                "wire_request.json",
                scrub(pretty(&rec.wire.body)).into_bytes(),
            ),
            (response_file, bytes),
            ("expected.json", scrub(pretty(&expected)).into_bytes()),
            (
                "meta.toml",
                scrub(meta(provider, rec, base_url, now)).into_bytes(),
            ),
        ];
        for (name, content) in files {
            let path = case.join(name);
            fs::write(&path, content).map_err(|e| io_error(&path, e))?;
        }
        Ok(case)
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::input(
        path.display().to_string(),
        format!("cannot record here: {e}"),
    )
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    s.push('\n');
    s
}

/// `haystack` with every occurrence of `needle` replaced by `with` (linear: `memmem`).
fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut copied = 0;
    for at in memchr::memmem::find_iter(haystack, needle) {
        out.extend_from_slice(&haystack[copied..at]);
        out.extend_from_slice(with);
        copied = at + needle.len();
    }
    out.extend_from_slice(&haystack[copied..]);
    out
}

fn meta(
    provider: &dyn Provider,
    rec: &Recording,
    base_url: Option<&str>,
    now: SystemTime,
) -> String {
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
    let cut = if rec.incomplete {
        " (incomplete: the caller stopped reading before the response ended)"
    } else {
        ""
    };
    let mut out = format!(
        "description = {}\nsource = {}\nprovider = {}\nmodel = {}\nstream = {}\nstatus = {}\nrecorded = {}\n",
        toml_str(&format!(
            "Live {how} exchange with {kind} recorded by toolwire{cut}"
        )),
        toml_str(&format!("recorded {date} {model}")),
        toml_str(kind.name()),
        toml_str(&rec.model),
        rec.stream,
        rec.status,
        toml_str(&super::time::rfc3339(now)),
    );
    if let Some(url) = base_url {
        out.push_str(&format!("base_url = {}\n", toml_str(url)));
    }
    if rec.incomplete {
        out.push_str("incomplete = true\n");
    }
    out
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

    /// The obvious quadratic version, as the reference.
    fn replace_naive(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
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

    #[test]
    fn key_is_replaced_in_bytes() {
        assert_eq!(
            replace_bytes(b"xx sk-1 yy sk-1", b"sk-1", b"<r>"),
            b"xx <r> yy <r>"
        );
        assert_eq!(replace_bytes(b"aaaa", b"aa", b"b"), b"bb");
        assert_eq!(replace_bytes(b"aaa", b"aa", b"b"), b"ba");
        assert_eq!(replace_bytes(b"abababc", b"ababc", b"X"), b"abX");
        assert_eq!(replace_bytes(b"k", b"key", b"X"), b"k");
        assert_eq!(replace_bytes(b"key", b"", b"X"), b"key");
        assert_eq!(
            replace_bytes(b"\xff\xfekey\xff", b"key", b"X"),
            b"\xff\xfeX\xff"
        );
    }

    #[test]
    fn replacement_agrees_with_the_naive_search() {
        // Small alphabets make borders and near-misses common.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u8
        };
        for _ in 0..2000 {
            let hay: Vec<u8> = (0..next(40)).map(|_| b'a' + next(3)).collect();
            let needle: Vec<u8> = (0..1 + next(5)).map(|_| b'a' + next(3)).collect();
            assert_eq!(
                replace_bytes(&hay, &needle, b"<>"),
                replace_naive(&hay, &needle, b"<>"),
                "{:?} in {:?}",
                String::from_utf8_lossy(&needle),
                String::from_utf8_lossy(&hay)
            );
        }
    }

    #[test]
    fn a_long_near_miss_body_is_linear() {
        // 4 MiB of `a` searched for `aaaa…b`: the naive search does ~n·k comparisons here.
        let hay = vec![b'a'; 4 << 20];
        let mut needle = vec![b'a'; 4096];
        needle.push(b'b');
        assert_eq!(replace_bytes(&hay, &needle, b"x"), hay);
    }
}
