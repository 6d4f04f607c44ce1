//! Questions a running tool asks the person waiting (an MCP server's elicitation): the
//! request, the answer, and the reply handle the agent's caller answers with.
//!
//! A handler asks through its call's [`Reporter`](super::Reporter)
//! ([`Reporter::ask`](super::Reporter::ask)); the agent turns each question into an
//! `AgentEvent::InputRequested` carrying an [`InputReply`]. Whoever reads the events answers
//! it: [`InputReply::accept`] (checked against the request's form first),
//! [`InputReply::decline`] or [`InputReply::cancel`]. A reply nobody answers (every copy
//! dropped, the events not read) declines, and so does a call nobody listens to.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// A request for input from the person during a tool call (MCP elicitation,
/// `elicitation/create`): the question and the form of the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InputRequest {
    /// Who asks: an MCP server's command line or URL.
    pub server: String,
    /// The tool (the server's own name) whose call asks, when it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The id of the call that asks, when it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The question, for a person.
    pub message: String,
    /// The JSON Schema of the answer (MCP: an object of primitive properties); `null` for a
    /// URL request.
    pub schema: Value,
    /// For a URL request: the page the person is sent to (the answer is given there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl InputRequest {
    /// A form request from `server`: `message` and the `schema` of the answer.
    pub fn new(server: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Self {
            server: server.into(),
            tool: None,
            call_id: None,
            message: message.into(),
            schema,
            url: None,
        }
    }
}

/// The answer to an [`InputRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputAnswer {
    /// The person answered: the content (an object matching the request's schema).
    Accept(Value),
    /// The person declined to answer; the tool goes on without it.
    Decline,
    /// The person cancelled the whole operation.
    Cancel,
}

/// How the agent's caller answers one [`InputRequest`]. Clones answer the same request;
/// the first answer counts. When every clone is dropped unanswered, the request is declined.
#[derive(Clone)]
pub struct InputReply {
    inner: Arc<ReplyInner>,
}

struct ReplyInner {
    schema: Value,
    sender: Mutex<Option<oneshot::Sender<InputAnswer>>>,
}

impl std::fmt::Debug for InputReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputReply")
            .field("answered", &self.is_answered())
            .finish()
    }
}

/// Two replies are equal when they answer the same request.
impl PartialEq for InputReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl InputReply {
    /// Accepts with `content`, after checking it against the request's form: content that
    /// does not fit (not an object, a missing required property, a property of the wrong
    /// type, a value outside its `enum` or limits, a property the form does not have) is an
    /// [`Error::Input`] naming the property, and nothing is sent: answer again.
    pub fn accept(&self, content: Value) -> Result<()> {
        check_answer(&self.inner.schema, &content)?;
        self.send(InputAnswer::Accept(content))
    }

    /// Declines: the tool goes on without the answer.
    pub fn decline(&self) -> Result<()> {
        self.send(InputAnswer::Decline)
    }

    /// Cancels the whole operation.
    pub fn cancel(&self) -> Result<()> {
        self.send(InputAnswer::Cancel)
    }

    /// Answers with `answer` ([`InputReply::accept`] for an `Accept`).
    pub fn answer(&self, answer: InputAnswer) -> Result<()> {
        match answer {
            InputAnswer::Accept(content) => self.accept(content),
            other => self.send(other),
        }
    }

    /// Whether the request was answered already.
    pub fn is_answered(&self) -> bool {
        self.lock().is_none()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<oneshot::Sender<InputAnswer>>> {
        self.inner
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, answer: InputAnswer) -> Result<()> {
        let Some(sender) = self.lock().take() else {
            return Err(Error::input(
                "answer",
                "the input request was answered already",
            ));
        };
        // The asking call may have ended meanwhile: then nobody waits, and that is fine.
        let _ = sender.send(answer);
        Ok(())
    }
}

/// One question on its way to whoever answers: the request and its reply handle.
#[derive(Debug)]
#[non_exhaustive]
pub struct Asked {
    /// The question.
    pub request: InputRequest,
    /// How to answer it.
    pub reply: InputReply,
}

/// Where a call's questions go (given to a [`Reporter`](super::Reporter) with
/// [`Reporter::with_questions`](super::Reporter::with_questions)); read them from the
/// receiver of [`Questions::channel`].
#[derive(Clone, Debug)]
pub struct Questions(mpsc::UnboundedSender<Asked>);

impl Questions {
    /// The sending side and the receiver of the questions.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Asked>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }

    /// Sends `request` and waits for its answer; a question nobody reads or answers is
    /// declined.
    pub async fn ask(&self, request: InputRequest) -> InputAnswer {
        let (sender, receiver) = oneshot::channel();
        let reply = InputReply {
            inner: Arc::new(ReplyInner {
                schema: request.schema.clone(),
                sender: Mutex::new(Some(sender)),
            }),
        };
        if self.0.send(Asked { request, reply }).is_err() {
            return InputAnswer::Decline;
        }
        receiver.await.unwrap_or(InputAnswer::Decline)
    }
}

/// Checks `content` against an input request's form (`schema`): MCP restricts it to an
/// object of primitive properties (string with `minLength`/`maxLength`/`format`/`enum`,
/// number and integer with `minimum`/`maximum`, boolean, and arrays of enumerated strings
/// for a multiple choice). The error names the property that does not fit. A schema that is
/// not such an object (a URL request has none) accepts any object.
pub fn check_answer(schema: &Value, content: &Value) -> Result<()> {
    let Value::Object(content) = content else {
        return Err(Error::input(
            "content",
            format!(
                "the answer must be a JSON object of the form's properties, got {}",
                crate::types::json_kind(content)
            ),
        ));
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    for name in &required {
        if !content.contains_key(*name) {
            return Err(Error::input(
                *name,
                format!("the answer has no {name:?}, which the form requires"),
            ));
        }
    }
    for (name, value) in content {
        let Some(property) = properties.get(name).and_then(Value::as_object) else {
            return Err(Error::input(
                name,
                format!("the form has no property {name:?}"),
            ));
        };
        check_property(name, property, value)?;
    }
    Ok(())
}

fn check_property(name: &str, property: &Map<String, Value>, value: &Value) -> Result<()> {
    let wrong = |what: String| Err(Error::input(name, format!("property {name:?}: {what}")));
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let kind = property.get("type").and_then(Value::as_str);
    match kind {
        Some("string") => {
            let Some(text) = value.as_str() else {
                return wrong(format!("expected a string, got {}", kind_of(value)));
            };
            let chars = text.chars().count() as f64;
            if number("minLength").is_some_and(|min| chars < min) {
                return wrong(format!("{text:?} is shorter than minLength"));
            }
            if number("maxLength").is_some_and(|max| chars > max) {
                return wrong("the text is longer than maxLength".to_owned());
            }
            if let Some(choices) = choices(property)
                && !choices.contains(&text)
            {
                return wrong(format!("{text:?} is not one of {choices:?}"));
            }
            if let Some(format) = property.get("format").and_then(Value::as_str)
                && !fits_format(format, text)
            {
                return wrong(format!("{text:?} is not a valid {format}"));
            }
        }
        Some("number" | "integer") => {
            let Some(n) = value.as_f64() else {
                return wrong(format!("expected a number, got {}", kind_of(value)));
            };
            if kind == Some("integer") && n.fract() != 0.0 {
                return wrong(format!("expected an integer, got {value}"));
            }
            if number("minimum").is_some_and(|min| n < min) {
                return wrong(format!("{value} is below the minimum"));
            }
            if number("maximum").is_some_and(|max| n > max) {
                return wrong(format!("{value} is above the maximum"));
            }
        }
        Some("boolean") if !value.is_boolean() => {
            return wrong(format!("expected true or false, got {}", kind_of(value)));
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                return wrong(format!("expected an array, got {}", kind_of(value)));
            };
            let len = items.len() as f64;
            if number("minItems").is_some_and(|min| len < min) {
                return wrong(format!("{} choices are fewer than minItems", items.len()));
            }
            if number("maxItems").is_some_and(|max| len > max) {
                return wrong(format!("{} choices are more than maxItems", items.len()));
            }
            let allowed = property
                .get("items")
                .and_then(Value::as_object)
                .and_then(choices);
            for item in items {
                let Some(text) = item.as_str() else {
                    return wrong(format!("expected strings, got {}", kind_of(item)));
                };
                if let Some(allowed) = &allowed
                    && !allowed.contains(&text)
                {
                    return wrong(format!("{text:?} is not one of {allowed:?}"));
                }
            }
        }
        // A kind MCP does not allow in a form: the server checks what it asked for.
        _ => {}
    }
    Ok(())
}

/// The allowed values of an enumerated string: `enum`, or the `const` of each `oneOf` /
/// `anyOf` entry (titled choices).
fn choices(property: &Map<String, Value>) -> Option<Vec<&str>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return Some(values.iter().filter_map(Value::as_str).collect());
    }
    let entries = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        entries
            .iter()
            .filter_map(|e| e.get("const").and_then(Value::as_str))
            .collect(),
    )
}

/// The string formats MCP forms allow, checked by shape.
fn fits_format(format: &str, text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let date = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        matches!(parts.as_slice(), [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2
            && digits(y) && digits(m) && digits(d))
    };
    match format {
        "email" => text
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        "uri" => text
            .split_once(':')
            .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty()),
        "date" => date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(d, time)| date(d) && time.len() >= 8),
        _ => true,
    }
}

fn kind_of(value: &Value) -> &'static str {
    crate::types::json_kind(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "seat": {"type": "string", "minLength": 2},
                "window": {"type": "boolean"},
                "bags": {"type": "integer", "minimum": 0, "maximum": 3},
                "meal": {"type": "string", "enum": ["veg", "fish"]},
                "class": {"type": "string", "oneOf": [{"const": "y", "title": "Economy"}]},
                "mail": {"type": "string", "format": "email"},
                "extras": {"type": "array", "items": {"enum": ["wifi", "lounge"]}, "maxItems": 2}
            },
            "required": ["seat"]
        })
    }

    fn refused(content: Value) -> String {
        check_answer(&form(), &content).unwrap_err().to_string()
    }

    #[test]
    fn answers_that_fit_the_form_pass() {
        let ok = json!({"seat": "12A", "window": true, "bags": 2, "meal": "veg", "class": "y",
            "mail": "a@b.example", "extras": ["wifi"]});
        check_answer(&form(), &ok).unwrap();
        check_answer(&Value::Null, &json!({"anything": 1})).unwrap();
    }

    #[test]
    fn answers_that_break_the_form_name_the_property() {
        assert!(refused(json!({"window": true})).contains("\"seat\""));
        assert!(refused(json!({"seat": 12})).contains("seat"));
        assert!(refused(json!({"seat": "1"})).contains("minLength"));
        let e = refused(json!({"seat": "12A", "window": "yes"}));
        assert!(e.contains("window") && e.contains("true or false"), "{e}");
        assert!(refused(json!({"seat": "12A", "bags": 1.5})).contains("bags"));
        assert!(refused(json!({"seat": "12A", "bags": 9})).contains("maximum"));
        assert!(refused(json!({"seat": "12A", "meal": "beef"})).contains("meal"));
        assert!(refused(json!({"seat": "12A", "class": "z"})).contains("class"));
        assert!(refused(json!({"seat": "12A", "mail": "nope"})).contains("mail"));
        assert!(refused(json!({"seat": "12A", "extras": ["spa"]})).contains("extras"));
        assert!(refused(json!({"seat": "12A", "aisle": true})).contains("aisle"));
        assert!(refused(json!(["12A"])).contains("object"));
    }

    #[tokio::test]
    async fn a_reply_checks_then_answers_once_and_a_dropped_one_declines() {
        let (questions, mut asked) = Questions::channel();
        let asking = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask(InputRequest::new("s", "Seat?", form())).await }
        });
        let Some(Asked { request, reply }) = asked.recv().await else {
            panic!("no question")
        };
        assert_eq!(request.message, "Seat?");
        let e = reply.accept(json!({"seat": 7})).unwrap_err();
        assert!(
            matches!(&e, Error::Input { path, .. } if path == "seat"),
            "{e}"
        );
        assert!(!reply.is_answered());
        reply.accept(json!({"seat": "7C"})).unwrap();
        assert!(reply.decline().is_err());
        assert_eq!(
            asking.await.unwrap(),
            InputAnswer::Accept(json!({"seat": "7C"}))
        );

        let asking =
            tokio::spawn(async move { questions.ask(InputRequest::new("s", "?", form())).await });
        drop(asked.recv().await);
        assert_eq!(asking.await.unwrap(), InputAnswer::Decline);
        drop(asked);
    }
}
