//! Starting a store: its first pool's sets, the pools attached to it, and
//! the one runner of background work for all of them. Each set gets its
//! repair worker and its at-risk finder; the store as a whole
//! has one tier release worker, one heal worker (whose passes cover every
//! pool), one garbage collector (likewise), and — once other gateways
//! share the disks — one background lease and a writer lease on each
//! set's disks. Workers of sets other than a lone first one are named
//! after their set (`repair (set 2)`, `repair (cold)`). [`Store::shutdown`] stops them all.

use std::sync::Arc;

use background_work::{Worker, Workers};
use disk_engine::Disk;
use erasure_set::{ErasureSet, LocalSet, ReadCache, RepairQueue, RepairWorker};
use parking_lot::Mutex;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::background::WriterLease;
use crate::collector::Collector;
use crate::error::Error;
use crate::gc::GcWorker;
use crate::heal::{AtRiskFinder, HealWorker};
use crate::healer::Healer;
use crate::local_pool::LocalPool;
use crate::pools::{Pools, SetName};
use crate::store::{Store, StoreOptions};
use crate::tier::TierReleaseWorker;

impl Store {
    /// A store over one erasure set of `disks` (in slot order) with `parity`
    /// parity shards. Starts its background workers; call
    /// [`Store::shutdown`] to stop them.
    pub fn new(
        disks: Vec<Arc<dyn Disk>>,
        parity: usize,
        opts: StoreOptions,
    ) -> Result<Arc<Store>, Error> {
        Store::with_sets(vec![(disks, parity, None)], Uuid::nil(), opts)
    }

    /// A store over an opened set (see [`crate::open_local_set`]); an
    /// offline set gives a store whose every request answers why.
    pub fn for_set(set: LocalSet, opts: StoreOptions) -> Result<Arc<Store>, Error> {
        Store::with_sets(
            vec![(set.disks, set.parity, set.offline)],
            set.deployment_id,
            opts,
        )
    }

    /// A store over an opened pool of many sets (see
    /// [`crate::open_local_pool`]): each key's records and data live in the
    /// set its hash names; an offline set answers why to the requests for
    /// its keys, and the others serve.
    pub fn for_pool(pool: LocalPool, opts: StoreOptions) -> Result<Arc<Store>, Error> {
        let sets = pool
            .sets
            .into_iter()
            .map(|s| (s.disks, s.parity, s.offline))
            .collect();
        Store::with_sets(sets, pool.deployment_id, opts)
    }

    /// A store whose first pool is `sets` (disks in slot order, parity, why
    /// it is offline) of deployment `deployment`.
    fn with_sets(
        sets: Vec<FirstSet>,
        deployment: Uuid,
        opts: StoreOptions,
    ) -> Result<Arc<Store>, Error> {
        let workers = Workers::new();
        let (release, released) = tokio::sync::mpsc::unbounded_channel();
        let count = sets.len();
        let mut first = Vec::with_capacity(count);
        // One hot-object cache for every set of every pool.
        let cache = Arc::new(ReadCache::new(opts.read_cache_bytes));
        for (index, (disks, parity, offline)) in sets.into_iter().enumerate() {
            let (set, repair) = open_set(disks, parity, opts, &cache)?;
            if let Some(why) = offline {
                set.mark_offline(why);
            }
            set.release_tier_objects_to(release.clone());
            let name = SetName { tier: None, index };
            spawn_named(&workers, name.suffix(count), repair);
            first.push(set);
        }
        Ok(Arc::new_cyclic(|me| {
            workers.spawn(TierReleaseWorker {
                store: me.clone(),
                rx: released,
                next: None,
            });
            let healer = Arc::new(Healer::default());
            workers.spawn(HealWorker::new(me.clone(), healer.clone()));
            let collector = Arc::new(Collector::default());
            workers.spawn(GcWorker::new(me.clone(), collector.clone()));
            for (index, set) in first.iter().enumerate() {
                let name = SetName { tier: None, index };
                spawn_named(
                    &workers,
                    name.suffix(count),
                    AtRiskFinder::new(me.clone(), set, true),
                );
            }
            Store {
                pools: Pools::new(first, deployment),
                bucket_cache: Default::default(),
                in_flight: Mutex::default(),
                healer,
                background: Default::default(),
                workers,
                me: me.clone(),
                commits: TaskTracker::new(),
                collector,
                opts,
                cache,
                tier_release: release,
            }
        }))
    }

    /// Makes the opened sets `cold` (in pool order) this store's cold
    /// pool, where versions of cold storage classes keep their bytes, each
    /// tier object in the set its id hashes to (see `tier.rs`).
    pub fn attach_cold_pool(&self, cold: Vec<LocalSet>) -> Result<(), Error> {
        if self.pools.has_cold() {
            return Err(Error::InvalidArgument(
                "a cold pool is already attached".into(),
            ));
        }
        let opened = self.open_pool(cold)?;
        let sets = opened.iter().map(|(s, _)| s.clone()).collect();
        self.pools.add_cold(sets)?;
        self.start_pool(crate::COLD_TIER, opened);
        Ok(())
    }

    /// Adds the opened sets `pool` (pool `index` of the deployment, its
    /// sets in order) as a further hot pool: new keys go to it by free
    /// space, each to its set there, their records and data together,
    /// while existing keys stay where they live (see `pools.rs`,
    /// `home.rs`). Returns its tier name.
    pub fn attach_hot_pool(&self, index: u32, pool: Vec<LocalSet>) -> Result<String, Error> {
        let opened = self.open_pool(pool)?;
        for (set, _) in &opened {
            // Its versions may refer to tier objects, as the first pool's
            // do; its keys are locked where every writer locks them.
            set.release_tier_objects_to(self.tier_release.clone());
            set.lock_keys_in(self.pools.lock_place());
        }
        let name = self
            .pools
            .add_hot(index, opened.iter().map(|(s, _)| s.clone()).collect());
        self.start_pool(&name, opened);
        Ok(name)
    }

    /// Declares that other processes (gateways) write this store's disks
    /// too: from now on every object lock is also leased on a majority of
    /// its set's disks (see `locks.rs`), one gateway at a time runs the
    /// scheduled background work (see `background.rs`), and this one holds
    /// a writer lease on every pool's disks (this process's collector asks
    /// only the first pool's, but a gateway of an earlier release, which
    /// collects each pool on its own, asks that pool's). Pools attached
    /// later share their locks as they are attached.
    pub fn share_locks(&self) {
        let system = self.pools.system().clone();
        self.workers
            .spawn(self.background.contend(system.disks().to_vec()));
        for (name, set) in self.pools.every() {
            set.locks().share(set.disks().to_vec());
            self.spawn_for(&name, WriterLease::new(set.disks().to_vec()));
        }
    }

    /// Opens an attached pool's sets with this store's tunables (and its
    /// hot-object cache), their locks
    /// shared if the store's are (before any request can reach them); an
    /// offline set answers why to every request that needs it.
    fn open_pool(
        &self,
        pool: Vec<LocalSet>,
    ) -> Result<Vec<(Arc<ErasureSet>, RepairWorker)>, Error> {
        if pool.is_empty() {
            return Err(Error::InvalidArgument("a pool has at least one set".into()));
        }
        let mut out = Vec::with_capacity(pool.len());
        for s in pool {
            let (set, repair) = open_set(s.disks, s.parity, self.opts, &self.cache)?;
            if let Some(why) = s.offline {
                set.mark_offline(why);
            }
            if self.pools.system().locks().is_shared() {
                set.locks().share(set.disks().to_vec());
            }
            out.push((set, repair));
        }
        Ok(out)
    }

    /// Starts the workers of every set of the attached pool `tier`.
    fn start_pool(&self, tier: &str, sets: Vec<(Arc<ErasureSet>, RepairWorker)>) {
        for (index, (set, repair)) in sets.into_iter().enumerate() {
            let name = SetName {
                tier: Some(tier.to_string()),
                index,
            };
            self.spawn_for(&name, repair);
            let keys = name.holds_keys();
            self.spawn_for(&name, AtRiskFinder::new(self.me.clone(), &set, keys));
            if self.pools.system().locks().is_shared() {
                self.spawn_for(&name, WriterLease::new(set.disks().to_vec()));
            }
        }
    }

    /// Starts `worker` for the set `name`, named after it where the store
    /// has more than one (`repair (cold)`, `repair (set 2)`,
    /// `repair (cold set 2)`).
    fn spawn_for(&self, name: &SetName, worker: impl Worker) {
        let sets = self.pools.sets_in(name.tier.as_deref());
        spawn_named(&self.workers, name.suffix(sets), worker);
    }
}

/// A first-pool set to open: its disks in slot order, its parity, and why
/// it is offline.
type FirstSet = (Vec<Arc<dyn Disk>>, usize, Option<String>);

/// Starts `worker` in `workers`, its name followed by `suffix` in
/// parentheses.
fn spawn_named(workers: &Workers, suffix: Option<String>, worker: impl Worker) {
    match suffix {
        None => workers.spawn(worker),
        Some(s) => workers.spawn_as(format!("{} ({s})", worker.name()), worker),
    }
}

/// A set of `disks` with `parity` parity shards reading through `cache`,
/// and the worker draining its repair queue (not started yet).
fn open_set(
    disks: Vec<Arc<dyn Disk>>,
    parity: usize,
    opts: StoreOptions,
    cache: &Arc<ReadCache>,
) -> Result<(Arc<ErasureSet>, RepairWorker), Error> {
    let (queue, rx) = RepairQueue::new();
    let set = Arc::new(ErasureSet::new(
        disks,
        parity,
        opts.block_size,
        cache.clone(),
        opts.pack_threshold,
        queue,
    )?);
    let repair = RepairWorker::new(Arc::downgrade(&set), rx);
    Ok((set, repair))
}
