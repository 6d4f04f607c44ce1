//! An incremental Server-Sent Events parser: bytes in any chunking → events with line numbers.
//!
//! Pure (no IO), so the client, `toolwire replay`, the mock provider and the property tests all
//! share it. It follows the WHATWG rules (LF, CRLF or CR line ends, `:` comments, one optional
//! space after the colon, multi-line `data`) with two tolerances real servers need: a `data:`
//! line holding a new JSON object right after a complete one starts a new event even without
//! the blank line between them, and a final event without its blank line is still delivered.
//! Bytes are only decoded as UTF-8 once a line is complete, so chunk boundaries may fall inside
//! a character. The pending event is bounded by `max_event_bytes`.

use std::fmt;

/// One SSE event, owned (tests collect them).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name, if one was given.
    pub event: Option<String>,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The 1-based line of the event's first `data:` line.
    pub line: usize,
}

/// Why the byte stream is not valid SSE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line is not UTF-8.
    InvalidUtf8 {
        /// The 1-based line number.
        line: usize,
    },
    /// An event grew past the limit.
    TooLarge {
        /// The 1-based line number where the limit was crossed.
        line: usize,
        /// The limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUtf8 { line } => write!(f, "line {line}: not valid UTF-8"),
            Self::TooLarge { line, limit } => {
                write!(f, "line {line}: event larger than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for SseError {}

/// The largest data buffer kept between events (a larger one is freed after its event).
const KEPT_CAPACITY: usize = 64 << 10;

/// The incremental parser. Feed it bytes with [`SseParser::push_to`], then call
/// [`SseParser::finish_to`] at end of stream.
#[derive(Debug)]
pub(crate) struct SseParser {
    lines: Lines,
    line: usize,
    data: String,
    has_data: bool,
    data_line: usize,
    /// The pending `event:` name, meaningful only when `named`: kept as a buffer.
    event: String,
    named: bool,
    max_event_bytes: usize,
    /// The pending data, trimmed of trailing whitespace, ends a JSON value (`}`) or is exactly
    /// `[DONE]`: kept as lines arrive so no line re-scans the pending event.
    closed: bool,
    /// Lines that were SSE fields or comments.
    fields: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// 64 MiB: larger than any sane single payload, small enough to bound memory.
    pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 64 << 20;

    /// A parser that refuses events larger than `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            lines: Lines::default(),
            line: 0,
            data: String::new(),
            has_data: false,
            data_line: 0,
            event: String::new(),
            named: false,
            max_event_bytes,
            closed: false,
            fields: 0,
        }
    }

    /// Counts `n` blank lines already consumed elsewhere (leading whitespace a caller skipped),
    /// so line numbers stay those of the whole body.
    pub(crate) fn skip_lines(&mut self, n: usize) {
        self.line += n;
    }

    /// How many lines were SSE fields (`data:`, `event:`, `id:`, `retry:`) or comments: zero
    /// for bytes that are not an event stream at all.
    pub(crate) fn fields(&self) -> usize {
        self.fields
    }

    /// Feeds bytes; complete events are appended to `out`.
    #[cfg(test)]
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.push_to(bytes, out)
    }

    /// Feeds bytes; each complete event goes to `sink` as it completes, borrowed from the
    /// parser (no copy, no allocation per event). Stops early when the sink says so.
    pub(crate) fn push_to(
        &mut self,
        bytes: &[u8],
        sink: &mut impl EventSink,
    ) -> Result<(), SseError> {
        let mut lines = std::mem::take(&mut self.lines);
        let pushed = lines.push(bytes, self.max_event_bytes, |raw| self.line(raw, sink));
        self.lines = lines;
        match pushed? {
            // The same limit `line` applies to a complete line, checked as the open line grows.
            Pushed::Overflow => Err(SseError::TooLarge {
                line: self.line + 1,
                limit: self.max_event_bytes,
            }),
            Pushed::Done | Pushed::Stopped => Ok(()),
        }
    }

    /// End of stream: delivers a last line without its line end and a last event without its
    /// blank line.
    #[cfg(test)]
    pub(crate) fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.finish_to(out)
    }

    /// [`SseParser::finish`] into a sink.
    pub(crate) fn finish_to(&mut self, sink: &mut impl EventSink) -> Result<(), SseError> {
        if let Some(last) = self.lines.finish()
            && !self.line(&last, sink)?
        {
            return Ok(());
        }
        self.dispatch(sink);
        Ok(())
    }

    /// One complete line; `Ok(false)` when the sink asked to stop.
    fn line(&mut self, raw: &[u8], sink: &mut impl EventSink) -> Result<bool, SseError> {
        self.line += 1;
        if raw.len() > self.max_event_bytes {
            return Err(SseError::TooLarge {
                line: self.line,
                limit: self.max_event_bytes,
            });
        }
        let line =
            std::str::from_utf8(raw).map_err(|_| SseError::InvalidUtf8 { line: self.line })?;
        if line.is_empty() {
            return Ok(self.dispatch(sink));
        }
        if line.starts_with(':') {
            self.fields += 1;
            return Ok(true);
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        if matches!(field, "data" | "event" | "id" | "retry") {
            self.fields += 1;
        }
        match field {
            "data" => {
                if self.has_data && self.closed && opens_payload(value) && !self.dispatch(sink) {
                    return Ok(false);
                }
                if self.data.len() + value.len() > self.max_event_bytes {
                    return Err(SseError::TooLarge {
                        line: self.line,
                        limit: self.max_event_bytes,
                    });
                }
                let was_empty = !self.has_data;
                if self.has_data {
                    self.data.push('\n');
                } else {
                    self.data_line = self.line;
                }
                self.data.push_str(value);
                self.has_data = true;
                // A blank data line adds only whitespace: what the data ends with stands.
                scanned(value.len());
                let tail = value.trim_end();
                if !tail.is_empty() || was_empty {
                    self.closed = tail.ends_with('}') || (was_empty && tail == "[DONE]");
                }
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
                self.named = true;
            }
            _ => {}
        }
        Ok(true)
    }

    /// Ends the pending event: hands it to the sink (if it has data) and clears it, keeping
    /// the buffers. Returns whether the sink wants more.
    fn dispatch(&mut self, sink: &mut impl EventSink) -> bool {
        let name = self.named.then_some(self.event.as_str());
        let go_on = !self.has_data || sink.event(name, &self.data, self.data_line);
        self.data.clear();
        // One large event must not pin its buffer for the rest of the stream.
        if self.data.capacity() > KEPT_CAPACITY {
            self.data = String::new();
        }
        self.named = false;
        self.has_data = false;
        self.closed = false;
        go_on
    }
}

/// Where the parser delivers complete events.
pub(crate) trait EventSink {
    /// One event: its `event:` name, its data, the line of its first `data:` line. Returns
    /// whether to go on.
    fn event(&mut self, name: Option<&str>, data: &str, line: usize) -> bool;
}

#[cfg(test)]
impl EventSink for Vec<SseEvent> {
    fn event(&mut self, name: Option<&str>, data: &str, line: usize) -> bool {
        self.push(SseEvent {
            event: name.map(str::to_owned),
            data: data.to_owned(),
            line,
        });
        true
    }
}

/// What [`Lines::push`] did with the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Every complete line was delivered; an open line is kept for the next bytes.
    Done,
    /// The callback asked to stop; the rest of the bytes were not looked at.
    Stopped,
    /// The open line grew past the limit.
    Overflow,
}

/// Splits bytes into lines (LF, CRLF or CR) however they are chunked: one splitter for the
/// SSE parser and the NDJSON framing. A line still open when the bytes run out is kept (and
/// bounded); `memchr` finds the line ends, so each byte is looked at once.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    open: Vec<u8>,
    skip_lf: bool,
}

impl Lines {
    /// Calls `line` with each complete line, without its end, until it returns `Ok(false)`.
    pub(crate) fn push<E>(
        &mut self,
        mut bytes: &[u8],
        max: usize,
        mut line: impl FnMut(&[u8]) -> Result<bool, E>,
    ) -> Result<Pushed, E> {
        while !bytes.is_empty() {
            if self.skip_lf {
                self.skip_lf = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) else {
                if self.open.len() + bytes.len() > max {
                    return Ok(Pushed::Overflow);
                }
                self.open.extend_from_slice(bytes);
                break;
            };
            self.skip_lf = bytes[pos] == b'\r';
            let go_on = if self.open.is_empty() {
                line(&bytes[..pos])?
            } else {
                self.open.extend_from_slice(&bytes[..pos]);
                let r = line(&self.open);
                self.open.clear();
                r?
            };
            bytes = &bytes[pos + 1..];
            if !go_on {
                return Ok(Pushed::Stopped);
            }
        }
        Ok(Pushed::Done)
    }

    /// The end of the bytes: the last line, if it had no line end.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        (!self.open.is_empty()).then(|| std::mem::take(&mut self.open))
    }
}

/// A data line that opens a new JSON object (or is `[DONE]`): after a complete payload it
/// cannot continue it (no JSON text has `}` followed by `{`), so it starts a new event.
fn opens_payload(next: &str) -> bool {
    let next = next.trim_start();
    next.starts_with('{') || next == "[DONE]"
}

#[cfg(test)]
thread_local! {
    /// Bytes looked at to decide whether the pending data ends a payload.
    static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[inline]
fn scanned(n: usize) {
    #[cfg(test)]
    SCANNED.with(|c| c.set(c.get() + n));
    #[cfg(not(test))]
    let _ = n;
}

#[cfg(test)]
/// Parses a whole SSE body at once.
pub(crate) fn parse_all(body: &[u8]) -> Result<Vec<SseEvent>, SseError> {
    let mut parser = SseParser::default();
    let mut out = Vec::new();
    parser.push(body, &mut out)?;
    parser.finish(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_event_does_not_pin_its_buffer() {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        let big = format!("data: {{\"a\":\"{}\"}}\n\n", "x".repeat(4 * KEPT_CAPACITY));
        parser.push(big.as_bytes(), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(
            parser.data.capacity() <= KEPT_CAPACITY,
            "{}",
            parser.data.capacity()
        );
        parser.push(b"data: {}\n\n", &mut out).unwrap();
        assert_eq!(out[1].data, "{}");
    }

    fn datas(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn framing_variants() {
        let body = b": comment\r\ndata:{\"a\":1}\r\n\r\nid: 3\nevent: result\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
        let events = parse_all(body).unwrap();
        assert_eq!(datas(&events), ["{\"a\":1}", "{\"b\":2}", "[DONE]"]);
        assert_eq!(events[1].event.as_deref(), Some("result"));
        assert_eq!(events[0].line, 2);
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let body = "data: {\"t\":\"北京\"}\r\n\r\ndata: {\"u\":1}\rdata: [DONE]".as_bytes();
        let whole = parse_all(body).unwrap();
        for cut in 0..=body.len() {
            let mut p = SseParser::default();
            let mut out = Vec::new();
            p.push(&body[..cut], &mut out).unwrap();
            p.push(&body[cut..], &mut out).unwrap();
            p.finish(&mut out).unwrap();
            assert_eq!(out, whole, "cut at {cut}");
        }
        assert_eq!(whole.len(), 3);
    }

    #[test]
    fn bad_utf8_and_limits_are_typed() {
        assert_eq!(
            parse_all(b"data: ok\n\ndata: \xff\n\n").unwrap_err(),
            SseError::InvalidUtf8 { line: 3 }
        );
        let mut p = SseParser::new(8);
        let err = p.push(b"data: 0123456789", &mut Vec::new()).unwrap_err();
        assert!(matches!(err, SseError::TooLarge { .. }));
    }

    #[test]
    fn limits_do_not_depend_on_chunking() {
        // A long comment line, then a small event: the same error (or the same events) whether
        // the long line arrives whole or in pieces.
        let body = format!(": {}\ndata: x\n\n", "k".repeat(30));
        let body = body.as_bytes();
        let run = |pieces: &[&[u8]]| {
            let mut p = SseParser::new(16);
            let mut out = Vec::new();
            for piece in pieces {
                p.push(piece, &mut out)?;
            }
            p.finish(&mut out).map(|()| out)
        };
        let whole = run(&[body]);
        assert_eq!(whole, Err(SseError::TooLarge { line: 1, limit: 16 }));
        for cut in 0..=body.len() {
            assert_eq!(run(&[&body[..cut], &body[cut..]]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn many_data_lines_in_one_event_are_linear() {
        // One event of 100k empty `data:` lines after a complete payload: deciding whether each
        // line starts a new payload must not re-scan the pending data (the old check trimmed
        // the whole pending event on every line: O(n²), 2.8 s for 600 KB).
        let mut body = b"data: {\"choices\":[]}\n".to_vec();
        for _ in 0..100_000 {
            body.extend_from_slice(b"data:\n");
        }
        body.extend_from_slice(b"data: x\n\n");
        SCANNED.with(|c| c.set(0));
        let events = parse_all(&body).unwrap();
        let scanned = SCANNED.with(std::cell::Cell::get);
        assert!(
            scanned <= body.len(),
            "{scanned} bytes scanned for {}",
            body.len()
        );
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.len(), 14 + 100_000 + 2);
        // A payload opening right after a complete one still starts a new event.
        let events = parse_all(b"data: {\"a\":1}\ndata:\ndata: {\"b\":2}\n\n").unwrap();
        assert_eq!(datas(&events), ["{\"a\":1}\n", "{\"b\":2}"]);
        let events = parse_all(b"data: [DONE]\ndata: {\"b\":2}\n\n").unwrap();
        assert_eq!(datas(&events), ["[DONE]", "{\"b\":2}"]);
        let events = parse_all(b"data:\ndata: [DONE]\ndata: {\"b\":2}\n\n").unwrap();
        assert_eq!(datas(&events), ["\n[DONE]\n{\"b\":2}"]);
    }

    #[test]
    fn multi_line_data_joins() {
        let events = parse_all(b"data: {\ndata: \"a\": 1\ndata: }\n\n").unwrap();
        assert_eq!(datas(&events), ["{\n\"a\": 1\n}"]);
    }
}
