//! POST Object: browser form uploads with a signed policy document
//! (SigV4, or SigV2), its conditions, `content-length-range`, and the
//! success_action_status / success_action_redirect answers.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html>)

use std::sync::Arc;

use axum::body::Body;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use placement::{BodyError, BodyStream, ChecksumValue, WriteOptions};
use serde::Serialize;
use time::OffsetDateTime;

use super::authorize::{check_as, condition_values};
use super::reply::{empty, xml};
use crate::body::{request_body, BodyOptions};
use crate::checksum::{self, ChecksumAlgorithm};
use crate::hashing::HashTap;
use crate::headers::{now_ns, object_meta, quoted, requested_class};
use crate::iam::Principal;
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::auth::sigv4::{self, Scope};
use s3_wire::auth::{self, sigv2};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::post_form;
use s3_wire::post_policy::PostPolicy;
use s3_wire::tags;
use s3_wire::xml::to_xml;

/// Largest file a POST may carry (as a single PUT).
const MAX_POST_FILE_BYTES: u64 = 5 << 30;
#[derive(Serialize)]
struct PostResponse {
    #[serde(rename = "Location")]
    location: String,
    #[serde(rename = "Bucket")]
    bucket: String,
    #[serde(rename = "Key")]
    key: String,
    #[serde(rename = "ETag")]
    etag: String,
}

/// Verifies the form's policy signature (SigV4, or SigV2 as older SDKs
/// still sign forms by default); returns who signed it.
async fn signer(
    gw: &Gateway,
    fields: &[(String, String)],
    policy_b64: &str,
) -> S3Result<Principal> {
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    if get(auth::SESSION_TOKEN).is_some() {
        return Err(S3Error::InvalidToken);
    }
    if let (Some(key), Some(signature)) = (get("awsaccesskeyid"), get("signature")) {
        let (secret, principal) = gw
            .identities
            .lookup(key)
            .await?
            .ok_or(S3Error::InvalidAccessKeyId)?;
        let ours = sigv2::sign(&secret, policy_b64);
        if !sigv4::signatures_equal(&ours, signature) {
            return Err(S3Error::SignatureDoesNotMatch {
                string_to_sign: policy_b64.to_string(),
                canonical_request: String::new(),
            });
        }
        return Ok(principal);
    }
    if get("x-amz-algorithm") != Some(sigv4::ALGORITHM) {
        return Err(S3Error::InvalidArgument(
            "POST requires x-amz-algorithm AWS4-HMAC-SHA256".into(),
            None,
        ));
    }
    let (Some(cred), Some(signature)) = (get("x-amz-credential"), get("x-amz-signature")) else {
        return Err(S3Error::InvalidArgument(
            "POST requires x-amz-credential and x-amz-signature".into(),
            None,
        ));
    };
    let parts: Vec<&str> = cred.split('/').collect();
    if parts.len() != 5 || parts[3] != "s3" || parts[4] != "aws4_request" {
        return Err(S3Error::InvalidArgument(
            format!("Invalid x-amz-credential: {cred}"),
            None,
        ));
    }
    if parts[2] != gw.config.region {
        return Err(S3Error::AuthorizationQueryParametersError(format!(
            "the region '{}' is wrong; expecting '{}'",
            parts[2], gw.config.region
        )));
    }
    let (secret, principal) = gw
        .identities
        .lookup(parts[0])
        .await?
        .ok_or(S3Error::InvalidAccessKeyId)?;
    let scope = Scope {
        date: parts[1].to_string(),
        region: parts[2].to_string(),
        service: "s3".into(),
    };
    let ours = sigv4::sign(&sigv4::signing_key(&secret, &scope), policy_b64);
    if !sigv4::signatures_equal(&ours, signature) {
        return Err(S3Error::SignatureDoesNotMatch {
            string_to_sign: policy_b64.to_string(),
            canonical_request: String::new(),
        });
    }
    Ok(principal)
}

/// POST Object.
pub async fn post(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let ct = req.header("content-type").unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err(S3Error::NotImplemented(
            "POST to a bucket is only supported as a multipart/form-data upload".into(),
        ));
    }
    let boundary = multer::parse_boundary(ct)
        .map_err(|_| S3Error::MalformedXml("Malformed multipart/form-data boundary".into()))?;
    let length = req.payload_length()?;
    let (stream, _) = request_body(
        body,
        BodyOptions {
            payload: req.auth.payload.clone(),
            length,
            pace: gw.config.body_pace,
            tap: None,
        },
    );
    let post_form::Form { fields, file } = post_form::read(stream, boundary).await?;
    let file_name = file.file_name().unwrap_or("").to_string();
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let key = get("key")
        .ok_or_else(|| S3Error::InvalidArgument("Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.".into(), Some(("key".into(), String::new()))))?
        .replace("${filename}", &file_name);
    s3_wire::names::validate_key(&key)?;

    // Who signed the policy, and may they write here?
    let mut limit = (0, MAX_POST_FILE_BYTES);
    let principal = match get("policy") {
        Some(policy_b64) => {
            let principal = signer(gw, &fields, &policy_b64).await?;
            let policy = PostPolicy::parse(&policy_b64, OffsetDateTime::now_utc())?;
            let mut with_key = fields.clone();
            if let Some(k) = with_key.iter_mut().find(|(n, _)| n == "key") {
                k.1 = key.clone();
            }
            policy.check(&with_key, req.bucket())?;
            if let Some((lo, hi)) = policy.length_range {
                limit = (lo, hi.min(MAX_POST_FILE_BYTES));
            }
            principal
        }
        None => Principal::Anonymous,
    };
    // Parsed once: the policy sees it, the object stores it (a malformed
    // one is refused after the access check, as before).
    let tagging = get("tagging").map(|t| tags::parse_xml(t.as_bytes(), tags::MAX_OBJECT_TAGS));
    let signature_version = if get("awsaccesskeyid").is_some() {
        "AWS"
    } else {
        "AWS4-HMAC-SHA256"
    };
    check_as(
        gw,
        req,
        &principal,
        || {
            let mut values = condition_values(req);
            values.auth_type = Some("POST");
            values.signature_version = Some(signature_version);
            values.request_tags = tagging.as_ref().and_then(|t| t.as_ref().ok()).cloned();
            values
        },
        "s3:PutObject",
        req.bucket(),
        Some(&key),
    )
    .await?;

    // The object's metadata from the form fields.
    let mut headers = HeaderMap::new();
    for (k, v) in &fields {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(k.as_str()), HeaderValue::from_str(v)) {
            headers.insert(n, v);
        }
    }
    let (class, tier) = requested_class(&headers, gw.store.has_cold_pool())?;
    if let Some(acl) = get("acl").filter(|a| a != "private" && a != "bucket-owner-full-control") {
        return Err(S3Error::NotImplemented(format!(
            "Canned ACL '{acl}' is not supported; objects and buckets are private"
        )));
    }
    let mut meta = object_meta(&headers)?;
    meta.storage_class = Some(class);
    let tags = tagging.transpose()?.unwrap_or_default();

    // Stream the file, within the policy's content-length-range.
    let tap = Arc::new(HashTap::start(true, Some(ChecksumAlgorithm::Crc64Nvme)));
    let feed = tap.clone();
    let counted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = counted.clone();
    let (lo, hi) = limit;
    let data: BodyStream = Box::pin(file.then(move |chunk| {
        let (feed, seen) = (feed.clone(), seen.clone());
        async move {
            let chunk =
                chunk.map_err(|e| Box::new(S3Error::IncompleteBody(e.to_string())) as BodyError)?;
            let total = seen.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed)
                + chunk.len() as u64;
            if total > hi {
                return Err(Box::new(S3Error::EntityTooLarge(
                    "Your proposed upload exceeds the maximum allowed size".into(),
                )) as BodyError);
            }
            feed.feed(&chunk).await;
            Ok(chunk)
        }
    }));
    let since_ns = now_ns();
    let staged = gw
        .store
        .write_data_in(tier, req.bucket(), &key, data, None)
        .await?;
    if counted.load(std::sync::atomic::Ordering::Relaxed) < lo {
        return Err(S3Error::EntityTooSmall(
            "Your proposed upload is smaller than the minimum allowed size".into(),
        ));
    }
    let digests = Arc::try_unwrap(tap)
        .map_err(|_| S3Error::Internal("form stream still referenced".into()))?
        .finish()
        .await;
    let md5 = digests
        .md5
        .ok_or_else(|| S3Error::Internal("no MD5".into()))?;
    meta.etag = hex::encode(md5);
    meta.checksum = digests.checksum.map(|(alg, v)| ChecksumValue {
        algorithm: alg.name().into(),
        value: checksum::encode(&v),
        kind: "FULL_OBJECT".into(),
    });
    req.progress.enter(Phase::Commit);
    let stored = gw
        .store
        .put_object(
            req.bucket(),
            &key,
            staged,
            meta,
            tags,
            &WriteOptions {
                condition: None,
                since_ns,
            },
        )
        .await?;

    // The answer the form asked for.
    let etag = quoted(&stored.meta.etag);
    let location = format!(
        "{}://{}/{}/{}",
        if req.secure { "https" } else { "http" },
        req.header("host").unwrap_or("localhost"),
        req.bucket(),
        sigv4::uri_encode(key.as_bytes(), false)
    );
    let mut resp = if let Some(redirect) = get("success_action_redirect")
        .or_else(|| get("redirect"))
        .filter(|r| !r.is_empty())
    {
        let sep = if redirect.contains('?') { '&' } else { '?' };
        let to = format!(
            "{redirect}{sep}bucket={}&key={}&etag={}",
            sigv4::uri_encode(req.bucket().as_bytes(), true),
            sigv4::uri_encode(key.as_bytes(), true),
            sigv4::uri_encode(etag.as_bytes(), true)
        );
        Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(http::header::LOCATION, to)
            .body(Body::empty())
            .expect("valid response")
    } else {
        match get("success_action_status").as_deref() {
            Some("200") => empty(StatusCode::OK),
            Some("201") => {
                let doc = PostResponse {
                    location: location.clone(),
                    bucket: req.bucket().into(),
                    key: key.clone(),
                    etag: etag.clone(),
                };
                xml(StatusCode::CREATED, to_xml("PostResponse", &doc))
            }
            _ => empty(StatusCode::NO_CONTENT),
        }
    };
    let h = resp.headers_mut();
    h.insert(http::header::ETAG, etag.parse().expect("ascii"));
    if !h.contains_key(http::header::LOCATION) {
        if let Ok(v) = location.parse() {
            h.insert(http::header::LOCATION, v);
        }
    }
    if stored.version_id.is_some() {
        h.insert(
            "x-amz-version-id",
            versions::of(&stored).parse().expect("ascii"),
        );
    }
    Ok(resp)
}
