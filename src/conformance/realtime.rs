//! Realtime fixture cases: `fixtures/<realtime name>/<case>/`.
//!
//! A case folder holds `meta.toml` (as for HTTP cases) and any of:
//!
//! - `config.json` (a canonical [`SessionConfig`]) → `wire_config.json`: the configuring
//!   events;
//! - `update.json` (`{"tools": [...], "tool_choice": ...}`) → `wire_update.json`: the event
//!   that changes tools mid-session (after `config.json`, when present);
//! - `session.jsonl` (a recorded session, see [`crate::realtime::replay`]) → `expected.jsonl` (one compact
//!   canonical response per line, what `toolwire replay` prints) and `expected.json` (the rest:
//!   calls handed out, errors, cancellations, counts);
//! - `results.json` (canonical tool results) → `wire_results.json`: the events the codec sends
//!   for them after the session (an error, such as a result for an unknown call, in the error
//!   golden form).
//!
//! `encode` checks the first, second and fourth; `decode` the third.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{CaseReport, Check, Golden, Mode, Outcome, added_defaults_only, check_golden};
use crate::error::{Error, Result};
use crate::fixture::{Meta, error_json};
use crate::realtime::replay::{parse_session, replay_into};
use crate::realtime::{RealtimeCodec, RealtimeKind, SessionConfig};
use crate::types::{ToolChoice, ToolDefinition, ToolResult};

/// The cases every realtime dialect has, or lists in `fixtures/<name>/SKIP` with a reason.
pub const REALTIME_CASES: [&str; 10] = [
    "session_configuration",
    "stream_single_call",
    "stream_parallel_calls",
    "stream_text_then_call",
    "tool_result_roundtrip",
    "cancellation",
    "error_event",
    "closed_mid_call",
    "unknown_event",
    "result_unknown_call",
];

/// The dialect of a case folder: `meta.toml`'s `provider`, else the parent folder's name.
pub fn case_kind(dir: &Path, meta: Option<&Meta>) -> Option<RealtimeKind> {
    if let Some(name) = meta.and_then(|m| m.provider.as_deref()) {
        return name.parse().ok();
    }
    dir.parent()?.file_name()?.to_str()?.parse().ok()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Update {
    #[serde(default)]
    tools: Vec<ToolDefinition>,
    #[serde(default)]
    tool_choice: Option<ToolChoice>,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::input(path.display().to_string(), e.to_string()))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            format!("{}:{}:{}", path.display(), e.line(), e.column()),
            e.to_string(),
        )
    })
}

fn events_or_error(r: Result<Vec<Value>>) -> Value {
    match r {
        Ok(events) => Value::Array(events),
        Err(e) => error_json(&e),
    }
}

/// Runs one realtime case; `report` already holds the `meta` check.
pub(crate) fn run_case(
    dir: &Path,
    kind: RealtimeKind,
    mode: Mode,
    mut report: CaseReport,
) -> CaseReport {
    report.realtime = Some(kind);
    let mut codec = RealtimeCodec::new(kind);
    let mut encode: Vec<Outcome> = Vec::new();
    if dir.join("config.json").exists() {
        let actual = read_json::<SessionConfig>(&dir.join("config.json"))
            .map(|config| events_or_error(codec.configure(&config)));
        encode.push(check_golden(
            &dir.join("wire_config.json"),
            actual,
            mode,
            Golden::Wire,
        ));
    }
    if dir.join("update.json").exists() {
        let actual = read_json::<Update>(&dir.join("update.json"))
            .map(|u| events_or_error(codec.update_tools(u.tools, u.tool_choice)));
        encode.push(check_golden(
            &dir.join("wire_update.json"),
            actual,
            mode,
            Golden::Wire,
        ));
    }
    if dir.join("session.jsonl").exists() {
        let outcome = match read(&dir.join("session.jsonl")).and_then(|b| parse_session(&b)) {
            Err(e) => Outcome::Fail(e.to_string()),
            Ok(lines) => {
                let replay = replay_into(&mut codec, &lines);
                let lines: Vec<String> = replay
                    .responses
                    .iter()
                    .map(|r| serde_json::to_string(r).unwrap_or_default())
                    .collect();
                let jsonl = check_lines(&dir.join("expected.jsonl"), &lines, mode);
                let summary = check_golden(
                    &dir.join("expected.json"),
                    Ok(replay.summary()),
                    mode,
                    Golden::Canonical,
                );
                match (jsonl, summary) {
                    (Outcome::Pass, s) => s,
                    (f, _) => f,
                }
            }
        };
        report.checks.push(Check {
            name: "decode",
            outcome,
        });
    }
    if dir.join("results.json").exists() {
        let actual = read_json::<Vec<ToolResult>>(&dir.join("results.json"))
            .map(|results| events_or_error(codec.results(&results)));
        encode.push(check_golden(
            &dir.join("wire_results.json"),
            actual,
            mode,
            Golden::Wire,
        ));
    }
    if !encode.is_empty() {
        let outcome = encode
            .into_iter()
            .find(|o| *o != Outcome::Pass)
            .unwrap_or(Outcome::Pass);
        report.checks.push(Check {
            name: "encode",
            outcome,
        });
    }
    report
}

/// Compares (or, blessing, writes) a JSON-lines golden: byte for byte, one compact response per
/// line.
fn check_lines(golden: &Path, actual: &[String], mode: Mode) -> Outcome {
    let mut text = actual.join("\n");
    text.push('\n');
    let expected = std::fs::read_to_string(golden).ok();
    if expected.as_deref() == Some(text.as_str()) {
        return Outcome::Pass;
    }
    if mode == Mode::Bless {
        return match std::fs::write(golden, text) {
            Ok(()) => Outcome::Pass,
            Err(e) => Outcome::Fail(format!("{}: {e}", golden.display())),
        };
    }
    let Some(expected) = expected else {
        return Outcome::Fail(format!("{} is missing", golden.display()));
    };
    let lines: Vec<&str> = expected.lines().collect();
    if lines.len() != actual.len() {
        return Outcome::Fail(format!(
            "{}: expected {} responses, got {}",
            golden.display(),
            lines.len(),
            actual.len()
        ));
    }
    let mut added = false;
    for (n, (e, a)) in lines.iter().zip(actual).enumerate() {
        if e == a {
            continue;
        }
        let detail = match (
            serde_json::from_str::<Value>(e),
            serde_json::from_str::<Value>(a),
        ) {
            // A line written before a canonical field was added still holds.
            (Ok(e), Ok(a)) if added_defaults_only(&e, &a) => {
                added = true;
                continue;
            }
            (Ok(e), Ok(a)) if e != a => super::first_difference(&e, &a, "$"),
            _ => "the bytes differ (spacing or key order)".to_owned(),
        };
        return Outcome::Fail(format!(
            "{}:{}: {detail} ({})",
            golden.display(),
            n + 1,
            super::BLESS_HINT
        ));
    }
    if added {
        return Outcome::Pass;
    }
    Outcome::Fail(format!("{}: differs", golden.display()))
}
