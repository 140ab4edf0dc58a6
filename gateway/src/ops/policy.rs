//! Get/Put/DeleteBucketPolicy.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketPolicy.html>)

use axum::body::Body;
use http::{Response, StatusCode};

use super::document::{read_document, set_bucket_document};
use super::reply::empty;
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::iam_policy::Policy;

/// Largest bucket policy S3 accepts: 20 KB.
const MAX_POLICY_BYTES: u64 = 20 * 1024;
/// Key of the bucket policy among a bucket's documents.
pub(crate) const BUCKET_POLICY: &str = "policy";

/// GetBucketPolicy: the document as stored (JSON).
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw.store.bucket(req.bucket()).await?;
    let doc = b
        .config
        .get(BUCKET_POLICY)
        .ok_or(S3Error::NoSuchBucketPolicy)?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(doc.clone()))
        .expect("valid response"))
}

/// PutBucketPolicy: validated against the supported subset first.
pub async fn put(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let len = req.payload_length()?;
    if len > MAX_POLICY_BYTES {
        return Err(S3Error::MalformedPolicy(
            "Policies must not exceed 20 KB".into(),
        ));
    }
    let doc = read_document(gw, req, body, MAX_POLICY_BYTES).await?;
    let text = String::from_utf8(doc.to_vec())
        .map_err(|_| S3Error::MalformedPolicy("Policies must be UTF-8 JSON".into()))?;
    Policy::parse(&text, Some(req.bucket())).map_err(S3Error::MalformedPolicy)?;
    set_bucket_document(gw, req, BUCKET_POLICY, Some(text)).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteBucketPolicy.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    set_bucket_document(gw, req, BUCKET_POLICY, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
