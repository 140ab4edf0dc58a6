//! RestoreObject. Granary reads objects of the archive classes (GLACIER,
//! DEEP_ARCHIVE) in place, so they are always "restored": HEAD and GET
//! send `x-amz-restore: ongoing-request="false", expiry-date=…`, and a
//! restore only moves the reported expiry date to now + Days. Other
//! classes answer 403 InvalidObjectState, as S3 does.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_RestoreObject.html>)

use axum::body::Body;
use http::{Response, StatusCode};
use placement::VersionRef;

use super::document::read_document;
use crate::headers::{is_archive_class, is_archived, now_ns, restore_expiry_ns};
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::{from_xml, RestoreRequest};

/// Largest RestoreRequest document accepted.
const MAX_RESTORE_BYTES: u64 = 64 << 10;
/// Most days a restore may ask for (S3's limit).
const MAX_DAYS: u64 = 2_147_483_647;

/// Until when a listed version of `class` is reported restored — read from
/// its record, as listings do not carry it; `None` unless archived (or
/// gone since it was listed). `None` for `version`: the current one.
pub(crate) async fn listed_restore_expiry(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    class: Option<&str>,
    version: Option<VersionRef>,
) -> S3Result<Option<u64>> {
    if !is_archive_class(class) {
        return Ok(None);
    }
    match gw.store.get_version(bucket, key, version).await {
        Ok(obj) if is_archived(&obj.meta) => Ok(Some(restore_expiry_ns(&obj.meta))),
        Ok(_) | Err(placement::Error::NoSuchKey { .. } | placement::Error::NoSuchVersion) => {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// RestoreObject: 200 for an object of an archive class (its reported
/// expiry moved), 403 InvalidObjectState for any other.
pub async fn restore_object(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let version = versions::requested(req)?;
    let doc = read_document(gw, req, body, MAX_RESTORE_BYTES).await?;
    let asked: RestoreRequest = from_xml(&doc)?;
    if asked.kind.is_some() || asked.select_parameters.is_some() || asked.output_location.is_some()
    {
        return Err(S3Error::NotImplemented(
            "SELECT restores (Type, SelectParameters, OutputLocation) are not supported".into(),
        ));
    }
    if let Some(tier) = asked
        .glacier_job_parameters
        .as_ref()
        .map(|p| p.tier.as_str())
    {
        if !["Standard", "Bulk", "Expedited"].contains(&tier) {
            return Err(S3Error::MalformedXml(format!(
                "The XML you provided was not well-formed or did not validate against our published schema (Tier {tier})"
            )));
        }
    }
    let days = match asked.days {
        Some(d) if (1..=MAX_DAYS).contains(&d) => d,
        Some(d) => {
            return Err(S3Error::InvalidArgument(
                "Days must be at least 1".into(),
                Some(("Days".into(), d.to_string())),
            ))
        }
        None => {
            return Err(S3Error::MalformedXml(
                "The XML you provided was not well-formed or did not validate against our published schema (Days is required)".into(),
            ))
        }
    };
    let obj = gw
        .store
        .get_version(req.bucket(), req.key(), version)
        .await?;
    if obj.delete_marker {
        return Err(S3Error::NoSuchKey(req.key().to_string()));
    }
    if !is_archived(&obj.meta) {
        return Err(S3Error::InvalidObjectState(
            "Restore is not allowed for the object's current storage class".into(),
        ));
    }
    let until = now_ns().saturating_add(days.saturating_mul(86_400_000_000_000));
    gw.store
        .set_restore_expiry(req.bucket(), req.key(), version, until)
        .await?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .body(Body::empty())
        .expect("valid response"))
}
