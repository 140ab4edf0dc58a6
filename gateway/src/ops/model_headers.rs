//! Request headers of the S3 model that no single operation's handler
//! reads, checked for every request so none is accepted and ignored: the
//! expected bucket owners are honoured; options Granary does not have
//! (SSE-C, MFA delete, annotations, bucket namespaces, the checksum
//! algorithms it does not compute yet) are refused, and so is a governance
//! bypass, as S3 refuses it on a bucket without Object Lock (no Granary
//! bucket has Object Lock).

use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};

/// Headers naming an option Granary does not have: refused with 501.
const NOT_IMPLEMENTED: [(&str, &str); 5] = [
    ("x-amz-mfa", "MFA delete is not supported"),
    (
        "x-amz-object-annotation-directive",
        "Object annotations are not supported",
    ),
    (
        "x-amz-bucket-namespace",
        "Bucket namespaces are not supported",
    ),
    (
        "x-amz-confirm-remove-self-bucket-access",
        "Policies that lock out their own writer are not supported",
    ),
    (
        "x-amz-if-match-initiated-time",
        "Directory-bucket conditions on AbortMultipartUpload are not supported",
    ),
];

/// Prefixes of headers of customer-provided encryption keys (SSE-C).
const SSE_C: [&str; 2] = [
    "x-amz-server-side-encryption-customer-",
    "x-amz-copy-source-server-side-encryption-customer-",
];

/// Checks the headers above on any request.
pub(crate) fn check(gw: &Gateway, req: &S3Request) -> S3Result<()> {
    for (name, why) in NOT_IMPLEMENTED {
        if req.parts.headers.contains_key(name) {
            return Err(S3Error::NotImplemented(format!("{why} ({name})")));
        }
    }
    const BYPASS: &str = "x-amz-bypass-governance-retention";
    if let Some(v) = req.parts.headers.get(BYPASS) {
        return Err(S3Error::InvalidArgument(
            format!("{BYPASS} is only applicable to Object Lock enabled buckets."),
            Some((BYPASS.into(), String::from_utf8_lossy(v.as_bytes()).into())),
        ));
    }
    for name in req.parts.headers.keys() {
        if SSE_C.iter().any(|p| name.as_str().starts_with(p)) {
            return Err(S3Error::NotImplemented(format!(
                "Server-side encryption with customer-provided keys is not supported ({name})"
            )));
        }
    }
    // Every bucket of a deployment has its one owner (the Owner ID of
    // ListBuckets and GetBucketAcl): a request expecting another fails as
    // S3 fails it.
    for name in [
        "x-amz-expected-bucket-owner",
        "x-amz-source-expected-bucket-owner",
    ] {
        if let Some(v) = req.header(name) {
            if v.trim() != gw.owner.id {
                return Err(S3Error::AccessDenied(format!(
                    "The bucket is not owned by {v} ({name})"
                )));
            }
        }
    }
    Ok(())
}
