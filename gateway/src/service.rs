//! The HTTP service: Granary's own endpoints under `/granary/`, and every
//! other request as S3 — with a request id, a tracing span, and S3 error
//! documents for failures.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::routing::{any, get};
use axum::Router;
use http::{HeaderValue, Response, StatusCode};
use rand::Rng;
use tracing::Instrument;

use crate::body::DrainOnDrop;
use crate::error_response::error_response;
use crate::iam::Principal;
use crate::ops;
use crate::ops::dispatch;
use crate::progress::{AbandonGuard, Phase, Progress};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::auth::credentials::Credentials;
use s3_wire::auth::{
    anonymous, authenticate, query_headers, refuse_session_token, requested_key, AuthContext,
};
use s3_wire::cors;
use s3_wire::error::S3Error;
use s3_wire::error::S3Result;
use s3_wire::query::parse_query;
use s3_wire::target::{parse_target, virtual_host_bucket};

/// The gateway's router.
pub fn router(gw: Arc<Gateway>) -> Router {
    Router::new()
        .route("/granary/health/live", get(live))
        .route("/granary/health/ready", get(ready))
        .route("/granary/metrics", get(crate::metrics::scrape))
        .route("/granary/admin/v1/{*rest}", any(crate::admin::handle))
        .fallback(s3)
        .with_state(gw)
}

async fn live() -> &'static str {
    "OK\n"
}

async fn ready(State(gw): State<Arc<Gateway>>) -> Response<Body> {
    // The first pool's set holds the cluster-wide state (buckets, users):
    // without it nothing can be served. Other pools' sets answer for their
    // own keys.
    // The reason names disks: it is for admins (`granary admin status`),
    // not for whoever can reach this endpoint.
    let (status, text) = if gw.store.offline_reason().is_some() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the erasure set holding buckets and users is offline; `granary admin status` says why\n"
                .to_string(),
        )
    } else if gw.store.writable().await {
        (StatusCode::OK, "OK\n".to_string())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not enough disks online for writes\n".to_string(),
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
        let progress = Progress::new(gw.disconnects.clone());
        let abandoned = AbandonGuard(progress.clone());
        let body = Body::new(DrainOnDrop::new(body, expects_continue, progress.clone()));
        let resource = parts.uri.path().to_string();
        let head = parts.method == http::Method::HEAD;
        let has_body = parts.headers.contains_key(http::header::TRANSFER_ENCODING)
            || parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .is_some_and(|v| v.as_bytes() != b"0");
        let handled = handle(&gw, parts, body, &progress).await;
        let body_unread = has_body && !progress.body_read();
        progress.enter(Phase::Answer);
        progress.answered();
        drop(abandoned);
        let mut resp = match handled {
            Ok(r) => r,
            Err(e) => {
                if e.status().is_server_error() {
                    tracing::warn!(code = e.code(), message = %e.message(), "request failed");
                } else {
                    tracing::debug!(code = e.code(), message = %e.message(), "request refused");
                }
                error_response(e, &resource, &request_id, &host_id, head)
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
        if body_unread {
            // Answered before the body was read to its end: the rest of it
            // may still arrive after this answer (a client that waited for
            // `100 Continue` in vain sends it anyway), so the connection
            // ends here rather than take those bytes for the next request.
            h.insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        }
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

/// The client's address and whether the connection is TLS, put into each
/// request's extensions by the listener.
#[derive(Clone, Copy, Debug)]
pub struct Connection {
    /// Peer address.
    pub peer: std::net::SocketAddr,
    /// TLS connection.
    pub secure: bool,
    /// Its TLS protocol version ("1.2", "1.3").
    pub tls_version: Option<&'static str>,
}

async fn handle(
    gw: &Gateway,
    parts: http::request::Parts,
    body: Body,
    progress: &Arc<Progress>,
) -> S3Result<Response<Body>> {
    let (bucket, key) = parse_target(&parts, gw.config.domain.as_deref())?;
    let conn = parts.extensions.get::<Connection>().copied();
    if parts.method == http::Method::OPTIONS {
        return preflight(gw, &parts, bucket.as_deref()).await;
    }
    refuse_session_token(&parts)?;
    let (auth, principal) = match requested_key(&parts) {
        None => (anonymous(&parts), Principal::Anonymous),
        Some(access_key) => {
            // An unknown key still goes through authenticate, so a
            // malformed signature is reported as such before the key is.
            let (creds, principal) = match gw.identities.lookup(&access_key).await? {
                Some((secret, principal)) => (Credentials::single(&access_key, &secret), principal),
                None => (Credentials::default(), Principal::Anonymous),
            };
            let vhost = virtual_host_bucket(&parts, gw.config.domain.as_deref());
            let auth = authenticate(
                &parts,
                &creds,
                AuthContext {
                    region: &gw.config.region,
                    now: time::OffsetDateTime::now_utc(),
                    vhost_bucket: vhost.as_deref(),
                    sigv2: gw.config.sigv2,
                },
            )?;
            (auth, principal)
        }
    };
    let mut parts = parts;
    for (name, value) in query_headers(&parts, auth.signing)? {
        parts.headers.insert(name, value);
    }
    let query = parse_query(parts.uri.query());
    let req = S3Request {
        parts,
        bucket,
        key,
        query,
        auth,
        principal,
        client: conn.map(|c| c.peer),
        secure: conn.is_some_and(|c| c.secure),
        tls_version: conn.and_then(|c| c.tls_version),
        progress: progress.clone(),
    };
    let method = req.parts.method.clone();
    let origin = req.parts.headers.contains_key(http::header::ORIGIN);
    let cors_bucket = req.bucket.clone();
    let request_headers = origin.then(|| req.parts.headers.clone());
    let result = dispatch(gw, req, body).await;
    match (request_headers, cors_bucket) {
        (Some(h), Some(b)) => Ok(with_cors(gw, &b, &method, &h, result).await?),
        _ => result,
    }
}

/// Answers a CORS preflight (OPTIONS) request; it carries no signature.
async fn preflight(
    gw: &Gateway,
    parts: &http::request::Parts,
    bucket: Option<&str>,
) -> S3Result<Response<Body>> {
    let bucket = bucket.ok_or_else(|| {
        S3Error::BadRequest("Insufficient information. Origin request header needed.".into())
    })?;
    let cfg = ops::cors::configuration(gw, bucket).await?;
    let headers = cors::preflight(cfg.as_ref(), &parts.headers)?;
    let mut resp = Response::builder()
        .status(StatusCode::OK)
        .body(Body::empty())
        .expect("valid response");
    resp.headers_mut().extend(headers);
    Ok(resp)
}

/// Adds Access-Control-* headers to the answer (success or error) of a
/// request that carried an Origin, when the bucket's CORS rules allow it.
async fn with_cors(
    gw: &Gateway,
    bucket: &str,
    method: &http::Method,
    request: &http::HeaderMap,
    result: S3Result<Response<Body>>,
) -> S3Result<Response<Body>> {
    let Ok(Some(cfg)) = ops::cors::configuration(gw, bucket).await else {
        return result;
    };
    match result {
        Ok(mut resp) => {
            cors::decorate(&cfg, method, request, resp.headers_mut());
            Ok(resp)
        }
        Err(e) => {
            let mut extra = http::HeaderMap::new();
            cors::decorate(&cfg, method, request, &mut extra);
            if extra.is_empty() {
                return Err(e);
            }
            let headers = extra
                .iter()
                .filter_map(|(k, v)| Some((static_name(k.as_str())?, v.to_str().ok()?.to_string())))
                .collect();
            Err(S3Error::WithHeaders(Box::new(e), headers))
        }
    }
}

fn static_name(name: &str) -> Option<&'static str> {
    [
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-methods",
        "access-control-expose-headers",
        "access-control-max-age",
        "vary",
    ]
    .into_iter()
    .find(|n| *n == name)
}
