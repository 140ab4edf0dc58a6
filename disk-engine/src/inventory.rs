//! What a disk's metadata store holds, for garbage collection: its staged
//! entries, its pieces (through a key-only index, so a scan never reads
//! the pieces' data), and every record and upload of every namespace.
//!
//! The `piece_ids` table (`piece id` → length, LE) is written and deleted
//! in the same batches as the pieces. A store from before it has no index
//! (the marker `piece-index-complete` is absent): the first listing then
//! walks the pieces themselves once, filling the index, and sets it.

use rocksdb::{Direction, IteratorMode, WriteBatch};
use uuid::Uuid;

use crate::envelope::decode_record;
use crate::error::DiskError;
use crate::keys::take_component;
use crate::meta::{
    meta_err, MetaStore, CF_PIECES, CF_PIECE_IDS, CF_RECORDS, CF_STAGED, CF_UPLOADS,
};
use crate::types::{ScannedRecord, ScannedUpload, StagedId, UploadEntry};

/// Key in the default column family present once `piece_ids` indexes
/// every piece.
const PIECE_INDEX_COMPLETE: &[u8] = b"piece-index-complete";

/// The stored value of a staged entry.
pub(crate) fn staged_value(owner: Uuid, since_ns: u64) -> Vec<u8> {
    let mut v = owner.as_bytes().to_vec();
    v.extend_from_slice(&since_ns.to_le_bytes());
    v
}

fn corrupt(what: &'static str) -> DiskError {
    DiskError::corrupt(what, "bad encoding")
}

fn uuid_of(k: &[u8], what: &'static str) -> Result<Uuid, DiskError> {
    Ok(Uuid::from_bytes(k.try_into().map_err(|_| corrupt(what))?))
}

impl MetaStore {
    /// Marks the piece index complete in a store that holds no piece (a new
    /// one): nothing to build.
    pub(crate) fn mark_empty_piece_index(&self) -> Result<(), DiskError> {
        if self
            .db
            .get(PIECE_INDEX_COMPLETE)
            .map_err(meta_err)?
            .is_some()
        {
            return Ok(());
        }
        let mut it = self.db.raw_iterator_cf(self.cf(CF_PIECES));
        it.seek_to_first();
        if !it.valid() {
            it.status().map_err(meta_err)?;
            self.db.put(PIECE_INDEX_COMPLETE, b"").map_err(meta_err)?;
        }
        Ok(())
    }

    /// Every staged entry.
    pub fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.cf(CF_STAGED), IteratorMode::Start) {
            let (k, v) = item.map_err(meta_err)?;
            if v.len() != 24 {
                return Err(corrupt("staged entry"));
            }
            out.push(StagedId {
                id: uuid_of(&k, "staged entry")?,
                owner: uuid_of(&v[..16], "staged entry")?,
                since_ns: u64::from_le_bytes(v[16..24].try_into().expect("8 bytes")),
            });
        }
        Ok(out)
    }

    /// Piece ids after `after` with their lengths, at most `max`.
    pub fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError> {
        if self
            .db
            .get(PIECE_INDEX_COMPLETE)
            .map_err(meta_err)?
            .is_none()
        {
            self.build_piece_index()?;
        }
        let start = after.map(|a| {
            let mut k = a.as_bytes().to_vec();
            k.push(0);
            k
        });
        let mode = match &start {
            Some(k) => IteratorMode::From(k, Direction::Forward),
            None => IteratorMode::Start,
        };
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.cf(CF_PIECE_IDS), mode) {
            if out.len() == max {
                break;
            }
            let (k, v) = item.map_err(meta_err)?;
            let len = v
                .as_ref()
                .try_into()
                .map(u64::from_le_bytes)
                .map_err(|_| corrupt("piece index entry"))?;
            out.push((uuid_of(&k, "piece index entry")?, len));
        }
        Ok(out)
    }

    /// Indexes every piece of a store written before the index existed
    /// (reading each piece once), then marks the index complete.
    fn build_piece_index(&self) -> Result<(), DiskError> {
        let mut batch = WriteBatch::default();
        for item in self.db.iterator_cf(self.cf(CF_PIECES), IteratorMode::Start) {
            let (k, v) = item.map_err(meta_err)?;
            // crc32c, then the piece.
            let len = v.len().saturating_sub(4) as u64;
            batch.put_cf(self.cf(CF_PIECE_IDS), &k, len.to_le_bytes());
            if batch.len() >= 4096 {
                self.db
                    .write(std::mem::take(&mut batch))
                    .map_err(meta_err)?;
            }
        }
        batch.put(PIECE_INDEX_COMPLETE, b"");
        self.db.write(batch).map_err(meta_err)?;
        Ok(())
    }

    /// Records of every namespace after the raw key `after`, at most `max`;
    /// and where to continue.
    pub fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        self.scan_table(CF_RECORDS, after, max, |ns, key, _, v| {
            Ok(ScannedRecord {
                ns,
                key,
                record: decode_record(v)?,
            })
        })
    }

    /// Uploads of every namespace with their parts, after the raw key
    /// `after`, at most `max`; and where to continue.
    pub fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        self.scan_table(CF_UPLOADS, after, max, |ns, key, rest, v| {
            let upload_id = uuid_of(rest, "upload key")?;
            Ok(ScannedUpload {
                ns,
                entry: UploadEntry {
                    key,
                    upload_id,
                    body: bytes::Bytes::copy_from_slice(v),
                },
                parts: self.list_parts(upload_id, 0, usize::MAX)?.0,
            })
        })
    }

    /// One page of a table keyed by (namespace, key, suffix): each entry
    /// after the raw key `after` made into an item by `item(ns, key,
    /// suffix, value)`, at most `max`; and the raw key to continue after.
    fn scan_table<T>(
        &self,
        table: &str,
        after: Option<Vec<u8>>,
        max: usize,
        mut item: impl FnMut(Vec<u8>, Vec<u8>, &[u8], &[u8]) -> Result<T, DiskError>,
    ) -> Result<(Vec<T>, Option<Vec<u8>>), DiskError> {
        let mut it = self.db.raw_iterator_cf(self.cf(table));
        match after {
            Some(mut k) => {
                k.push(0);
                it.seek(k);
            }
            None => it.seek_to_first(),
        }
        let mut out = Vec::new();
        let mut last = None;
        while it.valid() {
            if out.len() == max {
                return Ok((out, last));
            }
            let (k, v) = (it.key().expect("valid"), it.value().expect("valid"));
            let (ns, rest) = take_component(k).ok_or_else(|| corrupt("table key"))?;
            let (key, rest) = take_component(rest).ok_or_else(|| corrupt("table key"))?;
            out.push(item(ns, key, rest, v)?);
            last = Some(k.to_vec());
            it.next();
        }
        it.status().map_err(meta_err)?;
        Ok((out, None))
    }
}
