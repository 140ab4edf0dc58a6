//! Signature Version 2 presigned URLs (`AWSAccessKeyId`, `Expires`,
//! `Signature`): what botocore and the aws CLI still produce by default for
//! `generate_presigned_url` and `aws s3 presign`, and what S3 accepts in
//! us-east-1. Header-signed SigV2 requests are not accepted.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html>)

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use http::request::Parts;
use sha1::Sha1;

use super::outcome::{Authenticated, Payload, Signing, MAX_PRESIGN_EXPIRY_SECS};
use super::sigv4::signatures_equal;
use crate::auth::credentials::Credentials;
use crate::error::{S3Error, S3Result};

/// Query parameters that are part of the canonicalized resource.
const SUBRESOURCES: [&str; 24] = [
    "acl",
    "cors",
    "delete",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "partNumber",
    "policy",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
];

/// The string SigV2 signs for a presigned request.
pub fn string_to_sign(
    parts: &Parts,
    params: &[(String, String)],
    expires: &str,
    bucket_from_host: Option<&str>,
) -> String {
    let header = |n: &str| {
        parts
            .headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let mut amz: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-amz-"))
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).trim().to_string(),
            )
        })
        .collect();
    amz.sort();
    let mut resource = String::new();
    if let Some(b) = bucket_from_host {
        resource.push('/');
        resource.push_str(b);
    }
    resource.push_str(parts.uri.path());
    let mut subs: Vec<&(String, String)> = params
        .iter()
        .filter(|(k, _)| SUBRESOURCES.contains(&k.as_str()))
        .collect();
    subs.sort();
    for (i, (k, v)) in subs.iter().enumerate() {
        resource.push(if i == 0 { '?' } else { '&' });
        resource.push_str(k);
        if !v.is_empty() {
            resource.push('=');
            resource.push_str(v);
        }
    }
    let mut out = format!(
        "{}\n{}\n{}\n{expires}\n",
        parts.method,
        header("content-md5"),
        header("content-type")
    );
    for (k, v) in amz {
        out.push_str(&format!("{k}:{v}\n"));
    }
    out.push_str(&resource);
    out
}

/// Base64 HMAC-SHA1 signature.
pub fn sign(secret: &str, string_to_sign: &str) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(string_to_sign.as_bytes());
    B64.encode(mac.finalize().into_bytes())
}

/// Authenticates a SigV2 presigned request.
pub fn presigned(
    parts: &Parts,
    params: &[(String, String)],
    creds: &Credentials,
    now_secs: i64,
    bucket_from_host: Option<&str>,
) -> S3Result<Authenticated> {
    let get = |n: &str| params.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let (Some(key), Some(signature), Some(expires)) =
        (get("AWSAccessKeyId"), get("Signature"), get("Expires"))
    else {
        return Err(S3Error::AccessDenied(
            "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters".into(),
        ));
    };
    let at: i64 = expires.parse().map_err(|_| {
        S3Error::AccessDenied("Expires must be a number of seconds since the epoch".into())
    })?;
    if now_secs > at {
        return Err(S3Error::AccessDenied("Request has expired".into()));
    }
    // S3 itself sets no limit here; a week, as SigV4 has, so that a leaked
    // URL does not stay good for decades.
    if at - now_secs > MAX_PRESIGN_EXPIRY_SECS {
        return Err(S3Error::AccessDenied(format!(
            "Expires must be at most {} seconds (7 days) from now",
            MAX_PRESIGN_EXPIRY_SECS
        )));
    }
    let secret = creds.secret(key).ok_or(S3Error::InvalidAccessKeyId)?;
    let sts = string_to_sign(parts, params, expires, bucket_from_host);
    if !signatures_equal(&sign(secret, &sts), signature) {
        return Err(S3Error::SignatureDoesNotMatch {
            string_to_sign: sts,
            canonical_request: String::new(),
        });
    }
    Ok(Authenticated {
        access_key: key.to_string(),
        payload: Payload::Unsigned,
        signing: Signing::V2Query,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_documented_example() {
        // The "Object GET" example of the S3 SigV2 guide: a presigned URL
        // signs the same string with Expires where the header form has Date.
        let parts = http::Request::get(
            "/awsexamplebucket1/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=x",
        )
        .body(())
        .unwrap()
        .into_parts()
        .0;
        let params = crate::query::parse_query(parts.uri.query());
        let when = "Tue, 27 Mar 2007 19:36:42 +0000";
        let sts = string_to_sign(&parts, &params, when, None);
        assert_eq!(
            sts,
            format!("GET\n\n\n{when}\n/awsexamplebucket1/photos/puppy.jpg")
        );
        assert_eq!(
            sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", &sts),
            "qgk2+6Sv9/oM7G3qLEjTH1a1l1g="
        );
        // Virtual-hosted: the bucket comes from the Host header.
        let vh = http::Request::get("/photos/puppy.jpg")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(
            string_to_sign(&vh, &[], when, Some("awsexamplebucket1")),
            sts
        );
    }
}
