//! The floor `benches/gateway.sh` measures toolwire's same-wire route against: the least a
//! proxy built from the same parts (axum in front, reqwest behind, one Tokio runtime of two
//! workers, as `toolwire serve` runs) can do — every POST forwarded to the upstream with its
//! body and content type, the answer's status, content type and body streamed back. No model
//! read, no auth, no limits, no usage: what is left is the second HTTP hop itself.
//!
//! Run: `cargo run --release --features server --example bare_proxy -- PORT UPSTREAM_URL`

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt as _;

#[derive(Clone)]
struct Upstream {
    http: reqwest::Client,
    base: String,
}

async fn forward(
    State(up): State<Upstream>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut request = up.http.post(format!("{}{}", up.base, uri.path()));
    if let Some(kind) = headers.get(header::CONTENT_TYPE) {
        request = request.header(header::CONTENT_TYPE, kind);
    }
    match request.body(body).send().await {
        Ok(answer) => {
            let status =
                StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let kind = answer.headers().get(header::CONTENT_TYPE).cloned();
            let mut out = Response::new(Body::from_stream(answer.bytes_stream()));
            *out.status_mut() = status;
            if let Some(kind) = kind {
                out.headers_mut().insert(header::CONTENT_TYPE, kind);
            }
            out
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().unwrap_or_else(|| "0".into()).parse()?;
    let base = args.next().ok_or("usage: bare_proxy PORT UPSTREAM_URL")?;
    let up = Upstream {
        // toolwire's builder: reqwest with rustls on ring, as the gateway's upstream client.
        http: toolwire::client::http_client_builder().build()?,
        base: base.trim_end_matches('/').to_owned(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let app = Router::new()
            .fallback(post(forward))
            .with_state(up)
            .layer(DefaultBodyLimit::max(32 << 20));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("http://{}", listener.local_addr()?);
        // Small answers leave at once, as toolwire's listener sets it.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await?;
        Ok(())
    })
}
