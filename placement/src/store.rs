//! The placement layer's front door: one object store over the cluster map.
//! Today the map is a hot pool of one erasure set, holding every version
//! record, and optionally a cold pool (`tier.rs`); more sets slot in behind
//! this type without the gateway noticing.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use background_work::{Worker, WorkerInfo, Workers};
use disk_engine::{Disk, DiskHealth};
use erasure_set::{
    CacheStats, ErasureSet, RepairQueue, RepairStats, RepairWorker, DEFAULT_BLOCK_SIZE,
    DEFAULT_PACK_THRESHOLD, DEFAULT_READ_CACHE_BYTES,
};
use parking_lot::Mutex;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::model::BucketRecord;
use crate::tier::{TierBackend, TierReleaseWorker};

/// How long a bucket lookup is trusted without asking the disks again.
pub(crate) const BUCKET_CACHE_TTL: Duration = Duration::from_secs(2);

/// The object store: buckets, objects, multipart uploads, over erasure sets.
pub struct Store {
    pub(crate) set: Arc<ErasureSet>,
    pub(crate) bucket_cache: Mutex<std::collections::HashMap<String, (BucketRecord, Instant)>>,
    /// The cold pool, where versions of cold storage classes keep their
    /// bytes (see `tier.rs`).
    pub(crate) cold: std::sync::OnceLock<Arc<Store>>,
    /// Tier objects transitions are writing and verifying now: the sweep
    /// leaves them alone whatever their age.
    pub(crate) in_flight: Mutex<std::collections::HashSet<uuid::Uuid>>,
    /// Tiers outside the deployment (other S3 endpoints), by name.
    pub(crate) remote: parking_lot::RwLock<std::collections::HashMap<String, Arc<dyn TierBackend>>>,
    /// Healing passes (see `heal.rs`).
    pub(crate) healer: Arc<crate::heal::Healer>,
    /// Whether this process runs scheduled background work.
    pub(crate) background: Arc<crate::background::BackgroundLease>,
    /// Hot pools added after this one, by tier name (see `expansion.rs`).
    pub(crate) extra: parking_lot::RwLock<Vec<(String, Arc<Store>)>>,
    /// Free space of the hot pools, cached for placing new data.
    pub(crate) free_space: crate::expansion::FreeSpace,
    /// The store's background workers (repair, tier release, heal, the
    /// at-risk finder, garbage collection, the leases, and what the
    /// binary adds: the lifecycle scanner).
    pub(crate) workers: Workers,
    /// This store, for commits that run as tasks of their own.
    pub(crate) me: Weak<Store>,
    /// Commits running as tasks no request owns (see [`Store::detached`]);
    /// shutdown waits for them.
    pub(crate) commits: TaskTracker,
    /// Garbage collection of unreferenced data (see `gc.rs`).
    pub(crate) collector: Arc<crate::gc::Collector>,
}

/// Tunables of a store.
#[derive(Clone, Copy, Debug)]
pub struct StoreOptions {
    /// Bytes per shard block of new objects (a multiple of 4 KiB).
    pub block_size: u32,
    /// Size of the hot-object cache in bytes (0: no cache, reads of the
    /// same data are still coalesced).
    pub read_cache_bytes: u64,
    /// Largest object stored packed (pieces in the disks' pack stores
    /// instead of shard files); 0 disables packing. Capped at one stripe.
    pub pack_threshold: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            read_cache_bytes: DEFAULT_READ_CACHE_BYTES,
            pack_threshold: DEFAULT_PACK_THRESHOLD,
        }
    }
}

/// State of one disk slot, for health endpoints and admins.
#[derive(Clone, Debug)]
pub struct DiskStatus {
    /// Slot in the set.
    pub slot: usize,
    /// Where the disk is.
    pub label: String,
    /// Online with space figures, or offline with a reason.
    pub health: DiskHealth,
}

impl Store {
    /// A store over one erasure set of `disks` (in slot order) with `parity`
    /// parity shards. Starts its background workers; call
    /// [`Store::shutdown`] to stop them.
    pub fn new(
        disks: Vec<Arc<dyn Disk>>,
        parity: usize,
        opts: StoreOptions,
    ) -> Result<Arc<Store>, Error> {
        let (queue, rx) = RepairQueue::new();
        let set = Arc::new(ErasureSet::new(
            disks,
            parity,
            opts.block_size,
            opts.read_cache_bytes,
            opts.pack_threshold,
            queue,
        )?);
        let workers = Workers::new();
        workers.spawn(RepairWorker::new(Arc::downgrade(&set), rx));
        let (release, released) = tokio::sync::mpsc::unbounded_channel();
        set.release_tier_objects_to(release);
        Ok(Arc::new_cyclic(|me| {
            workers.spawn(TierReleaseWorker {
                store: me.clone(),
                rx: released,
                next: None,
            });
            let healer = Arc::new(crate::heal::Healer::default());
            workers.spawn(crate::heal::HealWorker::new(me.clone(), healer.clone()));
            let collector = Arc::new(crate::gc::Collector::default());
            workers.spawn(crate::gc::GcWorker::new(me.clone(), collector.clone()));
            workers.spawn(crate::heal::AtRiskFinder::new(me.clone()));
            Store {
                healer,
                background: Default::default(),
                extra: Default::default(),
                free_space: Default::default(),
                set,
                bucket_cache: Mutex::default(),
                cold: std::sync::OnceLock::new(),
                remote: Default::default(),
                in_flight: Mutex::default(),
                workers,
                me: me.clone(),
                commits: TaskTracker::new(),
                collector,
            }
        }))
    }

    /// A store over an opened set (see [`crate::open_local_set`]); an
    /// offline set gives a store whose every request answers why.
    pub fn for_set(set: erasure_set::LocalSet, opts: StoreOptions) -> Result<Arc<Store>, Error> {
        let store = Store::new(set.disks, set.parity, opts)?;
        if let Some(why) = set.offline {
            store.mark_offline(why);
        }
        Ok(store)
    }

    /// Runs `work` (given this store) as a task no request owns and waits
    /// for its result. A request whose client goes away drops this future,
    /// never the commit: the task runs to its end, and a failure is
    /// answered only once nothing it did can still be undone behind the
    /// client's back. Shutdown waits for these tasks.
    pub(crate) async fn detached<T, F, Fut>(&self, work: F) -> Result<T, Error>
    where
        F: FnOnce(Arc<Store>) -> Fut,
        Fut: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        let me = self
            .me
            .upgrade()
            .ok_or_else(|| Error::Internal("the store is shutting down".into()))?;
        self.commits
            .spawn(work(me))
            .await
            .map_err(|e| Error::Internal(format!("commit task: {e}")))?
    }

    /// The erasure set (for tests and admin tooling).
    pub fn set(&self) -> &Arc<ErasureSet> {
        &self.set
    }

    /// Declares the set offline (its disks were not opened): every lost
    /// quorum answers `why` (see [`Error::SetOffline`]).
    pub fn mark_offline(&self, why: String) {
        self.set.mark_offline(why);
    }

    /// Why this pool's set is offline, if it is.
    pub fn offline_reason(&self) -> Option<&str> {
        self.set.offline_reason()
    }

    /// Hot-object cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.set.cache_stats()
    }

    /// Reclaims the space of deleted and overwritten packed objects on
    /// every online disk now (compaction does it gradually otherwise).
    /// Returns how many disks finished; reads and writes go on meanwhile.
    pub async fn collect_packed_garbage(&self) -> usize {
        let done = futures::future::join_all(self.set.disks().iter().map(|d| async move {
            match d.collect_pieces().await {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(disk = d.label(), error = %e, "pack collection failed");
                    false
                }
            }
        }))
        .await;
        done.into_iter().filter(|ok| *ok).count()
    }

    /// Declares that other processes (gateways) write this store's disks
    /// too: from now on every object lock is also leased on a majority of
    /// the set's disks (see `locks.rs`).
    pub fn share_locks(&self) {
        self.set.locks().share(self.set.disks().to_vec());
        self.workers
            .spawn(self.background.contend(self.set.disks().to_vec()));
        self.workers.spawn(crate::background::WriterLease::new(
            self.set.disks().to_vec(),
        ));
    }

    /// Whether this process runs the store's scheduled background work
    /// (lifecycle passes, sweeps, scrubs): always for a store no other
    /// process writes; otherwise only while it holds the background lease
    /// (see `background.rs`).
    pub fn owns_background(&self) -> bool {
        self.background.owns()
    }

    /// Objects waiting in the repair queue.
    pub fn repair_backlog(&self) -> usize {
        self.set.repair_queue().backlog()
    }

    /// Repair counters.
    pub fn repair_stats(&self) -> Arc<RepairStats> {
        self.set.repair_queue().stats.clone()
    }

    /// Listing pages served from pages read ahead.
    pub fn listing_read_ahead_hits(&self) -> u64 {
        self.set.list_ahead_hits()
    }

    /// Listing pages read from one disk's heads (where the disks are
    /// known to agree).
    pub fn listing_one_disk_pages(&self) -> u64 {
        self.set.one_disk_pages()
    }

    /// Every disk slot with its health.
    pub async fn disk_status(&self) -> Vec<DiskStatus> {
        let health = self.set.health().await;
        health
            .into_iter()
            .enumerate()
            .map(|(slot, health)| DiskStatus {
                slot,
                label: self.set.disks()[slot].label().to_string(),
                health,
            })
            .collect()
    }

    /// True when enough disks are online to accept writes.
    pub async fn writable(&self) -> bool {
        let online = self
            .set
            .health()
            .await
            .iter()
            .filter(|h| matches!(h, DiskHealth::Online { .. }))
            .count();
        online >= self.set.quorum().write
    }

    /// Runs `worker` with the store's own until [`Store::shutdown`] (the
    /// binary's lifecycle scanner).
    pub fn run_worker(&self, worker: impl Worker) {
        self.workers.spawn(worker);
    }

    /// Every background worker of this store with its state, in the order
    /// they started.
    pub fn worker_status(&self) -> Vec<WorkerInfo> {
        self.workers.status()
    }

    /// Stops background work: no worker starts a step any more and the
    /// steps under way end (see `background_work::Worker`); then the
    /// commits under way, theirs included, finish; then the workers clean
    /// up (the leases the commits relied on are released last).
    pub async fn shutdown(&self) {
        self.commits.close();
        self.workers.halt().await;
        self.commits.wait().await;
        self.workers.shutdown().await;
    }
}
