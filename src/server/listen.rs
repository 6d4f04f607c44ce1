//! Accepting connections with limits, on hyper's HTTP/1 server: a deadline for each request
//! head (which is also the idle keep-alive deadline), a cap on open connections and one per
//! peer address, shedding idle connections when the cap is reached, and a graceful drain on
//! shutdown.
//!
//! hyper starts its header-read timer whenever it waits for a request head: on a new
//! connection and again after each response on a keep-alive connection. So one deadline closes
//! slowloris peers (a head sent a byte at a time) and idle keep-alive connections alike.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// How long a connection may stay silent before it can be shed to make room (a client sends
/// its request as soon as it connects).
const QUIET: Duration = Duration::from_millis(250);

/// How the server treats connections (see [`crate::server::ServerConfig`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// The time a peer has to send a whole request head, counted from the connection's start
    /// or the end of the previous response.
    pub header_timeout: Duration,
    /// The most connections open at once.
    pub max_connections: usize,
    /// The most connections open at once from one peer address (off loopback unless
    /// `cap_loopback_peers`).
    pub max_per_peer: usize,
    /// Whether loopback peers count against `max_per_peer`.
    pub cap_loopback_peers: bool,
    /// How long shutdown waits for requests in flight.
    pub drain: Duration,
}

/// Serves `router` on `listener` until `stop` turns true, then drains.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(Peers::default());
    // Bumped to ask every connection to close once idle (keep-alive off, the request in
    // flight finishes first).
    let (shed, _) = watch::channel(0u64);
    let mut connections = JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // Full: idle keep-alive connections and those that have sent nothing for a
                // while give their place to new ones; busy ones close after their answer.
                // Until a place frees, new connections wait in the listen backlog.
                let slot = loop {
                    shed.send_modify(|n| *n += 1);
                    tokio::select! {
                        slot = Arc::clone(&slots).acquire_owned() => break slot.ok(),
                        _ = stopped(&mut stop) => break None,
                        _ = tokio::time::sleep(QUIET) => {}
                    }
                };
                match slot {
                    Some(slot) => slot,
                    None => break,
                }
            }
        };
        let (sock, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(_) => {
                    // Out of file descriptors (or a peer gone before accept): wait a little
                    // rather than spin; connections closing free descriptors.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let ip = peer.ip().to_canonical();
        let counted = limits.cap_loopback_peers || !super::gate::is_loopback_peer(ip);
        let place = if counted {
            let Some(place) = Peers::enter(&peers, peer_key(ip), limits.max_per_peer) else {
                // Over its cap: closed at once, before a byte is read; its place in the
                // global count goes back with `slot`.
                tracing::debug!(%ip, "connection closed: the peer has too many open");
                drop(sock);
                continue;
            };
            Some(place)
        } else {
            None
        };
        let _ = sock.set_nodelay(true);
        let service =
            TowerToHyperService::new(router.clone().layer(axum::Extension(ConnectInfo(peer))));
        let heard = Arc::new(AtomicBool::new(false));
        let io = Heard {
            inner: sock,
            heard: Arc::clone(&heard),
        };
        let connection = http.serve_connection(TokioIo::new(io), service);
        let mut shed = shed.subscribe();
        shed.mark_unchanged();
        let mut stop = stop.clone();
        let opened = Instant::now();
        connections.spawn(async move {
            let _slot = slot;
            let _place = place;
            tokio::pin!(connection);
            let mut closing = false;
            loop {
                tokio::select! {
                    _ = connection.as_mut() => break,
                    changed = shed.changed(), if !closing => {
                        let _ = changed;
                        // A connection that has sent nothing for a while is closed at once; one
                        // that has spoken closes when idle; a new one is left alone.
                        if heard.load(Ordering::Relaxed) {
                            closing = true;
                            connection.as_mut().graceful_shutdown();
                        } else if opened.elapsed() >= QUIET {
                            break;
                        }
                    }
                    _ = stopped(&mut stop), if !closing => {
                        closing = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
        });
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.drain, drain).await.is_err() {
        connections.abort_all();
    }
}

/// What the per-peer cap counts under: an IPv4 address, or an IPv6 address's /64 prefix (one
/// host is usually given a whole /64, so counting single IPv6 addresses would not cap it).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

/// How many connections each counted peer (see [`peer_key`]) has open.
#[derive(Default)]
struct Peers(Mutex<HashMap<IpAddr, usize>>);

impl Peers {
    /// A place for one more connection from `ip`, or `None` when it has `max` open.
    fn enter(peers: &Arc<Self>, ip: IpAddr, max: usize) -> Option<Place> {
        let mut open = peers.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Place {
            peers: Arc::clone(peers),
            ip,
        })
    }
}

/// One connection's place in its peer's count, given back when the connection ends.
struct Place {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.peers.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Resolves when `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A connection that notes whether the peer has sent anything.
struct Heard {
    inner: TcpStream,
    heard: Arc<AtomicBool>,
}

impl AsyncRead for Heard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.heard.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Heard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_ipv4_addresses_or_ipv6_64_prefixes() {
        let key = |s: &str| peer_key(s.parse().unwrap()).to_string();
        assert_eq!(key("203.0.113.7"), "203.0.113.7");
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2:ffff:1:2:3"), "2001:db8:1:2::");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
    }

    #[test]
    fn a_peer_gets_its_place_back_when_a_connection_ends() {
        let peers = Arc::new(Peers::default());
        let ip = peer_key("2001:db8::1".parse().unwrap());
        let first = Peers::enter(&peers, ip, 2);
        let second = Peers::enter(&peers, ip, 2);
        assert!(first.is_some() && second.is_some());
        assert!(Peers::enter(&peers, ip, 2).is_none());
        drop(first);
        assert!(Peers::enter(&peers, ip, 2).is_some());
    }
}
