//! Request headers of the S3 model that no single operation's handler
//! reads, checked for every request so none is accepted and ignored: the
//! expected bucket owners are honoured; options Granary does not have
//! (SSE-C, MFA delete, Object Lock governance bypass, annotations, bucket
//! namespaces, the checksum algorithms it does not compute yet) are
//! refused.

use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};

/// Headers naming an option Granary does not have: refused with 501.
const NOT_IMPLEMENTED: [(&str, &str); 6] = [
    ("x-amz-mfa", "MFA delete is not supported"),
    (
        "x-amz-bypass-governance-retention",
        "Object Lock is not supported",
    ),
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
        if req.header(name).is_some() {
            return Err(S3Error::NotImplemented(format!("{why} ({name})")));
        }
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
