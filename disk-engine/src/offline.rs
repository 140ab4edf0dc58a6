//! A disk slot whose disk could not be opened: every call fails `Offline`.

use async_trait::async_trait;
use bytes::Bytes;
use uuid::Uuid;

use crate::disk::{Disk, Inventory, ShardWriter};
use crate::error::DiskError;
use crate::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut, ShardOptions,
    UploadListStart,
};
use crate::types::{
    PartEntry, Piece, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, StagedId, Stamp,
    UploadEntry, VersionId,
};

/// Stands in the slot of a disk that is missing, so the set keeps its width
/// and quorum arithmetic stays honest.
pub struct OfflineDisk {
    label: String,
    reason: String,
}

impl OfflineDisk {
    /// A slot at `label` that is offline because of `reason`.
    pub fn new(label: impl Into<String>, reason: impl Into<String>) -> OfflineDisk {
        OfflineDisk {
            label: label.into(),
            reason: reason.into(),
        }
    }

    fn err(&self) -> DiskError {
        DiskError::Offline(format!("{}: {}", self.label, self.reason))
    }
}

#[async_trait]
impl Inventory for OfflineDisk {
    async fn stage(&self, _: Vec<Uuid>, _: Uuid) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn unstage(&self, _: Vec<Uuid>) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        Err(self.err())
    }
    async fn list_shards(&self, _: Option<ShardId>, _: usize) -> Result<Vec<ShardFile>, DiskError> {
        Err(self.err())
    }
    async fn list_pieces(&self, _: Option<Uuid>, _: usize) -> Result<Vec<(Uuid, u64)>, DiskError> {
        Err(self.err())
    }
    async fn scan_records(
        &self,
        _: Option<Vec<u8>>,
        _: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        Err(self.err())
    }
    async fn scan_uploads(
        &self,
        _: Option<Vec<u8>>,
        _: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        Err(self.err())
    }
}

#[async_trait]
impl Disk for OfflineDisk {
    fn label(&self) -> &str {
        &self.label
    }
    async fn health(&self) -> DiskHealth {
        DiskHealth::Offline {
            reason: self.reason.clone(),
        }
    }
    async fn create_shard(
        &self,
        _: ShardId,
        _: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError> {
        Err(self.err())
    }
    async fn read_shard(&self, _: ShardId, _: u64, _: u64) -> Result<Bytes, DiskError> {
        Err(self.err())
    }
    async fn shard_len(&self, _: ShardId) -> Result<u64, DiskError> {
        Err(self.err())
    }
    async fn delete_shard(&self, _: ShardId) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn get_records(&self, _: &[u8], _: &[u8]) -> Result<Vec<Record>, DiskError> {
        Err(self.err())
    }
    async fn put_record(
        &self,
        _: &[u8],
        _: &[u8],
        _: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError> {
        Err(self.err())
    }
    async fn read_piece(&self, _: Uuid) -> Result<Bytes, DiskError> {
        Err(self.err())
    }
    async fn put_piece(&self, _: Piece) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn delete_piece(&self, _: Uuid) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn collect_pieces(&self) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn delete_record(
        &self,
        _: &[u8],
        _: &[u8],
        _: VersionId,
        _: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        Err(self.err())
    }
    async fn list_records(&self, _: &[u8], _: RecordListOptions) -> Result<RecordPage, DiskError> {
        Err(self.err())
    }
    async fn list_heads(&self, _: &[u8], _: RecordListOptions) -> Result<HeadPage, DiskError> {
        Err(self.err())
    }
    async fn put_upload(&self, _: &[u8], _: UploadEntry) -> Result<(), DiskError> {
        Err(self.err())
    }
    async fn get_upload(&self, _: &[u8], _: &[u8], _: Uuid) -> Result<Bytes, DiskError> {
        Err(self.err())
    }
    async fn delete_upload(
        &self,
        _: &[u8],
        _: &[u8],
        _: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        Err(self.err())
    }
    async fn list_uploads(
        &self,
        _: &[u8],
        _: &[u8],
        _: UploadListStart,
        _: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        Err(self.err())
    }
    async fn put_part(
        &self,
        _: &[u8],
        _: &[u8],
        _: Uuid,
        _: PartEntry,
        _: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError> {
        Err(self.err())
    }
    async fn list_parts(
        &self,
        _: Uuid,
        _: u32,
        _: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        Err(self.err())
    }

    async fn acquire_leases(&self, _: Vec<Vec<u8>>, _: Uuid, _: u64) -> Result<bool, DiskError> {
        Err(self.err())
    }

    async fn release_leases(&self, _: Vec<Vec<u8>>, _: Uuid) -> Result<(), DiskError> {
        Err(self.err())
    }
}
