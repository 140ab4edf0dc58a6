//! Version records and multipart state in a per-disk RocksDB instance.
//!
//! Column families:
//! - `records`: `ns ‖ key ‖ version id` → record envelope
//! - `uploads`: `ns ‖ key ‖ upload id` → upload body
//! - `parts`:   `upload id ‖ part number (BE)` → part body
//! - `pieces`:  `piece id` → crc32c (LE) ‖ this disk's piece of a packed
//!   small object. Values live in RocksDB's blob files (large append-only
//!   files, garbage-collected by compaction), so a small object costs no
//!   file of its own, and a piece is written in the same batch as the
//!   record that refers to it: both or neither survive a crash.
//! - `staged`:  `data id` → owner (16 bytes) ‖ staged at (ns, LE): data
//!   being written that no record refers to yet (see `inventory.rs`);
//!   the record or part that comes to refer to it removes the entry in
//!   its own batch.
//! - `piece_ids`: `piece id` → length (LE): the pieces' ids without their
//!   data, written and deleted with them, for scans (see `inventory.rs`).
//!
//! Every write is synced to RocksDB's WAL before it returns; record writes
//! arrive in batches from the disk's committer thread (group commit), the
//! rest share syncs through RocksDB's write groups. Calls here block: the
//! disk wraps writes and scans in `spawn_blocking` and makes point reads
//! (`get_records`, `read_piece`) inline.

use std::borrow::Cow;
use std::path::Path;

use bytes::Bytes;
use parking_lot::Mutex;
use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, Options, ReadOptions, WriteBatch,
    WriteOptions, DB,
};
use uuid::Uuid;

use crate::envelope::{decode_envelope, decode_piece, decode_record, encode_piece, encode_record};
use crate::error::DiskError;
use crate::heads::Head;
use crate::keys::{ns_key, prefix_end, push_component, push_prefix, take_component};
use crate::messages::{
    HeadPage, ListStart, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut,
    UploadListStart,
};
use crate::types::{KeyRecords, PartEntry, Piece, Record, Stamp, UploadEntry, VersionId};

/// Makes a listing projection from a record body (`None`: the body has
/// none, e.g. it is not an object version).
pub type ListingFn = fn(&[u8]) -> Option<Bytes>;

pub(crate) const CF_RECORDS: &str = "records";
pub(crate) const CF_UPLOADS: &str = "uploads";
pub(crate) const CF_PARTS: &str = "parts";
pub(crate) const CF_PIECES: &str = "pieces";
const CF_HEADS: &str = "heads";
pub(crate) const CF_STAGED: &str = "staged";
pub(crate) const CF_PIECE_IDS: &str = "piece_ids";
/// Key in the default column family present once the heads index covers
/// every record (written after the index is built from the records of a
/// store that predates it, or at creation).
const HEADS_COMPLETE: &[u8] = b"heads-complete";
/// Heads written per batch while the index is built at open.
const HEADS_BUILD_BATCH: usize = 8192;
/// Target size of one blob file of pieces.
const BLOB_FILE_BYTES: u64 = 256 << 20;
/// Memtable size of the pieces column family: each flush starts a blob file.
const PIECES_WRITE_BUFFER_BYTES: usize = 64 << 20;
/// Share of the oldest blob files whose live pieces a compaction relocates
/// in normal operation; a requested collection uses all of them.
const BLOB_GC_AGE_CUTOFF: &str = "0.25";
/// Number of stripes in the per-key lock table that makes read-modify-write
/// of one key atomic on this disk.
const KEY_LOCK_STRIPES: usize = 64;
/// WAL size at which RocksDB forces flushes of the tables holding its oldest
/// part. Pieces go through the WAL, so at 64 MiB a stream of 64 KiB PUTs
/// forced a flush of the (nearly empty) record table every few seconds and
/// PUT p99 rose to ~860 ms; at 256 MiB it is ~140 ms (benches/RESULTS.md).
/// It bounds what a restart replays.
const MAX_WAL_BYTES: u64 = 256 << 20;
/// Block size of the record, upload and part tables.
const RECORD_BLOCK_BYTES: usize = 32 << 10;
/// Block cache of one disk's record, upload and part tables.
const META_CACHE_BYTES: usize = 64 << 20;
/// Memtable size per column family; records are small, so this stays modest
/// to keep the server's memory bounded.
const WRITE_BUFFER_BYTES: usize = 16 << 20;

pub(crate) struct MetaStore {
    pub(crate) db: DB,
    locks: Vec<Mutex<()>>,
    /// Makes listing projections for records written without one.
    listing_of: Option<ListingFn>,
}

/// A RocksDB error as the disk's: `Full` when the filesystem is,
/// `Meta` otherwise.
pub(crate) fn meta_err(e: rocksdb::Error) -> DiskError {
    let text = e.into_string();
    if text.contains("No space left") || text.contains("NoSpace") {
        DiskError::Full
    } else {
        DiskError::Meta(text)
    }
}

/// RocksDB's report of a file that does not exist (a pack file deleted
/// behind its back).
fn missing_file(e: &rocksdb::Error) -> bool {
    matches!(
        e.kind(),
        rocksdb::ErrorKind::IOError | rocksdb::ErrorKind::NotFound
    ) && e.as_ref().contains("No such file")
}

fn lock_stripe(k: &[u8]) -> usize {
    crc_fast::crc32_iscsi(k) as usize % KEY_LOCK_STRIPES
}

/// One record write of a group commit.
pub(crate) struct RecordWrite {
    pub ns: Vec<u8>,
    pub key: Vec<u8>,
    pub put: RecordPut,
}

/// What a group commit writes besides its records.
#[derive(Default)]
pub(crate) struct SideWrites {
    /// Pieces of objects replaced or deleted earlier.
    pub dropped_pieces: Vec<Uuid>,
    /// Staged entries to add: (data id, value).
    pub stage: Vec<(Uuid, Vec<u8>)>,
    /// Staged entries to remove.
    pub unstage: Vec<Uuid>,
}

impl SideWrites {
    pub fn len(&self) -> usize {
        self.dropped_pieces.len() + self.stage.len() + self.unstage.len()
    }

    pub fn clear(&mut self) {
        self.dropped_pieces.clear();
        self.stage.clear();
        self.unstage.clear();
    }
}

fn record_key(ns: &[u8], key: &[u8], version: VersionId) -> Vec<u8> {
    let mut k = ns_key(ns, key);
    k.extend_from_slice(&version.0);
    k
}

/// The encoded (namespace, key) of a record key: the key of its head, and
/// what its lock stripe is chosen by (every version of a key shares one
/// head, so they share a stripe).
fn key_part(record_key: &[u8]) -> &[u8] {
    &record_key[..record_key.len() - 16]
}

fn part_key(upload_id: Uuid, number: u32) -> Vec<u8> {
    let mut k = upload_id.as_bytes().to_vec();
    k.extend_from_slice(&number.to_be_bytes());
    k
}

fn sync_writes() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    wo
}

impl MetaStore {
    pub fn open(path: &Path, listing_of: Option<ListingFn>) -> Result<MetaStore, DiskError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_keep_log_file_num(4);
        opts.set_max_open_files(512);
        opts.set_max_total_wal_size(MAX_WAL_BYTES);
        // The default 4 MiB MANIFEST preallocation is wasted on a store of
        // small records.
        opts.set_manifest_preallocation_size(1 << 20);
        // Records are listed in long scans: 32 KiB blocks (not 4 KiB) cut
        // the per-block cost of a listing by a third (measured in
        // benches/RESULTS.md); one cache serves the disk's record, upload and
        // part tables.
        let mut tables = rocksdb::BlockBasedOptions::default();
        tables.set_block_size(RECORD_BLOCK_BYTES);
        // Point lookups of one version (every record write reads the one it
        // replaces) skip tables that do not hold the key.
        tables.set_bloom_filter(10.0, false);
        tables.set_block_cache(&rocksdb::Cache::new_hyper_clock_cache(META_CACHE_BYTES, 0));
        let cf = |name: &str| {
            let mut o = Options::default();
            o.set_write_buffer_size(WRITE_BUFFER_BYTES);
            o.set_max_write_buffer_number(2);
            // Heads are scanned whole by every listing and hold little that
            // compresses (ids, stamps, MD5s): decompressing them cost more
            // than reading them plain (benches/RESULTS.md).
            o.set_compression_type(match name {
                CF_HEADS => rocksdb::DBCompressionType::None,
                _ => rocksdb::DBCompressionType::Lz4,
            });
            if name == CF_HEADS {
                // Every sorted run a scan merges costs each step of it: heads
                // are small, so they are compacted out of level 0 early.
                o.set_level_zero_file_num_compaction_trigger(2);
            }
            o.set_block_based_table_factory(&tables);
            ColumnFamilyDescriptor::new(name, o)
        };
        let mut pieces = Options::default();
        pieces.set_write_buffer_size(PIECES_WRITE_BUFFER_BYTES);
        pieces.set_max_write_buffer_number(2);
        pieces.set_enable_blob_files(true);
        pieces.set_min_blob_size(0);
        pieces.set_blob_file_size(BLOB_FILE_BYTES);
        pieces.set_enable_blob_gc(true);
        pieces.set_blob_gc_age_cutoff(BLOB_GC_AGE_CUTOFF.parse().expect("a fraction"));
        pieces.set_blob_gc_force_threshold(0.5);
        let db = DB::open_cf_descriptors(
            &opts,
            path,
            vec![
                cf(CF_RECORDS),
                cf(CF_UPLOADS),
                cf(CF_PARTS),
                ColumnFamilyDescriptor::new(CF_PIECES, pieces),
                cf(CF_HEADS),
                cf(CF_STAGED),
                cf(CF_PIECE_IDS),
            ],
        )
        .map_err(meta_err)?;
        let store = MetaStore {
            db,
            locks: (0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            listing_of,
        };
        store.ensure_heads()?;
        store.mark_empty_piece_index()?;
        Ok(store)
    }

    /// Builds the heads index from the records when it is not known to be
    /// complete: a store written before the index existed, or a build cut
    /// short (whose partial index is dropped first). Runs before the store
    /// serves anything.
    fn ensure_heads(&self) -> Result<(), DiskError> {
        if self.db.get(HEADS_COMPLETE).map_err(meta_err)?.is_some() {
            return Ok(());
        }
        let heads = self.cf(CF_HEADS);
        let mut batch = WriteBatch::default();
        for item in self.db.iterator_cf(heads, IteratorMode::Start) {
            batch.delete_cf(heads, item.map_err(meta_err)?.0);
        }
        let mut records = self.db.raw_iterator_cf(self.cf(CF_RECORDS));
        records.seek_to_first();
        let mut current: Option<(Vec<u8>, Head)> = None;
        let mut built = 0usize;
        while records.valid() {
            let (k, v) = (records.key().unwrap(), records.value().unwrap());
            let (record, listing, body) = decode_envelope(v)?;
            // A head needs no body: it is copied only to project one.
            let record = match listing {
                [] => self
                    .projected(Cow::Owned(Record {
                        body: Bytes::copy_from_slice(body),
                        ..record
                    }))
                    .into_owned(),
                listing => Record {
                    listing: Bytes::copy_from_slice(listing),
                    ..record
                },
            };
            let nk = key_part(k);
            match &mut current {
                Some((key, head)) if key.as_slice() == nk => head.put(&record, true),
                _ => {
                    if let Some((key, head)) = current.take() {
                        batch.put_cf(heads, key, head.encode());
                        built += 1;
                        if built.is_multiple_of(HEADS_BUILD_BATCH) {
                            self.db
                                .write(std::mem::take(&mut batch))
                                .map_err(meta_err)?;
                        }
                    }
                    current = Some((nk.to_vec(), Head::of([&record])));
                }
            }
            records.next();
        }
        records.status().map_err(meta_err)?;
        if let Some((key, head)) = current {
            batch.put_cf(heads, key, head.encode());
        }
        // The synced write of the marker makes every earlier batch durable
        // too (one WAL, written in order).
        batch.put(HEADS_COMPLETE, []);
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        // The build left many small overlapping tables; listings merge fewer
        // after one compaction.
        self.db
            .compact_range_cf(heads, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    pub(crate) fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family exists")
    }

    fn lock_for(&self, k: &[u8]) -> parking_lot::MutexGuard<'_, ()> {
        self.locks[lock_stripe(k)].lock()
    }

    /// Locks every stripe the record keys `keys` touch, in ascending order and each once:
    /// batches cannot deadlock with each other, and single-key writers hold
    /// one stripe only.
    fn lock_all(&self, keys: &[Vec<u8>]) -> Vec<parking_lot::MutexGuard<'_, ()>> {
        self.lock_stripes(keys.iter().map(|k| lock_stripe(key_part(k))).collect())
    }

    /// Locks `stripes` in ascending order, each once.
    fn lock_stripes(&self, mut stripes: Vec<usize>) -> Vec<parking_lot::MutexGuard<'_, ()>> {
        stripes.sort_unstable();
        stripes.dedup();
        stripes.iter().map(|&i| self.locks[i].lock()).collect()
    }

    /// Every version stored for one key.
    pub fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        self.records_under(&ns_key(ns, key))
    }

    /// Every version stored under an encoded (namespace, key).
    fn records_under(&self, prefix: &[u8]) -> Result<Vec<Record>, DiskError> {
        let mut out = Vec::new();
        // Bounded to the key's versions, so the scan never steps into the
        // next key (or its tables) to find out it is done.
        let mut ro = ReadOptions::default();
        if let Some(end) = prefix_end(prefix) {
            ro.set_iterate_upper_bound(end);
        }
        for item in self.db.iterator_cf_opt(
            self.cf(CF_RECORDS),
            ro,
            IteratorMode::From(prefix, Direction::Forward),
        ) {
            let (k, v) = item.map_err(meta_err)?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push(decode_record(&v)?);
        }
        Ok(out)
    }

    /// Stores `record` unless this disk already holds a newer write of the
    /// same version (then nothing changes and the newer one is returned).
    ///
    /// With a piece, the piece is stored in the same atomic batch. (The
    /// disk sends its writes through [`crate::commit::Committer`], which
    /// calls [`Self::commit_batch`]; this form is for tests.)
    #[cfg(test)]
    pub fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        record: &Record,
        piece: Option<&Piece>,
    ) -> Result<PutRecordOutcome, DiskError> {
        let w = RecordWrite {
            ns: ns.to_vec(),
            key: key.to_vec(),
            put: RecordPut {
                piece: piece.cloned(),
                ..RecordPut::of(record.clone())
            },
        };
        self.put_records(std::slice::from_ref(&w))?.remove(0)
    }

    /// [`Self::put_record`] for many writes with one synced RocksDB write
    /// (group commit). Writes apply in order, so a later write of the same
    /// version sees an earlier one of the batch as the stored record. A
    /// write whose stored record cannot be read fails alone; the outer error
    /// is the batch's own write failing, which fails every write in it.
    #[cfg(test)]
    pub fn put_records(
        &self,
        writes: &[RecordWrite],
    ) -> Result<Vec<Result<PutRecordOutcome, DiskError>>, DiskError> {
        self.commit_batch(writes, &SideWrites::default())
    }

    /// Stores many record writes with one synced RocksDB write (group
    /// commit), as [`Self::put_record`] describes each, with everything
    /// else each write carries (staged entries it removes, the upload it
    /// completes) and the batch's side writes (pieces of objects replaced
    /// or deleted earlier, staged entries), so none of them costs a write
    /// of its own.
    pub fn commit_batch(
        &self,
        writes: &[RecordWrite],
        side: &SideWrites,
    ) -> Result<Vec<Result<PutRecordOutcome, DiskError>>, DiskError> {
        let keys: Vec<Vec<u8>> = writes
            .iter()
            .map(|w| record_key(&w.ns, &w.key, w.put.record.version))
            .collect();
        // Record keys and the uploads completed, in one ordered locking.
        let mut stripes: Vec<usize> = keys.iter().map(|k| lock_stripe(key_part(k))).collect();
        stripes.extend(
            writes
                .iter()
                .filter_map(|w| w.put.completes)
                .map(|u| lock_stripe(u.as_bytes())),
        );
        let _guards = self.lock_stripes(stripes);
        let cf = self.cf(CF_RECORDS);
        let mut batch = WriteBatch::default();
        let mut written: std::collections::HashMap<&[u8], &Record> = Default::default();
        let mut heads: std::collections::HashMap<&[u8], Head> = Default::default();
        let mut completed_here: std::collections::HashSet<Uuid> = Default::default();
        let mut out = Vec::with_capacity(writes.len());
        for (w, k) in writes.iter().zip(&keys) {
            let record = &w.put.record;
            let previous = match written.get(k.as_slice()) {
                Some(r) => Some((*r).clone()),
                None => match self.stored_record(k) {
                    Ok(p) => p,
                    Err(e) => {
                        out.push(Err(e));
                        continue;
                    }
                },
            };
            let already = match &previous {
                Some(p) if p.stamp > record.stamp => {
                    out.push(Ok(PutRecordOutcome::Superseded { current: p.clone() }));
                    continue;
                }
                Some(p) => p.stamp == record.stamp,
                None => false,
            };
            let completed = match w.put.completes {
                Some(u) if completed_here.insert(u) => {
                    match self.drop_upload_into(&mut batch, &w.ns, &w.key, u) {
                        Ok(parts) => parts.unwrap_or_default(),
                        Err(e) => {
                            out.push(Err(e));
                            continue;
                        }
                    }
                }
                _ => Vec::new(),
            };
            for id in &w.put.unstage {
                batch.delete_cf(self.cf(CF_STAGED), id.as_bytes());
            }
            if already {
                // This exact write is stored: what it carries still applies.
                out.push(Ok(PutRecordOutcome::Stored {
                    replaced: None,
                    completed,
                }));
                continue;
            }
            let nk = key_part(k);
            let head = match heads.entry(nk) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => match self.stored_head(nk) {
                    Ok(h) => e.insert(h),
                    Err(err) => {
                        out.push(Err(err));
                        continue;
                    }
                },
            };
            head.put(&self.projected(Cow::Borrowed(record)), previous.is_none());
            batch.put_cf(cf, k, encode_record(record));
            if let Some(p) = &w.put.piece {
                self.put_piece_into(&mut batch, p);
            }
            written.insert(k, record);
            out.push(Ok(PutRecordOutcome::Stored {
                replaced: previous,
                completed,
            }));
        }
        for (nk, head) in &heads {
            self.put_head(&mut batch, nk, head);
        }
        for id in &side.dropped_pieces {
            batch.delete_cf(self.cf(CF_PIECES), id.as_bytes());
            batch.delete_cf(self.cf(CF_PIECE_IDS), id.as_bytes());
        }
        for (id, value) in &side.stage {
            batch.put_cf(self.cf(CF_STAGED), id.as_bytes(), value);
        }
        for id in &side.unstage {
            batch.delete_cf(self.cf(CF_STAGED), id.as_bytes());
        }
        if !batch.is_empty() {
            self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        }
        Ok(out)
    }

    /// Adds the removal of upload `upload_id` of `ns/key` and of all its
    /// parts to `batch`; returns the parts, or `None` when this disk does
    /// not hold the upload. The caller holds the upload's lock stripe.
    fn drop_upload_into(
        &self,
        batch: &mut WriteBatch,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Option<Vec<PartEntry>>, DiskError> {
        let mut uk = ns_key(ns, key);
        uk.extend_from_slice(upload_id.as_bytes());
        if self
            .db
            .get_cf(self.cf(CF_UPLOADS), &uk)
            .map_err(meta_err)?
            .is_none()
        {
            return Ok(None);
        }
        let (parts, _) = self.list_parts(upload_id, 0, usize::MAX)?;
        batch.delete_cf(self.cf(CF_UPLOADS), &uk);
        for p in &parts {
            batch.delete_cf(self.cf(CF_PARTS), part_key(upload_id, p.number));
        }
        Ok(Some(parts))
    }

    /// `record` with a listing projection made from its body when it has
    /// none and the disk knows how (a record from an older build); copied
    /// only then.
    fn projected<'a>(&self, record: Cow<'a, Record>) -> Cow<'a, Record> {
        match (record.listing.is_empty(), self.listing_of) {
            (true, Some(project)) => {
                let mut record = record.into_owned();
                record.listing = project(&record.body).unwrap_or_default();
                Cow::Owned(record)
            }
            _ => record,
        }
    }

    /// The records under an encoded (namespace, key), each with a listing
    /// projection where one can be made: what a head is rebuilt from.
    fn head_records(&self, nk: &[u8]) -> Result<Vec<Record>, DiskError> {
        let records = self.records_under(nk)?;
        Ok(records
            .into_iter()
            .map(|r| self.projected(Cow::Owned(r)).into_owned())
            .collect())
    }

    /// Takes the last of `gone` (versions of the encoded key `nk` removed in
    /// the write being built, none of them applied yet) out of its head; a
    /// count-only head that shrinks back is listed again from the records
    /// that remain.
    fn remove_from_head(
        &self,
        head: &mut Head,
        nk: &[u8],
        gone: &[VersionId],
    ) -> Result<(), DiskError> {
        let version = *gone.last().expect("a removed version");
        head.remove(version, || {
            let mut left = self.head_records(nk)?;
            left.retain(|r| !gone.contains(&r.version));
            Ok(left)
        })
    }

    /// The head of an encoded (namespace, key); a damaged one is rebuilt
    /// from the key's records.
    fn stored_head(&self, nk: &[u8]) -> Result<Head, DiskError> {
        match self.db.get_cf(self.cf(CF_HEADS), nk).map_err(meta_err)? {
            None => Ok(Head::default()),
            Some(v) => match Head::decode(&Bytes::from(v)) {
                Ok(h) => Ok(h),
                Err(e) => {
                    tracing::warn!(error = %e, "rebuilding a damaged head from its records");
                    Ok(Head::of(&self.head_records(nk)?))
                }
            },
        }
    }

    /// Adds the write (or the deletion, when no version is left) of a head
    /// to `batch`.
    fn put_head(&self, batch: &mut WriteBatch, nk: &[u8], head: &Head) {
        if head.is_empty() {
            batch.delete_cf(self.cf(CF_HEADS), nk);
        } else {
            batch.put_cf(self.cf(CF_HEADS), nk, head.encode());
        }
    }

    fn stored_record(&self, k: &[u8]) -> Result<Option<Record>, DiskError> {
        match self.db.get_cf(self.cf(CF_RECORDS), k).map_err(meta_err)? {
            Some(v) => Ok(Some(decode_record(&v)?)),
            None => Ok(None),
        }
    }

    /// Removes one version; with `if_stamp`, only if the stored one has
    /// exactly that stamp. Returns what was removed.
    pub fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        let k = record_key(ns, key, version);
        let nk = key_part(&k);
        let _g = self.lock_for(nk);
        let Some(current) = self.stored_record(&k)? else {
            return Ok(None);
        };
        if if_stamp.is_some_and(|s| s != current.stamp) {
            return Ok(None);
        }
        let mut head = self.stored_head(nk)?;
        self.remove_from_head(&mut head, nk, &[version])?;
        let mut batch = WriteBatch::default();
        batch.delete_cf(self.cf(CF_RECORDS), &k);
        self.put_head(&mut batch, nk, &head);
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        Ok(Some(current))
    }

    /// Removes many versions in one synced batch; returns what each removed
    /// (`None` where there was nothing).
    pub fn delete_records(
        &self,
        ns: &[u8],
        items: &[(Vec<u8>, VersionId)],
    ) -> Result<Vec<Option<Record>>, DiskError> {
        let keys: Vec<Vec<u8>> = items
            .iter()
            .map(|(key, version)| record_key(ns, key, *version))
            .collect();
        let _guards = self.lock_all(&keys);
        let cf = self.cf(CF_RECORDS);
        let mut batch = WriteBatch::default();
        let mut removed = Vec::with_capacity(keys.len());
        // Heads by encoded key, with the versions of it this batch removes.
        let mut heads: std::collections::HashMap<&[u8], (Head, Vec<VersionId>)> =
            Default::default();
        for (k, (_, version)) in keys.iter().zip(items) {
            let nk = key_part(k);
            let (head, gone) = match heads.entry(nk) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert((self.stored_head(nk)?, Vec::new()))
                }
            };
            let current = match gone.contains(version) {
                true => None,
                false => self.stored_record(k)?,
            };
            if current.is_some() {
                batch.delete_cf(cf, k);
                gone.push(*version);
                self.remove_from_head(head, nk, gone)?;
            }
            removed.push(current);
        }
        for (nk, (head, _)) in &heads {
            self.put_head(&mut batch, nk, head);
        }
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        Ok(removed)
    }

    /// An iterator over `table` positioned where a listing of `ns` with
    /// `opts` starts and bounded by its prefix, and the length of the
    /// encoded namespace that starts every key. A start after a key seeks
    /// to the key's encoding followed by `past` (what passes everything
    /// stored under the key in this table).
    fn scan(
        &self,
        table: &str,
        ns: &[u8],
        opts: &RecordListOptions,
        past: &[u8],
    ) -> (rocksdb::DBRawIteratorWithThreadMode<'_, DB>, usize) {
        let mut lower = Vec::new();
        push_component(&mut lower, ns);
        let ns_len = lower.len();
        push_prefix(&mut lower, &opts.prefix);
        let seek = match &opts.start {
            ListStart::Beginning => lower.clone(),
            ListStart::At(k) => ns_key(ns, k),
            ListStart::After(k) => {
                let mut s = ns_key(ns, k);
                s.extend_from_slice(past);
                s
            }
        };
        let mut ro = ReadOptions::default();
        if let Some(u) = prefix_end(&lower) {
            ro.set_iterate_upper_bound(u);
        }
        // A listing passes over every block once: caching them would evict
        // the blocks point reads (every write's lookup) keep coming back to.
        ro.fill_cache(false);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(table), ro);
        it.seek(seek.max(lower));
        (it, ns_len)
    }

    /// Lists keys in order with all their versions.
    pub fn list_records(
        &self,
        ns: &[u8],
        opts: &RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        // Past every version of the key: its id is 16 bytes, all ≤ 0xFF.
        let (mut it, ns_len) = self.scan(CF_RECORDS, ns, opts, &[0xFF; 17]);
        let mut page = RecordPage::default();
        // Every body of the page goes into one buffer, sliced afterwards:
        // one allocation per page instead of one per record.
        let mut arena = Vec::with_capacity(opts.max_keys.min(1024) * 512);
        let mut spans = Vec::with_capacity(opts.max_keys.min(1024));
        while it.valid() {
            let (k, v) = (it.key().unwrap(), it.value().unwrap());
            let (key, rest) = take_component(&k[ns_len..])
                .ok_or_else(|| DiskError::corrupt("record key", "bad encoding"))?;
            if rest.len() != 16 {
                return Err(DiskError::corrupt("record key", "bad version suffix"));
            }
            let (record, listing, body) = decode_envelope(v)?;
            let full = page.keys.len() == opts.max_keys;
            match page.keys.last_mut() {
                Some(last) if last.key == key => last.records.push(record),
                _ if full => {
                    page.truncated = true;
                    break;
                }
                _ => page.keys.push(KeyRecords {
                    key,
                    records: vec![record],
                }),
            }
            spans.push(arena.len()..arena.len() + listing.len());
            arena.extend_from_slice(listing);
            spans.push(arena.len()..arena.len() + body.len());
            arena.extend_from_slice(body);
            it.next();
        }
        it.status().map_err(meta_err)?;
        let arena = Bytes::from(arena);
        let records = page.keys.iter_mut().flat_map(|k| k.records.iter_mut());
        let mut spans = spans.into_iter();
        for record in records {
            record.listing = arena.slice(spans.next().expect("a listing span"));
            record.body = arena.slice(spans.next().expect("a body span"));
        }
        Ok(page)
    }

    /// Lists keys in order from the heads index (see [`crate::heads`]).
    pub fn list_heads(&self, ns: &[u8], opts: &RecordListOptions) -> Result<HeadPage, DiskError> {
        // The smallest encoded key above the key's own.
        let (mut it, ns_len) = self.scan(CF_HEADS, ns, opts, &[0]);
        // Keys and heads are copied as stored into one buffer; the reader
        // decodes what it needs (see [`HeadPage`]).
        let mut bytes = Vec::with_capacity(opts.max_keys.min(8192) * 160);
        let mut spans = Vec::with_capacity(opts.max_keys.min(8192));
        let mut truncated = false;
        while it.valid() {
            if spans.len() == opts.max_keys {
                truncated = true;
                break;
            }
            let (k, v) = (&it.key().unwrap()[ns_len..], it.value().unwrap());
            let start = bytes.len();
            bytes.extend_from_slice(k);
            let mid = bytes.len();
            bytes.extend_from_slice(v);
            // The end is the largest offset: if it fits, they all do.
            let Ok(end) = u32::try_from(bytes.len()) else {
                return Err(DiskError::corrupt("heads page", "over 4 GiB"));
            };
            spans.push((start as u32, mid as u32, end));
            it.next();
        }
        it.status().map_err(meta_err)?;
        Ok(HeadPage {
            bytes: Bytes::from(bytes),
            spans,
            truncated,
        })
    }

    pub fn put_upload(&self, ns: &[u8], entry: &UploadEntry) -> Result<(), DiskError> {
        let mut k = ns_key(ns, &entry.key);
        k.extend_from_slice(entry.upload_id.as_bytes());
        self.db
            .put_cf_opt(self.cf(CF_UPLOADS), &k, &entry.body, &sync_writes())
            .map_err(meta_err)?;
        Ok(())
    }

    pub fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        let mut k = ns_key(ns, key);
        k.extend_from_slice(upload_id.as_bytes());
        match self.db.get_cf(self.cf(CF_UPLOADS), &k).map_err(meta_err)? {
            Some(v) => Ok(Bytes::from(v)),
            None => Err(DiskError::NotFound),
        }
    }

    /// Removes the upload and all its parts in one atomic batch; returns the
    /// parts that were removed so their data can be freed.
    pub fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        let _g = self.lock_for(upload_id.as_bytes());
        let mut batch = WriteBatch::default();
        let parts = self
            .drop_upload_into(&mut batch, ns, key, upload_id)?
            .ok_or(DiskError::NotFound)?;
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        Ok(parts)
    }

    pub fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: &UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        let mut lower = Vec::new();
        push_component(&mut lower, ns);
        let ns_len = lower.len();
        push_prefix(&mut lower, prefix);
        let upper = prefix_end(&lower);
        let seek = match start {
            UploadListStart::Beginning => lower.clone(),
            UploadListStart::AfterKey(k) => {
                let mut s = ns_key(ns, k);
                s.extend_from_slice(&[0xFF; 17]);
                s
            }
            UploadListStart::AfterUpload(k, id) => {
                let mut s = ns_key(ns, k);
                s.extend_from_slice(id.as_bytes());
                s.push(0);
                s
            }
        };
        let seek = seek.max(lower.clone());
        let mut ro = ReadOptions::default();
        if let Some(u) = &upper {
            ro.set_iterate_upper_bound(u.clone());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_UPLOADS), ro);
        it.seek(&seek);
        let mut out = Vec::new();
        while it.valid() {
            if out.len() == max {
                return Ok((out, true));
            }
            let (k, v) = (it.key().unwrap(), it.value().unwrap());
            let (key, rest) = take_component(&k[ns_len..])
                .ok_or_else(|| DiskError::corrupt("upload key", "bad encoding"))?;
            let id: [u8; 16] = rest
                .try_into()
                .map_err(|_| DiskError::corrupt("upload key", "bad id"))?;
            out.push(UploadEntry {
                key,
                upload_id: Uuid::from_bytes(id),
                body: Bytes::copy_from_slice(v),
            });
            it.next();
        }
        it.status().map_err(meta_err)?;
        Ok((out, false))
    }

    /// Stores a part and removes the staged entries `unstage` in the same
    /// write; fails with `NotFound` when the upload does not exist (it was
    /// completed or aborted meanwhile). Returns the part it replaced.
    pub fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: &PartEntry,
        unstage: &[Uuid],
    ) -> Result<Option<PartEntry>, DiskError> {
        let _g = self.lock_for(upload_id.as_bytes());
        let mut uk = ns_key(ns, key);
        uk.extend_from_slice(upload_id.as_bytes());
        if self
            .db
            .get_cf(self.cf(CF_UPLOADS), &uk)
            .map_err(meta_err)?
            .is_none()
        {
            return Err(DiskError::NotFound);
        }
        let pk = part_key(upload_id, part.number);
        let previous = self
            .db
            .get_cf(self.cf(CF_PARTS), &pk)
            .map_err(meta_err)?
            .map(|v| PartEntry {
                number: part.number,
                body: Bytes::from(v),
            });
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_PARTS), &pk, &part.body);
        for id in unstage {
            batch.delete_cf(self.cf(CF_STAGED), id.as_bytes());
        }
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        Ok(previous)
    }

    pub fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        let start = part_key(upload_id, after.saturating_add(1));
        let end = part_key(upload_id, u32::MAX);
        let mut out = Vec::new();
        if after == u32::MAX {
            return Ok((out, false));
        }
        for item in self.db.iterator_cf(
            self.cf(CF_PARTS),
            IteratorMode::From(&start, Direction::Forward),
        ) {
            let (k, v) = item.map_err(meta_err)?;
            if k.len() != 20 || k[..16] != upload_id.as_bytes()[..] || k[..] > end[..] {
                break;
            }
            if out.len() == max {
                return Ok((out, true));
            }
            out.push(PartEntry {
                number: u32::from_be_bytes(k[16..20].try_into().unwrap()),
                body: Bytes::copy_from_slice(&v),
            });
        }
        Ok((out, false))
    }

    /// This disk's piece `id`, checked against its checksum.
    pub fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError> {
        match self.db.get_cf(self.cf(CF_PIECES), id.as_bytes()) {
            Ok(Some(v)) => decode_piece(&v),
            Ok(None) => Err(DiskError::NotFound),
            // A damaged blob record, or a pack (blob) file that is gone, is
            // a bad piece, not a failed disk: the set rebuilds it from the
            // others.
            Err(e) if e.kind() == rocksdb::ErrorKind::Corruption || missing_file(&e) => {
                Err(DiskError::corrupt("piece", e.into_string()))
            }
            Err(e) => Err(meta_err(e)),
        }
    }

    /// Stores a piece on its own (repair). Durable on return.
    pub fn put_piece(&self, piece: &Piece) -> Result<(), DiskError> {
        let mut batch = WriteBatch::default();
        self.put_piece_into(&mut batch, piece);
        self.db.write_opt(batch, &sync_writes()).map_err(meta_err)?;
        Ok(())
    }

    /// Adds a piece and its index entry to `batch`.
    fn put_piece_into(&self, batch: &mut WriteBatch, piece: &Piece) {
        batch.put_cf(
            self.cf(CF_PIECES),
            piece.id.as_bytes(),
            encode_piece(&piece.data),
        );
        batch.put_cf(
            self.cf(CF_PIECE_IDS),
            piece.id.as_bytes(),
            (piece.data.len() as u64).to_le_bytes(),
        );
    }

    /// Deletes a piece (absent is fine). Not synced, like a shard deletion:
    /// after a crash the piece may come back as unreferenced garbage.
    /// Deletes one piece now (the disk sends deletions through its
    /// committer, [`Self::commit_batch`]; this form is for tests).
    #[cfg(test)]
    pub fn delete_piece(&self, id: Uuid) -> Result<(), DiskError> {
        let side = SideWrites {
            dropped_pieces: vec![id],
            ..SideWrites::default()
        };
        self.commit_batch(&[], &side).map(|_| ())
    }

    /// Collects the space of deleted pieces now: compacts the pieces with
    /// every blob file eligible for relocation, then restores the normal
    /// cutoff. Compaction runs beside reads and writes; a crash at any point
    /// leaves either the old or the new blob files referenced, never both.
    pub fn collect_pieces(&self) -> Result<(), DiskError> {
        let cf = self.cf(CF_PIECES);
        self.db
            .set_options_cf(cf, &[("blob_garbage_collection_age_cutoff", "1.0")])
            .map_err(meta_err)?;
        let flushed = self.db.flush_cf(cf);
        crate::failpoint::hit_blocking("pack_gc.flushed", "");
        if flushed.is_ok() {
            let mut opts = rocksdb::CompactOptions::default();
            opts.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
            self.db
                .compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &opts);
            crate::failpoint::hit_blocking("pack_gc.compacted", "");
        }
        // Back to the normal cutoff even when the flush failed.
        self.db
            .set_options_cf(
                cf,
                &[("blob_garbage_collection_age_cutoff", BLOB_GC_AGE_CUTOFF)],
            )
            .map_err(meta_err)?;
        flushed.map_err(meta_err)
    }

    /// Flushes memtables so a restart replays little WAL.
    pub fn flush(&self) -> Result<(), DiskError> {
        for cf in [
            CF_RECORDS,
            CF_UPLOADS,
            CF_PARTS,
            CF_PIECES,
            CF_HEADS,
            CF_STAGED,
            CF_PIECE_IDS,
        ] {
            self.db.flush_cf(self.cf(cf)).map_err(meta_err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: u8, t: u64, body: &str) -> Record {
        Record {
            version: VersionId([v; 16]),
            stamp: Stamp {
                mtime_ns: t,
                write_id: Uuid::from_u128(t as u128),
            },
            body: Bytes::from(body.to_string()),
            listing: Bytes::from(format!("l-{body}")),
        }
    }

    #[test]
    fn newer_wins_and_older_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let a = rec(0, 10, "a");
        let b = rec(0, 20, "b");
        assert!(matches!(
            m.put_record(b"ns", b"k", &a, None).unwrap(),
            PutRecordOutcome::Stored { replaced: None, .. }
        ));
        match m.put_record(b"ns", b"k", &b, None).unwrap() {
            PutRecordOutcome::Stored {
                replaced: Some(r), ..
            } => assert_eq!(r, a),
            o => panic!("{o:?}"),
        }
        assert!(matches!(
            m.put_record(b"ns", b"k", &a, None).unwrap(),
            PutRecordOutcome::Superseded { .. }
        ));
        assert_eq!(m.get_records(b"ns", b"k").unwrap(), vec![b.clone()]);
        assert!(m
            .delete_record(b"ns", b"k", b.version, Some(a.stamp))
            .unwrap()
            .is_none());
        assert_eq!(
            m.delete_record(b"ns", b"k", b.version, None).unwrap(),
            Some(b)
        );
        assert!(m.get_records(b"ns", b"k").unwrap().is_empty());
    }

    #[test]
    fn listing_groups_versions_and_pages() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        for k in ["a", "a/b", "a/c", "b", "b\0x"] {
            m.put_record(b"ns", k.as_bytes(), &rec(1, 1, k), None)
                .unwrap();
            m.put_record(b"ns", k.as_bytes(), &rec(2, 2, k), None)
                .unwrap();
        }
        m.put_record(b"other", b"a/z", &rec(1, 1, "z"), None)
            .unwrap();
        let all = m
            .list_records(
                b"ns",
                &RecordListOptions {
                    prefix: b"a".to_vec(),
                    start: ListStart::Beginning,
                    max_keys: 10,
                },
            )
            .unwrap();
        let keys: Vec<_> = all.keys.iter().map(|k| k.key.clone()).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"a/b".to_vec(), b"a/c".to_vec()]);
        assert!(all.keys.iter().all(|k| k.records.len() == 2));
        assert!(!all.truncated);
        let page = m
            .list_records(
                b"ns",
                &RecordListOptions {
                    prefix: vec![],
                    start: ListStart::After(b"a".to_vec()),
                    max_keys: 2,
                },
            )
            .unwrap();
        let keys: Vec<_> = page.keys.iter().map(|k| k.key.clone()).collect();
        assert_eq!(keys, vec![b"a/b".to_vec(), b"a/c".to_vec()]);
        assert!(page.truncated);
        let page = m
            .list_records(
                b"ns",
                &RecordListOptions {
                    prefix: vec![],
                    start: ListStart::At(b"b".to_vec()),
                    max_keys: 5,
                },
            )
            .unwrap();
        let keys: Vec<_> = page.keys.iter().map(|k| k.key.clone()).collect();
        assert_eq!(keys, vec![b"b".to_vec(), b"b\0x".to_vec()]);
    }

    /// A listed key with (first version-id byte, stamp time, listing) per
    /// version, or `None` for a count-only head.
    type ListedHead = (Vec<u8>, Option<Vec<(u8, u64, String)>>);

    fn heads(m: &MetaStore, ns: &[u8]) -> Vec<ListedHead> {
        let page = m
            .list_heads(
                ns,
                &RecordListOptions {
                    prefix: vec![],
                    start: ListStart::Beginning,
                    max_keys: 1000,
                },
            )
            .unwrap();
        (0..page.spans.len())
            .map(|i| {
                let (key, head) = page.entry(i);
                let key = crate::heads::decode_listed_key(key).unwrap();
                let mut v = Vec::new();
                let versions = crate::heads::head_versions(head, &mut v).unwrap().then(|| {
                    v.iter()
                        .map(|e| {
                            let l = String::from_utf8(e.listing.to_vec()).unwrap();
                            (e.version.0[0], e.stamp.mtime_ns, l)
                        })
                        .collect()
                });
                (key, versions)
            })
            .collect()
    }

    #[test]
    fn heads_follow_every_write_and_deletion() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        m.put_record(b"ns", b"a", &rec(1, 1, "a1"), None).unwrap();
        m.put_record(b"ns", b"a", &rec(2, 2, "a2"), None).unwrap();
        m.put_record(b"ns", b"a", &rec(1, 3, "a1b"), None).unwrap();
        m.put_record(b"ns", b"b", &rec(1, 1, "b1"), None).unwrap();
        m.put_record(b"other", b"a", &rec(1, 1, "o"), None).unwrap();
        let l = |s: &str| format!("l-{s}");
        assert_eq!(
            heads(&m, b"ns"),
            vec![
                (b"a".to_vec(), Some(vec![(1, 3, l("a1b")), (2, 2, l("a2"))])),
                (b"b".to_vec(), Some(vec![(1, 1, l("b1"))])),
            ]
        );
        m.delete_record(b"ns", b"a", VersionId([1; 16]), None)
            .unwrap();
        m.delete_records(b"ns", &[(b"b".to_vec(), VersionId([1; 16]))])
            .unwrap();
        assert_eq!(
            heads(&m, b"ns"),
            vec![(b"a".to_vec(), Some(vec![(2, 2, l("a2"))]))]
        );
        // Paging: after a key, at a key, and a truncated page.
        for k in ["c", "c\0", "d"] {
            m.put_record(b"ns", k.as_bytes(), &rec(0, 1, k), None)
                .unwrap();
        }
        let page = |start, max_keys| {
            m.list_heads(
                b"ns",
                &RecordListOptions {
                    prefix: b"c".to_vec(),
                    start,
                    max_keys,
                },
            )
            .unwrap()
        };
        let p = page(ListStart::After(b"c".to_vec()), 10);
        assert_eq!(p.spans.len(), 1);
        assert_eq!(
            crate::heads::decode_listed_key(p.entry(0).0).unwrap(),
            b"c\0"
        );
        let p = page(ListStart::At(b"c".to_vec()), 1);
        assert_eq!(p.spans.len(), 1);
        assert!(p.truncated);
    }

    #[test]
    fn a_long_history_is_counted_and_listed_again_after_deletions() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let n = crate::heads::MAX_HEAD_VERSIONS as u8 + 2;
        for v in 0..n {
            m.put_record(b"ns", b"k", &rec(v, v as u64, "x"), None)
                .unwrap();
        }
        assert_eq!(heads(&m, b"ns"), vec![(b"k".to_vec(), None)]);
        let items: Vec<_> = (0..3)
            .map(|v| (b"k".to_vec(), VersionId([v; 16])))
            .collect();
        m.delete_records(b"ns", &items).unwrap();
        let left = heads(&m, b"ns");
        let versions = left[0].1.as_ref().expect("listed again");
        assert_eq!(versions.len(), n as usize - 3);
        assert_eq!(versions[0].0, 3);
    }

    #[test]
    fn the_heads_index_is_built_from_the_records_of_an_older_store() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        for k in ["a", "b", "c"] {
            m.put_record(b"ns", k.as_bytes(), &rec(1, 1, k), None)
                .unwrap();
            m.put_record(b"ns", k.as_bytes(), &rec(2, 2, k), None)
                .unwrap();
        }
        // An older store: records in the first envelope (no projection), no
        // heads and no completion marker; plus a partial index to drop.
        let old = {
            let mut r = rec(3, 3, "old");
            r.listing = Bytes::new();
            let mut v = encode_record(&r);
            v.drain(43..45);
            v[2] = disk_format::envelope::RECORD_V1;
            let n = v.len();
            let crc = crc_fast::crc32_iscsi(&v[..n - 4]);
            v[n - 4..].copy_from_slice(&crc.to_le_bytes());
            v
        };
        m.db.put_cf(
            m.cf(CF_RECORDS),
            record_key(b"ns", b"a", VersionId([3; 16])),
            old,
        )
        .unwrap();
        assert_eq!(m.get_records(b"ns", b"a").unwrap()[2].body, "old");
        let expected = heads(&m, b"ns");
        m.db.delete(HEADS_COMPLETE).unwrap();
        m.db.delete_cf(m.cf(CF_HEADS), ns_key(b"ns", b"b")).unwrap();
        m.db.put_cf(m.cf(CF_HEADS), ns_key(b"ns", b"zz"), b"junk")
            .unwrap();
        drop(m);
        // The older record gets its projection from its body.
        let project: ListingFn =
            |body| Some(Bytes::from(format!("p-{}", String::from_utf8_lossy(body))));
        let m = MetaStore::open(d.path(), Some(project)).unwrap();
        let rebuilt = heads(&m, b"ns");
        assert_eq!(rebuilt.len(), 3);
        assert_eq!(rebuilt[1..], expected[1..]);
        let a = rebuilt[0].1.as_ref().unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[2], (3, 3, "p-old".to_string()));
        assert!(m.db.get(HEADS_COMPLETE).unwrap().is_some());
    }

    #[test]
    fn uploads_and_parts() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let id = Uuid::now_v7();
        let part = PartEntry {
            number: 2,
            body: Bytes::from_static(b"p2"),
        };
        assert!(matches!(
            m.put_part(b"ns", b"k", id, &part, &[]),
            Err(DiskError::NotFound)
        ));
        m.put_upload(
            b"ns",
            &UploadEntry {
                key: b"k".to_vec(),
                upload_id: id,
                body: Bytes::from_static(b"u"),
            },
        )
        .unwrap();
        assert!(m.put_part(b"ns", b"k", id, &part, &[]).unwrap().is_none());
        assert_eq!(
            m.put_part(b"ns", b"k", id, &part, &[]).unwrap(),
            Some(part.clone())
        );
        m.put_part(
            b"ns",
            b"k",
            id,
            &PartEntry {
                number: 1,
                body: Bytes::new(),
            },
            &[],
        )
        .unwrap();
        let (parts, more) = m.list_parts(id, 0, 10).unwrap();
        assert_eq!(
            parts.iter().map(|p| p.number).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert!(!more);
        let (parts, more) = m.list_parts(id, 1, 10).unwrap();
        assert_eq!(parts.len(), 1);
        assert!(!more);
        let (ups, _) = m
            .list_uploads(b"ns", b"", &UploadListStart::Beginning, 10)
            .unwrap();
        assert_eq!(ups.len(), 1);
        assert_eq!(m.delete_upload(b"ns", b"k", id).unwrap().len(), 2);
        assert!(m.list_parts(id, 0, 10).unwrap().0.is_empty());
        assert!(matches!(
            m.get_upload(b"ns", b"k", id),
            Err(DiskError::NotFound)
        ));
    }

    fn blob_bytes(dir: &Path) -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".blob"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    }

    #[test]
    fn pieces_are_stored_with_their_record_and_collected_after_deletion() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let ids: Vec<Uuid> = (0..400).map(|_| Uuid::now_v7()).collect();
        for (i, id) in ids.iter().enumerate() {
            let piece = Piece {
                id: *id,
                data: Bytes::from(vec![i as u8; 8 << 10]),
            };
            let key = format!("k{i:04}");
            m.put_record(b"ns", key.as_bytes(), &rec(1, 1, "r"), Some(&piece))
                .unwrap();
        }
        assert_eq!(
            m.read_piece(ids[7]).unwrap(),
            Bytes::from(vec![7u8; 8 << 10])
        );
        assert!(matches!(
            m.read_piece(Uuid::now_v7()),
            Err(DiskError::NotFound)
        ));
        m.flush().unwrap();
        let files_before = std::fs::read_dir(d.path()).unwrap().count();
        assert!(files_before < 40, "{files_before} files for 400 pieces");
        let before = blob_bytes(d.path());
        assert!(before >= 400 * (8 << 10), "{before}");
        for id in ids.iter().step_by(2) {
            m.delete_piece(*id).unwrap();
        }
        m.collect_pieces().unwrap();
        let after = blob_bytes(d.path());
        assert!(after * 10 <= before * 6, "{before} -> {after}");
        for (i, id) in ids.iter().enumerate() {
            match m.read_piece(*id) {
                Ok(b) => {
                    assert!(i % 2 == 1);
                    assert_eq!(b, Bytes::from(vec![i as u8; 8 << 10]));
                }
                Err(DiskError::NotFound) => assert!(i % 2 == 0),
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_piece_with_a_flipped_byte_is_reported_corrupt() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let id = Uuid::now_v7();
        let data = Bytes::from(vec![0x5a; 4096]);
        m.put_piece(&Piece { id, data }).unwrap();
        m.flush().unwrap();
        drop(m);
        let blob = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".blob"))
            .unwrap()
            .path();
        let mut bytes = std::fs::read(&blob).unwrap();
        let at = bytes
            .windows(64)
            .position(|w| w.iter().all(|b| *b == 0x5a))
            .unwrap();
        bytes[at + 10] ^= 0xff;
        std::fs::write(&blob, bytes).unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let err = m.read_piece(id).unwrap_err();
        assert!(!err.is_disk_failure(), "{err}");
    }

    #[test]
    fn a_group_commit_applies_its_writes_in_order() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let w = |v: u8, t: u64, body: &str, key: &str| RecordWrite {
            ns: b"ns".to_vec(),
            key: key.as_bytes().to_vec(),
            put: RecordPut::of(rec(v, t, body)),
        };
        let out: Vec<PutRecordOutcome> = m
            .put_records(&[
                w(0, 10, "a", "k"),
                w(0, 20, "b", "k"),
                w(0, 15, "c", "k"),
                w(1, 5, "x", "other"),
            ])
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert!(matches!(
            out[0],
            PutRecordOutcome::Stored { replaced: None, .. }
        ));
        match &out[1] {
            PutRecordOutcome::Stored {
                replaced: Some(r), ..
            } => assert_eq!(r.body, "a"),
            o => panic!("{o:?}"),
        }
        match &out[2] {
            PutRecordOutcome::Superseded { current } => assert_eq!(current.body, "b"),
            o => panic!("{o:?}"),
        }
        assert!(matches!(
            out[3],
            PutRecordOutcome::Stored { replaced: None, .. }
        ));
        let stored = m.get_records(b"ns", b"k").unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].body, "b");
    }

    #[test]
    fn a_write_over_a_damaged_record_fails_alone_in_its_batch() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path(), None).unwrap();
        let damaged = rec(0, 10, "a");
        m.db.put_cf(
            m.cf(CF_RECORDS),
            record_key(b"ns", b"bad", damaged.version),
            b"not a record",
        )
        .unwrap();
        let w = |key: &str| RecordWrite {
            ns: b"ns".to_vec(),
            key: key.as_bytes().to_vec(),
            put: RecordPut::of(rec(0, 20, key)),
        };
        let out = m.put_records(&[w("bad"), w("good")]).unwrap();
        assert!(
            matches!(out[0], Err(DiskError::Corrupt { .. })),
            "{:?}",
            out[0]
        );
        assert!(matches!(
            out[1],
            Ok(PutRecordOutcome::Stored { replaced: None, .. })
        ));
        assert_eq!(m.get_records(b"ns", b"good").unwrap()[0].body, "good");
    }
}
