//! A `Disk` wrapper that injects faults: offline, failing or full writes,
//! corrupt reads, added latency. It forwards every method to the disk it
//! wraps when no fault applies.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use uuid::Uuid;

use crate::disk::{Disk, Inventory, ShardWriter};
use crate::error::DiskError;
use crate::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut, ShardOptions,
    ShardSummary, UploadListStart,
};
use crate::types::{
    PartEntry, Piece, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, StagedId, Stamp,
    UploadEntry, VersionId,
};

/// One kind of injected failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every call fails as if the disk were unplugged.
    Offline,
    /// Shard appends fail with "disk full" once this many bytes were accepted.
    FullAfter(u64),
    /// Shard appends and record writes fail with an I/O error.
    FailWrites,
    /// Shard and piece reads report a checksum failure.
    CorruptReads,
    /// Every call waits this long first.
    Delay(Duration),
}

#[derive(Default)]
struct State {
    faults: Vec<Fault>,
    written: u64,
}

/// Wraps a disk and applies the faults currently set.
#[derive(Clone)]
pub struct FaultyDisk {
    inner: Arc<dyn Disk>,
    state: Arc<Mutex<State>>,
}

impl FaultyDisk {
    /// Wraps `inner` with no faults set.
    pub fn new(inner: Arc<dyn Disk>) -> FaultyDisk {
        FaultyDisk {
            inner,
            state: Arc::default(),
        }
    }

    /// Replaces the set of active faults.
    pub fn set_faults(&self, faults: Vec<Fault>) {
        let mut s = self.state.lock();
        s.faults = faults;
        s.written = 0;
    }

    fn has(&self, f: &Fault) -> bool {
        self.state.lock().faults.contains(f)
    }

    /// Enters a read of `what`, failing it as corrupt under `CorruptReads`.
    async fn enter_read(&self, what: &'static str) -> Result<(), DiskError> {
        self.enter().await?;
        if self.has(&Fault::CorruptReads) {
            return Err(DiskError::corrupt(what, "injected corruption"));
        }
        Ok(())
    }

    async fn enter(&self) -> Result<(), DiskError> {
        let delay = self.state.lock().faults.iter().find_map(|f| match f {
            Fault::Delay(d) => Some(*d),
            _ => None,
        });
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        if self.has(&Fault::Offline) {
            return Err(DiskError::Offline(format!(
                "{}: injected",
                self.inner.label()
            )));
        }
        Ok(())
    }

    fn check_write(&self, bytes: u64) -> Result<(), DiskError> {
        let mut s = self.state.lock();
        if s.faults.contains(&Fault::FailWrites) {
            return Err(DiskError::Io(std::io::Error::other(
                "injected write failure",
            )));
        }
        let limit = s.faults.iter().find_map(|f| match f {
            Fault::FullAfter(n) => Some(*n),
            _ => None,
        });
        if let Some(limit) = limit {
            if s.written + bytes > limit {
                return Err(DiskError::Full);
            }
        }
        s.written += bytes;
        Ok(())
    }
}

struct FaultyWriter {
    disk: FaultyDisk,
    inner: Box<dyn ShardWriter>,
}

#[async_trait]
impl ShardWriter for FaultyWriter {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        self.disk.enter().await?;
        self.disk.check_write(block.len() as u64)?;
        self.inner.append(block).await
    }
    async fn finish(self: Box<Self>) -> Result<ShardSummary, DiskError> {
        self.disk.enter().await?;
        self.disk.check_write(0)?;
        self.inner.finish().await
    }
}

#[async_trait]
impl Inventory for FaultyDisk {
    async fn stage(&self, ids: Vec<Uuid>, owner: Uuid) -> Result<(), DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.stage(ids, owner).await
    }
    async fn unstage(&self, ids: Vec<Uuid>) -> Result<(), DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.unstage(ids).await
    }
    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        self.enter().await?;
        self.inner.list_staged().await
    }
    async fn list_shards(
        &self,
        after: Option<ShardId>,
        max: usize,
    ) -> Result<Vec<ShardFile>, DiskError> {
        self.enter().await?;
        self.inner.list_shards(after, max).await
    }
    async fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError> {
        self.enter().await?;
        self.inner.list_pieces(after, max).await
    }
    async fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        self.enter().await?;
        self.inner.scan_records(after, max).await
    }
    async fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        self.enter().await?;
        self.inner.scan_uploads(after, max).await
    }
}

#[async_trait]
impl Disk for FaultyDisk {
    fn label(&self) -> &str {
        self.inner.label()
    }
    async fn health(&self) -> DiskHealth {
        if self.has(&Fault::Offline) {
            return DiskHealth::Offline {
                reason: "injected".into(),
            };
        }
        self.inner.health().await
    }
    async fn create_shard(
        &self,
        id: ShardId,
        opts: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError> {
        self.enter().await?;
        let inner = self.inner.create_shard(id, opts).await?;
        Ok(Box::new(FaultyWriter {
            disk: self.clone(),
            inner,
        }))
    }
    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        self.enter_read("shard block").await?;
        self.inner.read_shard(id, offset, len).await
    }
    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError> {
        self.enter_read("shard block").await?;
        self.inner.shard_len(id).await
    }
    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError> {
        self.enter().await?;
        self.inner.delete_shard(id).await
    }
    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        self.enter().await?;
        self.inner.get_records(ns, key).await
    }
    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        put: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError> {
        self.enter().await?;
        self.check_write(put.piece.as_ref().map_or(0, |p| p.data.len() as u64))?;
        self.inner.put_record(ns, key, put).await
    }
    async fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError> {
        self.enter_read("piece").await?;
        self.inner.read_piece(id).await
    }
    async fn put_piece(&self, piece: Piece) -> Result<(), DiskError> {
        self.enter().await?;
        self.check_write(piece.data.len() as u64)?;
        self.inner.put_piece(piece).await
    }
    async fn delete_piece(&self, id: Uuid) -> Result<(), DiskError> {
        self.enter().await?;
        self.inner.delete_piece(id).await
    }
    async fn collect_pieces(&self) -> Result<(), DiskError> {
        self.enter().await?;
        self.inner.collect_pieces().await
    }
    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.delete_record(ns, key, version, if_stamp).await
    }
    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        self.enter().await?;
        self.inner.list_records(ns, opts).await
    }
    async fn list_heads(&self, ns: &[u8], opts: RecordListOptions) -> Result<HeadPage, DiskError> {
        self.enter().await?;
        self.inner.list_heads(ns, opts).await
    }
    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.put_upload(ns, entry).await
    }
    async fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        self.enter().await?;
        self.inner.get_upload(ns, key, upload_id).await
    }
    async fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.delete_upload(ns, key, upload_id).await
    }
    async fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        self.enter().await?;
        self.inner.list_uploads(ns, prefix, start, max).await
    }
    async fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: PartEntry,
        unstage: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError> {
        self.enter().await?;
        self.check_write(0)?;
        self.inner.put_part(ns, key, upload_id, part, unstage).await
    }
    async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        self.enter().await?;
        self.inner.list_parts(upload_id, after, max).await
    }
    async fn acquire_leases(
        &self,
        names: Vec<Vec<u8>>,
        owner: Uuid,
        ttl_ms: u64,
    ) -> Result<bool, DiskError> {
        self.enter().await?;
        self.inner.acquire_leases(names, owner, ttl_ms).await
    }
    async fn release_leases(&self, names: Vec<Vec<u8>>, owner: Uuid) -> Result<(), DiskError> {
        self.enter().await?;
        self.inner.release_leases(names, owner).await
    }
}
