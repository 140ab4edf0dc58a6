//! Get/Put/DeleteBucketCors.

use axum::body::Body;
use http::{Response, StatusCode};

use super::{empty, named, xml};
use crate::body::read_small;
use crate::cors::{self, CorsConfiguration};
use crate::error::{S3Error, S3Result};
use crate::request::S3Request;
use crate::Gateway;

/// Largest CORSConfiguration document accepted.
const MAX_CORS_BYTES: u64 = 64 << 10;
/// Key of the CORS configuration among a bucket's documents.
pub const BUCKET_CORS: &str = "cors";

/// The bucket's CORS configuration, if any.
pub async fn configuration(gw: &Gateway, bucket: &str) -> S3Result<Option<CorsConfiguration>> {
    let b = gw
        .store
        .bucket(bucket)
        .await
        .map_err(|e| named(e, bucket, None))?;
    b.config
        .get(BUCKET_CORS)
        .map(|doc| cors::parse(doc.as_bytes()))
        .transpose()
}

/// GetBucketCors.
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let cfg = configuration(gw, req.bucket())
        .await?
        .ok_or(S3Error::NoSuchCorsConfiguration)?;
    Ok(xml(StatusCode::OK, cors::xml(&cfg)))
}

/// PutBucketCors.
pub async fn put(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let len = req.payload_length()?;
    let doc = read_small(
        body,
        req.auth.payload.clone(),
        len,
        MAX_CORS_BYTES,
        gw.config.body_idle_timeout,
    )
    .await?;
    let cfg = cors::parse(&doc)?;
    let stored = cors::xml(&cfg);
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.insert(BUCKET_CORS.into(), stored);
            Ok(())
        })
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
    Ok(empty(StatusCode::OK))
}

/// DeleteBucketCors.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.remove(BUCKET_CORS);
            Ok(())
        })
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
    Ok(empty(StatusCode::NO_CONTENT))
}
