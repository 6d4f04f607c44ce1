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
use crate::types::{ChatRequest, ToolDefinition};

/// One comparison's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The output matches the golden.
    Pass,
    /// The output differs, or the case could not run; says where.
    Fail(String),
}

/// One check of a case.
#[derive(Debug, Clone)]
pub struct Check {
    /// `meta`, `encode`, `decode` or `schema`.
    pub name: &'static str,
    /// What happened.
    pub outcome: Outcome,
}

/// The checks of one case folder.
#[derive(Debug, Clone)]
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
    if let Some(kind) = crate::realtime::fixture::case_kind(dir, Some(&meta)) {
        return crate::realtime::fixture::run_case(dir, kind, mode, report);
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
    let sse = dir.join("response.sse");
    let json_body = dir.join("response.json");
    let response = if sse.exists() {
        Some(sse)
    } else if json_body.exists() {
        Some(json_body)
    } else {
        None
    };
    // Names the request mapped for the wire are mapped back when its response is decoded,
    // as the client does.
    let mut request = None;
    if dir.join("request.json").exists() {
        let stream = meta
            .stream
            .unwrap_or(response.as_ref() == Some(&dir.join("response.sse")));
        let encoded = encode_case(provider.as_ref(), &dir.join("request.json"), stream);
        let body = encoded.map(|(body, http)| {
            request = http;
            body
        });
        let outcome = check_golden(&dir.join("wire_request.json"), body, mode);
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

fn schema_case(provider: &dyn Provider, path: &Path, meta: &Meta) -> Result<Value> {
    let parameters = read_json(path)?;
    let tool = ToolDefinition::new("schema", "")?
        .with_parameters(parameters)?
        .with_strict(meta.strict.unwrap_or(false));
    Ok(match provider.encode_parameters(&tool, meta.schema_mode) {
        Ok(v) => v,
        Err(e) => error_json(&e),
    })
}

pub(crate) fn check_golden(golden: &Path, actual: Result<Value>, mode: Mode) -> Outcome {
    let actual = match actual {
        Ok(v) => v,
        Err(e) => return Outcome::Fail(e.to_string()),
    };
    let expected = if golden.exists() {
        match read_json(golden) {
            Ok(v) => Some(v),
            Err(e) => return Outcome::Fail(e.to_string()),
        }
    } else {
        None
    };
    if expected.as_ref() == Some(&actual) {
        return Outcome::Pass;
    }
    if mode == Mode::Bless {
        let text = serde_json::to_string_pretty(&actual).unwrap_or_default() + "\n";
        return match std::fs::write(golden, text) {
            Ok(()) => Outcome::Pass,
            Err(e) => Outcome::Fail(format!("{}: {e}", golden.display())),
        };
    }
    match expected {
        None => Outcome::Fail(format!("{} is missing", golden.display())),
        Some(expected) => Outcome::Fail(format!(
            "{}: {}",
            golden.display(),
            first_difference(&expected, &actual, "$")
        )),
    }
}

/// The first place two JSON values differ, as a path and both values.
pub fn first_difference(expected: &Value, actual: &Value, path: &str) -> String {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) if va == vb => {}
                    Some(vb) => return first_difference(va, vb, &format!("{path}.{k}")),
                    None => return format!("{path}.{k}: expected {va}, missing"),
                }
            }
            if let Some(k) = b.keys().find(|k| !a.contains_key(*k)) {
                return format!("{path}.{k}: unexpected {}", b[k]);
            }
            format!("{path}: key order differs")
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                if va != vb {
                    return first_difference(va, vb, &format!("{path}[{i}]"));
                }
            }
            format!("{path}: expected {} items, got {}", a.len(), b.len())
        }
        _ => format!("{path}: expected {expected}, got {actual}"),
    }
}
