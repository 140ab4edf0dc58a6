//! The `Disk` trait: the only way the placement layer reaches a disk.

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

use crate::error::DiskError;
use crate::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut, ShardOptions,
    ShardSummary, UploadListStart,
};
use crate::types::{
    PartEntry, Piece, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, StagedId, Stamp,
    UploadEntry, VersionId,
};

/// Streams one shard file onto a disk.
///
/// Blocks are appended in order; every block but the last must be exactly
/// the block size. Nothing is visible under the shard's id until
/// [`ShardWriter::finish`] returns. Dropping a writer without finishing it
/// discards the partial file.
#[async_trait]
pub trait ShardWriter: Send {
    /// Appends one block. Not durable until `finish`. Cancel-safe only in the
    /// sense that a cancelled writer must then be dropped.
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError>;
    /// Writes the checksum table, fsyncs the data, and atomically makes the
    /// shard visible under its id (replacing an older file of the same id).
    /// Durable when it returns; a crash before leaves no visible shard.
    async fn finish(self: Box<Self>) -> Result<ShardSummary, DiskError>;
}

/// What a disk holds, for garbage collection: every shard file, piece and
/// staged data id, and every record and upload of every namespace. Scans
/// return pages and continue after the last item; none of them blocks
/// writes.
#[async_trait]
pub trait Inventory: Send + Sync + 'static {
    /// Records `ids` as staged by `owner` (see [`StagedId`]), before any of
    /// their data is written. Durable on return.
    async fn stage(&self, ids: Vec<Uuid>, owner: Uuid) -> Result<(), DiskError>;

    /// Removes staged entries (data committed elsewhere, or discarded).
    /// Durable on return; removing a missing entry succeeds.
    async fn unstage(&self, ids: Vec<Uuid>) -> Result<(), DiskError>;

    /// Every staged entry.
    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError>;

    /// Shard files in the disk's listing order (stable: a listing can
    /// continue after any id), after `after`, at most `max`.
    async fn list_shards(
        &self,
        after: Option<ShardId>,
        max: usize,
    ) -> Result<Vec<ShardFile>, DiskError>;

    /// Piece ids in order, after `after`, at most `max`, with their sizes.
    async fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError>;

    /// Records of every namespace in key order, after the scan position
    /// `after` (the `next` of the previous page), at most `max`; returns
    /// them and the position to continue from (`None` at the end).
    async fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError>;

    /// Multipart uploads of every namespace with their parts, as
    /// [`Self::scan_records`] pages.
    async fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError>;
}

/// One disk: shard files, version records and multipart state.
///
/// Object-safe, so the local engine, a remote node client and test wrappers
/// all fit behind `Arc<dyn Disk>`. Every method is safe to cancel: a
/// cancelled write either happened entirely or not at all.
#[async_trait]
pub trait Disk: Inventory {
    /// Human-readable location (path or endpoint) for logs and errors.
    fn label(&self) -> &str;

    /// Whether the disk answers, and its space.
    async fn health(&self) -> DiskHealth;

    /// Starts a new shard file. See [`ShardWriter`] for durability.
    async fn create_shard(
        &self,
        id: ShardId,
        opts: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError>;

    /// Reads `len` bytes of shard data at `offset`, verifying the checksum of
    /// every block the range touches. `NotFound` if the shard is absent,
    /// `Corrupt` if any touched block fails its checksum.
    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError>;

    /// Length of a complete shard's data (`NotFound`/`Corrupt` as for reads).
    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError>;

    /// Deletes a shard file. Deleting a missing shard succeeds. Not synced:
    /// after a crash the file may reappear as unreferenced garbage.
    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError>;

    /// Every version stored for `key` in `ns`.
    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError>;

    /// Stores a version record unless a newer write (by [`Stamp`]) of the
    /// same version is already stored, with what [`RecordPut`] puts into
    /// the same write. Atomic and durable on return.
    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        put: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError>;

    /// This disk's piece of a packed object, verified (`NotFound` if
    /// absent, `Corrupt` if its checksum fails).
    async fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError>;

    /// Stores a piece by itself (repair). Durable on return.
    async fn put_piece(&self, piece: Piece) -> Result<(), DiskError>;

    /// Deletes a piece; a missing one is fine. Not synced.
    async fn delete_piece(&self, id: Uuid) -> Result<(), DiskError>;

    /// Reclaims the space of deleted pieces now (otherwise compaction does
    /// it gradually). Runs beside reads and writes.
    async fn collect_pieces(&self) -> Result<(), DiskError>;

    /// Deletes one version; with `if_stamp`, only when the stored write has
    /// that stamp. Returns the removed record. Atomic and durable on return.
    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError>;

    /// Deletes many versions as one atomic, durable write where the disk
    /// can (one at a time otherwise); returns each removed record.
    async fn delete_records(
        &self,
        ns: &[u8],
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<Vec<Option<Record>>, DiskError> {
        let mut removed = Vec::with_capacity(items.len());
        for (key, version) in items {
            removed.push(self.delete_record(ns, &key, version, None).await?);
        }
        Ok(removed)
    }

    /// Lists keys of `ns` in byte order, each with all its versions.
    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError>;

    /// Lists keys of `ns` in byte order from the disk's heads index: each
    /// key's versions with their stamps and listing projections, without
    /// reading the records.
    async fn list_heads(&self, ns: &[u8], opts: RecordListOptions) -> Result<HeadPage, DiskError>;

    /// Creates or overwrites a multipart upload's state. Durable on return.
    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError>;

    /// Reads an upload's state (`NotFound` if absent).
    async fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError>;

    /// Removes an upload and all its parts atomically; returns the removed
    /// parts. `NotFound` if the upload does not exist. Durable on return.
    async fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError>;

    /// Lists uploads of `ns` whose key starts with `prefix`, ordered by
    /// (key, upload id). Returns the page and whether more follow.
    async fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError>;

    /// Stores a part of an existing upload (`NotFound` if the upload is
    /// gone), removing the staged entries `unstage` in the same write;
    /// returns the part of the same number it replaced. Atomic and durable.
    async fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: PartEntry,
        unstage: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError>;

    /// Takes (or renews) leases on every name in `names` for `owner`, for
    /// `ttl_ms` milliseconds; all or none. False when another owner holds
    /// one of them. Leases live in memory only (see `leases.rs`).
    async fn acquire_leases(
        &self,
        names: Vec<Vec<u8>>,
        owner: Uuid,
        ttl_ms: u64,
    ) -> Result<bool, DiskError>;

    /// Gives up the leases `owner` holds on `names`.
    async fn release_leases(&self, names: Vec<Vec<u8>>, owner: Uuid) -> Result<(), DiskError>;

    /// Lists parts numbered above `after`, ascending; returns the page and
    /// whether more follow.
    async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError>;
}
