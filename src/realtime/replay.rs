//! Recorded sessions: JSON lines, one frame per line, in the order they crossed the socket.
//!
//! ```text
//! {"dir": "client", "event": {"type": "session.update", ...}}
//! {"dir": "server", "event": {"type": "response.function_call_arguments.delta", ...}}
//! {"dir": "server", "bytes": "<base64 of a frame that is not a JSON object>"}
//! {"dir": "server", "close": {"code": 1000, "reason": ""}}
//! ```
//!
//! [`replay`] runs a recording through the dialect's codec with no IO: server events are
//! decoded, client events are observed (a `response.cancel`, a result), and every model response
//! comes out in canonical form, in order. A recording that ends mid-response ends that response
//! as a cut one (open calls `truncated`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::codec::RealtimeCodec;
use super::model::{RealtimeEvent, RealtimeKind, SessionStats};
use crate::error::{ApiError, Error, Result};
use crate::types::ChatResponse;

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the server.
    Server,
    /// From the client.
    Client,
}

/// A close frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Close {
    /// The close code, if any.
    #[serde(default)]
    pub code: Option<u16>,
    /// The close reason.
    #[serde(default)]
    pub reason: String,
}

/// One line of a recorded session: exactly one of `event`, `bytes`, `close`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SessionLine {
    /// Which way the frame went.
    pub dir: Direction,
    /// A JSON-object frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Value>,
    /// Any other frame, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// The socket closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<Close>,
}

impl SessionLine {
    /// A JSON event line.
    pub fn event(dir: Direction, event: Value) -> Self {
        Self {
            dir,
            event: Some(event),
            bytes: None,
            close: None,
        }
    }

    /// A line for a raw frame: a JSON object as an event, anything else as base64 bytes.
    pub fn frame(dir: Direction, frame: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(frame) {
            Ok(v @ Value::Object(_)) => Self::event(dir, v),
            _ => Self {
                dir,
                event: None,
                bytes: Some(base64_encode(frame)),
                close: None,
            },
        }
    }

    /// A close line.
    pub fn close(dir: Direction, code: Option<u16>, reason: &str) -> Self {
        Self {
            dir,
            event: None,
            bytes: None,
            close: Some(Close {
                code,
                reason: reason.to_owned(),
            }),
        }
    }
}

/// Parses a recorded session; a bad line is an [`Error::Input`] naming the line and reason.
/// Empty lines are skipped.
pub fn parse_session(text: &[u8]) -> Result<Vec<SessionLine>> {
    let mut lines = Vec::new();
    for (n, line) in text.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = format!("line {}", n + 1);
        let parsed: SessionLine = serde_json::from_slice(line).map_err(|e| {
            let text = e.to_string();
            let reason = text
                .rsplit_once(" at line ")
                .map_or(text.as_str(), |(r, _)| r);
            Error::input(format!("{at}:{}", e.column()), reason.to_owned())
        })?;
        let kinds = [
            parsed.event.is_some(),
            parsed.bytes.is_some(),
            parsed.close.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(Error::input(
                at,
                "a line holds exactly one of \"event\", \"bytes\", \"close\"",
            ));
        }
        if let Some(b) = &parsed.bytes
            && base64_decode(b).is_none()
        {
            return Err(Error::input(at, "\"bytes\" is not valid base64"));
        }
        lines.push(parsed);
    }
    Ok(lines)
}

/// What a recorded session decodes to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionReplay {
    /// Every event the codec produced, in order.
    pub events: Vec<RealtimeEvent>,
    /// Each model response, in order.
    pub responses: Vec<ChatResponse>,
    /// Error events (and error closes).
    pub errors: Vec<ApiError>,
    /// Call ids the server cancelled.
    pub cancelled: Vec<String>,
    /// Calls still waiting for a result when the recording ended.
    pub awaiting: Vec<String>,
    /// The recording ended (or the socket closed) while a response was being generated.
    pub ended_mid_response: bool,
    /// The counts.
    pub stats: SessionStats,
}

impl SessionReplay {
    /// Everything but the responses, as the `expected.json` golden of a fixture holds it.
    pub fn summary(&self) -> Value {
        let calls: Vec<Value> = self
            .events
            .iter()
            .filter_map(|e| match e {
                RealtimeEvent::CallReady { response, call } => {
                    Some(json!({"response": response, "id": call.id, "name": call.name}))
                }
                _ => None,
            })
            .collect();
        let errors: Vec<Value> = self
            .errors
            .iter()
            .map(|e| json!({"code": e.code, "message": e.message}))
            .collect();
        json!({
            "responses": self.responses.len(),
            "calls_ready": calls,
            "errors": errors,
            "cancelled": self.cancelled,
            "awaiting": self.awaiting,
            "ended_mid_response": self.ended_mid_response,
            "stats": self.stats,
        })
    }
}

/// Runs recorded lines through `kind`'s codec.
pub fn replay_lines(kind: RealtimeKind, lines: &[SessionLine]) -> SessionReplay {
    replay_with(RealtimeCodec::new(kind), lines)
}

/// Runs recorded lines through a given codec (a custom dialect).
pub fn replay_with(mut codec: RealtimeCodec, lines: &[SessionLine]) -> SessionReplay {
    replay_into(&mut codec, lines)
}

/// Runs recorded lines through `codec`, which keeps the session's state afterwards (the calls
/// still awaiting results, say).
pub fn replay_into(codec: &mut RealtimeCodec, lines: &[SessionLine]) -> SessionReplay {
    let mut events = Vec::new();
    let mut ended_mid_response = false;
    for line in lines {
        match (line.dir, &line.event, &line.bytes, &line.close) {
            (Direction::Server, Some(event), _, _) => codec.feed(event.clone(), &mut events),
            (Direction::Server, _, Some(b), _) => {
                let frame = base64_decode(b).unwrap_or_default();
                codec.feed_frame(&frame, &mut events);
            }
            (_, _, _, Some(close)) => {
                ended_mid_response |= codec.is_responding();
                codec.close(close.code, &close.reason, &mut events);
            }
            (Direction::Client, Some(event), _, _) => codec.observe_client(event),
            _ => {}
        }
    }
    if !codec.is_closed() {
        ended_mid_response |= codec.is_responding();
        codec.close(None, "the recording ended", &mut events);
    }
    let mut replay = SessionReplay {
        events: Vec::new(),
        responses: Vec::new(),
        errors: Vec::new(),
        cancelled: Vec::new(),
        awaiting: codec.awaiting(),
        ended_mid_response,
        stats: codec.stats(),
    };
    for e in &events {
        match e {
            RealtimeEvent::ResponseDone { result, .. } => replay.responses.push(result.clone()),
            RealtimeEvent::Error(err) => replay.errors.push(err.clone()),
            RealtimeEvent::CallsCancelled { ids } => replay.cancelled.extend(ids.iter().cloned()),
            _ => {}
        }
    }
    replay.events = events;
    replay
}

/// Parses and replays a recorded session file's bytes.
pub fn replay(kind: RealtimeKind, text: &[u8]) -> Result<SessionReplay> {
    Ok(replay_lines(kind, &parse_session(text)?))
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` when it is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for data in [
            &b""[..],
            b"f",
            b"fo",
            b"foo",
            b"foob",
            b"\x00\xff\x10binary",
        ] {
            let text = base64_encode(data);
            assert_eq!(base64_decode(&text).unwrap(), data, "{text}");
        }
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        assert!(base64_decode("not base64!").is_none());
    }

    #[test]
    fn bad_lines_name_their_place() {
        let err = parse_session(b"{\"dir\":\"server\",\"event\":{}}\n\n{\"dir\":\"up\"}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3"), "{err}");
        let err = parse_session(b"{\"dir\":\"server\"}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
    }
}
