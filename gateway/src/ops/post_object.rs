//! POST Object: browser form uploads with a signed policy document
//! (SigV4, or SigV2), its conditions, `content-length-range`, and the
//! success_action_status / success_action_redirect answers.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html>)

use std::sync::Arc;

use axum::body::Body;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use placement::{BodyError, BodyStream, ChecksumValue, WriteOptions};
use serde::Serialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::{check_as, condition_values, post_form};
use crate::auth::sigv2;
use crate::auth::sigv4::{self, Scope};
use crate::body::{request_body, BodyOptions};
use crate::checksum::{self, ChecksumAlgorithm};
use crate::error::{S3Error, S3Result};
use crate::hashing::HashTap;
use crate::headers::{now_ns, object_meta, quoted, requested_class};
use crate::iam::Principal;
use crate::progress::Phase;
use crate::request::S3Request;
use crate::xml::to_xml;
use crate::{tags, versions, Gateway};

/// Largest file a POST may carry (as a single PUT).
const MAX_POST_FILE_BYTES: u64 = 5 << 30;
/// Fields every policy may leave unmentioned.
const EXEMPT: [&str; 6] = [
    "x-amz-signature",
    "file",
    "policy",
    "x-amz-security-token",
    "awsaccesskeyid",
    "signature",
];

fn denied(why: &str) -> S3Error {
    S3Error::AccessDenied(format!("Invalid according to Policy: {why}"))
}

/// The signed policy document's conditions, checked against the form.
struct PostPolicy {
    conditions: Vec<Value>,
    length_range: Option<(u64, u64)>,
}

impl PostPolicy {
    fn parse(b64: &str, now: OffsetDateTime) -> S3Result<PostPolicy> {
        let raw = B64.decode(b64.trim()).map_err(|_| {
            S3Error::InvalidArgument("Invalid Policy: Invalid 'Base64' encoding".into(), None)
        })?;
        let doc: Value = serde_json::from_slice(&raw)
            .map_err(|_| S3Error::InvalidArgument("Invalid Policy: Invalid JSON.".into(), None))?;
        let expiration = doc
            .get("expiration")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                S3Error::InvalidArgument("Invalid Policy: Policy missing expiration.".into(), None)
            })?;
        // ISO 8601 in UTC as S3 writes it: 2026-06-01T00:00:00.000Z.
        let bad_expiration =
            || S3Error::InvalidArgument("Invalid Policy: Invalid 'expiration' value.".into(), None);
        let shaped = expiration.len() >= 20
            && expiration.as_bytes()[10] == b'T'
            && expiration.ends_with('Z');
        if !shaped {
            return Err(bad_expiration());
        }
        let expires = OffsetDateTime::parse(expiration, &Rfc3339).map_err(|_| bad_expiration())?;
        if now > expires {
            return Err(denied("Policy expired."));
        }
        let conditions = doc
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| {
                S3Error::InvalidArgument("Invalid Policy: Policy missing conditions.".into(), None)
            })?;
        let mut length_range = None;
        for c in &conditions {
            if let Some(a) = c.as_array() {
                if a.first().and_then(Value::as_str) == Some("content-length-range") {
                    // Both bounds, as numbers (or numeric strings), in order.
                    let n = |i: usize| match a.get(i) {
                        Some(Value::Number(n)) => n.as_u64(),
                        Some(Value::String(s)) => s.trim().parse().ok(),
                        _ => None,
                    };
                    match (a.len(), n(1), n(2)) {
                        (3, Some(lo), Some(hi)) if lo <= hi => length_range = Some((lo, hi)),
                        _ => {
                            return Err(S3Error::InvalidArgument(
                                "Invalid Policy: Invalid content-length-range condition: it takes a minimum and a maximum size.".into(),
                                None,
                            ))
                        }
                    }
                }
            }
        }
        Ok(PostPolicy {
            conditions,
            length_range,
        })
    }

    /// Checks every condition against the fields (lower-case names), and
    /// that no field goes unmentioned.
    fn check(&self, fields: &[(String, String)], bucket: &str) -> S3Result<()> {
        let get = |name: &str| -> String {
            if name == "bucket" {
                return bucket.to_string();
            }
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut covered: Vec<String> = vec!["bucket".into()];
        for c in &self.conditions {
            let failed = || denied(&format!("Policy Condition failed: {c}"));
            match c {
                Value::Object(m) => {
                    for (k, v) in m {
                        let name = k.to_ascii_lowercase();
                        if get(&name) != v.as_str().unwrap_or_default() {
                            return Err(failed());
                        }
                        covered.push(name);
                    }
                }
                Value::Array(a) => {
                    let op = a
                        .first()
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    if op == "content-length-range" {
                        continue;
                    }
                    let name = a
                        .get(1)
                        .and_then(Value::as_str)
                        .and_then(|f| f.strip_prefix('$'))
                        .ok_or_else(failed)?
                        .to_ascii_lowercase();
                    let want = a.get(2).and_then(Value::as_str).unwrap_or_default();
                    let have = get(&name);
                    let ok = match op.as_str() {
                        "eq" => have == want,
                        "starts-with" => have.starts_with(want),
                        _ => false,
                    };
                    if !ok {
                        return Err(failed());
                    }
                    covered.push(name);
                }
                _ => return Err(failed()),
            }
        }
        for (k, _) in fields {
            if !EXEMPT.contains(&k.as_str()) && !k.starts_with("x-ignore-") && !covered.contains(k)
            {
                return Err(denied(&format!("Extra input fields: {k}")));
            }
        }
        Ok(())
    }
}

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
    crate::names::validate_key(&key)?;

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
            Some("200") => super::empty(StatusCode::OK),
            Some("201") => {
                let doc = PostResponse {
                    location: location.clone(),
                    bucket: req.bucket().into(),
                    key: key.clone(),
                    etag: etag.clone(),
                };
                super::xml(StatusCode::CREATED, to_xml("PostResponse", &doc))
            }
            _ => super::empty(StatusCode::NO_CONTENT),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(conditions: &str, expires: &str) -> String {
        B64.encode(format!(
            r#"{{"expiration":"{expires}","conditions":{conditions}}}"#
        ))
    }

    #[test]
    fn conditions_are_enforced() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let p = PostPolicy::parse(
            &policy(r#"[{"bucket":"uploads"},["starts-with","$key","user/"],{"success_action_status":"201"},["content-length-range",1,1000],["starts-with","$Content-Type","image/"]]"#, "2026-06-01T00:00:00.000Z"),
            now,
        )
        .unwrap();
        assert_eq!(p.length_range, Some((1, 1000)));
        let mut fields = vec![
            ("key".to_string(), "user/a.png".to_string()),
            ("success_action_status".to_string(), "201".to_string()),
            ("content-type".to_string(), "image/png".to_string()),
        ];
        p.check(&fields, "uploads").unwrap();
        assert!(matches!(
            p.check(&fields, "other"),
            Err(S3Error::AccessDenied(_))
        ));
        fields[0].1 = "admin/a.png".into();
        assert!(matches!(
            p.check(&fields, "uploads"),
            Err(S3Error::AccessDenied(_))
        ));
        fields[0].1 = "user/a.png".into();
        fields.push(("x-amz-meta-extra".into(), "1".into()));
        let e = p.check(&fields, "uploads").unwrap_err();
        assert!(e.message().contains("Extra input fields"), "{e}");
        let late = OffsetDateTime::parse("2026-07-01T00:00:00Z", &Rfc3339).unwrap();
        let e = PostPolicy::parse(&policy("[]", "2026-06-01T00:00:00Z"), late)
            .err()
            .unwrap();
        assert!(e.message().contains("Policy expired"), "{e}");
        assert!(PostPolicy::parse("!!!", now).is_err());
    }

    #[test]
    fn malformed_expirations_and_length_ranges_are_refused() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let refused = |conditions: &str, expires: &str| match PostPolicy::parse(
            &policy(conditions, expires),
            now,
        ) {
            Err(e @ S3Error::InvalidArgument(..)) => e.message(),
            other => panic!(
                "{conditions} {expires}: {:?}",
                other.map(|p| p.length_range)
            ),
        };
        for expires in [
            "2026-06-01",
            "2026-06-01T00:00:00+02:00",
            "June 1st",
            "2026-06-01 00:00:00Z",
        ] {
            assert!(refused("[]", expires).contains("expiration"), "{expires}");
        }
        for range in [
            r#"[["content-length-range",1]]"#,
            r#"[["content-length-range"]]"#,
            r#"[["content-length-range",10,1]]"#,
            r#"[["content-length-range","a",5]]"#,
            r#"[["content-length-range",1,5,9]]"#,
        ] {
            assert!(
                refused(range, "2026-06-01T00:00:00.000Z").contains("content-length-range"),
                "{range}"
            );
        }
        let p = PostPolicy::parse(
            &policy(
                r#"[["content-length-range","1","5"]]"#,
                "2026-06-01T00:00:00Z",
            ),
            now,
        )
        .unwrap();
        assert_eq!(p.length_range, Some((1, 5)));
    }
}
