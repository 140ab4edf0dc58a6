//! Hot pools added after the first (capacity expansion). Version records
//! stay in the first pool, so listings, versioning and key locks stay in
//! one place; a new object's bytes go to a pool chosen at random weighted
//! by free space (as MinIO places new objects across pools), stored there
//! as a tier object exactly like the cold pool's (see `tier.rs`). Existing
//! data never moves, so it stays readable throughout; small objects, packed
//! with their record, stay in the first pool.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::store::Store;

/// How long a pool's free space is trusted before asking its disks again.
const FREE_SPACE_TTL: Duration = Duration::from_secs(10);

/// Usable free bytes per hot pool: `None` for the first, else the tier
/// name of a pool added later.
type PoolSpace = Vec<(Option<String>, u64)>;

/// Free space of every hot pool, as last asked.
#[derive(Default)]
pub(crate) struct FreeSpace {
    cached: Mutex<Option<(Instant, PoolSpace)>>,
}

impl Store {
    /// The hot pool a new object's bytes go to: `None` for this one, else
    /// the tier name of a pool added later.
    pub(crate) async fn pool_for_new_data(&self, size_hint: Option<u64>) -> Option<String> {
        if self.extra.read().is_empty() || size_hint.is_some_and(|s| s <= self.set.pack_threshold())
        {
            return None;
        }
        let weights = self.free_space_by_pool().await;
        let total: u64 = weights.iter().map(|(_, w)| w).sum();
        if total == 0 {
            return None;
        }
        let mut pick = (uuid::Uuid::new_v4().as_u128() % total as u128) as u64;
        for (pool, w) in weights {
            if pick < w {
                return pool;
            }
            pick -= w;
        }
        None
    }

    /// Usable free bytes of this pool (`None`) and of each later one: the
    /// emptiest-to-fullest disk bounds what a set can still take.
    async fn free_space_by_pool(&self) -> PoolSpace {
        if let Some((at, v)) = self.free_space.cached.lock().as_ref() {
            if at.elapsed() < FREE_SPACE_TTL {
                return v.clone();
            }
        }
        let mut out = vec![(None, usable(self).await)];
        for (name, pool) in self.hot_pools() {
            out.push((Some(name), usable(&pool).await));
        }
        *self.free_space.cached.lock() = Some((Instant::now(), out.clone()));
        out
    }
}

/// What a pool's set can still store: its fullest online disk's free
/// space times its data shards (0 without a write quorum).
async fn usable(store: &Store) -> u64 {
    let free: Vec<u64> = store
        .disk_status()
        .await
        .into_iter()
        .filter_map(|d| match d.health {
            disk_engine::DiskHealth::Online { free_bytes, .. } => Some(free_bytes),
            disk_engine::DiskHealth::Offline { .. } => None,
        })
        .collect();
    if free.len() < store.set.quorum().write {
        return 0;
    }
    let data = (store.set.width() - store.set.parity_shards()) as u64;
    free.into_iter().min().unwrap_or(0).saturating_mul(data)
}
