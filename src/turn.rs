//! Reading one model turn, with no IO: bytes in any chunking → [`StreamEvent`]s → the final
//! [`ChatResponse`], or a typed error that carries what had arrived.
//!
//! Everything between the socket (or the file) and the canonical response happens here, once:
//! finding where the body starts (a byte order mark, leading blank lines), telling a JSON body
//! from a stream and from an HTML error page, framing payloads (Server-Sent Events, or one JSON
//! object per line for [`Framing::Ndjson`] wires), the provider's [`StreamDecoder`], the size
//! limits (body, event, argument text — each checked as the bytes are appended), restoring tool
//! names the encoder rewrote, and keeping the partial response when anything fails. The client's
//! `chat` and `stream`, `toolwire replay`, the conformance runner, the recorder and the property
//! tests all read turns through a [`TurnReader`], so they cannot disagree.
//!
//! Work is linear in the input: each byte is looked at a bounded number of times, a payload is
//! parsed once, and argument text is appended, never rebuilt.

use std::fmt;
use std::sync::Arc;

use crate::error::{ApiError, Error, Result};
use crate::eventstream::{Frame, FrameError, FrameReader};
use crate::provider::{Framing, HttpRequest, NameMap, Provider, ProviderKind, StreamDecoder};
use crate::sse::{EventSink, Lines, Pushed, SseError, SseParser};
use crate::types::{ChatResponse, StreamEvent};
use serde_json::Value;

/// Size limits that keep memory bounded whatever a server (or a file) sends.
///
/// Non-exhaustive: start from [`Limits::default`] (or [`Limits::for_files`]) and the `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest response body or whole stream.
    pub max_body_bytes: usize,
    /// The largest single event (an SSE event's data, or one NDJSON line).
    pub max_event_bytes: usize,
    /// The largest argument text of one tool call.
    pub max_argument_bytes: usize,
    /// How much of an error body is kept (the rest is dropped, not an error).
    pub max_error_body_bytes: usize,
}

impl Default for Limits {
    /// Body 32 MiB, event 8 MiB, arguments 4 MiB, error body 64 KiB.
    fn default() -> Self {
        Self {
            max_body_bytes: 32 << 20,
            max_event_bytes: 8 << 20,
            max_argument_bytes: 4 << 20,
            max_error_body_bytes: 64 << 10,
        }
    }
}

impl Limits {
    /// Limits for a capture on disk (`toolwire replay`, conformance): the file's size bounds
    /// the body and the arguments; one event may still not exceed 64 MiB.
    pub fn for_files() -> Self {
        Self {
            max_body_bytes: usize::MAX,
            max_event_bytes: 64 << 20,
            max_argument_bytes: usize::MAX,
            max_error_body_bytes: 64 << 10,
        }
    }

    /// Sets the body limit.
    pub fn with_max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = n;
        self
    }

    /// Sets the event limit.
    pub fn with_max_event_bytes(mut self, n: usize) -> Self {
        self.max_event_bytes = n;
        self
    }

    /// Sets the argument limit.
    pub fn with_max_argument_bytes(mut self, n: usize) -> Self {
        self.max_argument_bytes = n;
        self
    }

    /// Sets how much of an error body is kept.
    pub fn with_max_error_body_bytes(mut self, n: usize) -> Self {
        self.max_error_body_bytes = n;
        self
    }
}

/// A UTF-8 byte order mark, which some servers put before a body or stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much of an HTML page is kept to name it in the error.
const HTML_KEPT: usize = 64 << 10;

/// The provider a reader decodes for: borrowed (replay, tests) or shared (the client's streams,
/// which outlive any borrow).
enum Handle<'p> {
    Borrowed(&'p dyn Provider),
    Shared(Arc<dyn Provider>),
}

impl Handle<'_> {
    fn get(&self) -> &dyn Provider {
        match self {
            Self::Borrowed(p) => *p,
            Self::Shared(p) => p.as_ref(),
        }
    }
}

/// What the bytes turned out to be.
enum Mode {
    /// Nothing but whitespace (and a byte order mark) seen yet.
    Sniff(Sniffer),
    /// Server-Sent Events.
    Sse(SseParser),
    /// One JSON payload per line.
    Lines(LineSplitter),
    /// Binary event-stream frames ([`Framing::EventStream`]).
    Frames(FrameReader),
    /// A whole JSON document, decoded at the end.
    Json(Vec<u8>),
    /// An HTML page (a proxy's error page): its start, to name it.
    Html(Vec<u8>),
}

/// The reader of one turn. Feed it bytes with [`TurnReader::push`] as they arrive, then call
/// [`TurnReader::finish`] at the end of the body; or [`TurnReader::interrupt`] when the body
/// could not be read to its end (a timeout, a dropped connection), to get what had arrived.
///
/// After an error the reader is spent: further calls return an error saying so.
///
/// ```
/// use toolwire::providers::openai::OpenAi;
/// use toolwire::turn::TurnReader;
///
/// let provider = OpenAi::new();
/// let mut reader = TurnReader::new(&provider);
/// let mut events = Vec::new();
/// reader.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n", &mut events)?;
/// reader.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", &mut events)?;
/// let response = reader.finish(&mut events)?;
/// assert_eq!(response.text.as_deref(), Some("Hi"));
/// # Ok::<(), toolwire::Error>(())
/// ```
pub struct TurnReader<'p> {
    provider: Handle<'p>,
    decoder: Box<dyn StreamDecoder>,
    names: NameMap,
    /// The request the turn answers, without its body: a JSON answer is decoded for it
    /// ([`Provider::decode_for`]).
    request: Option<HttpRequest>,
    limits: Limits,
    framing: Framing,
    mode: Mode,
    received: usize,
    payloads: usize,
    argument_bytes: Vec<usize>,
    scratch: Vec<StreamEvent>,
    /// Set once an error ended the reader: the error's text.
    failed: Option<String>,
    done: bool,
}

impl fmt::Debug for TurnReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnReader")
            .field("provider", &self.kind())
            .field("limits", &self.limits)
            .field("received", &self.received)
            .field("payloads", &self.payloads)
            .finish_non_exhaustive()
    }
}

impl<'p> TurnReader<'p> {
    /// A reader for a turn of `provider` whose request is unknown (a capture on its own).
    pub fn new(provider: &'p dyn Provider) -> Self {
        let decoder = provider.decoder();
        Self::build(Handle::Borrowed(provider), decoder, None)
    }

    /// A reader for the answer to `request`: its decoder is chosen for that request
    /// ([`Provider::decoder_for`]) and tool names the encoder rewrote are restored.
    pub fn for_request(provider: &'p dyn Provider, request: &HttpRequest) -> Self {
        let decoder = provider.decoder_for(request);
        Self::build(Handle::Borrowed(provider), decoder, Some(request))
    }

    fn build(
        provider: Handle<'p>,
        decoder: Box<dyn StreamDecoder>,
        request: Option<&HttpRequest>,
    ) -> Self {
        let names = request.map(|r| r.names.clone()).unwrap_or_default();
        // What reading needs of the request; its body (the whole conversation) is not kept.
        let request = request.map(|r| {
            let mut head =
                HttpRequest::new(r.path.clone(), Value::Null).with_names(r.names.clone());
            head.text_calls = r.text_calls.clone();
            head
        });
        let limits = Limits::default();
        let framing = provider.get().framing();
        Self {
            provider,
            decoder,
            names,
            request,
            limits,
            framing,
            mode: Mode::Sniff(Sniffer::default()),
            received: 0,
            payloads: 0,
            argument_bytes: Vec::new(),
            scratch: Vec::new(),
            failed: None,
            done: false,
        }
    }

    /// Replaces the default [`Limits`].
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Bytes pushed so far.
    pub fn received(&self) -> usize {
        self.received
    }

    fn kind(&self) -> ProviderKind {
        self.provider.get().info().kind
    }

    /// Feeds the next bytes of the body; events decoded from them are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<()> {
        self.check_usable()?;
        let result = self.push_inner(bytes, out);
        result.map_err(|e| self.fail(e))
    }

    /// Feeds one payload that arrived already framed (a WebSocket message, say), bypassing
    /// byte framing. `event` is its event name, if the transport has one.
    pub fn push_payload(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        self.check_usable()?;
        let result = self.count(data.len()).and_then(|()| {
            if data.len() > self.limits.max_event_bytes {
                return Err(self.too_large(format!(
                    "payload larger than {} bytes (Limits::max_event_bytes)",
                    self.limits.max_event_bytes
                )));
            }
            self.payloads += 1;
            let fed = self.decoder.feed(event, data, &mut self.scratch);
            self.take_events(out)?;
            fed
        });
        result.map_err(|e| self.fail(e))
    }

    /// The body ended: the final response, or why the turn is incomplete (a broken stream, an
    /// undecodable body, a provider error), with the partial response where there is one.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        self.check_usable()?;
        let result = self.finish_inner(out).map_err(|e| self.fail(e));
        self.done = true;
        result
    }

    /// The body could not be read to its end (a timeout, a lost connection): what the turn
    /// holds so far, unfinished calls marked `truncated`, or `None` when nothing had arrived.
    /// Ends the reader.
    pub fn interrupt(&mut self) -> Option<Box<ChatResponse>> {
        if self.done || self.failed.is_some() {
            return None;
        }
        self.done = true;
        if !matches!(self.mode, Mode::Sse(_) | Mode::Lines(_) | Mode::Frames(_)) {
            return None;
        }
        let mut partial = partial_of(self.decoder.as_mut());
        if let Some(p) = partial.as_deref_mut() {
            self.names.restore_response(p);
        }
        partial
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(text) = &self.failed {
            return Err(Error::Stream {
                provider: self.kind(),
                reason: format!("the turn already failed: {text}"),
                partial: None,
            });
        }
        if self.done {
            return Err(Error::Stream {
                provider: self.kind(),
                reason: "the turn was already read to its end".into(),
                partial: None,
            });
        }
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<()> {
        self.received = self.received.saturating_add(n);
        if self.received > self.limits.max_body_bytes {
            return Err(self.too_large(format!(
                "response larger than {} bytes (Limits::max_body_bytes)",
                self.limits.max_body_bytes
            )));
        }
        Ok(())
    }

    fn too_large(&self, reason: String) -> Error {
        Error::Stream {
            provider: self.kind(),
            reason,
            partial: None,
        }
    }

    fn push_inner(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<()> {
        self.count(bytes.len())?;
        match &mut self.mode {
            Mode::Sse(_) => self.push_sse(bytes, out),
            Mode::Lines(_) => self.push_lines(bytes, out, false),
            Mode::Frames(_) => self.push_frames(bytes, out),
            Mode::Json(buf) => {
                buf.extend_from_slice(bytes);
                Ok(())
            }
            Mode::Html(buf) => {
                let room = HTML_KEPT.saturating_sub(buf.len());
                buf.extend_from_slice(bytes.get(..room).unwrap_or(bytes));
                Ok(())
            }
            Mode::Sniff(sniffer) => {
                let Some(start) = sniffer.push(bytes) else {
                    return Ok(());
                };
                let (lines, indented) = (sniffer.lines, sniffer.indented);
                self.start(start, lines, indented, out)
            }
        }
    }

    /// The body has started: choose the mode from its first byte and feed what was held back.
    fn start(
        &mut self,
        start: Start<'_>,
        lines: usize,
        indented: bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<()> {
        let first = start.prefix.first().or(start.rest.first()).copied();
        if self.framing == Framing::Ndjson {
            self.mode = Mode::Lines(LineSplitter::new(self.limits.max_event_bytes, lines));
            self.push_lines(start.prefix, out, false)?;
            return self.push_lines(start.rest, out, false);
        }
        match first {
            Some(b'{' | b'[') => {
                // Line ends kept so a JSON error's line number points into the body.
                let mut buf = vec![b'\n'; lines];
                buf.extend_from_slice(start.rest);
                self.mode = Mode::Json(buf);
                Ok(())
            }
            Some(b'<') => {
                let mut buf = Vec::new();
                buf.extend_from_slice(start.rest.get(..HTML_KEPT).unwrap_or(start.rest));
                self.mode = Mode::Html(buf);
                Ok(())
            }
            // A frame's first byte is the top byte of its length: 0 for any frame under 16 MiB,
            // never whitespace for one within the limits, so the sniffer skipped none of it.
            _ if self.framing == Framing::EventStream => {
                self.mode = Mode::Frames(FrameReader::new(self.limits.max_event_bytes));
                self.push_frames(start.prefix, out)?;
                self.push_frames(start.rest, out)
            }
            _ => {
                self.mode = Mode::Sse(SseParser::new(self.limits.max_event_bytes));
                // The skipped whitespace, replayed as what it means to the parser: blank lines
                // (line numbers stay right) and, before the first field, one blank that makes
                // that line an unknown field as the original indentation did.
                if let Mode::Sse(parser) = &mut self.mode {
                    parser.skip_lines(lines);
                }
                if indented {
                    self.push_sse(b" ", out)?;
                }
                self.push_sse(start.prefix, out)?;
                self.push_sse(start.rest, out)
            }
        }
    }

    fn push_sse(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<()> {
        let Mode::Sse(parser) = &mut self.mode else {
            return Ok(());
        };
        let mut feed = Feed::new(
            self.decoder.as_mut(),
            &mut self.scratch,
            &mut self.payloads,
            false,
        );
        let pushed = parser.push_to(bytes, &mut feed);
        let fed = feed.result();
        // Events completed before a bad line are still delivered, so an error the decoder finds
        // earlier in the byte stream wins however the body was chunked.
        self.take_events(out)?;
        fed?;
        pushed.map_err(|e| self.sse_error(e))
    }

    fn push_lines(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>, end: bool) -> Result<()> {
        let Mode::Lines(splitter) = &mut self.mode else {
            return Ok(());
        };
        let decoder = &mut self.decoder;
        let scratch = &mut self.scratch;
        let payloads = &mut self.payloads;
        let mut fed = Ok(());
        let split = splitter.push(bytes, end, |line, text| {
            *payloads += 1;
            fed = decoder
                .feed(None, text, scratch)
                .map_err(|e| e.at_line(line));
            fed.is_ok()
        });
        self.take_events(out)?;
        fed?;
        split.map_err(|e| self.sse_error(e))
    }

    fn push_frames(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) -> Result<()> {
        let Mode::Frames(reader) = &mut self.mode else {
            return Ok(());
        };
        let provider = self.provider.get();
        let decoder = self.decoder.as_mut();
        let scratch = &mut self.scratch;
        let payloads = &mut self.payloads;
        let mut fed = Ok(());
        let pushed = reader.push_to(bytes, |frame| {
            *payloads += 1;
            fed = feed_frame(provider, decoder, &frame, scratch);
            fed.is_ok()
        });
        self.take_events(out)?;
        fed?;
        pushed.map_err(|e| self.frame_error(e))
    }

    fn frame_error(&self, e: FrameError) -> Error {
        match e {
            FrameError::Invalid { .. } => Error::decode(self.kind(), "event stream", e),
            FrameError::TooLarge { .. } => Error::Stream {
                provider: self.kind(),
                reason: format!("{e} (Limits::max_event_bytes)"),
                partial: None,
            },
            _ => Error::Stream {
                provider: self.kind(),
                reason: e.to_string(),
                partial: None,
            },
        }
    }

    fn sse_error(&self, e: SseError) -> Error {
        match e {
            SseError::InvalidUtf8 { .. } => Error::decode(self.kind(), "stream", e),
            SseError::TooLarge { .. } => Error::Stream {
                provider: self.kind(),
                reason: format!("{e} (Limits::max_event_bytes)"),
                partial: None,
            },
        }
    }

    /// Moves decoded events to `out`, restoring names and enforcing the argument limit as each
    /// fragment is counted.
    fn take_events(&mut self, out: &mut Vec<StreamEvent>) -> Result<()> {
        let max = self.limits.max_argument_bytes;
        let mut over = None;
        for mut event in self.scratch.drain(..) {
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
            out.push(event);
        }
        self.scratch.clear();
        match over {
            None => Ok(()),
            Some(index) => Err(Error::Stream {
                provider: self.kind(),
                reason: format!(
                    "arguments of tool call {index} exceed {max} bytes (Limits::max_argument_bytes)"
                ),
                partial: None,
            }),
        }
    }

    fn finish_inner(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        let kind = self.kind();
        match std::mem::replace(&mut self.mode, Mode::Json(Vec::new())) {
            Mode::Json(buf) => {
                let provider = self.provider.get();
                let decoded = match &self.request {
                    Some(request) => provider.decode_for(request, &buf),
                    None => provider.decode(&buf),
                };
                // Another API's body is named by the providers' table.
                let mut response =
                    decoded.map_err(|e| crate::providers::name_foreign(kind, &buf, e))?;
                self.names.restore_response(&mut response);
                self.scratch.extend(events_of(&response));
                self.take_events(out)?;
                Ok(response)
            }
            Mode::Html(buf) => Err(Error::decode(
                kind,
                "response body",
                format!(
                    "an HTML page, not a {kind} answer: {:?}",
                    crate::provider::generic_error(kind, None, &buf).message
                ),
            )),
            Mode::Sniff(sniffer) => {
                let unfinished = sniffer.unfinished_bom();
                if unfinished.is_empty() {
                    return Err(Error::decode(kind, "response body", "the body is empty"));
                }
                // The start of a byte order mark that never finished: those are body bytes.
                let rest = unfinished.to_vec();
                self.start(
                    Start {
                        prefix: &[],
                        rest: &rest,
                    },
                    0,
                    false,
                    out,
                )?;
                self.finish_inner(out)
            }
            Mode::Sse(mut parser) => {
                let mut feed = Feed::new(
                    self.decoder.as_mut(),
                    &mut self.scratch,
                    &mut self.payloads,
                    true,
                );
                let finished = parser.finish_to(&mut feed);
                let fed = feed.result();
                let fields = parser.fields();
                self.mode = Mode::Sse(parser);
                self.take_events(out)?;
                fed?;
                finished.map_err(|e| self.sse_error(e))?;
                if self.payloads == 0 && fields == 0 {
                    return Err(Error::decode(
                        kind,
                        "stream",
                        format!(
                            "no Server-Sent Events in {} bytes (no `data:`, `event:` or `:` line); \
                             not a {kind} stream",
                            self.received
                        ),
                    ));
                }
                self.end_decoder(out)
            }
            Mode::Lines(splitter) => {
                self.mode = Mode::Lines(splitter);
                self.push_lines(&[], out, true)?;
                self.end_decoder(out)
            }
            Mode::Frames(reader) => {
                let finished = reader.finish();
                let frames = reader.frames();
                self.mode = Mode::Frames(reader);
                finished.map_err(|e| self.frame_error(e))?;
                if frames == 0 {
                    return Err(Error::decode(
                        kind,
                        "stream",
                        format!("no event-stream frames in the body; not a {kind} stream"),
                    ));
                }
                self.end_decoder(out)
            }
        }
    }

    fn end_decoder(&mut self, out: &mut Vec<StreamEvent>) -> Result<ChatResponse> {
        let result = self.decoder.finish(&mut self.scratch);
        self.take_events(out)?;
        let mut response = result?;
        self.names.restore_response(&mut response);
        Ok(response)
    }

    /// Records the failure and makes sure the error carries the partial response (names
    /// restored): nothing the stream delivered is lost.
    fn fail(&mut self, e: Error) -> Error {
        let mut e = match e {
            e @ (Error::Decode { partial: None, .. } | Error::Stream { partial: None, .. })
                if !self.done
                    && matches!(self.mode, Mode::Sse(_) | Mode::Lines(_) | Mode::Frames(_)) =>
            {
                let partial = partial_of(self.decoder.as_mut());
                e.with_partial(partial)
            }
            e => e,
        };
        self.names.restore_error(&mut e);
        self.failed = Some(e.to_string());
        e
    }
}

impl TurnReader<'static> {
    /// A reader that owns a share of its provider, for a stream that outlives any borrow (the
    /// client's). `request`, when given, chooses the decoder and the names to restore.
    pub fn shared(provider: Arc<dyn Provider>, request: Option<&HttpRequest>) -> Self {
        let decoder = match request {
            Some(r) => provider.decoder_for(r),
            None => provider.decoder(),
        };
        Self::build(Handle::Shared(provider), decoder, request)
    }
}

/// Feeds the events the SSE parser completes to the decoder, as they complete: the first
/// error stops the push; at the end of the body every event is still counted, so an error in
/// the very last one (the body ended inside it) can be told apart.
struct Feed<'r> {
    decoder: &'r mut dyn StreamDecoder,
    scratch: &'r mut Vec<StreamEvent>,
    payloads: &'r mut usize,
    /// The first error, with the line of the event that caused it.
    error: Option<(Error, usize)>,
    /// Events that completed after the error.
    later: usize,
    /// The body has ended: after an error the parser goes on so later events are counted.
    at_end: bool,
}

impl<'r> Feed<'r> {
    /// A feed for events mid-body, or at its end (`at_end`).
    fn new(
        decoder: &'r mut dyn StreamDecoder,
        scratch: &'r mut Vec<StreamEvent>,
        payloads: &'r mut usize,
        at_end: bool,
    ) -> Self {
        Self {
            decoder,
            scratch,
            payloads,
            error: None,
            later: 0,
            at_end,
        }
    }

    /// The decoder's verdict.
    fn result(self) -> Result<()> {
        match self.error {
            None => Ok(()),
            Some((e, line)) if self.at_end && self.later == 0 => Err(cut_inside(e, line)),
            Some((e, line)) => Err(e.at_line(line)),
        }
    }
}

impl EventSink for Feed<'_> {
    fn event(&mut self, name: Option<&str>, data: &str, line: usize) -> bool {
        if self.error.is_some() {
            self.later += 1;
            return true;
        }
        *self.payloads += 1;
        match self.decoder.feed(name, data, self.scratch) {
            Ok(()) => true,
            Err(e) => {
                self.error = Some((e, line));
                // Mid-body the push stops here; at the end the rest is only counted.
                self.at_end
            }
        }
    }
}

/// One event-stream frame: an `event` frame's payload goes to the decoder under its
/// `:event-type`; an `exception` frame is the provider's error (its payload read by
/// [`Provider::decode_error`], the code the `:exception-type` header), an `error` frame the
/// `:error-code` and `:error-message` headers; either carries what had arrived.
fn feed_frame(
    provider: &dyn Provider,
    decoder: &mut dyn StreamDecoder,
    frame: &Frame<'_>,
    out: &mut Vec<StreamEvent>,
) -> Result<()> {
    let kind = provider.info().kind;
    let at = || format!("event-stream frame at byte {}", frame.offset);
    let mut api = match frame.text(":message-type").unwrap_or("event") {
        "event" => {
            let data = std::str::from_utf8(frame.payload)
                .map_err(|_| Error::decode(kind, at(), "a payload that is not UTF-8"))?;
            return decoder
                .feed(frame.text(":event-type"), data, out)
                .map_err(|e| match e {
                    Error::Decode {
                        provider,
                        what,
                        message,
                        partial,
                    } => Error::Decode {
                        provider,
                        what: format!("{what} in the {}", at()),
                        message,
                        partial,
                    },
                    other => other,
                });
        }
        "exception" => {
            let mut api = provider.decode_error(None, frame.payload);
            if let Some(code) = frame.text(":exception-type") {
                api.code = Some(code.to_owned());
            }
            api
        }
        "error" => {
            let message = frame
                .text(":error-message")
                .unwrap_or("an error frame without a message");
            let mut api = ApiError::new(kind, None, message);
            api.code = frame.text(":error-code").map(str::to_owned);
            api.body = String::from_utf8_lossy(frame.payload).into_owned();
            api
        }
        other => {
            return Err(Error::decode(
                kind,
                at(),
                format!("unknown :message-type {other:?}"),
            ));
        }
    };
    api.partial = partial_of(decoder);
    Err(api.into())
}

/// What an interrupted decoder holds (unfinished calls `truncated`), or `None` when nothing
/// had arrived.
fn partial_of(decoder: &mut dyn StreamDecoder) -> Option<Box<ChatResponse>> {
    let partial = match decoder.finish(&mut Vec::new()) {
        Ok(response) => Some(Box::new(response)),
        Err(mut e) => e.partial_mut().and_then(Option::take),
    }?;
    let empty =
        partial.text.is_none() && partial.reasoning.is_none() && partial.tool_calls.is_empty();
    (!empty).then_some(partial)
}

/// A last event the body ended inside of, which does not decode: the stream was cut, which is
/// a broken stream rather than bad input.
fn cut_inside(e: Error, line: usize) -> Error {
    match e {
        Error::Decode {
            provider, partial, ..
        } => Error::Stream {
            provider,
            reason: format!("the stream was cut inside the event at line {line}"),
            partial,
        },
        other => other,
    }
}

/// The events a streamed turn with this response would have produced, for a whole JSON body.
fn events_of(response: &ChatResponse) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    if let Some(text) = &response.reasoning {
        out.push(StreamEvent::ReasoningDelta { text: text.clone() });
    }
    // Calls the provider ran: each started and, with its result, finished.
    for (index, call) in response.hosted_calls.iter().enumerate() {
        let mut status = vec!["running"];
        if call.result.is_some() {
            status.push("completed");
        }
        out.extend(status.into_iter().map(|status| StreamEvent::HostedCall {
            index,
            name: call.name.clone(),
            status: status.into(),
        }));
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

/// Newline-delimited JSON: each non-blank line is one payload, bounded in size.
#[derive(Debug)]
struct LineSplitter {
    lines: Lines,
    line: usize,
    max: usize,
}

impl LineSplitter {
    fn new(max: usize, skipped_lines: usize) -> Self {
        Self {
            lines: Lines::default(),
            line: skipped_lines,
            max,
        }
    }

    /// Calls `each(line_number, text)` for every complete non-blank line (and, at `end`, a last
    /// line without its end); stops when `each` returns false.
    fn push(
        &mut self,
        bytes: &[u8],
        end: bool,
        mut each: impl FnMut(usize, &str) -> bool,
    ) -> Result<(), SseError> {
        let (max, line) = (self.max, &mut self.line);
        let mut one = |raw: &[u8]| -> Result<bool, SseError> {
            *line += 1;
            if raw.len() > max {
                return Err(SseError::TooLarge {
                    line: *line,
                    limit: max,
                });
            }
            let text =
                std::str::from_utf8(raw).map_err(|_| SseError::InvalidUtf8 { line: *line })?;
            Ok(text.trim().is_empty() || each(*line, text))
        };
        let pushed = self.lines.push(bytes, max, &mut one)?;
        if pushed == Pushed::Overflow {
            return Err(SseError::TooLarge {
                line: self.line + 1,
                limit: max,
            });
        }
        if end
            && pushed == Pushed::Done
            && let Some(last) = self.lines.finish()
        {
            one(&last)?;
        }
        Ok(())
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

    #[test]
    fn lines_split_at_any_line_end_and_bound_each_line() {
        let mut lines = Vec::new();
        let mut s = LineSplitter::new(16, 0);
        for piece in [&b"{\"a\":1}\r"[..], b"\n\n{\"b\"", b":2}\r{\"c\":3}"] {
            s.push(piece, false, |n, t| {
                lines.push((n, t.to_owned()));
                true
            })
            .unwrap();
        }
        s.push(&[], true, |n, t| {
            lines.push((n, t.to_owned()));
            true
        })
        .unwrap();
        let want = [(1, "{\"a\":1}"), (3, "{\"b\":2}"), (4, "{\"c\":3}")];
        let want: Vec<_> = want.iter().map(|(n, t)| (*n, (*t).to_owned())).collect();
        assert_eq!(lines, want);
        let mut s = LineSplitter::new(4, 0);
        let err = s.push(b"12345", false, |_, _| true).unwrap_err();
        assert_eq!(err, SseError::TooLarge { line: 1, limit: 4 });
    }
}
