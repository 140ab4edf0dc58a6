//! erasure-set: the set engine, the room between placement and the disks —
//! one erasure set of k + m disks.
//!
//! It owns what makes a set of disks one reliable store of versioned
//! records and their data: version records and their ordering by
//! (mtime, UUIDv7), the Reed–Solomon codec (systematic, so healthy reads
//! decode nothing), the stripe layout, the write quorum W and read quorum R
//! and the one place per-disk results become a quorum decision, streaming
//! writes and reads with reconstruction while at most m shards are missing
//! or corrupt, on-read repair and its queue, key locks (leased on the disks
//! when gateways share them), the hot-object cache (one per store, shared
//! by its sets) with read coalescing and read-ahead, packed small objects,
//! listings merged across the disks with the heads agreement and read-ahead,
//! and the fan-outs of upload and part records.
//!
//! It must not know buckets, versioning policy, multipart semantics, pools,
//! tiers or S3: namespaces and keys are opaque names, a record's tier
//! reference is opaque data it hands back, and its errors ([`SetError`]) say
//! what happened to the set. It reaches disks only through
//! `disk_engine::Disk`.

mod agreement;
mod at_risk;
mod cache;
pub mod clock;
mod codec;
mod commit;
mod current;
mod decision;
mod heads;
mod list_ahead;
mod listing;
mod local_set;
mod locks;
mod merge;
mod packed;
mod quorum;
mod read;
mod read_ahead;
mod read_queue;
mod repair;
mod repair_queue;
mod repair_worker;
mod set;
mod set_format;
mod uploads;
mod write;

// The records' bytes and the set's error type live in record-format (pure,
// so their decoders are fuzzed without building RocksDB); their paths stay
// `crate::record`, `crate::layout`, ... inside the set engine.
pub use record_format::record;
use record_format::{error, layout, projection};

pub use at_risk::AtRisk;
pub use cache::{CacheStats, ReadCache, DEFAULT_READ_CACHE_BYTES, READ_BUFFER_BYTES};
pub use codec::Codec;
pub use commit::{Carried, Committed};
pub use current::{ObjectPage, Objects};
pub use error::{BodyError, SetError};
pub use heads::{heads_readers, CurrentPage};
pub use layout::{ErasureLayout, PartGeometry};
pub use listing::ResolvedPage;
pub use local_set::{open_local_set, LocalSet, LocalSetConfig};
pub use locks::{ask, release, take, writer_lease_name, KeyGuard, KeyLocks, LEASE_RENEWAL};
pub use packed::{Pieces, DEFAULT_PACK_THRESHOLD};
pub use pool_layout::{default_parity, default_parity_in, DEFAULT_COLD_PARITY, MAX_SET_DISKS};
pub use projection::{encode as encode_projection, listing_of_body, Etag, SummaryView};
pub use quorum::{Quorum, Tally};
pub use read::{ObjectStream, READ_BATCH_BYTES};
pub use read_ahead::{AHEAD_UNITS, MAX_READ_AHEAD_BYTES};
pub use read_queue::UNIT_READS_IN_FLIGHT;
pub use record::{ChecksumValue, ObjectMeta, ObjectRecord, ObjectSummary, PartRef, TierRef};
pub use repair_queue::{RepairQueue, RepairReceiver, RepairStats};
pub use repair_worker::RepairWorker;
pub use set::{
    version_key, DiskRecords, ErasureSet, KeyState, LockPlace, Resolved, VersionBody,
    DEFAULT_BLOCK_SIZE,
};
pub use set_format::{open_set, OpenedSlot, SetWant, Slots};
pub use uploads::{DroppedPart, PartNotStored, PartRefused};
pub use write::{instance, BodyStream, StagedData};
