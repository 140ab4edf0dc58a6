//! A store's garbage-collection state: what the collector did, and what
//! asks for its next pass (see `gc.rs` for the passes themselves).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;
use uuid::Uuid;

/// What the collector did, as admins read it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcProgress {
    /// A pass is running now.
    pub running: bool,
    /// Passes finished since the process started.
    pub passes: u64,
    /// When the last pass finished (seconds since the epoch).
    pub finished_at: Option<u64>,
    /// Shard files and pieces the last pass looked at.
    pub checked: u64,
    /// Shard files deleted, over all passes.
    pub shards_deleted: u64,
    /// Pieces deleted, over all passes.
    pub pieces_deleted: u64,
    /// Bytes those deletions reclaimed.
    pub bytes_reclaimed: u64,
    /// Staged entries removed (their data committed, or their owner dead).
    pub staged_cleared: u64,
    /// Sets the last pass skipped (a disk did not answer), by why.
    pub skipped: Vec<String>,
    /// What the last pass did in each set of each pool.
    pub sets: Vec<SetGcProgress>,
}

/// What a pass did in one set.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetGcProgress {
    /// Its pool: "hot", "cold" or a later hot pool's name (`pool-1`).
    pub pool: String,
    /// The set's number in its pool, from 1.
    pub set: usize,
    /// Shard files and pieces looked at.
    pub checked: u64,
    /// Shard files and pieces deleted.
    pub deleted: u64,
    /// Why the set was skipped, if it was.
    pub skipped: Option<String>,
}

/// The collector's state in a store.
#[derive(Default)]
pub struct Collector {
    pub(crate) progress: Mutex<GcProgress>,
    pub(crate) running: AtomicBool,
    pub(crate) run_now: Notify,
    pub(crate) interval: Mutex<Option<Duration>>,
    /// Other owners seen without their writer lease, and since when.
    pub(crate) absent: Mutex<HashMap<Uuid, Instant>>,
}
