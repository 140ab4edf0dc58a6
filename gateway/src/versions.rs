//! Version ids on the wire: "null" for the null version, 32 hex digits
//! otherwise.

use placement::{ObjectRecord, ObjectSummary, VersionRef};
use uuid::Uuid;

use crate::request::S3Request;
use s3_wire::error::{S3Error, S3Result};

/// Parses a version id.
pub fn parse(v: &str) -> S3Result<VersionRef> {
    if v == "null" {
        return Ok(VersionRef::Null);
    }
    Uuid::try_parse(v)
        .ok()
        .filter(|_| v.len() == 32)
        .map(VersionRef::Id)
        .ok_or_else(|| {
            S3Error::InvalidArgument(
                "Invalid version id specified".into(),
                Some(("versionId".into(), v.into())),
            )
        })
}

/// Formats a version id.
pub fn format(v: VersionRef) -> String {
    match v {
        VersionRef::Null => "null".into(),
        VersionRef::Id(u) => u.simple().to_string(),
    }
}

/// The version id of a stored record.
pub fn of(object: &ObjectRecord) -> String {
    format(VersionRef::of(object))
}

/// The version id of a listed version, as sent on the wire.
pub fn of_listed(object: &ObjectSummary) -> String {
    format(VersionRef::of_id(object.version_id))
}

/// The `versionId` query parameter of a request, if any.
pub fn requested(req: &S3Request) -> S3Result<Option<VersionRef>> {
    req.q("versionId").map(parse).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let u = Uuid::now_v7();
        assert_eq!(
            parse(&format(VersionRef::Id(u))).unwrap(),
            VersionRef::Id(u)
        );
        assert_eq!(parse("null").unwrap(), VersionRef::Null);
        assert!(parse("abc").is_err());
        assert!(parse(&u.hyphenated().to_string()).is_err());
    }
}
