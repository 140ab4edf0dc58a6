//! PutObject.

use axum::body::Body;
use http::{Response, StatusCode};

use super::named;
use super::receive::{receive, Target};
use crate::checksum::ChecksumAlgorithm;
use crate::error::S3Result;
use crate::headers::{object_meta, quoted, reject_unsupported, storage_class};
use crate::request::S3Request;
use crate::Gateway;

/// PutObject: streams the body into shard files, verifies every digest the
/// client sent, then commits the version. A failure at any step leaves the
/// previous version untouched.
pub async fn put_object(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    reject_unsupported(&req.parts.headers)?;
    storage_class(&req.parts.headers)?;
    let mut meta = object_meta(&req.parts.headers)?;
    let received = receive(gw, req, body, Target::Object).await?;
    meta.etag = hex::encode(received.md5);
    meta.checksum = Some(received.checksum.clone());
    gw.store
        .put_object(req.bucket(), req.key(), received.staged, meta)
        .await
        .map_err(|e| named(e, req.bucket(), Some(req.key())))?;
    let mut resp = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::ETAG, quoted(&hex::encode(received.md5)));
    if let Some(alg) = ChecksumAlgorithm::from_name(&received.checksum.algorithm) {
        resp = resp
            .header(alg.header(), &received.checksum.value)
            .header("x-amz-checksum-type", &received.checksum.kind);
    }
    Ok(resp.body(Body::empty()).expect("valid response"))
}
