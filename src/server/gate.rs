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
/// with an optional port of digits. A request without `Host` (HTTP/1.0, not a browser) passes.
///
/// The value is parsed as an authority (RFC 9110 `uri-host [ ":" port ]`), never matched as a
/// string: user info (`127.0.0.1:80@evil.example`), a name that only starts with a loopback
/// name (`localhost.evil.example`), an IPv6 address without brackets, a port that is not
/// 1 to 5 digits up to 65535, and anything after the port are refused.
pub fn is_loopback_host(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return true;
    };
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((inside, tail)) = rest.split_once(']') else {
            return false;
        };
        let port = match tail.strip_prefix(':') {
            Some(port) => Some(port),
            None if tail.is_empty() => None,
            None => return false,
        };
        match inside.parse::<std::net::Ipv6Addr>() {
            Ok(v6) if is_loopback_peer(IpAddr::V6(v6)) => {}
            _ => return false,
        }
        (None, port)
    } else {
        match host.split_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(host), None),
        }
    };
    if let Some(port) = port
        && !(matches!(port.len(), 1..=5)
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| p <= 65_535))
    {
        return false;
    }
    match name {
        None => true,
        Some(name) => {
            name.eq_ignore_ascii_case("localhost")
                || name
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|v4| v4.is_loopback())
        }
    }
}

/// The middleware: 403 with a JSON message for a non-loopback peer or `Host`.
pub(crate) async fn loopback_only(request: Request, next: Next) -> Response {
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
            Some("[0:0:0:0:0:0:0:1]:80"),
            Some("[::ffff:127.0.0.1]:80"),
            Some("127.8.9.10:65535"),
            Some("localhost:1"),
        ] {
            assert!(is_loopback_host(host), "{host:?}");
        }
        for host in [
            "evil.example",
            "evil.example:48911",
            "localhost.evil.example",
            "localhost.",
            "127.0.0.1.nip.io",
            "192.168.1.5:48911",
            "[2001:db8::1]:1",
            "[::1]x",
            "",
            // User info, as a URL authority would carry it: the host is evil.example.
            "127.0.0.1:80@evil.example",
            "localhost@evil.example",
            "user@127.0.0.1",
            "[::1]:80@evil.example",
            // Ports that are not 1 to 5 digits up to 65535.
            "127.0.0.1:",
            "127.0.0.1:+80",
            "127.0.0.1:80:80",
            "127.0.0.1:65536",
            "127.0.0.1:000080",
            "localhost:80 ",
            "[::1]:",
            // IPv6 without brackets, IPv4 spelled other ways, zone ids.
            "::1",
            "::1:80",
            "2130706433",
            "127.1",
            "[::1%lo]",
            "[127.0.0.1]",
        ] {
            assert!(!is_loopback_host(Some(host)), "{host:?}");
        }
    }
}
