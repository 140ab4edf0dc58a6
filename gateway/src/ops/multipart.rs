//! Multipart uploads: CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload (order, ETag and size checks; MD5-of-MD5s ETag),
//! AbortMultipartUpload, ListParts, ListMultipartUploads.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html>)

use axum::body::Body;
use http::{Response, StatusCode};
use md5::{Digest as _, Md5};
use placement::{PartRecord, UploadListStart, UploadRecord, WriteOptions};
use uuid::Uuid;

use super::copy::{copy_source_object, stream_copy, CopyTarget};
use super::get::part_number;
use super::multipart_checksum;
use super::receive::{receive, Target};
use super::reply::{empty, write_error, xml};
use crate::body::read_small;
use crate::checksum::{checksum_fields, ChecksumAlgorithm};
use crate::conditions::write_condition;
use crate::headers::{iso8601, object_meta, quoted, reject_unsupported, requested_class, STANDARD};
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::auth::sigv4::uri_encode;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::tags;
use s3_wire::xml::{
    from_xml, to_xml, CommonPrefix, CompleteMultipartUpload, CompleteMultipartUploadResult,
    CopyPartResult, InitiateMultipartUploadResult, Initiator, ListMultipartUploadsResult,
    ListPartsResult, PartEntry, UploadEntry, NS,
};

/// Smallest part except the last: 5 MiB.
pub const MIN_PART_BYTES: u64 = 5 << 20;
/// Largest CompleteMultipartUpload document (10,000 parts).
const MAX_COMPLETE_BYTES: u64 = 4 << 20;
/// Most parts or uploads per listing page.
const MAX_LIST: usize = 1000;

fn upload_id(req: &S3Request) -> S3Result<Uuid> {
    req.q("uploadId")
        .and_then(|v| Uuid::try_parse(v).ok())
        .ok_or(S3Error::NoSuchUpload)
}

fn initiator(gw: &Gateway) -> Initiator {
    Initiator {
        id: gw.owner.id.clone(),
        display_name: gw.owner.display_name.clone(),
    }
}

fn page_size(req: &S3Request, name: &str) -> S3Result<usize> {
    match req.q(name) {
        None => Ok(MAX_LIST),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(MAX_LIST))
            .ok_or_else(|| {
                S3Error::InvalidArgument(
                    format!("Provided {name} not an integer or within integer range"),
                    Some((name.into(), v.into())),
                )
            }),
    }
}

/// The storage class an upload's object will have.
fn class_of(upload: &UploadRecord) -> String {
    upload
        .meta
        .storage_class
        .clone()
        .unwrap_or_else(|| STANDARD.into())
}

/// CreateMultipartUpload.
pub async fn create(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    reject_unsupported(&req.parts.headers)?;
    let (class, tier) = requested_class(&req.parts.headers, gw.store.has_cold_pool())?;
    let checksum = multipart_checksum::requested(req)?;
    let mut meta = object_meta(&req.parts.headers)?;
    meta.storage_class = Some(class);
    let tags = req
        .header("x-amz-tagging")
        .map(tags::parse_header)
        .transpose()?
        .unwrap_or_default();
    req.progress.enter(Phase::Commit);
    let id = gw
        .store
        .create_upload(
            req.bucket(),
            req.key(),
            meta,
            tags,
            checksum.map(|(a, k)| (a.name().to_string(), k.to_string())),
            tier == placement::Tier::Cold,
        )
        .await?;
    let doc = InitiateMultipartUploadResult {
        xmlns: NS,
        bucket: req.bucket().into(),
        key: req.key().into(),
        upload_id: id.simple().to_string(),
    };
    let mut resp = xml(
        StatusCode::OK,
        to_xml("InitiateMultipartUploadResult", &doc),
    );
    if let Some((alg, kind)) = checksum {
        let h = resp.headers_mut();
        h.insert(
            "x-amz-checksum-algorithm",
            alg.name().parse().expect("ascii"),
        );
        h.insert("x-amz-checksum-type", kind.parse().expect("ascii"));
    }
    Ok(resp)
}

/// The upload a request's `uploadId` names.
async fn upload_of(gw: &Gateway, req: &S3Request) -> S3Result<(Uuid, UploadRecord)> {
    let id = upload_id(req)?;
    let upload = gw.store.get_upload(req.bucket(), req.key(), id).await?;
    Ok((id, upload))
}

/// The part number, upload id and upload a part request addresses.
async fn part_target(gw: &Gateway, req: &S3Request) -> S3Result<(u32, Uuid, UploadRecord)> {
    let number = part_number(req.q("partNumber").unwrap_or(""))?;
    let (id, upload) = upload_of(gw, req).await?;
    Ok((number, id, upload))
}

/// UploadPart.
pub async fn upload_part(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let (number, id, upload) = part_target(gw, req).await?;
    let received = receive(gw, req, body, Target::Part(id, &upload)).await?;
    let etag = hex::encode(received.md5);
    // Every part keeps its checksum: the object's checksum is built from them.
    let checksum = Some(received.checksum.clone());
    let answer = received.explicit_checksum || upload.checksum_algorithm.is_some();
    req.progress.enter(Phase::Commit);
    gw.store
        .commit_part(
            req.bucket(),
            req.key(),
            id,
            &upload,
            number,
            received.staged,
            etag.clone(),
            checksum.clone(),
        )
        .await?;
    let mut resp = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::ETAG, quoted(&etag));
    if let Some(c) = checksum.filter(|_| answer) {
        if let Some(alg) = ChecksumAlgorithm::from_name(&c.algorithm) {
            resp = resp.header(alg.header(), c.value);
        }
    }
    Ok(resp.body(Body::empty()).expect("valid response"))
}

/// Parses `x-amz-copy-source-range: bytes=first-last` against a source of
/// `size` bytes.
fn copy_range(v: &str, size: u64) -> S3Result<std::ops::Range<u64>> {
    let bad = || {
        S3Error::InvalidArgument(
            format!("Range specified is not valid for source object of size: {size}"),
            Some(("x-amz-copy-source-range".into(), v.into())),
        )
    };
    let (a, b) = v
        .trim()
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a > b || b >= size {
        return Err(bad());
    }
    Ok(a..b + 1)
}

/// UploadPartCopy: a part copied from (a byte range of) another object.
pub async fn upload_part_copy(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let (number, id, upload) = part_target(gw, req).await?;
    let (source, src) = copy_source_object(gw, req).await?;
    let range = match req.header("x-amz-copy-source-range") {
        Some(r) => copy_range(r, src.size)?,
        None => 0..src.size,
    };
    let source_version = src.version_id.is_some().then(|| versions::of(&src));
    // A part's checksum is of the upload's algorithm; a copy asking for
    // another could not be completed into the object's checksum.
    let chosen = upload
        .checksum_algorithm
        .as_deref()
        .and_then(ChecksumAlgorithm::from_name);
    let algorithm = match (super::receive::algorithm_named(req, "x-amz-checksum-algorithm")?, chosen) {
        (Some(asked), Some(chosen)) if asked != chosen => {
            return Err(S3Error::InvalidRequest(format!(
                "The upload was created with the {} checksum algorithm; a part cannot use {}",
                chosen.name(),
                asked.name()
            )))
        }
        (Some(asked), None) if asked != ChecksumAlgorithm::Crc64Nvme => {
            return Err(S3Error::InvalidRequest(format!(
                "The upload was created without a checksum algorithm; give {} at CreateMultipartUpload to copy parts with it",
                asked.name()
            )))
        }
        (_, chosen) => chosen.unwrap_or(ChecksumAlgorithm::Crc64Nvme),
    };
    let copied = stream_copy(
        gw,
        req,
        (&source, src),
        range,
        CopyTarget::Part(id, &upload),
        algorithm,
    )
    .await?;
    let etag = hex::encode(copied.md5);
    req.progress.enter(Phase::Commit);
    let part = gw
        .store
        .commit_part(
            req.bucket(),
            req.key(),
            id,
            &upload,
            number,
            copied.staged,
            etag.clone(),
            copied.checksum.clone(),
        )
        .await?;
    let doc = CopyPartResult {
        etag: quoted(&etag),
        last_modified: iso8601(part.mtime_ns),
        checksum: checksum_fields(copied.checksum.as_ref(), false),
    };
    let mut resp = xml(StatusCode::OK, to_xml("CopyPartResult", &doc));
    if let Some(v) = source_version {
        resp.headers_mut()
            .insert("x-amz-copy-source-version-id", v.parse().expect("ascii"));
    }
    Ok(resp)
}

async fn all_parts(gw: &Gateway, req: &S3Request, id: Uuid) -> S3Result<Vec<PartRecord>> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let (page, more) = gw
            .store
            .list_parts(req.bucket(), req.key(), id, after, MAX_LIST)
            .await?;
        if let Some(last) = page.last() {
            after = last.part.number;
        }
        let empty_page = page.is_empty();
        out.extend(page);
        if !more || empty_page {
            return Ok(out);
        }
    }
}

/// The multipart ETag: MD5 of the parts' binary MD5s, then `-N`.
pub fn multipart_etag(part_etags: &[&str]) -> Option<String> {
    let mut h = Md5::new();
    for e in part_etags {
        h.update(hex::decode(e).ok()?);
    }
    Some(format!(
        "{}-{}",
        hex::encode(h.finalize()),
        part_etags.len()
    ))
}

/// CompleteMultipartUpload.
pub async fn complete(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let condition = write_condition(&req.parts.headers)?;
    let id = upload_id(req)?;
    let upload = match gw.store.get_upload(req.bucket(), req.key(), id).await {
        Ok(u) => u,
        Err(placement::Error::NoSuchUpload) => {
            // A completion retried after it succeeded (its answer was lost
            // on the way) gets the first answer again.
            req.progress.enter(Phase::Commit);
            let stored = gw
                .store
                .completed_upload(req.bucket(), req.key(), id)
                .await?;
            let shown = stored
                .meta
                .checksum
                .as_ref()
                .filter(|c| !(c.algorithm == "CRC64NVME" && c.kind == "FULL_OBJECT"))
                .cloned();
            return Ok(completion_answer(req, &stored, shown.as_ref()));
        }
        Err(e) => return Err(e.into()),
    };
    let len = req.payload_length()?;
    if len == 0 {
        return Err(S3Error::MalformedXml("The XML you provided was not well-formed or did not validate against our published schema".into()));
    }
    let doc = read_small(
        body,
        req.auth.payload.clone(),
        len,
        MAX_COMPLETE_BYTES,
        gw.config.body_pace,
    )
    .await?;
    let wanted: CompleteMultipartUpload = from_xml(&doc)?;
    if wanted.parts.is_empty() {
        return Err(S3Error::MalformedXml("The XML you provided was not well-formed or did not validate against our published schema".into()));
    }
    if wanted
        .parts
        .windows(2)
        .any(|w| w[0].part_number >= w[1].part_number)
    {
        return Err(S3Error::InvalidPartOrder);
    }
    let stored = all_parts(gw, req, id).await?;
    let invalid = || {
        S3Error::InvalidPart("One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not have matched the part's entity tag.".into())
    };
    let mut chosen = Vec::with_capacity(wanted.parts.len());
    for w in &wanted.parts {
        let p = stored
            .iter()
            .find(|p| p.part.number == w.part_number)
            .ok_or_else(invalid)?;
        if w.etag.trim().trim_matches('"') != p.part.etag {
            return Err(invalid());
        }
        chosen.push(p.clone());
    }
    if chosen[..chosen.len() - 1]
        .iter()
        .any(|p| p.part.size < MIN_PART_BYTES)
    {
        return Err(S3Error::EntityTooSmall(
            "Your proposed upload is smaller than the minimum allowed object size.".into(),
        ));
    }
    // The size the client expects the object to have, checked before it
    // is made.
    if let Some(v) = req.header("x-amz-mp-object-size") {
        let total: u64 = chosen.iter().map(|p| p.part.size).sum();
        if v.trim().parse::<u64>().ok() != Some(total) {
            return Err(S3Error::InvalidRequest(format!(
                "The x-amz-mp-object-size header ({v}) does not match the size of the parts ({total} bytes)"
            )));
        }
    }
    let etags: Vec<&str> = chosen.iter().map(|p| p.part.etag.as_str()).collect();
    let etag = multipart_etag(&etags)
        .ok_or_else(|| S3Error::Internal("stored part ETag is not hex".into()))?;
    let checksum = multipart_checksum::complete(req, &upload, &wanted.parts, &chosen)?;
    let mut meta = upload.meta.clone();
    meta.etag = etag.clone();
    meta.checksum = checksum.clone();
    // A conditional completion conflicts with writes made while the upload
    // was in progress.
    let opts = WriteOptions {
        condition: condition.clone(),
        since_ns: upload.initiated_ns,
    };
    req.progress.enter(Phase::Commit);
    let stored = gw
        .store
        .complete_upload(req.bucket(), req.key(), id, chosen, meta, &opts)
        .await
        .map_err(|e| write_error(e, &condition))?;
    // A completion that had reached some disks before answers with what it
    // wrote then.
    let shown = stored
        .meta
        .checksum
        .as_ref()
        .filter(|_| upload.checksum_algorithm.is_some());
    Ok(completion_answer(req, &stored, shown))
}

/// The answer to a CompleteMultipartUpload that made `stored`.
fn completion_answer(
    req: &S3Request,
    stored: &placement::ObjectRecord,
    checksum: Option<&placement::ChecksumValue>,
) -> Response<Body> {
    let host = req.header("host").unwrap_or("localhost");
    let doc = CompleteMultipartUploadResult {
        xmlns: NS,
        location: format!(
            "http://{host}/{}/{}",
            req.bucket(),
            uri_encode(req.key().as_bytes(), false)
        ),
        bucket: req.bucket().into(),
        key: req.key().into(),
        etag: quoted(&stored.meta.etag),
        checksum: checksum_fields(checksum, true),
    };
    let mut resp = xml(
        StatusCode::OK,
        to_xml("CompleteMultipartUploadResult", &doc),
    );
    if stored.version_id.is_some() {
        resp.headers_mut().insert(
            "x-amz-version-id",
            versions::of(stored).parse().expect("ascii"),
        );
    }
    resp
}

/// AbortMultipartUpload.
pub async fn abort(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let id = upload_id(req)?;
    req.progress.enter(Phase::Commit);
    gw.store.abort_upload(req.bucket(), req.key(), id).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// ListParts.
pub async fn list_parts(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let id = upload_id(req)?;
    let max = page_size(req, "max-parts")?;
    let marker: u32 = match req.q("part-number-marker") {
        None | Some("") => 0,
        Some(v) => v.parse().map_err(|_| {
            S3Error::InvalidArgument(
                "Provided part-number-marker not an integer or within integer range".into(),
                Some(("part-number-marker".into(), v.into())),
            )
        })?,
    };
    let (mut parts, mut more) = gw
        .store
        .list_parts(req.bucket(), req.key(), id, marker, max.max(1))
        .await?;
    if parts.len() > max {
        parts.truncate(max);
        more = true;
    }
    let next = parts.last().map(|p| p.part.number).unwrap_or(marker);
    let upload = gw.store.get_upload(req.bucket(), req.key(), id).await?;
    let algorithm_set = upload.checksum_algorithm.is_some();
    let doc = ListPartsResult {
        xmlns: NS,
        bucket: req.bucket().into(),
        key: req.key().into(),
        upload_id: id.simple().to_string(),
        initiator: initiator(gw),
        owner: gw.owner.clone(),
        storage_class: class_of(&upload),
        part_number_marker: marker,
        next_part_number_marker: next,
        max_parts: max,
        is_truncated: more && max > 0,
        parts: parts
            .into_iter()
            .map(|p| PartEntry {
                part_number: p.part.number,
                last_modified: iso8601(p.mtime_ns),
                etag: quoted(&p.part.etag),
                size: p.part.size,
                checksum: checksum_fields(
                    p.part.checksum.as_ref().filter(|_| algorithm_set),
                    false,
                ),
            })
            .collect(),
    };
    Ok(xml(StatusCode::OK, to_xml("ListPartsResult", &doc)))
}

/// ListMultipartUploads.
pub async fn list_uploads(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let max = page_size(req, "max-uploads")?;
    let prefix = req.q("prefix").unwrap_or("").to_string();
    let delimiter = req
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let key_marker = req.q("key-marker").unwrap_or("").to_string();
    let id_marker = req.q("upload-id-marker").unwrap_or("").to_string();
    let url = req
        .q("encoding-type")
        .is_some_and(|e| e.eq_ignore_ascii_case("url"));
    let mut start = if key_marker.is_empty() {
        UploadListStart::Beginning
    } else {
        match Uuid::try_parse(&id_marker) {
            Ok(id) => UploadListStart::AfterUpload(key_marker.clone().into_bytes(), id),
            Err(_) => UploadListStart::AfterKey(key_marker.clone().into_bytes()),
        }
    };
    let mut uploads = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut last: Option<(String, Option<Uuid>)> = None;
    'pages: loop {
        let (page, next) = gw
            .store
            .list_uploads(req.bucket(), &prefix, start.clone(), MAX_LIST)
            .await?;
        for u in &page {
            let rolled = delimiter.as_deref().and_then(|d| {
                u.key[prefix.len()..]
                    .find(d)
                    .map(|i| u.key[..prefix.len() + i + d.len()].to_string())
            });
            if let Some(cp) = &rolled {
                if prefixes.last() == Some(cp) {
                    continue;
                }
            }
            if uploads.len() + prefixes.len() == max {
                truncated = true;
                break 'pages;
            }
            match rolled {
                Some(cp) => {
                    last = Some((cp.clone(), None));
                    prefixes.push(cp);
                }
                None => {
                    last = Some((u.key.clone(), Some(u.upload_id)));
                    uploads.push(u.clone());
                }
            }
        }
        match next {
            Some(n) => start = n,
            None => break,
        }
    }
    let enc = |s: &str| {
        if url {
            uri_encode(s.as_bytes(), false)
        } else {
            s.to_string()
        }
    };
    let doc = ListMultipartUploadsResult {
        xmlns: NS,
        bucket: req.bucket().into(),
        key_marker: enc(&key_marker),
        upload_id_marker: id_marker,
        next_key_marker: truncated
            .then(|| last.as_ref().map(|(k, _)| enc(k)))
            .flatten(),
        next_upload_id_marker: truncated
            .then(|| {
                last.as_ref()
                    .and_then(|(_, id)| id.map(|i| i.simple().to_string()))
            })
            .flatten(),
        prefix: enc(&prefix),
        delimiter: delimiter.as_deref().map(enc),
        max_uploads: max,
        is_truncated: truncated,
        encoding_type: url.then(|| "url".to_string()),
        uploads: uploads
            .into_iter()
            .map(|u| UploadEntry {
                key: enc(&u.key),
                upload_id: u.upload_id.simple().to_string(),
                initiator: initiator(gw),
                owner: gw.owner.clone(),
                storage_class: class_of(&u.record),
                initiated: iso8601(u.record.initiated_ns),
            })
            .collect(),
        common_prefixes: prefixes
            .into_iter()
            .map(|p| CommonPrefix { prefix: enc(&p) })
            .collect(),
    };
    Ok(xml(
        StatusCode::OK,
        to_xml("ListMultipartUploadsResult", &doc),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_ranges() {
        assert_eq!(copy_range("bytes=0-9", 10).unwrap(), 0..10);
        assert!(copy_range("bytes=0-10", 10).is_err());
        assert!(copy_range("bytes=5-4", 10).is_err());
        assert!(copy_range("bytes=-4", 10).is_err());
        assert!(copy_range("0-4", 10).is_err());
    }

    #[test]
    fn etag_of_parts() {
        // MD5 of the two binary MD5s of "a" and "b", then "-2".
        let a = hex::encode(Md5::digest(b"a"));
        let b = hex::encode(Md5::digest(b"b"));
        let mut h = Md5::new();
        h.update(Md5::digest(b"a"));
        h.update(Md5::digest(b"b"));
        assert_eq!(
            multipart_etag(&[&a, &b]).unwrap(),
            format!("{}-2", hex::encode(h.finalize()))
        );
        assert!(multipart_etag(&["zz"]).is_none());
    }
}
