//! Decoding a captured response body, a stream or JSON, with no IO: what `toolwire replay`, the
//! fixture tests and the benches run. Every function here reads through the one
//! [`TurnReader`], the same path the client's streams take.

use crate::error::{Error, Result};
use crate::provider::{HttpRequest, Provider};
use crate::turn::{Limits, TurnReader};
use crate::types::{ChatResponse, StreamEvent};

/// What a captured body decoded to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Replay {
    /// The events, in order (empty for a JSON body).
    pub events: Vec<StreamEvent>,
    /// The final response.
    pub response: ChatResponse,
}

/// Whether `body` is a JSON document rather than an SSE stream: its first non-blank byte opens
/// an object or array. (The client's recorder and the mock provider tell bodies apart with it.)
#[cfg(feature = "client")]
pub(crate) fn is_json_body(body: &[u8]) -> bool {
    matches!(
        body.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{') | Some(b'[')
    )
}

/// Decodes a captured body (JSON or a stream, told apart by its first bytes). Errors say
/// where (line) and what.
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
    read_turn(reader(provider, request), std::iter::once(body), true)
}

/// Decodes a body delivered in arbitrary chunks (the property tests split bodies at every
/// kind of boundary and expect the same result).
pub fn replay_chunks<'a>(
    provider: &dyn Provider,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Replay> {
    read_turn(reader(provider, None), chunks, true)
}

/// Decodes a body read from `source` piece by piece (a file of any size, in bounded memory).
/// With `keep_events` false the events are not kept ([`Replay::events`] is empty), so memory
/// holds only the turn itself.
pub fn replay_reader(
    provider: &dyn Provider,
    request: Option<&HttpRequest>,
    mut source: impl std::io::Read,
    keep_events: bool,
) -> Result<Replay> {
    let mut reader = reader(provider, request);
    let mut events = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match source.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::input("body", e.to_string())),
        };
        reader.push(&buf[..n], &mut events)?;
        if !keep_events {
            events.clear();
        }
    }
    let response = reader.finish(&mut events)?;
    if !keep_events {
        events.clear();
    }
    Ok(Replay { events, response })
}

fn reader<'p>(provider: &'p dyn Provider, request: Option<&HttpRequest>) -> TurnReader<'p> {
    match request {
        Some(r) => TurnReader::for_request(provider, r),
        None => TurnReader::new(provider),
    }
    .with_limits(Limits::for_files())
}

fn read_turn<'a>(
    mut reader: TurnReader<'_>,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    keep_events: bool,
) -> Result<Replay> {
    let mut events = Vec::new();
    for chunk in chunks {
        reader.push(chunk, &mut events)?;
        if !keep_events {
            events.clear();
        }
    }
    let response = reader.finish(&mut events)?;
    Ok(Replay { events, response })
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
    use crate::sse::{SseError, SseEvent, SseParser, parse_all};

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

    /// Every `response.sse` and `response.ndjson` below `dir`, recursively.
    fn stream_bodies(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stream_bodies(&path, out);
            } else if path
                .file_name()
                .is_some_and(|n| n == "response.sse" || n == "response.ndjson")
            {
                out.push(path);
            }
        }
    }

    /// The SSE events of `pieces`, or the parser's error.
    fn sse_events(pieces: &[&[u8]]) -> std::result::Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for piece in pieces {
            parser.push(piece, &mut out)?;
        }
        parser.finish(&mut out)?;
        Ok(out)
    }

    /// Every two-piece cut of every stream fixture, exhaustively. A decoder sees only the SSE
    /// events (never chunk boundaries), so identical events at every cut mean an identical
    /// decode at every cut; `tests/props.rs` checks the full decode one byte at a time and at
    /// random cuts.
    #[test]
    fn fixtures_give_the_same_sse_events_at_every_single_cut() {
        let mut bodies = Vec::new();
        stream_bodies(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut bodies,
        );
        assert!(bodies.len() > 10, "stream fixtures found: {}", bodies.len());
        for path in bodies {
            let body = std::fs::read(&path).unwrap();
            let events = parse_all(&body);
            assert_eq!(sse_events(&[&body]), events);
            for cut in 0..=body.len() {
                let (a, b) = body.split_at(cut);
                let split = sse_events(&[a, b]);
                assert!(
                    split == events,
                    "{}: a cut at byte {cut} gives different SSE events:\nwhole: {events:?}\nsplit: {split:?}",
                    path.display()
                );
            }
        }
    }
}
