//! The HTTP service: Granary's own endpoints under `/granary/`, and every
//! other request as S3 — with a request id, a tracing span, and S3 error
//! documents for failures.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::routing::get;
use axum::Router;
use http::{HeaderValue, Response, StatusCode};
use rand::Rng;
use tracing::Instrument;

use crate::auth::authenticate;
use crate::body::DrainOnDrop;
use crate::error::S3Result;
use crate::ops::dispatch;
use crate::request::{parse_query, parse_target, virtual_host_bucket, S3Request};
use crate::Gateway;

/// The gateway's router.
pub fn router(gw: Arc<Gateway>) -> Router {
    Router::new()
        .route("/granary/health/live", get(live))
        .route("/granary/health/ready", get(ready))
        .fallback(s3)
        .with_state(gw)
}

async fn live() -> &'static str {
    "OK\n"
}

async fn ready(State(gw): State<Arc<Gateway>>) -> Response<Body> {
    let (status, text) = if gw.store.writable().await {
        (StatusCode::OK, "OK\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not enough disks online for writes\n",
        )
    };
    Response::builder()
        .status(status)
        .body(Body::from(text))
        .expect("valid response")
}

fn new_ids() -> (String, String) {
    let mut rng = rand::thread_rng();
    let id: [u8; 8] = rng.gen();
    let host: [u8; 24] = rng.gen();
    use base64::Engine as _;
    (
        hex::encode_upper(id),
        base64::engine::general_purpose::STANDARD.encode(host),
    )
}

async fn s3(State(gw): State<Arc<Gateway>>, req: Request) -> Response<Body> {
    let (request_id, host_id) = new_ids();
    let span = tracing::info_span!("s3", request_id = %request_id, method = %req.method(), path = %req.uri().path());
    async move {
        let started = Instant::now();
        let (parts, body) = req.into_parts();
        let expects_continue = parts
            .headers
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let body = Body::new(DrainOnDrop::new(body, expects_continue));
        let resource = parts.uri.path().to_string();
        let head = parts.method == http::Method::HEAD;
        let mut resp = match handle(&gw, parts, body).await {
            Ok(r) => r,
            Err(e) => {
                if e.status().is_server_error() {
                    tracing::warn!(code = e.code(), message = %e.message(), "request failed");
                } else {
                    tracing::debug!(code = e.code(), message = %e.message(), "request refused");
                }
                e.into_response(&resource, &request_id, &host_id, head)
            }
        };
        let h = resp.headers_mut();
        h.insert(
            "x-amz-request-id",
            HeaderValue::from_str(&request_id).expect("hex"),
        );
        h.insert(
            "x-amz-id-2",
            HeaderValue::from_str(&host_id).expect("base64"),
        );
        h.insert(http::header::SERVER, HeaderValue::from_static("Granary"));
        tracing::debug!(
            status = resp.status().as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "done"
        );
        resp
    }
    .instrument(span)
    .await
}

async fn handle(gw: &Gateway, parts: http::request::Parts, body: Body) -> S3Result<Response<Body>> {
    let (bucket, key) = parse_target(&parts, gw.config.domain.as_deref())?;
    let vhost = virtual_host_bucket(&parts, gw.config.domain.as_deref());
    let auth = authenticate(
        &parts,
        &gw.credentials,
        &gw.config.region,
        time::OffsetDateTime::now_utc(),
        vhost.as_deref(),
    )?;
    let query = parse_query(parts.uri.query());
    let req = S3Request {
        parts,
        bucket,
        key,
        query,
        auth,
    };
    dispatch(gw, req, body).await
}
