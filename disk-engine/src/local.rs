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
use crate::commit::Committer;
use crate::commit::Side;
use crate::disk::Inventory;
use crate::disk::{Disk, ShardWriter};
use crate::error::DiskError;
use crate::failpoint;
use crate::format::{FormatRecord, FORMAT_FILE};
use crate::inventory::staged_value;
use crate::io::at_bulk_priority;
use crate::io::ring::Ring;
use crate::messages::RecordPut;
use crate::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, ShardOptions,
    ShardSummary, UploadListStart,
};
use crate::meta::{ListingFn, MetaStore, RecordWrite};
use crate::presence::DirIdentity;
use crate::ring_shard::{probe_direct, OpenShards, RingShardWriter};
use crate::shard_file::{ShardFileReader, ShardFileWriter};
use crate::staging::Staging;
use crate::types::{
    PartEntry, Piece, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, StagedId, Stamp,
    UploadEntry, VersionId,
};
use disk_format::shard_layout::Header;

/// How shard files are read and written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardIoMode {
    /// io_uring with O_DIRECT where the filesystem allows it, buffered
    /// io_uring where it does not, blocking I/O where io_uring is missing.
    #[default]
    Auto,
    /// io_uring through the page cache (never O_DIRECT).
    Buffered,
    /// Blocking reads and writes on the blocking thread pool (no io_uring).
    Blocking,
}

/// Tunables of a local disk.
#[derive(Clone, Debug)]
pub struct LocalDiskOptions {
    /// fsync shard data and directory entries before a shard is reported
    /// durable. Turning this off trades crash safety for speed and must be an
    /// explicit operator choice.
    pub fsync: bool,
    /// How shard data moves between memory and the disk.
    pub io: ShardIoMode,
    /// How to make a record's listing projection from its body, for
    /// records written without one (by a build from before the heads
    /// index); the layer above knows the body's format. `None` leaves such
    /// records without one (listings read their records instead).
    pub listing_of: Option<ListingFn>,
}

impl Default for LocalDiskOptions {
    fn default() -> Self {
        LocalDiskOptions {
            fsync: true,
            io: ShardIoMode::Auto,
            listing_of: None,
        }
    }
}

/// The shard I/O path a disk ended up with.
enum ShardIo {
    Ring {
        ring: Arc<Ring>,
        direct: bool,
        open: Arc<OpenShards>,
    },
    Blocking,
}

impl ShardIo {
    /// Sets up the path `mode` asks for, stepping down (with a logged
    /// reason) when the kernel or filesystem cannot do it.
    fn choose(root: &Path, label: &str, mode: ShardIoMode) -> ShardIo {
        if mode == ShardIoMode::Blocking {
            return ShardIo::Blocking;
        }
        let ring = match Ring::new(label) {
            Ok(r) => Arc::new(r),
            Err(e) => {
                tracing::warn!(disk = label, error = %e, "io_uring unavailable; shard I/O falls back to blocking reads and writes");
                return ShardIo::Blocking;
            }
        };
        let direct = mode == ShardIoMode::Auto
            && match probe_direct(&root.join("tmp")) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(disk = label, error = %e, "O_DIRECT not supported here; shard I/O goes through the page cache");
                    false
                }
            };
        ShardIo::Ring {
            ring,
            direct,
            open: Arc::new(OpenShards::new()),
        }
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
    committer: Committer,
    leases: crate::leases::LeaseTable,
    opts: LocalDiskOptions,
    reserve: u64,
    io: ShardIo,
    /// The directory as opened: writes check it is still there.
    dir: Arc<DirIdentity>,
    _lock: File,
}

/// An I/O error where fault point `name` asks for one on this disk.
async fn injected(label: &str, name: &'static str) -> Result<(), DiskError> {
    match failpoint::hit(name, label).await.is_error() {
        true => Err(DiskError::Io(std::io::Error::other(format!(
            "{name}: fault injected"
        )))),
        false => Ok(()),
    }
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
        let meta = Arc::new(MetaStore::open(&root.join("meta"), opts.listing_of)?);
        let dir = Arc::new(DirIdentity::of(root)?);
        let committer = Committer::start(meta.clone(), dir.clone(), &label)?;
        let (total, _) = crate::io::fs_space(root)?;
        let io = ShardIo::choose(root, &label, opts.io);
        Ok(LocalDisk {
            io,
            root: root.to_path_buf(),
            label,
            format,
            meta,
            committer,
            leases: Default::default(),
            opts,
            reserve: metadata_reserve(total),
            dir,
            _lock: lock,
        })
    }

    /// The format record read at open.
    pub fn format(&self) -> &FormatRecord {
        &self.format
    }

    /// Which shard I/O path this disk uses: "io_uring+O_DIRECT",
    /// "io_uring" (buffered) or "blocking".
    pub fn io_path(&self) -> &'static str {
        match &self.io {
            ShardIo::Ring { direct: true, .. } => "io_uring+O_DIRECT",
            ShardIo::Ring { direct: false, .. } => "io_uring",
            ShardIo::Blocking => "blocking",
        }
    }

    /// The directory this disk lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn shard_dir(&self, id: ShardId) -> PathBuf {
        self.root
            .join("shards")
            .join(format!("{:02x}", crate::shard_dirs::dir_index(id)))
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

    /// Pieces are object data: like shard blocks, they must leave the
    /// metadata reserve free.
    fn check_piece_space(&self, len: usize) -> Result<(), DiskError> {
        crate::io::room_for_data(&self.root, self.reserve, len as u64).map(|_| ())
    }
}

/// Writes a shard with blocking calls on the blocking pool (the path for
/// kernels without io_uring).
struct LocalShardWriter {
    inner: Option<ShardFileWriter>,
    root: PathBuf,
    reserve: u64,
    staging: Staging,
}

#[async_trait]
impl ShardWriter for LocalShardWriter {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        let mut w = self.inner.take().ok_or_else(|| {
            DiskError::InvalidArgument("shard writer used after a failed append".into())
        })?;
        let (root, reserve) = (self.root.clone(), self.reserve);
        let w = blocking(move || {
            crate::io::room_for_data(&root, reserve, block.len() as u64)?;
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
        let mut staging = self.staging.take();
        let len = blocking(move || {
            let len = w.data_len();
            let (file, _) = w.finish(false)?;
            staging.publish(&file)?;
            Ok(len)
        })
        .await?;
        Ok(ShardSummary { len })
    }
}

#[async_trait]
impl Inventory for LocalDisk {
    async fn stage(&self, ids: Vec<Uuid>, owner: Uuid) -> Result<(), DiskError> {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let entries = ids
            .into_iter()
            .map(|id| (id, staged_value(owner, since)))
            .collect();
        self.committer.side(Side::Stage(entries)).await
    }

    async fn unstage(&self, ids: Vec<Uuid>) -> Result<(), DiskError> {
        self.committer.side(Side::Unstage(ids)).await
    }

    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        let m = self.meta();
        blocking(move || m.list_staged()).await
    }

    async fn list_shards(
        &self,
        after: Option<ShardId>,
        max: usize,
    ) -> Result<Vec<ShardFile>, DiskError> {
        let shards = self.root.join("shards");
        blocking(move || crate::shard_dirs::list(&shards, after, max)).await
    }

    async fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError> {
        let m = self.meta();
        blocking(move || at_bulk_priority(|| m.list_pieces(after, max))).await
    }

    async fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        let m = self.meta();
        blocking(move || m.scan_records(after, max)).await
    }

    async fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        let m = self.meta();
        blocking(move || m.scan_uploads(after, max)).await
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
        let staging = Staging::new(&self.root, id, self.shard_dir(id), self.opts.fsync);
        let header = Header {
            block_size: opts.block_size,
            shard_id: id,
            shard_index: opts.shard_index,
        };
        header.check_block_size()?;
        match &self.io {
            ShardIo::Ring { ring, direct, open } => Ok(Box::new(
                RingShardWriter::create(
                    ring.clone(),
                    header,
                    *direct,
                    self.root.clone(),
                    self.reserve,
                    staging,
                    open.clone(),
                )
                .await?,
            )),
            ShardIo::Blocking => {
                let path = staging.tmp().to_path_buf();
                let w = blocking(move || {
                    let f = OpenOptions::new()
                        .create_new(true)
                        .write(true)
                        .open(&path)?;
                    ShardFileWriter::create(f, &header)
                })
                .await?;
                Ok(Box::new(LocalShardWriter {
                    inner: Some(w),
                    root: self.root.clone(),
                    reserve: self.reserve,
                    staging,
                }))
            }
        }
    }

    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        if failpoint::hit("disk.read_shard", &self.label)
            .await
            .is_error()
        {
            return Err(DiskError::corrupt("shard", "fault injected"));
        }
        let path = self.shard_path(id);
        if let ShardIo::Ring { ring, direct, open } = &self.io {
            return open.read(ring, id, path, *direct, offset, len).await;
        }
        blocking(move || ShardFileReader::open_shard(File::open(&path)?, id)?.read(offset, len))
            .await
    }

    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError> {
        let path = self.shard_path(id);
        blocking(move || Ok(ShardFileReader::open(File::open(&path)?)?.data_len())).await
    }

    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError> {
        self.dir.check()?;
        let path = self.shard_path(id);
        if let ShardIo::Ring { open, .. } = &self.io {
            open.forget(id);
        }
        blocking(move || match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        })
        .await
    }

    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        // A point lookup, answered from RocksDB's memtables and block cache
        // in microseconds: run inline, since a hand-off to the blocking pool
        // costs more than the read (every GET and PUT makes one per disk).
        self.meta.get_records(ns, key)
    }

    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        put: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError> {
        if let Some(p) = &put.piece {
            self.check_piece_space(p.data.len())?;
        }
        injected(&self.label, "disk.put_record").await?;
        self.committer
            .put(RecordWrite {
                ns: ns.to_vec(),
                key: key.to_vec(),
                put,
            })
            .await
    }

    async fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError> {
        // Inline like `get_records`: a piece is at most one stripe's shard.
        self.meta.read_piece(id)
    }

    async fn put_piece(&self, piece: Piece) -> Result<(), DiskError> {
        self.check_piece_space(piece.data.len())?;
        self.dir.check()?;
        let m = self.meta();
        blocking(move || m.put_piece(&piece)).await
    }

    async fn delete_piece(&self, id: Uuid) -> Result<(), DiskError> {
        self.committer.side(Side::DropPiece(id)).await
    }

    async fn collect_pieces(&self) -> Result<(), DiskError> {
        let m = self.meta();
        blocking(move || at_bulk_priority(|| m.collect_pieces())).await
    }

    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        self.dir.check()?;
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.delete_record(&ns, &key, version, if_stamp)).await
    }

    async fn delete_records(
        &self,
        ns: &[u8],
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<Vec<Option<Record>>, DiskError> {
        injected(&self.label, "disk.delete_records").await?;
        self.dir.check()?;
        let (m, ns) = (self.meta(), ns.to_vec());
        blocking(move || m.delete_records(&ns, &items)).await
    }

    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        let (m, ns) = (self.meta(), ns.to_vec());
        blocking(move || m.list_records(&ns, &opts)).await
    }

    async fn list_heads(&self, ns: &[u8], opts: RecordListOptions) -> Result<HeadPage, DiskError> {
        let (m, ns) = (self.meta(), ns.to_vec());
        blocking(move || m.list_heads(&ns, &opts)).await
    }

    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError> {
        self.dir.check()?;
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
        self.dir.check()?;
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
        unstage: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError> {
        injected(&self.label, "disk.put_part").await?;
        self.dir.check()?;
        let (m, ns, key) = (self.meta(), ns.to_vec(), key.to_vec());
        blocking(move || m.put_part(&ns, &key, upload_id, &part, &unstage)).await
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

    async fn acquire_leases(
        &self,
        names: Vec<Vec<u8>>,
        owner: Uuid,
        ttl_ms: u64,
    ) -> Result<bool, DiskError> {
        Ok(self
            .leases
            .acquire(&names, owner, std::time::Duration::from_millis(ttl_ms)))
    }

    async fn release_leases(&self, names: Vec<Vec<u8>>, owner: Uuid) -> Result<(), DiskError> {
        self.leases.release(&names, owner);
        Ok(())
    }
}
