//! [`ChatStream`]: a streamed turn, decoded chunk by chunk as the bytes arrive.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};

use super::Inner;
use super::body::Body;
use super::record::Recording;
use crate::error::{Error, Result};
use crate::turn::TurnReader;
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

enum Outcome {
    Running,
    Ended,
    /// The error's text and partial response, for a `finish` after the error was taken.
    Failed(String, Option<Box<ChatResponse>>),
}

struct State {
    inner: Arc<Inner>,
    body: Body,
    reader: TurnReader<'static>,
    scratch: Vec<StreamEvent>,
    pending: VecDeque<StreamEvent>,
    error: Option<Error>,
    recording: Option<Recording>,
    outcome: Outcome,
    response: Option<ChatResponse>,
    /// The request's `gen_ai.chat` span, open until the stream ends or is dropped.
    span: tracing::Span,
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
        reader: TurnReader<'static>,
        recording: Option<Recording>,
        span: tracing::Span,
    ) -> Self {
        Self {
            state: Box::new(State {
                inner,
                body,
                reader,
                scratch: Vec::new(),
                pending: VecDeque::new(),
                error: None,
                recording,
                outcome: Outcome::Running,
                response: None,
                span,
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
        let span = s.span.clone();
        let _entered = span.enter();
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
                    if let Some(rec) = &mut s.recording {
                        rec.bytes.extend_from_slice(&chunk);
                    }
                    let pushed = s.reader.push(&chunk, &mut s.scratch);
                    s.pending.extend(s.scratch.drain(..));
                    if let Err(e) = pushed {
                        s.fail(e);
                    }
                }
                Poll::Ready(Ok(None)) => {
                    let finished = s.reader.finish(&mut s.scratch);
                    s.pending.extend(s.scratch.drain(..));
                    match finished {
                        Ok(response) => s.succeed(response),
                        Err(e) => s.fail(e),
                    }
                }
                Poll::Ready(Err(e)) => {
                    let partial = s.reader.interrupt();
                    let received = s.body.received();
                    let e = s.inner.body_error(e, partial, received);
                    s.fail(e);
                }
            }
        }
    }
}

impl State {
    fn succeed(&mut self, response: ChatResponse) {
        record_response(&self.span, &response);
        self.outcome = Outcome::Ended;
        self.record(false);
        self.response = Some(response);
    }

    fn fail(&mut self, e: Error) {
        let e = self.inner.redact(e);
        self.span.record("error.type", e.kind_name());
        if let Some(partial) = e.partial() {
            record_response(&self.span, partial);
        }
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

/// Records what a response tells a `gen_ai.*` span: finish reason, token counts, model.
pub(crate) fn record_response(span: &tracing::Span, response: &ChatResponse) {
    span.record(
        "gen_ai.response.finish_reasons",
        response.finish_reason.as_str(),
    );
    if let Some(usage) = &response.usage {
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    if let Some(serde_json::Value::String(model)) = response.extra.get("model") {
        span.record("gen_ai.response.model", model.as_str());
    }
}

impl Drop for ChatStream {
    /// A stream dropped before its end is still recorded, marked incomplete.
    fn drop(&mut self) {
        self.state.record(true);
    }
}
