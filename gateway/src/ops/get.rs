//! GetObject and HeadObject: conditions, one byte range or one part, and a
//! streamed body whose first bytes are read before the status is sent, so a
//! read that cannot be served correctly fails with an S3 error.

use std::ops::Range;

use axum::body::Body;
use futures::StreamExt;
use http::{Response, StatusCode};
use placement::{ObjectRecord, Versioning};

use crate::conditions::check_read;
use crate::headers::{http_date, object_headers, overrides, OVERRIDES};
use crate::iam::Principal;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::range;

/// Highest part number S3 allows.
pub const MAX_PART_NUMBER: u32 = 10_000;

/// The checksum headers of part `n` of a multipart object, as S3 sends
/// them: a COMPOSITE object's part has its own checksum (of that type); a
/// FULL_OBJECT object's part has one only when it is the whole object.
fn part_checksum(headers: &mut http::HeaderMap, obj: &placement::ObjectRecord, n: u32) {
    let Some(kind) = obj.meta.checksum.as_ref().map(|c| c.kind.as_str()) else {
        return;
    };
    if kind != crate::checksum::COMPOSITE && obj.parts.len() != 1 {
        return;
    }
    let Some(c) = obj
        .parts
        .get(n as usize - 1)
        .and_then(|p| p.checksum.as_ref())
    else {
        return;
    };
    if let (Some(alg), Ok(v), Ok(t)) = (
        crate::checksum::ChecksumAlgorithm::from_name(&c.algorithm),
        c.value.parse(),
        kind.parse(),
    ) {
        headers.insert(alg.header(), v);
        headers.insert("x-amz-checksum-type", t);
    }
}

/// Parses `partNumber` (1..=10,000).
pub fn part_number(v: &str) -> S3Result<u32> {
    v.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_PART_NUMBER).contains(n))
        .ok_or_else(|| {
            S3Error::InvalidArgument(
                "Part number must be an integer between 1 and 10000, inclusive".into(),
                Some(("partNumber".into(), v.into())),
            )
        })
}

/// The error for a GET/HEAD that reached a delete marker: 404 NoSuchKey
/// for the current version, 405 MethodNotAllowed when asked by version id;
/// both say so in `x-amz-delete-marker`.
pub fn delete_marker_error(marker: &ObjectRecord, key: &str, by_version: bool) -> S3Error {
    let mut headers = vec![
        ("x-amz-delete-marker", "true".to_string()),
        ("x-amz-version-id", versions::of(marker)),
    ];
    let inner = if by_version {
        headers.push(("last-modified", http_date(marker.mtime_ns)));
        headers.push(("allow", "DELETE".to_string()));
        S3Error::MethodNotAllowed(
            "The specified method is not allowed against this resource.".into(),
        )
    } else {
        S3Error::NoSuchKey(key.to_string())
    };
    S3Error::WithHeaders(Box::new(inner), headers)
}

/// The version of `key` a request names with `versionId` (or the latest);
/// a delete marker answers as S3 does (404, or 405 when named).
pub async fn requested_object(gw: &Gateway, req: &S3Request, key: &str) -> S3Result<ObjectRecord> {
    let version = versions::requested(req)?;
    let obj = gw.store.get_version(req.bucket(), key, version).await?;
    if obj.delete_marker {
        return Err(delete_marker_error(&obj, key, version.is_some()));
    }
    Ok(obj)
}

/// The byte range a `partNumber` selects.
fn part_range(obj: &ObjectRecord, n: u32) -> S3Result<Range<u64>> {
    if !obj.multipart {
        return if n == 1 {
            Ok(0..obj.size)
        } else {
            Err(S3Error::InvalidPartNumber)
        };
    }
    let idx = n as usize - 1;
    if idx >= obj.parts.len() {
        return Err(S3Error::InvalidPartNumber);
    }
    let start: u64 = obj.parts[..idx].iter().map(|p| p.size).sum();
    Ok(start..start + obj.parts[idx].size)
}

/// GET (or HEAD when `head`) of an object.
pub async fn get(gw: &Gateway, req: &S3Request, head: bool) -> S3Result<Response<Body>> {
    let (bucket, key) = (req.bucket(), req.key());
    if matches!(req.principal, Principal::Anonymous) && OVERRIDES.iter().any(|(q, _)| req.has(q)) {
        return Err(S3Error::InvalidRequest(
            "Request specific response headers cannot be used for anonymous GET requests.".into(),
        ));
    }
    let overrides = overrides(&req.query)?;
    let part = req.q("partNumber").map(part_number).transpose()?;
    let range_header = req.header("range");
    if part.is_some() && range_header.is_some() {
        return Err(S3Error::InvalidRequest(
            "Cannot specify both Range header and partNumber query parameter".into(),
        ));
    }
    let obj = requested_object(gw, req, key).await?;
    let versioned = gw.store.bucket(bucket).await?.versioning != Versioning::Unversioned;
    check_read(
        &req.parts.headers,
        &obj.meta.etag,
        obj.mtime_ns / 1_000_000_000,
    )?;

    let (range, partial) = match (part, range_header.and_then(range::parse)) {
        (Some(n), _) => {
            let r = part_range(&obj, n)?;
            let partial = !r.is_empty();
            (r, partial)
        }
        (None, Some(spec)) => (spec.resolve(obj.size)?, true),
        (None, None) => (0..obj.size, false),
    };
    let mut resp = Response::builder().status(if partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    });
    let headers = resp.headers_mut().expect("builder is valid");
    let checksum_mode = req
        .header("x-amz-checksum-mode")
        .is_some_and(|m| m.eq_ignore_ascii_case("ENABLED"));
    let whole = range.start == 0 && range.end == obj.size && !(part.is_some() && obj.multipart);
    object_headers(headers, &obj, checksum_mode && whole);
    super::lifecycle::add_expiration(gw, bucket, key, &obj, headers).await;
    if let (true, Some(n), true) = (checksum_mode, part, obj.multipart) {
        part_checksum(headers, &obj, n);
    }
    for (name, value) in overrides {
        headers.insert(name, value);
    }
    headers.insert(
        http::header::CONTENT_LENGTH,
        (range.end - range.start).into(),
    );
    if partial {
        let v = format!("bytes {}-{}/{}", range.start, range.end - 1, obj.size);
        headers.insert(http::header::CONTENT_RANGE, v.parse().expect("ascii"));
    }
    if part.is_some() && obj.multipart {
        headers.insert("x-amz-mp-parts-count", obj.parts.len().into());
    }
    if obj.version_id.is_some() || versioned {
        headers.insert(
            "x-amz-version-id",
            versions::of(&obj).parse().expect("ascii"),
        );
    }
    if !obj.tags.is_empty() {
        headers.insert("x-amz-tagging-count", obj.tags.len().into());
    }
    if head || range.is_empty() {
        return Ok(resp.body(Body::empty()).expect("valid response"));
    }
    let mut stream = gw.store.read_object(bucket, key, obj, range);
    // Read the first bytes before committing to a status.
    let first = match stream.next().await {
        Some(Ok(b)) => b,
        Some(Err(e)) => return Err(e.into()),
        None => {
            return Err(S3Error::Internal(
                "object stream ended before its data".into(),
            ))
        }
    };
    let rest = stream.map(|r| r.map_err(std::io::Error::other));
    let body = futures::stream::once(async move { Ok::<_, std::io::Error>(first) }).chain(rest);
    Ok(resp.body(Body::from_stream(body)).expect("valid response"))
}
