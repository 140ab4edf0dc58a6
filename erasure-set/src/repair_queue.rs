//! The repair queue: the objects reads found damaged, waiting for the
//! repair worker (`repair.rs`), and the counters an admin reads. Requests
//! never block a read; past the queue's depth they are dropped and a later
//! read queues the object again.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc;
use uuid::Uuid;

/// Objects waiting for repair; further requests are dropped (and logged)
/// until the worker catches up — a later read will queue them again.
const REPAIR_QUEUE_DEPTH: usize = 1024;
/// Background checks of unread shards running at once (see
/// `check_unread_shards`).
pub(crate) const PRESENCE_CHECKS: usize = 4;
/// One object to repair, with the (shard id, disk slot) pairs a read found
/// damaged.
#[derive(Debug)]
pub struct RepairRequest {
    pub(crate) ns: String,
    pub(crate) key: String,
    pub(crate) damaged: Vec<(Uuid, usize)>,
}

/// Counters an admin can read.
#[derive(Debug, Default)]
pub struct RepairStats {
    /// Requests accepted into the queue.
    pub queued: AtomicU64,
    /// Requests dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Objects whose repair finished.
    pub repaired: AtomicU64,
    /// Shard files rewritten.
    pub shards_rewritten: AtomicU64,
    /// Records rewritten on disks that lacked them.
    pub records_rewritten: AtomicU64,
    /// Repairs that failed.
    pub failed: AtomicU64,
    /// Writes acknowledged while some disk of the set did not take them:
    /// below full redundancy until healed.
    pub degraded_writes: AtomicU64,
}

/// The sending side of the repair queue, held by the set.
pub struct RepairQueue {
    tx: mpsc::Sender<RepairRequest>,
    pending: Mutex<HashSet<(String, String)>>,
    /// Counters.
    pub stats: Arc<RepairStats>,
}

/// The receiving side, handed to [`spawn_repair_worker`].
pub struct RepairReceiver(pub(crate) mpsc::Receiver<RepairRequest>);

impl RepairQueue {
    /// Objects queued and not yet repaired.
    pub fn backlog(&self) -> usize {
        self.pending.lock().len()
    }

    /// A new bounded queue and its receiver.
    pub fn new() -> (RepairQueue, RepairReceiver) {
        let (tx, rx) = mpsc::channel(REPAIR_QUEUE_DEPTH);
        (
            RepairQueue {
                tx,
                pending: Mutex::new(HashSet::new()),
                stats: Arc::default(),
            },
            RepairReceiver(rx),
        )
    }

    /// Asks for `ns/key` to be repaired. Never blocks.
    pub fn request(&self, ns: &str, key: &str, damaged: Vec<(Uuid, usize)>) {
        let name = (ns.to_string(), key.to_string());
        if !self.pending.lock().insert(name) {
            return;
        }
        let req = RepairRequest {
            ns: ns.to_string(),
            key: key.to_string(),
            damaged,
        };
        match self.tx.try_send(req) {
            Ok(()) => {
                self.stats.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let req = e.into_inner();
                self.pending.lock().remove(&(req.ns, req.key));
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("repair queue full; a later read will queue the object again");
            }
        }
    }

    /// `ns/key` is repaired (or its repair failed): it may be queued again.
    pub(crate) fn done(&self, ns: &str, key: &str) {
        self.pending
            .lock()
            .remove(&(ns.to_string(), key.to_string()));
    }
}
