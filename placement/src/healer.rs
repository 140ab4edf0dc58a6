//! A store's healing state: the progress of the current or last pass and
//! what asks for the next (see `heal.rs` for the passes themselves).

use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

/// Default pace of a pass: bytes verified per second.
pub const DEFAULT_HEAL_BYTES_PER_SEC: u64 = 256 << 20;

/// A pass's progress, as admins read it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealProgress {
    /// Whether a pass is running now.
    pub running: bool,
    /// Passes finished since the process started.
    pub passes: u64,
    /// When the current or last pass started (seconds since the epoch).
    pub started_at: Option<u64>,
    /// When the last pass finished.
    pub finished_at: Option<u64>,
    /// Keys the current (or last) pass has to look at.
    pub total: u64,
    /// Keys looked at so far.
    pub scanned: u64,
    /// Object bytes verified so far.
    pub bytes: u64,
    /// Shard files and pieces rebuilt by this pass.
    pub shards_rebuilt: u64,
    /// Records rewritten on disks that lacked them.
    pub records_rewritten: u64,
    /// Keys whose healing failed.
    pub failed: u64,
    /// The last failure.
    pub last_error: Option<String>,
    /// The namespace being healed.
    pub namespace: String,
    /// Objects acknowledged with fewer than k + m disks holding them and
    /// not healed since, over every pool (see `at_risk.rs`; filled in when
    /// read).
    pub objects_at_risk: u64,
    /// Keys whose healing failed (the first [`FAILED_KEYS_SHOWN`]).
    pub failed_keys: Vec<String>,
    /// Each set's part of the pass (the sets are healed at the same time).
    pub sets: Vec<SetHealProgress>,
    /// Every key that failed in this pass (each counts once).
    #[serde(skip)]
    pub(crate) failed_seen: std::collections::HashSet<String>,
}

/// One set's part of a pass.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetHealProgress {
    /// Its pool: "hot", "cold" or a later hot pool's name (`pool-1`).
    pub pool: String,
    /// The set's number in its pool, from 1.
    pub set: usize,
    /// Keys it has to look at.
    pub total: u64,
    /// Keys looked at so far.
    pub scanned: u64,
    /// Keys whose healing failed.
    pub failed: u64,
    /// The namespace being healed in it.
    pub namespace: String,
    /// Whether its part is done.
    pub done: bool,
}

/// Runs passes for a store: on demand and every scrub interval.
pub struct Healer {
    pub(crate) progress: Mutex<HealProgress>,
    pub(crate) run_now: Notify,
    pub(crate) rearm: Notify,
    pub(crate) interval: Mutex<Option<Duration>>,
    pub(crate) bytes_per_sec: Mutex<u64>,
}

/// Failed keys a pass's progress names.
pub const FAILED_KEYS_SHOWN: usize = 100;

impl Default for Healer {
    fn default() -> Self {
        Healer {
            progress: Mutex::default(),
            run_now: Notify::new(),
            rearm: Notify::new(),
            interval: Mutex::new(None),
            bytes_per_sec: Mutex::new(DEFAULT_HEAL_BYTES_PER_SEC),
        }
    }
}

impl Healer {
    /// The progress of the current or last pass.
    pub fn progress(&self) -> HealProgress {
        self.progress.lock().clone()
    }
}
