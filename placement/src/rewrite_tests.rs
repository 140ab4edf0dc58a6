//! Rewrites of a version (new tags; a transition or restore expiry take
//! the same path) that fail part way: what readers saw while the rewrite
//! was in flight is what they see after it failed.

use std::sync::Arc;
use std::time::Duration;

use disk_engine::{Disk, Fault, RecordPut, Tier};
use erasure_set::record::{self, ObjectRecord};

use crate::model::COLD_TIER;
use crate::pool_sets_tests::{released, sets_of_four, tier_objects};
use crate::store::{Store, StoreOptions};
use crate::store_tests::{data, get, put, rig, BLOCK};
use crate::Destination;

/// Whether disk `slot` holds a write of `bucket/key` that `which` picks.
async fn holds(
    r: &crate::store_tests::Rig,
    slot: usize,
    which: impl Fn(&ObjectRecord) -> bool,
) -> bool {
    let records = r.local[slot].get_records(b"b", b"k").await.unwrap();
    records
        .iter()
        .any(|rec| which(&record::decode::<ObjectRecord>(&rec.body).unwrap()))
}

/// Waits until `done` answers true; fails the test after 5 s.
async fn until<F: std::future::Future<Output = bool>>(done: impl Fn() -> F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A set of 8 disks, parity 2 (R = W = 6). The version's write is on 7
/// disks (one was offline for the PUT). A retagging stores its new write
/// on 2 of them and fails on the other 5: the old write is left on 5,
/// below R, and 7 disks hold some write of the version, so readers are
/// shown the new write (`resolve_records`). The failed rewrite must not
/// be rolled back then: a read in flight showed the new tags, and a read
/// after the failure must not go back to the old ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_rewrite_that_readers_were_shown_is_not_rolled_back() {
    let r = rig(8, Some(2));
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    r.faulty[7].set_faults(vec![Fault::Offline]);
    put(&r, "k", &data(50_000, 3)).await.unwrap();
    let old = tags(&[("v", "old")]);
    let new = tags(&[("v", "new")]);
    r.store.set_tags("b", "k", None, old.clone()).await.unwrap();
    r.faulty[7].set_faults(vec![]);
    // Disks 2-6 answer late and refuse writes; 0 and 1 store the rewrite.
    let slow = Duration::from_millis(600);
    for f in &r.faulty[2..7] {
        f.set_faults(vec![Fault::Delay(slow), Fault::FailWrites]);
    }
    let store = r.store.clone();
    let rewrite = tokio::spawn({
        let new = new.clone();
        async move { store.set_tags("b", "k", None, new).await }
    });
    // Once disks 0 and 1 hold the new write, read while the rewrite still
    // waits for the slow disks.
    until(|| async {
        holds(&r, 0, |o| o.tags == new).await && holds(&r, 1, |o| o.tags == new).await
    })
    .await;
    let in_flight = r.store.get_version("b", "k", None).await.unwrap();
    assert_eq!(in_flight.tags, new, "a read during the rewrite");
    let failed = rewrite.await.unwrap();
    assert!(failed.is_err(), "{failed:?}");
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    let after = r.store.get_version("b", "k", None).await.unwrap();
    assert_eq!(after.tags, new, "a read after the rewrite failed");
}

/// With disks silent, a key whose rewrite failed cannot be resolved to
/// tell whether readers were shown it; none can have been while they are
/// silent. A set of 8, parity 2 (R = 6): disks 6 and 7 are offline, and
/// a retagging stores on disks 0 and 1 and fails on 2-5. Six disks did
/// not store it, so it is rolled back and the object stays readable with
/// its old tags while 6 and 7 are away (kept, it would be ambiguous: a
/// read quorum error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_rewrite_with_disks_silent_is_rolled_back_when_six_did_not_store_it() {
    let r = rig(8, Some(2));
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    put(&r, "k", &data(50_000, 4)).await.unwrap();
    let old = tags(&[("v", "old")]);
    r.store.set_tags("b", "k", None, old.clone()).await.unwrap();
    for f in &r.faulty[6..] {
        f.set_faults(vec![Fault::Offline]);
    }
    for f in &r.faulty[2..6] {
        f.set_faults(vec![Fault::FailWrites]);
    }
    let failed = r
        .store
        .set_tags("b", "k", None, tags(&[("v", "new")]))
        .await;
    assert!(failed.is_err(), "{failed:?}");
    for f in &r.faulty[2..6] {
        f.set_faults(vec![]);
    }
    let got = r.store.get_version("b", "k", None).await.unwrap();
    assert_eq!(got.tags, old);
}

/// A transition whose flip to the cold pool reached one disk of four and
/// could not be rolled back there (the disk failed the roll-back) leaves
/// the old write visible on three. The tier sweep must keep the tier
/// object that write refers to: once two of the other disks are replaced,
/// the flipped write is the version's newest write on R disks' worth of
/// holders, and is what readers are shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tier_sweep_keeps_what_a_flip_left_below_r_refers_to() {
    let r = rig(4, None);
    let dir = tempfile::tempdir().unwrap();
    r.store
        .attach_cold_pool(sets_of_four(dir.path(), 1, Tier::Cold, 1))
        .unwrap();
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let bytes = data(50_000, 9);
    put(&r, "k", &bytes).await.unwrap();
    // Disks 1-3 answer late and refuse writes; disk 0 stores the flip,
    // then refuses the roll-back.
    for f in &r.faulty[1..] {
        f.set_faults(vec![
            Fault::Delay(Duration::from_millis(300)),
            Fault::FailWrites,
        ]);
    }
    let store = r.store.clone();
    let transition = tokio::spawn(async move {
        store
            .transition_version("b", "k", None, "GLACIER", Destination::Pool(Tier::Cold))
            .await
    });
    until(|| holds(&r, 0, |o| o.tiered.is_some())).await;
    r.faulty[0].set_faults(vec![Fault::FailWrites]);
    let failed = transition.await.unwrap();
    assert!(failed.is_err(), "{failed:?}");
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    assert!(
        holds(&r, 0, |o| o.tiered.is_some()).await,
        "the flip stayed on disk 0"
    );
    // Read without a read's repair, which would copy the visible write
    // over the flip.
    let set = r.store.pools.set_of("b", "k").clone();
    let shown = || async {
        set.resolve_key("b", "k").await.unwrap().versions[0]
            .object
            .clone()
    };
    assert!(shown().await.tiered.is_none());
    r.store.sweep_tier_objects(Duration::ZERO).await.unwrap();
    let cold = r
        .store
        .pools
        .tier_set(COLD_TIER, uuid::Uuid::nil())
        .unwrap();
    let kept = tier_objects(&cold).await;
    assert_eq!(kept.len(), 1);
    assert!(
        !released(&cold, &kept[0]).await,
        "the sweep kept the tier object"
    );
    // Disks 2 and 3 are replaced: the flip is now the version's newest
    // write with every disk answering and two holding it.
    let version = r.local[1].get_records(b"b", b"k").await.unwrap()[0].version;
    for slot in [2, 3] {
        r.local[slot]
            .delete_record(b"b", b"k", version, None)
            .await
            .unwrap();
    }
    assert!(shown().await.tiered.is_some());
    assert_eq!(get(&r, "k", 0..bytes.len() as u64).await.unwrap(), bytes);
}

/// A PUT of the null version while disk 3 was offline leaves disk 3 with
/// the previous null write, whose data is other data. After a restart
/// (nothing in memory says the key is at risk) a retagging reaches every
/// disk holding some write of the version, disk 3 included: its record
/// then agrees with the others, but it has none of the version's shards.
/// The rewrite must leave the key at risk, so a heal rebuilds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_reaching_a_disk_without_the_data_leaves_the_key_at_risk() {
    let mut r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    put(&r, "k", &data(50_000, 1)).await.unwrap();
    r.faulty[3].set_faults(vec![Fault::Offline]);
    let bytes = data(50_000, 2);
    put(&r, "k", &bytes).await.unwrap();
    r.faulty[3].set_faults(vec![]);
    let parity = r.store.pools.system().parity_shards();
    r.store.shutdown().await;
    let disks: Vec<Arc<dyn Disk>> = r
        .faulty
        .iter()
        .map(|f| Arc::new(f.clone()) as Arc<dyn Disk>)
        .collect();
    let opts = StoreOptions {
        block_size: BLOCK,
        read_cache_bytes: 0,
        pack_threshold: 0,
    };
    r.store = Store::new(disks, parity, opts).unwrap();
    let set = r.store.pools.set_of("b", "k").clone();
    assert_eq!(set.at_risk().count(), 0, "a fresh process");
    r.store
        .set_tags("b", "k", None, tags(&[("t", "1")]))
        .await
        .unwrap();
    assert!(holds(&r, 3, |o| o.tags == tags(&[("t", "1")])).await);
    assert_eq!(set.at_risk().count(), 1, "disk 3 lacks the shards");
    r.store.heal_pass().await;
    assert_eq!(set.at_risk().count(), 0);
    // Disks 2 and 3 alone hold the data now.
    for f in &r.faulty[..2] {
        f.set_faults(vec![Fault::Offline]);
    }
    assert_eq!(get(&r, "k", 0..bytes.len() as u64).await.unwrap(), bytes);
}

/// A failed write that stays (it reached R disks, so it may have been
/// read) is on fewer disks than a write quorum: it must leave the key at
/// risk like a degraded write that succeeded, so a heal writes it to the
/// other disks before they are the only ones left. A set of 4, parity 2
/// (R = 2, W = 3): a retagging stores on disks 0 and 1 and fails on 2
/// and 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_kept_on_r_disks_leaves_the_key_at_risk() {
    let r = rig(4, Some(2));
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let bytes = data(50_000, 5);
    put(&r, "k", &bytes).await.unwrap();
    let set = r.store.pools.set_of("b", "k").clone();
    assert_eq!(set.at_risk().count(), 0);
    for f in &r.faulty[2..] {
        f.set_faults(vec![Fault::FailWrites]);
    }
    let new = tags(&[("v", "new")]);
    let failed = r.store.set_tags("b", "k", None, new.clone()).await;
    assert!(failed.is_err(), "{failed:?}");
    for f in &r.faulty[2..] {
        f.set_faults(vec![]);
    }
    assert!(holds(&r, 0, |o| o.tags == new).await, "kept on R disks");
    assert_eq!(set.at_risk().count(), 1, "on 2 disks of 4");
    r.store.heal_pass().await;
    assert_eq!(set.at_risk().count(), 0);
    // Disks 2 and 3 alone now show what readers were shown.
    for f in &r.faulty[..2] {
        f.set_faults(vec![Fault::Offline]);
    }
    assert_eq!(r.store.get_version("b", "k", None).await.unwrap().tags, new);
    assert_eq!(get(&r, "k", 0..bytes.len() as u64).await.unwrap(), bytes);
}

/// A flip goes to every disk, so it can store only where the version had
/// no write and still be what readers are shown. A set of 4, parity 2
/// (R = 2): the version's first write is left on disk 0, its retagging
/// on disk 1, and disks 2 and 3 were replaced (nothing of the key), so
/// readers are shown the retagging. A flip (the rewrite to every disk a
/// transition commits, made here without the transition's read, whose
/// repair would fill disks 2 and 3 first) stores on disk 2 only: three
/// disks hold the version, none of its writes on R, and the flip is its
/// newest write. It replaced nothing, and must still not be rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flip_stored_only_where_the_version_had_no_write_is_kept_when_shown() {
    let r = rig(4, Some(2));
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    put(&r, "k", &data(50_000, 6)).await.unwrap();
    let first = r.local[0].get_records(b"b", b"k").await.unwrap().remove(0);
    let retagged = tags(&[("v", "new")]);
    r.store
        .set_tags("b", "k", None, retagged.clone())
        .await
        .unwrap();
    let version = first.version;
    r.local[0]
        .delete_record(b"b", b"k", version, None)
        .await
        .unwrap();
    r.local[0]
        .put_record(b"b", b"k", RecordPut::of(first))
        .await
        .unwrap();
    for slot in [2, 3] {
        r.local[slot]
            .delete_record(b"b", b"k", version, None)
            .await
            .unwrap();
    }
    let set = r.store.pools.set_of("b", "k").clone();
    let seen = set.resolve_key("b", "k").await.unwrap();
    assert_eq!(seen.versions[0].object.tags, retagged);
    let mut flipped = seen.versions[0].object.clone();
    flipped.tags = tags(&[("v", "flipped")]);
    for slot in [0, 1, 3] {
        r.faulty[slot].set_faults(vec![Fault::FailWrites]);
    }
    let failed = set
        .rewrite_record("b", "k", flipped.clone(), &[true; 4], &seen)
        .await;
    assert!(failed.is_err(), "{failed:?}");
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    let shown = set.resolve_key("b", "k").await.unwrap().versions[0]
        .object
        .clone();
    assert_eq!(shown, flipped, "readers are still shown the flip");
}
