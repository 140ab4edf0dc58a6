//! The deployment's pools as one value: the first hot pool (whose first
//! set holds the cluster-wide documents), hot pools added later (capacity
//! expansion), an optional cold pool, and the tiers outside the
//! deployment. Each pool is its erasure sets, nothing more: the store's
//! one runner does every set's background work.
//!
//! A key's set in the first pool is [`crate::set_index`] of the bucket and
//! key, keyed by the deployment id, over the pool's sets; a pool of one
//! set (every pool formatted before pools had many) needs no hash. That
//! set holds the key's lock whatever pool the key lives in, so every
//! writer of a key meets there (and healing in a later pool takes it there
//! too, see [`Pools::lock_place`]).
//!
//! The hot pools are the *key pools*: a key lives (its version records,
//! its data, its uploads) in exactly one of them, found as `home.rs`
//! says. A new key goes to a pool chosen at random weighted by free space
//! (as MinIO places new objects across pools); an existing key stays
//! where it lives. Deployments written before later pools took keys keep
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

/// How long a pool's free space is trusted before asking its disks again.
const FREE_SPACE_TTL: Duration = Duration::from_secs(10);

/// Usable free bytes per hot pool: `None` for the first, else the tier
/// name of a pool added later.
type PoolSpace = Vec<(Option<String>, u64)>;

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

    /// How the set's workers are told apart: nothing for a first pool of
    /// one set, else the set (`set 2`), the pool (`cold`) or both.
    pub(crate) fn suffix(&self, first_sets: usize) -> Option<String> {
        match (&self.tier, first_sets) {
            (None, 1) => None,
            (None, _) => Some(format!("set {}", self.index + 1)),
            (Some(tier), _) => Some(tier.clone()),
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
    hot: RwLock<Vec<(String, Arc<ErasureSet>)>>,
    cold: OnceLock<Arc<ErasureSet>>,
    /// Tiers outside the deployment (other S3 endpoints), by name.
    remote: RwLock<HashMap<String, Arc<dyn TierBackend>>>,
    /// Free space of the hot pools, as last asked, for placing new data.
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
    /// records: its first-pool set for `None`, else that later pool's.
    pub(crate) fn key_set_in(
        &self,
        home: Option<&str>,
        bucket: &str,
        key: &str,
    ) -> Result<Arc<ErasureSet>, Error> {
        match home {
            None => Ok(self.set_of(bucket, key).clone()),
            Some(tier) => self.require(tier),
        }
    }

    /// The name `set` has in upload records when it is a later hot pool's
    /// (`None`: a first-pool set).
    pub(crate) fn home_name(&self, set: &Arc<ErasureSet>) -> Option<String> {
        self.hot
            .read()
            .iter()
            .find(|(_, s)| Arc::ptr_eq(s, set))
            .map(|(n, _)| n.clone())
    }

    /// Hands tier objects no version refers to any more to the tier
    /// release worker (the queue every key set sends to).
    pub(crate) fn release_tiered(&self, refs: Vec<TierRef>) {
        self.system().release_tiered(refs);
    }

    /// Makes `cold` the cold pool.
    pub(crate) fn add_cold(&self, cold: Arc<ErasureSet>) -> Result<(), Error> {
        self.cold
            .set(cold)
            .map_err(|_| Error::InvalidArgument("a cold pool is already attached".into()))
    }

    /// Adds `pool` (pool `index` of the deployment) as a further hot pool;
    /// returns its tier name.
    pub(crate) fn add_hot(&self, index: u32, pool: Arc<ErasureSet>) -> String {
        let name = format!("{POOL_TIER_PREFIX}{index}");
        self.hot.write().push((name.clone(), pool));
        name
    }

    /// Whether the deployment has a cold pool.
    pub(crate) fn has_cold(&self) -> bool {
        self.cold.get().is_some()
    }

    /// Every pool tier objects can live in, with its tier name: every
    /// pool but the first, in the order of [`Pools::every`].
    pub(crate) fn tier_pools(&self) -> Vec<(String, Arc<ErasureSet>)> {
        self.every()
            .into_iter()
            .filter_map(|(name, set)| Some((name.tier?, set)))
            .collect()
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
        let named = |tier: &str, s: &Arc<ErasureSet>| {
            (
                SetName {
                    tier: Some(tier.to_string()),
                    index: 0,
                },
                s.clone(),
            )
        };
        out.extend(self.hot.read().iter().map(|(n, s)| named(n, s)));
        if let Some(c) = self.cold.get() {
            out.push(named(COLD_TIER, c));
        }
        out
    }

    /// The pool of the deployment named `tier` in version records.
    pub(crate) fn pool(&self, tier: &str) -> Option<Arc<ErasureSet>> {
        if tier == COLD_TIER {
            return self.cold.get().cloned();
        }
        self.hot
            .read()
            .iter()
            .find(|(n, _)| n == tier)
            .map(|(_, s)| s.clone())
    }

    /// [`Pools::pool`], or why there is none.
    pub(crate) fn require(&self, tier: &str) -> Result<Arc<ErasureSet>, Error> {
        self.pool(tier).ok_or_else(|| match tier {
            COLD_TIER => Error::InvalidArgument("this server has no cold pool".into()),
            other => Error::InvalidArgument(format!("this server has no pool {other:?}")),
        })
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

    /// Every set of every hot pool, where keys live: the first pool's, in
    /// order, then the later hot pools'.
    pub(crate) fn key_sets(&self) -> Vec<Arc<ErasureSet>> {
        let mut out = self.first.clone();
        out.extend(self.hot.read().iter().map(|(_, s)| s.clone()));
        out
    }

    /// Remembers that `set` (a key set) holds the version whose first data
    /// id is `id`, so reading its bytes needs no second lookup.
    pub(crate) fn remember_data(&self, id: Uuid, set: &Arc<ErasureSet>) {
        let first = self.first.iter().position(|s| Arc::ptr_eq(s, set));
        let later = || {
            let hot = self.hot.read();
            let at = hot.iter().position(|(_, s)| Arc::ptr_eq(s, set))?;
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
            Some(later) => self.hot.read().get(later).map(|(_, s)| s.clone()),
        }
    }

    /// The sets `bucket/key` may live in: its first-pool set, then each
    /// later hot pool's.
    pub(crate) fn homes_of(&self, bucket: &str, key: &str) -> Vec<Arc<ErasureSet>> {
        let mut out = vec![self.set_of(bucket, key).clone()];
        out.extend(self.hot.read().iter().map(|(_, s)| s.clone()));
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
        let weights = self.free_space_by_pool().await;
        let total: u64 = weights.iter().map(|(_, w)| w).sum();
        if total == 0 {
            return own;
        }
        let mut pick = (uuid::Uuid::new_v4().as_u128() % total as u128) as u64;
        for (pool, w) in weights {
            if pick < w {
                return match pool.and_then(|p| self.pool(&p)) {
                    Some(later) => later,
                    None => own,
                };
            }
            pick -= w;
        }
        own
    }

    /// Usable free bytes of the first pool (`None`) and of each later hot
    /// one.
    async fn free_space_by_pool(&self) -> PoolSpace {
        if let Some((at, v)) = self.free_space.lock().as_ref() {
            if at.elapsed() < FREE_SPACE_TTL {
                return v.clone();
            }
        }
        let mut first = 0u64;
        for set in &self.first {
            first = first.saturating_add(usable(set).await);
        }
        let mut out = vec![(None, first)];
        let hot = self.hot.read().clone();
        for (name, pool) in hot {
            out.push((Some(name), usable(&pool).await));
        }
        *self.free_space.lock() = Some((Instant::now(), out.clone()));
        out
    }
}

/// The index of `bucket/key`'s set in a first pool of `sets` sets of
/// deployment `deployment`.
fn index_in(deployment: Uuid, sets: usize, bucket: &str, key: &str) -> usize {
    match sets {
        1 => 0,
        n => crate::key_hash::set_index(deployment, bucket, key, n),
    }
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
