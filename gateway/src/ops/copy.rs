//! CopyObject: the source is streamed through the write path (so the copy
//! is erasure-coded and hashed like any upload), with COPY/REPLACE metadata
//! and the `x-amz-copy-source-if-*` conditions.

use std::ops::Range;
use std::sync::Arc;

use axum::body::Body;
use futures::StreamExt;
use http::{Response, StatusCode};
use placement::{
    BodyError, BodyStream, ChecksumValue, ObjectRecord, StagedData, UploadRecord, VersionRef,
    WriteOptions,
};
use uuid::Uuid;

use super::receive::{algorithm_named, MAX_PUT_BYTES};
use super::reply::{write_error, xml};
use crate::checksum::{self, checksum_fields, ChecksumAlgorithm};
use crate::conditions::{check_copy_source, write_condition};
use crate::hashing::HashTap;
use crate::headers::{iso8601, now_ns, object_meta, quoted, reject_unsupported, requested_class};
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::names::validate_key;
use s3_wire::tags;
use s3_wire::xml::{to_xml, CopyObjectResult};

/// A parsed `x-amz-copy-source`: bucket, key and optional version.
#[derive(Debug, PartialEq, Eq)]
pub struct CopySource {
    /// Source bucket.
    pub bucket: String,
    /// Source key.
    pub key: String,
    /// Source version, when named.
    pub version: Option<VersionRef>,
}

/// Parses `x-amz-copy-source` (`bucket/key[?versionId=...]`, URL-encoded).
pub fn copy_source(v: &str) -> S3Result<CopySource> {
    let bad = || {
        S3Error::InvalidArgument(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey".into(),
            Some(("x-amz-copy-source".into(), v.into())),
        )
    };
    let (path, version) = match v.split_once("?versionId=") {
        Some((p, ver)) => (p, Some(versions::parse(ver)?)),
        None => (v, None),
    };
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| bad())?;
    let decoded = decoded.strip_prefix('/').unwrap_or(&decoded);
    let (bucket, key) = decoded.split_once('/').ok_or_else(bad)?;
    if bucket.is_empty() || key.is_empty() {
        return Err(bad());
    }
    validate_key(key)?;
    Ok(CopySource {
        bucket: bucket.to_string(),
        key: key.to_string(),
        version,
    })
}

/// Where copied data goes.
pub enum CopyTarget<'a> {
    /// A new version of the request's object, in this tier's pool.
    Object(placement::Tier),
    /// A part of this upload.
    Part(Uuid, &'a UploadRecord),
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
) -> S3Result<(CopySource, ObjectRecord)> {
    let src = copy_source(req.header("x-amz-copy-source").unwrap_or(""))?;
    let action = if src.version.is_some() {
        "s3:GetObjectVersion"
    } else {
        "s3:GetObject"
    };
    super::authorize::check(gw, req, action, &src.bucket, Some(&src.key)).await?;
    let obj = gw
        .store
        .get_version(&src.bucket, &src.key, src.version)
        .await?;
    if obj.delete_marker {
        return Err(match src.version {
            Some(_) => S3Error::InvalidRequest(
                "The source of a copy request may not specifically refer to a delete marker by version id.".into(),
            ),
            None => S3Error::NoSuchKey(src.key.clone()),
        });
    }
    check_copy_source(
        &req.parts.headers,
        &obj.meta.etag,
        obj.mtime_ns / 1_000_000_000,
    )?;
    Ok((src, obj))
}

/// Streams `range` of a source object through the write path (hashing it
/// on the way) into shard files for `target`.
pub async fn stream_copy(
    gw: &Gateway,
    req: &S3Request,
    (source, src): (&CopySource, ObjectRecord),
    range: Range<u64>,
    target: CopyTarget<'_>,
    algorithm: ChecksumAlgorithm,
) -> S3Result<Copied> {
    if range.end - range.start > MAX_PUT_BYTES {
        return Err(S3Error::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_PUT_BYTES}"
        )));
    }
    let tap = Arc::new(HashTap::start(true, Some(algorithm)));
    let feed = tap.clone();
    let size = range.end - range.start;
    let source = gw
        .store
        .read_object(&source.bucket, &source.key, src, range);
    let body: BodyStream = Box::pin(source.then(move |chunk| {
        let feed = feed.clone();
        async move {
            let chunk = chunk.map_err(|e| Box::new(S3Error::from(e)) as BodyError)?;
            feed.feed(&chunk).await;
            Ok(chunk)
        }
    }));
    let staged = match target {
        CopyTarget::Object(tier) => {
            gw.store
                .write_data_in(tier, req.bucket(), req.key(), body, Some(size))
                .await
        }
        CopyTarget::Part(id, upload) => {
            gw.store
                .write_part_data(req.bucket(), req.key(), id, upload, body, Some(size))
                .await
        }
    }?;
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
    let since_ns = now_ns();
    reject_unsupported(&req.parts.headers)?;
    let class_given = req.header("x-amz-storage-class").is_some();
    let (class, tier) = requested_class(&req.parts.headers, gw.store.has_cold_pool())?;
    let condition = write_condition(&req.parts.headers)?;
    let directive = req.header("x-amz-metadata-directive").unwrap_or("COPY");
    if directive != "COPY" && directive != "REPLACE" {
        return Err(S3Error::InvalidArgument(
            "Unknown metadata directive.".into(),
            Some(("x-amz-metadata-directive".into(), directive.into())),
        ));
    }
    let tagging = req.header("x-amz-tagging-directive").unwrap_or("COPY");
    if tagging != "COPY" && tagging != "REPLACE" {
        return Err(S3Error::InvalidArgument(
            "Unknown tagging directive.".into(),
            Some(("x-amz-tagging-directive".into(), tagging.into())),
        ));
    }
    let (source, src) = copy_source_object(gw, req).await?;
    if src.size > MAX_PUT_BYTES {
        return Err(S3Error::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_PUT_BYTES}"
        )));
    }
    if source.bucket == req.bucket()
        && source.key == req.key()
        && source.version.is_none()
        && directive == "COPY"
        && !class_given
    {
        return Err(S3Error::InvalidRequest("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.".into()));
    }
    let mut meta = if directive == "REPLACE" {
        object_meta(&req.parts.headers)?
    } else {
        src.meta.clone()
    };
    // The copy has the class the request names, STANDARD otherwise.
    meta.storage_class = Some(class);
    // A copy is a new object: no restore of the source carries over.
    meta.restore_expiry_ns = None;
    let tags = if tagging == "REPLACE" {
        req.header("x-amz-tagging")
            .map(tags::parse_header)
            .transpose()?
            .unwrap_or_default()
    } else {
        src.tags.clone()
    };
    let source_version = (src.version_id.is_some()).then(|| versions::of(&src));
    let size = src.size;
    // The algorithm the request names, else the source's (a composite
    // source checksum becomes a full-object one of the same algorithm),
    // else CRC64NVME: computed while copying.
    let algorithm = match algorithm_named(req, "x-amz-checksum-algorithm")? {
        Some(a) => a,
        None => src
            .meta
            .checksum
            .as_ref()
            .and_then(|c| ChecksumAlgorithm::from_name(&c.algorithm))
            .unwrap_or(ChecksumAlgorithm::Crc64Nvme),
    };
    let copied = stream_copy(
        gw,
        req,
        (&source, src),
        0..size,
        CopyTarget::Object(tier),
        algorithm,
    )
    .await?;
    // The copy's data is stored; its version is committed next.
    placement::failpoint::hit("copy.streamed", "").await;
    meta.etag = hex::encode(copied.md5);
    meta.checksum = copied.checksum;
    let opts = WriteOptions {
        condition: condition.clone(),
        since_ns,
    };
    req.progress.enter(Phase::Commit);
    let stored = gw
        .store
        .put_object(req.bucket(), req.key(), copied.staged, meta, tags, &opts)
        .await
        .map_err(|e| write_error(e, &condition))?;
    let doc = CopyObjectResult {
        etag: quoted(&stored.meta.etag),
        last_modified: iso8601(stored.mtime_ns),
        checksum: checksum_fields(stored.meta.checksum.as_ref(), true),
    };
    let mut resp = xml(StatusCode::OK, to_xml("CopyObjectResult", &doc));
    if let Some(v) = source_version {
        resp.headers_mut()
            .insert("x-amz-copy-source-version-id", v.parse().expect("ascii"));
    }
    if stored.version_id.is_some() {
        resp.headers_mut().insert(
            "x-amz-version-id",
            versions::of(&stored).parse().expect("ascii"),
        );
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        let src = |b: &str, k: &str, v: Option<VersionRef>| CopySource {
            bucket: b.into(),
            key: k.into(),
            version: v,
        };
        assert_eq!(copy_source("/b/k%20x").unwrap(), src("b", "k x", None));
        assert_eq!(copy_source("b/a/b/c").unwrap(), src("b", "a/b/c", None));
        assert_eq!(
            copy_source("b/k?versionId=null").unwrap(),
            src("b", "k", Some(VersionRef::Null))
        );
        assert!(copy_source("b").is_err());
        assert!(copy_source("/b/").is_err());
        assert!(copy_source("").is_err());
    }
}
