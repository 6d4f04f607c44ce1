//! A raw send: a body the caller already has in the provider's own wire (the gateway's
//! same-wire routes), posted to the provider's path with the client's base URL, auth, signing
//! and extra headers, its answer handed back as it came (status, headers, body chunks). Nothing
//! is encoded or decoded here; the caller may read the body alongside with [`Client::reader`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};

use super::body::{Body, BodyError, Deadlines};
use super::{Client, after};
use crate::error::{Error, Result, TimeoutPhase};
use crate::provider::HttpRequest;
use crate::turn::TurnReader;
use crate::types::{ChatRequest, Message};

/// The upstream's answer to a raw send: its status, its headers, and its body as it arrives.
#[derive(Debug)]
pub(crate) struct RawAnswer {
    /// The HTTP status, whatever it is (an error answer is handed back too).
    pub(crate) status: u16,
    /// The answer's headers.
    pub(crate) headers: HeaderMap,
    body: Body,
    client: Client,
}

impl RawAnswer {
    /// The next chunk of the body: `None` at its end, an error when a deadline passed or the
    /// connection broke.
    pub(crate) fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        match self.body.poll_chunk(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(chunk)) => Poll::Ready(chunk.map(Ok)),
            Poll::Ready(Err(e)) => {
                let received = self.body.received();
                let inner = &self.client.inner;
                let e = match e {
                    BodyError::Timeout(..) | BodyError::TooLarge(_) => {
                        inner.body_error(e, None, received)
                    }
                    BodyError::Transport(e) => inner.redact(inner.transport(e)),
                };
                Poll::Ready(Some(Err(e)))
            }
        }
    }
}

/// Where raw sends of one model's turns go: the provider's path and headers for the turn, and
/// the whole URL parsed once (`None` when it does not parse: sending then fails with reqwest's
/// own error, as any send to a bad base URL does).
#[derive(Debug)]
pub(crate) struct Route {
    model: String,
    stream: bool,
    /// The path (and query) the provider's encoder writes for a turn.
    pub(crate) path: String,
    headers: Vec<(String, String)>,
    url: Option<reqwest::Url>,
}

/// How many routes a client keeps: the models of a gateway's roles, and a few more
/// PROVIDER/MODEL strings; past it the oldest goes.
const ROUTES: usize = 32;

/// The routes a client computed, newest last (a few entries, searched in order).
#[derive(Debug, Default)]
pub(crate) struct Routes(Mutex<VecDeque<Arc<Route>>>);

impl Client {
    /// The path and provider headers this client posts a turn to (`stream` or not) for
    /// `model`: those its provider's encoder writes for the smallest request, computed once per
    /// model and kept ([`ROUTES`] of them), with the URL parsed.
    pub(crate) fn route(&self, model: &str, stream: bool) -> Result<Arc<Route>> {
        let inner = &self.inner;
        let kept = |routes: &VecDeque<Arc<Route>>| {
            (routes.iter())
                .find(|r| r.stream == stream && r.model == model)
                .cloned()
        };
        if let Some(found) = kept(
            &inner
                .routes
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ) {
            return Ok(found);
        }
        let probe = ChatRequest::new(model, vec![Message::user(".")]);
        let wire = inner.provider.encode(&probe, stream)?;
        let route = Arc::new(Route {
            model: model.to_owned(),
            stream,
            url: reqwest::Url::parse(&inner.url(&wire)).ok(),
            path: wire.path,
            headers: wire.headers,
        });
        let mut routes = inner
            .routes
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if routes.len() >= ROUTES {
            routes.pop_front();
        }
        routes.push_back(Arc::clone(&route));
        Ok(route)
    }

    /// A reader of this client's answers, for reading a raw answer alongside.
    pub(crate) fn reader(&self) -> TurnReader<'static> {
        TurnReader::shared(Arc::clone(&self.inner.provider), None).with_limits(self.inner.limits)
    }

    /// Posts `body` (already in this provider's wire, `model` in it) to `route` (the
    /// provider's path and headers for the turn, [`Client::route`]) with `suffix` appended to
    /// its path (empty for a turn; `/count_tokens` beside Anthropic's `/v1/messages`), with the
    /// route's headers, then `headers` (the caller's, replacing same-named ones), then the
    /// client's auth, signing and extra headers. One attempt: the answer comes back whatever
    /// its status; only a failure to get one (connect, first-byte deadline) is an error.
    pub(crate) async fn send_raw_at(
        &self,
        route: &Route,
        suffix: &str,
        body: Bytes,
        stream: bool,
        headers: &[(String, String)],
    ) -> Result<RawAnswer> {
        if suffix.is_empty()
            && let Some(url) = &route.url
        {
            return (self.send_wire(url.clone(), &route.headers, body, stream, headers)).await;
        }
        let (path, query) = route.path.split_once('?').unwrap_or((&route.path, ""));
        let path = if query.is_empty() {
            format!("{path}{suffix}")
        } else {
            format!("{path}{suffix}?{query}")
        };
        let url = self
            .inner
            .url(&HttpRequest::new(path, serde_json::Value::Null));
        (self.send_wire(url, &route.headers, body, stream, headers)).await
    }

    /// The provider's own count of `req`'s input tokens ([`Provider::encode_count_tokens`]):
    /// `None` when the provider has no such endpoint; an error when the upstream could not be
    /// reached, answered an error (decoded as the provider's), or answered what is no count.
    ///
    /// [`Provider::encode_count_tokens`]: crate::provider::Provider::encode_count_tokens
    pub(crate) async fn count_tokens(&self, req: &ChatRequest) -> Result<Option<u64>> {
        let provider = &self.inner.provider;
        let Some(wire) = provider.encode_count_tokens(req)? else {
            return Ok(None);
        };
        let body = serde_json::to_vec(&wire.body)
            .map_err(|e| Error::input("request", format!("not serialisable: {e}")))?;
        let url = self.inner.url(&wire);
        let mut answer =
            (self.send_wire(url, &wire.headers, Bytes::from(body), false, &[])).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = std::future::poll_fn(|cx| answer.poll_chunk(cx)).await {
            bytes.extend_from_slice(&chunk?);
        }
        if !(200..300).contains(&answer.status) {
            let e = provider.decode_error(Some(answer.status), &bytes);
            return Err(self.inner.redact(Error::Api(Box::new(e))));
        }
        provider.decode_count_tokens(&bytes).map(Some)
    }

    /// Posts `body` to `url` with `route_headers`, then `headers`, then the client's auth,
    /// signing and extra headers; see [`Client::send_raw_at`].
    async fn send_wire(
        &self,
        url: impl reqwest::IntoUrl + AsRef<str>,
        route_headers: &[(String, String)],
        body: Bytes,
        stream: bool,
        headers: &[(String, String)],
    ) -> Result<RawAnswer> {
        let inner = &self.inner;
        let t = &inner.timeouts;
        let total = after(t.total);
        let first_byte = after(t.first_byte).min(total);
        let signing = inner.signer.as_ref().map(|_| url.as_ref().to_owned());
        let mut request = inner
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json");
        let mut all: Vec<(&str, &str)> = Vec::new();
        for (name, value) in route_headers.iter().chain(headers) {
            all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            all.push((name, value));
        }
        if !all.iter().any(|(n, _)| n.eq_ignore_ascii_case("accept")) {
            let accept = if stream {
                "text/event-stream"
            } else {
                "application/json"
            };
            request = request.header(ACCEPT, accept);
        }
        for (name, value) in all {
            request = request.header(name, value);
        }
        if let Some(signer) = &inner.signer {
            let url = signing.as_deref().unwrap_or_default();
            request = inner.signed(signer.as_ref(), request, url, &body)?;
        }
        if let Some((name, value)) = &inner.auth {
            request = request.header(name.clone(), value.clone());
        }
        if !inner.headers.is_empty() {
            request = request.headers(inner.headers.clone());
        }
        let response = match tokio::time::timeout_at(first_byte, request.body(body).send()).await {
            Err(_) => {
                let (phase, limit) = if first_byte >= total {
                    (TimeoutPhase::Total, t.total)
                } else {
                    (TimeoutPhase::FirstByte, t.first_byte)
                };
                return Err(inner.timeout(phase, limit, None));
            }
            Ok(Err(e)) => return Err(inner.redact(inner.transport(e))),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let deadlines = Deadlines {
            first_byte,
            first_byte_limit: t.first_byte,
            idle: t.idle,
            total,
            total_limit: t.total,
        };
        let limit = if (200..300).contains(&status) {
            inner.limits.max_body_bytes
        } else {
            inner.limits.max_error_body_bytes
        };
        Ok(RawAnswer {
            status,
            headers,
            body: Body::new(response, deadlines, limit),
            client: self.clone(),
        })
    }
}
