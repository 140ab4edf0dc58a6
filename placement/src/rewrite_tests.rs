//! Rewrites of a version (new tags; a transition or restore expiry take
//! the same path) that fail part way: what readers saw while the rewrite
//! was in flight is what they see after it failed.

use std::time::Duration;

use disk_engine::{Disk, Fault};
use erasure_set::record::{self, ObjectRecord};

use crate::store_tests::{data, put, rig};

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
    // Once disk 0 holds the new write, read while the rewrite still waits
    // for the slow disks.
    let on_disk_0 = || async {
        let records = r.local[0].get_records(b"b", b"k").await.unwrap();
        records
            .iter()
            .map(|rec| record::decode::<ObjectRecord>(&rec.body).unwrap().tags)
            .any(|t| t == new)
    };
    while !on_disk_0().await {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
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
