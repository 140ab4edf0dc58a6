//! disk-engine: one [`Disk`] per device or directory — the bottom room of
//! Granary's architecture.
//!
//! It stores three things and nothing else:
//! - *shard files*: one append-only file per (object version, part) holding
//!   this disk's shard, in fixed-size blocks that each carry a CRC64-NVME
//!   bitrot checksum, verified on every read;
//! - *version records* and *multipart state* in a RocksDB instance per disk,
//!   in key order so that listing is a range scan;
//! - the disk's [`FormatRecord`]: which deployment, pool, tier, erasure set
//!   and slot it belongs to.
//!
//! It knows nothing of S3, HTTP or erasure coding: buckets and keys are opaque
//! byte strings in a namespace, record bodies are opaque bytes, and files are
//! named by id ([`ShardId`]), never by object key, so no key can escape the
//! disk's directory.

mod commit;
// The formats this engine stores and sends live in disk-format (pure, so
// its decoders are fuzzed without building RocksDB); their paths stay
// `crate::types`, `crate::keys`, ... inside the engine.
use disk_format::{atomic, envelope, error, format, heads, keys, messages, types};
#[cfg(test)]
mod conformance;
mod disk;
pub mod failpoint;
mod faulty;
mod inventory;
mod io;
mod layered;
mod leases;
mod local;
#[cfg(test)]
mod local_tests;
mod meta;
mod metered;
mod offline;
mod presence;
mod ring_shard;
pub mod rpc;
mod shard_dirs;
mod shard_file;
mod staging;

pub use atomic::write_file_atomic;
pub use disk::{Disk, Inventory, ShardWriter};
pub use disk_format::shard_layout::{BLOCK_ALIGN, MAX_BLOCK_SIZE};
pub use error::DiskError;
pub use faulty::{Fault, Faults, FaultyDisk};
pub use format::{probe_dir, DirState, FormatRecord, Tier, FORMAT_FILE, FORMAT_VERSION};
pub use heads::{decode_listed_key, decode_listed_key_into, head_versions, HeadVersion};
pub use io::{at_bulk_priority, become_bulk_thread};
pub use layered::{DiskLayer, Layered, Op};
pub use local::{metadata_reserve, LocalDisk, LocalDiskOptions, ShardIoMode};
pub use messages::{
    DiskHealth, HeadPage, ListStart, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut,
    ShardOptions, ShardSummary, UploadListStart,
};
pub use meta::ListingFn;
pub use metered::{IoCounters, IoStats, MeteredDisk};
pub use offline::OfflineDisk;
pub use types::{
    DiskId, HeadEntry, KeyRecords, PartEntry, Piece, Record, ScannedRecord, ScannedUpload,
    ShardFile, ShardId, StagedId, Stamp, UploadEntry, VersionId,
};
