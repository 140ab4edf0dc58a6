//! Request headers with a grammar of their own: `Range`, and the
//! conditional headers of reads, copies, writes and deletes.

use s3_wire::conditions::{
    check_copy_source, check_read, delete_precondition, entry_precondition, write_precondition,
    DeletePrecondition,
};
use s3_wire::range::{self, ByteRange};
use s3_wire::xml::ObjectIdentifier;
use s3_wire::{S3Error, S3Result};

/// The canonical text of a parsed range.
fn render(r: ByteRange) -> String {
    match r {
        ByteRange::From { first, last: None } => format!("bytes={first}-"),
        ByteRange::From {
            first,
            last: Some(l),
        } => format!("bytes={first}-{l}"),
        ByteRange::Suffix(n) => format!("bytes=-{n}"),
    }
}

/// `Range` headers (after an 8-byte object size): a range parses back
/// from its canonical text, and resolves to a non-empty part of the
/// object that starts where it says, or to InvalidRange.
pub fn range(data: &[u8]) {
    let Some((size, header)) = data.split_first_chunk::<8>() else {
        return;
    };
    let size = u64::from_le_bytes(*size) >> (size[0] % 64);
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    let Some(r) = range::parse(header) else {
        return;
    };
    assert_eq!(range::parse(&render(r)), Some(r), "{header:?}");
    match r.resolve(size) {
        Ok(got) => {
            assert!(
                got.start < got.end && got.end <= size,
                "{header:?} of {size}: {got:?}"
            );
            match r {
                ByteRange::From { first, .. } => assert_eq!(got.start, first),
                ByteRange::Suffix(n) => {
                    assert_eq!(got.end, size);
                    assert_eq!(got.end - got.start, n.min(size));
                }
            }
        }
        Err(S3Error::InvalidRange(s)) => assert_eq!(s, size),
        Err(e) => panic!("{header:?}: {e}"),
    }
}

/// The precondition of one DeleteObjects entry.
pub fn entry_condition(o: &ObjectIdentifier) -> S3Result<Option<DeletePrecondition>> {
    entry_precondition(o.etag.as_deref(), o.size, o.last_modified_time.as_deref())
}

/// Conditional headers (lines `name: value`; the first line is the
/// object's ETag and modification time): every evaluation answers
/// without a panic, only with the codes S3 gives, and an object always
/// matches its own ETag.
pub fn conditions(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let (etag, modified) = first.split_once(' ').unwrap_or((first, "0"));
    let modified: u64 = modified.trim().parse().unwrap_or(0);
    let mut h = http::HeaderMap::new();
    for l in lines {
        let Some((n, v)) = l.split_once(':') else {
            continue;
        };
        let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(n.trim().as_bytes()),
            http::HeaderValue::from_str(v.trim()),
        ) else {
            continue;
        };
        h.append(n, v);
    }
    for r in [
        check_read(&h, etag, modified),
        check_copy_source(&h, etag, modified),
    ] {
        match r {
            Ok(()) | Err(S3Error::PreconditionFailed(_)) | Err(S3Error::NotModified) => {}
            Err(e) => panic!("a condition answered {e}"),
        }
    }
    let mut own = http::HeaderMap::new();
    let plain = etag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if let (true, Ok(v)) = (plain, http::HeaderValue::from_str(&format!("\"{etag}\""))) {
        own.insert("if-match", v);
        assert!(
            check_read(&own, etag, modified).is_ok(),
            "{etag:?} does not match itself"
        );
    }
    let _ = write_precondition(&h);
    let _ = delete_precondition(&h);
}
