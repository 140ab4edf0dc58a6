//! Get/Put/DeleteBucketPolicy.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketPolicy.html>)

use axum::body::Body;
use http::{Response, StatusCode};

use super::{empty, named};
use crate::body::read_small;
use crate::error::{S3Error, S3Result};
use crate::iam::policy::Policy;
use crate::request::S3Request;
use crate::Gateway;

/// Largest bucket policy S3 accepts: 20 KB.
const MAX_POLICY_BYTES: u64 = 20 * 1024;
/// Key of the bucket policy among a bucket's documents.
pub(crate) const BUCKET_POLICY: &str = "policy";

/// GetBucketPolicy: the document as stored (JSON).
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw
        .store
        .bucket(req.bucket())
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
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
    let doc = read_small(
        body,
        req.auth.payload.clone(),
        len,
        MAX_POLICY_BYTES,
        gw.config.body_idle_timeout,
    )
    .await?;
    let text = String::from_utf8(doc.to_vec())
        .map_err(|_| S3Error::MalformedPolicy("Policies must be UTF-8 JSON".into()))?;
    Policy::parse(&text, Some(req.bucket())).map_err(S3Error::MalformedPolicy)?;
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.insert(BUCKET_POLICY.into(), text);
            Ok(())
        })
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteBucketPolicy.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.remove(BUCKET_POLICY);
            Ok(())
        })
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
    Ok(empty(StatusCode::NO_CONTENT))
}
