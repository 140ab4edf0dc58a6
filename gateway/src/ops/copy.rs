//! CopyObject: the source is streamed through the write path (so the copy
//! is erasure-coded and hashed like any upload), with COPY/REPLACE metadata
//! and the `x-amz-copy-source-if-*` conditions.

use std::ops::Range;
use std::sync::Arc;

use axum::body::Body;
use futures::StreamExt;
use http::{Response, StatusCode};
use placement::{BodyError, BodyStream, ChecksumValue, ObjectRecord, StagedData, UploadRecord};

use super::named;
use super::receive::MAX_PUT_BYTES;
use crate::checksum::{self, ChecksumAlgorithm};
use crate::conditions::check_copy_source;
use crate::error::{S3Error, S3Result};
use crate::hashing::HashTap;
use crate::headers::{iso8601, object_meta, quoted, reject_unsupported, storage_class};
use crate::names::validate_key;
use crate::request::S3Request;
use crate::xml::{to_xml, CopyObjectResult};
use crate::Gateway;

/// Parses `x-amz-copy-source` into (bucket, key).
pub fn copy_source(v: &str) -> S3Result<(String, String)> {
    let bad = || {
        S3Error::InvalidArgument(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey".into(),
            Some(("x-amz-copy-source".into(), v.into())),
        )
    };
    let (path, version) = match v.split_once("?versionId=") {
        Some((p, ver)) => (p, Some(ver)),
        None => (v, None),
    };
    if version.is_some_and(|ver| ver != "null") {
        return Err(S3Error::NotImplemented(
            "Copying a specific object version is not supported yet".into(),
        ));
    }
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| bad())?;
    let decoded = decoded.strip_prefix('/').unwrap_or(&decoded);
    let (bucket, key) = decoded.split_once('/').ok_or_else(bad)?;
    if bucket.is_empty() || key.is_empty() {
        return Err(bad());
    }
    validate_key(key)?;
    Ok((bucket.to_string(), key.to_string()))
}

/// Where copied data goes.
pub enum CopyTarget<'a> {
    /// A new version of the request's object.
    Object,
    /// A part of this upload.
    Part(&'a UploadRecord),
}

/// Copied data, staged, with its MD5 and checksum.
pub struct Copied {
    /// The data, durable but unreferenced.
    pub staged: StagedData,
    /// MD5 of the copied bytes.
    pub md5: [u8; 16],
    /// Checksum of the copied bytes.
    pub checksum: Option<ChecksumValue>,
}

/// The source of a copy, looked up and checked against the request's
/// `x-amz-copy-source-if-*` conditions.
pub async fn copy_source_object(
    gw: &Gateway,
    req: &S3Request,
) -> S3Result<(String, String, ObjectRecord)> {
    let (bucket, key) = copy_source(req.header("x-amz-copy-source").unwrap_or(""))?;
    let src = gw
        .store
        .head_object(&bucket, &key)
        .await
        .map_err(|e| named(e, &bucket, Some(&key)))?;
    check_copy_source(
        &req.parts.headers,
        &src.meta.etag,
        src.mtime_ns / 1_000_000_000,
    )?;
    Ok((bucket, key, src))
}

/// Streams `range` of a source object through the write path (hashing it
/// on the way) into shard files for `target`.
pub async fn stream_copy(
    gw: &Gateway,
    req: &S3Request,
    (src_bucket, src_key, src): (String, String, ObjectRecord),
    range: Range<u64>,
    target: CopyTarget<'_>,
) -> S3Result<Copied> {
    if range.end - range.start > MAX_PUT_BYTES {
        return Err(S3Error::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_PUT_BYTES}"
        )));
    }
    let algorithm = src
        .meta
        .checksum
        .as_ref()
        .and_then(|c| ChecksumAlgorithm::from_name(&c.algorithm))
        .unwrap_or(ChecksumAlgorithm::Crc64Nvme);
    let tap = Arc::new(HashTap::start(true, Some(algorithm)));
    let feed = tap.clone();
    let size = range.end - range.start;
    let source = gw.store.read_object(&src_bucket, &src_key, src, range);
    let body: BodyStream = Box::pin(source.then(move |chunk| {
        let feed = feed.clone();
        async move {
            let chunk = chunk.map_err(|e| Box::new(S3Error::from(e)) as BodyError)?;
            feed.feed(&chunk).await;
            Ok(chunk)
        }
    }));
    let staged = match target {
        CopyTarget::Object => {
            gw.store
                .write_data(req.bucket(), req.key(), body, Some(size))
                .await
        }
        CopyTarget::Part(upload) => gw.store.write_part_data(upload, body, Some(size)).await,
    }
    .map_err(|e| named(e, req.bucket(), Some(req.key())))?;
    let digests = Arc::try_unwrap(tap)
        .map_err(|_| S3Error::Internal("copy stream still referenced".into()))?
        .finish()
        .await;
    let md5 = digests
        .md5
        .ok_or_else(|| S3Error::Internal("no MD5".into()))?;
    Ok(Copied {
        staged,
        md5,
        checksum: digests.checksum.map(|(alg, value)| ChecksumValue {
            algorithm: alg.name().into(),
            value: checksum::encode(&value),
            kind: "FULL_OBJECT".into(),
        }),
    })
}

/// CopyObject.
pub async fn copy_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    reject_unsupported(&req.parts.headers)?;
    storage_class(&req.parts.headers)?;
    let directive = req.header("x-amz-metadata-directive").unwrap_or("COPY");
    if directive != "COPY" && directive != "REPLACE" {
        return Err(S3Error::InvalidArgument(
            "Unknown metadata directive.".into(),
            Some(("x-amz-metadata-directive".into(), directive.into())),
        ));
    }
    let (src_bucket, src_key, src) = copy_source_object(gw, req).await?;
    if src_bucket == req.bucket() && src_key == req.key() && directive == "COPY" {
        return Err(S3Error::InvalidRequest("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.".into()));
    }
    let mut meta = if directive == "REPLACE" {
        object_meta(&req.parts.headers)?
    } else {
        src.meta.clone()
    };
    let size = src.size;
    let copied = stream_copy(
        gw,
        req,
        (src_bucket, src_key, src),
        0..size,
        CopyTarget::Object,
    )
    .await?;
    meta.etag = hex::encode(copied.md5);
    meta.checksum = copied.checksum;
    let stored = gw
        .store
        .put_object(req.bucket(), req.key(), copied.staged, meta)
        .await
        .map_err(|e| named(e, req.bucket(), Some(req.key())))?;
    let doc = CopyObjectResult {
        etag: quoted(&stored.meta.etag),
        last_modified: iso8601(stored.mtime_ns),
    };
    Ok(super::xml(StatusCode::OK, to_xml("CopyObjectResult", &doc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert_eq!(copy_source("/b/k%20x").unwrap(), ("b".into(), "k x".into()));
        assert_eq!(
            copy_source("b/a/b/c").unwrap(),
            ("b".into(), "a/b/c".into())
        );
        assert_eq!(
            copy_source("b/k?versionId=null").unwrap(),
            ("b".into(), "k".into())
        );
        assert!(copy_source("b").is_err());
        assert!(copy_source("/b/").is_err());
        assert!(copy_source("").is_err());
    }
}
