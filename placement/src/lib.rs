//! placement: the middle room of Granary's architecture — the cluster map,
//! erasure coding, quorums and healing.
//!
//! It turns "store these bytes as version V of key K in bucket B" into
//! shard files and version records on the disks of an erasure set, and back:
//! Reed–Solomon encoding (systematic, so healthy reads decode nothing),
//! write quorum W and read quorum R, version resolution by (mtime, UUIDv7),
//! reconstruction on read while at most m shards are missing or corrupt,
//! and background repair of what a read found damaged.
//!
//! It reaches disks only through `disk_engine::Disk`, and it knows nothing of
//! HTTP, XML or S3 error codes: its [`Error`] says what happened in storage
//! terms and the gateway decides what a client sees.

mod agreement;
mod at_risk;
mod background;
mod buckets;
mod cache;
pub mod clock;
mod cluster;
mod codec;
mod commit;
mod completion;
mod current;
mod error;
mod expansion;
mod gc;
mod heal;
mod layout;
mod list_ahead;
mod listing;
mod local_set;
mod locks;
mod multipart;
mod objects;
mod packed;
mod projection;
mod read;
pub mod record;
mod repair;
mod set;
mod set_format;
mod store;
mod system;
mod tier;
mod transition;
mod write;

#[cfg(test)]
mod packed_tests;
#[cfg(test)]
mod read_tests;
#[cfg(test)]
mod store_tests;

pub use cache::{CacheStats, DEFAULT_READ_CACHE_BYTES};
pub use cluster::{expand, open_cluster_pool, ClusterMap, NodeDisk, PoolMap, DEFAULT_NODE_PORT};
pub use codec::Codec;
pub use current::ObjectPage;
pub use disk_engine::failpoint;
pub use disk_engine::rpc::accept;
pub use disk_engine::{
    at_bulk_priority, become_bulk_thread, DiskHealth, ListStart, Tier, UploadListStart,
};
pub use error::{BodyError, Error};
pub use gc::{GcProgress, DEFAULT_GC_INTERVAL};
pub use heal::{HealProgress, DEFAULT_HEAL_BYTES_PER_SEC};
pub use layout::{ErasureLayout, PartGeometry, Quorum};
pub use local_set::{
    default_parity, open_local_set, LocalSet, LocalSetConfig, DEFAULT_COLD_PARITY, MAX_SET_DISKS,
};
pub use multipart::UploadInfo;
pub use objects::{
    DeleteCondition, DeleteItem, DeleteOutcome, ObjectListing, VersionListing, VersionRef,
    WriteCondition, WriteOptions,
};
pub use packed::{Pieces, DEFAULT_PACK_THRESHOLD};
pub use projection::{listing_of_body, Etag, SummaryView};
pub use read::ObjectStream;
pub use record::{
    BucketRecord, ChecksumValue, ObjectMeta, ObjectRecord, ObjectSummary, PartRecord, PartRef,
    TierRef, UploadRecord, Versioning,
};
pub use repair::RepairStats;
pub use set::{ErasureSet, DEFAULT_BLOCK_SIZE};
pub use store::{instance, DiskStatus, Store, StoreOptions};
pub use tier::{TierBackend, COLD_TIER, POOL_TIER_PREFIX};
pub use transition::{Destination, Transitioned};
pub use write::{BodyStream, StagedData};
