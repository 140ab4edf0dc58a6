//! Object metadata carried in HTTP headers: what a write stores, what a
//! read returns, and the write options Granary refuses rather than ignores.

use http::{HeaderMap, HeaderName, HeaderValue};
use placement::{ObjectMeta, ObjectRecord, Tier};

use crate::checksum::ChecksumAlgorithm;
use s3_wire::error::{S3Error, S3Result};

/// Most bytes of user metadata (names + values) per object.
pub const MAX_USER_METADATA_BYTES: usize = 2048;
/// The storage class every object has today.
pub const STANDARD: &str = "STANDARD";
/// Representation headers stored with an object and returned on reads.
const STORED_HEADERS: [&str; 5] = [
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
];

/// Now, in nanoseconds since the epoch, on the store's clock (the one
/// modification times are taken from).
pub fn now_ns() -> u64 {
    placement::clock::now_ns()
}

/// ISO 8601 with milliseconds, as S3's XML uses.
pub fn iso8601(ns: u64) -> String {
    let mut out = String::with_capacity(24);
    push_iso8601(&mut out, ns);
    out
}

/// Appends [`iso8601`] of `ns` to `out`. Listings write one per key, so
/// this is arithmetic (days to civil date, after H. Hinnant) rather than a
/// general formatter, which cost a twentieth of a listing's server time.
pub fn push_iso8601(out: &mut String, ns: u64) {
    let secs = ns / 1_000_000_000;
    let millis = (ns / 1_000_000 % 1000) as u32;
    let (days, day_secs) = (secs / 86_400, (secs % 86_400) as u32);
    // Days since 0000-03-01, in 400-year eras of 146,097 days.
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400 + u64::from(month <= 2)) as u32;
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, digits: usize, mut v: u32| {
        for i in (at..at + digits).rev() {
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, day_secs / 3600);
    put(14, 2, day_secs / 60 % 60);
    put(17, 2, day_secs % 60);
    put(20, 3, millis);
    out.push_str(std::str::from_utf8(&b).expect("ASCII digits"));
}

/// RFC 9110 HTTP date.
pub fn http_date(ns: u64) -> String {
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns))
}

/// An ETag as sent on the wire: in double quotes.
pub fn quoted(etag: &str) -> String {
    format!("\"{etag}\"")
}

fn text<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Refuses write options that are not supported yet (instead of silently
/// ignoring them): ACLs other than `private`, grants, server-side
/// encryption, object lock, tagging.
pub fn reject_unsupported(h: &HeaderMap) -> S3Result<()> {
    if let Some(acl) = h.get("x-amz-acl") {
        let acl = acl.to_str().unwrap_or("");
        if acl != "private" && acl != "bucket-owner-full-control" {
            return Err(S3Error::NotImplemented(format!(
                "Canned ACL '{acl}' is not supported; objects and buckets are private"
            )));
        }
    }
    if h.contains_key("x-amz-write-offset-bytes") {
        // An append (S3 Express, Mountpoint): taking it as a PUT would
        // replace the object with the appended bytes alone.
        return Err(S3Error::NotImplemented(
            "Appending to an object (x-amz-write-offset-bytes) is not supported; the object is unchanged".into(),
        ));
    }
    for name in h.keys() {
        let n = name.as_str();
        if n.starts_with("x-amz-grant-")
            || n.starts_with("x-amz-server-side-encryption")
            || n.starts_with("x-amz-object-lock-")
            || n == "x-amz-website-redirect-location"
        {
            return Err(S3Error::NotImplemented(format!(
                "The {n} header is not supported yet"
            )));
        }
    }
    Ok(())
}

/// The tier a storage class maps to; `None` for a class Granary does not
/// store.
pub fn class_tier(class: &str) -> Option<Tier> {
    match class {
        STANDARD => Some(Tier::Hot),
        // The classes a lifecycle transition may name are the cold pool's.
        // GLACIER and DEEP_ARCHIVE objects are read directly, without a
        // RestoreObject step.
        c if lifecycle::config::TRANSITION_CLASSES.contains(&c) => Some(Tier::Cold),
        _ => None,
    }
}

/// The storage class a write asks for (`x-amz-storage-class`, STANDARD when
/// absent) and its tier. A class Granary does not store, or a cold class on
/// a server without a cold pool, is InvalidStorageClass.
pub fn requested_class(h: &HeaderMap, has_cold_pool: bool) -> S3Result<(String, Tier)> {
    let class = text(h, "x-amz-storage-class").unwrap_or(STANDARD);
    match class_tier(class) {
        Some(Tier::Cold) if !has_cold_pool => Err(S3Error::InvalidStorageClass),
        Some(tier) => Ok((class.to_string(), tier)),
        None => Err(S3Error::InvalidStorageClass),
    }
}

/// Descriptive metadata of a write from its headers (ETag and checksum are
/// filled in by the caller).
pub fn object_meta(h: &HeaderMap) -> S3Result<ObjectMeta> {
    let mut meta = ObjectMeta {
        content_type: Some(
            text(h, "content-type")
                .unwrap_or("binary/octet-stream")
                .to_string(),
        ),
        ..ObjectMeta::default()
    };
    // Header values are bytes, not text: kept one char per byte, they go
    // back exactly as they came (UTF-8 and RFC 2047 encoded words alike;
    // nothing is decoded).
    meta.byte_values = true;
    for name in STORED_HEADERS {
        let Some(v) = h.get(name) else { continue };
        let mut v = header_bytes(v.as_bytes());
        if name == "content-encoding" {
            v = v
                .split(',')
                .map(str::trim)
                .filter(|e| !e.eq_ignore_ascii_case("aws-chunked") && !e.is_empty())
                .collect::<Vec<_>>()
                .join(",");
            if v.is_empty() {
                continue;
            }
        }
        meta.headers.push((name.to_string(), v));
    }
    let mut size = 0;
    for (name, value) in h {
        if let Some(user) = name.as_str().strip_prefix("x-amz-meta-") {
            size += user.len() + value.len();
            let value = header_bytes(value.as_bytes());
            meta.user.push((user.to_string(), value));
        }
    }
    if size > MAX_USER_METADATA_BYTES {
        return Err(S3Error::MetadataTooLarge);
    }
    meta.storage_class = Some(STANDARD.to_string());
    Ok(meta)
}

/// Appends header `name` when it has a value.
fn append(out: &mut HeaderMap, name: &str, value: Option<HeaderValue>) {
    if let (Ok(n), Some(v)) = (HeaderName::try_from(name), value) {
        out.append(n, v);
    }
}

/// A header value's bytes, one char per byte.
fn header_bytes(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// The header value a stored one goes back as: its bytes, or (records
/// from before `byte_values`) its UTF-8 text.
fn stored_value(v: &str, byte_values: bool) -> Option<HeaderValue> {
    match byte_values {
        true => v
            .chars()
            .map(|c| u8::try_from(u32::from(c)).ok())
            .collect::<Option<Vec<u8>>>()
            .and_then(|b| HeaderValue::from_bytes(&b).ok()),
        false => HeaderValue::from_str(v)
            .or_else(|_| HeaderValue::from_bytes(v.as_bytes()))
            .ok(),
    }
}

/// Whether a version is of an archive class (GLACIER, DEEP_ARCHIVE): S3
/// reads those only after a RestoreObject; Granary reads them in place.
pub fn is_archived(meta: &ObjectMeta) -> bool {
    is_archive_class(meta.storage_class.as_deref())
}

/// Whether `class` is one of the archive classes (see [`is_archived`]).
pub fn is_archive_class(class: Option<&str>) -> bool {
    matches!(class, Some("GLACIER" | "DEEP_ARCHIVE"))
}

/// How long an archived version that was never restored is reported as
/// restored for, from now: it is always readable.
const RESTORED_FOR_NS: u64 = 86_400_000_000_000;

/// Until when an archived version is reported as restored: the expiry its
/// last RestoreObject set while it lies ahead, else a day from now.
pub fn restore_expiry_ns(meta: &ObjectMeta) -> u64 {
    let now = now_ns();
    meta.restore_expiry_ns
        .filter(|t| *t > now)
        .unwrap_or(now + RESTORED_FOR_NS)
}

/// Headers describing a stored object on GET/HEAD.
pub fn object_headers(out: &mut HeaderMap, obj: &ObjectRecord, checksum_mode: bool) {
    for (n, v) in [
        ("etag", quoted(&obj.meta.etag)),
        ("last-modified", http_date(obj.mtime_ns)),
        ("accept-ranges", "bytes".to_string()),
    ] {
        append(out, n, stored_value(&v, false));
    }
    if let Some(ct) = &obj.meta.content_type {
        append(out, "content-type", stored_value(ct, obj.meta.byte_values));
    }
    for (n, v) in &obj.meta.headers {
        append(out, n, stored_value(v, obj.meta.byte_values));
    }
    for (n, v) in &obj.meta.user {
        append(
            out,
            &format!("x-amz-meta-{n}"),
            stored_value(v, obj.meta.byte_values),
        );
    }
    let mut put = |name: &str, value: &str| append(out, name, stored_value(value, false));
    if let Some(class) = obj.meta.storage_class.as_deref().filter(|c| *c != STANDARD) {
        put("x-amz-storage-class", class);
    }
    if is_archived(&obj.meta) {
        // Read in place: always restored (so clients that check this
        // header before a GET, as `aws s3 cp` does, go ahead).
        let expiry = http_date(restore_expiry_ns(&obj.meta));
        put(
            "x-amz-restore",
            &format!("ongoing-request=\"false\", expiry-date=\"{expiry}\""),
        );
    }
    if checksum_mode {
        if let Some(c) = &obj.meta.checksum {
            if let Some(alg) = ChecksumAlgorithm::from_name(&c.algorithm) {
                put(alg.header(), &c.value);
                put("x-amz-checksum-type", &c.kind);
            }
        }
    }
}

/// The query parameters of a GET or HEAD that override a response header.
pub const OVERRIDES: [(&str, &str); 6] = [
    ("response-content-type", "content-type"),
    ("response-content-language", "content-language"),
    ("response-expires", "expires"),
    ("response-cache-control", "cache-control"),
    ("response-content-disposition", "content-disposition"),
    ("response-content-encoding", "content-encoding"),
];

/// The response headers a GET's or HEAD's `response-*` parameters set.
/// A header carries ISO-8859-1, so a value is sent as those bytes; one
/// with a character outside it is refused as S3 refuses it (400
/// InvalidArgument, "Header value cannot be represented using
/// ISO-8859-1."), and so is one with a control character, which no header
/// may carry. Refused, never dropped: the client asked for that header.
pub fn overrides(query: &[(String, String)]) -> S3Result<Vec<(&'static str, HeaderValue)>> {
    let mut out = Vec::new();
    for (param, header) in OVERRIDES {
        let Some((_, v)) = query.iter().find(|(k, _)| k == param) else {
            continue;
        };
        let refuse =
            |why: &str| S3Error::InvalidArgument(why.into(), Some((param.into(), v.clone())));
        let latin1: Vec<u8> = v
            .chars()
            .map(|c| u8::try_from(u32::from(c)))
            .collect::<Result<_, _>>()
            .map_err(|_| refuse("Header value cannot be represented using ISO-8859-1."))?;
        // C0 controls and DEL fail `from_bytes`; C1 controls (0x80-0x9F)
        // are refused with them.
        let value = Some(&latin1)
            .filter(|b| !b.iter().any(|c| (0x80..0xa0).contains(c)))
            .and_then(|b| HeaderValue::from_bytes(b).ok())
            .ok_or_else(|| refuse("Header value contains a character a header cannot carry."))?;
        out.push((header, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::format_description;
    use time::OffsetDateTime;

    #[test]
    fn dates() {
        assert_eq!(
            iso8601(1_255_369_830_000_000_000),
            "2009-10-12T17:50:30.000Z"
        );
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(u64::MAX), "2554-07-21T23:34:33.709Z");
        assert_eq!(
            http_date(1_255_369_830_000_000_000),
            "Mon, 12 Oct 2009 17:50:30 GMT"
        );
    }

    #[test]
    fn overrides_are_sent_as_latin1_or_refused() {
        let q = |v: &str| vec![("response-content-disposition".to_string(), v.to_string())];
        let got = overrides(&q("attachment; filename=\"na\u{ef}ve.txt\"")).unwrap();
        assert_eq!(got[0].0, "content-disposition");
        assert_eq!(
            got[0].1.as_bytes(),
            b"attachment; filename=\"na\xefve.txt\""
        );
        for bad in [
            "a \u{2013} dash",
            "line\nbreak",
            "nul\0",
            "del\u{7f}",
            "c1\u{85}",
        ] {
            match overrides(&q(bad)) {
                Err(S3Error::InvalidArgument(_, Some((name, value)))) => {
                    assert_eq!(
                        (name.as_str(), value.as_str()),
                        ("response-content-disposition", bad)
                    )
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert!(overrides(&[]).unwrap().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn iso8601_matches_a_general_formatter(ns: u64) {
            let t = OffsetDateTime::from_unix_timestamp_nanos(ns as i128).unwrap();
            let general = t
                .format(format_description!(
                    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
                ))
                .unwrap();
            proptest::prop_assert_eq!(iso8601(ns), general);
        }
    }

    #[test]
    fn metadata_and_refusals() {
        let mut h = HeaderMap::new();
        h.insert("x-amz-meta-color", HeaderValue::from_static("blue"));
        h.insert(
            "content-encoding",
            HeaderValue::from_static("aws-chunked,gzip"),
        );
        let m = object_meta(&h).unwrap();
        assert_eq!(m.user, vec![("color".to_string(), "blue".to_string())]);
        assert_eq!(
            m.headers,
            vec![("content-encoding".to_string(), "gzip".to_string())]
        );
        assert_eq!(m.content_type.as_deref(), Some("binary/octet-stream"));
        h.insert(
            "x-amz-meta-big",
            HeaderValue::from_str(&"x".repeat(2100)).unwrap(),
        );
        assert!(matches!(object_meta(&h), Err(S3Error::MetadataTooLarge)));
        let mut h = HeaderMap::new();
        h.insert("x-amz-acl", HeaderValue::from_static("public-read"));
        assert!(matches!(
            reject_unsupported(&h),
            Err(S3Error::NotImplemented(_))
        ));
        h.insert("x-amz-acl", HeaderValue::from_static("private"));
        assert!(reject_unsupported(&h).is_ok());
        h.insert(
            "x-amz-server-side-encryption",
            HeaderValue::from_static("AES256"),
        );
        assert!(matches!(
            reject_unsupported(&h),
            Err(S3Error::NotImplemented(_))
        ));
        let mut h = HeaderMap::new();
        h.insert("x-amz-storage-class", HeaderValue::from_static("FANCY"));
        assert!(matches!(
            requested_class(&h, true),
            Err(S3Error::InvalidStorageClass)
        ));
        h.insert("x-amz-storage-class", HeaderValue::from_static("GLACIER"));
        assert!(matches!(
            requested_class(&h, false),
            Err(S3Error::InvalidStorageClass)
        ));
        assert!(matches!(requested_class(&h, true), Ok((_, Tier::Cold))));
    }
}
