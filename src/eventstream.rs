//! An incremental reader (and writer) of the binary `application/vnd.amazon.eventstream`
//! framing: bytes in any chunking → frames with their byte offsets.
//!
//! AWS streams (Bedrock's ConverseStream among them) send length-prefixed binary frames instead
//! of Server-Sent Events. Each frame is
//!
//! ```text
//! total length (u32 BE) | headers length (u32 BE) | prelude CRC32 (u32 BE)
//! headers: name length (u8), name, value type (u8), value … | payload | message CRC32 (u32 BE)
//! ```
//!
//! where the prelude CRC covers the first 8 bytes and the message CRC everything before it
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html>, the same
//! framing `aws-smithy-eventstream` implements). Every CRC is checked; a frame's total length is
//! checked against the limit from its 12-byte prelude, before any of its body is buffered, so
//! memory stays bounded whatever the stream claims. Pure (no IO) and linear: each byte is copied
//! into the pending buffer at most once and looked at a bounded number of times.

use std::fmt;

/// Bytes of the prelude: total length, headers length, prelude CRC.
const PRELUDE: usize = 12;

/// The smallest frame: a prelude and the message CRC, no headers, no payload.
const MIN_FRAME: usize = PRELUDE + 4;

/// One header value, typed as the framing types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderValue<'a> {
    /// Types 0 (true) and 1 (false).
    Bool(bool),
    /// Type 2.
    Byte(i8),
    /// Type 3.
    Short(i16),
    /// Type 4.
    Int(i32),
    /// Type 5.
    Long(i64),
    /// Type 6: length-prefixed bytes.
    Bytes(&'a [u8]),
    /// Type 7: length-prefixed UTF-8 text.
    String(&'a str),
    /// Type 8: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// Type 9: 16 bytes.
    Uuid([u8; 16]),
}

impl HeaderValue<'_> {
    /// The value as text, when it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }
}

/// One frame, borrowed from the reader's buffer (no copy per frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Byte offset of the frame's first byte in the stream.
    pub offset: usize,
    /// The headers, in wire order.
    pub headers: Vec<(&'a str, HeaderValue<'a>)>,
    /// The payload bytes.
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// The first header named `name`.
    pub fn header(&self, name: &str) -> Option<&HeaderValue<'a>> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// The first header named `name`, when it is a string (`:event-type`, `:message-type`).
    pub fn text(&self, name: &str) -> Option<&'a str> {
        match self.header(name) {
            Some(HeaderValue::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// Why the bytes are not a valid event stream; `offset` is where the bad frame starts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// A CRC, a length or a header does not hold.
    Invalid {
        /// Byte offset of the frame.
        offset: usize,
        /// What is wrong, for people.
        reason: String,
    },
    /// A frame's prelude announces more than the limit.
    TooLarge {
        /// Byte offset of the frame.
        offset: usize,
        /// The announced total length.
        length: u64,
        /// The limit in bytes.
        limit: usize,
    },
    /// The stream ended inside a frame.
    Truncated {
        /// Byte offset of the frame.
        offset: usize,
        /// Bytes of it that arrived.
        have: usize,
        /// Its total length, when the prelude arrived.
        length: Option<usize>,
    },
}

impl FrameError {
    /// Byte offset of the frame the error is about.
    pub fn offset(&self) -> usize {
        match self {
            Self::Invalid { offset, .. }
            | Self::TooLarge { offset, .. }
            | Self::Truncated { offset, .. } => *offset,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid { offset, reason } => {
                write!(f, "event-stream frame at byte {offset}: {reason}")
            }
            Self::TooLarge {
                offset,
                length,
                limit,
            } => write!(
                f,
                "event-stream frame at byte {offset}: {length} bytes, larger than {limit}"
            ),
            Self::Truncated {
                offset,
                have,
                length: Some(length),
            } => write!(
                f,
                "the stream ended inside the event-stream frame at byte {offset} ({have} of \
                 {length} bytes)"
            ),
            Self::Truncated {
                offset,
                have,
                length: None,
            } => write!(
                f,
                "the stream ended inside the prelude of the event-stream frame at byte {offset} \
                 ({have} of {PRELUDE} bytes)"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// The incremental reader. Feed bytes with [`FrameReader::push_to`], then call
/// [`FrameReader::finish`] at the end of the stream.
#[derive(Debug)]
pub struct FrameReader {
    /// Bytes of the frame being received (never more than one frame: complete frames are
    /// handed out and dropped).
    pending: Vec<u8>,
    /// Stream offset of `pending[0]`.
    offset: usize,
    /// The largest frame accepted.
    max_frame: usize,
    /// Frames handed out.
    frames: usize,
}

impl FrameReader {
    /// A reader accepting frames of at most `max_frame` bytes (prelude and CRC included).
    pub fn new(max_frame: usize) -> Self {
        Self {
            pending: Vec::new(),
            offset: 0,
            max_frame: max_frame.max(MIN_FRAME),
            frames: 0,
        }
    }

    /// Frames handed out so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Feeds the next bytes; calls `each` with every frame they complete, in order, and stops
    /// early when it returns `false`. A bad frame is an error naming its offset; the reader is
    /// spent after an error.
    pub fn push_to(
        &mut self,
        mut bytes: &[u8],
        mut each: impl FnMut(Frame<'_>) -> bool,
    ) -> Result<(), FrameError> {
        loop {
            // Whole frames straight from the input when nothing is pending: no copy.
            if self.pending.is_empty() {
                while let Some(len) = self.frame_len(bytes)? {
                    if bytes.len() < len {
                        break;
                    }
                    let (frame, rest) = bytes.split_at(len);
                    let offset = self.offset;
                    let frame = parse(frame, offset)?;
                    self.offset += len;
                    self.frames += 1;
                    bytes = rest;
                    if !each(frame) {
                        self.pending.extend_from_slice(bytes);
                        return Ok(());
                    }
                }
                self.pending.extend_from_slice(bytes);
                return Ok(());
            }
            // A frame begun earlier: take only what it still needs.
            let need = match self.frame_len(&self.pending)? {
                Some(len) => len,
                None => PRELUDE,
            };
            let missing = need.saturating_sub(self.pending.len());
            let take = missing.min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < need {
                return Ok(());
            }
            if need == PRELUDE && self.frame_len(&self.pending)?.is_some() {
                // The prelude just completed; now the frame's length is known.
                continue;
            }
            let offset = self.offset;
            let frame = std::mem::take(&mut self.pending);
            let go_on = {
                let parsed = parse(&frame, offset)?;
                self.offset += frame.len();
                self.frames += 1;
                each(parsed)
            };
            // Keep the allocation for the next frame.
            self.pending = frame;
            self.pending.clear();
            if !go_on {
                self.pending.extend_from_slice(bytes);
                return Ok(());
            }
        }
    }

    /// The stream ended: an error when it ended inside a frame.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let length = (self.pending.len() >= PRELUDE).then(|| be32(&self.pending, 0) as usize);
        Err(FrameError::Truncated {
            offset: self.offset,
            have: self.pending.len(),
            length,
        })
    }

    /// The total length of the frame at the start of `bytes`, once its prelude is there and
    /// holds: checked against the limit and the prelude CRC before anything else is read.
    fn frame_len(&self, bytes: &[u8]) -> Result<Option<usize>, FrameError> {
        if bytes.len() < PRELUDE {
            return Ok(None);
        }
        let offset = self.offset;
        let total = be32(bytes, 0);
        let headers = be32(bytes, 4);
        let crc = be32(bytes, 8);
        let computed = crc32fast::hash(&bytes[..8]);
        if crc != computed {
            return Err(FrameError::Invalid {
                offset,
                reason: format!("prelude CRC {crc:#010x}, computed {computed:#010x}"),
            });
        }
        let total_len = total as usize;
        if total_len > self.max_frame {
            return Err(FrameError::TooLarge {
                offset,
                length: u64::from(total),
                limit: self.max_frame,
            });
        }
        if total_len < MIN_FRAME || headers as usize > total_len - MIN_FRAME {
            return Err(FrameError::Invalid {
                offset,
                reason: format!(
                    "total length {total} cannot hold {headers} header bytes, the prelude and \
                     the CRC"
                ),
            });
        }
        Ok(Some(total_len))
    }
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(b)
}

/// One whole frame (its length already checked against the prelude).
fn parse(frame: &[u8], offset: usize) -> Result<Frame<'_>, FrameError> {
    let invalid = |reason: String| FrameError::Invalid { offset, reason };
    let body_end = frame.len() - 4;
    let crc = be32(frame, body_end);
    let computed = crc32fast::hash(&frame[..body_end]);
    if crc != computed {
        return Err(invalid(format!(
            "message CRC {crc:#010x}, computed {computed:#010x}"
        )));
    }
    let headers_end = PRELUDE + be32(frame, 4) as usize;
    let mut headers = Vec::new();
    let mut at = PRELUDE;
    while at < headers_end {
        let header_at = offset + at;
        let bad = |what: &str| FrameError::Invalid {
            offset,
            reason: format!("header at byte {header_at}: {what}"),
        };
        let take = |at: &mut usize, n: usize| -> Result<&[u8], FrameError> {
            let end = at
                .checked_add(n)
                .filter(|e| *e <= headers_end)
                .ok_or_else(|| bad("runs past the headers"))?;
            let out = &frame[*at..end];
            *at = end;
            Ok(out)
        };
        let name_len = take(&mut at, 1)?[0] as usize;
        if name_len == 0 {
            return Err(bad("an empty name"));
        }
        let name = std::str::from_utf8(take(&mut at, name_len)?)
            .map_err(|_| bad("a name that is not UTF-8"))?;
        let kind = take(&mut at, 1)?[0];
        let fixed = |at: &mut usize, n: usize| -> Result<[u8; 8], FrameError> {
            let mut b = [0u8; 8];
            b[8 - n..].copy_from_slice(take(at, n)?);
            Ok(b)
        };
        let value = match kind {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes([fixed(&mut at, 1)?[7]])),
            3 => {
                let b = fixed(&mut at, 2)?;
                HeaderValue::Short(i16::from_be_bytes([b[6], b[7]]))
            }
            4 => {
                let b = fixed(&mut at, 4)?;
                HeaderValue::Int(i32::from_be_bytes([b[4], b[5], b[6], b[7]]))
            }
            5 => HeaderValue::Long(i64::from_be_bytes(fixed(&mut at, 8)?)),
            8 => HeaderValue::Timestamp(i64::from_be_bytes(fixed(&mut at, 8)?)),
            6 | 7 => {
                let b = fixed(&mut at, 2)?;
                let len = u16::from_be_bytes([b[6], b[7]]) as usize;
                let raw = take(&mut at, len)?;
                if kind == 6 {
                    HeaderValue::Bytes(raw)
                } else {
                    HeaderValue::String(
                        std::str::from_utf8(raw).map_err(|_| bad("a string that is not UTF-8"))?,
                    )
                }
            }
            9 => {
                let mut b = [0u8; 16];
                b.copy_from_slice(take(&mut at, 16)?);
                HeaderValue::Uuid(b)
            }
            other => return Err(bad(&format!("unknown value type {other}"))),
        };
        headers.push((name, value));
    }
    Ok(Frame {
        offset,
        headers,
        payload: &frame[headers_end..body_end],
    })
}

/// One frame's bytes: the writer side, for mock servers and tests. String headers only (all
/// Bedrock's own headers are strings).
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        let name = &name.as_bytes()[..name.len().min(255)];
        let value = &value.as_bytes()[..value.len().min(u16::MAX as usize)];
        head.push(name.len() as u8);
        head.extend_from_slice(name);
        head.push(7);
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value);
    }
    let total = PRELUDE + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(head.len() as u32).to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type Owned = (usize, Vec<(String, String)>, Vec<u8>);

    fn read(chunks: &[&[u8]], max: usize) -> Result<Vec<Owned>, FrameError> {
        let mut r = FrameReader::new(max);
        let mut out = Vec::new();
        for c in chunks {
            r.push_to(c, |f| {
                let headers = f
                    .headers
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), format!("{v:?}")))
                    .collect();
                out.push((f.offset, headers, f.payload.to_vec()));
                true
            })?;
        }
        r.finish()?;
        Ok(out)
    }

    fn sample() -> Vec<u8> {
        let mut bytes = encode_frame(
            &[(":event-type", "messageStart"), (":message-type", "event")],
            br#"{"role":"assistant"}"#,
        );
        bytes.extend(encode_frame(&[(":event-type", "messageStop")], b"{}"));
        bytes.extend(encode_frame(&[], b""));
        bytes
    }

    #[test]
    fn frames_read_the_same_at_every_split() {
        let bytes = sample();
        let whole = read(&[&bytes], 1 << 20).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(
            whole[1].0,
            whole[0].0
                + encode_frame(
                    &[(":event-type", "messageStart"), (":message-type", "event")],
                    br#"{"role":"assistant"}"#
                )
                .len()
        );
        assert_eq!(whole[0].2, br#"{"role":"assistant"}"#);
        assert_eq!(whole[0].1[0].1, r#"String("messageStart")"#);
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let got = read(&[&bytes[..i], &bytes[i..j], &bytes[j..]], 1 << 20).unwrap();
                assert_eq!(got, whole, "split at {i}, {j}");
            }
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(read(&singles, 1 << 20).unwrap(), whole);
    }

    #[test]
    fn typed_headers_decode() {
        // name "b" true, "i" int 7, "s" short -2, "x" bytes [1,2], "t" timestamp 5, "u" uuid.
        let mut head = Vec::new();
        head.extend([1, b'b', 0]);
        head.extend([1, b'i', 4, 0, 0, 0, 7]);
        head.extend([1, b's', 3, 0xff, 0xfe]);
        head.extend([1, b'x', 6, 0, 2, 1, 2]);
        head.extend([1, b't', 8, 0, 0, 0, 0, 0, 0, 0, 5]);
        head.extend([1, b'u', 9]);
        head.extend([9u8; 16]);
        head.extend([1, b'y', 2, 0x80]);
        head.extend([1, b'l', 5, 0, 0, 0, 0, 0, 0, 1, 0]);
        let total = PRELUDE + head.len() + 4;
        let mut f = Vec::new();
        f.extend((total as u32).to_be_bytes());
        f.extend((head.len() as u32).to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        f.extend(&head);
        f.extend(crc32fast::hash(&f).to_be_bytes());
        let mut r = FrameReader::new(1 << 10);
        let mut seen = Vec::new();
        r.push_to(&f, |frame| {
            seen = frame
                .headers
                .iter()
                .map(|(_, v)| format!("{v:?}"))
                .collect();
            true
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                "Bool(true)",
                "Int(7)",
                "Short(-2)",
                "Bytes([1, 2])",
                "Timestamp(5)",
                "Uuid([9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9])",
                "Byte(-128)",
                "Long(256)"
            ]
        );
    }

    #[test]
    fn bad_crcs_are_errors_with_the_frame_offset() {
        let bytes = sample();
        let second = encode_frame(
            &[(":event-type", "messageStart"), (":message-type", "event")],
            br#"{"role":"assistant"}"#,
        )
        .len();
        // A flipped payload byte of the second frame: its message CRC fails.
        let mut bad = bytes.clone();
        bad[second + PRELUDE + 20] ^= 1;
        let err = read(&[&bad], 1 << 20).unwrap_err();
        assert_eq!(err.offset(), second);
        assert!(err.to_string().contains("message CRC"), "{err}");
        // A flipped length byte: the prelude CRC fails before the length is trusted.
        let mut bad = bytes.clone();
        bad[second + 3] ^= 0x40;
        let err = read(&[&bad], 1 << 20).unwrap_err();
        assert!(err.to_string().contains("prelude CRC"), "{err}");
        assert_eq!(err.offset(), second);
    }

    #[test]
    fn a_huge_length_is_refused_from_the_prelude() {
        let mut f = Vec::new();
        f.extend(u32::MAX.to_be_bytes());
        f.extend(0u32.to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        let mut r = FrameReader::new(1 << 20);
        let err = r.push_to(&f, |_| true).unwrap_err();
        assert!(
            matches!(err, FrameError::TooLarge { offset: 0, .. }),
            "{err}"
        );
        // Headers longer than the frame.
        let mut f = Vec::new();
        f.extend(20u32.to_be_bytes());
        f.extend(10u32.to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        let err = FrameReader::new(1 << 20).push_to(&f, |_| true).unwrap_err();
        assert!(err.to_string().contains("cannot hold"), "{err}");
    }

    #[test]
    fn a_cut_stream_is_truncated_not_silent() {
        let bytes = sample();
        for cut in [1, 11, 12, 30, bytes.len() - 1] {
            let err = read(&[&bytes[..cut]], 1 << 20).unwrap_err();
            assert!(matches!(err, FrameError::Truncated { .. }), "{cut}: {err}");
        }
    }

    #[test]
    fn headers_past_their_length_are_invalid() {
        // A string header whose length runs past the headers block.
        let head = [1u8, b'a', 7, 0, 50, b'x'];
        let total = PRELUDE + head.len() + 4;
        let mut f = Vec::new();
        f.extend((total as u32).to_be_bytes());
        f.extend((head.len() as u32).to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        f.extend(head);
        f.extend(crc32fast::hash(&f).to_be_bytes());
        let err = FrameReader::new(1 << 10).push_to(&f, |_| true).unwrap_err();
        assert!(err.to_string().contains("header at byte 12"), "{err}");
        // Unknown value type.
        let head = [1u8, b'a', 42];
        let total = PRELUDE + head.len() + 4;
        let mut f = Vec::new();
        f.extend((total as u32).to_be_bytes());
        f.extend((head.len() as u32).to_be_bytes());
        f.extend(crc32fast::hash(&f).to_be_bytes());
        f.extend(head);
        f.extend(crc32fast::hash(&f).to_be_bytes());
        let err = FrameReader::new(1 << 10).push_to(&f, |_| true).unwrap_err();
        assert!(err.to_string().contains("unknown value type 42"), "{err}");
    }
}
