//! The small documents some operations take as their body (a
//! configuration, a tag set, an ACL): read checked against the client's
//! digests, and stored as one of a bucket's configuration documents.

use axum::body::Body;

use super::receive;
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};

/// Reads a small request document (a configuration, a tag set, an ACL) of
/// at most `max` bytes, checked against the digests the client sent with
/// it (Content-MD5, an `x-amz-checksum-*` header or trailer): a mismatch is
/// BadDigest and nothing is applied.
pub(crate) async fn read_document(
    gw: &Gateway,
    req: &S3Request,
    body: Body,
    max: u64,
) -> S3Result<bytes::Bytes> {
    let integrity = receive::integrity(req)?;
    let len = req.payload_length()?;
    let doc = crate::body::read_small(
        body,
        req.auth.payload.clone(),
        len,
        max,
        gw.config.body_pace,
    )
    .await?;
    integrity.verify_small(&doc)?;
    Ok(doc)
}

/// Stores (`Some`) or removes (`None`) one of the request bucket's
/// configuration documents.
pub(crate) async fn set_bucket_document(
    gw: &Gateway,
    req: &S3Request,
    name: &str,
    doc: Option<String>,
) -> S3Result<()> {
    gw.store
        .update_bucket(req.bucket(), |b| {
            match doc {
                Some(d) => b.config.insert(name.to_string(), d),
                None => b.config.remove(name),
            };
            Ok(())
        })
        .await
        .map(|_| ())
        .map_err(S3Error::from)
}
