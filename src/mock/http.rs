//! A small HTTP/1.1 server side: read one request, write one response, close.
//!
//! Just enough for the mock provider: `Content-Length` or chunked request bodies, and responses
//! with `Content-Length` (JSON) or chunked transfer encoding (streams), written in pieces with
//! pauses, cut off, or stalled on purpose.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest request head accepted.
const MAX_HEAD: usize = 64 << 10;
/// The largest request body accepted.
const MAX_BODY: usize = 32 << 20;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request. `Err` says what is wrong with it.
pub(crate) async fn read_request(sock: &mut TcpStream) -> Result<Request, String> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("request head larger than {MAX_HEAD} bytes"));
        }
        if read_more(sock, &mut buf).await? == 0 {
            return Err("connection closed inside the request head".into());
        }
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| "request head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line {request_line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported HTTP version {version:?}"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut req = Request {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        body: Vec::new(),
    };
    let mut rest = buf.split_off(head_end + 4);
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(sock, rest).await?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| format!("bad content-length {len:?}"))?;
        if len > MAX_BODY {
            return Err(format!("request body larger than {MAX_BODY} bytes"));
        }
        rest.reserve(len.saturating_sub(rest.len()));
        while rest.len() < len {
            if read_more(sock, &mut rest).await? == 0 {
                return Err("connection closed inside the request body".into());
            }
        }
        rest.truncate(len);
        req.body = rest;
    }
    Ok(req)
}

async fn read_more(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Result<usize, String> {
    let mut chunk = [0u8; 8192];
    let n = sock
        .read(&mut chunk)
        .await
        .map_err(|e| format!("read failed: {e}"))?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

async fn read_chunked(sock: &mut TcpStream, mut buf: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let line_end = loop {
            if let Some(i) = find(&buf[pos..], b"\r\n") {
                break pos + i;
            }
            if buf.len() - pos > 1024 {
                return Err("chunk size line too long".into());
            }
            if read_more(sock, &mut buf).await? == 0 {
                return Err("connection closed inside a chunked body".into());
            }
        };
        let line = std::str::from_utf8(&buf[pos..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        if body.len().saturating_add(size) > MAX_BODY {
            return Err(format!("request body larger than {MAX_BODY} bytes"));
        }
        pos = line_end + 2;
        while buf.len() < pos + size + 2 {
            if read_more(sock, &mut buf).await? == 0 {
                return Err("connection closed inside a chunk".into());
            }
        }
        if size == 0 {
            // Trailers are not used by any client we serve; the blank line ends the body.
            return Ok(body);
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// How to send a response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Delivery {
    /// Bytes per write; `None`: one write per SSE event for streams, the whole body otherwise.
    pub chunk_size: Option<usize>,
    /// Pause between writes.
    pub delay: Duration,
    /// Pause before the response head.
    pub head_delay: Duration,
    /// Close the connection after this many body bytes.
    pub drop_after: Option<usize>,
    /// Stop after this many body bytes and hold the connection until the client leaves.
    pub stall_after: Option<usize>,
}

/// A response to write.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Chunked transfer encoding (streams) instead of `Content-Length`.
    pub chunked: bool,
}

/// Waits until the client closes the connection (or `limit` passes).
pub(crate) async fn wait_for_close(sock: &mut TcpStream, limit: Option<Duration>) {
    let mut sink = [0u8; 1024];
    let drain = async {
        loop {
            match sock.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    match limit {
        Some(limit) => {
            let _ = tokio::time::timeout(limit, drain).await;
        }
        None => drain.await,
    }
}

/// Writes `response` as `delivery` says. IO errors end the write quietly: the client left.
pub(crate) async fn write_response(sock: &mut TcpStream, response: Response, delivery: &Delivery) {
    let _ = write_inner(sock, response, delivery).await;
}

async fn write_inner(
    sock: &mut TcpStream,
    response: Response,
    delivery: &Delivery,
) -> std::io::Result<()> {
    if !delivery.head_delay.is_zero() {
        wait_for_close(sock, Some(delivery.head_delay)).await;
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if response.chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    } else {
        head.push_str(&format!("content-length: {}\r\n", response.body.len()));
    }
    head.push_str("connection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).await?;
    sock.flush().await?;

    let body = &response.body;
    let pieces = split(body, delivery.chunk_size, response.chunked);
    let mut sent = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 && !delivery.delay.is_zero() {
            tokio::time::sleep(delivery.delay).await;
        }
        let cut = [delivery.drop_after, delivery.stall_after]
            .into_iter()
            .flatten()
            .min();
        let room = cut.map_or(usize::MAX, |c| c.saturating_sub(sent));
        let piece = &piece[..piece.len().min(room)];
        if !piece.is_empty() {
            write_piece(sock, piece, response.chunked).await?;
            sent += piece.len();
        }
        if Some(sent) == cut {
            return stop(sock, delivery).await;
        }
    }
    if cut_at_end(delivery, sent) {
        return stop(sock, delivery).await;
    }
    if response.chunked {
        sock.write_all(b"0\r\n\r\n").await?;
    }
    sock.flush().await?;
    sock.shutdown().await
}

/// A cut placed at or past the body's end still happens, just before the end of the body.
fn cut_at_end(delivery: &Delivery, sent: usize) -> bool {
    [delivery.drop_after, delivery.stall_after]
        .into_iter()
        .flatten()
        .any(|c| c >= sent)
}

/// Ends the body early: stalls when the stall comes first, else drops the connection.
async fn stop(sock: &mut TcpStream, delivery: &Delivery) -> std::io::Result<()> {
    let stall = match (delivery.stall_after, delivery.drop_after) {
        (Some(s), Some(d)) => s < d,
        (stall, _) => stall.is_some(),
    };
    if stall {
        wait_for_close(sock, None).await;
    }
    // Dropping the socket closes it without the body's end.
    Ok(())
}

async fn write_piece(sock: &mut TcpStream, piece: &[u8], chunked: bool) -> std::io::Result<()> {
    if chunked {
        sock.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        sock.write_all(piece).await?;
        sock.write_all(b"\r\n").await?;
    } else {
        sock.write_all(piece).await?;
    }
    sock.flush().await
}

/// The body in writes: fixed-size pieces, else one per SSE event for streams, else whole.
fn split(body: &[u8], size: Option<usize>, stream: bool) -> Vec<&[u8]> {
    match size {
        Some(n) => body.chunks(n.max(1)).collect(),
        None if stream => {
            let mut out = Vec::new();
            let mut rest = body;
            while let Some(i) = find(rest, b"\n\n") {
                let (head, tail) = rest.split_at(i + 2);
                out.push(head);
                rest = tail;
            }
            if !rest.is_empty() {
                out.push(rest);
            }
            out
        }
        None => vec![body],
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_by_event_and_size() {
        let body = b"data: 1\n\ndata: 2\n\ntail";
        assert_eq!(
            split(body, None, true),
            vec![&b"data: 1\n\n"[..], b"data: 2\n\n", b"tail"]
        );
        assert_eq!(split(body, Some(0), false).len(), body.len());
        assert_eq!(split(body, None, false), vec![&body[..]]);
    }
}
