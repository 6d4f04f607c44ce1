//! Reading request bodies and answering bad ones: a size limit checked as bytes arrive, JSON
//! objects only, every field checked by name and type, unknown fields refused.
//!
//! Errors answer `{"ok": false, "error": "<field>: <reason>", "detail": ...}`. For 422 the
//! `detail` is a list in FastAPI's shape (`[{"loc": ["body", field], "msg", "type"}]`), which is
//! what N.E.K.O.'s own server answers, so plugins written for it read our errors the same way.

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::types::json_kind;

/// `a number`, `an array`, `null`: a value's JSON type for a message.
pub(crate) fn a_kind(v: &Value) -> String {
    match json_kind(v) {
        "null" => "null".to_owned(),
        k @ ("array" | "object") => format!("an {k}"),
        k => format!("a {k}"),
    }
}

/// An error answer: a status and what is wrong, where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reject {
    status: StatusCode,
    message: String,
    problems: Vec<Problem>,
}

/// One validation problem: the field (a dotted path inside the body) and the reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub field: String,
    pub message: String,
    pub kind: &'static str,
}

impl Reject {
    /// Any status with a message.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    /// 422 listing every problem.
    pub(crate) fn invalid(problems: Vec<Problem>) -> Self {
        let message = problems
            .iter()
            .map(|p| {
                if p.field.is_empty() {
                    p.message.clone()
                } else {
                    format!("{}: {}", p.field, p.message)
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message,
            problems,
        }
    }

    /// 422 for one field.
    pub(crate) fn field(field: &str, kind: &'static str, message: impl Into<String>) -> Self {
        Self::invalid(vec![Problem {
            field: field.to_owned(),
            message: message.into(),
            kind,
        }])
    }

    /// The status.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The one-line message.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        let detail = if self.problems.is_empty() {
            Value::String(self.message.clone())
        } else {
            self.problems
                .iter()
                .map(|p| {
                    let mut loc = vec![json!("body")];
                    loc.extend(
                        p.field
                            .split('.')
                            .filter(|s| !s.is_empty())
                            .map(|s| json!(s)),
                    );
                    json!({"loc": loc, "msg": p.message, "type": p.kind})
                })
                .collect()
        };
        let body = json!({"ok": false, "error": self.message, "detail": detail});
        (self.status, Json(body)).into_response()
    }
}

/// Reads a JSON object body of at most `limit` bytes. Answers 415 unless the content type is
/// JSON (which also makes browsers ask before sending one cross-site, so a web page cannot
/// post to the server), 413 past the limit (checked as bytes arrive), 422 for malformed JSON
/// or a body that is not an object.
pub(crate) async fn read_object(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Map<String, Value>, Reject> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase());
    let is_json = content_type.as_deref().is_some_and(|ct| {
        let essence = ct.split(';').next().unwrap_or_default().trim();
        essence == "application/json"
    });
    if !is_json {
        return Err(Reject::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the body must be JSON sent with Content-Type: application/json (got {})",
                content_type.map_or("no content type".to_owned(), |ct| format!("{ct:?}"))
            ),
        ));
    }
    let too_large = || {
        Reject::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than the {limit} byte limit"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    // Room for the declared length at once (it is within the limit): growing by doubling
    // would hold up to twice the body.
    let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            Reject::new(
                StatusCode::BAD_REQUEST,
                format!("reading the body failed: {e}"),
            )
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    parse_object(&bytes)
}

/// `value` as a JSON response, written into a buffer of exactly its size (measured first), so
/// a long conversation is not held in a buffer grown by doubling.
pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    let mut count = Count(0);
    let mut out = Vec::new();
    if serde_json::to_writer(&mut count, value).is_ok() {
        out.reserve_exact(count.0);
    }
    if let Err(e) = serde_json::to_writer(&mut out, value) {
        return Reject::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the answer could not be written as JSON: {e}"),
        )
        .into_response();
    }
    (
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        out,
    )
        .into_response()
}

/// Counts the bytes written to it.
pub(crate) struct Count(pub usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON object in `bytes`, or 422 saying where the JSON breaks or what the body is instead.
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, Reject> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        let message = if bytes.iter().all(u8::is_ascii_whitespace) {
            "the body is empty; send a JSON object".to_owned()
        } else {
            format!(
                "malformed JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            )
        };
        Reject::field("", "json_invalid", message)
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Reject::field(
            "",
            "model_attributes_type",
            format!("the body must be a JSON object, got {}", a_kind(&other)),
        )),
    }
}

/// Takes fields out of a body object by name, collecting every problem; what is left at the
/// end is an unknown field.
pub(crate) struct Fields {
    map: Map<String, Value>,
    problems: Vec<Problem>,
}

impl Fields {
    pub(crate) fn new(map: Map<String, Value>) -> Self {
        Self {
            map,
            problems: Vec::new(),
        }
    }

    /// Records a problem with a field.
    pub(crate) fn problem(&mut self, field: &str, kind: &'static str, message: impl Into<String>) {
        self.problems.push(Problem {
            field: field.to_owned(),
            message: message.into(),
            kind,
        });
    }

    /// Whether a problem was recorded for `field`.
    pub(crate) fn has_problem(&self, field: &str) -> bool {
        self.problems.iter().any(|p| p.field == field)
    }

    /// The raw value of a field; `null` counts as absent.
    pub(crate) fn take(&mut self, field: &str) -> Option<Value> {
        self.map.remove(field).filter(|v| !v.is_null())
    }

    /// A field that must be a string when present.
    pub(crate) fn string(&mut self, field: &str) -> Option<String> {
        match self.take(field)? {
            Value::String(s) => Some(s),
            other => {
                self.problem(
                    field,
                    "string_type",
                    format!("must be a string, got {}", a_kind(&other)),
                );
                None
            }
        }
    }

    /// A string field that must be present.
    pub(crate) fn required_string(&mut self, field: &str) -> Option<String> {
        let present = self.map.get(field).is_some_and(|v| !v.is_null());
        if !present {
            self.map.remove(field);
            self.problem(field, "missing", "field required");
            return None;
        }
        self.string(field)
    }

    /// A field that must be a boolean when present.
    pub(crate) fn boolean(&mut self, field: &str) -> Option<bool> {
        match self.take(field)? {
            Value::Bool(b) => Some(b),
            other => {
                self.problem(
                    field,
                    "bool_type",
                    format!("must be true or false, got {}", a_kind(&other)),
                );
                None
            }
        }
    }

    /// A field that must be a number when present.
    pub(crate) fn number(&mut self, field: &str) -> Option<f64> {
        match self.take(field)? {
            Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() => Some(x),
                _ => {
                    self.problem(field, "float_type", format!("{n} is not a finite number"));
                    None
                }
            },
            other => {
                self.problem(
                    field,
                    "float_type",
                    format!("must be a number, got {}", a_kind(&other)),
                );
                None
            }
        }
    }

    /// Ends the checks: unknown fields and every recorded problem become one 422.
    pub(crate) fn finish(mut self) -> Result<(), Reject> {
        let unknown: Vec<String> = self.map.keys().cloned().collect();
        for field in unknown {
            self.problem(&field, "extra_forbidden", "unknown field");
        }
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(Reject::invalid(self.problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_only() {
        assert!(parse_object(br#"{"a": 1}"#).is_ok());
        let e = parse_object(b"[1]").unwrap_err();
        assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(e.message().contains("got an array"), "{}", e.message());
        let e = parse_object(b"{\"a\": ").unwrap_err();
        assert!(
            e.message().contains("malformed JSON at line 1"),
            "{}",
            e.message()
        );
        let e = parse_object(b"  ").unwrap_err();
        assert!(e.message().contains("empty"), "{}", e.message());
        let deep = "[".repeat(100_000);
        assert!(parse_object(deep.as_bytes()).is_err());
    }

    #[test]
    fn fields_collect_every_problem() {
        let map = parse_object(br#"{"name": 5, "flag": "yes", "extra": 1, "n": null}"#).unwrap();
        let mut f = Fields::new(map);
        assert_eq!(f.required_string("name"), None);
        assert_eq!(f.boolean("flag"), None);
        assert_eq!(f.number("n"), None);
        assert_eq!(f.required_string("missing"), None);
        let e = f.finish().unwrap_err();
        assert_eq!(
            e.message(),
            "name: must be a string, got a number; flag: must be true or false, got a string; \
             missing: field required; extra: unknown field"
        );
    }
}
