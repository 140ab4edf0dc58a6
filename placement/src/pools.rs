//! The deployment's pools as one value: the first hot pool (whose first
//! set holds the cluster-wide documents), hot pools added later (capacity
//! expansion), an optional cold pool, and the tiers outside the
//! deployment. Each pool is its erasure sets, nothing more: the store's
//! one runner does every set's background work.
//!
//! A key's set in a pool is [`crate::set_index`] of the bucket and key,
//! keyed by the deployment id, over the pool's sets; a pool of one set
//! (every pool formatted before pools had many) needs no hash. A tier
//! object's set in its pool is the same hash of its id under the tier
//! namespace. The key's first-pool set holds the key's lock whatever pool
//! the key lives in, so every writer of a key meets there (and healing in
//! a later pool takes it there too, see [`Pools::lock_place`]).
//!
//! The hot pools are the *key pools*: a key lives (its version records,
//! its data, its uploads) in exactly one of them, in its set there, found
//! as `home.rs` says. A new key goes to a pool chosen at random weighted
//! by free space (as MinIO places new objects across pools): its set's
//! free space there times the pool's set count, the pool's free space as
//! the key's set sees it; an existing key stays where it lives. Deployments written before later pools took keys keep
//! every record in the first pool, some pointing to tier objects in the
//! later pools (see `tier.rs`); those stay readable, and their keys stay
//! in the first pool.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use disk_engine::DiskHealth;
use erasure_set::{ErasureSet, LockPlace, TierRef};
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::backend::TierBackend;
use crate::error::Error;
use crate::model::{COLD_TIER, POOL_TIER_PREFIX, SYSTEM_NS, TIER_NS};

/// How many ids [`Pools::new_tier_id`] draws at most looking for an online
/// set (with half a pool's sets offline, 2^-64 of new ids still fail).
const ONLINE_DRAWS: usize = 64;

/// How long a pool's free space is trusted before asking its disks again.
const FREE_SPACE_TTL: Duration = Duration::from_secs(10);

/// Usable free bytes of every set of every hot pool, in the order of
/// [`Pools::key_pools`].
type PoolSpace = Vec<Vec<u64>>;

/// A pool added to the first: its tier name and its sets, in order.
type NamedPool = (String, Vec<Arc<ErasureSet>>);

/// Which set of which pool: the pool's tier name (`None` for the first
/// pool) and the set's index in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SetName {
    pub(crate) tier: Option<String>,
    pub(crate) index: usize,
}

impl SetName {
    /// Whether keys live in the set: a first-pool set's or a later hot
    /// pool's (the cold pool holds only tier objects).
    pub(crate) fn holds_keys(&self) -> bool {
        self.tier
            .as_deref()
            .is_none_or(|t| t.starts_with(POOL_TIER_PREFIX))
    }

    /// How the set's workers are told apart, its pool having `sets`
    /// sets: nothing for a first pool of one set, else the set (`set 2`),
    /// the pool (`cold`) or both (`cold set 2`).
    pub(crate) fn suffix(&self, sets: usize) -> Option<String> {
        match (&self.tier, sets) {
            (None, 1) => None,
            (None, _) => Some(format!("set {}", self.index + 1)),
            (Some(tier), 1) => Some(tier.clone()),
            (Some(tier), _) => Some(format!("{tier} set {}", self.index + 1)),
        }
    }
}

/// Every pool of the deployment and every tier outside it.
pub(crate) struct Pools {
    /// The first pool's sets; the first holds the cluster-wide documents.
    first: Vec<Arc<ErasureSet>>,
    /// The deployment id, which keys the hash placing keys on sets.
    deployment: Uuid,
    /// Hot pools added after the first, by tier name.
    hot: RwLock<Vec<NamedPool>>,
    /// The cold pool's sets.
    cold: OnceLock<Vec<Arc<ErasureSet>>>,
    /// Tiers outside the deployment (other S3 endpoints), by name.
    remote: RwLock<HashMap<String, Arc<dyn TierBackend>>>,
    /// Free space of the hot pools' sets, as last asked, for placing new
    /// keys.
    free_space: Mutex<Option<(Instant, PoolSpace)>>,
    /// Which key set lately read versions' data ids were found in (see
    /// [`Pools::remember_data`]).
    data_homes: Mutex<DataHomes>,
}

/// Data ids with the index (in [`Pools::key_sets`]) of the set whose
/// records refer to them: two generations of at most [`DATA_HOMES`] each,
/// the older dropped when the newer fills. A data id is staged in one set
/// and only that set's records ever refer to it, so an entry is never
/// wrong, only forgotten.
#[derive(Default)]
struct DataHomes {
    now: HashMap<Uuid, usize>,
    before: HashMap<Uuid, usize>,
}

/// Entries per generation of [`DataHomes`].
const DATA_HOMES: usize = 1 << 16;

impl Pools {
    /// The pools of deployment `deployment` whose first pool's sets are
    /// `first` (at least one).
    pub(crate) fn new(first: Vec<Arc<ErasureSet>>, deployment: Uuid) -> Pools {
        assert!(!first.is_empty(), "a pool has at least one set");
        Pools {
            first,
            deployment,
            hot: RwLock::default(),
            cold: OnceLock::new(),
            remote: RwLock::default(),
            free_space: Mutex::default(),
            data_homes: Mutex::default(),
        }
    }

    /// The set holding the cluster-wide documents (buckets, users,
    /// policies): the first pool's first.
    pub(crate) fn system(&self) -> &Arc<ErasureSet> {
        &self.first[0]
    }

    /// The first pool's sets, in order.
    pub(crate) fn first_sets(&self) -> &[Arc<ErasureSet>] {
        &self.first
    }

    /// The index of `bucket/key`'s set in the first pool.
    pub(crate) fn index_of(&self, bucket: &str, key: &str) -> usize {
        index_in(self.deployment, self.first.len(), bucket, key)
    }

    /// For a later hot pool's set: the first-pool set whose locks every
    /// writer of a bucket's key takes (the internal namespaces are locked
    /// in the set itself).
    pub(crate) fn lock_place(&self) -> LockPlace {
        let (first, deployment) = (self.first.clone(), self.deployment);
        Arc::new(move |ns: &str, key: &str| {
            if ns == SYSTEM_NS || ns == TIER_NS {
                return None;
            }
            Some(first[index_in(deployment, first.len(), ns, key)].clone())
        })
    }

    /// The first pool's set holding `bucket/key`'s records, data and
    /// uploads.
    pub(crate) fn set_of(&self, bucket: &str, key: &str) -> &Arc<ErasureSet> {
        &self.first[self.index_of(bucket, key)]
    }

    /// The set of `bucket/key` in the hot pool named `home` in upload
    /// records: its first-pool set for `None`, else its set in that later
    /// pool.
    pub(crate) fn key_set_in(
        &self,
        home: Option<&str>,
        bucket: &str,
        key: &str,
    ) -> Result<Arc<ErasureSet>, Error> {
        let Some(tier) = home else {
            return Ok(self.set_of(bucket, key).clone());
        };
        let hot = self.hot.read();
        match hot.iter().find(|(n, _)| n == tier) {
            Some((_, sets)) => Ok(self.pick(sets, bucket, key)),
            None => Err(no_pool(tier)),
        }
    }

    /// `bucket/key`'s set among a pool's `sets`.
    fn pick(&self, sets: &[Arc<ErasureSet>], bucket: &str, key: &str) -> Arc<ErasureSet> {
        sets[index_in(self.deployment, sets.len(), bucket, key)].clone()
    }

    /// The name `set` has in upload records when it is a later hot pool's
    /// (`None`: a first-pool set).
    pub(crate) fn home_name(&self, set: &Arc<ErasureSet>) -> Option<String> {
        self.hot
            .read()
            .iter()
            .find(|(_, sets)| sets.iter().any(|s| Arc::ptr_eq(s, set)))
            .map(|(n, _)| n.clone())
    }

    /// Hands tier objects no version refers to any more to the tier
    /// release worker (the queue every key set sends to).
    pub(crate) fn release_tiered(&self, refs: Vec<TierRef>) {
        self.system().release_tiered(refs);
    }

    /// Makes `cold` (its sets, in order) the cold pool.
    pub(crate) fn add_cold(&self, cold: Vec<Arc<ErasureSet>>) -> Result<(), Error> {
        assert!(!cold.is_empty(), "a pool has at least one set");
        self.cold
            .set(cold)
            .map_err(|_| Error::InvalidArgument("a cold pool is already attached".into()))
    }

    /// Adds `pool` (pool `index` of the deployment, its sets in order) as
    /// a further hot pool; returns its tier name.
    pub(crate) fn add_hot(&self, index: u32, pool: Vec<Arc<ErasureSet>>) -> String {
        assert!(!pool.is_empty(), "a pool has at least one set");
        let name = format!("{POOL_TIER_PREFIX}{index}");
        self.hot.write().push((name.clone(), pool));
        *self.free_space.lock() = None;
        name
    }

    /// Whether the deployment has a cold pool.
    pub(crate) fn has_cold(&self) -> bool {
        self.cold.get().is_some()
    }

    /// Every set tier objects can live in, with its pool's tier name:
    /// every pool's but the first's, in the order of [`Pools::every`].
    pub(crate) fn tier_sets(&self) -> Vec<(String, Arc<ErasureSet>)> {
        self.every()
            .into_iter()
            .filter_map(|(name, set)| Some((name.tier?, set)))
            .collect()
    }

    /// Every pool added to the first with its tier name: the hot pools
    /// added later, then the cold pool.
    fn attached(&self) -> Vec<NamedPool> {
        let mut out = self.hot.read().clone();
        if let Some(c) = self.cold.get() {
            out.push((COLD_TIER.to_string(), c.clone()));
        }
        out
    }

    /// Every set of every pool with its name: the first pool's, the hot
    /// pools added later, then the cold pool.
    pub(crate) fn every(&self) -> Vec<(SetName, Arc<ErasureSet>)> {
        let first = self
            .first
            .iter()
            .enumerate()
            .map(|(index, s)| (SetName { tier: None, index }, s.clone()));
        let mut out: Vec<_> = first.collect();
        for (tier, sets) in self.attached() {
            out.extend(sets.into_iter().enumerate().map(|(index, s)| {
                let tier = Some(tier.clone());
                (SetName { tier, index }, s)
            }));
        }
        out
    }

    /// How many sets the pool named `tier` (`None`: the first) has; 0 for
    /// no such pool.
    pub(crate) fn sets_in(&self, tier: Option<&str>) -> usize {
        match tier {
            None => self.first.len(),
            Some(t) => self.pool_sets(t).map_or(0, |s| s.len()),
        }
    }

    /// The sets of the pool of the deployment named `tier` in version
    /// records.
    fn pool_sets(&self, tier: &str) -> Option<Vec<Arc<ErasureSet>>> {
        if tier == COLD_TIER {
            return self.cold.get().cloned();
        }
        let hot = self.hot.read();
        hot.iter().find(|(n, _)| n == tier).map(|(_, s)| s.clone())
    }

    /// The set of the pool named `tier` that holds (or will hold) tier
    /// object `id`; `None` when no pool of the deployment is so named
    /// (the tier is outside it).
    pub(crate) fn tier_set(&self, tier: &str, id: Uuid) -> Option<Arc<ErasureSet>> {
        let sets = self.pool_sets(tier)?;
        Some(sets[tier_index(self.deployment, sets.len(), id)].clone())
    }

    /// [`Pools::tier_set`], or why there is none.
    pub(crate) fn require_tier_set(&self, tier: &str, id: Uuid) -> Result<Arc<ErasureSet>, Error> {
        self.tier_set(tier, id).ok_or_else(|| no_pool(tier))
    }

    /// A new id for a tier object (or a cold upload's parts) in the pool
    /// named `tier`: ids are drawn until one names a set of it that is
    /// not offline (a set that lost more disks than its parity at start),
    /// so new cold data avoids such a set while the others serve; at
    /// most [`ONLINE_DRAWS`] draws, then the last (whose write fails with
    /// the set's reason).
    pub(crate) fn new_tier_id(&self, tier: &str) -> Uuid {
        let sets = self.pool_sets(tier).unwrap_or_default();
        let mut id = Uuid::now_v7();
        for _ in 1..ONLINE_DRAWS {
            let at = tier_index(self.deployment, sets.len().max(1), id);
            if sets.get(at).is_none_or(|s| s.offline_reason().is_none()) {
                break;
            }
            id = Uuid::now_v7();
        }
        id
    }

    /// A new tier object id whose set in the pool named `tier` is that of
    /// `like` (the id of an upload whose parts are there): ids are drawn
    /// until one lands there, a handful for a pool of a few sets.
    pub(crate) fn tier_id_like(&self, tier: &str, like: Uuid) -> Uuid {
        let sets = self.sets_in(Some(tier)).max(1);
        let want = tier_index(self.deployment, sets, like);
        loop {
            let id = Uuid::now_v7();
            if tier_index(self.deployment, sets, id) == want {
                return id;
            }
        }
    }

    /// Adds (or with `None` removes) the tier outside the deployment named
    /// `name`.
    pub(crate) fn set_remote(&self, name: &str, backend: Option<Arc<dyn TierBackend>>) {
        let mut tiers = self.remote.write();
        match backend {
            Some(b) => tiers.insert(name.to_string(), b),
            None => tiers.remove(name),
        };
    }

    /// Whether a tier outside the deployment is named `name`.
    pub(crate) fn has_remote(&self, name: &str) -> bool {
        self.remote.read().contains_key(name)
    }

    /// The tiers outside the deployment, by name (sorted).
    pub(crate) fn remotes(&self) -> Vec<(String, Arc<dyn TierBackend>)> {
        let mut out: Vec<(String, Arc<dyn TierBackend>)> = self
            .remote
            .read()
            .iter()
            .map(|(n, b)| (n.clone(), b.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The tier outside the deployment named `name`.
    pub(crate) fn remote(&self, name: &str) -> Result<Arc<dyn TierBackend>, Error> {
        self.remote
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("no tier named {name:?} is configured")))
    }

    /// Whether hot pools were added after the first: then a key may
    /// live in any of them, and is looked for (see `home.rs`).
    pub(crate) fn has_later_hot(&self) -> bool {
        !self.hot.read().is_empty()
    }

    /// The sets of every hot pool, pool by pool: the first pool's, then
    /// the later hot pools'.
    fn key_pools(&self) -> Vec<Vec<Arc<ErasureSet>>> {
        let mut out = vec![self.first.clone()];
        out.extend(self.hot.read().iter().map(|(_, s)| s.clone()));
        out
    }

    /// Every set of every hot pool, where keys live: the first pool's, in
    /// order, then the later hot pools'.
    pub(crate) fn key_sets(&self) -> Vec<Arc<ErasureSet>> {
        let mut out = self.first.clone();
        out.extend(self.hot.read().iter().flat_map(|(_, s)| s.iter().cloned()));
        out
    }

    /// Remembers that `set` (a key set) holds the version whose first data
    /// id is `id`, so reading its bytes needs no second lookup.
    pub(crate) fn remember_data(&self, id: Uuid, set: &Arc<ErasureSet>) {
        let first = self.first.iter().position(|s| Arc::ptr_eq(s, set));
        let later = || {
            let hot = self.hot.read();
            let mut later = hot.iter().flat_map(|(_, s)| s.iter());
            let at = later.position(|s| Arc::ptr_eq(s, set))?;
            Some(self.first.len() + at)
        };
        let Some(index) = first.or_else(later) else {
            return;
        };
        let mut homes = self.data_homes.lock();
        if homes.now.len() >= DATA_HOMES {
            homes.before = std::mem::take(&mut homes.now);
        }
        homes.now.insert(id, index);
    }

    /// The key set remembered for data id `id`.
    pub(crate) fn set_holding_data(&self, id: Uuid) -> Option<Arc<ErasureSet>> {
        let index = {
            let homes = self.data_homes.lock();
            homes
                .now
                .get(&id)
                .or_else(|| homes.before.get(&id))
                .copied()
        }?;
        match index.checked_sub(self.first.len()) {
            None => Some(self.first[index].clone()),
            Some(later) => {
                let hot = self.hot.read();
                let mut sets = hot.iter().flat_map(|(_, s)| s.iter());
                sets.nth(later).cloned()
            }
        }
    }

    /// The sets `bucket/key` may live in: its first-pool set, then its set
    /// in each later hot pool.
    pub(crate) fn homes_of(&self, bucket: &str, key: &str) -> Vec<Arc<ErasureSet>> {
        let mut out = vec![self.set_of(bucket, key).clone()];
        let hot = self.hot.read();
        out.extend(hot.iter().map(|(_, sets)| self.pick(sets, bucket, key)));
        out
    }

    /// The set a new key `bucket/key` goes to: its set in a hot pool
    /// chosen at random weighted by usable free space (its first-pool set
    /// when no pool was added later, or none has space).
    pub(crate) async fn set_for_new_key(&self, bucket: &str, key: &str) -> Arc<ErasureSet> {
        let own = self.set_of(bucket, key).clone();
        if !self.has_later_hot() {
            return own;
        }
        let space = self.free_space_by_set().await;
        let pools = self.key_pools();
        // The key's set's free space stands for each of its pool's sets.
        let weights: Vec<(Arc<ErasureSet>, u64)> = pools
            .iter()
            .zip(&space)
            .filter_map(|(sets, free)| {
                let at = index_in(self.deployment, sets.len(), bucket, key);
                let w = free.get(at)?.saturating_mul(sets.len() as u64);
                Some((sets[at].clone(), w))
            })
            .collect();
        let total: u64 = weights.iter().map(|(_, w)| *w).fold(0, u64::saturating_add);
        if total == 0 {
            return own;
        }
        let mut pick = (Uuid::new_v4().as_u128() % total as u128) as u64;
        for (set, w) in weights {
            if pick < w {
                return set;
            }
            pick -= w;
        }
        own
    }

    /// Usable free bytes of every set of every hot pool, trusted for
    /// [`FREE_SPACE_TTL`].
    async fn free_space_by_set(&self) -> PoolSpace {
        if let Some((at, v)) = self.free_space.lock().as_ref() {
            if at.elapsed() < FREE_SPACE_TTL {
                return v.clone();
            }
        }
        let mut out = Vec::new();
        for sets in self.key_pools() {
            let asked = futures::future::join_all(sets.iter().map(|s| usable(s))).await;
            out.push(asked);
        }
        *self.free_space.lock() = Some((Instant::now(), out.clone()));
        out
    }
}

/// Why the pool named `tier` cannot be used: this server has none.
fn no_pool(tier: &str) -> Error {
    match tier {
        COLD_TIER => Error::InvalidArgument("this server has no cold pool".into()),
        other => Error::InvalidArgument(format!("this server has no pool {other:?}")),
    }
}

/// The index of `bucket/key`'s set in a pool of `sets` sets of
/// deployment `deployment`.
fn index_in(deployment: Uuid, sets: usize, bucket: &str, key: &str) -> usize {
    match sets {
        1 => 0,
        n => crate::key_hash::set_index(deployment, bucket, key, n),
    }
}

/// The index of tier object `id`'s set in a pool of `sets` sets.
fn tier_index(deployment: Uuid, sets: usize, id: Uuid) -> usize {
    index_in(deployment, sets, TIER_NS, &id.to_string())
}

/// What a pool's set can still store: its fullest online disk's free
/// space times its data shards (0 without a write quorum).
async fn usable(set: &ErasureSet) -> u64 {
    let free: Vec<u64> = set
        .health()
        .await
        .into_iter()
        .filter_map(|h| match h {
            DiskHealth::Online { free_bytes, .. } => Some(free_bytes),
            DiskHealth::Offline { .. } => None,
        })
        .collect();
    if free.len() < set.quorum().write {
        return 0;
    }
    let data = (set.width() - set.parity_shards()) as u64;
    free.into_iter().min().unwrap_or(0).saturating_mul(data)
}
