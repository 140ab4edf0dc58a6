//! Which process runs a store's scheduled background work (lifecycle
//! passes, tier sweeps, scrubs) when several gateways share its disks: the
//! one holding the store's background lease on a majority of the set's
//! disks. Every gateway keeps asking for it; the holder renews it, and if
//! the holder dies another takes over when the lease runs out. Work an
//! admin asks for runs wherever it is asked.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use disk_engine::Disk;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use erasure_set::{ask, release, renew, take, writer_lease_name};

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

    /// From now on only the lease holder runs scheduled work; keeps asking
    /// for the lease until `shutdown`.
    pub(crate) fn contend(
        self: &Arc<Self>,
        disks: Vec<Arc<dyn Disk>>,
        shutdown: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        self.shared.store(true, Relaxed);
        let me = self.clone();
        let owner = Uuid::new_v4();
        let names = vec![BACKGROUND_NAME.to_vec()];
        let disks = Arc::new(disks);
        tokio::spawn(async move {
            let quorum = disks.len() / 2 + 1;
            loop {
                let (granted, _) = ask(&disks, &names, owner, BACKGROUND_LEASE).await;
                let held = granted >= quorum;
                if !held {
                    release(disks.clone(), names.clone(), owner).await;
                }
                if me.held.swap(held, Relaxed) != held {
                    tracing::info!(held, "background work lease");
                }
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        release(disks.clone(), names.clone(), owner).await;
                        return;
                    }
                    _ = tokio::time::sleep(BACKGROUND_ASK) => {}
                }
            }
        })
    }
}

/// Holds this process's writer lease on `disks` (renewed until
/// `shutdown`): while it is held, garbage collection elsewhere treats the
/// data this process staged as being written (see `gc.rs`).
pub(crate) fn keep_writer_lease(
    disks: Vec<Arc<dyn Disk>>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let owner = erasure_set::instance();
    let names = vec![writer_lease_name(owner)];
    let what = "the writer lease";
    tokio::spawn(async move {
        let disks = Arc::new(disks);
        take(&disks, &names, owner, what).await;
        tokio::select! {
            _ = shutdown.cancelled() => release(disks, names, owner).await,
            _ = renew(disks.clone(), names.clone(), owner, what) => {}
        }
    })
}
