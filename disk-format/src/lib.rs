//! disk-format: the bytes of the bottom room — what one disk stores and
//! what a node and a gateway send each other about it, as pure encoders
//! and decoders.
//!
//! It owns the version record and packed-piece envelopes, the heads index
//! entries and listed keys, the key encoding of the metadata store, the
//! disk's `format.json`, a shard file's header and tail, the node RPC's
//! framing, signatures and messages, and the one disk error type. Every
//! decoder checks lengths and checksums and answers `Corrupt` rather than
//! panic.
//!
//! It must not know RocksDB, io_uring, reading or writing shard files,
//! HTTP, erasure coding or S3 (its only file work is `format.json`:
//! probing a directory for it and writing it atomically): disk-engine does
//! the I/O with these formats, and the fuzz targets exercise them without
//! building any of that.

pub mod atomic;
pub mod envelope;
pub mod error;
pub mod format;
pub mod heads;
pub mod keys;
pub mod messages;
pub mod rpc;
pub mod shard_layout;
pub mod types;

pub use error::DiskError;
