//! The arguments and answers of the `Disk` trait's calls that are more
//! than ids and bytes: what a node decodes from a gateway's call and a
//! gateway from a node's answer (MessagePack, see `rpc/wire.rs`).

use bytes::Bytes;
use uuid::Uuid;

use crate::types::{KeyRecords, PartEntry, Piece, Record};

/// How a new shard file is laid out.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct ShardOptions {
    /// Bytes per block (a multiple of 4 KiB); each block has its own checksum.
    pub block_size: u32,
    /// Which shard of the stripe this file holds (recorded in its header).
    pub shard_index: u32,
}

/// What a finished shard file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardSummary {
    /// Bytes of shard data (excluding header and trailer).
    pub len: u64,
}

/// Whether a disk can be used, and how full it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DiskHealth {
    /// The disk answers.
    Online {
        /// Size of the filesystem in bytes.
        total_bytes: u64,
        /// Bytes available for object data (the metadata reserve excluded).
        free_bytes: u64,
    },
    /// The disk does not answer or is not usable.
    Offline {
        /// Why.
        reason: String,
    },
}

/// One record write of `Disk::put_record`, with what goes into the same
/// atomic write.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordPut {
    /// The record.
    pub record: Record,
    /// This disk's piece of a packed object the record refers to.
    pub piece: Option<Piece>,
    /// Staged data ids (see [`StagedId`]) the record now refers to: their
    /// entries are removed in the same write.
    pub unstage: Vec<Uuid>,
    /// A multipart upload of the same key that this record completes: the
    /// upload and its parts are removed in the same write (also when this
    /// exact write was already stored, so a repeated completion finishes
    /// the first).
    pub completes: Option<Uuid>,
}

impl RecordPut {
    /// A write of `record` alone.
    pub fn of(record: Record) -> RecordPut {
        RecordPut {
            record,
            piece: None,
            unstage: Vec::new(),
            completes: None,
        }
    }
}

/// Result of `Disk::put_record`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PutRecordOutcome {
    /// The record is stored (or this exact write already was); `replaced`
    /// is the older write of the same version it replaced, if any (its
    /// data may now be freed).
    Stored {
        /// The previous record of the same version id, if there was one.
        replaced: Option<Record>,
        /// The parts of the upload the write completed, removed with it.
        #[serde(default)]
        completed: Vec<PartEntry>,
    },
    /// The disk already holds a newer write of this version; nothing changed.
    Superseded {
        /// The newer record that stays.
        current: Record,
    },
}

/// Where a record listing starts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ListStart {
    /// From the first key of the prefix.
    Beginning,
    /// From the first key strictly after this one.
    After(Vec<u8>),
    /// From this key (inclusive) or the first after it.
    At(Vec<u8>),
}

/// Where an upload listing starts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum UploadListStart {
    /// From the first upload of the prefix.
    Beginning,
    /// After every upload of this key.
    AfterKey(Vec<u8>),
    /// After this upload of this key (uploads of a key sort by id).
    AfterUpload(Vec<u8>, Uuid),
}

/// Arguments of `Disk::list_records`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordListOptions {
    /// Only keys starting with these bytes.
    pub prefix: Vec<u8>,
    /// Where to start.
    pub start: ListStart,
    /// At most this many keys (each with all its versions).
    pub max_keys: usize,
}

/// One page of a record listing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordPage {
    /// Keys in ascending byte order, each with all its versions.
    pub keys: Vec<KeyRecords>,
    /// True when more keys follow the last one returned.
    pub truncated: bool,
}

/// One page of a heads listing, as stored: each key (encoded, without its
/// namespace; see [`crate::heads::decode_listed_key`]) followed by its head (see
/// [`crate::heads::head_versions`]) in one buffer. A page costs one allocation,
/// and disks that hold the same writes of a key hold the same head bytes,
/// so a listing compares them without decoding.
/// A page read off the wire is checked as it is decoded (each span lies
/// in its buffer, its three offsets in order), so [`HeadPage::entry`] cannot fail on one a
/// faulty or corrupt node sent; found by the rpc_messages fuzz target.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "HeadPageFields")]
pub struct HeadPage {
    /// Every key and head of the page.
    pub bytes: Bytes,
    /// Per key in ascending order: where its encoded key starts, where its
    /// head starts (the key's end) and where the head ends, in `bytes`.
    pub spans: Vec<(u32, u32, u32)>,
    /// True when more keys follow the last one returned.
    pub truncated: bool,
}

/// A [`HeadPage`] as it arrives, before its spans are checked.
#[derive(serde::Deserialize)]
struct HeadPageFields {
    bytes: Bytes,
    spans: Vec<(u32, u32, u32)>,
    truncated: bool,
}

impl TryFrom<HeadPageFields> for HeadPage {
    type Error = String;

    fn try_from(f: HeadPageFields) -> Result<HeadPage, String> {
        let len = f.bytes.len() as u64;
        let inside = |&(a, b, c): &(u32, u32, u32)| a <= b && b <= c && u64::from(c) <= len;
        match f.spans.iter().find(|s| !inside(s)) {
            Some(s) => Err(format!(
                "a heads page's span {s:?} lies outside its {len} bytes"
            )),
            None => Ok(HeadPage {
                bytes: f.bytes,
                spans: f.spans,
                truncated: f.truncated,
            }),
        }
    }
}

impl HeadPage {
    /// The encoded key and the head of entry `i` (slices of the page's
    /// buffer, not copies).
    pub fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        let (a, b, c) = self.spans[i];
        (
            &self.bytes[a as usize..b as usize],
            &self.bytes[b as usize..c as usize],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::wire;

    #[test]
    fn a_heads_page_with_spans_outside_its_bytes_does_not_decode() {
        let good = HeadPage {
            bytes: Bytes::from_static(b"keyhead"),
            spans: vec![(0, 3, 7)],
            truncated: false,
        };
        let back: HeadPage = wire::decode(&wire::encode(&good)).unwrap();
        assert_eq!(back.entry(0), (&b"key"[..], &b"head"[..]));
        for spans in [
            vec![(0, 3, 8)],
            vec![(4, 3, 7)],
            vec![(0, 5, 4)],
            vec![(0, 3, 7), (9, 9, 9)],
        ] {
            let bad = HeadPage {
                spans: spans.clone(),
                ..good.clone()
            };
            assert!(
                wire::decode::<HeadPage>(&wire::encode(&bad)).is_err(),
                "{spans:?}"
            );
        }
    }
}
