//! Conditional requests: If-Match, If-None-Match, If-Modified-Since and
//! If-Unmodified-Since on GET/HEAD, and their `x-amz-copy-source-if-*`
//! twins on copies, evaluated in RFC 9110's order as S3 documents.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html>)

use http::HeaderMap;

use crate::error::{S3Error, S3Result};

fn etag_matches(list: &str, etag: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.trim_start_matches("W/").trim_matches('"') == etag)
}

fn date(h: &HeaderMap, name: &str) -> Option<u64> {
    let v = h.get(name)?.to_str().ok()?;
    let t = httpdate::parse_http_date(v).ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

fn text<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Evaluates GET/HEAD conditions against an object's ETag (unquoted) and
/// last-modified time (seconds). Err is 412 PreconditionFailed or 304.
pub fn check_read(h: &HeaderMap, etag: &str, modified_secs: u64) -> S3Result<()> {
    match text(h, "if-match") {
        Some(m) => {
            if !etag_matches(m, etag) {
                return Err(S3Error::PreconditionFailed("If-Match"));
            }
        }
        None => {
            if date(h, "if-unmodified-since").is_some_and(|d| modified_secs > d) {
                return Err(S3Error::PreconditionFailed("If-Unmodified-Since"));
            }
        }
    }
    match text(h, "if-none-match") {
        Some(m) => {
            if etag_matches(m, etag) {
                return Err(S3Error::NotModified);
            }
        }
        None => {
            if date(h, "if-modified-since").is_some_and(|d| modified_secs <= d) {
                return Err(S3Error::NotModified);
            }
        }
    }
    Ok(())
}

/// Evaluates `x-amz-copy-source-if-*` against the source object; any
/// failure is 412 PreconditionFailed.
pub fn check_copy_source(h: &HeaderMap, etag: &str, modified_secs: u64) -> S3Result<()> {
    let if_match = text(h, "x-amz-copy-source-if-match");
    if let Some(m) = if_match {
        if !etag_matches(m, etag) {
            return Err(S3Error::PreconditionFailed("x-amz-copy-source-If-Match"));
        }
    } else if date(h, "x-amz-copy-source-if-unmodified-since").is_some_and(|d| modified_secs > d) {
        return Err(S3Error::PreconditionFailed(
            "x-amz-copy-source-If-Unmodified-Since",
        ));
    }
    let none_match = text(h, "x-amz-copy-source-if-none-match");
    if let Some(m) = none_match {
        if etag_matches(m, etag) {
            return Err(S3Error::PreconditionFailed(
                "x-amz-copy-source-If-None-Match",
            ));
        }
    } else if date(h, "x-amz-copy-source-if-modified-since").is_some_and(|d| modified_secs <= d) {
        return Err(S3Error::PreconditionFailed(
            "x-amz-copy-source-If-Modified-Since",
        ));
    }
    Ok(())
}

/// The precondition of a conditional write (`If-None-Match: *` or
/// `If-Match: <etag>` on PutObject and CompleteMultipartUpload).
/// (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html>)
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WritePrecondition {
    /// `If-None-Match: *`: the key must have no current version.
    IfNoneMatch,
    /// `If-Match`: the current version's entity tag (unquoted).
    IfMatch(String),
    /// `If-None-Match: <etag>`: the current version must not have it (AWS
    /// answers 501; Ceph RGW and HTTP give it this meaning).
    IfNoneMatchEtag(String),
}

/// The write precondition `h` names, if any.
pub fn write_precondition(h: &HeaderMap) -> S3Result<Option<WritePrecondition>> {
    match (text(h, "if-none-match"), text(h, "if-match")) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(S3Error::NotImplemented(
            "If-Match and If-None-Match together are not supported on writes".into(),
        )),
        (Some(v), None) if v.trim() == "*" => Ok(Some(WritePrecondition::IfNoneMatch)),
        (Some(v), None) => Ok(Some(WritePrecondition::IfNoneMatchEtag(etag_of(v)))),
        (None, Some(v)) => Ok(Some(WritePrecondition::IfMatch(etag_of(v)))),
    }
}

/// An entity tag as a condition names it: unquoted, without `W/`; `*`
/// stays `*`.
fn etag_of(v: &str) -> String {
    v.trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_string()
}

/// What a delete requires of the version it removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletePrecondition {
    /// The entity tag it must have (unquoted), or `*`: it must exist.
    pub if_match: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
    /// Its modification time, in seconds since the epoch.
    pub last_modified_secs: Option<u64>,
}

/// The preconditions of a DeleteObject: `If-Match` (an ETag or `*`),
/// `x-amz-if-match-size` and `x-amz-if-match-last-modified-time` (S3 has
/// the last two on directory buckets; Granary honours them on every
/// bucket).
/// (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html>)
pub fn delete_precondition(h: &HeaderMap) -> S3Result<Option<DeletePrecondition>> {
    let size = text(h, "x-amz-if-match-size")
        .map(|v| {
            v.trim().parse::<u64>().map_err(|_| {
                S3Error::InvalidArgument(
                    "x-amz-if-match-size is not a size in bytes".into(),
                    Some(("x-amz-if-match-size".into(), v.into())),
                )
            })
        })
        .transpose()?;
    let last_modified_secs = text(h, "x-amz-if-match-last-modified-time")
        .map(|v| {
            httpdate::parse_http_date(v.trim())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
                .ok_or_else(|| {
                    S3Error::InvalidArgument(
                        "x-amz-if-match-last-modified-time is not an HTTP date".into(),
                        Some(("x-amz-if-match-last-modified-time".into(), v.into())),
                    )
                })
        })
        .transpose()?;
    Ok(precondition_of(
        text(h, "if-match").map(etag_of),
        size,
        last_modified_secs,
    ))
}

/// The precondition of one DeleteObjects entry: its `ETag`, `Size` and
/// `LastModifiedTime` (ISO 8601) elements.
pub fn entry_precondition(
    etag: Option<&str>,
    size: Option<u64>,
    last_modified: Option<&str>,
) -> S3Result<Option<DeletePrecondition>> {
    let last_modified_secs = last_modified
        .map(|v| {
            time::OffsetDateTime::parse(v.trim(), &time::format_description::well_known::Rfc3339)
                .ok()
                .and_then(|t| u64::try_from(t.unix_timestamp()).ok())
                .ok_or_else(|| {
                    S3Error::InvalidArgument(
                        "LastModifiedTime is not a timestamp".into(),
                        Some(("LastModifiedTime".into(), v.into())),
                    )
                })
        })
        .transpose()?;
    Ok(precondition_of(etag.map(etag_of), size, last_modified_secs))
}

fn precondition_of(
    if_match: Option<String>,
    size: Option<u64>,
    last_modified_secs: Option<u64>,
) -> Option<DeletePrecondition> {
    (if_match.is_some() || size.is_some() || last_modified_secs.is_some()).then_some(
        DeletePrecondition {
            if_match,
            size,
            last_modified_secs,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    const T: u64 = 1_700_000_000;

    fn at(secs: u64) -> String {
        httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
    }

    #[test]
    fn rfc_order() {
        assert!(check_read(&h(&[("if-match", "\"abc\"")]), "abc", T).is_ok());
        assert!(matches!(
            check_read(&h(&[("if-match", "\"x\"")]), "abc", T),
            Err(S3Error::PreconditionFailed(_))
        ));
        assert!(check_read(&h(&[("if-match", "*")]), "abc", T).is_ok());
        assert!(matches!(
            check_read(&h(&[("if-none-match", "\"abc\"")]), "abc", T),
            Err(S3Error::NotModified)
        ));
        assert!(matches!(
            check_read(&h(&[("if-modified-since", &at(T))]), "abc", T),
            Err(S3Error::NotModified)
        ));
        assert!(check_read(&h(&[("if-modified-since", &at(T - 1))]), "abc", T).is_ok());
        assert!(matches!(
            check_read(&h(&[("if-unmodified-since", &at(T - 1))]), "abc", T),
            Err(S3Error::PreconditionFailed(_))
        ));
        // If-Match true wins over a failing If-Unmodified-Since.
        assert!(check_read(
            &h(&[("if-match", "\"abc\""), ("if-unmodified-since", &at(T - 1))]),
            "abc",
            T
        )
        .is_ok());
        // If-None-Match false (matches) with If-Modified-Since true: 304.
        assert!(matches!(
            check_read(
                &h(&[
                    ("if-none-match", "\"abc\""),
                    ("if-modified-since", &at(T - 10))
                ]),
                "abc",
                T
            ),
            Err(S3Error::NotModified)
        ));
        assert!(matches!(
            check_copy_source(
                &h(&[("x-amz-copy-source-if-none-match", "\"abc\"")]),
                "abc",
                T
            ),
            Err(S3Error::PreconditionFailed(_))
        ));
    }
}
