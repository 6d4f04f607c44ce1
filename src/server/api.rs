//! The registration API: `POST /api/tools/register`, `/unregister`, `/clear` and
//! `GET /api/tools`, bodies as N.E.K.O.'s main server has them.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::App;
use super::body::{Fields, Reject, a_kind, json_response, read_object};
use super::ledger::{Entry, Op, now_ms, rfc3339};
use crate::error::Error;
use crate::tools::{DEFAULT_TIMEOUT, EXTERNAL_SOURCE, MAX_TIMEOUT, check_callback_url};
use crate::types::{NAME_RULE, empty_parameters, is_valid_name};

/// The largest registration request body (a tool's schema and description fit many times).
pub(crate) const MAX_TOOLS_BODY: usize = 1 << 20;

/// `POST /api/tools/register`.
pub(crate) async fn register(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let map = match read_object(&headers, body, MAX_TOOLS_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let entry = match register_entry(map) {
        Ok(e) => e,
        Err(r) => return r.into_response(),
    };
    if let Some(role) = &entry.scope
        && !app.has_role(role)
    {
        return unknown_role(role);
    }
    let name = entry.name.clone();
    match app.change(Op::Register(entry)).await {
        Ok(outcome) if outcome.affected.is_empty() => Json(json!({
            "ok": false,
            "registered": name,
            "affected_roles": [],
            "failed_roles": [],
            "error": "no role accepted the registration",
        }))
        .into_response(),
        Ok(outcome) => Json(json!({
            "ok": true,
            "registered": name,
            "affected_roles": outcome.affected,
            "failed_roles": outcome.failed,
        }))
        .into_response(),
        Err(r) => r.into_response(),
    }
}

/// `POST /api/tools/unregister`.
pub(crate) async fn unregister(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let map = match read_object(&headers, body, MAX_TOOLS_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let mut f = Fields::new(map);
    let name = f.required_string("name");
    if let Some(n) = &name {
        check_name(&mut f, n);
    }
    let role = role_field(&mut f);
    if let Err(r) = f.finish() {
        return r.into_response();
    }
    let Some(name) = name else {
        return Reject::field("name", "missing", "field required").into_response();
    };
    if let Some(role) = &role
        && !app.has_role(role)
    {
        return unknown_role(role);
    }
    let op = Op::Unregister {
        name: name.clone(),
        role,
    };
    match app.change(op).await {
        Ok(outcome) => Json(json!({
            "ok": outcome.failed.is_empty() || outcome.removed > 0,
            "removed": outcome.removed > 0,
            "name": name,
            "affected_roles": outcome.affected,
            "failed_roles": outcome.failed,
        }))
        .into_response(),
        Err(r) => r.into_response(),
    }
}

/// `POST /api/tools/clear`.
pub(crate) async fn clear(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let map = match read_object(&headers, body, MAX_TOOLS_BODY).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let mut f = Fields::new(map);
    let source = f.required_string("source");
    if source.as_deref() == Some("") {
        f.problem(
            "source",
            "string_too_short",
            "must have at least 1 character",
        );
    }
    let role = role_field(&mut f);
    if let Err(r) = f.finish() {
        return r.into_response();
    }
    let Some(source) = source else {
        return Reject::field("source", "missing", "field required").into_response();
    };
    if let Some(role) = &role
        && !app.has_role(role)
    {
        return unknown_role(role);
    }
    let op = Op::Clear {
        source: source.clone(),
        role,
    };
    match app.change(op).await {
        Ok(outcome) => Json(json!({
            "ok": outcome.failed.is_empty() || outcome.removed > 0,
            "removed": outcome.removed,
            "source": source,
            "affected_roles": outcome.affected,
            "failed_roles": outcome.failed,
        }))
        .into_response(),
        Err(r) => r.into_response(),
    }
}

/// `GET /api/tools[?role=R]`: per role, each tool with N.E.K.O.'s fields (`name`,
/// `description`, `source`, `callback_url`, `is_remote`) and toolwire's additions (`role`,
/// `parameters`, `timeout_seconds`, `registered_at` and the call statistics).
pub(crate) async fn list(State(app): State<Arc<App>>, RawQuery(query): RawQuery) -> Response {
    let role = match role_query(query.as_deref()) {
        Ok(r) => r,
        Err(r) => return r.into_response(),
    };
    if let Some(role) = &role
        && !app.has_role(role)
    {
        return unknown_role(role);
    }
    let ledger = app.ledger.lock().await;
    let listing = Listing {
        app: &app,
        ledger: &ledger,
        role: role.as_deref(),
    };
    json_response(StatusCode::OK, &listing)
}

/// The body of `GET /api/tools`, written from the ledger straight into the answer (no JSON
/// tree of every tool first): the cost of a listing is one pass over the tools.
struct Listing<'a> {
    app: &'a App,
    ledger: &'a super::ledger::Ledger,
    role: Option<&'a str>,
}

impl serde::Serialize for Listing<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct ByRole<'b>(&'b Listing<'b>);
        struct RoleTools<'b>(&'b App, &'b super::ledger::RoleTools);
        struct Item<'b>(&'b App, &'b str, &'b Entry);
        impl serde::Serialize for ByRole<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                for r in &self.0.ledger.roles {
                    if self.0.role.is_none_or(|x| x == r.role) {
                        map.serialize_entry(&r.role, &RoleTools(self.0.app, r))?;
                    }
                }
                map.end()
            }
        }
        impl serde::Serialize for RoleTools<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                let mut seq = s.serialize_seq(None)?;
                for e in &self.1.entries {
                    seq.serialize_element(&Item(self.0, &self.1.role, e))?;
                }
                // Tools of mounted MCP servers, after the registered ones.
                #[cfg(feature = "mcp")]
                if let Some(role) = self.0.role(&self.1.role) {
                    for item in super::mcp::listed(role) {
                        seq.serialize_element(&item)?;
                    }
                }
                seq.end()
            }
        }
        impl serde::Serialize for Item<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let Item(app, role, e) = self;
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("name", &e.name)?;
                map.serialize_entry("description", &e.description)?;
                map.serialize_entry("source", &e.source)?;
                map.serialize_entry("callback_url", &e.callback_url)?;
                map.serialize_entry("is_remote", &true)?;
                map.serialize_entry("role", &e.scope)?;
                map.serialize_entry("parameters", &e.parameters)?;
                map.serialize_entry("timeout_seconds", &e.timeout_seconds)?;
                map.serialize_entry("registered_at", &rfc3339(e.registered_at_ms))?;
                if let Value::Object(stats) = app.live.stats(role, &e.name).to_json() {
                    for (k, v) in &stats {
                        map.serialize_entry(k, v)?;
                    }
                }
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("ok", &true)?;
        map.serialize_entry("tools_by_role", &ByRole(self))?;
        map.end()
    }
}

/// The body of `GET /api/tools` for one role or all, as a JSON value (the page's first state).
pub(crate) async fn tools_json(app: &App, role: Option<&str>) -> Value {
    let ledger = app.ledger.lock().await;
    let listing = Listing {
        app,
        ledger: &ledger,
        role,
    };
    serde_json::to_value(&listing).unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()}))
}

/// `GET /api/calls`: the recent tool calls, newest first.
pub(crate) async fn calls(State(app): State<Arc<App>>) -> Response {
    Json(json!({"ok": true, "calls": app.live.recent()})).into_response()
}

/// 404 for a role the server does not have, worded as N.E.K.O. words it.
pub(crate) fn unknown_role(role: &str) -> Response {
    Reject::new(StatusCode::NOT_FOUND, format!("unknown role: {role}")).into_response()
}

/// The only query parameter `GET /api/tools` takes is `role`.
pub(crate) fn role_query(query: Option<&str>) -> Result<Option<String>, Reject> {
    let mut role = None;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key);
        if key != "role" {
            return Err(Reject::invalid(vec![super::body::Problem {
                field: key.clone(),
                message: "unknown query parameter (only role is accepted)".to_owned(),
                kind: "extra_forbidden",
            }]));
        }
        let value = percent_decode(value);
        role = if value.is_empty() { None } else { Some(value) };
    }
    Ok(role)
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; bad escapes
/// stay as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn check_name(f: &mut Fields, name: &str) {
    if !is_valid_name(name) {
        let why = if name.is_empty() {
            "must have at least 1 character".to_owned()
        } else if name.len() > 64 {
            format!("is {} bytes long; at most 64 are allowed", name.len())
        } else {
            format!("{name:?} does not match {NAME_RULE}")
        };
        f.problem("name", "string_pattern_mismatch", why);
    }
}

/// `role`: `null`, absent or `""` mean every role (as in N.E.K.O., where an empty role is
/// falsy); a string names one role.
fn role_field(f: &mut Fields) -> Option<String> {
    f.string("role").filter(|r| !r.is_empty())
}

/// Checks a registration body, collecting every problem.
fn register_entry(map: Map<String, Value>) -> Result<Entry, Reject> {
    let mut f = Fields::new(map);
    let name = f.required_string("name");
    if let Some(n) = &name {
        check_name(&mut f, n);
    }
    let description = f.string("description").unwrap_or_default();
    let parameters = match f.take("parameters") {
        None => empty_parameters(),
        Some(Value::Object(schema)) => {
            let schema = Value::Object(schema);
            if let Some(problem) = schema_problem(&schema) {
                f.problem("parameters", "json_schema", problem);
            }
            schema
        }
        Some(other) => {
            f.problem(
                "parameters",
                "dict_type",
                format!("must be a JSON Schema object, got {}", a_kind(&other)),
            );
            Value::Null
        }
    };
    let callback_url = f.required_string("callback_url");
    if let Some(url) = &callback_url
        && let Err(e) = check_callback_url(url)
    {
        let message = match e {
            Error::Input { message, .. } => message,
            other => other.to_string(),
        };
        f.problem("callback_url", "value_error", message);
    }
    let role = role_field(&mut f);
    let source = f
        .string("source")
        .unwrap_or_else(|| EXTERNAL_SOURCE.to_owned());
    if source.is_empty() {
        f.problem(
            "source",
            "string_too_short",
            "must have at least 1 character",
        );
    }
    let timeout_seconds = f
        .number("timeout_seconds")
        .unwrap_or(DEFAULT_TIMEOUT.as_secs_f64());
    if !(timeout_seconds > 0.0 && timeout_seconds <= MAX_TIMEOUT.as_secs_f64()) {
        f.problem(
            "timeout_seconds",
            "value_error",
            format!(
                "{timeout_seconds} is out of range: it must be greater than 0 and at most {}",
                MAX_TIMEOUT.as_secs()
            ),
        );
    }
    f.finish()?;
    let (Some(name), Some(callback_url)) = (name, callback_url) else {
        return Err(Reject::field("name", "missing", "field required"));
    };
    let entry = Entry {
        name,
        description,
        parameters,
        callback_url,
        source,
        timeout_seconds,
        scope: role,
        registered_at_ms: now_ms(),
    };
    // The registry's own checks, so a registration accepted here is one every role accepts.
    entry.check().map_err(|e| match e {
        Error::Input { path, message } => {
            let field = if path == "timeout" {
                "timeout_seconds".to_owned()
            } else {
                path
            };
            Reject::field(&field, "value_error", message)
        }
        other => Reject::field("", "value_error", other.to_string()),
    })?;
    Ok(entry)
}

/// Why `schema` cannot be a tool's parameters: it must describe an object and compile.
fn schema_problem(schema: &Value) -> Option<String> {
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Some(format!(
                "the arguments are an object, so \"type\" must be \"object\" (got {other})"
            ));
        }
    }
    jsonschema::validator_for(schema)
        .err()
        .map(|e| format!("not a valid JSON Schema: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        assert_eq!(role_query(None).unwrap(), None);
        assert_eq!(
            role_query(Some("role=Lan+lan")).unwrap().as_deref(),
            Some("Lan lan")
        );
        assert_eq!(
            role_query(Some("role=%E5%B0%8F")).unwrap().as_deref(),
            Some("小")
        );
        assert_eq!(role_query(Some("role=")).unwrap(), None);
        assert_eq!(
            role_query(Some("role=%zz%")).unwrap().as_deref(),
            Some("%zz%")
        );
        assert!(role_query(Some("rol=x")).is_err());
    }
}
