//! A `Disk` decorator that counts what reaches the disk: data reads and
//! the bytes they return, writes and the data bytes they carry, and
//! failures of the disk itself. The set engine wraps every disk of a set in
//! it, so what a request costs each disk is seen where it happens (see
//! `layered.rs`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::disk::Disk;
use crate::error::DiskError;
use crate::layered::{DiskLayer, Layered, Op};

/// Counters of one disk's calls, since the process started.
#[derive(Debug, Default)]
pub struct IoCounters {
    reads: AtomicU64,
    read_bytes: AtomicU64,
    writes: AtomicU64,
    written_bytes: AtomicU64,
    errors: AtomicU64,
}

/// The counters of one disk at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Shard ranges and pieces read.
    pub reads: u64,
    /// Bytes of object data those reads returned (shard data, checked).
    pub read_bytes: u64,
    /// Calls that wrote what the disk keeps (blocks, pieces, records,
    /// uploads).
    pub writes: u64,
    /// Bytes of object data written (shard blocks and pieces).
    pub written_bytes: u64,
    /// Calls that failed because the disk could not be used (offline,
    /// I/O or metadata store errors).
    pub errors: u64,
}

impl IoCounters {
    /// The counters now.
    pub fn stats(&self) -> IoStats {
        IoStats {
            reads: self.reads.load(Relaxed),
            read_bytes: self.read_bytes.load(Relaxed),
            writes: self.writes.load(Relaxed),
            written_bytes: self.written_bytes.load(Relaxed),
            errors: self.errors.load(Relaxed),
        }
    }
}

impl DiskLayer for IoCounters {
    fn after(&self, op: Op, outcome: Result<u64, &DiskError>) {
        match outcome {
            Ok(bytes) if op.reads_data() => {
                self.reads.fetch_add(1, Relaxed);
                self.read_bytes.fetch_add(bytes, Relaxed);
            }
            Ok(bytes) if op.writes() => {
                self.writes.fetch_add(1, Relaxed);
                self.written_bytes.fetch_add(bytes, Relaxed);
            }
            Ok(_) => {}
            Err(e) if e.is_disk_failure() => {
                self.errors.fetch_add(1, Relaxed);
            }
            Err(_) => {}
        }
    }
}

/// A disk whose calls are counted.
pub type MeteredDisk = Layered<IoCounters>;

impl Layered<IoCounters> {
    /// Wraps `inner` with fresh counters.
    pub fn metered(inner: Arc<dyn Disk>) -> MeteredDisk {
        Layered::wrap(inner, Arc::default())
    }
}
