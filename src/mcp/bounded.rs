//! A child server's standard output, bounded per message: a JSON-RPC line longer than
//! [`super::MAX_MESSAGE_BYTES`] is cut off as it arrives (the SDK sees a broken line, which it
//! skips), the rest of it is read and thrown away, and when the line was an answer to one of
//! our requests, an error answer for the same id takes its place, so the call fails at once
//! with a size error instead of waiting for its timeout.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Scans one JSON-RPC line for its top-level `"id"` value and whether it is an answer
/// (`result`/`error`) or a request (`method`), in constant memory.
#[derive(Default)]
struct Scan {
    depth: u32,
    in_str: bool,
    esc: bool,
    expect_key: bool,
    in_key: bool,
    key: Vec<u8>,
    capturing: bool,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
    answer: bool,
    request: bool,
}

impl Scan {
    fn feed(&mut self, b: u8) {
        if self.capturing {
            if !self.in_str && self.depth == 1 && (b == b',' || b == b'}') {
                let raw = self.value.trim_ascii().to_vec();
                self.id = Some(raw);
                self.capturing = false;
            } else if self.value.len() < 256 {
                self.value.push(b);
            }
        }
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
                if self.in_key {
                    self.in_key = false;
                    match self.key.as_slice() {
                        b"result" | b"error" => self.answer = true,
                        b"method" => self.request = true,
                        _ => {}
                    }
                }
            } else if self.in_key && self.key.len() < 8 {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_str = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.expect_key = false;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 && b == b'{' {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => self.expect_key = true,
            b':' if self.depth == 1 && self.key == b"id" && self.id.is_none() => {
                self.capturing = true;
                self.value.clear();
            }
            _ => {}
        }
    }

    /// The error answer that replaces an oversized answer, when its id is known.
    fn replacement(&self, limit: usize) -> Option<Vec<u8>> {
        if !self.answer || self.request {
            return None;
        }
        let id: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
        if !(id.is_string() || id.is_number()) {
            return None;
        }
        let answer = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32603,
                "message": format!(
                    "the server's answer is larger than toolwire's limit of {limit} bytes \
                     (MAX_MESSAGE_BYTES); it was cut off as it arrived"
                ),
            },
        });
        let mut line = serde_json::to_vec(&answer).ok()?;
        line.push(b'\n');
        Some(line)
    }
}

/// An [`AsyncRead`] that passes JSON-RPC lines of at most `limit` bytes through and cuts off
/// longer ones (see the module docs).
pub(super) struct Bounded<R> {
    inner: R,
    limit: usize,
    line: usize,
    scan: Scan,
    /// Cutting off the current line: its bytes are thrown away until its newline.
    discarding: bool,
    /// Whether the replacement answer for the current line has gone out already.
    replaced: bool,
    /// Bytes to hand out before reading more (the cut and the replacement answer).
    out: Vec<u8>,
    chunk: Box<[u8]>,
}

impl<R> Bounded<R> {
    pub(super) fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            line: 0,
            scan: Scan::default(),
            discarding: false,
            replaced: false,
            out: Vec::new(),
            chunk: vec![0; 16 * 1024].into_boxed_slice(),
        }
    }

    /// One byte read from the child; pushes what the SDK is to see into `out`.
    fn byte(&mut self, b: u8) {
        if b == b'\n' {
            if self.discarding && !self.replaced {
                if let Some(line) = self.scan.replacement(self.limit) {
                    self.out.extend(line);
                } else {
                    tracing::warn!(
                        limit = self.limit,
                        "MCP server sent a message larger than the limit; it was dropped"
                    );
                }
            } else if !self.discarding {
                self.out.push(b);
            }
            self.line = 0;
            self.scan = Scan::default();
            self.discarding = false;
            self.replaced = false;
            return;
        }
        self.scan.feed(b);
        if self.discarding {
            if !self.replaced && self.scan.id.is_some() {
                // An answer whose id arrived after the cut: the error goes out now.
                if let Some(line) = self.scan.replacement(self.limit) {
                    self.out.extend(line);
                    self.replaced = true;
                }
            }
            return;
        }
        self.line += 1;
        if self.line > self.limit {
            // End the SDK's view of the line here (a broken line it skips), and answer now
            // when the id is known.
            self.discarding = true;
            self.out.push(b'\n');
            if let Some(line) = self.scan.replacement(self.limit) {
                self.out.extend(line);
                self.replaced = true;
            }
            return;
        }
        self.out.push(b);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out[..n]);
                this.out.drain(..n);
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            let result = match polled {
                Poll::Ready(Ok(())) if filled == 0 => Some(Poll::Ready(Ok(()))),
                Poll::Ready(Ok(())) => {
                    for &b in &chunk[..filled] {
                        this.byte(b);
                    }
                    None
                }
                other => Some(other),
            };
            this.chunk = chunk;
            if let Some(result) = result {
                return result;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], limit: usize) -> String {
        let mut bounded = Bounded::new(input, limit);
        let mut out = Vec::new();
        bounded.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn short_lines_pass_through() {
        let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":2}\n";
        assert_eq!(through(text.as_bytes(), 64).await, text);
    }

    #[tokio::test]
    async fn a_long_answer_becomes_an_error_with_its_id_first_or_last() {
        let big = "x".repeat(5000);
        let first =
            format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"t\":\"{big}\"}}}}\nok\n");
        let out = through(first.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 7);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("100 bytes")
        );
        assert_eq!(lines[2], "ok");

        let last =
            format!("{{\"result\":{{\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"a,}}\"}}\n");
        let out = through(last.as_bytes(), 100).await;
        let error: serde_json::Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!(error["id"], "a,}");
    }

    #[tokio::test]
    async fn a_long_request_is_dropped_without_an_answer() {
        let big = "x".repeat(5000);
        let request =
            format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"{big}\"}}\n");
        let out = through(request.as_bytes(), 100).await;
        assert!(!out.contains("\"error\""), "{out}");
    }
}
