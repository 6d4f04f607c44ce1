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
    // Events parsed before an SSE error are fed first, so an error the decoder finds earlier in
    // the byte stream wins however the body was chunked.
    for chunk in chunks {
        let pushed = parser.push(chunk, &mut sse);
        feed(&mut sse, &mut events)?;
        pushed.map_err(sse_error)?;
    }
    let finished = parser.finish(&mut sse);
    feed(&mut sse, &mut events)?;
    finished.map_err(sse_error)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::openai::OpenAi;

    #[test]
    fn an_error_before_bad_bytes_wins_however_chunked() {
        let body: &[u8] =
            b"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\ndata: \xff\n\n";
        let provider = OpenAi::new();
        let whole = replay_chunks(&provider, [body]).unwrap_err();
        let cut = body.iter().position(|&b| b == 0xff).unwrap();
        let split = replay_chunks(&provider, [&body[..cut], &body[cut..]]).unwrap_err();
        assert!(matches!(whole, Error::Api(_)), "{whole}");
        assert_eq!(whole.to_string(), split.to_string());
    }
}
