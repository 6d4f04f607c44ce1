//! What the server saw happen: the recent tool calls, per-tool call statistics, and a feed of
//! changes for the live page (`GET /`, `GET /api/calls`, `GET /api/events`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::ledger::{now_ms, rfc3339};
use crate::tools::Progress;
use crate::types::{ToolCall, ToolResult};

/// How many recent calls are kept for the page.
pub(crate) const RECENT_CALLS: usize = 200;

/// How much of a call's arguments, output or error the log keeps (the model got all of it).
const PREVIEW_BYTES: usize = 4096;

/// A change the page hears about.
#[derive(Debug, Clone)]
pub(crate) enum LiveEvent {
    /// The registrations changed; the page reads `/api/tools` again.
    Tools,
    /// A call started or finished (its record, as JSON).
    Call(Value),
}

/// Statistics of one tool in one role.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Stats {
    pub calls: u64,
    pub errors: u64,
    pub last_called_at_ms: Option<u64>,
    pub last_answered_at_ms: Option<u64>,
    pub last_latency_ms: Option<u64>,
    pub last_error: Option<(u64, String)>,
}

impl Stats {
    /// The fields `GET /api/tools` adds to each tool.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "calls": self.calls,
            "errors": self.errors,
            "last_called_at": self.last_called_at_ms.map(rfc3339),
            "last_answered_at": self.last_answered_at_ms.map(rfc3339),
            "last_latency_ms": self.last_latency_ms,
            "last_error": self.last_error.as_ref().map(|(at, message)| {
                json!({"at": rfc3339(*at), "message": message})
            }),
        })
    }
}

struct Record {
    id: u64,
    role: String,
    call_id: String,
    name: String,
    source: Option<String>,
    arguments: String,
    started_at_ms: u64,
    started: Instant,
    finished_at_ms: Option<u64>,
    latency_ms: Option<u64>,
    outcome: Option<ToolResult>,
    /// The latest progress the running call reported.
    progress: Option<Progress>,
    /// The call's summary for the people waiting.
    summary: Option<String>,
}

impl Record {
    fn to_json(&self) -> Value {
        let (status, output, error) = match &self.outcome {
            None => ("running", Value::Null, Value::Null),
            Some(r) => (
                if r.is_error { "error" } else { "ok" },
                Value::String(preview(&match &r.output {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })),
                r.error
                    .as_deref()
                    .map_or(Value::Null, |e| Value::String(preview(e))),
            ),
        };
        json!({
            "id": self.id,
            "role": self.role,
            "call_id": self.call_id,
            "name": self.name,
            "source": self.source,
            "arguments": self.arguments,
            "status": status,
            "output": output,
            "error": error,
            "started_at": rfc3339(self.started_at_ms),
            "finished_at": self.finished_at_ms.map(rfc3339),
            "latency_ms": self.latency_ms,
            "progress": self.progress,
            "summary": self.summary,
        })
    }
}

fn preview(text: &str) -> String {
    if text.len() <= PREVIEW_BYTES {
        return text.to_owned();
    }
    let mut cut = PREVIEW_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

#[derive(Default)]
struct Inner {
    calls: VecDeque<Record>,
    next_id: u64,
    stats: HashMap<(String, String), Stats>,
}

/// The log, the statistics and the feed, shared by every request.
pub(crate) struct Live {
    inner: Mutex<Inner>,
    feed: broadcast::Sender<LiveEvent>,
}

impl Live {
    pub(super) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            feed: broadcast::channel(256).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver of every later event.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.feed.subscribe()
    }

    /// Tells the page the registrations changed.
    pub(super) fn tools_changed(&self) {
        let _ = self.feed.send(LiveEvent::Tools);
    }

    /// Records a call starting; returns its log id.
    pub(super) fn call_started(&self, role: &str, call: &ToolCall, source: Option<String>) -> u64 {
        let now = now_ms();
        let (id, json) = {
            let mut inner = self.lock();
            inner.next_id += 1;
            let record = Record {
                id: inner.next_id,
                role: role.to_owned(),
                call_id: call.id.clone(),
                name: call.name.clone(),
                source,
                arguments: preview(&call.raw_arguments),
                started_at_ms: now,
                started: Instant::now(),
                finished_at_ms: None,
                latency_ms: None,
                outcome: None,
                progress: None,
                summary: None,
            };
            let json = record.to_json();
            if inner.calls.len() == RECENT_CALLS {
                inner.calls.pop_front();
            }
            let id = record.id;
            inner.calls.push_back(record);
            (id, json)
        };
        let _ = self.feed.send(LiveEvent::Call(json));
        id
    }

    /// Records a call's result; `registered` says whether the tool is still registered in the
    /// role (statistics are kept for registered tools only, so a model inventing names cannot
    /// grow them).
    pub(super) fn call_finished(&self, role: &str, id: u64, result: &ToolResult, registered: bool) {
        let now = now_ms();
        let json = {
            let mut inner = self.lock();
            let mut latency = None;
            let mut json = None;
            if let Some(record) = inner.calls.iter_mut().rev().find(|r| r.id == id) {
                let ms = u64::try_from(record.started.elapsed().as_millis()).unwrap_or(u64::MAX);
                record.finished_at_ms = Some(now);
                record.latency_ms = Some(ms);
                record.outcome = Some(result.clone());
                latency = Some(ms);
                json = Some(record.to_json());
            }
            if registered {
                let stats = inner
                    .stats
                    .entry((role.to_owned(), result.name.clone()))
                    .or_default();
                stats.calls += 1;
                stats.last_called_at_ms = Some(now);
                stats.last_latency_ms = latency;
                if result.is_error {
                    stats.errors += 1;
                    let message = result.error.clone().unwrap_or_default();
                    stats.last_error = Some((now, preview(&message)));
                } else {
                    stats.last_answered_at_ms = Some(now);
                }
            }
            json
        };
        if let Some(json) = json {
            let _ = self.feed.send(LiveEvent::Call(json));
        }
    }

    /// Records the latest progress of a running call.
    pub(super) fn call_progress(&self, id: u64, progress: Progress) {
        self.update(id, |record| record.progress = Some(progress));
    }

    /// Records the summary of a running call.
    pub(super) fn call_summary(&self, id: u64, summary: &str) {
        self.update(id, |record| record.summary = Some(summary.to_owned()));
    }

    /// Changes a running call's record and tells the page; a finished or forgotten call is
    /// left alone (a late report must not turn a result back into "running").
    fn update(&self, id: u64, change: impl FnOnce(&mut Record)) {
        let json = {
            let mut inner = self.lock();
            let record = inner
                .calls
                .iter_mut()
                .rev()
                .find(|r| r.id == id && r.outcome.is_none());
            record.map(|record| {
                change(record);
                record.to_json()
            })
        };
        if let Some(json) = json {
            let _ = self.feed.send(LiveEvent::Call(json));
        }
    }

    /// The statistics of the role's tools that have been called, by tool name (one lock for a
    /// whole listing; tools never called have none).
    pub(super) fn role_stats(&self, role: &str) -> HashMap<String, Stats> {
        self.lock()
            .stats
            .iter()
            .filter(|((r, _), _)| r == role)
            .map(|((_, name), stats)| (name.clone(), stats.clone()))
            .collect()
    }

    /// Drops the statistics of tools no longer registered.
    pub(super) fn retain_stats(&self, keep: impl Fn(&str, &str) -> bool) {
        self.lock().stats.retain(|(role, name), _| keep(role, name));
    }

    /// The recent calls, newest first.
    pub(super) fn recent(&self) -> Vec<Value> {
        self.lock()
            .calls
            .iter()
            .rev()
            .map(Record::to_json)
            .collect()
    }
}

/// The live page.
pub(crate) const PAGE: &str = include_str!("page.html");

/// The placeholder in [`PAGE`] replaced by the state when the page is served.
pub(crate) const INITIAL_STATE: &str = "/*INITIAL_STATE*/null";

/// JSON safe inside a `<script>` element: `<`, `>`, `&` and the two JavaScript line
/// separators are escaped, so no text from a plugin (a tool name, a result) can close the
/// element or start markup.
pub(crate) fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_logged_and_counted() {
        let live = Live::new();
        let mut feed = live.subscribe();
        let call = ToolCall::new("c1", "get_weather", r#"{"city":"Paris"}"#);
        let id = live.call_started("default", &call, Some("plugin:x".into()));
        live.call_finished("default", id, &ToolResult::ok(&call, json!({"t": 1})), true);
        let call2 = ToolCall::new("c2", "get_weather", "{}");
        let id2 = live.call_started("default", &call2, None);
        live.call_finished("default", id2, &ToolResult::error(&call2, "boom"), true);
        let recent = live.recent();
        assert_eq!(recent.len(), 2);
        assert_eq!(recent[0]["status"], "error");
        assert_eq!(recent[1]["output"], r#"{"t":1}"#);
        assert_eq!(recent[1]["source"], "plugin:x");
        let stats = live.role_stats("default").remove("get_weather").unwrap();
        assert_eq!((stats.calls, stats.errors), (2, 1));
        assert_eq!(stats.last_error.unwrap().1, "boom");
        assert!(stats.last_answered_at_ms.is_some());
        let mut events = 0;
        while feed.try_recv().is_ok() {
            events += 1;
        }
        assert_eq!(events, 4);
        live.call_finished("default", 99, &ToolResult::error(&call, "x"), false);
        assert!(!live.role_stats("default").contains_key("invented"));
    }

    #[test]
    fn script_json_cannot_close_the_script() {
        let v = json!({"name": "</script><img src=x onerror=alert(1)>&\u{2028}"});
        let text = script_json(&v);
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        assert!(PAGE.contains(INITIAL_STATE));
    }

    #[test]
    fn the_log_is_bounded() {
        let live = Live::new();
        let call = ToolCall::new("c", "t", "x".repeat(10_000));
        for _ in 0..RECENT_CALLS + 5 {
            live.call_started("r", &call, None);
        }
        let recent = live.recent();
        assert_eq!(recent.len(), RECENT_CALLS);
        assert!(recent[0]["arguments"].as_str().unwrap().len() < 4200);
    }
}
