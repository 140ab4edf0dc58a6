//! Pools after the first that are many sets: a later hot pool's keys each
//! live in the set their hash names there, and a cold pool's tier objects
//! each in the set their id names (a multipart upload's parts and the tier
//! object completing it in the same one).

use std::sync::Arc;

use disk_engine::{Fault, ListStart, LocalDiskOptions, ShardIoMode, Tier};
use erasure_set::record::{ObjectMeta, ObjectRecord};
use erasure_set::{ErasureSet, LocalSet};

use crate::gc_tests::{holds, plant};
use crate::local_pool::{open_local_pool, LocalPoolConfig};
use crate::model::{PartRecord, UploadRecord, COLD_TIER, TIER_NS};
use crate::store_tests::{
    body, commit, data, get, put, put_on_disk_0, rig, set_versioning, wrap_faulty, Rig,
};
use crate::{VersionRef, Versioning, WriteOptions};

/// Pool `pool` of `tier`: `sets` sets of 4 fresh directories under `dir`.
pub(crate) fn sets_of_four(
    dir: &std::path::Path,
    sets: usize,
    tier: Tier,
    pool: u32,
) -> Vec<LocalSet> {
    let opened = open_local_pool(&LocalPoolConfig {
        tier,
        pool,
        deployment: None,
        dirs: (0..sets * 4)
            .map(|i| dir.join(format!("p{pool}d{i}")))
            .collect(),
        set_width: Some(4),
        parity: None,
        disk: LocalDiskOptions {
            fsync: false,
            io: ShardIoMode::Auto,
            listing_of: Some(erasure_set::listing_of_body),
        },
    })
    .unwrap();
    assert_eq!(opened.sets.len(), sets);
    opened.sets
}

/// The key sets (by index of `Store::key_sets`) listing a version of
/// `key` in bucket "b".
async fn sets_holding(r: &Rig, key: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for set in 0..r.store.key_sets() {
        let page = r
            .store
            .list_versions_in(set, "b", key, ListStart::Beginning, 10)
            .await
            .unwrap();
        if page.entries.iter().any(|(k, _)| k == key) {
            out.push(set);
        }
    }
    out
}

/// Part `n` of upload `id` of `key` in bucket "b", holding `part`.
async fn upload_part(
    r: &Rig,
    key: &str,
    id: uuid::Uuid,
    up: &UploadRecord,
    n: u32,
    part: &[u8],
) -> PartRecord {
    let staged = r
        .store
        .write_part_data("b", key, id, up, body(part, 8192), None)
        .await
        .unwrap();
    r.store
        .commit_part("b", key, id, up, n, staged, format!("p{n}"), None)
        .await
        .unwrap()
}

/// The cold pool's sets, in order.
fn cold_sets(r: &Rig) -> Vec<Arc<ErasureSet>> {
    let sets = r.store.pools.tier_sets().into_iter();
    sets.filter(|(name, _)| name == COLD_TIER)
        .map(|(_, s)| s)
        .collect()
}

/// The ids of the tier objects `set` holds.
pub(crate) async fn tier_objects(set: &ErasureSet) -> Vec<String> {
    let page = set
        .list_resolved::<ObjectRecord>(TIER_NS, b"", ListStart::Beginning, 10_000)
        .await
        .unwrap();
    let live = page.keys.into_iter().filter(|(_, v)| !v.is_empty());
    live.map(|(k, _)| k).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_pool_of_two_sets_keeps_each_key_in_the_set_its_hash_names() {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    let name = r
        .store
        .attach_hot_pool(1, sets_of_four(dir.path(), 2, Tier::Hot, 1))
        .unwrap();
    assert_eq!(name, "pool-1");
    assert_eq!(r.store.key_sets(), 3);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    set_versioning(&r, Versioning::Enabled).await;
    let keys: Vec<String> = (0..80).map(|i| format!("k{i:02}")).collect();
    for (i, key) in keys.iter().enumerate() {
        put(&r, key, &data(2000 + i, 1)).await.unwrap();
    }
    let sets = r.store.pools.key_sets();
    let mut homes = Vec::new();
    for key in &keys {
        let held = sets_holding(&r, key).await;
        assert_eq!(held.len(), 1, "{key} in {held:?}");
        let home = held[0];
        if home > 0 {
            // In the later pool, the set the key's hash names there.
            let hashed = &r.store.pools.homes_of("b", key)[1];
            assert!(Arc::ptr_eq(&sets[home], hashed), "{key} in set {home}");
        }
        homes.push(home);
    }
    for set in 0..3 {
        let n = homes.iter().filter(|&&h| h == set).count();
        assert!(n > 0, "no key of 80 in key set {set}: {homes:?}");
    }
    // Overwrites, reads, version listings and merged listings find them.
    for (i, key) in keys.iter().enumerate() {
        put(&r, key, &data(1000 + i, 2)).await.unwrap();
        assert_eq!(sets_holding(&r, key).await, vec![homes[i]], "{key}");
        let len = 1000 + i;
        assert_eq!(get(&r, key, 0..len as u64).await.unwrap(), data(len, 2));
    }
    let mut listed = Vec::new();
    let mut start = ListStart::Beginning;
    loop {
        let page = r.store.list_objects("b", "", start, 7).await.unwrap();
        listed.extend(page.entries.into_iter().map(|(k, _)| k));
        match page.next {
            Some(next) => start = ListStart::After(next.into_bytes()),
            None => break,
        }
    }
    assert_eq!(listed, keys);
    // An upload of a key in the later pool completes in the key's set.
    let in_later = keys.iter().zip(&homes).find(|(_, &h)| h > 0).unwrap();
    let (key, home) = (in_later.0.as_str(), *in_later.1);
    let id = r
        .store
        .create_upload("b", key, ObjectMeta::default(), Vec::new(), None, false)
        .await
        .unwrap();
    let up = r.store.get_upload("b", key, id).await.unwrap();
    assert_eq!(up.home.as_deref(), Some("pool-1"));
    let part = data(70_000, 7);
    let rec = upload_part(&r, key, id, &up, 1, &part).await;
    r.store
        .complete_upload(
            "b",
            key,
            id,
            vec![rec],
            ObjectMeta::default(),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(sets_holding(&r, key).await, vec![home]);
    assert_eq!(get(&r, key, 0..70_000).await.unwrap(), part);
    // Healing covers both sets of the later pool, each by name.
    r.store.heal_pass().await;
    let heal = r.store.heal_progress();
    let later: Vec<usize> = heal
        .sets
        .iter()
        .filter(|s| s.pool == "pool-1")
        .map(|s| s.set)
        .collect();
    assert_eq!(later, [1, 2], "{:?}", heal.sets);
    assert_eq!(heal.failed, 0);
    let status = r.store.pool_status();
    assert_eq!(status.len(), 3);
    assert_eq!(status[2].tier.as_deref(), Some("pool-1"));
    assert_eq!(status[2].set, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_pool_of_two_sets_keeps_each_tier_object_in_the_set_its_id_names() {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    r.store
        .attach_cold_pool(sets_of_four(dir.path(), 2, Tier::Cold, 1))
        .unwrap();
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    set_versioning(&r, Versioning::Enabled).await;
    let mut versions = Vec::new();
    for i in 0..24 {
        let key = format!("c{i:02}");
        let bytes = data(9000 + i, 3);
        let staged = r
            .store
            .write_data_in(Tier::Cold, "b", &key, body(&bytes, 4096), None)
            .await
            .unwrap();
        let v = commit(&r.store, "b", &key, staged).await.unwrap();
        let tier = v.tiered.clone().unwrap();
        assert_eq!(tier.tier, COLD_TIER);
        let set = r.store.pools.tier_set(COLD_TIER, tier.id).unwrap();
        assert!(tier_objects(&set).await.contains(&tier.id.to_string()));
        versions.push((key, bytes, v));
    }
    let cold = cold_sets(&r);
    assert_eq!(cold.len(), 2);
    for set in &cold {
        let n = tier_objects(set).await.len();
        assert!(n > 0 && n < 24, "{n} of 24 tier objects in one set");
    }
    for (key, bytes, _) in &versions {
        let len = bytes.len() as u64;
        assert_eq!(&get(&r, key, 0..len).await.unwrap(), bytes, "{key}");
    }
    // A cold upload's parts go to the set its id names, and the tier
    // object completing it is made in that same set.
    for i in 0..6 {
        let key = format!("mp{i}");
        let id = r
            .store
            .create_upload("b", &key, ObjectMeta::default(), Vec::new(), None, true)
            .await
            .unwrap();
        let up = r.store.get_upload("b", &key, id).await.unwrap();
        let mut parts = Vec::new();
        let mut whole = Vec::new();
        for n in 1..=2u32 {
            let part = data(60_000, n as u8 + i);
            whole.extend_from_slice(&part);
            parts.push(upload_part(&r, &key, id, &up, n, &part).await);
        }
        let done = r
            .store
            .complete_upload(
                "b",
                &key,
                id,
                parts,
                ObjectMeta::default(),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let tier = done.tiered.clone().unwrap();
        let parts_set = r.store.pools.tier_set(COLD_TIER, id).unwrap();
        let object_set = r.store.pools.tier_set(COLD_TIER, tier.id).unwrap();
        assert!(Arc::ptr_eq(&parts_set, &object_set), "{key}");
        assert_eq!(get(&r, &key, 0..120_000).await.unwrap(), whole, "{key}");
    }
    // Deleting a version releases its tier object from its set.
    let (key, _, v) = &versions[0];
    let tier = v.tiered.clone().unwrap();
    let set = r.store.pools.tier_set(COLD_TIER, tier.id).unwrap();
    r.store
        .delete_object("b", key, Some(VersionRef::of(v)))
        .await
        .unwrap();
    assert!(released(&set, &tier.id.to_string()).await);
    // Collection and the tier sweep keep what versions refer to.
    assert!(r.store.collect_garbage().await);
    r.store
        .sweep_tier_objects(std::time::Duration::ZERO)
        .await
        .unwrap();
    for (key, bytes, _) in &versions[1..] {
        let len = bytes.len() as u64;
        assert_eq!(&get(&r, key, 0..len).await.unwrap(), bytes, "{key}");
    }
}

/// A store with a cold pool of two sets of four, every cold disk wrapped
/// in `FaultyDisk` (set 1's first, then set 2's), and bucket "b".
async fn with_faulty_cold_pool(
    dir: &std::path::Path,
) -> (
    Rig,
    Vec<disk_engine::FaultyDisk>,
    Vec<Arc<disk_engine::LocalDisk>>,
) {
    let r = rig(4, None);
    let mut cold = sets_of_four(dir, 2, Tier::Cold, 1);
    let (faulty, local) = wrap_faulty(&mut cold);
    r.store.attach_cold_pool(cold).unwrap();
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    (r, faulty, local)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_set_that_cannot_be_listed_does_not_stop_the_sweep_of_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let (r, faulty, _) = with_faulty_cold_pool(dir.path()).await;
    let cold = cold_sets(&r);
    // Tier objects no version refers to (a PUT killed between its tier
    // object and its version leaves them), until one is in each set.
    let mut orphans = [None, None];
    for i in 0.. {
        if orphans.iter().all(Option::is_some) {
            break;
        }
        let key = format!("o{i}");
        let staged = r
            .store
            .write_data_in(Tier::Cold, "b", &key, body(&data(5000, 1), 4096), None)
            .await
            .unwrap();
        let tier = r
            .store
            .commit_tier_object(staged, "b", &key, &ObjectMeta::default())
            .await
            .unwrap();
        let set = r.store.pools.tier_set(COLD_TIER, tier.id).unwrap();
        let at = cold.iter().position(|s| Arc::ptr_eq(s, &set)).unwrap();
        orphans[at].get_or_insert(tier.id.to_string());
    }
    let [Some(first), Some(second)] = orphans else {
        unreachable!()
    };
    // The first cold set loses three of its four disks: it cannot be listed.
    for f in &faulty[..3] {
        f.set_faults(vec![Fault::Offline]);
    }
    let swept = r.store.sweep_tier_objects(std::time::Duration::ZERO).await;
    assert!(
        swept.is_err(),
        "the pass says a set was not swept: {swept:?}"
    );
    assert!(
        released(&cold[1], &second).await,
        "the second set's unreferenced tier object is deleted"
    );
    for f in &faulty[..3] {
        f.set_faults(Vec::new());
    }
    assert!(tier_objects(&cold[0]).await.contains(&first));
    r.store
        .sweep_tier_objects(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert!(released(&cold[0], &first).await);
}

/// A cold PUT killed while its record was being written leaves the
/// record on fewer than R disks: a version never acknowledged and never
/// shown, whose tier object the sweep deletes (a rewrite cut short keeps
/// its tier object instead: `rewrite_tests`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_object_only_an_unshown_write_refers_to_is_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _, _) = with_faulty_cold_pool(dir.path()).await;
    put(&r, "a", &data(5000, 1)).await.unwrap();
    let staged = r
        .store
        .write_data_in(Tier::Cold, "b", "k", body(&data(5000, 2), 4096), None)
        .await
        .unwrap();
    let tier = r
        .store
        .commit_tier_object(staged, "b", "k", &ObjectMeta::default())
        .await
        .unwrap();
    // The cold PUT's record, on disk 0 only.
    let mut object = r.store.head_object("b", "a").await.unwrap();
    object.parts = crate::transition::tiered_parts(&object.parts);
    object.tiered = Some(tier.clone());
    put_on_disk_0(&r, "k", &object).await;
    r.store
        .sweep_tier_objects(std::time::Duration::ZERO)
        .await
        .unwrap();
    let set = r.store.pools.tier_set(COLD_TIER, tier.id).unwrap();
    assert!(released(&set, &tier.id.to_string()).await);
}

/// Whether tier object `id` is gone from `set` within 5 s (releases run
/// on the store's release queue).
pub(crate) async fn released(set: &ErasureSet, id: &str) -> bool {
    for _ in 0..100 {
        if !tier_objects(set).await.iter().any(|t| t == id) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_set_with_a_silent_disk_does_not_stop_collection_in_the_other_cold_set() {
    let dir = tempfile::tempdir().unwrap();
    let (r, faulty, local) = with_faulty_cold_pool(dir.path()).await;
    let mut planted = Vec::new();
    for d in &local {
        planted.push(plant(d).await);
    }
    // The first cold set's first disk does not answer: that set (whose
    // files cannot all be listed) waits; the second has nothing to wait for.
    faulty[0].set_faults(vec![Fault::Offline]);
    assert!(r.store.collect_garbage().await);
    for (slot, d) in local.iter().enumerate() {
        assert_eq!(
            holds(d, planted[slot]).await,
            slot < 4,
            "cold disk {slot}: the second set's garbage goes, the first's stays"
        );
    }
    let p = r.store.gc_progress();
    let cold: Vec<_> = p.sets.iter().filter(|s| s.pool == COLD_TIER).collect();
    assert_eq!(cold.len(), 2, "{p:?}");
    assert!(
        cold[0].skipped.is_some() && cold[1].skipped.is_none(),
        "{p:?}"
    );
    faulty[0].set_faults(Vec::new());
    assert!(r.store.collect_garbage().await);
    for (slot, d) in local.iter().enumerate() {
        assert!(!holds(d, planted[slot]).await, "cold disk {slot}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_cold_data_goes_to_the_cold_sets_that_are_not_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _, _) = with_faulty_cold_pool(dir.path()).await;
    let cold = cold_sets(&r);
    // As a set that lost more disks than its parity before the start is.
    cold[0].mark_offline("erasure set 1 of pool 1 is offline (test)".into());
    for i in 0..16 {
        let key = format!("c{i:02}");
        let bytes = data(3000 + i, 5);
        let staged = r
            .store
            .write_data_in(Tier::Cold, "b", &key, body(&bytes, 4096), None)
            .await
            .unwrap();
        let v = commit(&r.store, "b", &key, staged).await.unwrap();
        let set = r
            .store
            .pools
            .tier_set(COLD_TIER, v.tiered.unwrap().id)
            .unwrap();
        assert!(Arc::ptr_eq(&set, &cold[1]), "{key}");
        let len = bytes.len() as u64;
        assert_eq!(get(&r, &key, 0..len).await.unwrap(), bytes, "{key}");
    }
    for i in 0..8 {
        let key = format!("mp{i}");
        let id = r
            .store
            .create_upload("b", &key, ObjectMeta::default(), Vec::new(), None, true)
            .await
            .unwrap();
        let up = r.store.get_upload("b", &key, id).await.unwrap();
        upload_part(&r, &key, id, &up, 1, &data(20_000, i)).await;
        let set = r.store.pools.tier_set(COLD_TIER, id).unwrap();
        assert!(Arc::ptr_eq(&set, &cold[1]), "{key}");
    }
}
