//! PutObject.

use axum::body::Body;
use http::{Response, StatusCode};
use placement::WriteOptions;

use super::receive::{receive, Target};
use super::reply::write_error;
use crate::checksum::ChecksumAlgorithm;
use crate::conditions::write_condition;
use crate::headers::{now_ns, object_meta, quoted, reject_unsupported, requested_class};
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::S3Result;
use s3_wire::tags;

/// PutObject: streams the body into shard files, verifies every digest the
/// client sent, then commits the version (checking `If-None-Match` /
/// `If-Match` atomically with the commit). A failure at any step leaves the
/// previous version untouched.
pub async fn put_object(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let since_ns = now_ns();
    reject_unsupported(&req.parts.headers)?;
    let (class, tier) = requested_class(&req.parts.headers, gw.store.has_cold_pool())?;
    let condition = write_condition(&req.parts.headers)?;
    let tags = req
        .header("x-amz-tagging")
        .map(tags::parse_header)
        .transpose()?
        .unwrap_or_default();
    let mut meta = object_meta(&req.parts.headers)?;
    meta.storage_class = Some(class);
    let received = receive(gw, req, body, Target::Object(tier)).await?;
    meta.etag = hex::encode(received.md5);
    meta.checksum = Some(received.checksum.clone());
    let opts = WriteOptions {
        condition: condition.clone(),
        since_ns,
    };
    req.progress.enter(Phase::Commit);
    let stored = gw
        .store
        .put_object(req.bucket(), req.key(), received.staged, meta, tags, &opts)
        .await
        .map_err(|e| write_error(e, &condition))?;
    let mut resp = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::ETAG, quoted(&stored.meta.etag));
    if stored.version_id.is_some() {
        resp = resp.header("x-amz-version-id", versions::of(&stored));
    }
    if let Some(headers) = resp.headers_mut() {
        super::lifecycle::add_expiration(gw, req.bucket(), req.key(), &stored, headers).await;
    }
    if let Some(alg) = ChecksumAlgorithm::from_name(&received.checksum.algorithm) {
        resp = resp
            .header(alg.header(), &received.checksum.value)
            .header("x-amz-checksum-type", &received.checksum.kind);
    }
    Ok(resp.body(Body::empty()).expect("valid response"))
}
