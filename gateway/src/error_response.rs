//! An [`S3Error`] as the HTTP answer a client gets: its status, the
//! headers some errors carry, and S3's XML error body (none for HEAD and
//! 304). The codes themselves are named in s3-wire's `error.rs` alone.

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode};

use crate::conn_guard::StopReading;
use s3_wire::error::S3Error;

/// Builds the HTTP response of `e`; HEAD requests and 304s get no body.
/// An internal error's cause is logged with the request id, not sent.
pub fn error_response(
    e: S3Error,
    resource: &str,
    request_id: &str,
    host_id: &str,
    head: bool,
) -> Response<Body> {
    if let S3Error::Internal(cause) = &e {
        tracing::error!(request_id, cause = %cause, "internal error");
    }
    let status = e.status();
    let mut builder = Response::builder().status(status);
    if let S3Error::WithHeaders(_, headers) = &e {
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
    }
    if let S3Error::InvalidRange(size) = &e {
        builder = builder.header(http::header::CONTENT_RANGE, format!("bytes */{size}"));
    }
    if e.stops_reading() {
        // The rest of the body is not wanted: close instead of draining
        // it at the sender's pace (HTTP/2 drops this header and resets
        // the stream).
        builder = builder
            .header(http::header::CONNECTION, "close")
            .extension(StopReading);
    }
    if head || status == StatusCode::NOT_MODIFIED {
        return builder.body(Body::empty()).expect("valid response");
    }
    let xml = e.to_xml(resource, request_id, host_id);
    builder
        .header(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )
        .body(Body::from(xml))
        .expect("valid response")
}
