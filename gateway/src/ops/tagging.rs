//! Object tagging (Get/Put/DeleteObjectTagging) and bucket tagging
//! (Get/Put/DeleteBucketTagging).

use axum::body::Body;
use http::{Response, StatusCode};

use super::document::{read_document, set_bucket_document};
use super::reply::{empty, xml};
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::tags::{self, Tags, MAX_BUCKET_TAGS, MAX_OBJECT_TAGS};

/// Largest Tagging document accepted.
const MAX_TAGGING_BYTES: u64 = 64 << 10;
/// Key of bucket tags among a bucket's configuration documents.
const BUCKET_TAGS: &str = "tagging";

async fn read_tags(gw: &Gateway, req: &S3Request, body: Body, max: usize) -> S3Result<Tags> {
    let doc = read_document(gw, req, body, MAX_TAGGING_BYTES).await?;
    tags::parse_xml(&doc, max)
}

fn with_version(mut resp: Response<Body>, version: Option<String>) -> Response<Body> {
    if let Some(v) = version {
        resp.headers_mut()
            .insert("x-amz-version-id", v.parse().expect("ascii"));
    }
    resp
}

/// GetObjectTagging.
pub async fn get_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let obj = super::get::requested_object(gw, req, req.key()).await?;
    let id = obj.version_id.is_some().then(|| versions::of(&obj));
    Ok(with_version(xml(StatusCode::OK, tags::xml(&obj.tags)), id))
}

/// PutObjectTagging (replaces the whole tag set).
pub async fn put_object(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let version = versions::requested(req)?;
    let new = read_tags(gw, req, body, MAX_OBJECT_TAGS).await?;
    req.progress.enter(Phase::Commit);
    let obj = gw
        .store
        .set_tags(req.bucket(), req.key(), version, new)
        .await?;
    let id = obj.version_id.is_some().then(|| versions::of(&obj));
    Ok(with_version(empty(StatusCode::OK), id))
}

/// DeleteObjectTagging.
pub async fn delete_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let version = versions::requested(req)?;
    req.progress.enter(Phase::Commit);
    let obj = gw
        .store
        .set_tags(req.bucket(), req.key(), version, Vec::new())
        .await?;
    let id = obj.version_id.is_some().then(|| versions::of(&obj));
    Ok(with_version(empty(StatusCode::NO_CONTENT), id))
}

/// GetBucketTagging (NoSuchTagSet when there are none).
pub async fn get_bucket(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw.store.bucket(req.bucket()).await?;
    let doc = b.config.get(BUCKET_TAGS).ok_or(S3Error::NoSuchTagSet)?;
    let t: Tags = serde_json::from_str(doc)
        .map_err(|e| S3Error::Internal(format!("stored bucket tags: {e}")))?;
    Ok(xml(StatusCode::OK, tags::xml(&t)))
}

/// PutBucketTagging.
pub async fn put_bucket(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let new = read_tags(gw, req, body, MAX_BUCKET_TAGS).await?;
    let doc = serde_json::to_string(&new).expect("tags serialise");
    set_bucket_document(gw, req, BUCKET_TAGS, Some(doc)).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteBucketTagging.
pub async fn delete_bucket(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    set_bucket_document(gw, req, BUCKET_TAGS, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
