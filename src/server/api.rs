//! The registration API: `POST /api/tools/register`, `/unregister`, `/clear` and
//! `GET /api/tools`, bodies as N.E.K.O.'s main server has them.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::app::{App, role_query, unknown_role};
use super::body::{Fields, Reject, a_kind, read_object};
use super::ledger::{Entry, Ledger, Listed, Op, RoleTools, now_ms};
use super::live::Stats;
use crate::error::Error;
use crate::tools::{DEFAULT_TIMEOUT, EXTERNAL_SOURCE, MAX_TIMEOUT, check_callback_url};
use crate::types::{NAME_RULE, empty_parameters, is_valid_name};

/// The largest registration request body (a tool's schema and description fit many times).
pub(crate) const MAX_TOOLS_BODY: usize = 1 << 20;

/// The registration API: plugins register, list and remove tools; the recent calls.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/tools", get(list))
        .route("/api/tools/register", post(register))
        .route("/api/tools/unregister", post(unregister))
        .route("/api/tools/clear", post(clear))
        .route("/api/calls", get(calls))
}

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
    let body = listing(&app, &ledger, role.as_deref());
    drop(ledger);
    (
        StatusCode::OK,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The body of `GET /api/tools`, the JSON serde would write for it, assembled from each
/// entry's listing written once at registration ([`Entry::listed`]) and the call statistics
/// of the tools that have any: a listing of 10,000 tools is a copy of bytes, not 10,000
/// schemas written again.
fn listing(app: &App, ledger: &Ledger, role: Option<&str>) -> Vec<u8> {
    write_listing(ledger, role, |name| {
        // Tools of mounted MCP servers, after the registered ones.
        #[cfg(feature = "mcp")]
        let mounted = app.role(name).map(super::mcp::listed).unwrap_or_default();
        #[cfg(not(feature = "mcp"))]
        let mounted = Vec::new();
        (app.live.role_stats(name), mounted)
    })
}

/// [`listing`], given each role's call statistics and the tools listed after the registered
/// ones (mounted MCP tools).
fn write_listing(
    ledger: &Ledger,
    role: Option<&str>,
    per_role: impl Fn(&str) -> (HashMap<String, Stats>, Vec<Value>),
) -> Vec<u8> {
    // A tool never called: the same statistics for all.
    let uncalled = stats_fields(&Stats::default());
    let roles: Vec<&RoleTools> = ledger
        .roles
        .iter()
        .filter(|r| role.is_none_or(|x| x == r.role))
        .collect();
    let size: usize = roles
        .iter()
        .flat_map(|r| &r.entries)
        .map(|e| e.listed().len() + uncalled.len() + 1)
        .sum();
    let mut out = Vec::with_capacity(size + 64);
    out.extend_from_slice(br#"{"ok":true,"tools_by_role":{"#);
    for (i, r) in roles.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&mut out, &r.role);
        out.extend_from_slice(b":[");
        let (stats, mounted) = per_role(&r.role);
        for (j, e) in r.entries.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(e.listed().as_bytes());
            match stats.get(&e.name) {
                Some(s) => out.extend_from_slice(stats_fields(s).as_bytes()),
                None => out.extend_from_slice(uncalled.as_bytes()),
            }
        }
        for (j, item) in mounted.iter().enumerate() {
            if j > 0 || !r.entries.is_empty() {
                out.push(b',');
            }
            write_json(&mut out, item);
        }
        out.push(b']');
    }
    out.extend_from_slice(b"}}");
    out
}

/// The statistics' fields as they end a tool's object: `,"calls":3,...}`.
fn stats_fields(stats: &Stats) -> String {
    let object = stats.to_json().to_string();
    format!(",{}", object.strip_prefix('{').unwrap_or(&object))
}

/// Appends `value` as JSON (a string or a JSON value: writing them into memory does not fail).
fn write_json(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// The body of `GET /api/tools` for one role or all, as a JSON value (the page's first state).
pub(crate) async fn tools_json(app: &App, role: Option<&str>) -> Value {
    let ledger = app.ledger.lock().await;
    let body = listing(app, &ledger, role);
    drop(ledger);
    serde_json::from_slice(&body).unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()}))
}

/// `GET /api/calls`: the recent tool calls, newest first.
pub(crate) async fn calls(State(app): State<Arc<App>>) -> Response {
    Json(json!({"ok": true, "calls": app.live.recent()})).into_response()
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
        listed: Listed::default(),
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
    use crate::server::ledger::rfc3339;

    /// A tool's object as the listing wrote it when it was one serde pass over a JSON tree.
    fn item(e: &Entry, stats: &Stats) -> Value {
        let mut item = json!({
            "name": e.name, "description": e.description, "source": e.source,
            "callback_url": e.callback_url, "is_remote": true, "role": e.scope,
            "parameters": e.parameters, "timeout_seconds": e.timeout_seconds,
            "registered_at": rfc3339(e.registered_at_ms),
        });
        if let (Value::Object(item), Value::Object(stats)) = (&mut item, stats.to_json()) {
            item.extend(stats);
        }
        item
    }

    #[test]
    fn the_listing_is_the_bytes_serde_writes() {
        let roles = ["a".to_owned(), "b\"<".to_owned()];
        let mut ledger = Ledger::new(&roles);
        let entry = |name: &str, scope: Option<&str>| Entry {
            name: name.into(),
            description: "d \u{2028} \"é\"".into(),
            parameters: json!({"type": "object", "properties": {"z": {"type": "number"}, "a": {}}}),
            callback_url: "http://127.0.0.1:9/cb".into(),
            source: "plugin:x".into(),
            timeout_seconds: 2.5,
            scope: scope.map(str::to_owned),
            registered_at_ms: 1_735_732_800_123,
            listed: Listed::default(),
        };
        ledger.apply(&Op::Register(entry("t1", None)));
        ledger.apply(&Op::Register(entry("t2", Some("a"))));
        let called = Stats {
            calls: 3,
            errors: 1,
            last_called_at_ms: Some(5),
            last_answered_at_ms: Some(4),
            last_latency_ms: Some(12),
            last_error: Some((5, "boom".into())),
        };
        let mcp = json!({"name": "files_read", "callback_url": null, "annotations": {}});
        let per_role = |role: &str| {
            let stats = HashMap::from([("t2".to_owned(), called.clone())]);
            let mounted = if role == "a" {
                vec![mcp.clone()]
            } else {
                Vec::new()
            };
            (stats, mounted)
        };
        let e = |role: usize, i: usize| &ledger.roles[role].entries[i];
        let none = Stats::default();
        let expected = json!({"ok": true, "tools_by_role": {
            "a": [item(e(0, 0), &none), item(e(0, 1), &called), mcp],
            "b\"<": [item(e(1, 0), &none)],
        }});
        let bytes = write_listing(&ledger, None, per_role);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        let one = write_listing(&ledger, Some("b\"<"), per_role);
        let expected = json!({"ok": true, "tools_by_role": {"b\"<": [item(e(1, 0), &none)]}});
        assert_eq!(one, serde_json::to_vec(&expected).unwrap());
        let empty = write_listing(&Ledger::new(&roles), Some("a"), |_| {
            (HashMap::new(), vec![mcp.clone(), mcp.clone()])
        });
        let expected = json!({"ok": true, "tools_by_role": {"a": [mcp, mcp]}});
        assert_eq!(empty, serde_json::to_vec(&expected).unwrap());
    }
}
