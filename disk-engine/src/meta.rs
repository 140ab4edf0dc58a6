//! Version records and multipart state in a per-disk RocksDB instance.
//!
//! Column families:
//! - `records`: `ns ‖ key ‖ version id` → record envelope
//! - `uploads`: `ns ‖ key ‖ upload id` → upload body
//! - `parts`:   `upload id ‖ part number (BE)` → part body
//!
//! Every write is synced to RocksDB's WAL before it returns (concurrent
//! writers share one WAL sync through RocksDB's write groups). Calls here
//! block; the disk wraps them in `spawn_blocking`.

use std::path::Path;

use bytes::Bytes;
use parking_lot::Mutex;
use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, Options, ReadOptions, WriteBatch,
    WriteOptions, DB,
};
use uuid::Uuid;

use crate::disk::{ListStart, PutRecordOutcome, RecordListOptions, RecordPage, UploadListStart};
use crate::error::DiskError;
use crate::keys::{ns_key, prefix_end, push_component, push_prefix, take_component};
use crate::types::{KeyRecords, PartEntry, Record, Stamp, UploadEntry, VersionId};

const CF_RECORDS: &str = "records";
const CF_UPLOADS: &str = "uploads";
const CF_PARTS: &str = "parts";
const RECORD_MAGIC: [u8; 2] = *b"GR";
const RECORD_VERSION: u8 = 1;
/// magic + version + version id + mtime + write id + crc
const RECORD_OVERHEAD: usize = 2 + 1 + 16 + 8 + 16 + 4;
/// Number of stripes in the per-key lock table that makes read-modify-write
/// of one key atomic on this disk.
const KEY_LOCK_STRIPES: usize = 64;
/// Memtable size per column family; records are small, so this stays modest
/// to keep the server's memory bounded.
const WRITE_BUFFER_BYTES: usize = 16 << 20;

pub(crate) struct MetaStore {
    db: DB,
    locks: Vec<Mutex<()>>,
}

fn encode_record(r: &Record) -> Vec<u8> {
    let mut v = Vec::with_capacity(RECORD_OVERHEAD + r.body.len());
    v.extend_from_slice(&RECORD_MAGIC);
    v.push(RECORD_VERSION);
    v.extend_from_slice(&r.version.0);
    v.extend_from_slice(&r.stamp.mtime_ns.to_le_bytes());
    v.extend_from_slice(r.stamp.write_id.as_bytes());
    v.extend_from_slice(&r.body);
    let crc = crc_fast::crc32_iscsi(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

fn decode_record(v: &[u8]) -> Result<Record, DiskError> {
    if v.len() < RECORD_OVERHEAD {
        return Err(DiskError::corrupt("record", "too short"));
    }
    let (data, crc) = v.split_at(v.len() - 4);
    if crc_fast::crc32_iscsi(data) != u32::from_le_bytes(crc.try_into().unwrap()) {
        return Err(DiskError::corrupt("record", "checksum mismatch"));
    }
    if data[0..2] != RECORD_MAGIC || data[2] != RECORD_VERSION {
        return Err(DiskError::corrupt("record", "unknown magic or version"));
    }
    Ok(Record {
        version: VersionId(data[3..19].try_into().unwrap()),
        stamp: Stamp {
            mtime_ns: u64::from_le_bytes(data[19..27].try_into().unwrap()),
            write_id: Uuid::from_bytes(data[27..43].try_into().unwrap()),
        },
        body: Bytes::copy_from_slice(&data[43..]),
    })
}

fn record_key(ns: &[u8], key: &[u8], version: VersionId) -> Vec<u8> {
    let mut k = ns_key(ns, key);
    k.extend_from_slice(&version.0);
    k
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
    pub fn open(path: &Path) -> Result<MetaStore, DiskError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_keep_log_file_num(4);
        opts.set_max_open_files(512);
        opts.set_max_total_wal_size(64 << 20);
        // The default 4 MiB MANIFEST preallocation is wasted on a store of
        // small records.
        opts.set_manifest_preallocation_size(1 << 20);
        let cf = |name: &str| {
            let mut o = Options::default();
            o.set_write_buffer_size(WRITE_BUFFER_BYTES);
            o.set_max_write_buffer_number(2);
            o.set_compression_type(rocksdb::DBCompressionType::Lz4);
            ColumnFamilyDescriptor::new(name, o)
        };
        let db = DB::open_cf_descriptors(
            &opts,
            path,
            vec![cf(CF_RECORDS), cf(CF_UPLOADS), cf(CF_PARTS)],
        )?;
        Ok(MetaStore {
            db,
            locks: (0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
        })
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family exists")
    }

    fn lock_for(&self, k: &[u8]) -> parking_lot::MutexGuard<'_, ()> {
        let h = crc_fast::crc32_iscsi(k) as usize % KEY_LOCK_STRIPES;
        self.locks[h].lock()
    }

    /// Every version stored for one key.
    pub fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        let prefix = ns_key(ns, key);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(
            self.cf(CF_RECORDS),
            IteratorMode::From(&prefix, Direction::Forward),
        ) {
            let (k, v) = item?;
            if !k.starts_with(&prefix) {
                break;
            }
            out.push(decode_record(&v)?);
        }
        Ok(out)
    }

    /// Stores `record` unless this disk already holds a newer write of the
    /// same version (then nothing changes and the newer one is returned).
    pub fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        record: &Record,
    ) -> Result<PutRecordOutcome, DiskError> {
        let k = record_key(ns, key, record.version);
        let _g = self.lock_for(&k);
        let cf = self.cf(CF_RECORDS);
        let previous = match self.db.get_cf(cf, &k)? {
            Some(v) => Some(decode_record(&v)?),
            None => None,
        };
        if let Some(p) = &previous {
            if p.stamp > record.stamp {
                return Ok(PutRecordOutcome::Superseded { current: p.clone() });
            }
            if p.stamp == record.stamp {
                return Ok(PutRecordOutcome::Stored { replaced: None });
            }
        }
        self.db
            .put_cf_opt(cf, &k, encode_record(record), &sync_writes())?;
        Ok(PutRecordOutcome::Stored { replaced: previous })
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
        let _g = self.lock_for(&k);
        let cf = self.cf(CF_RECORDS);
        let Some(v) = self.db.get_cf(cf, &k)? else {
            return Ok(None);
        };
        let current = decode_record(&v)?;
        if if_stamp.is_some_and(|s| s != current.stamp) {
            return Ok(None);
        }
        self.db.delete_cf_opt(cf, &k, &sync_writes())?;
        Ok(Some(current))
    }

    /// Lists keys in order with all their versions.
    pub fn list_records(
        &self,
        ns: &[u8],
        opts: &RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        let mut lower = Vec::new();
        push_component(&mut lower, ns);
        let ns_len = lower.len();
        push_prefix(&mut lower, &opts.prefix);
        let upper = prefix_end(&lower);
        let seek = match &opts.start {
            ListStart::Beginning => lower.clone(),
            ListStart::At(k) => ns_key(ns, k),
            ListStart::After(k) => {
                let mut s = ns_key(ns, k);
                s.extend_from_slice(&[0xFF; 17]);
                s
            }
        };
        let seek = seek.max(lower.clone());
        let mut ro = ReadOptions::default();
        if let Some(u) = &upper {
            ro.set_iterate_upper_bound(u.clone());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_RECORDS), ro);
        it.seek(&seek);
        let mut page = RecordPage::default();
        while it.valid() {
            let (k, v) = (it.key().unwrap(), it.value().unwrap());
            let (key, rest) = take_component(&k[ns_len..])
                .ok_or_else(|| DiskError::corrupt("record key", "bad encoding"))?;
            if rest.len() != 16 {
                return Err(DiskError::corrupt("record key", "bad version suffix"));
            }
            let record = decode_record(v)?;
            match page.keys.last_mut() {
                Some(last) if last.key == key => last.records.push(record),
                _ => {
                    if page.keys.len() == opts.max_keys {
                        page.truncated = true;
                        break;
                    }
                    page.keys.push(KeyRecords {
                        key,
                        records: vec![record],
                    });
                }
            }
            it.next();
        }
        it.status()?;
        Ok(page)
    }

    pub fn put_upload(&self, ns: &[u8], entry: &UploadEntry) -> Result<(), DiskError> {
        let mut k = ns_key(ns, &entry.key);
        k.extend_from_slice(entry.upload_id.as_bytes());
        self.db
            .put_cf_opt(self.cf(CF_UPLOADS), &k, &entry.body, &sync_writes())?;
        Ok(())
    }

    pub fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        let mut k = ns_key(ns, key);
        k.extend_from_slice(upload_id.as_bytes());
        match self.db.get_cf(self.cf(CF_UPLOADS), &k)? {
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
        let mut k = ns_key(ns, key);
        k.extend_from_slice(upload_id.as_bytes());
        let _g = self.lock_for(upload_id.as_bytes());
        if self.db.get_cf(self.cf(CF_UPLOADS), &k)?.is_none() {
            return Err(DiskError::NotFound);
        }
        let (parts, _) = self.list_parts(upload_id, 0, usize::MAX)?;
        let mut batch = WriteBatch::default();
        batch.delete_cf(self.cf(CF_UPLOADS), &k);
        for p in &parts {
            batch.delete_cf(self.cf(CF_PARTS), part_key(upload_id, p.number));
        }
        self.db.write_opt(batch, &sync_writes())?;
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
        it.status()?;
        Ok((out, false))
    }

    /// Stores a part; fails with `NotFound` when the upload does not exist
    /// (it was completed or aborted meanwhile). Returns the part it replaced.
    pub fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: &PartEntry,
    ) -> Result<Option<PartEntry>, DiskError> {
        let _g = self.lock_for(upload_id.as_bytes());
        let mut uk = ns_key(ns, key);
        uk.extend_from_slice(upload_id.as_bytes());
        if self.db.get_cf(self.cf(CF_UPLOADS), &uk)?.is_none() {
            return Err(DiskError::NotFound);
        }
        let pk = part_key(upload_id, part.number);
        let previous = self.db.get_cf(self.cf(CF_PARTS), &pk)?.map(|v| PartEntry {
            number: part.number,
            body: Bytes::from(v),
        });
        self.db
            .put_cf_opt(self.cf(CF_PARTS), &pk, &part.body, &sync_writes())?;
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
            let (k, v) = item?;
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

    /// Flushes memtables so a restart replays little WAL.
    pub fn flush(&self) -> Result<(), DiskError> {
        for cf in [CF_RECORDS, CF_UPLOADS, CF_PARTS] {
            self.db.flush_cf(self.cf(cf))?;
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
        }
    }

    #[test]
    fn newer_wins_and_older_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path()).unwrap();
        let a = rec(0, 10, "a");
        let b = rec(0, 20, "b");
        assert!(matches!(
            m.put_record(b"ns", b"k", &a).unwrap(),
            PutRecordOutcome::Stored { replaced: None }
        ));
        match m.put_record(b"ns", b"k", &b).unwrap() {
            PutRecordOutcome::Stored { replaced: Some(r) } => assert_eq!(r, a),
            o => panic!("{o:?}"),
        }
        assert!(matches!(
            m.put_record(b"ns", b"k", &a).unwrap(),
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
        let m = MetaStore::open(d.path()).unwrap();
        for k in ["a", "a/b", "a/c", "b", "b\0x"] {
            m.put_record(b"ns", k.as_bytes(), &rec(1, 1, k)).unwrap();
            m.put_record(b"ns", k.as_bytes(), &rec(2, 2, k)).unwrap();
        }
        m.put_record(b"other", b"a/z", &rec(1, 1, "z")).unwrap();
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

    #[test]
    fn uploads_and_parts() {
        let d = tempfile::tempdir().unwrap();
        let m = MetaStore::open(d.path()).unwrap();
        let id = Uuid::now_v7();
        let part = PartEntry {
            number: 2,
            body: Bytes::from_static(b"p2"),
        };
        assert!(matches!(
            m.put_part(b"ns", b"k", id, &part),
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
        assert!(m.put_part(b"ns", b"k", id, &part).unwrap().is_none());
        assert_eq!(
            m.put_part(b"ns", b"k", id, &part).unwrap(),
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
}
