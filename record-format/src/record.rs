//! Version records and their order: an object version (its layout, parts,
//! metadata and an opaque tier reference), what a listing shows of it, and
//! how versions of a key are ordered. Records of other kinds (placement's
//! buckets, uploads and parts) use the same encoding.
//!
//! Each is serialised as one format byte followed by MessagePack with field
//! names, so fields can be added with defaults; a new format byte gets an
//! explicit migration in [`decode`].

use bytes::Bytes;
use disk_format::types::VersionId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::SetError;
use crate::layout::{ErasureLayout, PartGeometry};

const RECORD_FORMAT_V1: u8 = 1;

/// Serialises a record with its format byte.
pub fn encode<T: Serialize>(value: &T) -> Bytes {
    let mut out = vec![RECORD_FORMAT_V1];
    rmp_serde::encode::write_named(&mut out, value).expect("records serialise");
    Bytes::from(out)
}

/// Decodes a record written by [`encode`].
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, SetError> {
    match bytes.split_first() {
        Some((&RECORD_FORMAT_V1, rest)) => {
            rmp_serde::from_slice(rest).map_err(|e| SetError::Corrupt(e.to_string()))
        }
        Some((v, _)) => Err(SetError::Corrupt(format!("unknown record format {v}"))),
        None => Err(SetError::Corrupt("empty record".into())),
    }
}

/// Where a version stands among its key's versions (the newest is the
/// greatest): by creation time, not by the stamp, which a tag update
/// renews; then by id.
pub fn version_order(mtime_ns: u64, version: VersionId) -> (u64, VersionId) {
    (mtime_ns, version)
}

/// The record key of a version: the null version or a version id.
pub fn version_key(id: Option<Uuid>) -> VersionId {
    id.map_or(VersionId::NULL, |u| VersionId(*u.as_bytes()))
}

/// A full-object or composite checksum supplied by a client (algorithm name
/// and encoded value are the gateway's business).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecksumValue {
    /// Algorithm name, e.g. "CRC32C".
    pub algorithm: String,
    /// Encoded value as the client sent it.
    pub value: String,
    /// "FULL_OBJECT" or "COMPOSITE".
    pub kind: String,
}

/// Descriptive metadata of an object, set by the gateway and returned as-is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// Entity tag (without quotes).
    pub etag: String,
    /// Content-Type.
    #[serde(default)]
    pub content_type: Option<String>,
    /// Other stored representation headers (Cache-Control, ...), lower-case.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// User metadata (name without its prefix, value).
    #[serde(default)]
    pub user: Vec<(String, String)>,
    /// Checksum of the whole object, if one was supplied or computed.
    #[serde(default)]
    pub checksum: Option<ChecksumValue>,
    /// Storage class name.
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Until when a restore (RestoreObject) of an archive-class version
    /// is reported to last, ns since the epoch. The bytes are read in
    /// place whatever it says.
    #[serde(default)]
    pub restore_expiry_ns: Option<u64>,
    /// Whether the values of `headers` and `user` hold their header's
    /// bytes one char per byte (U+0000–U+00FF), so they go back byte for
    /// byte; records written before hold UTF-8 text.
    #[serde(default)]
    pub byte_values: bool,
}

/// One part's data within an object version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRef {
    /// Part number (1 for single-part objects).
    pub number: u32,
    /// Bytes in the part.
    pub size: u64,
    /// Shard id of the part's shard files, or piece id when `packed`;
    /// `None` for an empty part.
    pub data_id: Option<Uuid>,
    /// The part is a packed small object: its shards are pieces stored
    /// with the records, not shard files.
    #[serde(default)]
    pub packed: bool,
    /// The part's entity tag (MD5 hex).
    pub etag: String,
    /// The part's own checksum, if any.
    #[serde(default)]
    pub checksum: Option<ChecksumValue>,
}

/// One version of an object: where its data is and what it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRecord {
    /// `None` for the null version.
    pub version_id: Option<Uuid>,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: u64,
    /// True for a delete marker (no data).
    #[serde(default)]
    pub delete_marker: bool,
    /// Total bytes.
    pub size: u64,
    /// Erasure layout of every part.
    pub layout: ErasureLayout,
    /// Parts in order; one for a single PUT.
    pub parts: Vec<PartRef>,
    /// True when the object was created by a multipart upload.
    #[serde(default)]
    pub multipart: bool,
    /// Descriptive metadata.
    pub meta: ObjectMeta,
    /// Small values kept in the record itself instead of shard files
    /// (cluster state in the system namespace).
    #[serde(default, with = "serde_bytes")]
    pub inline: Option<Vec<u8>>,
    /// Object tags (key, value), in the order given.
    #[serde(default)]
    pub tags: Vec<(String, String)>,
    /// Where the bytes are when they are not in this set's shards (then no
    /// part has a data id): a tier object holding the whole version.
    #[serde(default)]
    pub tiered: Option<TierRef>,
    /// The multipart upload this version completed: a repeated completion
    /// of the upload finds it and answers with it.
    #[serde(default)]
    pub upload_id: Option<Uuid>,
}

/// A version's bytes kept in a tier (the cold pool), as one tier object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierRef {
    /// The tier's name (`cold`).
    pub tier: String,
    /// The tier object's id.
    pub id: Uuid,
}

impl PartRef {
    /// The one part of an object written by a single request.
    pub fn single(size: u64, data_id: Option<Uuid>, packed: bool, meta: &ObjectMeta) -> PartRef {
        PartRef {
            number: 1,
            size,
            data_id,
            packed,
            etag: meta.etag.clone(),
            checksum: meta.checksum.clone(),
        }
    }

    /// The geometry of this part of an object written with `layout`.
    pub fn geometry(&self, layout: ErasureLayout) -> PartGeometry {
        PartGeometry {
            size: self.size,
            layout,
            packed: self.packed,
        }
    }
}

impl ObjectRecord {
    /// A new version of `parts` (its id and time are set when it is
    /// committed).
    pub fn new_version(
        layout: ErasureLayout,
        parts: Vec<PartRef>,
        multipart: bool,
        meta: ObjectMeta,
        tags: Vec<(String, String)>,
        tiered: Option<TierRef>,
    ) -> ObjectRecord {
        ObjectRecord {
            version_id: None,
            mtime_ns: 0,
            delete_marker: false,
            size: parts.iter().map(|p| p.size).sum(),
            layout,
            parts,
            multipart,
            meta,
            inline: None,
            tags,
            tiered,
            upload_id: None,
        }
    }

    /// Ids of every shard file the version owns.
    pub fn data_ids(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.parts.iter().filter_map(|p| p.data_id)
    }
}

/// What a listing shows of a version, decoded from the same record as
/// [`ObjectRecord`] while skipping everything else (parts, layout, user
/// metadata, tags), which a listing of a million keys would otherwise
/// allocate and drop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSummary {
    /// `None` for the null version.
    pub version_id: Option<Uuid>,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: u64,
    /// True for a delete marker.
    #[serde(default)]
    pub delete_marker: bool,
    /// Total bytes.
    pub size: u64,
    /// The metadata a listing shows.
    pub meta: SummaryMeta,
}

/// The part of [`ObjectMeta`] a listing shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryMeta {
    /// Entity tag (without quotes).
    pub etag: String,
    /// Checksum of the whole object, if any.
    #[serde(default)]
    pub checksum: Option<ChecksumValue>,
    /// Storage class name.
    #[serde(default)]
    pub storage_class: Option<String>,
}
