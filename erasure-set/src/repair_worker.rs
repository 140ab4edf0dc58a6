//! The repair worker: drains the repair queue (`repair_queue.rs`), one
//! object at a time, through the set's on-read repair (`repair.rs`).

use std::sync::atomic::Ordering;
use std::sync::Weak;

use std::time::Duration;

use background_work::{CancellationToken, WorkError, Worker, WorkerState, WorkerStatus};

use crate::repair_queue::{RepairReceiver, RepairRequest};
use crate::set::ErasureSet;

/// The worker repairing what reads of one set found damaged.
pub struct RepairWorker {
    set: Weak<ErasureSet>,
    rx: RepairReceiver,
    next: Option<RepairRequest>,
}

impl RepairWorker {
    /// The worker for `set`, fed by the receiver of its queue.
    pub fn new(set: Weak<ErasureSet>, rx: RepairReceiver) -> RepairWorker {
        RepairWorker {
            set,
            rx,
            next: None,
        }
    }
}

#[async_trait::async_trait]
impl Worker for RepairWorker {
    fn name(&self) -> String {
        "repair".into()
    }

    fn status(&self) -> WorkerStatus {
        let Some(set) = self.set.upgrade() else {
            return WorkerStatus::default();
        };
        let q = set.repair_queue();
        WorkerStatus {
            queue: Some(q.backlog() as u64),
            detail: Some(format!(
                "{} repaired, {} failed",
                q.stats.repaired.load(Ordering::Relaxed),
                q.stats.failed.load(Ordering::Relaxed)
            )),
        }
    }

    /// The object under repair is finished at shutdown (one object's
    /// shards and records).
    fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(10)
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let Some(set) = self.set.upgrade() else {
            return Ok(WorkerState::Done);
        };
        let Some(req) = self.next.take() else {
            return Ok(WorkerState::Idle);
        };
        let r = set.heal_object(&req.ns, &req.key, &req.damaged).await;
        set.repair_queue().done(&req.ns, &req.key);
        let stats = &set.repair_queue().stats;
        if let Err(e) = r {
            stats.failed.fetch_add(1, Ordering::Relaxed);
            return Err(format!("repair of {}/{} failed: {e}", req.ns, req.key).into());
        }
        stats.repaired.fetch_add(1, Ordering::Relaxed);
        self.next = self.rx.0.try_recv().ok();
        Ok(match self.next {
            Some(_) => WorkerState::Busy,
            None => WorkerState::Idle,
        })
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        match self.rx.0.recv().await {
            Some(req) => {
                self.next = Some(req);
                WorkerState::Busy
            }
            None => WorkerState::Done,
        }
    }
}
