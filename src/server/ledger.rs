//! The registrations: which callback tools each role has, kept in the order they came, and the
//! JSON state file of earlier versions (read once, to import it into the store).
//!
//! Each role has one definition per name, as in N.E.K.O.: registering for every role
//! (`role: null`) writes the tool into every role, replacing what each had under that name;
//! registering for one role replaces it in that role only. Unregistering or clearing with a role
//! touches that role only.
//!
//! Changes apply in place (the registrations are never copied whole); the store
//! (`store.rs`) writes each change first.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
#[cfg(test)]
use serde_json::{Map, json};

use crate::error::{Error, Result};
use crate::tools::{Callback, Tool, ToolRegistry};
use crate::types::ToolDefinition;

/// The `format` value of a state file.
const FORMAT: &str = "toolwire-serve-state";

/// The state file version this code writes and reads.
const VERSION: u64 = 1;

/// One registered callback tool in one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub callback_url: String,
    pub source: String,
    pub timeout_seconds: f64,
    /// The role named at registration; `None` when it was registered for every role.
    pub scope: Option<String>,
    /// When it was registered, in milliseconds since the Unix epoch.
    pub registered_at_ms: u64,
    /// The entry as `GET /api/tools` lists it, written once (an entry is replaced whole,
    /// never changed in place, so it cannot go stale).
    #[serde(skip)]
    pub listed: Listed,
}

/// An entry's fields as `GET /api/tools` writes them, up to its call statistics: the JSON
/// object without its closing brace. Made once per entry, so a listing of 10,000 tools copies
/// bytes instead of writing every schema again. Derived from the entry, so never part of its
/// equality.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listed(OnceLock<Arc<str>>);

impl PartialEq for Listed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Entry {
    /// The tool the role's registry runs: a loopback callback with the entry's timeout.
    pub(super) fn tool(&self) -> Result<Tool> {
        let definition = ToolDefinition::new(self.name.as_str(), self.description.as_str())?
            .with_parameters(self.parameters.clone())?;
        let callback = Callback::new(&self.callback_url)?;
        let timeout = Duration::try_from_secs_f64(self.timeout_seconds).map_err(|e| {
            Error::input(
                "timeout_seconds",
                format!("{} is not a duration: {e}", self.timeout_seconds),
            )
        })?;
        Ok(Tool::callback(definition, callback)
            .with_source(self.source.as_str())
            .with_timeout(timeout))
    }

    /// The entry's listing (see [`Listed`]), written on first use.
    pub(super) fn listed(&self) -> &str {
        self.listed.0.get_or_init(|| {
            use serde::ser::{SerializeMap, Serializer};
            let mut out = Vec::with_capacity(256);
            let mut s = serde_json::Serializer::new(&mut out);
            let written = (|| {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("name", &self.name)?;
                map.serialize_entry("description", &self.description)?;
                map.serialize_entry("source", &self.source)?;
                map.serialize_entry("callback_url", &self.callback_url)?;
                map.serialize_entry("is_remote", &true)?;
                map.serialize_entry("role", &self.scope)?;
                map.serialize_entry("parameters", &self.parameters)?;
                map.serialize_entry("timeout_seconds", &self.timeout_seconds)?;
                map.serialize_entry("registered_at", &rfc3339(self.registered_at_ms))?;
                map.end()
            })();
            // Writing JSON into memory does not fail; should it, the listing stays valid JSON
            // and says so.
            let text = match written.map(|()| String::from_utf8(out)) {
                Ok(Ok(text)) => text,
                _ => r#"{"error":"this entry could not be written as JSON"}"#.to_owned(),
            };
            Arc::from(text.strip_suffix('}').unwrap_or(&text))
        })
    }

    /// Checks that the entry can be registered (name, schema, URL, timeout), naming the field.
    pub(super) fn check(&self) -> Result<()> {
        ToolRegistry::new().register(self.tool()?)
    }
}

/// The tools of one role.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoleTools {
    pub role: String,
    pub entries: Vec<Entry>,
}

/// Every role's registrations, plus entries of the state file for roles this server does not
/// have (kept and written back unchanged, so a config change loses nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Ledger {
    pub roles: Vec<RoleTools>,
    pub orphans: Vec<Value>,
}

/// A change to the registrations.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    Register(Entry),
    Unregister {
        name: String,
        role: Option<String>,
    },
    Clear {
        source: String,
        role: Option<String>,
    },
}

impl Op {
    /// The one role the change is for (`None`: every role).
    pub(super) fn role(&self) -> Option<&str> {
        match self {
            Self::Register(entry) => entry.scope.as_deref(),
            Self::Unregister { role, .. } | Self::Clear { role, .. } => role.as_deref(),
        }
    }
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Outcome {
    /// The roles that changed (for a registration: that now have the tool).
    pub affected: Vec<String>,
    /// How many entries were removed.
    pub removed: usize,
    /// Roles whose tool registry refused the change: `{"role", "error"}`.
    pub failed: Vec<Value>,
}

impl Ledger {
    /// An empty ledger for these roles.
    pub(super) fn new(roles: &[String]) -> Self {
        Self {
            roles: roles
                .iter()
                .map(|r| RoleTools {
                    role: r.clone(),
                    entries: Vec::new(),
                })
                .collect(),
            orphans: Vec::new(),
        }
    }

    /// The role's tools.
    #[cfg(test)]
    pub(super) fn role(&self, role: &str) -> Option<&RoleTools> {
        self.roles.iter().find(|r| r.role == role)
    }

    /// Applies a change. The caller has checked that a named role exists.
    pub(super) fn apply(&mut self, op: &Op) -> Outcome {
        let mut outcome = Outcome::default();
        let targets =
            |role: &Option<String>, r: &RoleTools| role.as_ref().is_none_or(|x| *x == r.role);
        match op {
            Op::Register(entry) => {
                // Written once here, so every role's copy shares it.
                entry.listed();
                for r in &mut self.roles {
                    if !targets(&entry.scope, r) {
                        continue;
                    }
                    match r.entries.iter_mut().find(|e| e.name == entry.name) {
                        Some(slot) => *slot = entry.clone(),
                        None => r.entries.push(entry.clone()),
                    }
                    outcome.affected.push(r.role.clone());
                }
            }
            Op::Unregister { name, role } => {
                for r in &mut self.roles {
                    if !targets(role, r) {
                        continue;
                    }
                    let before = r.entries.len();
                    r.entries.retain(|e| e.name != *name);
                    if r.entries.len() != before {
                        outcome.removed += before - r.entries.len();
                        outcome.affected.push(r.role.clone());
                    }
                }
            }
            Op::Clear { source, role } => {
                for r in &mut self.roles {
                    if !targets(role, r) {
                        continue;
                    }
                    let before = r.entries.len();
                    r.entries.retain(|e| e.source != *source);
                    if r.entries.len() != before {
                        outcome.removed += before - r.entries.len();
                        outcome.affected.push(r.role.clone());
                    }
                }
            }
        }
        outcome
    }

    /// The JSON state file of earlier versions.
    #[cfg(test)]
    pub(super) fn to_json(&self) -> Value {
        let mut tools: Vec<Value> = Vec::new();
        for r in &self.roles {
            for e in &r.entries {
                let mut item = Map::new();
                item.insert("role".into(), Value::String(r.role.clone()));
                if let Ok(Value::Object(fields)) = serde_json::to_value(e) {
                    item.extend(fields);
                }
                tools.push(Value::Object(item));
            }
        }
        tools.extend(self.orphans.iter().cloned());
        json!({"format": FORMAT, "version": VERSION, "tools": tools})
    }

    /// Reads a state file's JSON into a ledger for `roles`. Entries of other roles are kept as
    /// orphans; an entry that does not check out is an error naming its index and field.
    pub(super) fn from_json(roles: &[String], value: Value) -> std::result::Result<Self, String> {
        let Value::Object(mut doc) = value else {
            return Err("the state is not a JSON object".to_owned());
        };
        if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(format!(
                "\"format\" is not {FORMAT:?}: not a toolwire state file"
            ));
        }
        match doc.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            other => {
                return Err(format!(
                    "\"version\" is {}; this toolwire reads version {VERSION}",
                    other.map_or("missing".to_owned(), |v| v.to_string())
                ));
            }
        }
        let Some(Value::Array(tools)) = doc.remove("tools") else {
            return Err("\"tools\" is missing or not an array".to_owned());
        };
        let mut ledger = Self::new(roles);
        for (i, item) in tools.into_iter().enumerate() {
            let Value::Object(mut fields) = item else {
                return Err(format!("tools[{i}] is not an object"));
            };
            let Some(Value::String(role)) = fields.remove("role") else {
                return Err(format!("tools[{i}].role is missing or not a string"));
            };
            let entry: Entry = serde_json::from_value(Value::Object(fields.clone()))
                .map_err(|e| format!("tools[{i}]: {e}"))?;
            entry.check().map_err(|e| match e {
                Error::Input { path, message } => format!("tools[{i}].{path}: {message}"),
                other => format!("tools[{i}]: {other}"),
            })?;
            match ledger.roles.iter_mut().find(|r| r.role == role) {
                Some(r) => match r.entries.iter_mut().find(|e| e.name == entry.name) {
                    Some(slot) => *slot = entry,
                    None => r.entries.push(entry),
                },
                None => {
                    fields.insert("role".into(), Value::String(role));
                    ledger.orphans.push(Value::Object(fields));
                }
            }
        }
        Ok(ledger)
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a millisecond timestamp (a state file edited by hand may hold
/// any number; one the clock cannot represent is shown as out of range, never a panic).
pub(crate) fn rfc3339(ms: u64) -> String {
    match UNIX_EPOCH.checked_add(Duration::from_millis(ms)) {
        Some(t) => crate::client::time::rfc3339(t),
        None => format!("(out of range: {ms} ms after 1970)"),
    }
}

/// Reads the state file; a missing file is an empty ledger. Errors name the file and reason.
pub(crate) fn load(path: &Path, roles: &[String]) -> Result<Ledger> {
    let at = || path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ledger::new(roles)),
        Err(e) => {
            return Err(Error::input(
                at(),
                format!("cannot read the state file: {e}"),
            ));
        }
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            format!("{}:{}", at(), e.line()),
            format!("the state file is not valid JSON: {e}"),
        )
    })?;
    Ledger::from_json(roles, value).map_err(|m| Error::input(at(), m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, scope: Option<&str>, source: &str) -> Entry {
        Entry {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {}}),
            callback_url: "http://127.0.0.1:9/cb".into(),
            source: source.into(),
            timeout_seconds: 30.0,
            scope: scope.map(str::to_owned),
            registered_at_ms: 1,
            listed: Listed::default(),
        }
    }

    fn names(l: &Ledger, role: &str) -> Vec<String> {
        l.role(role)
            .unwrap()
            .entries
            .iter()
            .map(|e| format!("{}@{}", e.name, e.scope.as_deref().unwrap_or("*")))
            .collect()
    }

    #[test]
    fn overwrite_rules_follow_one_definition_per_name() {
        let roles = ["a".to_owned(), "b".to_owned()];
        let mut l = Ledger::new(&roles);
        let out = l.apply(&Op::Register(entry("t", None, "s")));
        assert_eq!(out.affected, ["a", "b"]);
        l.apply(&Op::Register(entry("t", Some("a"), "s")));
        assert_eq!(names(&l, "a"), ["t@a"]);
        assert_eq!(names(&l, "b"), ["t@*"]);
        l.apply(&Op::Register(entry("t", None, "s")));
        assert_eq!(names(&l, "a"), ["t@*"]);
        let out = l.apply(&Op::Unregister {
            name: "t".into(),
            role: Some("b".into()),
        });
        assert_eq!((out.affected, out.removed), (vec!["b".to_owned()], 1));
        assert_eq!(names(&l, "a"), ["t@*"]);
        assert!(names(&l, "b").is_empty());
        l.apply(&Op::Register(entry("u", None, "other")));
        let out = l.apply(&Op::Clear {
            source: "s".into(),
            role: None,
        });
        assert_eq!((out.affected, out.removed), (vec!["a".to_owned()], 1));
        assert_eq!(names(&l, "a"), ["u@*"]);
    }

    #[test]
    fn state_round_trips_and_keeps_other_roles() {
        let mut l = Ledger::new(&["a".to_owned(), "gone".to_owned()]);
        l.apply(&Op::Register(entry("t", None, "s")));
        let json = l.to_json();
        let back = Ledger::from_json(&["a".to_owned(), "gone".to_owned()], json.clone()).unwrap();
        assert_eq!(back, l);
        let fewer = Ledger::from_json(&["a".to_owned()], json).unwrap();
        assert_eq!(fewer.orphans.len(), 1);
        assert_eq!(fewer.to_json()["tools"][1]["role"], "gone");
    }

    #[test]
    fn any_timestamp_formats() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_735_732_800_123), "2025-01-01T12:00:00Z");
        let _ = rfc3339(u64::MAX);
    }

    #[test]
    fn bad_state_names_the_entry() {
        let roles = ["a".to_owned()];
        let mut doc = Ledger::new(&roles).to_json();
        assert!(Ledger::from_json(&roles, doc.clone()).is_ok());
        let mut bad = serde_json::to_value(entry("t", None, "s")).unwrap();
        bad["role"] = json!("a");
        bad["callback_url"] = json!("http://8.8.8.8/cb");
        doc["tools"] = json!([bad]);
        let e = Ledger::from_json(&roles, doc.clone()).unwrap_err();
        assert!(e.starts_with("tools[0].callback_url:"), "{e}");
        doc["version"] = json!(9);
        let e = Ledger::from_json(&roles, doc).unwrap_err();
        assert!(e.contains("version"), "{e}");
        let e = Ledger::from_json(&roles, json!([])).unwrap_err();
        assert!(e.contains("not a JSON object"), "{e}");
    }
}
