//! S3 operations, one family per file, and the dispatcher that picks one
//! from method, target and query.

mod bucket;
mod copy;
mod delete;
mod get;
mod list;
mod multipart;
mod put;
mod receive;

use axum::body::Body;
use http::{Method, Response, StatusCode};

use crate::error::{S3Error, S3Result};
use crate::request::S3Request;
use crate::Gateway;

/// Bucket subresources S3 defines that Granary does not serve yet.
const UNSUPPORTED_BUCKET: [&str; 22] = [
    "acl",
    "policy",
    "policyStatus",
    "tagging",
    "cors",
    "lifecycle",
    "website",
    "logging",
    "notification",
    "replication",
    "encryption",
    "object-lock",
    "publicAccessBlock",
    "ownershipControls",
    "intelligent-tiering",
    "analytics",
    "metrics",
    "inventory",
    "accelerate",
    "requestPayment",
    "versions",
    "metadataTable",
];
/// Object subresources S3 defines that Granary does not serve yet.
const UNSUPPORTED_OBJECT: [&str; 8] = [
    "acl",
    "tagging",
    "retention",
    "legal-hold",
    "torrent",
    "restore",
    "select",
    "attributes",
];

fn unsupported(req: &S3Request, list: &[&str]) -> S3Result<()> {
    if let Some(sub) = list.iter().find(|s| req.has(s)) {
        return Err(S3Error::NotImplemented(format!(
            "The ?{sub} operation is not supported yet"
        )));
    }
    Ok(())
}

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

/// Routes a request to its operation.
pub(crate) async fn dispatch(gw: &Gateway, req: S3Request, body: Body) -> S3Result<Response<Body>> {
    let method = req.parts.method.clone();
    match (req.bucket.is_some(), req.key.is_some()) {
        (false, _) => match method {
            Method::GET => bucket::list_buckets(gw, &req).await,
            _ => Err(S3Error::MethodNotAllowed(
                "The specified method is not allowed against this resource.".into(),
            )),
        },
        (true, false) => {
            unsupported(&req, &UNSUPPORTED_BUCKET)?;
            match method {
                Method::GET if req.has("location") => bucket::location(gw, &req).await,
                Method::GET if req.has("versioning") => bucket::versioning(gw, &req).await,
                Method::GET if req.has("uploads") => multipart::list_uploads(gw, &req).await,
                Method::GET if req.q("list-type") == Some("2") => list::list_v2(gw, &req).await,
                Method::GET => list::list_v1(gw, &req).await,
                Method::HEAD => bucket::head(gw, &req).await,
                Method::PUT if req.has("versioning") => Err(S3Error::NotImplemented(
                    "Bucket versioning is not supported yet".into(),
                )),
                Method::PUT => bucket::create(gw, &req, body).await,
                Method::DELETE => bucket::delete(gw, &req).await,
                Method::POST if req.has("delete") => delete::delete_objects(gw, &req, body).await,
                Method::POST => Err(S3Error::NotImplemented(
                    "POST Object (browser form upload) is not supported yet".into(),
                )),
                _ => Err(S3Error::MethodNotAllowed(
                    "The specified method is not allowed against this resource.".into(),
                )),
            }
        }
        (true, true) => {
            unsupported(&req, &UNSUPPORTED_OBJECT)?;
            crate::names::validate_key(req.key())?;
            match method {
                Method::GET if req.has("uploadId") => multipart::list_parts(gw, &req).await,
                Method::GET => get::get(gw, &req, false).await,
                Method::HEAD => get::get(gw, &req, true).await,
                Method::PUT if req.has("uploadId") || req.has("partNumber") => {
                    if req.parts.headers.contains_key("x-amz-copy-source") {
                        return multipart::upload_part_copy(gw, &req).await;
                    }
                    multipart::upload_part(gw, &req, body).await
                }
                Method::PUT if req.parts.headers.contains_key("x-amz-copy-source") => {
                    copy::copy_object(gw, &req).await
                }
                Method::PUT => put::put_object(gw, &req, body).await,
                Method::POST if req.has("uploads") => multipart::create(gw, &req).await,
                Method::POST if req.has("uploadId") => multipart::complete(gw, &req, body).await,
                Method::DELETE if req.has("uploadId") => multipart::abort(gw, &req).await,
                Method::DELETE => delete::delete_object(gw, &req).await,
                _ => Err(S3Error::MethodNotAllowed(
                    "The specified method is not allowed against this resource.".into(),
                )),
            }
        }
    }
}

/// Maps a storage error for a request on `bucket`/`key`, naming them in the
/// error document.
pub(crate) fn named(e: placement::Error, bucket: &str, key: Option<&str>) -> S3Error {
    match S3Error::from(e) {
        S3Error::NoSuchBucket(_) => S3Error::NoSuchBucket(bucket.to_string()),
        S3Error::NoSuchKey(_) => S3Error::NoSuchKey(key.unwrap_or_default().to_string()),
        S3Error::BucketNotEmpty(_) => S3Error::BucketNotEmpty(bucket.to_string()),
        S3Error::BucketAlreadyOwnedByYou(_) => S3Error::BucketAlreadyOwnedByYou(bucket.to_string()),
        other => other,
    }
}
