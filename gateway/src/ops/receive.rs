//! Receiving a write's body: decode and verify it while it streams into
//! shard files, with MD5 and a flexible checksum computed beside it, then
//! check the digests the client supplied (Content-MD5, `x-amz-checksum-*`
//! headers or trailers) before anything is committed.

use std::sync::Arc;

use axum::body::Body;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use placement::{ChecksumValue, StagedData, Tier, UploadRecord};
use uuid::Uuid;

use crate::body::{request_body, BodyOptions};
use crate::checksum::{self, ChecksumAlgorithm, ALL};
use crate::hashing::HashTap;
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};

/// Largest single PUT or part: 5 GiB.
pub const MAX_PUT_BYTES: u64 = 5 << 30;

/// The digests a client asked us to check, and the checksum to compute.
#[derive(Debug)]
pub struct Integrity {
    content_md5: Option<[u8; 16]>,
    algorithm: ChecksumAlgorithm,
    explicit: bool,
    expected: Option<Vec<u8>>,
    in_trailer: bool,
}

/// Checksum algorithms of the current S3 model Granary does not compute
/// yet: a request naming one is refused, never stored without it.
pub const NOT_YET: [&str; 5] = ["SHA512", "MD5", "XXHASH64", "XXHASH3", "XXHASH128"];

/// The checksum algorithm header `header` names (`x-amz-checksum-algorithm`
/// or `x-amz-sdk-checksum-algorithm`), validated: one Granary does not
/// compute is InvalidRequest.
pub fn algorithm_named(req: &S3Request, header: &str) -> S3Result<Option<ChecksumAlgorithm>> {
    req.header(header)
        .map(|a| {
            ChecksumAlgorithm::from_name(a).ok_or_else(|| {
                S3Error::InvalidRequest(format!("Checksum algorithm {a} is not supported"))
            })
        })
        .transpose()
}

/// BadDigest for a checksum in `alg` that does not match the data.
pub fn checksum_mismatch(alg: ChecksumAlgorithm) -> S3Error {
    S3Error::BadDigest(format!(
        "The {} you specified did not match the calculated checksum.",
        alg.name()
    ))
}

/// InvalidRequest for a checksum in `got` where `want` is required.
pub fn type_mismatch(want: ChecksumAlgorithm, got: ChecksumAlgorithm) -> S3Error {
    S3Error::InvalidRequest(format!(
        "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
        want.name().to_lowercase(),
        got.name().to_lowercase()
    ))
}

/// Refuses a checksum header or trailer of an algorithm in [`NOT_YET`].
pub fn refuse_not_yet(req: &S3Request) -> S3Result<()> {
    for name in NOT_YET {
        let header = format!("x-amz-checksum-{}", name.to_ascii_lowercase());
        let trailer = req
            .header("x-amz-trailer")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(&header));
        if req.header(&header).is_some() || trailer {
            return Err(S3Error::InvalidRequest(format!(
                "The {name} checksum algorithm is not supported yet; use CRC64NVME, CRC32, CRC32C, SHA1 or SHA256"
            )));
        }
    }
    Ok(())
}

/// Reads the integrity headers of a write. Without any, the object gets a
/// CRC64NVME full-object checksum, as S3 computes by default.
pub fn integrity(req: &S3Request) -> S3Result<Integrity> {
    integrity_with(req, None)
}

/// [`integrity`] for a request whose checksum algorithm is fixed in
/// advance (a part of an upload created with one): a different algorithm
/// is refused, and it is computed when the client names none.
pub fn integrity_with(req: &S3Request, required: Option<ChecksumAlgorithm>) -> S3Result<Integrity> {
    let content_md5 = match req.header("content-md5") {
        None => None,
        Some(v) => Some(
            B64.decode(v.trim())
                .ok()
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
                .ok_or_else(|| {
                    S3Error::InvalidDigest("The Content-MD5 you specified was invalid.".into())
                })?,
        ),
    };
    refuse_not_yet(req)?;
    let mut chosen: Option<(ChecksumAlgorithm, Option<Vec<u8>>, bool)> = None;
    for alg in ALL {
        if let Some(v) = req.header(alg.header()) {
            if chosen.is_some() {
                return Err(S3Error::InvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.".into()));
            }
            let raw = alg.decode_value(v).ok_or_else(|| {
                S3Error::InvalidRequest(format!("Value for {} header is invalid.", alg.header()))
            })?;
            chosen = Some((alg, Some(raw), false));
        }
    }
    if let Some(t) = req.header("x-amz-trailer") {
        let alg = ChecksumAlgorithm::from_header(t.trim()).ok_or_else(|| {
            S3Error::InvalidRequest(format!(
                "The trailer {t} is not supported; only x-amz-checksum-* trailers are"
            ))
        })?;
        if chosen.is_some() {
            return Err(S3Error::InvalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.".into()));
        }
        chosen = Some((alg, None, true));
    }
    if let Some(alg) = algorithm_named(req, "x-amz-sdk-checksum-algorithm")? {
        match &chosen {
            Some((c, _, _)) if *c != alg => {
                return Err(S3Error::InvalidRequest(format!(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid: {} does not match the checksum sent",
                    req.header("x-amz-sdk-checksum-algorithm").unwrap_or_default()
                )))
            }
            Some(_) => {}
            // It names the algorithm of a checksum sent with it; alone,
            // S3 refuses the request rather than computing one.
            None => return Err(S3Error::InvalidRequest(
                "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.".into(),
            )),
        }
    }
    if let (Some(want), Some((got, _, _))) = (required, &chosen) {
        if want != *got {
            return Err(type_mismatch(want, *got));
        }
    }
    let explicit = chosen.is_some();
    let chosen = chosen.or(required.map(|a| (a, None, false)));
    let (algorithm, expected, in_trailer) =
        chosen.unwrap_or((ChecksumAlgorithm::Crc64Nvme, None, false));
    Ok(Integrity {
        content_md5,
        algorithm,
        explicit,
        expected,
        in_trailer,
    })
}

impl Integrity {
    /// Checks Content-MD5 and a checksum header against a small body held
    /// in memory (XML documents).
    pub fn verify_small(&self, data: &[u8]) -> S3Result<()> {
        use md5::Digest as _;
        if let Some(expected) = self.content_md5 {
            if <[u8; 16]>::from(md5::Md5::digest(data)) != expected {
                return Err(S3Error::BadDigest(
                    "The Content-MD5 you specified did not match what we received.".into(),
                ));
            }
        }
        if let Some(expected) = &self.expected {
            let mut h = self.algorithm.hasher();
            h.update(data);
            if &h.finalize() != expected {
                return Err(checksum_mismatch(self.algorithm));
            }
        }
        Ok(())
    }
}

/// Where received data goes.
pub enum Target<'a> {
    /// A new version of the request's object, in this tier's pool.
    Object(Tier),
    /// A part of this upload.
    Part(Uuid, &'a UploadRecord),
}

/// A body received and verified, not yet committed.
pub struct Received {
    /// The data, durable but unreferenced.
    pub staged: StagedData,
    /// MD5 of the data.
    pub md5: [u8; 16],
    /// The checksum to store.
    pub checksum: ChecksumValue,
    /// Whether the client named the algorithm (else it is our default).
    pub explicit_checksum: bool,
}

/// Streams the request body into storage and verifies it.
pub async fn receive(
    gw: &Gateway,
    req: &S3Request,
    body: Body,
    target: Target<'_>,
) -> S3Result<Received> {
    let length = req.payload_length()?;
    if length > MAX_PUT_BYTES {
        return Err(S3Error::EntityTooLarge(format!(
            "Your proposed upload exceeds the maximum allowed size ({MAX_PUT_BYTES} bytes)"
        )));
    }
    let required = match target {
        Target::Part(_, upload) => upload
            .checksum_algorithm
            .as_deref()
            .and_then(ChecksumAlgorithm::from_name),
        Target::Object(_) => None,
    };
    let integ = integrity_with(req, required)?;
    let tap = Arc::new(HashTap::start(true, Some(integ.algorithm)));
    let (stream, trailers) = request_body(
        body,
        BodyOptions {
            payload: req.auth.payload.clone(),
            length,
            pace: gw.config.body_pace,
            tap: Some(tap.clone()),
        },
    );
    let store = gw.store.clone();
    let staged = match target {
        Target::Object(tier) => {
            let (bucket, key) = (req.bucket().to_string(), req.key().to_string());
            gw.in_bulk(length, async move {
                store
                    .write_data_in(tier, &bucket, &key, stream, Some(length))
                    .await
            })
            .await?
        }
        Target::Part(id, upload) => {
            let upload = upload.clone();
            let (bucket, key) = (req.bucket().to_string(), req.key().to_string());
            gw.in_bulk(length, async move {
                store
                    .write_part_data(&bucket, &key, id, &upload, stream, Some(length))
                    .await
            })
            .await?
        }
    }?;
    // The whole body is stored; what remains is checking it.
    placement::failpoint::hit("request.received", "").await;
    let tap =
        Arc::try_unwrap(tap).map_err(|_| S3Error::Internal("body still referenced".into()))?;
    let digests = tap.finish().await;
    let md5 = digests
        .md5
        .ok_or_else(|| S3Error::Internal("no MD5".into()))?;
    let (alg, value) = digests
        .checksum
        .ok_or_else(|| S3Error::Internal("no checksum".into()))?;
    if let Some(expected) = integ.content_md5 {
        if expected != md5 {
            return Err(S3Error::BadDigest(
                "The Content-MD5 you specified did not match what we received.".into(),
            ));
        }
    }
    let expected = if integ.in_trailer {
        let t = trailers.lock().take().unwrap_or_default();
        let v = t
            .iter()
            .find(|(n, _)| n == alg.header())
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                S3Error::InvalidRequest(format!(
                    "The trailer {} was declared but not sent",
                    alg.header()
                ))
            })?;
        Some(alg.decode_value(&v).ok_or_else(|| {
            S3Error::InvalidRequest(format!(
                "Value for {} trailing header is invalid.",
                alg.header()
            ))
        })?)
    } else {
        integ.expected
    };
    if expected.is_some_and(|e| e != value) {
        return Err(checksum_mismatch(alg));
    }
    Ok(Received {
        staged,
        md5,
        checksum: ChecksumValue {
            algorithm: alg.name().to_string(),
            value: checksum::encode(&value),
            kind: "FULL_OBJECT".into(),
        },
        explicit_checksum: integ.explicit,
    })
}
