//! The local disk engine: a directory on a local filesystem.
//!
//! ```text
//! <dir>/format.json        format record (see `format`)
//! <dir>/lock               held with an exclusive lock while a process uses the disk
//! <dir>/meta/              RocksDB: version records, multipart state
//! <dir>/shards/xx/<id>     shard files, fanned out over 256 directories by id
//! <dir>/tmp/               shard files being written; emptied at start
//! ```

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

use crate::atomic::sync_dir;
use crate::disk::{
    Disk, DiskHealth, PutRecordOutcome, RecordListOptions, RecordPage, ShardOptions, ShardSummary,
    ShardWriter, UploadListStart,
};
use crate::error::DiskError;
use crate::format::{FormatRecord, FORMAT_FILE};
use crate::meta::MetaStore;
use crate::shard_file::{Header, ShardFileReader, ShardFileWriter};
use crate::types::{PartEntry, Record, ShardId, Stamp, UploadEntry, VersionId};

/// Tunables of a local disk.
#[derive(Clone, Debug)]
pub struct LocalDiskOptions {
    /// fsync shard data and directory entries before a shard is reported
    /// durable. Turning this off trades crash safety for speed and must be an
    /// explicit operator choice.
    pub fsync: bool,
}

impl Default for LocalDiskOptions {
    fn default() -> Self {
        LocalDiskOptions { fsync: true }
    }
}

/// Space kept free for the metadata store: shard data never takes the last
/// 1% of the filesystem (at least 16 MiB, at most 1 GiB), so RocksDB never
/// meets ENOSPC even when several disks share one filesystem.
pub fn metadata_reserve(total_bytes: u64) -> u64 {
    (total_bytes / 100).clamp(16 << 20, 1 << 30)
}

/// A disk backed by a local directory.
pub struct LocalDisk {
    root: PathBuf,
    label: String,
    format: FormatRecord,
    meta: Arc<MetaStore>,
    opts: LocalDiskOptions,
    reserve: u64,
    _lock: File,
}

async fn blocking<T, F>(f: F) -> Result<T, DiskError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, DiskError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DiskError::Io(std::io::Error::other(e)))?
}

impl LocalDisk {
    /// Opens a formatted directory: takes its lock, clears unfinished shard
    /// files and opens the metadata store. Blocking.
    pub fn open(root: &Path, opts: LocalDiskOptions) -> Result<LocalDisk, DiskError> {
        let label = root.display().to_string();
        let bytes = fs::read(root.join(FORMAT_FILE))
            .map_err(|e| DiskError::Format(format!("{label}: cannot read {FORMAT_FILE}: {e}")))?;
        let format = FormatRecord::decode(&bytes)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join("lock"))?;
        lock.try_lock().map_err(|_| {
            DiskError::Format(format!(
                "{label} is in use by another Granary process (its lock is held)"
            ))
        })?;
        let shards = root.join("shards");
        for i in 0..=255u8 {
            fs::create_dir_all(shards.join(format!("{i:02x}")))?;
        }
        sync_dir(&shards)?;
        let tmp = root.join("tmp");
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp)?;
        sync_dir(root)?;
        let meta = Arc::new(MetaStore::open(&root.join("meta"))?);
        let (total, _) = crate::io::fs_space(root)?;
        Ok(LocalDisk {
            root: root.to_path_buf(),
            label,
            format,
            meta,
            opts,
            reserve: metadata_reserve(total),
            _lock: lock,
        })
    }

    /// The format record read at open.
    pub fn format(&self) -> &FormatRecord {
        &self.format
    }

    /// The directory this disk lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn shard_dir(&self, id: ShardId) -> PathBuf {
        self.root
            .join("shards")
            .join(format!("{:02x}", id.0.as_bytes()[15]))
    }

    /// Path of a shard file (for operators and fault-injection tests).
    pub fn shard_path(&self, id: ShardId) -> PathBuf {
        self.shard_dir(id).join(id.to_string())
    }

    /// Flushes the metadata store's memtables; used at shutdown.
    pub async fn flush(&self) -> Result<(), DiskError> {
        let meta = self.meta.clone();
        blocking(move || meta.flush()).await
    }

    fn meta(&self) -> Arc<MetaStore> {
        self.meta.clone()
    }
}

struct LocalShardWriter {
    inner: Option<ShardFileWriter>,
    root: PathBuf,
    reserve: u64,
    tmp: PathBuf,
    dest_dir: PathBuf,
    dest: PathBuf,
    fsync: bool,
    finished: bool,
}

#[async_trait]
impl ShardWriter for LocalShardWriter {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        let mut w = self.inner.take().ok_or_else(|| {
            DiskError::InvalidArgument("shard writer used after a failed append".into())
        })?;
        let (root, reserve) = (self.root.clone(), self.reserve);
        let w = blocking(move || {
            // Checked before every block: shard data must leave the reserve
            // free even when other disks share this filesystem.
            let (_, free) = crate::io::fs_space(&root)?;
            if free < reserve + block.len() as u64 {
                return Err(DiskError::Full);
            }
            w.append_block(&block)?;
            Ok(w)
        })
        .await?;
        self.inner = Some(w);
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<ShardSummary, DiskError> {
        let w = self.inner.take().ok_or_else(|| {
            DiskError::InvalidArgument("shard writer used after a failed append".into())
        })?;
        let (tmp, dest, dest_dir, fsync) = (
            self.tmp.clone(),
            self.dest.clone(),
            self.dest_dir.clone(),
            self.fsync,
        );
        let len = blocking(move || {
            let len = w.data_len();
            w.finish(fsync)?;
            fs::rename(&tmp, &dest)?;
            if fsync {
                sync_dir(&dest_dir)?;
            }
            Ok(len)
        })
        .await?;
        self.finished = true;
        Ok(ShardSummary { len })
    }
}

impl Drop for LocalShardWriter {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let tmp = std::mem::take(&mut self.tmp);
        let inner = self.inner.take();
        let remove = move || {
            drop(inner);
            let _ = fs::remove_file(&tmp);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn_blocking(remove);
            }
            Err(_) => remove(),
        }
    }
}

#[async_trait]
impl Disk for LocalDisk {
    fn label(&self) -> &str {
        &self.label
    }

    async fn health(&self) -> DiskHealth {
        let root = self.root.clone();
        let r = blocking(move || {
            fs::metadata(root.join(FORMAT_FILE))?;
            Ok(crate::io::fs_space(&root)?)
        })
        .await;
        match r {
            Ok((total_bytes, free)) => DiskHealth::Online {
                total_bytes,
                free_bytes: free.saturating_sub(self.reserve),
            },
            Err(e) => DiskHealth::Offline {
                reason: e.to_string(),
            },
        }
    }

    async fn create_shard(
        &self,
        id: ShardId,
        opts: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError> {
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{id}.{}", Uuid::new_v4().simple()));
        let dest_dir = self.shard_dir(id);
        let dest = dest_dir.join(id.to_string());
        let path = tmp.clone();
        let w = blocking(move || {
            let f = OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&path)?;
            let header = Header {
                block_size: opts.block_size,
                shard_id: id,
                shard_index: opts.shard_index,
            };
            ShardFileWriter::create(f, &header).inspect_err(|_| {
                let _ = fs::remove_file(&path);
            })
        })
        .await?;
        Ok(Box::new(LocalShardWriter {
            inner: Some(w),
            root: self.root.clone(),
            reserve: self.reserve,
            tmp,
            dest_dir,
            dest,
            fsync: self.opts.fsync,
            finished: false,
        }))
    }

    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        let path = self.shard_path(id);
        blocking(move || {
            let r = ShardFileReader::open(File::open(&path)?)?;
            if r.header().shard_id != id {
                return Err(DiskError::corrupt(
                    "shard header",
                    "holds another shard's id",
                ));
            }
            r.read(offset, len)
        })
        .await
    }

    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError> {
        let path = self.shard_path(id);
        blocking(move || Ok(ShardFileReader::open(File::open(&path)?)?.data_len())).await
    }

    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError> {
        let path = self.shard_path(id);
        blocking(move || match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        })
        .await
    }

    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.get_records(&ns, &key)).await
    }

    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        record: Record,
    ) -> Result<PutRecordOutcome, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.put_record(&ns, &key, &record)).await
    }

    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.delete_record(&ns, &key, version, if_stamp)).await
    }

    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        let (m, ns) = (self.meta(), ns.to_vec());
        blocking(move || m.list_records(&ns, &opts)).await
    }

    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError> {
        let (m, ns) = (self.meta(), ns.to_vec());
        blocking(move || m.put_upload(&ns, &entry)).await
    }

    async fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.get_upload(&ns, &key, upload_id)).await
    }

    async fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.delete_upload(&ns, &key, upload_id)).await
    }

    async fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        let (m, ns, prefix) = (self.meta(), ns.to_vec(), prefix.to_vec());
        blocking(move || m.list_uploads(&ns, &prefix, &start, max)).await
    }

    async fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: PartEntry,
    ) -> Result<Option<PartEntry>, DiskError> {
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.put_part(&ns, &key, upload_id, &part)).await
    }

    async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        let m = self.meta();
        blocking(move || m.list_parts(upload_id, after, max)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Tier;

    fn formatted(dir: &Path) -> LocalDisk {
        FormatRecord::new_set(Tier::Hot, 1, 0)[0]
            .write_to(dir)
            .unwrap();
        LocalDisk::open(dir, LocalDiskOptions::default()).unwrap()
    }

    #[tokio::test]
    async fn shard_is_invisible_until_finished_and_gone_if_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let disk = formatted(dir.path());
        let id = ShardId(Uuid::now_v7());
        let opts = ShardOptions {
            block_size: 4096,
            shard_index: 0,
        };
        let mut w = disk.create_shard(id, opts).await.unwrap();
        w.append(Bytes::from(vec![1u8; 4096])).await.unwrap();
        w.append(Bytes::from(vec![2u8; 10])).await.unwrap();
        assert!(matches!(
            disk.read_shard(id, 0, 1).await,
            Err(DiskError::NotFound)
        ));
        assert_eq!(w.finish().await.unwrap().len, 4106);
        let got = disk.read_shard(id, 4090, 16).await.unwrap();
        assert_eq!(&got[..6], &[1u8; 6]);
        assert_eq!(&got[6..], &[2u8; 10]);
        assert_eq!(disk.shard_len(id).await.unwrap(), 4106);

        let id2 = ShardId(Uuid::now_v7());
        let mut w = disk.create_shard(id2, opts).await.unwrap();
        w.append(Bytes::from(vec![1u8; 4096])).await.unwrap();
        drop(w);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        disk.delete_shard(id).await.unwrap();
        disk.delete_shard(id).await.unwrap();
        assert!(matches!(
            disk.read_shard(id, 0, 1).await,
            Err(DiskError::NotFound)
        ));
    }

    #[tokio::test]
    async fn second_process_is_refused_and_health_reports_space() {
        let dir = tempfile::tempdir().unwrap();
        let disk = formatted(dir.path());
        assert!(matches!(
            LocalDisk::open(dir.path(), LocalDiskOptions::default()),
            Err(DiskError::Format(_))
        ));
        assert!(matches!(disk.health().await, DiskHealth::Online { .. }));
        fs::remove_file(dir.path().join(FORMAT_FILE)).unwrap();
        assert!(matches!(disk.health().await, DiskHealth::Offline { .. }));
    }
}
