//! The placement layer's front door: one object store over the pools
//! (`pools.rs`): each key lives in one set of one hot pool (`home.rs`),
//! its set by hash in the first pool or a later pool's; the cold pool and
//! remote tiers hold the bytes of some versions. Facet files (`objects.rs`, `multipart.rs`, `buckets.rs`,
//! `system.rs`, `transition.rs`, `tier.rs`, `heal.rs`, `gc.rs`) add its
//! methods; `start.rs` builds it and starts its one runner of background
//! work. This file imports none of them.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};

use background_work::{Worker, WorkerInfo, Workers};
use disk_engine::{DiskHealth, IoStats};
use erasure_set::{
    CacheStats, ErasureSet, KeyGuard, RepairStats, DEFAULT_BLOCK_SIZE, DEFAULT_PACK_THRESHOLD,
    DEFAULT_READ_CACHE_BYTES,
};
use parking_lot::Mutex;
use tokio_util::task::TaskTracker;

use crate::background::BackgroundLease;
use crate::bucket_cache::BucketCache;
use crate::collector::Collector;
use crate::error::Error;
use crate::healer::Healer;
use crate::pools::Pools;

/// The object store: buckets, objects, multipart uploads, over the pools.
pub struct Store {
    /// Every pool of the deployment and every tier outside it.
    pub(crate) pools: Pools,
    /// Bucket records read lately (see `bucket_cache.rs`).
    pub(crate) bucket_cache: BucketCache,
    /// Tier objects transitions are writing and verifying now: the sweep
    /// leaves them alone whatever their age.
    pub(crate) in_flight: Mutex<std::collections::HashSet<uuid::Uuid>>,
    /// Healing passes (see `heal.rs`).
    pub(crate) healer: Arc<Healer>,
    /// Whether this process runs scheduled background work.
    pub(crate) background: Arc<BackgroundLease>,
    /// The background workers of every pool (repair, tier release, heal,
    /// the at-risk finders, garbage collection, the leases, and what the
    /// binary adds: the lifecycle scanner).
    pub(crate) workers: Workers,
    /// This store, for commits that run as tasks of their own.
    pub(crate) me: Weak<Store>,
    /// Commits running as tasks no request owns (see [`Store::detached`]);
    /// shutdown waits for them.
    pub(crate) commits: TaskTracker,
    /// Garbage collection of unreferenced data (see `gc.rs`).
    pub(crate) collector: Arc<Collector>,
    /// The tunables every pool's set is opened with.
    pub(crate) opts: StoreOptions,
    /// Where the key sets send the tier objects no version refers to any
    /// more (the tier release worker's queue).
    pub(crate) tier_release: tokio::sync::mpsc::UnboundedSender<erasure_set::record::TierRef>,
    /// The hot-object cache every set reads through.
    pub(crate) cache: Arc<erasure_set::ReadCache>,
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
    /// What reached the disk since the store opened it.
    pub io: IoStats,
}

/// One erasure set of a pool as admins see it.
#[derive(Clone, Debug)]
pub struct PoolStatus {
    /// Its pool's tier name in version records: `None` for the first pool,
    /// else [`crate::COLD_TIER`] or a hot pool's name (`pool-1`…).
    pub tier: Option<String>,
    /// The set's index in its pool (0-based).
    pub set: usize,
    /// Objects waiting in its set's repair queue.
    pub repair_backlog: usize,
    /// Objects acknowledged with fewer than k + m of its disks holding
    /// them, not healed since.
    pub objects_at_risk: u64,
    /// Why its set is offline, if it is.
    pub offline: Option<String>,
}

impl Store {
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

    /// Waits for and takes the lock of `bucket/key`, in the set holding it.
    pub(crate) async fn lock_key(&self, bucket: &str, key: &str) -> Result<KeyGuard<'_>, Error> {
        let set = self.pools.set_of(bucket, key);
        Ok(set.locks().lock(bucket, key).await?)
    }

    /// Why the set holding the cluster-wide documents is offline, if it is
    /// (its disks were not opened): the store then serves nothing.
    pub fn offline_reason(&self) -> Option<&str> {
        self.pools.system().offline_reason()
    }

    /// Hot-object cache counters (one cache serves every set).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Reclaims the space of deleted and overwritten packed objects on
    /// every online disk now (compaction does it gradually otherwise).
    /// Returns how many disks finished; reads and writes go on meanwhile.
    pub async fn collect_packed_garbage(&self) -> usize {
        let sets = self.pools.key_sets();
        let disks = sets.iter().flat_map(|s| s.disks());
        let done = futures::future::join_all(disks.map(|d| async move {
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

    /// Whether this process runs the store's scheduled background work
    /// (lifecycle passes, sweeps, scrubs): always for a store no other
    /// process writes; otherwise only while it holds the background lease
    /// (see `background.rs`).
    pub fn owns_background(&self) -> bool {
        self.background.owns()
    }

    /// Repair counters, summed over every set of every hot pool.
    pub fn repair_stats(&self) -> RepairStats {
        let total = RepairStats::default();
        for set in self.pools.key_sets() {
            let s = &set.repair_queue().stats;
            for (sum, one) in [
                (&total.queued, &s.queued),
                (&total.dropped, &s.dropped),
                (&total.repaired, &s.repaired),
                (&total.shards_rewritten, &s.shards_rewritten),
                (&total.records_rewritten, &s.records_rewritten),
                (&total.failed, &s.failed),
                (&total.degraded_writes, &s.degraded_writes),
            ] {
                sum.fetch_add(one.load(Relaxed), Relaxed);
            }
        }
        total
    }

    /// Listing pages served from pages read ahead.
    pub fn listing_read_ahead_hits(&self) -> u64 {
        self.pools
            .key_sets()
            .iter()
            .map(|s| s.list_ahead_hits())
            .sum()
    }

    /// Listing pages read from one disk's heads (where the disks are
    /// known to agree).
    pub fn listing_one_disk_pages(&self) -> u64 {
        self.pools
            .key_sets()
            .iter()
            .map(|s| s.one_disk_pages())
            .sum()
    }

    /// Every set of every pool with its backlogs: the first pool's, the
    /// hot pools added later, then the cold pool (nothing here asks the
    /// disks).
    pub fn pool_status(&self) -> Vec<PoolStatus> {
        self.pools
            .every()
            .into_iter()
            .map(|(name, set)| PoolStatus {
                tier: name.tier,
                set: name.index,
                repair_backlog: set.repair_queue().backlog(),
                objects_at_risk: set.at_risk().count(),
                offline: set.offline_reason().map(str::to_string),
            })
            .collect()
    }

    /// Every set's disk slots with their health, in the order of
    /// [`Store::pool_status`].
    pub async fn disk_status_by_pool(&self) -> Vec<Vec<DiskStatus>> {
        let mut out = Vec::new();
        for (_, set) in self.pools.every() {
            out.push(disk_status(&set).await);
        }
        out
    }

    /// What reached each disk of every set since the store opened it, as
    /// [`Store::disk_status_by_pool`] orders them (without asking the
    /// disks anything).
    pub fn disk_io_by_pool(&self) -> Vec<Vec<IoStats>> {
        self.pools
            .every()
            .into_iter()
            .map(|(_, set)| set.disk_io())
            .collect()
    }

    /// Whether the deployment has a cold pool (cold storage classes can
    /// be stored).
    pub fn has_cold_pool(&self) -> bool {
        self.pools.has_cold()
    }

    /// True when the set holding the cluster-wide documents has enough
    /// disks online to accept writes (another set below its write quorum
    /// refuses the writes of its keys alone).
    pub async fn writable(&self) -> bool {
        let system = self.pools.system();
        let online = system
            .health()
            .await
            .iter()
            .filter(|h| matches!(h, DiskHealth::Online { .. }))
            .count();
        online >= system.quorum().write
    }

    /// Runs `worker` with the store's own until [`Store::shutdown`] (the
    /// binary's lifecycle scanner).
    pub fn run_worker(&self, worker: impl Worker) {
        self.workers.spawn(worker);
    }

    /// Every background worker of the store, of every pool, with its
    /// state, in the order they started.
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

/// Every disk slot of `set` with its health.
async fn disk_status(set: &ErasureSet) -> Vec<DiskStatus> {
    let health = set.health().await;
    health
        .into_iter()
        .zip(set.disk_io())
        .enumerate()
        .map(|(slot, (health, io))| DiskStatus {
            slot,
            label: set.disks()[slot].label().to_string(),
            health,
            io,
        })
        .collect()
}
