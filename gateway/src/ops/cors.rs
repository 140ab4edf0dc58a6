//! Get/Put/DeleteBucketCors.

use axum::body::Body;
use http::{Response, StatusCode};

use super::document::{read_document, set_bucket_document};
use super::reply::{empty, xml};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::cors::{self, CorsConfiguration};
use s3_wire::error::{S3Error, S3Result};

/// Largest CORSConfiguration document accepted.
const MAX_CORS_BYTES: u64 = 64 << 10;
/// Key of the CORS configuration among a bucket's documents.
pub const BUCKET_CORS: &str = "cors";

/// The bucket's CORS configuration, if any.
pub async fn configuration(gw: &Gateway, bucket: &str) -> S3Result<Option<CorsConfiguration>> {
    let b = gw.store.bucket(bucket).await?;
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
    let doc = read_document(gw, req, body, MAX_CORS_BYTES).await?;
    let cfg = cors::parse(&doc)?;
    set_bucket_document(gw, req, BUCKET_CORS, Some(cors::xml(&cfg))).await?;
    Ok(empty(StatusCode::OK))
}

/// DeleteBucketCors.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    set_bucket_document(gw, req, BUCKET_CORS, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
