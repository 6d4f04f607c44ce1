//! Fixture conformance: run case folders (the repository's or a user's recordings) through a
//! provider and compare with their goldens.
//!
//! The case format is described in [`crate::fixture`].

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
pub use crate::fixture::{
    CANONICAL_CASES, Meta, case_provider, decode_body, error_json, golden_json, load_meta,
};
use crate::provider::{HttpRequest, Provider, ProviderKind};
use crate::providers::provider_for_base_url;
use crate::types::{ChatRequest, Message, ToolDefinition};

pub mod realtime;

/// The names a captured stream may have: Server-Sent Events, newline-delimited JSON, or
/// binary event-stream frames (Bedrock).
pub const STREAM_FILES: [&str; 3] = ["response.sse", "response.ndjson", "response.eventstream"];

/// One comparison's result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The output matches the golden.
    Pass,
    /// The output differs, or the case could not run; says where.
    Fail(String),
}

/// One check of a case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Check {
    /// `meta`, `encode`, `decode` or `schema`.
    pub name: &'static str,
    /// What happened.
    pub outcome: Outcome,
}

/// The checks of one case folder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CaseReport {
    /// The provider the case ran against, when it could be determined.
    pub provider: Option<ProviderKind>,
    /// The realtime dialect, for a realtime case (`provider` is then `None`).
    pub realtime: Option<crate::realtime::RealtimeKind>,
    /// The folder name.
    pub case: String,
    /// The folder.
    pub path: PathBuf,
    /// The checks run.
    pub checks: Vec<Check>,
}

impl CaseReport {
    /// Whether every check passed (and there was at least one besides `meta`).
    pub fn passed(&self) -> bool {
        self.checks.iter().any(|c| c.name != "meta")
            && self.checks.iter().all(|c| c.outcome == Outcome::Pass)
    }

    /// The failures, one line each.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .checks
            .iter()
            .filter_map(|c| match &c.outcome {
                Outcome::Fail(why) => Some(format!("{}: {why}", c.name)),
                Outcome::Pass => None,
            })
            .collect();
        if !self.checks.iter().any(|c| c.name != "meta") {
            out.push("no input files (request.json, response.*, schema.json)".into());
        }
        out
    }
}

impl fmt::Display for CaseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let provider = match self.realtime {
            Some(kind) => kind.name(),
            None => self.provider.map_or("?", ProviderKind::name),
        };
        write!(f, "{provider}/{}", self.case)
    }
}

/// Whether to rewrite goldens that differ (or are missing) with the current output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Compare only.
    #[default]
    Check,
    /// Write the output as the golden (review the diff before committing).
    Bless,
}

/// Runs one case folder.
pub fn run_case(dir: &Path, mode: Mode) -> CaseReport {
    let case = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut report = CaseReport {
        provider: None,
        realtime: None,
        case,
        path: dir.to_owned(),
        checks: Vec::new(),
    };
    let meta = match load_meta(dir) {
        Ok(m) => {
            report.checks.push(Check {
                name: "meta",
                outcome: Outcome::Pass,
            });
            m
        }
        Err(e) => {
            report.checks.push(Check {
                name: "meta",
                outcome: Outcome::Fail(e.to_string()),
            });
            Meta::default()
        }
    };
    if let Some(kind) = realtime::case_kind(dir, Some(&meta)) {
        return realtime::run_case(dir, kind, mode, report);
    }
    report.provider = case_provider(dir, Some(&meta));
    let Some(kind) = report.provider else {
        report.checks.push(Check {
            name: "meta",
            outcome: Outcome::Fail(
                "unknown provider: set `provider` in meta.toml or put the case below fixtures/<provider>/"
                    .into(),
            ),
        });
        return report;
    };
    let provider = match provider_for_base_url(kind, meta.base_url.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            report.checks.push(Check {
                name: "meta",
                outcome: Outcome::Fail(e.to_string()),
            });
            return report;
        }
    };
    // A stream (`response.sse`, or `response.ndjson` for newline-delimited JSON wires) or a
    // whole body (`response.json`).
    let response = STREAM_FILES
        .iter()
        .chain(["response.json"].iter())
        .map(|name| dir.join(name))
        .find(|p| p.exists());
    // Names the request mapped for the wire are mapped back when its response is decoded,
    // as the client does.
    let mut request = None;
    if dir.join("request.json").exists() {
        let stream = meta.stream.unwrap_or(
            response
                .as_ref()
                .is_some_and(|p| !p.ends_with("response.json")),
        );
        let encoded = encode_case(provider.as_ref(), &dir.join("request.json"), stream);
        let body = encoded.map(|(body, http)| {
            request = http;
            body
        });
        let outcome = check_golden(&dir.join("wire_request.json"), body, mode, Golden::Wire);
        report.checks.push(Check {
            name: "encode",
            outcome,
        });
    }
    if let Some(body_path) = response {
        let outcome = check_golden(
            &dir.join("expected.json"),
            decode_case(provider.as_ref(), &body_path, meta.status, request.as_ref()),
            mode,
            Golden::Canonical,
        );
        report.checks.push(Check {
            name: "decode",
            outcome,
        });
    }
    if dir.join("schema.json").exists() {
        let outcome = check_golden(
            &dir.join("expected_schema.json"),
            schema_case(provider.as_ref(), &dir.join("schema.json"), &meta),
            mode,
            Golden::Wire,
        );
        report.checks.push(Check {
            name: "schema",
            outcome,
        });
    }
    report
}

/// Runs every case below `dir`: a fixtures root (`<provider>/<case>/`), one provider's folder,
/// or a single case folder. `only` keeps one provider's cases.
pub fn run_dir(dir: &Path, only: Option<ProviderKind>, mode: Mode) -> Result<Vec<CaseReport>> {
    let mut reports = Vec::new();
    for case in case_dirs(dir)? {
        let report = run_case(&case, mode);
        if only.is_none() || report.provider == only {
            reports.push(report);
        }
    }
    Ok(reports)
}

/// Every case folder (a folder with `meta.toml`) at or below `dir`, up to two levels, sorted.
pub fn case_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let io = |p: &Path, e: std::io::Error| Error::input(p.display().to_string(), e.to_string());
    if dir.join("meta.toml").is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let mut out = Vec::new();
    let mut level: Vec<PathBuf> = vec![dir.to_owned()];
    for _ in 0..2 {
        let mut next = Vec::new();
        for d in level {
            let entries = std::fs::read_dir(&d).map_err(|e| io(&d, e))?;
            for entry in entries {
                let path = entry.map_err(|e| io(&d, e))?.path();
                if !path.is_dir() {
                    continue;
                }
                if path.join("meta.toml").is_file() {
                    out.push(path);
                } else {
                    next.push(path);
                }
            }
        }
        level = next;
    }
    out.sort();
    Ok(out)
}

/// Canonical cases missing from a provider's fixture folder and not listed in its `SKIP` file
/// (`<case>: <reason>` lines).
pub fn missing_canonical(provider_dir: &Path) -> Vec<String> {
    let skip = std::fs::read_to_string(provider_dir.join("SKIP")).unwrap_or_default();
    let skipped: Vec<&str> = skip
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(_, why)| !why.trim().is_empty())
        .map(|(case, _)| case.trim())
        .collect();
    CANONICAL_CASES
        .iter()
        .filter(|c| !provider_dir.join(c).join("meta.toml").is_file() && !skipped.contains(c))
        .map(|c| (*c).to_owned())
        .collect()
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read(path).map_err(|e| Error::input(path.display().to_string(), e.to_string()))?;
    serde_json::from_slice(&text).map_err(|e| {
        Error::input(
            format!("{}:{}:{}", path.display(), e.line(), e.column()),
            e.to_string(),
        )
    })
}

fn encode_case(
    provider: &dyn Provider,
    path: &Path,
    stream: bool,
) -> Result<(Value, Option<HttpRequest>)> {
    let value = read_json(path)?;
    let req: ChatRequest = serde_json::from_value(value)
        .map_err(|e| Error::input(path.display().to_string(), e.to_string()))?;
    Ok(match provider.encode(&req, stream) {
        Ok(http) => (http.body.clone(), Some(http)),
        Err(e) => (error_json(&e), None),
    })
}

fn decode_case(
    provider: &dyn Provider,
    path: &Path,
    status: Option<u16>,
    request: Option<&HttpRequest>,
) -> Result<Value> {
    let body =
        std::fs::read(path).map_err(|e| Error::input(path.display().to_string(), e.to_string()))?;
    Ok(golden_json(&decode_body(provider, request, &body, status)))
}

/// A schema case: the tool goes out the way users send it, in a request through
/// [`Provider::encode`], and the golden is the parameters schema read back from that wire body
/// (or `encode`'s error). [`Provider::encode_parameters`] (what `toolwire schema` prints) must
/// agree: the same schema, or an error too. So both paths are checked by every schema case.
fn schema_case(provider: &dyn Provider, path: &Path, meta: &Meta) -> Result<Value> {
    let parameters = read_json(path)?;
    let tool = ToolDefinition::new("schema", "")?
        .with_parameters(parameters)?
        .with_strict(meta.strict.unwrap_or(false));
    let mut request = ChatRequest::new("schema-check", vec![Message::user("schema check")]);
    request.tools = vec![tool.clone()];
    request.schema_mode = meta.schema_mode;
    let mismatch = |what: String| Error::input(path.display().to_string(), what);
    match (
        provider.encode(&request, false),
        provider.encode_parameters(&tool, meta.schema_mode),
    ) {
        (Err(sent), Err(_)) => Ok(error_json(&sent)),
        (Err(sent), Ok(_)) => Err(mismatch(format!(
            "encode refuses the tool ({sent}) but encode_parameters accepts it"
        ))),
        (Ok(_), Err(lowered)) => Err(mismatch(format!(
            "encode sends the tool but encode_parameters refuses it ({lowered})"
        ))),
        (Ok(http), Ok(lowered)) => {
            sent_parameters(&http.body, &tool.name, &lowered).ok_or_else(|| {
                mismatch(format!(
                    "the wire body does not carry the schema encode_parameters gives ({lowered})"
                ))
            })
        }
    }
}

/// The parameters schema the body sends for the tool named `name`: the entry of its
/// declaration (the object whose `name` is the tool's) identical to `expected`; `null` when
/// `expected` is `null` and the declaration sends no schema object at all.
fn sent_parameters(body: &Value, name: &str, expected: &Value) -> Option<Value> {
    let mut stack = vec![body];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if map.get("name").and_then(Value::as_str) == Some(name) {
                    if expected.is_null() && !map.values().any(Value::is_object) {
                        return Some(Value::Null);
                    }
                    // Beside the name, or wrapped in a one-key object (Bedrock's
                    // `inputSchema: {"json": …}`).
                    let unwrap = |v: &'_ Value| match v {
                        Value::Object(inner) if inner.len() == 1 => inner.values().next().cloned(),
                        _ => None,
                    };
                    if let Some(found) = map
                        .values()
                        .find(|v| identical(v, expected))
                        .cloned()
                        .or_else(|| {
                            map.values()
                                .filter_map(unwrap)
                                .find(|v| identical(v, expected))
                        })
                    {
                        return Some(found);
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    None
}

/// The canonical serialization of a golden: `serde_json`'s pretty printing (two-space indent,
/// keys in the order the value holds them) plus a final newline. Goldens are compared as these
/// bytes, so a golden whose keys are reordered (or reformatted) fails: key order is part of
/// what a wire body is.
pub fn canonical_text(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// What a golden holds, which decides how strictly it is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Golden {
    /// A wire body or schema: exact, key order included (an added field is a different body).
    Wire,
    /// Canonical JSON (a `ChatResponse`, an error): a golden written before a field was added
    /// to the canonical model still passes; every value it holds must still match
    /// ([`added_defaults_only`]).
    Canonical,
}

/// What a failure adds, so the way to accept a new output is never a guess.
const BLESS_HINT: &str =
    "if the new output is right, `toolwire conformance --bless` rewrites the golden";

pub(crate) fn check_golden(
    golden: &Path,
    actual: Result<Value>,
    mode: Mode,
    kind: Golden,
) -> Outcome {
    let actual = match actual {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(e.to_string()),
    };
    let text = canonical_text(&actual);
    let expected = match std::fs::read(golden) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Outcome::Fail(format!("{}: {e}", golden.display())),
    };
    if expected.as_deref() == Some(text.as_bytes()) {
        return Outcome::Pass;
    }
    if mode == Mode::Bless {
        return match std::fs::write(golden, text) {
            Ok(()) => Outcome::Pass,
            Err(e) => Outcome::Fail(format!("{}: {e}", golden.display())),
        };
    }
    if expected.is_none() {
        return Outcome::Fail(format!("{} is missing", golden.display()));
    }
    let expected = match read_json(golden) {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(e.to_string()),
    };
    if kind == Golden::Canonical && added_defaults_only(&expected, &actual) {
        return Outcome::Pass;
    }
    Outcome::Fail(format!(
        "{}: {} ({BLESS_HINT})",
        golden.display(),
        first_difference(&expected, &actual, "$")
    ))
}

/// Whether `actual` is `expected` plus canonical fields the golden predates: every key of
/// `expected` is in `actual` with the same value (recursively, in the same order), and every
/// key `expected` lacks is a field of the canonical model ([`CANONICAL_FIELDS`]: a golden
/// written before a field was added cannot hold it) or holds a default (`null`, `false`, `""`,
/// `[]`, `{}`). Provider data the golden lacks, and any value that differs, still fail.
pub(crate) fn added_defaults_only(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut expected_keys = e.iter();
            for (k, va) in a {
                match e.get(k) {
                    Some(_) => match expected_keys.next() {
                        Some((ke, ve)) if ke == k && added_defaults_only(ve, va) => {}
                        _ => return false,
                    },
                    None if is_default(va) || CANONICAL_FIELDS.contains(&k.as_str()) => {}
                    None => return false,
                }
            }
            expected_keys.next().is_none()
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| added_defaults_only(e, a))
        }
        _ => expected == actual,
    }
}

/// The fields of the canonical response model (`ChatResponse`, `ToolCall`, `ArgumentsError`,
/// `Usage`, and a realtime session's summary): a golden that lacks one of them was written
/// before it existed. A test keeps this list whole.
pub(crate) const CANONICAL_FIELDS: &[&str] = &[
    "text",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "raw_finish_reason",
    "usage",
    "raw_usage",
    "id",
    "name",
    "raw_arguments",
    "arguments",
    "error",
    "kind",
    "message",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
];

/// A value a field added later would have had before: absent from the golden's point of view.
fn is_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// The first place two JSON values differ, as a path and both values; key order counts.
pub(crate) fn first_difference(expected: &Value, actual: &Value, path: &str) -> String {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) if identical(va, vb) => {}
                    Some(vb) => return first_difference(va, vb, &format!("{path}.{k}")),
                    None => return format!("{path}.{k}: expected {va}, missing"),
                }
            }
            if let Some(k) = b.keys().find(|k| !a.contains_key(*k)) {
                return format!("{path}.{k}: unexpected {}", b[k]);
            }
            if a.keys().ne(b.keys()) {
                let keys = |m: &serde_json::Map<String, Value>| {
                    m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                };
                return format!(
                    "{path}: key order differs: expected [{}], got [{}]",
                    keys(a),
                    keys(b)
                );
            }
            format!(
                "{path}: same JSON, not in canonical form (pretty-printed, 2-space indent, final newline)"
            )
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                if !identical(va, vb) {
                    return first_difference(va, vb, &format!("{path}[{i}]"));
                }
            }
            if a.len() == b.len() {
                return format!(
                    "{path}: same JSON, not in canonical form (pretty-printed, 2-space indent, final newline)"
                );
            }
            format!("{path}: expected {} items, got {}", a.len(), b.len())
        }
        _ if expected == actual => format!(
            "{path}: same JSON, not in canonical form (pretty-printed, 2-space indent, final newline)"
        ),
        _ => format!("{path}: expected {expected}, got {actual}"),
    }
}

/// Equal values with their object keys in the same order.
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| identical(a, b))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::openai::OpenAi;
    use crate::types::{ChatResponse, SchemaMode};
    use serde_json::json;

    /// OpenAI, except that `encode_parameters` answers something `encode` never sends.
    #[derive(Debug)]
    struct Diverging(OpenAi);

    impl Provider for Diverging {
        fn info(&self) -> &crate::provider::ProviderInfo {
            self.0.info()
        }
        fn encode(&self, req: &ChatRequest, stream: bool) -> Result<HttpRequest> {
            self.0.encode(req, stream)
        }
        fn decode(&self, body: &[u8]) -> Result<ChatResponse> {
            self.0.decode(body)
        }
        fn decoder(&self) -> Box<dyn crate::provider::StreamDecoder> {
            self.0.decoder()
        }
        fn encode_parameters(&self, _: &ToolDefinition, _: Option<SchemaMode>) -> Result<Value> {
            Ok(json!({"type": "object"}))
        }
    }

    fn schema_file() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/openai/schema_translation/schema.json")
    }

    #[test]
    fn schema_cases_read_what_encode_sends() {
        let meta = Meta {
            strict: Some(true),
            ..Meta::default()
        };
        let sent = schema_case(&OpenAi::new(), &schema_file(), &meta).unwrap();
        assert_eq!(sent["additionalProperties"], json!(false), "strict form");
        let err = schema_case(&Diverging(OpenAi::new()), &schema_file(), &meta).unwrap_err();
        assert!(err.to_string().contains("does not carry"), "{err}");
    }

    #[test]
    fn a_golden_may_predate_canonical_fields_but_never_differ() {
        let golden = json!({"text": "hi", "tool_calls": [{"id": "c", "name": "f"}], "usage": null});
        let now = json!({"text": "hi", "tool_calls": [{"id": "c", "name": "f", "error": null}],
                         "raw_finish_reason": "stop", "usage": null});
        assert!(added_defaults_only(&golden, &now));
        let changed =
            json!({"text": "ho", "tool_calls": [{"id": "c", "name": "f"}], "usage": null});
        assert!(!added_defaults_only(&golden, &changed));
        let provider_data = json!({"text": "hi", "tool_calls": [{"id": "c", "name": "f",
                                   "thought_signature": "abc"}], "usage": null});
        assert!(
            !added_defaults_only(&golden, &provider_data),
            "provider data is compared"
        );
        let reordered =
            json!({"tool_calls": [{"id": "c", "name": "f"}], "text": "hi", "usage": null});
        assert!(
            !added_defaults_only(&golden, &reordered),
            "key order counts"
        );
        let dropped = json!({"text": "hi", "tool_calls": [{"id": "c", "name": "f"}]});
        assert!(
            !added_defaults_only(&golden, &dropped),
            "a key the golden has must stay"
        );
    }

    #[test]
    fn every_canonical_field_is_listed() {
        use crate::types::{ArgumentsError, ArgumentsErrorKind, ToolCall, Usage};
        let mut call = ToolCall::new("c", "f", "{");
        call.error = Some(ArgumentsError::new(ArgumentsErrorKind::Malformed, "m"));
        let usage = Usage::new(1, 2)
            .with_reasoning_tokens(3)
            .with_cached_input_tokens(4)
            .with_cache_creation_input_tokens(5);
        let response = ChatResponse::default()
            .with_text("t")
            .with_reasoning("r")
            .with_tool_calls([call])
            .with_raw_finish_reason("stop")
            .with_usage(usage)
            .with_raw_usage(json!({}));
        fn keys(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    for (k, v) in m {
                        out.push(k.clone());
                        keys(v, out);
                    }
                }
                Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        keys(&serde_json::to_value(&response).unwrap(), &mut all);
        for key in all {
            assert!(
                CANONICAL_FIELDS.contains(&key.as_str()),
                "{key} is not listed"
            );
        }
    }

    #[test]
    fn sent_parameters_finds_the_declaration() {
        let body = json!({"tools": [{"functionDeclarations": [
            {"name": "other", "parameters": {"type": "OBJECT"}},
            {"name": "schema", "description": "d"}
        ]}]});
        assert_eq!(
            sent_parameters(&body, "schema", &Value::Null),
            Some(Value::Null)
        );
        assert_eq!(
            sent_parameters(&body, "schema", &json!({"type": "OBJECT"})),
            None
        );
        assert_eq!(
            sent_parameters(&body, "other", &json!({"type": "OBJECT"})),
            Some(json!({"type": "OBJECT"}))
        );
    }
}
