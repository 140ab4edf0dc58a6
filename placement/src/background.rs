//! Which process runs a store's scheduled background work (lifecycle
//! passes, tier sweeps, scrubs) when several gateways share its disks: the
//! one holding the store's background lease on a majority of the set's
//! disks. Every gateway keeps asking for it; the holder renews it, and if
//! the holder dies another takes over when the lease runs out. Work an
//! admin asks for runs wherever it is asked.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use background_work::{CancellationToken, WorkError, Worker, WorkerState, WorkerStatus};
use disk_engine::Disk;
use erasure_set::{ask, release, take, writer_lease_name, LEASE_RENEWAL};
use uuid::Uuid;

/// The name leased for background work.
const BACKGROUND_NAME: &[u8] = b"\0granary-background";
/// How long the lease lasts unless renewed (how long a dead holder keeps
/// others waiting).
const BACKGROUND_LEASE: Duration = Duration::from_secs(90);
/// How often every gateway asks for (or renews) it.
const BACKGROUND_ASK: Duration = Duration::from_secs(20);

/// Whether this process holds the background lease.
#[derive(Default)]
pub(crate) struct BackgroundLease {
    held: AtomicBool,
    shared: AtomicBool,
}

impl BackgroundLease {
    /// True when this process should run scheduled background work: it is
    /// the only writer, or it holds the lease.
    pub(crate) fn owns(&self) -> bool {
        !self.shared.load(Relaxed) || self.held.load(Relaxed)
    }

    /// From now on only the lease holder runs scheduled work: the worker
    /// that keeps asking for the lease on `disks` (and releases it when it
    /// stops).
    pub(crate) fn contend(self: &Arc<Self>, disks: Vec<Arc<dyn Disk>>) -> LeaseContender {
        self.shared.store(true, Relaxed);
        LeaseContender {
            lease: self.clone(),
            disks: Arc::new(disks),
            names: vec![BACKGROUND_NAME.to_vec()],
            owner: Uuid::new_v4(),
            asked: false,
        }
    }
}

/// Asks for the background lease every `BACKGROUND_ASK`, renewing it while
/// held.
pub(crate) struct LeaseContender {
    lease: Arc<BackgroundLease>,
    disks: Arc<Vec<Arc<dyn Disk>>>,
    names: Vec<Vec<u8>>,
    owner: Uuid,
    asked: bool,
}

#[async_trait::async_trait]
impl Worker for LeaseContender {
    fn name(&self) -> String {
        "background lease".into()
    }

    fn status(&self) -> WorkerStatus {
        let held = self.lease.held.load(Relaxed);
        WorkerStatus {
            queue: None,
            detail: Some(
                if held {
                    "held here"
                } else {
                    "held elsewhere or by no one"
                }
                .into(),
            ),
        }
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let quorum = self.disks.len() / 2 + 1;
        let (granted, _) = ask(&self.disks, &self.names, self.owner, BACKGROUND_LEASE).await;
        let held = granted >= quorum;
        if !held {
            release(self.disks.clone(), self.names.clone(), self.owner).await;
        }
        if self.lease.held.swap(held, Relaxed) != held {
            tracing::info!(held, "background work lease");
        }
        Ok(WorkerState::Idle)
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        if std::mem::replace(&mut self.asked, true) {
            tokio::time::sleep(BACKGROUND_ASK).await;
        }
        WorkerState::Busy
    }

    async fn stop(&mut self) {
        release(self.disks.clone(), self.names.clone(), self.owner).await;
    }
}

/// Holds this process's writer lease on a set's disks (renewed every
/// `LEASE_RENEWAL`, released when it stops): while it is held, garbage
/// collection elsewhere treats the data this process staged as being
/// written (see `gc.rs`).
pub(crate) struct WriterLease {
    disks: Arc<Vec<Arc<dyn Disk>>>,
    names: Vec<Vec<u8>>,
    owner: Uuid,
    taken: bool,
}

impl WriterLease {
    pub(crate) fn new(disks: Vec<Arc<dyn Disk>>) -> WriterLease {
        let owner = erasure_set::instance();
        WriterLease {
            disks: Arc::new(disks),
            names: vec![writer_lease_name(owner)],
            owner,
            taken: false,
        }
    }
}

#[async_trait::async_trait]
impl Worker for WriterLease {
    fn name(&self) -> String {
        "writer lease".into()
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        take(&self.disks, &self.names, self.owner)
            .await
            .map_err(|e| format!("the writer lease was {e}"))?;
        Ok(WorkerState::Idle)
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        if std::mem::replace(&mut self.taken, true) {
            tokio::time::sleep(LEASE_RENEWAL).await;
        }
        WorkerState::Busy
    }

    async fn stop(&mut self) {
        release(self.disks.clone(), self.names.clone(), self.owner).await;
    }
}
