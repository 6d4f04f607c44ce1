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
    /// Nothing but whitespace seen yet.
    Sniff(Vec<u8>),
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
                mode: Mode::Sniff(Vec::new()),
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
            Mode::Sniff(seen) => {
                seen.extend_from_slice(chunk);
                // Wait until a byte order mark can be told apart from the start of the body.
                if seen.len() < BOM.len() && BOM.starts_with(seen) {
                    return Ok(());
                }
                if seen.starts_with(BOM) {
                    seen.drain(..BOM.len());
                }
                if seen.iter().all(u8::is_ascii_whitespace) {
                    return Ok(());
                }
                let seen = std::mem::take(seen);
                if is_json_body(&seen) {
                    self.mode = Mode::Json(seen);
                    Ok(())
                } else {
                    self.mode = Mode::Sse;
                    self.push_sse(&seen)
                }
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
            Mode::Sniff(_) | Mode::Sse => {
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
        }
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
        if let Err(e) = self.record() {
            self.fail(e);
            return;
        }
        self.response = Some(response);
    }

    fn fail(&mut self, e: Error) {
        let e = self.inner.redact(e);
        self.outcome = Outcome::Failed(e.to_string(), e.partial().cloned().map(Box::new));
        self.error = Some(match self.record() {
            Ok(()) => e,
            Err(record_error) => record_error,
        });
    }

    /// Writes the recording once, whatever the outcome.
    fn record(&mut self) -> Result<()> {
        match (&self.inner.recorder, self.recording.take()) {
            (Some(recorder), Some(rec)) => recorder.write(&self.inner, &rec).map(drop),
            _ => Ok(()),
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
