//! record-format: the bytes of the set engine's room — a version record's
//! body (a format byte and MessagePack with field names), the erasure
//! layout it names, the listing projection stored beside it, and the set
//! engine's error type those decoders answer with.
//!
//! It owns the encoders and decoders, the order of a key's versions and
//! nothing that reads a disk: erasure-set stores and resolves these
//! records, and the fuzz targets exercise them without building RocksDB.
//! It must not know disks' I/O, quorums, buckets, pools or S3.

pub mod error;
pub mod layout;
pub mod projection;
pub mod record;

pub use error::{BodyError, SetError};
