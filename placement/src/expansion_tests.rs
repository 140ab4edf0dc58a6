//! Keys in hot pools added later: a new key goes to a pool by free space
//! and stays there; reads, listings, uploads, deletes, healing and garbage
//! collection find it wherever it lives, and a write racing a placement
//! elsewhere is refused without changing anything.

use std::sync::Arc;

use disk_engine::{Disk, Fault, FaultyDisk, ListStart, LocalDisk, Tier, UploadListStart};
use erasure_set::record::ObjectMeta;
use erasure_set::LocalSet;

use crate::error::Error;
use crate::pools_tests::pool_set;
use crate::store_tests::{body, commit, data, get, put, rig, set_versioning, Rig};
use crate::{DeleteItem, VersionRef, Versioning, WriteOptions};

/// `set`'s disks wrapped to take faults.
fn faulty(set: &mut LocalSet) -> Vec<FaultyDisk> {
    let wrapped: Vec<FaultyDisk> = set.disks.drain(..).map(FaultyDisk::new).collect();
    set.disks = wrapped
        .iter()
        .map(|f| Arc::new(f.clone()) as Arc<dyn Disk>)
        .collect();
    wrapped
}

/// A store whose first pool is one set of 4 disks, with a hot pool of 4
/// more added later (both on one filesystem: the same free space), and
/// bucket "b".
struct Expanded {
    r: Rig,
    /// The later pool's disks, to inject faults into, and under them.
    later: Vec<FaultyDisk>,
    later_local: Vec<Arc<LocalDisk>>,
    _dir: tempfile::TempDir,
}

async fn expanded() -> Expanded {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    let mut set = pool_set(dir.path(), 4, Tier::Hot, 1);
    let later_local = set.local.iter().map(|d| d.clone().unwrap()).collect();
    let later = faulty(&mut set);
    let name = r.store.attach_hot_pool(1, vec![set]).unwrap();
    assert_eq!(name, "pool-1");
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    Expanded {
        r,
        later,
        later_local,
        _dir: dir,
    }
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

/// Every key of bucket "b" listed `max` at a time.
async fn listed(r: &Rig, max: usize) -> Vec<String> {
    let mut keys = Vec::new();
    let mut start = ListStart::Beginning;
    loop {
        let page = r.store.list_objects("b", "", start, max).await.unwrap();
        keys.extend(page.entries.into_iter().map(|(k, _)| k));
        match page.next {
            Some(next) => start = ListStart::After(next.into_bytes()),
            None => return keys,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_keys_spread_over_the_pools_and_stay_where_they_live() {
    let e = expanded().await;
    let r = &e.r;
    assert_eq!(r.store.key_sets(), 2);
    set_versioning(r, Versioning::Enabled).await;
    let keys: Vec<String> = (0..60).map(|i| format!("k{i:02}")).collect();
    for (i, key) in keys.iter().enumerate() {
        put(r, key, &data(3000 + i, 1)).await.unwrap();
    }
    let mut homes = Vec::new();
    for key in &keys {
        let sets = sets_holding(r, key).await;
        assert_eq!(sets.len(), 1, "{key} in {sets:?}");
        homes.push(sets[0]);
    }
    let later = homes.iter().filter(|&&s| s == 1).count();
    assert!((10..=50).contains(&later), "{later} of 60 keys in pool-1");
    // Overwrites go to the pool holding the key, as every version does.
    for round in 2..4u8 {
        for (i, key) in keys.iter().enumerate() {
            put(r, key, &data(2000 + i, round)).await.unwrap();
        }
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(sets_holding(r, key).await, vec![homes[i]], "{key}");
        let len = 2000 + i;
        assert_eq!(get(r, key, 0..len as u64).await.unwrap(), data(len, 3));
        let versions = r
            .store
            .list_versions("b", key, ListStart::Beginning, 10)
            .await
            .unwrap();
        assert_eq!(versions.entries[0].1.len(), 3, "{key}");
    }
    // Listings merge the pools: every key once, in order, at any page size.
    for max in [1, 7, 1000] {
        assert_eq!(listed(r, max).await, keys, "pages of {max}");
    }
    // Healing and garbage collection cover the keys of both pools.
    r.store.heal_pass().await;
    let heal = r.store.heal_progress();
    let pool_1 = heal.sets.iter().find(|s| s.pool == "pool-1").unwrap();
    assert!(pool_1.total >= later as u64, "{:?}", heal.sets);
    assert_eq!(heal.failed, 0);
    assert!(r.store.collect_garbage().await);
    for (i, key) in keys.iter().enumerate() {
        let len = 2000 + i;
        assert_eq!(get(r, key, 0..len as u64).await.unwrap(), data(len, 3));
    }
    // The bucket is not empty while one key lives in the later pool.
    let in_set = |set: usize| -> Vec<&String> {
        let both = keys.iter().zip(&homes);
        both.filter(|(_, &h)| h == set).map(|(k, _)| k).collect()
    };
    let (in_first, in_later) = (in_set(0), in_set(1));
    remove_every_version(r, &in_first).await;
    assert!(matches!(
        r.store.delete_bucket("b").await,
        Err(Error::BucketNotEmpty { .. })
    ));
    remove_every_version(r, &in_later).await;
    assert!(listed(r, 1000).await.is_empty());
    r.store.delete_bucket("b").await.unwrap();
}

/// Removes every version of `keys` of bucket "b" with one DeleteObjects.
async fn remove_every_version(r: &Rig, keys: &[&String]) {
    let mut items = Vec::new();
    for key in keys {
        let versions = r
            .store
            .list_versions("b", key, ListStart::Beginning, 1)
            .await
            .unwrap();
        for v in &versions.entries[0].1 {
            items.push(DeleteItem::new(*key, Some(VersionRef::of_id(v.version_id))));
        }
    }
    for outcome in r.store.delete_objects("b", &items).await.unwrap() {
        outcome.unwrap();
    }
    for key in keys {
        assert_eq!(sets_holding(r, key).await, Vec::<usize>::new(), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_places_its_key_and_the_key_stays_with_it() {
    let e = expanded().await;
    let r = &e.r;
    let mut uploads = Vec::new();
    for i in 0..16 {
        let key = format!("mp{i:02}");
        let id = r
            .store
            .create_upload("b", &key, ObjectMeta::default(), Vec::new(), None, false)
            .await
            .unwrap();
        let up = r.store.get_upload("b", &key, id).await.unwrap();
        uploads.push((key, id, up));
    }
    let later = uploads
        .iter()
        .filter(|u| u.2.home.as_deref() == Some("pool-1"))
        .count();
    assert!((1..16).contains(&later), "{later} of 16 uploads in pool-1");
    let (listed, next) = r
        .store
        .list_uploads("b", "", UploadListStart::Beginning, 100)
        .await
        .unwrap();
    assert_eq!(listed.len(), 16);
    assert!(next.is_none());
    for (key, id, up) in &uploads {
        let want = usize::from(up.home.is_some());
        // A PUT of a key that has only an upload goes where the upload is.
        put(r, key, &data(500, 9)).await.unwrap();
        assert_eq!(sets_holding(r, key).await, vec![want], "{key}");
        let part = data(70_000, 4);
        let staged = r
            .store
            .write_part_data("b", key, *id, up, body(&part, 8192), None)
            .await
            .unwrap();
        let rec = r
            .store
            .commit_part("b", key, *id, up, 1, staged, "p1".into(), None)
            .await
            .unwrap();
        let (parts, _) = r.store.list_parts("b", key, *id, 0, 10).await.unwrap();
        assert_eq!(parts, vec![rec]);
        r.store
            .complete_upload(
                "b",
                key,
                *id,
                parts,
                ObjectMeta::default(),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(sets_holding(r, key).await, vec![want], "{key}");
        assert_eq!(get(r, key, 0..70_000).await.unwrap(), part);
        // A retried completion answers with the version it made.
        let again = r.store.completed_upload("b", key, *id).await.unwrap();
        assert_eq!(again.upload_id, Some(*id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_staged_where_a_racing_write_did_not_place_the_key_is_refused() {
    let e = expanded().await;
    let r = &e.r;
    let sets = r.store.pools.key_sets();
    for i in 0..64 {
        let key = format!("race{i}");
        let (a, b) = (data(40_000, 1), data(40_000, 2));
        let first = r
            .store
            .write_data("b", &key, body(&a, 4096), None)
            .await
            .unwrap();
        let second = r
            .store
            .write_data("b", &key, body(&b, 4096), None)
            .await
            .unwrap();
        let set_of = |s: &crate::StagedData| sets.iter().position(|set| s.staged_in(set));
        let (x, y) = (set_of(&first), set_of(&second));
        if x == y {
            continue;
        }
        // Both were staged for a new key, each in the pool it chose; the
        // first commit places the key, the second is refused.
        commit(&r.store, "b", &key, first).await.unwrap();
        let refused = commit(&r.store, "b", &key, second).await;
        assert!(matches!(refused, Err(Error::Moved(_))), "{refused:?}");
        assert_eq!(get(r, &key, 0..40_000).await.unwrap(), a);
        assert_eq!(sets_holding(r, &key).await, vec![x.unwrap()]);
        // Sent again, it is staged where the key lives and lands.
        put(r, &key, &b).await.unwrap();
        assert_eq!(get(r, &key, 0..40_000).await.unwrap(), b);
        assert_eq!(sets_holding(r, &key).await, vec![x.unwrap()]);
        return;
    }
    panic!("64 pairs of new-key writes all chose the same pool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_pool_that_cannot_answer_fails_only_what_it_may_hold() {
    let e = expanded().await;
    let r = &e.r;
    let keys: Vec<String> = (0..40).map(|i| format!("k{i:02}")).collect();
    for (i, key) in keys.iter().enumerate() {
        put(r, key, &data(5000 + i, 1)).await.unwrap();
    }
    let mut first = None;
    let mut later = None;
    for key in &keys {
        match sets_holding(r, key).await[..] {
            [0] => first = first.or(Some(key.clone())),
            [1] => later = later.or(Some(key.clone())),
            ref other => panic!("{key} in {other:?}"),
        }
    }
    let (first, later) = (first.unwrap(), later.unwrap());
    let len = |k: &str| 5000 + keys.iter().position(|x| x == k).unwrap();
    for d in &e.later {
        d.set_faults(vec![Fault::Offline]);
    }
    // A key the first pool holds reads and takes writes as before.
    let n = len(&first) as u64;
    assert_eq!(get(r, &first, 0..n).await.unwrap(), data(n as usize, 1));
    put(r, &first, &data(n as usize, 2)).await.unwrap();
    assert_eq!(get(r, &first, 0..n).await.unwrap(), data(n as usize, 2));
    // The silent pool's key, a missing key and a new key are not known
    // not to be there: never "no such key", never placed anew.
    for key in [later.as_str(), "missing"] {
        let read = r.store.head_object("b", key).await;
        assert!(
            matches!(read, Err(Error::ReadQuorum { .. })),
            "{key}: {read:?}"
        );
    }
    let write = put(r, "new", &data(100, 3)).await;
    assert!(matches!(write, Err(Error::ReadQuorum { .. })), "{write:?}");
    for d in &e.later {
        d.set_faults(Vec::new());
    }
    let n = len(&later) as u64;
    assert_eq!(get(r, &later, 0..n).await.unwrap(), data(n as usize, 1));
    assert!(matches!(
        r.store.head_object("b", "missing").await,
        Err(Error::NoSuchKey { .. })
    ));
    put(r, "new", &data(100, 3)).await.unwrap();
}

/// A key of bucket "b" written with `bytes` that landed in key set `set`.
async fn key_in(r: &Rig, set: usize, prefix: &str, bytes: &[u8]) -> String {
    for i in 0..64 {
        let key = format!("{prefix}{i}");
        put(r, &key, bytes).await.unwrap();
        if sets_holding(r, &key).await == [set] {
            return key;
        }
    }
    panic!("64 new keys and none in set {set}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healing_a_key_of_a_later_pool_takes_the_lock_its_writers_take() {
    let e = expanded().await;
    let r = &e.r;
    let key = key_in(r, 1, "h", &data(20_000, 1)).await;
    let later = r.store.pools.key_sets()[1].clone();
    let guard = r.store.lock_key("b", &key).await.unwrap();
    let heal = tokio::spawn({
        let key = key.clone();
        async move { later.heal_object("b", &key, &[]).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !heal.is_finished(),
        "healing went ahead under a writer's lock"
    );
    drop(guard);
    heal.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_left_by_a_missed_delete_does_not_take_the_key_from_its_pool() {
    let e = expanded().await;
    let r = &e.r;
    for i in 0..64 {
        let key = key_in(r, 0, &format!("m{i}-"), &data(9000, 1)).await;
        // Deleted while a disk of the first pool is away: that disk keeps
        // its record. The key, written again, is new and may go anywhere.
        r.faulty[0].set_faults(vec![Fault::Offline]);
        r.store.delete_object("b", &key, None).await.unwrap();
        put(r, &key, &data(9000, 2)).await.unwrap();
        let landed = sets_holding(r, &key).await;
        r.faulty[0].set_faults(Vec::new());
        if landed != [1] {
            continue;
        }
        // Back, the disk's leftover does not make the first pool the key's
        // home again: writes and deletes go where the key lives.
        put(r, &key, &data(9000, 3)).await.unwrap();
        assert_eq!(sets_holding(r, &key).await, vec![1]);
        assert_eq!(get(r, &key, 0..9000).await.unwrap(), data(9000, 3));
        r.store.delete_object("b", &key, None).await.unwrap();
        assert!(matches!(
            r.store.head_object("b", &key).await,
            Err(Error::NoSuchKey { .. })
        ));
        assert!(sets_holding(r, &key).await.is_empty());
        return;
    }
    panic!("64 rewritten keys all landed in the first pool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_written_before_later_pools_took_keys_stays_in_the_first_pool() {
    let e = expanded().await;
    let r = &e.r;
    set_versioning(r, Versioning::Enabled).await;
    // As the release before wrote: the key's records in the first pool,
    // the bytes of one version a tier object in the later pool.
    let key = key_in(r, 0, "old", &data(30_000, 1)).await;
    let old = data(50_000, 2);
    let staged = r
        .store
        .write_tier_data("pool-1", body(&old, 4096), Some(50_000))
        .await
        .unwrap();
    let tiered = commit(&r.store, "b", &key, staged).await.unwrap();
    let tier = tiered.tiered.clone().unwrap();
    assert_eq!(tier.tier, "pool-1");
    assert_eq!(sets_holding(r, &key).await, vec![0]);
    assert_eq!(get(r, &key, 0..50_000).await.unwrap(), old);
    // New writes of the key stay with its records; the tier object stays
    // while a version refers to it, through collection and sweeps.
    put(r, &key, &data(40_000, 3)).await.unwrap();
    assert_eq!(sets_holding(r, &key).await, vec![0]);
    assert!(r.store.collect_garbage().await);
    r.store
        .sweep_tier_objects(std::time::Duration::ZERO)
        .await
        .unwrap();
    let v = VersionRef::of(&tiered);
    let back = r.store.get_version("b", &key, Some(v)).await.unwrap();
    let mut s = r.store.read_object("b", &key, back, 0..50_000);
    let mut bytes = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut s).await {
        bytes.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(bytes, old);
    assert_eq!(get(r, &key, 0..40_000).await.unwrap(), data(40_000, 3));
    // Once no version refers to it, it is released.
    r.store.delete_object("b", &key, Some(v)).await.unwrap();
    let pool_1 = r.store.pools.key_sets()[1].clone();
    let name = tier.id.to_string();
    for _ in 0..100 {
        let gone = pool_1
            .resolve_key(crate::model::TIER_NS, &name)
            .await
            .unwrap();
        if gone.versions.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the tier object of a deleted version was not released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_pool_that_cannot_be_read_does_not_stop_collection_in_a_later_hot_pool() {
    let e = expanded().await;
    let r = &e.r;
    let dir = tempfile::tempdir().unwrap();
    let mut cold = pool_set(dir.path(), 4, Tier::Cold, 2);
    let cold_disks = faulty(&mut cold);
    r.store.attach_cold_pool(vec![cold]).unwrap();
    let key = key_in(r, 1, "g", &data(30_000, 1)).await;
    let planted = crate::gc_tests::plant(&e.later_local[0]).await;
    // No upload's part records live in the cold pool's disks, but its
    // parts may belong to uploads of any set: with a cold disk away the
    // cold pool is skipped, the later hot pool is still collected.
    cold_disks[0].set_faults(vec![Fault::Offline]);
    assert!(r.store.collect_garbage().await);
    let p = r.store.gc_progress();
    let skipped = |pool: &str| {
        p.sets
            .iter()
            .find(|s| s.pool == pool)
            .unwrap()
            .skipped
            .is_some()
    };
    assert!(skipped("cold") && !skipped("pool-1"), "{p:?}");
    assert!(!crate::gc_tests::holds(&e.later_local[0], planted).await);
    assert_eq!(get(r, &key, 0..30_000).await.unwrap(), data(30_000, 1));
}
