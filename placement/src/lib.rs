//! placement: the object model over the pools — the room between the
//! gateway and the set engine.
//!
//! It owns what makes erasure sets an object store: buckets, versioning
//! policy and the reserved names (`model.rs`), objects with their write
//! preconditions and delete markers, multipart uploads, the pools (the
//! first hot pool, hot pools added later, the cold pool, tiers outside the
//! deployment) and transitions between them, how a pool divides into
//! erasure sets and which set holds a key, listings merged across the
//! sets, healing passes, garbage collection, the background lease, and
//! the cluster map and formatting.
//! One erasure set's work — records, codec, quorums, streaming reads and
//! writes, repair, locks, listings — is the `erasure-set` crate's, reached
//! through `ErasureSet`'s methods.
//!
//! It must not know HTTP, XML, S3 error codes or lifecycle rules: its
//! [`Error`] says what happened in storage terms and the gateway decides
//! what a client sees; lifecycle drives it through its public methods.

mod backend;
mod background;
mod bucket_cache;
mod buckets;
mod cluster;
mod collector;
mod completion;
mod error;
mod gc;
mod heal;
mod healer;
mod home;
mod key_hash;
mod listing;
mod local_pool;
mod merge;
mod model;
mod multipart;
mod objects;
mod pools;
mod start;
mod store;
mod stream;
mod system;
mod tier;
mod transition;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod expansion_tests;
#[cfg(test)]
mod gc_tests;
#[cfg(test)]
mod listing_tests;
#[cfg(test)]
mod packed_tests;
#[cfg(test)]
mod pool_sets_tests;
#[cfg(test)]
mod pools_tests;
#[cfg(test)]
mod read_tests;
#[cfg(test)]
mod rewrite_tests;
#[cfg(test)]
mod store_tests;

pub use backend::TierBackend;
pub use cluster::open_cluster_pool;
pub use collector::GcProgress;
pub use disk_engine::failpoint;
pub use disk_engine::rpc::accept;
pub use disk_engine::{
    at_bulk_priority, become_bulk_thread, DiskHealth, IoStats, ListStart, Tier, UploadListStart,
};
pub use erasure_set::{
    clock, instance, listing_of_body, open_local_set, BodyError, BodyStream, ChecksumValue, Etag,
    LocalSet, LocalSetConfig, ObjectMeta, ObjectPage, ObjectRecord, ObjectSummary, Pieces,
    StagedData, DEFAULT_BLOCK_SIZE, DEFAULT_PACK_THRESHOLD, DEFAULT_READ_CACHE_BYTES,
};
pub use error::Error;
pub use gc::DEFAULT_GC_INTERVAL;
pub use healer::{HealProgress, SetHealProgress, DEFAULT_HEAL_BYTES_PER_SEC};
pub use key_hash::{key_hash, set_index};
pub use listing::{ObjectListing, VersionListing};
pub use local_pool::{open_local_pool, LocalPool, LocalPoolConfig};
pub use model::{
    BucketRecord, DeletingMark, PartRecord, UploadRecord, Versioning, COLD_TIER, POOL_TIER_PREFIX,
};
pub use multipart::UploadInfo;
pub use objects::{
    DeleteCondition, DeleteItem, DeleteOutcome, VersionRef, WriteCondition, WriteOptions,
};
pub use pool_layout::{choose_layout, local_layout, PoolLayout};
pub use pool_layout::{expand, ClusterMap, NodeDisk, PoolMap, DEFAULT_NODE_PORT};
pub use store::{DiskStatus, PoolStatus, Store, StoreOptions};
pub use stream::ObjectStream;
pub use transition::{Destination, Transitioned};
