//! Decoding a captured response body, SSE or JSON, with no IO: what `toolwire replay`, the
//! fixture tests and the benches run.

use crate::error::{Error, Result};
use crate::provider::{HttpRequest, Provider, ProviderKind, StreamDecoder};
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
    replay_answer(provider, None, body)
}

/// Like [`replay`], for the body that answered `request`: the decoder is chosen for it
/// ([`Provider::decoder_for`]) and tool names it mapped for the wire are mapped back.
pub fn replay_answer(
    provider: &dyn Provider,
    request: Option<&HttpRequest>,
    body: &[u8],
) -> Result<Replay> {
    let mut result = if is_json_body(body) {
        provider.decode(body).map(|response| Replay {
            events: Vec::new(),
            response,
        })
    } else {
        let decoder = match request {
            Some(r) => provider.decoder_for(r),
            None => provider.decoder(),
        };
        replay_with(provider.info().kind, decoder, std::iter::once(body))
    };
    if let Some(names) = request.map(|r| &r.names) {
        match &mut result {
            Ok(replay) => {
                names.restore_response(&mut replay.response);
                replay
                    .events
                    .iter_mut()
                    .for_each(|e| names.restore_event(e));
            }
            Err(e) => names.restore_error(e),
        }
    }
    result
}

/// Decodes an SSE body delivered in arbitrary chunks (the property tests split bodies at every
/// kind of boundary and expect the same result).
pub fn replay_chunks<'a>(
    provider: &dyn Provider,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Replay> {
    replay_with(provider.info().kind, provider.decoder(), chunks)
}

fn replay_with<'a>(
    kind: ProviderKind,
    mut decoder: Box<dyn StreamDecoder>,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Replay> {
    let mut events = Vec::new();
    match feed_all(kind, decoder.as_mut(), chunks, &mut events) {
        Ok(()) => {
            let response = decoder.finish(&mut events)?;
            Ok(Replay { events, response })
        }
        // Nothing is lost: an undecodable payload keeps what the stream delivered before it.
        Err(e @ Error::Decode { .. }) if e.partial().is_none() => {
            Err(e.with_partial(partial_of(decoder.as_mut())))
        }
        Err(e) => Err(e),
    }
}

fn feed_all<'a>(
    kind: ProviderKind,
    decoder: &mut dyn StreamDecoder,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    events: &mut Vec<StreamEvent>,
) -> Result<()> {
    let mut parser = SseParser::default();
    let mut sse = Vec::new();
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
        feed(&mut sse, events)?;
        pushed.map_err(sse_error)?;
    }
    let finished = parser.finish(&mut sse);
    feed(&mut sse, events)?;
    finished.map_err(sse_error)
}

/// What an interrupted decoder holds (unfinished calls `truncated`), or `None` when nothing
/// had arrived.
pub(crate) fn partial_of(decoder: &mut dyn StreamDecoder) -> Option<Box<ChatResponse>> {
    let partial = match decoder.finish(&mut Vec::new()) {
        Ok(response) => Some(Box::new(response)),
        Err(mut e) => e.partial_mut().and_then(Option::take),
    }?;
    let empty =
        partial.text.is_none() && partial.reasoning.is_none() && partial.tool_calls.is_empty();
    (!empty).then_some(partial)
}

/// Adds the SSE line to a decode error's location.
pub(crate) fn at_line(e: Error, line: usize) -> Error {
    match e {
        Error::Decode {
            provider,
            what,
            message,
            partial,
        } => Error::Decode {
            provider,
            what: format!("{what} at line {line}"),
            message,
            partial,
        },
        other => other,
    }
}

#[cfg(test)]
mod partial_tests {
    use super::*;
    use crate::providers::openai::OpenAi;

    #[test]
    fn an_undecodable_payload_keeps_the_call_before_it() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,",
            "\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
            "data: <html>502 Bad Gateway</html>\n\n"
        );
        let err = replay(&OpenAi::new(), body.as_bytes()).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err:?}");
        let partial = err.partial().expect("partial kept");
        assert_eq!(partial.tool_calls[0].raw_arguments, "{\"a\":");
        assert!(!partial.tool_calls[0].is_complete());
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
