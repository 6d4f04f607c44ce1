//! The loopback gates every request passes: the peer must be this machine, and the `Host` it
//! asked for must be a loopback name.
//!
//! The second gate stops DNS rebinding: a web page on `evil.example` whose name is made to
//! resolve to 127.0.0.1 reaches the server from the user's own browser (a loopback peer), but
//! its requests carry `Host: evil.example`.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::body::Reject;

/// Whether a peer address is this machine: 127.0.0.0/8, `::1`, or an IPv4-mapped IPv6 address
/// whose IPv4 address is loopback (judged by the mapped address).
pub fn is_loopback_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether a `Host` header names this machine: `localhost`, a 127.0.0.0/8 address or `[::1]`,
/// with any port. A request without `Host` (HTTP/1.0, not a browser) passes.
pub fn is_loopback_host(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return true;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, tail)) if tail.is_empty() || tail.starts_with(':') => inside,
            _ => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(is_loopback_peer)
}

/// The middleware: 403 with a JSON message for a non-loopback peer or `Host`.
pub(super) async fn loopback_only(request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    match peer {
        Some(ip) if is_loopback_peer(ip) => {}
        Some(ip) => {
            return forbidden(format!(
                "requests are accepted from this machine only (127.0.0.1, ::1); {ip} is not a \
                 loopback address"
            ));
        }
        None => return forbidden("the peer address is unknown".to_owned()),
    }
    let host = host_header(request.headers());
    if !is_loopback_host(host.as_deref()) {
        return forbidden(format!(
            "Host {:?} is not a loopback name (localhost, 127.0.0.1, [::1]); the request is \
             refused so that a web page cannot reach this server through DNS rebinding",
            host.unwrap_or_default()
        ));
    }
    next.run(request).await
}

fn host_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn forbidden(message: String) -> Response {
    Reject::new(StatusCode::FORBIDDEN, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers() {
        for ip in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback_peer(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "192.168.1.5",
            "10.0.0.1",
            "8.8.8.8",
            "0.0.0.0",
            "::",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "2001:db8::1",
            "fe80::1",
        ] {
            assert!(!is_loopback_peer(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn hosts() {
        for host in [
            None,
            Some("localhost"),
            Some("LOCALHOST:48911"),
            Some("127.0.0.1"),
            Some("127.0.0.1:48911"),
            Some("[::1]"),
            Some("[::1]:48911"),
        ] {
            assert!(is_loopback_host(host), "{host:?}");
        }
        for host in [
            "evil.example",
            "evil.example:48911",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "192.168.1.5:48911",
            "[2001:db8::1]:1",
            "[::1]x",
            "",
        ] {
            assert!(!is_loopback_host(Some(host)), "{host:?}");
        }
    }
}
