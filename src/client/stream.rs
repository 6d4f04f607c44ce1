//! [`ChatStream`]: a streamed turn, decoded chunk by chunk as the bytes arrive.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

use super::body::Body;
use super::record::Recording;
use super::{BOM, Inner, argument_limit_reason};
use crate::error::{Error, Result};
use crate::provider::{NameMap, StreamDecoder};
use crate::replay::{at_line, is_json_body};
use crate::sse::{SseError, SseEvent, SseParser};
use crate::types::{ChatResponse, StreamEvent};

/// One streamed turn: a `Stream` of [`StreamEvent`]s, each yielded as soon as its bytes arrive,
/// then the final [`ChatResponse`].
///
/// A failure (a dropped connection, a stall, an error event, a limit) is yielded once as an
/// `Err`, after the events that arrived before it, and ends the stream. Its
/// [`Error::partial`] holds what had arrived, with calls still being assembled marked
/// `truncated`: never executed, never lost. A server that answers a stream request with a JSON
/// body is decoded all the same, its events yielded at the end.
pub struct ChatStream {
    state: Box<State>,
}

enum Mode {
    /// Nothing but whitespace (and a byte order mark) seen yet.
    Sniff(Sniffer),
    /// Server-Sent Events.
    Sse,
    /// A whole JSON body, decoded at the end.
    Json(Vec<u8>),
}

enum Outcome {
    Running,
    Ended,
    /// The error's text and partial response, for a `finish` after the error was taken.
    Failed(String, Option<Box<ChatResponse>>),
}

struct State {
    inner: Arc<Inner>,
    body: Body,
    parser: SseParser,
    decoder: Box<dyn StreamDecoder>,
    names: NameMap,
    mode: Mode,
    sse: Vec<SseEvent>,
    scratch: Vec<StreamEvent>,
    pending: VecDeque<StreamEvent>,
    error: Option<Error>,
    argument_bytes: Vec<usize>,
    recording: Option<Recording>,
    outcome: Outcome,
    response: Option<ChatResponse>,
}

impl fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.state;
        f.debug_struct("ChatStream")
            .field("provider", &s.inner.kind())
            .field("received", &s.body.received())
            .field("pending", &s.pending.len())
            .field("ended", &s.response.is_some())
            .finish_non_exhaustive()
    }
}

impl ChatStream {
    pub(crate) fn new(
        inner: Arc<Inner>,
        body: Body,
        decoder: Box<dyn StreamDecoder>,
        names: NameMap,
        recording: Option<Recording>,
    ) -> Self {
        let parser = SseParser::new(inner.limits.max_event_bytes);
        Self {
            state: Box::new(State {
                inner,
                body,
                parser,
                decoder,
                names,
                mode: Mode::Sniff(Sniffer::default()),
                sse: Vec::new(),
                scratch: Vec::new(),
                pending: VecDeque::new(),
                error: None,
                argument_bytes: Vec::new(),
                recording,
                outcome: Outcome::Running,
                response: None,
            }),
        }
    }

    /// The final response, once the stream ended cleanly.
    pub fn response(&self) -> Option<&ChatResponse> {
        self.state.response.as_ref()
    }

    /// Drains the rest of the stream and returns the final response, or the error that ended
    /// it (again, if it was already yielded).
    pub async fn finish(mut self) -> Result<ChatResponse> {
        while let Some(item) = self.next().await {
            item?;
        }
        let state = &mut *self.state;
        if let Some(response) = state.response.take() {
            return Ok(response);
        }
        let (text, partial) = match &mut state.outcome {
            Outcome::Failed(text, partial) => (text.clone(), partial.take()),
            _ => ("the stream ended without a response".to_owned(), None),
        };
        Err(Error::Stream {
            provider: state.inner.kind(),
            reason: format!("the stream already failed: {text}"),
            partial,
        })
    }
}

impl Stream for ChatStream {
    type Item = Result<StreamEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let s = &mut *self.state;
        loop {
            if let Some(event) = s.pending.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(e) = s.error.take() {
                return Poll::Ready(Some(Err(e)));
            }
            if !matches!(s.outcome, Outcome::Running) {
                return Poll::Ready(None);
            }
            match s.body.poll_chunk(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(Some(chunk))) => {
                    if let Err(e) = s.consume(&chunk) {
                        s.fail(e);
                    }
                }
                Poll::Ready(Ok(None)) => match s.end() {
                    Ok(response) => s.succeed(response),
                    Err(e) => s.fail(e),
                },
                Poll::Ready(Err(e)) => {
                    let partial = s.partial();
                    let received = s.body.received();
                    let e = s.inner.body_error(e, partial, received);
                    s.fail(e);
                }
            }
        }
    }
}

impl State {
    /// Feeds one chunk of bytes; decoded events go to `pending`.
    fn consume(&mut self, chunk: &[u8]) -> Result<()> {
        if let Some(rec) = &mut self.recording {
            rec.bytes.extend_from_slice(chunk);
        }
        match &mut self.mode {
            Mode::Sse => self.push_sse(chunk),
            Mode::Json(buf) => {
                buf.extend_from_slice(chunk);
                Ok(())
            }
            Mode::Sniff(sniffer) => {
                let Some(start) = sniffer.push(chunk) else {
                    return Ok(());
                };
                let lines = sniffer.lines;
                let indented = sniffer.indented;
                if start.prefix.is_empty() && is_json_body(start.rest) {
                    // Line ends kept so a JSON error's line number points into the body.
                    let mut buf = vec![b'\n'; lines];
                    buf.extend_from_slice(start.rest);
                    self.mode = Mode::Json(buf);
                    return Ok(());
                }
                self.mode = Mode::Sse;
                // The skipped whitespace, replayed as what it means to the parser: blank lines
                // (line numbers stay right) and, before the first field, one blank that makes
                // that line an unknown field as the original indentation did.
                for _ in 0..lines {
                    self.push_sse(b"\n")?;
                }
                if indented {
                    self.push_sse(b" ")?;
                }
                self.push_sse(start.prefix)?;
                self.push_sse(start.rest)
            }
        }
    }

    fn push_sse(&mut self, bytes: &[u8]) -> Result<()> {
        let pushed = self.parser.push(bytes, &mut self.sse);
        // Events completed before a bad line are still delivered.
        self.feed_events()?;
        pushed.map_err(|e| self.sse_error(e))
    }

    fn sse_error(&mut self, e: SseError) -> Error {
        let kind = self.inner.kind();
        match e {
            SseError::InvalidUtf8 { .. } => Error::Decode {
                provider: kind,
                what: "SSE stream".into(),
                message: e.to_string(),
                partial: self.partial(),
            },
            SseError::TooLarge { .. } => Error::Stream {
                provider: kind,
                reason: format!("{e} (Limits::max_event_bytes)"),
                partial: self.partial(),
            },
        }
    }

    /// Runs the parsed SSE events through the decoder.
    fn feed_events(&mut self) -> Result<()> {
        let mut result = Ok(());
        for ev in self.sse.drain(..) {
            if let Err(e) = self
                .decoder
                .feed(ev.event.as_deref(), &ev.data, &mut self.scratch)
            {
                result = Err(at_line(e, ev.line));
                break;
            }
        }
        self.sse.clear();
        self.take_events()?;
        result.map_err(|e| {
            // Nothing is lost: a payload that cannot be decoded keeps what came before it.
            let mut e = match e {
                Error::Decode { partial: None, .. } => {
                    let partial = crate::replay::partial_of(self.decoder.as_mut());
                    e.with_partial(partial)
                }
                e => e,
            };
            self.names.restore_error(&mut e);
            e
        })
    }

    /// Moves decoded events to `pending`, restoring names and enforcing the argument limit.
    fn take_events(&mut self) -> Result<()> {
        let max = self.inner.limits.max_argument_bytes;
        let mut events = std::mem::take(&mut self.scratch);
        let mut over = None;
        for mut event in events.drain(..) {
            if let StreamEvent::ToolCallDelta { index, fragment } = &event {
                if self.argument_bytes.len() <= *index {
                    self.argument_bytes.resize(index + 1, 0);
                }
                let total = &mut self.argument_bytes[*index];
                *total = total.saturating_add(fragment.len());
                if *total > max {
                    over = Some(*index);
                    break;
                }
            }
            self.names.restore_event(&mut event);
            self.pending.push_back(event);
        }
        // Hand the (emptied) buffer back so its capacity is reused.
        events.clear();
        self.scratch = events;
        match over {
            None => Ok(()),
            Some(index) => Err(Error::Stream {
                provider: self.inner.kind(),
                reason: argument_limit_reason(index, max),
                partial: self.partial(),
            }),
        }
    }

    /// The body ended: the final response, or why the turn is incomplete.
    fn end(&mut self) -> Result<ChatResponse> {
        match std::mem::replace(&mut self.mode, Mode::Sse) {
            Mode::Json(buf) => {
                let response = self.inner.decode_body(&buf, &self.names)?;
                self.pending.extend(events_of(&response));
                Ok(response)
            }
            Mode::Sniff(sniffer) => {
                // A body of whitespace, or the start of a byte order mark that never finished.
                self.push_sse(sniffer.unfinished_bom())?;
                self.end_sse()
            }
            Mode::Sse => self.end_sse(),
        }
    }

    /// The end of an SSE body: the last event, then the decoder's verdict.
    fn end_sse(&mut self) -> Result<ChatResponse> {
        let finished = self.parser.finish(&mut self.sse);
        self.feed_events()?;
        finished.map_err(|e| self.sse_error(e))?;
        let result = self.decoder.finish(&mut self.scratch);
        self.take_events()?;
        let mut response = result.map_err(|mut e| {
            self.names.restore_error(&mut e);
            e
        })?;
        self.names.restore_response(&mut response);
        Ok(response)
    }

    /// What the turn holds so far, unfinished calls marked `truncated`. Ends the decoder.
    fn partial(&mut self) -> Option<Box<ChatResponse>> {
        if matches!(self.mode, Mode::Json(_)) {
            return None;
        }
        let mut sink = Vec::new();
        let mut partial = match self.decoder.finish(&mut sink) {
            Ok(response) => Some(Box::new(response)),
            Err(Error::Stream { partial, .. }) => partial,
            Err(e) => e.partial().cloned().map(Box::new),
        };
        if let Some(p) = partial.as_deref_mut() {
            self.names.restore_response(p);
        }
        partial
    }

    fn succeed(&mut self, response: ChatResponse) {
        self.outcome = Outcome::Ended;
        self.record(false);
        self.response = Some(response);
    }

    fn fail(&mut self, e: Error) {
        let e = self.inner.redact(e);
        self.outcome = Outcome::Failed(e.to_string(), e.partial().cloned().map(Box::new));
        self.record(false);
        self.error = Some(e);
    }

    /// Writes the recording once, whatever the outcome; a failed write never replaces it
    /// (it is kept for [`super::Client::take_record_errors`]).
    fn record(&mut self, incomplete: bool) {
        if let Some(mut rec) = self.recording.take() {
            rec.incomplete = incomplete;
            self.inner.record(&rec);
        }
    }
}

impl Drop for ChatStream {
    /// A stream dropped before its end is still recorded, marked incomplete.
    fn drop(&mut self) {
        self.state.record(true);
    }
}

/// Finds where a body starts (past a byte order mark and leading whitespace) without keeping
/// the whitespace: only counts, so each chunk is looked at once whatever the chunking.
#[derive(Debug, Default)]
struct Sniffer {
    /// Bytes of a leading byte order mark matched so far.
    bom: usize,
    /// The byte order mark is settled (matched whole, or absent).
    past_bom: bool,
    /// Line ends in the leading whitespace (CR, LF, or CRLF as one).
    lines: usize,
    /// The last whitespace byte was a CR, so an LF right after it ends the same line.
    after_cr: bool,
    /// Blanks (space, tab, form feed) follow the last line end.
    indented: bool,
}

/// Where the body starts: `prefix` (the start of a byte order mark that turned out not to
/// be one), then `rest`, which begins with the first byte that is not whitespace.
struct Start<'a> {
    prefix: &'static [u8],
    rest: &'a [u8],
}

impl Sniffer {
    /// Looks at the next chunk; `Some` once the body has started.
    fn push<'a>(&mut self, mut chunk: &'a [u8]) -> Option<Start<'a>> {
        while !self.past_bom {
            let (&b, tail) = chunk.split_first()?;
            if BOM.get(self.bom) == Some(&b) {
                self.bom += 1;
                chunk = tail;
                self.past_bom = self.bom == BOM.len();
            } else {
                self.past_bom = true;
                if self.bom > 0 {
                    return Some(Start {
                        prefix: self.unfinished_bom(),
                        rest: chunk,
                    });
                }
            }
        }
        for (i, &b) in chunk.iter().enumerate() {
            match b {
                b'\n' => {
                    if !self.after_cr {
                        self.lines += 1;
                    }
                    self.after_cr = false;
                    self.indented = false;
                }
                b'\r' => {
                    self.lines += 1;
                    self.after_cr = true;
                    self.indented = false;
                }
                b' ' | b'\t' | 0x0C => {
                    self.after_cr = false;
                    self.indented = true;
                }
                _ => {
                    return Some(Start {
                        prefix: &[],
                        rest: chunk.get(i..).unwrap_or_default(),
                    });
                }
            }
        }
        None
    }

    /// The bytes of a byte order mark begun but not finished (they are body bytes after all).
    fn unfinished_bom(&self) -> &'static [u8] {
        if self.bom < BOM.len() {
            BOM.get(..self.bom).unwrap_or_default()
        } else {
            &[]
        }
    }
}

/// The events a streamed turn with this response would have produced, for a server that
/// answered a stream request with a whole JSON body.
fn events_of(response: &ChatResponse) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    if let Some(text) = &response.reasoning {
        out.push(StreamEvent::ReasoningDelta { text: text.clone() });
    }
    if let Some(text) = &response.text {
        out.push(StreamEvent::TextDelta { text: text.clone() });
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        out.push(StreamEvent::ToolCallStarted {
            index,
            id: (!call.has_synthetic_id()).then(|| call.id.clone()),
            name: call.name.clone(),
        });
        if !call.raw_arguments.is_empty() {
            out.push(StreamEvent::ToolCallDelta {
                index,
                fragment: call.raw_arguments.clone(),
            });
        }
        out.push(StreamEvent::ToolCallComplete {
            index,
            call: call.clone(),
        });
    }
    if let Some(usage) = response.usage {
        out.push(StreamEvent::Usage { usage });
    }
    out.push(StreamEvent::Finish {
        reason: response.finish_reason.clone(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks`; the start's prefix and rest, and the counts at that point.
    fn sniff(chunks: &[&[u8]]) -> Option<(Vec<u8>, Vec<u8>, usize, bool)> {
        let mut s = Sniffer::default();
        for chunk in chunks {
            if let Some(start) = s.push(chunk) {
                return Some((
                    start.prefix.to_vec(),
                    start.rest.to_vec(),
                    s.lines,
                    s.indented,
                ));
            }
        }
        None
    }

    #[test]
    fn leading_whitespace_is_counted_not_kept() {
        // 40k line ends one byte at a time: each chunk is looked at once, nothing is buffered.
        let mut s = Sniffer::default();
        for _ in 0..40_000 {
            assert!(s.push(b"\n").is_none());
        }
        let start = s.push(b"data: x").unwrap();
        assert_eq!((start.prefix, start.rest), (&b""[..], &b"data: x"[..]));
        assert_eq!(s.lines, 40_000);
        assert!(!s.indented);
    }

    #[test]
    fn line_ends_count_like_the_sse_parser() {
        // CR, LF and CRLF (even split across chunks) are one line end each.
        let got = sniff(&[b"\r", b"\n\n\r\r\n", b" \t", b"{"]).unwrap();
        assert_eq!(got, (vec![], b"{".to_vec(), 4, true));
        let got = sniff(&[b"  \n", b"data: 1\n\n"]).unwrap();
        assert_eq!(got, (vec![], b"data: 1\n\n".to_vec(), 1, false));
        assert_eq!(sniff(&[b" \r\n\t", b""]), None);
    }

    #[test]
    fn byte_order_marks_split_or_false() {
        let got = sniff(&[b"\xEF", b"\xBB", b"\xBF\n{}"]).unwrap();
        assert_eq!(got, (vec![], b"{}".to_vec(), 1, false));
        // The start of a mark that is not one: those bytes are the body's first bytes.
        let got = sniff(&[b"\xEF\xBB", b"x"]).unwrap();
        assert_eq!(got, (b"\xEF\xBB".to_vec(), b"x".to_vec(), 0, false));
        let mut s = Sniffer::default();
        assert!(s.push(b"\xEF").is_none());
        assert_eq!(s.unfinished_bom(), b"\xEF");
        assert!(s.push(b"\xBB\xBF").is_none());
        assert_eq!(s.unfinished_bom(), b"");
        // A mark in the middle is no mark.
        let got = sniff(&[b" \xEF\xBB\xBF"]).unwrap();
        assert_eq!(got, (vec![], b"\xEF\xBB\xBF".to_vec(), 0, true));
    }
}
