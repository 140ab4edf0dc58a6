//! Identifiers and the generic record shapes the disk stores.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;
use uuid::Uuid;

/// Identity of one disk, written into its format record at formatting time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DiskId(pub Uuid);

impl fmt::Display for DiskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Names one shard file on a disk. All disks of a set use the same id for the
/// shards of one (object version, part); the file name is derived from it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ShardId(pub Uuid);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.simple().fmt(f)
    }
}

/// Version id of a record under one key. [`VersionId::NULL`] is the single
/// version a key has when it is overwritten in place.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct VersionId(pub [u8; 16]);

impl VersionId {
    /// The "null" version: overwriting it replaces the record in place.
    pub const NULL: VersionId = VersionId([0; 16]);
}

/// Orders writes: (modification time in nanoseconds since the epoch, a
/// UUIDv7 unique to the write). Every disk and gateway compares two stamps
/// the same way, so all pick the same winner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
    /// Unique id of the write that produced the record.
    pub write_id: Uuid,
}

impl Ord for Stamp {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.mtime_ns, self.write_id.as_bytes()).cmp(&(other.mtime_ns, other.write_id.as_bytes()))
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One version record as the disk sees it: an id, a stamp and opaque bytes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// Which version of the key this is.
    pub version: VersionId,
    /// When and by which write it was made; newer stamps win.
    pub stamp: Stamp,
    /// The layer above's encoding of the version (opaque here).
    pub body: Bytes,
    /// What a listing shows of the version, in the layer above's encoding
    /// (a few dozen bytes; empty when it has none). The disk keeps it in its
    /// heads index beside the key's other versions, so listings read that
    /// index instead of every record.
    #[serde(default)]
    pub listing: Bytes,
}

/// One disk's piece of a packed small object: the object is erasure-coded
/// into k + m pieces, each disk keeps its own under the same id, stored
/// together with the version record that refers to it. The disk maps the id
/// to wherever the piece lives (RocksDB blob files), so compaction moves
/// pieces without touching records.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Piece {
    /// The packed object's piece id (the same on every disk of the set).
    pub id: Uuid,
    /// This disk's piece.
    pub data: Bytes,
}

/// All records stored under one key, as returned by a listing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRecords {
    /// The key (opaque bytes).
    pub key: Vec<u8>,
    /// Every version stored on this disk for the key, in version-id order.
    pub records: Vec<Record>,
}

/// One version as a disk's heads index holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeadEntry {
    /// Which version of the key this is.
    pub version: VersionId,
    /// The stamp of the write of it this disk holds.
    pub stamp: Stamp,
    /// The record's [`Record::listing`] (empty if it has none).
    pub listing: Bytes,
}

/// One multipart upload's state record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UploadEntry {
    /// Key the upload will create.
    pub key: Vec<u8>,
    /// The upload's id.
    pub upload_id: Uuid,
    /// Opaque state written by the layer above.
    pub body: Bytes,
}

/// Data being written that no record refers to yet: its id is recorded
/// durably on the disk before its first byte is written, and the record
/// or part that comes to refer to it removes the entry in the same atomic
/// write. Garbage collection never frees a staged id whose owner lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StagedId {
    /// The data id (shard id or piece id).
    pub id: Uuid,
    /// The process writing it (its instance id).
    pub owner: Uuid,
    /// When it was staged, ns since the epoch (for admins; never a reason
    /// to free it).
    pub since_ns: u64,
}

/// A shard file as a disk lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardFile {
    /// Its id.
    pub id: ShardId,
    /// Its size on disk in bytes.
    pub bytes: u64,
}

/// One record as a scan of every namespace returns it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScannedRecord {
    /// Its namespace.
    pub ns: Vec<u8>,
    /// Its key.
    pub key: Vec<u8>,
    /// The record.
    pub record: Record,
}

/// One multipart upload with its parts, as a scan of every namespace
/// returns it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScannedUpload {
    /// Its namespace.
    pub ns: Vec<u8>,
    /// The upload.
    pub entry: UploadEntry,
    /// Its parts.
    pub parts: Vec<PartEntry>,
}

/// One uploaded part of a multipart upload.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartEntry {
    /// Part number (1..=10,000 in S3 terms; any u32 here).
    pub number: u32,
    /// Opaque state written by the layer above.
    pub body: Bytes,
}
