//! Same-wire routes: a client speaking the upstream's own wire (Anthropic Messages to an
//! Anthropic upstream, Responses to Responses, Chat Completions to an OpenAI-compatible
//! server) gets its body through as it sent it, only the `model` value replaced (spliced into
//! the client's bytes, the rest never re-serialised), with the wire's own client headers
//! (`anthropic-beta`, `anthropic-version`, `openai-beta`) and the role's auth, never the
//! client's. The upstream's answer (status, body, stream bytes) goes back as it came: ids,
//! signatures, reasoning items and usage unchanged. When the gateway needs the answer's usage
//! (a key's token limits), it is read alongside by the upstream provider's own reader, never
//! re-encoded; otherwise its bytes pass untouched.

use std::ops::Range;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::client::{Client, Route};
use crate::error::Error;
use crate::provider::ProviderKind;
use crate::turn::TurnReader;
use crate::types::Usage;

/// What the gateway needs of a body before reading it: the model asked for, where its value
/// stands in the bytes, and whether a stream was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The model the client asked for.
    pub(crate) model: String,
    /// Where the model's JSON value (quotes included) stands in the body.
    pub(crate) range: Range<usize>,
    /// Whether the client asked for a stream.
    pub(crate) stream: bool,
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    model: &'a RawValue,
    #[serde(default)]
    stream: Option<bool>,
}

/// The head of a JSON body whose top level has a string `model` (once) and, if any, a boolean
/// `stream`; `None` for anything else (the canonical reader then says what is wrong).
pub(crate) fn peek(body: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(body).ok()?;
    // An object only (serde would read a struct from an array too).
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let p: Peek<'_> = serde_json::from_str(text).ok()?;
    let raw = p.model.get();
    let model: String = serde_json::from_str(raw).ok()?;
    // The raw value is a slice of `text`: its offset is where it starts.
    let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(raw.len())?;
    (text.get(start..end) == Some(raw)).then_some(Head {
        model,
        range: start..end,
        stream: p.stream.unwrap_or(false),
    })
}

/// `body` with the model value at `range` replaced by `model` (a JSON string); every other
/// byte is the client's.
pub(crate) fn splice(body: &[u8], range: &Range<usize>, model: &str) -> Vec<u8> {
    let value = serde_json::Value::String(model.to_owned()).to_string();
    let mut out = Vec::with_capacity(body.len() + value.len());
    out.extend_from_slice(body.get(..range.start).unwrap_or_default());
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(body.get(range.end..).unwrap_or_default());
    out
}

/// Whether `client`, posting to `wire` (its [`Client::route`]), speaks the client wire at
/// `route` read by `provider`: its provider is
/// that one (`openai`, any OpenAI-compatible server given by base URL included; `anthropic`;
/// `openai-responses`) and it posts turns to the wire's endpoint: the route is the upstream's path, or `/v1` and
/// the upstream's path (a base URL ending in `/v1`, as OpenAI-compatible servers' do). A
/// provider with a wire of its own beside Chat Completions (GLM's thinking switch, Mistral's
/// rules) keeps the canonical path, which translates for it.
pub(crate) fn same_wire(
    (route, provider): (&str, ProviderKind),
    client: &Client,
    wire: &Route,
) -> bool {
    if client.provider().info().kind != provider {
        return false;
    }
    let path = wire.path.split('?').next().unwrap_or_default();
    let path = path.strip_prefix('/').unwrap_or(path);
    !path.is_empty()
        && route
            .strip_suffix(path)
            .and_then(|prefix| prefix.strip_suffix('/'))
            .is_some_and(|prefix| prefix.is_empty() || prefix == "/v1")
}

/// The client's headers of the wire (`names`, lowercase), to send upstream as they came.
pub(crate) fn wire_headers(headers: &HeaderMap, names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .flat_map(|name| {
            headers
                .get_all(*name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(|v| ((*name).to_owned(), v.to_owned()))
                .collect::<Vec<_>>()
        })
        .fold(
            Vec::new(),
            |mut all: Vec<(String, String)>, (name, value)| {
                // Repeated headers (`anthropic-beta` twice) are one comma-separated value.
                match all.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => {
                        v.push(',');
                        v.push_str(&value);
                    }
                    None => all.push((name, value)),
                }
                all
            },
        )
}

/// Whether an upstream answer header goes back to the client: its content type, its request
/// id and its rate-limit and retry headers.
fn forwarded(name: &HeaderName) -> bool {
    let n = name.as_str();
    matches!(
        n,
        "content-type" | "request-id" | "x-request-id" | "retry-after" | "retry-after-ms"
    ) || n.starts_with("x-ratelimit-")
        || n.starts_with("anthropic-ratelimit-")
        || n.starts_with("openai-")
}

/// Called once the answer's body ended: the usage read alongside (`None` when it was not read,
/// the answer was an error, held none or could not be read, or the client left first).
pub(crate) type Done = Box<dyn FnOnce(Option<Usage>) + Send>;

/// Sends `body` to `client` at `wire` (its [`Client::route`]) as it is and answers with the
/// upstream's answer as it comes, read alongside by the upstream's reader when `read`.
/// `guard` is dropped when the answer's body ends or the client leaves. An error is a failure
/// to get an answer at all (connect, first byte); an upstream's error answer is an answer.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn forward(
    client: &Client,
    wire: &Route,
    body: Vec<u8>,
    stream: bool,
    read: bool,
    headers: &[(String, String)],
    guard: Box<dyn Send>,
    done: Done,
) -> Result<Response, Error> {
    forward_at(client, wire, "", body, stream, read, headers, guard, done).await
}

/// [`forward`] to the turn's path with `suffix` appended (`/count_tokens`).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn forward_at(
    client: &Client,
    wire: &Route,
    suffix: &str,
    body: Vec<u8>,
    stream: bool,
    read: bool,
    headers: &[(String, String)],
    guard: Box<dyn Send>,
    done: Done,
) -> Result<Response, Error> {
    let mut answer = client
        .send_raw_at(wire, suffix, Bytes::from(body), stream, headers)
        .await?;
    let ok = (200..300).contains(&answer.status);
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = Response::new(Body::empty());
    *out.status_mut() = status;
    for (name, value) in &answer.headers {
        if forwarded(name) {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    if stream && ok {
        out.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    /// How the answer is read alongside: a stream by the upstream's own reader, event by
    /// event; a whole body kept (within the client's body limit) for its usage alone.
    enum Reading {
        Stream(Box<TurnReader<'static>>),
        Whole(Vec<u8>, Client),
    }
    struct Run {
        reading: Option<Reading>,
        done: Option<Done>,
        _guard: Box<dyn Send>,
    }
    impl Run {
        fn end(&mut self) {
            let usage = match self.reading.take() {
                Some(Reading::Stream(mut r)) => {
                    r.finish(&mut Vec::new()).ok().and_then(|r| r.usage)
                }
                Some(Reading::Whole(body, client)) => client.provider().decode_usage(&body),
                None => None,
            };
            if let Some(done) = self.done.take() {
                done(usage);
            }
        }
    }
    impl Drop for Run {
        fn drop(&mut self) {
            // The client left before the end: nothing was read to its end.
            if let Some(done) = self.done.take() {
                done(None);
            }
        }
    }
    let mut run = Run {
        reading: (ok && read).then(|| {
            if stream {
                Reading::Stream(Box::new(client.reader()))
            } else {
                Reading::Whole(Vec::new(), client.clone())
            }
        }),
        done: Some(done),
        _guard: guard,
    };
    let chunks = futures::stream::poll_fn(move |cx| {
        let next = std::task::ready!(answer.poll_chunk(cx));
        std::task::Poll::Ready(match next {
            Some(Ok(chunk)) => {
                let unreadable = match &mut run.reading {
                    Some(Reading::Stream(reader)) => reader.push(&chunk, &mut Vec::new()).is_err(),
                    Some(Reading::Whole(body, _)) => {
                        body.extend_from_slice(&chunk);
                        false
                    }
                    None => false,
                };
                if unreadable {
                    // Not readable alongside: it still goes to the client as it came.
                    run.reading = None;
                }
                Some(Ok::<Bytes, std::io::Error>(chunk))
            }
            Some(Err(e)) => {
                // The upstream broke off: the client's connection is broken off too, so a
                // truncated answer never reads as a complete one.
                run.reading = None;
                run.end();
                Some(Err(std::io::Error::other(e.to_string())))
            }
            None => {
                run.end();
                None
            }
        })
    });
    *out.body_mut() = Body::from_stream(chunks);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_finds_the_model_value_and_splice_replaces_only_it() {
        let body = br#"{"max_tokens":5, "model" : "smart\u0021","x":{"model":"no"},"stream":true}"#;
        let head = peek(body).unwrap();
        assert_eq!(head.model, "smart!");
        assert!(head.stream);
        assert_eq!(&body[head.range.clone()], br#""smart\u0021""#);
        let out = splice(body, &head.range, "claude-\"x\"");
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"max_tokens":5, "model" : "claude-\"x\"","x":{"model":"no"},"stream":true}"#
        );
    }

    #[test]
    fn peek_leaves_what_it_cannot_read_to_the_reader() {
        for body in [
            &br#"{"model":1}"#[..],
            br#"{"model":"a","model":"b"}"#,
            br#"{"model":"a","stream":"yes"}"#,
            br#"{"stream":true}"#,
            br#"["model"]"#,
            b"\xff\xfe",
            br#"{"model":"a""#,
        ] {
            assert_eq!(peek(body), None, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn repeated_wire_headers_are_joined_and_others_left_out() {
        let mut h = HeaderMap::new();
        h.append("anthropic-beta", HeaderValue::from_static("a-1"));
        h.append("anthropic-beta", HeaderValue::from_static("b-2"));
        h.append("authorization", HeaderValue::from_static("Bearer client"));
        let got = wire_headers(&h, &["anthropic-version", "anthropic-beta"]);
        assert_eq!(got, [("anthropic-beta".to_owned(), "a-1,b-2".to_owned())]);
    }
}
