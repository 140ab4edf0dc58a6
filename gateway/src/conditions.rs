//! Write and delete preconditions as the store takes them: s3-wire's
//! `conditions` parses the headers and DeleteObjects entries; this turns
//! what they name into placement's conditions.

use http::HeaderMap;
use placement::{DeleteCondition, WriteCondition};
use s3_wire::conditions::{
    delete_precondition, entry_precondition, write_precondition, DeletePrecondition,
    WritePrecondition,
};

use s3_wire::error::S3Result;

pub use s3_wire::conditions::{check_copy_source, check_read};

/// The precondition of a conditional write (`If-None-Match: *` or
/// `If-Match: <etag>` on PutObject and CompleteMultipartUpload).
pub fn write_condition(h: &HeaderMap) -> S3Result<Option<WriteCondition>> {
    Ok(write_precondition(h)?.map(|p| match p {
        WritePrecondition::IfNoneMatch => WriteCondition::IfNoneMatch,
        WritePrecondition::IfMatch(e) => WriteCondition::IfMatch(e),
        WritePrecondition::IfNoneMatchEtag(e) => WriteCondition::IfNoneMatchEtag(e),
    }))
}

/// The preconditions of a DeleteObject. `since_ns`: when the request
/// began.
pub fn delete_condition(h: &HeaderMap, since_ns: u64) -> S3Result<Option<DeleteCondition>> {
    Ok(delete_precondition(h)?.map(|p| with_start(p, since_ns)))
}

/// The condition of one DeleteObjects entry: its `ETag`, `Size` and
/// `LastModifiedTime` (ISO 8601) elements.
pub fn entry_condition(
    etag: Option<&str>,
    size: Option<u64>,
    last_modified: Option<&str>,
    since_ns: u64,
) -> S3Result<Option<DeleteCondition>> {
    Ok(entry_precondition(etag, size, last_modified)?.map(|p| with_start(p, since_ns)))
}

fn with_start(p: DeletePrecondition, since_ns: u64) -> DeleteCondition {
    DeleteCondition {
        if_match: p.if_match,
        size: p.size,
        last_modified_secs: p.last_modified_secs,
        since_ns,
    }
}

/// Whether a delete's condition compares an entity tag, which needs the
/// right to read the object as well (`*` does not).
pub fn reads_etag(c: &Option<DeleteCondition>) -> bool {
    c.as_ref()
        .and_then(|c| c.if_match.as_deref())
        .is_some_and(|e| e != "*")
}
