//! Checksums of multipart uploads: the algorithm and type chosen at
//! CreateMultipartUpload, and the object checksum computed at completion —
//! COMPOSITE (the algorithm over the part checksums, `-N`) or FULL_OBJECT
//! (the part CRCs combined into the CRC of the whole object).
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html>)

use placement::{ChecksumValue, PartRecord, UploadRecord};

use super::receive::{algorithm_named, checksum_mismatch, refuse_not_yet, type_mismatch};
use crate::checksum::{self, ChecksumAlgorithm, COMPOSITE, FULL_OBJECT};
use crate::request::S3Request;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::CompletedPart;

/// The (algorithm, type) a CreateMultipartUpload asks for, validated.
pub fn requested(req: &S3Request) -> S3Result<Option<(ChecksumAlgorithm, &'static str)>> {
    let alg = algorithm_named(req, "x-amz-checksum-algorithm")?;
    let kind = req.header("x-amz-checksum-type");
    match (alg, kind) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(S3Error::InvalidRequest(
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.".into(),
        )),
        (Some(a), None) => Ok(Some((a, a.default_type()))),
        (Some(a), Some(k)) => {
            let k = [FULL_OBJECT, COMPOSITE]
                .into_iter()
                .find(|t| t.eq_ignore_ascii_case(k))
                .ok_or_else(|| S3Error::InvalidRequest(format!("Checksum type {k} is not valid")))?;
            if !a.allows_type(k) {
                return Err(S3Error::InvalidRequest(format!(
                    "The {k} checksum type cannot be used with the {} checksum algorithm.",
                    a.name().to_lowercase()
                )));
            }
            Ok(Some((a, k)))
        }
    }
}

/// The completed object's checksum. Every checksum a listed part names
/// must be its stored one, and a COMPOSITE upload's parts must each name
/// theirs. Without an algorithm chosen at creation the object
/// gets a CRC64NVME FULL_OBJECT checksum (S3's default) when every part
/// carries one.
pub fn complete(
    req: &S3Request,
    upload: &UploadRecord,
    wanted: &[CompletedPart],
    chosen: &[PartRecord],
) -> S3Result<Option<ChecksumValue>> {
    let (alg, kind) = match (&upload.checksum_algorithm, &upload.checksum_type) {
        (Some(a), Some(k)) => (
            ChecksumAlgorithm::from_name(a)
                .ok_or_else(|| S3Error::Internal(format!("stored algorithm {a}")))?,
            if k == COMPOSITE {
                COMPOSITE
            } else {
                FULL_OBJECT
            },
        ),
        _ => (ChecksumAlgorithm::Crc64Nvme, FULL_OBJECT),
    };
    for (w, p) in wanted.iter().zip(chosen) {
        let fields = w.checksum();
        // A COMPOSITE checksum is computed from the checksums the body
        // names, so each part's, in the upload's algorithm, must be there
        // (S3's answer word for word).
        if kind == COMPOSITE && !fields.all_given().any(|(name, _)| name == alg.name()) {
            return Err(S3Error::InvalidRequest(format!(
                "The upload was created using a {} checksum. The complete request must include \
                 the checksum for each part. It was missing for part {} in the request.",
                alg.name().to_lowercase(),
                w.part_number
            )));
        }
        // Every checksum named is checked: the part has one, so another
        // algorithm's never matches.
        for (name, value) in fields.all_given() {
            let stored = p.part.checksum.as_ref();
            if stored.is_none_or(|c| c.algorithm != name || c.value != value) {
                return Err(S3Error::InvalidPart(format!(
                    "The {name} checksum of part {} does not match the part's checksum.",
                    w.part_number
                )));
            }
        }
    }
    // The type the client sends is a check of the one chosen at creation.
    if let Some(asked) = req.parts.headers.get("x-amz-checksum-type") {
        let asked = String::from_utf8_lossy(asked.as_bytes());
        let asked = [FULL_OBJECT, COMPOSITE]
            .into_iter()
            .find(|t| t.eq_ignore_ascii_case(asked.trim()))
            .ok_or_else(|| {
                S3Error::InvalidRequest(format!("Checksum type {asked} is not valid"))
            })?;
        if asked != kind {
            return Err(S3Error::BadDigest(format!(
                "The upload was created using the {kind} checksum mode. The complete request must use the same checksum mode."
            )));
        }
    }
    // The client's checksum of the whole object: only in an algorithm
    // Granary computes, and only in the upload's (another cannot be
    // checked).
    refuse_not_yet(req)?;
    if let Some(other) = checksum::ALL
        .into_iter()
        .find(|a| *a != alg && req.header(a.header()).is_some())
    {
        return Err(type_mismatch(alg, other));
    }
    let mut raw = Vec::with_capacity(chosen.len());
    for p in chosen {
        match p
            .part
            .checksum
            .as_ref()
            .filter(|c| c.algorithm == alg.name())
        {
            Some(c) => raw.push((
                alg.decode_value(&c.value)
                    .ok_or_else(|| S3Error::Internal("stored part checksum is malformed".into()))?,
                p.part.size,
            )),
            // No checksum of the object, so none the client sends for it
            // can be checked: refused rather than taken on trust.
            None if upload.checksum_algorithm.is_none() => {
                return match req.header(alg.header()) {
                    Some(_) => Err(S3Error::InvalidRequest(format!(
                        "Part {} has no {name} checksum, so the object's {name} checksum cannot be checked.",
                        p.part.number,
                        name = alg.name()
                    ))),
                    None => Ok(None),
                }
            }
            None => {
                return Err(S3Error::InvalidPart(format!(
                    "Part {} has no {} checksum.",
                    p.part.number,
                    alg.name()
                )))
            }
        }
    }
    let value = if kind == FULL_OBJECT {
        let full = checksum::combine_parts(alg, &raw).ok_or_else(|| {
            S3Error::Internal("full-object checksum of a non-CRC algorithm".into())
        })?;
        if let Some(given) = req.header(alg.header()) {
            if alg.decode_value(given).as_deref() != Some(full.as_slice()) {
                return Err(checksum_mismatch(alg));
            }
        }
        checksum::encode(&full)
    } else {
        let digests: Vec<Vec<u8>> = raw.into_iter().map(|(d, _)| d).collect();
        let value = checksum::composite(alg, &digests);
        // A checksum the client sends is the checksum of the parts'
        // checksums, with or without its `-N` part count.
        if let Some(given) = req.header(alg.header()) {
            let given = given.trim();
            let bare = value.rsplit_once('-').map_or(value.as_str(), |(b, _)| b);
            if given != value && given != bare {
                return Err(checksum_mismatch(alg));
            }
        }
        value
    };
    Ok(Some(ChecksumValue {
        algorithm: alg.name().to_string(),
        value,
        kind: kind.to_string(),
    }))
}
