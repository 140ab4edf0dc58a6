//! Packed small objects: an object at or below the pack threshold is
//! erasure-coded in memory into k + m pieces (exactly the shards a
//! single-stripe object would have), and each disk stores its piece in its
//! pack store in the same atomic write as the version record. No file per
//! object, one durable write per disk, and the same layout, quorum, read,
//! reconstruct and repair logic as shard files: the helpers here pick the
//! piece or the shard-file call for a part's data.

use std::sync::Arc;

use bytes::Bytes;
use disk_engine::{Disk, DiskError, Piece, ShardId};
use uuid::Uuid;

/// Default largest object that is packed.
pub const DEFAULT_PACK_THRESHOLD: u64 = 128 << 10;

/// Reads `len` bytes at `offset` of one disk's shard of a part.
pub(crate) async fn read_data(
    disk: &Arc<dyn Disk>,
    id: Uuid,
    packed: bool,
    offset: u64,
    len: u64,
) -> Result<Bytes, DiskError> {
    if !packed {
        return disk.read_shard(ShardId(id), offset, len).await;
    }
    let piece = disk.read_piece(id).await?;
    let end = offset + len;
    if end > piece.len() as u64 {
        return Err(DiskError::corrupt("piece", "shorter than its object needs"));
    }
    Ok(piece.slice(offset as usize..end as usize))
}

/// Length of one disk's shard of a part.
pub(crate) async fn data_len(
    disk: &Arc<dyn Disk>,
    id: Uuid,
    packed: bool,
) -> Result<u64, DiskError> {
    if packed {
        Ok(disk.read_piece(id).await?.len() as u64)
    } else {
        disk.shard_len(ShardId(id)).await
    }
}

/// Deletes one disk's shard of a part.
pub(crate) async fn delete_data(
    disk: &Arc<dyn Disk>,
    id: Uuid,
    packed: bool,
) -> Result<(), DiskError> {
    if packed {
        disk.delete_piece(id).await
    } else {
        disk.delete_shard(ShardId(id)).await
    }
}

/// The pieces of a packed object, by shard index, not yet stored.
#[derive(Clone, Debug)]
pub struct Pieces {
    /// The piece id (the part's data id).
    pub id: Uuid,
    /// Piece of each shard index.
    pub shards: Vec<Bytes>,
}

impl Pieces {
    /// The piece the disk holding shard `shard` stores.
    pub(crate) fn for_shard(&self, shard: usize) -> Piece {
        Piece {
            id: self.id,
            data: self.shards[shard].clone(),
        }
    }
}
