//! Whether a request's principal may perform an action on a bucket or
//! key: the request's policy context, the bucket's policy and the
//! principal's own.

use super::{get, policy};
use crate::iam::{self, Principal};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::S3Result;
use s3_wire::iam_policy::ConditionValues;

/// The policy context of a request (client address, TLS, list parameters).
pub(crate) fn condition_values(req: &S3Request) -> ConditionValues {
    let header = |n: &str| req.header(n).map(str::to_string);
    ConditionValues {
        source_ip: req.client.map(|a| a.ip()),
        secure: req.secure,
        prefix: req.q("prefix").map(str::to_string),
        delimiter: req.q("delimiter").map(str::to_string),
        max_keys: req.q("max-keys").map(str::to_string),
        now: Some(time::OffsetDateTime::now_utc()),
        referer: header("referer"),
        user_agent: header("user-agent"),
        tls_version: req.tls_version,
        signature_version: req.auth.signing.version(),
        auth_type: req.auth.signing.auth_type(),
        content_sha256: header("x-amz-content-sha256"),
        existing_tags: None,
        // A malformed header is refused by the operation itself.
        request_tags: req
            .header("x-amz-tagging")
            .and_then(|t| s3_wire::tags::parse_header(t).ok()),
        version_id: req.q("versionId").map(str::to_string),
        copy_source: header("x-amz-copy-source"),
        metadata_directive: header("x-amz-metadata-directive"),
        storage_class: header("x-amz-storage-class"),
        if_match: header("if-match"),
    }
}

/// Checks that the request's principal may perform `action` on `bucket`
/// (and `key`), under the bucket's policy and the principal's own.
pub(crate) async fn check(
    gw: &Gateway,
    req: &S3Request,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> S3Result<()> {
    check_as(
        gw,
        req,
        &req.principal,
        || condition_values(req),
        action,
        bucket,
        key,
    )
    .await
}

/// [`check`] for an explicit principal (a POST policy's signer) and
/// condition values, built only for a principal policies apply to.
pub(crate) async fn check_as(
    gw: &Gateway,
    req: &S3Request,
    principal: &Principal,
    values: impl FnOnce() -> ConditionValues,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> S3Result<()> {
    if matches!(principal, Principal::Root) {
        return Ok(());
    }
    let bucket_policy = match gw.store.bucket(bucket).await {
        Ok(b) => b
            .config
            .get(policy::BUCKET_POLICY)
            .map(|doc| gw.identities.bucket_policy(bucket, doc))
            .transpose()?,
        Err(placement::Error::NoSuchBucket { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let resource = match key {
        Some(k) => format!("arn:aws:s3:::{bucket}/{k}"),
        None => format!("arn:aws:s3:::{bucket}"),
    };
    let user_policy = match principal {
        Principal::User(u) => u.policy.as_ref(),
        _ => None,
    };
    let wants_tags = [bucket_policy.as_deref(), user_policy]
        .into_iter()
        .flatten()
        .any(|p| p.wants_existing_tags());
    let mut values = values();
    if let (true, Some(k)) = (wants_tags, key) {
        // A missing object (or a delete marker) has no tags to match.
        values.existing_tags = get::requested_object(gw, req, k).await.ok().map(|o| o.tags);
    }
    iam::authorize(
        principal,
        bucket_policy.as_deref(),
        action,
        &resource,
        &values,
    )
}
