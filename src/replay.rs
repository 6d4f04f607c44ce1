//! Decoding a captured response body, SSE or JSON, with no IO: what `toolwire replay`, the
//! fixture tests and the benches run.

use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::sse::{SseError, SseParser};
use crate::types::{ChatResponse, StreamEvent};

/// What a captured body decoded to.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The events, in order (empty for a JSON body).
    pub events: Vec<StreamEvent>,
    /// The final response.
    pub response: ChatResponse,
}

/// Whether `body` is a JSON document rather than an SSE stream: its first non-blank byte opens
/// an object or array.
pub fn is_json_body(body: &[u8]) -> bool {
    matches!(
        body.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{') | Some(b'[')
    )
}

/// Decodes a captured body: JSON bodies through [`Provider::decode`], SSE through a fresh
/// decoder. Errors say where (SSE line) and what.
pub fn replay(provider: &dyn Provider, body: &[u8]) -> Result<Replay> {
    if is_json_body(body) {
        return Ok(Replay {
            events: Vec::new(),
            response: provider.decode(body)?,
        });
    }
    replay_chunks(provider, std::iter::once(body))
}

/// Decodes an SSE body delivered in arbitrary chunks (the property tests split bodies at every
/// kind of boundary and expect the same result).
pub fn replay_chunks<'a>(
    provider: &dyn Provider,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Replay> {
    let kind = provider.info().kind;
    let mut parser = SseParser::default();
    let mut decoder = provider.decoder();
    let mut sse = Vec::new();
    let mut events = Vec::new();
    let sse_error = |e: SseError| Error::decode(kind, "SSE stream", e);
    let mut feed = |sse: &mut Vec<crate::sse::SseEvent>, events: &mut Vec<StreamEvent>| {
        for ev in sse.drain(..) {
            decoder
                .feed(ev.event.as_deref(), &ev.data, events)
                .map_err(|e| at_line(e, ev.line))?;
        }
        Ok::<(), Error>(())
    };
    for chunk in chunks {
        parser.push(chunk, &mut sse).map_err(sse_error)?;
        feed(&mut sse, &mut events)?;
    }
    parser.finish(&mut sse).map_err(sse_error)?;
    feed(&mut sse, &mut events)?;
    let response = decoder.finish(&mut events)?;
    Ok(Replay { events, response })
}

/// Adds the SSE line to a decode error's location.
pub(crate) fn at_line(e: Error, line: usize) -> Error {
    match e {
        Error::Decode {
            provider,
            what,
            message,
        } => Error::Decode {
            provider,
            what: format!("{what} at line {line}"),
            message,
        },
        other => other,
    }
}
