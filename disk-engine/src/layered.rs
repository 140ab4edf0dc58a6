//! Decorators around a `Disk`: one forwarding implementation of the trait,
//! [`Layered`], and what each decorator adds around the calls it forwards,
//! a [`DiskLayer`] (fault injection in `faulty.rs`, I/O counters in
//! `metered.rs`). A layer sees every call by its [`Op`] before it runs (and
//! may delay or refuse it) and its outcome after, with the data bytes it
//! moved; it never sees or changes the arguments or the answer.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
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

/// Every call a disk (or a shard writer it made) answers.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Stage,
    Unstage,
    ListStaged,
    ListShards,
    ListPieces,
    ScanRecords,
    ScanUploads,
    CreateShard,
    Append,
    Finish,
    ReadShard,
    ShardLen,
    DeleteShard,
    GetRecords,
    PutRecord,
    ReadPiece,
    PutPiece,
    DeletePiece,
    CollectPieces,
    DeleteRecord,
    DeleteRecords,
    ListRecords,
    ListHeads,
    PutUpload,
    GetUpload,
    DeleteUpload,
    ListUploads,
    PutPart,
    ListParts,
    AcquireLeases,
    ReleaseLeases,
}

impl Op {
    /// Whether the call returns object data (a shard range or a piece).
    pub fn reads_data(self) -> bool {
        matches!(self, Op::ReadShard | Op::ReadPiece)
    }

    /// The structure a read of stored data checks (`None` for calls that
    /// check no stored data).
    pub fn checks(self) -> Option<&'static str> {
        match self {
            Op::ReadShard | Op::ShardLen => Some("shard block"),
            Op::ReadPiece => Some("piece"),
            _ => None,
        }
    }

    /// Whether the call writes what the disk keeps (data, records, uploads,
    /// staged ids); deletes of data and leases, which live in memory, are
    /// not counted as writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Op::Stage
                | Op::Unstage
                | Op::Append
                | Op::Finish
                | Op::PutRecord
                | Op::PutPiece
                | Op::DeleteRecord
                | Op::DeleteRecords
                | Op::PutUpload
                | Op::DeleteUpload
                | Op::PutPart
        )
    }
}

/// What a decorator does around the calls it forwards.
#[async_trait]
pub trait DiskLayer: Send + Sync + 'static {
    /// Before `op` runs on the disk labelled `disk`, with the data bytes it
    /// carries (a block, a piece): may wait, or refuse the call with an
    /// error (the disk is not called).
    async fn before(&self, _disk: &str, _op: Op, _bytes: u64) -> Result<(), DiskError> {
        Ok(())
    }

    /// After `op` ran: the data bytes it moved (written, or returned by a
    /// data read), or its error. Not called when the call was cancelled.
    fn after(&self, _op: Op, _outcome: Result<u64, &DiskError>) {}

    /// The health to report instead of asking the disk, if any.
    fn health(&self) -> Option<DiskHealth> {
        None
    }
}

/// A disk wrapped in a layer. Forwards every call of [`Disk`] and
/// [`Inventory`] (and of the shard writers it hands out) to the disk it
/// wraps, with the layer around each.
pub struct Layered<L> {
    inner: Arc<dyn Disk>,
    layer: Arc<L>,
}

impl<L> Clone for Layered<L> {
    fn clone(&self) -> Self {
        Layered {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<L: DiskLayer> Layered<L> {
    /// `inner` with `layer` around every call.
    pub fn wrap(inner: Arc<dyn Disk>, layer: Arc<L>) -> Layered<L> {
        Layered { inner, layer }
    }

    /// The layer.
    pub fn layer(&self) -> &Arc<L> {
        &self.layer
    }

    /// Runs `call` as `op` carrying `bytes`, the layer around it.
    async fn run<T>(
        &self,
        op: Op,
        bytes: u64,
        call: impl Future<Output = Result<T, DiskError>> + Send,
    ) -> Result<T, DiskError> {
        around(self.label(), &*self.layer, op, bytes, call, |_| bytes).await
    }

    /// Runs the data read `call` as `op`, reporting the bytes it returned.
    async fn read(
        &self,
        op: Op,
        call: impl Future<Output = Result<Bytes, DiskError>> + Send,
    ) -> Result<Bytes, DiskError> {
        around(self.label(), &*self.layer, op, 0, call, |b| b.len() as u64).await
    }
}

/// `call` with `layer` before and after it; `moved` tells the bytes a
/// success moved.
async fn around<L: DiskLayer + ?Sized, T>(
    disk: &str,
    layer: &L,
    op: Op,
    bytes: u64,
    call: impl Future<Output = Result<T, DiskError>> + Send,
    moved: impl FnOnce(&T) -> u64,
) -> Result<T, DiskError> {
    layer.before(disk, op, bytes).await?;
    let r = call.await;
    layer.after(op, r.as_ref().map(moved));
    r
}

/// A shard writer whose calls go through the layer of the disk that made it.
struct LayeredWriter<L> {
    disk: String,
    layer: Arc<L>,
    inner: Box<dyn ShardWriter>,
}

#[async_trait]
impl<L: DiskLayer> ShardWriter for LayeredWriter<L> {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        let len = block.len() as u64;
        let call = self.inner.append(block);
        around(&self.disk, &*self.layer, Op::Append, len, call, |_| len).await
    }

    async fn finish(self: Box<Self>) -> Result<ShardSummary, DiskError> {
        let LayeredWriter { disk, layer, inner } = *self;
        around(&disk, &*layer, Op::Finish, 0, inner.finish(), |_| 0).await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<L: DiskLayer> Inventory for Layered<L> {
    async fn stage(&self, ids: Vec<Uuid>, owner: Uuid) -> Result<(), DiskError> {
        self.run(Op::Stage, 0, self.inner.stage(ids, owner)).await
    }
    async fn unstage(&self, ids: Vec<Uuid>) -> Result<(), DiskError> {
        self.run(Op::Unstage, 0, self.inner.unstage(ids)).await
    }
    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        self.run(Op::ListStaged, 0, self.inner.list_staged()).await
    }
    async fn list_shards(
        &self,
        after: Option<ShardId>,
        max: usize,
    ) -> Result<Vec<ShardFile>, DiskError> {
        self.run(Op::ListShards, 0, self.inner.list_shards(after, max))
            .await
    }
    async fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError> {
        self.run(Op::ListPieces, 0, self.inner.list_pieces(after, max))
            .await
    }
    async fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        self.run(Op::ScanRecords, 0, self.inner.scan_records(after, max))
            .await
    }
    async fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        self.run(Op::ScanUploads, 0, self.inner.scan_uploads(after, max))
            .await
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<L: DiskLayer> Disk for Layered<L> {
    fn label(&self) -> &str {
        self.inner.label()
    }
    async fn health(&self) -> DiskHealth {
        match self.layer.health() {
            Some(h) => h,
            None => self.inner.health().await,
        }
    }
    async fn create_shard(
        &self,
        id: ShardId,
        opts: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError> {
        let inner = self
            .run(Op::CreateShard, 0, self.inner.create_shard(id, opts))
            .await?;
        Ok(Box::new(LayeredWriter {
            disk: self.label().to_string(),
            layer: self.layer.clone(),
            inner,
        }))
    }
    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        self.read(Op::ReadShard, self.inner.read_shard(id, offset, len))
            .await
    }
    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError> {
        self.run(Op::ShardLen, 0, self.inner.shard_len(id)).await
    }
    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError> {
        self.run(Op::DeleteShard, 0, self.inner.delete_shard(id))
            .await
    }
    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        self.run(Op::GetRecords, 0, self.inner.get_records(ns, key))
            .await
    }
    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        put: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError> {
        let bytes = put.piece.as_ref().map_or(0, |p| p.data.len() as u64);
        self.run(Op::PutRecord, bytes, self.inner.put_record(ns, key, put))
            .await
    }
    async fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError> {
        self.read(Op::ReadPiece, self.inner.read_piece(id)).await
    }
    async fn put_piece(&self, piece: Piece) -> Result<(), DiskError> {
        let bytes = piece.data.len() as u64;
        self.run(Op::PutPiece, bytes, self.inner.put_piece(piece))
            .await
    }
    async fn delete_piece(&self, id: Uuid) -> Result<(), DiskError> {
        self.run(Op::DeletePiece, 0, self.inner.delete_piece(id))
            .await
    }
    async fn collect_pieces(&self) -> Result<(), DiskError> {
        self.run(Op::CollectPieces, 0, self.inner.collect_pieces())
            .await
    }
    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        let call = self.inner.delete_record(ns, key, version, if_stamp);
        self.run(Op::DeleteRecord, 0, call).await
    }
    async fn delete_records(
        &self,
        ns: &[u8],
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<Vec<Option<Record>>, DiskError> {
        self.run(Op::DeleteRecords, 0, self.inner.delete_records(ns, items))
            .await
    }
    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        self.run(Op::ListRecords, 0, self.inner.list_records(ns, opts))
            .await
    }
    async fn list_heads(&self, ns: &[u8], opts: RecordListOptions) -> Result<HeadPage, DiskError> {
        self.run(Op::ListHeads, 0, self.inner.list_heads(ns, opts))
            .await
    }
    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError> {
        self.run(Op::PutUpload, 0, self.inner.put_upload(ns, entry))
            .await
    }
    async fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        self.run(Op::GetUpload, 0, self.inner.get_upload(ns, key, upload_id))
            .await
    }
    async fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        let call = self.inner.delete_upload(ns, key, upload_id);
        self.run(Op::DeleteUpload, 0, call).await
    }
    async fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        let call = self.inner.list_uploads(ns, prefix, start, max);
        self.run(Op::ListUploads, 0, call).await
    }
    async fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: PartEntry,
        unstage: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError> {
        let call = self.inner.put_part(ns, key, upload_id, part, unstage);
        self.run(Op::PutPart, 0, call).await
    }
    async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        let call = self.inner.list_parts(upload_id, after, max);
        self.run(Op::ListParts, 0, call).await
    }
    async fn acquire_leases(
        &self,
        names: Vec<Vec<u8>>,
        owner: Uuid,
        ttl_ms: u64,
    ) -> Result<bool, DiskError> {
        let call = self.inner.acquire_leases(names, owner, ttl_ms);
        self.run(Op::AcquireLeases, 0, call).await
    }
    async fn release_leases(&self, names: Vec<Vec<u8>>, owner: Uuid) -> Result<(), DiskError> {
        let call = self.inner.release_leases(names, owner);
        self.run(Op::ReleaseLeases, 0, call).await
    }
}
