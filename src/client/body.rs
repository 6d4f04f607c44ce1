//! A response body read chunk by chunk under the client's time and size limits.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::time::{Instant, Sleep};

use crate::error::TimeoutPhase;

/// Why reading stopped early.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// A deadline passed: which one, and its configured length.
    Timeout(TimeoutPhase, Duration),
    /// The connection failed mid-body.
    Transport(reqwest::Error),
    /// More than the byte limit arrived.
    TooLarge(usize),
}

/// When the body must make progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    /// The first chunk must arrive by then (the request's first-byte deadline).
    pub first_byte: Instant,
    /// The configured first-byte limit, for the error.
    pub first_byte_limit: Duration,
    /// The longest gap between chunks after the first.
    pub idle: Duration,
    /// Everything must be over by then.
    pub total: Instant,
    /// The configured total limit, for the error.
    pub total_limit: Duration,
}

/// The body stream plus its one timer, re-armed on every chunk.
pub(crate) struct Body {
    chunks: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    timer: Pin<Box<Sleep>>,
    deadlines: Deadlines,
    /// The phase the timer stands for.
    phase: TimeoutPhase,
    received: usize,
    limit: usize,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("received", &self.received)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Body {
    pub(crate) fn new(response: reqwest::Response, deadlines: Deadlines, limit: usize) -> Self {
        let (at, phase) = Self::next_deadline(&deadlines, deadlines.first_byte, true);
        Self {
            chunks: Box::pin(response.bytes_stream()),
            timer: Box::pin(tokio::time::sleep_until(at)),
            deadlines,
            phase,
            received: 0,
            limit,
        }
    }

    fn next_deadline(d: &Deadlines, at: Instant, first: bool) -> (Instant, TimeoutPhase) {
        if d.total <= at {
            (d.total, TimeoutPhase::Total)
        } else if first {
            (at, TimeoutPhase::FirstByte)
        } else {
            (at, TimeoutPhase::Idle)
        }
    }

    /// Bytes received so far.
    pub(crate) fn received(&self) -> usize {
        self.received
    }

    /// The next chunk, `None` at the end of the body.
    pub(crate) fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, BodyError>> {
        // The total deadline holds while bytes keep arriving: a server dripping a byte every
        // second never lets the timer below fire, so it is checked on every chunk too.
        if Instant::now() >= self.deadlines.total {
            return Poll::Ready(Err(BodyError::Timeout(
                TimeoutPhase::Total,
                self.deadlines.total_limit,
            )));
        }
        match self.chunks.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                self.received = self.received.saturating_add(chunk.len());
                if self.received > self.limit {
                    return Poll::Ready(Err(BodyError::TooLarge(self.limit)));
                }
                let next = super::after(self.deadlines.idle);
                let (at, phase) = Self::next_deadline(&self.deadlines, next, false);
                self.phase = phase;
                self.timer.as_mut().reset(at);
                Poll::Ready(Ok(Some(chunk)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Err(BodyError::Transport(e))),
            Poll::Ready(None) => Poll::Ready(Ok(None)),
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let limit = match self.phase {
                        TimeoutPhase::Total => self.deadlines.total_limit,
                        TimeoutPhase::FirstByte => self.deadlines.first_byte_limit,
                        _ => self.deadlines.idle,
                    };
                    Poll::Ready(Err(BodyError::Timeout(self.phase, limit)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// Reads the body into `out`, keeping only its first `limit` bytes and stopping quietly
    /// there (for error bodies, where the start is enough). Each chunk lands in `out` as it
    /// arrives, so a caller that gives up waiting, or meets an error, keeps what came.
    pub(crate) async fn read_truncated(&mut self, out: &mut Vec<u8>) -> Result<(), BodyError> {
        let cap = self.limit;
        self.limit = usize::MAX;
        loop {
            match std::future::poll_fn(|cx| self.poll_chunk(cx)).await? {
                Some(chunk) => {
                    let room = cap.saturating_sub(out.len());
                    out.extend_from_slice(chunk.get(..room).unwrap_or(&chunk));
                    if chunk.len() >= room {
                        return Ok(());
                    }
                }
                None => return Ok(()),
            }
        }
    }
}
