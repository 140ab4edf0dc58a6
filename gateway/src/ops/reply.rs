//! What an operation answers: empty and XML responses, and the S3 error a
//! conditional write's failed commit maps to.

use axum::body::Body;
use http::{Response, StatusCode};

use s3_wire::error::S3Error;

/// An empty response with `status`.
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .expect("valid response")
}

/// An XML document response.
pub(crate) fn xml(status: StatusCode, doc: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .body(Body::from(doc))
        .expect("valid response")
}

/// Maps the error of a conditional write's commit: a failed precondition
/// names the header that failed.
pub(crate) fn write_error(
    e: placement::Error,
    cond: &Option<placement::WriteCondition>,
) -> S3Error {
    match (e, cond) {
        (
            placement::Error::PreconditionFailed,
            Some(
                placement::WriteCondition::IfNoneMatch
                | placement::WriteCondition::IfNoneMatchEtag(_),
            ),
        ) => S3Error::PreconditionFailed("If-None-Match"),
        (placement::Error::PreconditionFailed, _) => S3Error::PreconditionFailed("If-Match"),
        (e, _) => e.into(),
    }
}
