//! DeleteObjects over a pool of many sets: one batch per set, so a set
//! whose keys cannot be locked fails its own items and the others are
//! deleted and answered as deleted.

use disk_engine::Fault;

use crate::error::Error;
use crate::store_tests::{data, get, put, rig_of_sets};
use crate::DeleteItem;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_whose_locks_cannot_be_taken_fails_only_its_own_items() {
    let r = rig_of_sets(3, 2);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let keys: Vec<String> = (0..24).map(|i| format!("k{i:02}")).collect();
    for (i, key) in keys.iter().enumerate() {
        put(&r, key, &data(1000 + i, i as u8)).await.unwrap();
    }
    // As gateways sharing the disks do: locks are leases on a majority of
    // the set's disks, which set 2 (disks 2 and 3) cannot grant with one
    // of its two disks gone.
    r.store.share_locks();
    r.faulty[2].set_faults(vec![Fault::Offline]);
    let in_set_2 = |key: &str| r.store.pools.index_of("b", key) == 1;
    assert!(keys.iter().any(|k| in_set_2(k)) && keys.iter().any(|k| !in_set_2(k)));
    let items: Vec<DeleteItem> = keys.iter().map(|k| DeleteItem::new(k, None)).collect();
    let outcomes = r.store.delete_objects("b", &items).await.unwrap();
    for (key, outcome) in keys.iter().zip(&outcomes) {
        match (in_set_2(key), outcome) {
            (true, Err(Error::WriteQuorum { .. })) => {
                let len = 1000 + keys.iter().position(|k| k == key).unwrap();
                assert_eq!(get(&r, key, 0..len as u64).await.unwrap().len(), len);
            }
            (false, Ok(_)) => {
                let gone = r.store.head_object("b", key).await;
                assert!(
                    matches!(gone, Err(Error::NoSuchKey { .. })),
                    "{key}: {gone:?}"
                );
            }
            (set_2, other) => panic!("{key} (in set 2: {set_2}): {other:?}"),
        }
    }
}
