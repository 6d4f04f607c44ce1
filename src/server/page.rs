//! The live page: `GET /` shows the tools by role and the recent calls, and `GET /api/events`
//! tells it what changed since.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde_json::json;

use super::api;
use super::app::App;
use super::live::{self, LiveEvent};

/// The live page and its event stream.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(page))
        .route("/api/events", get(events))
}

/// `GET /`: the live page (tools by role, recent calls). The state at the time of the request
/// is in the page itself, so it shows everything as soon as it has loaded; later changes come
/// from `/api/events`.
async fn page(State(app): State<Arc<App>>) -> Response {
    let initial = json!({
        "tools": api::tools_json(&app, None).await,
        "calls": {"ok": true, "calls": app.live.recent()},
    });
    let html = live::PAGE.replace(live::INITIAL_STATE, &live::script_json(&initial));
    let mut response = html.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /api/events`: `tools` when registrations change, `call` (a call's log record) when a
/// call starts or finishes, `lagged` when events were dropped for a slow reader (read
/// everything again).
async fn events(State(app): State<Arc<App>>) -> Response {
    let rx = app.live.subscribe();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(LiveEvent::Tools) => Event::default().event("tools").data("{}"),
            Ok(LiveEvent::Call(record)) => Event::default()
                .event("call")
                .data(serde_json::to_string(&record).unwrap_or_default()),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                Event::default().event("lagged").data(n.to_string())
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<Event, std::convert::Infallible>(event), rx))
    })
    .take_until(app.shutdown_signal());
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
