//! The pools of a store: every pool's background work runs in the
//! store's one runner, and shutting the store down stops all of it.

use disk_engine::{LocalDiskOptions, ShardIoMode, Tier};
use erasure_set::{open_local_set, LocalSet, LocalSetConfig};

use crate::store_tests::rig;

/// A fresh set of `n` directories under `dir` for pool `pool` of `tier`.
pub(crate) fn pool_set(dir: &std::path::Path, n: usize, tier: Tier, pool: u32) -> LocalSet {
    open_local_set(&LocalSetConfig {
        dirs: (0..n).map(|i| dir.join(format!("p{pool}d{i}"))).collect(),
        parity: None,
        tier,
        pool,
        set: 0,
        sets: 1,
        pool_exists: false,
        deployment: None,
        disk: LocalDiskOptions {
            fsync: false,
            io: ShardIoMode::Auto,
            listing_of: Some(erasure_set::listing_of_body),
        },
    })
    .unwrap()
}

#[tokio::test]
async fn shutdown_stops_the_workers_of_every_pool() {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    let name = r
        .store
        .attach_hot_pool(1, vec![pool_set(dir.path(), 4, Tier::Hot, 1)])
        .unwrap();
    assert_eq!(name, "pool-1");
    r.store
        .attach_cold_pool(vec![pool_set(dir.path(), 4, Tier::Cold, 2)])
        .unwrap();
    r.store.share_locks();
    let names: Vec<String> = r
        .store
        .worker_status()
        .into_iter()
        .map(|w| w.name)
        .collect();
    for expected in [
        "repair",
        "tier release",
        "heal",
        "gc",
        "at-risk finder",
        "repair (pool-1)",
        "at-risk finder (pool-1)",
        "repair (cold)",
        "at-risk finder (cold)",
        "background lease",
        "writer lease",
        "writer lease (pool-1)",
        "writer lease (cold)",
    ] {
        assert_eq!(
            names.iter().filter(|n| *n == expected).count(),
            1,
            "{expected} once in {names:?}"
        );
    }
    assert_eq!(names.len(), 13, "{names:?}");
    let pools: Vec<Option<String>> = r.store.pool_status().into_iter().map(|p| p.tier).collect();
    assert_eq!(
        pools,
        [None, Some("pool-1".to_string()), Some("cold".to_string())]
    );
    r.store.shutdown().await;
    for w in r.store.worker_status() {
        assert_eq!(w.state, "stopped", "{w:?}");
    }
}

#[tokio::test]
async fn a_second_cold_pool_is_refused() {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    r.store
        .attach_cold_pool(vec![pool_set(dir.path(), 2, Tier::Cold, 1)])
        .unwrap();
    let err = r
        .store
        .attach_cold_pool(vec![pool_set(dir.path(), 2, Tier::Cold, 2)])
        .unwrap_err();
    assert!(err.to_string().contains("already attached"), "{err}");
    let names = r.store.worker_status().into_iter().map(|w| w.name);
    assert_eq!(names.filter(|n| n == "repair (cold)").count(), 1);
    r.store.shutdown().await;
}
