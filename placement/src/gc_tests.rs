//! Garbage collection over a pool of many sets: each set is collected on
//! its own, so one whose disk does not answer is skipped and the others
//! are still collected.

use std::sync::Arc;

use bytes::Bytes;
use disk_engine::{Disk, Fault, Inventory, LocalDisk, ShardId, ShardOptions};
use uuid::Uuid;

use crate::store_tests::{data, get, put, rig_of_sets, BLOCK};

const SETS: usize = 3;
const WIDTH: usize = 2;

/// Writes a shard file nothing stages or refers to, as a crash between
/// staging and recording leaves once its owner is gone.
pub(crate) async fn plant(d: &LocalDisk) -> Uuid {
    let id = Uuid::new_v4();
    let opts = ShardOptions {
        block_size: BLOCK,
        shard_index: 0,
    };
    let mut w = d.create_shard(ShardId(id), opts).await.unwrap();
    w.append(Bytes::from(vec![7u8; 4096])).await.unwrap();
    w.finish().await.unwrap();
    id
}

pub(crate) async fn holds(d: &LocalDisk, id: Uuid) -> bool {
    let files = d.list_shards(None, 100_000).await.unwrap();
    files.iter().any(|f| f.id.0 == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_whose_disk_does_not_answer_is_skipped_and_the_others_are_collected() {
    let r = rig_of_sets(SETS, WIDTH);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let objects: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| (format!("k{i:02}"), data(40_000 + i * 1000, i as u8)))
        .collect();
    for (key, bytes) in &objects {
        put(&r, key, bytes).await.unwrap();
    }
    let local: Vec<Arc<LocalDisk>> = r.local.clone();
    let mut planted = Vec::new();
    for d in &local {
        planted.push(plant(d).await);
    }
    // Set 2 (disks 2 and 3) loses a disk: its records there are unknown.
    r.faulty[2].set_faults(vec![Fault::Offline]);
    assert!(r.store.collect_garbage().await);
    for (slot, d) in local.iter().enumerate() {
        let in_set_2 = slot / WIDTH == 1;
        assert_eq!(
            holds(d, planted[slot]).await,
            in_set_2,
            "disk {slot}: the garbage of sets 1 and 3 goes, set 2's stays"
        );
    }
    let p = r.store.gc_progress();
    assert_eq!(p.passes, 1, "{p:?}");
    assert_eq!(p.sets.len(), SETS, "{p:?}");
    assert!(p.sets[1].skipped.is_some(), "{p:?}");
    assert_eq!(p.skipped.len(), 1, "{p:?}");
    for i in [0, 2] {
        assert_eq!(p.sets[i].deleted, WIDTH as u64, "set {}: {p:?}", i + 1);
        assert!(p.sets[i].skipped.is_none(), "{p:?}");
    }
    for (key, bytes) in &objects {
        let len = bytes.len() as u64;
        assert_eq!(&get(&r, key, 0..len).await.unwrap(), bytes, "{key}");
    }
    // Back online, the next pass collects set 2 too.
    r.faulty[2].set_faults(Vec::new());
    assert!(r.store.collect_garbage().await);
    let p = r.store.gc_progress();
    assert!(p.skipped.is_empty(), "{p:?}");
    assert_eq!(p.sets[1].deleted, WIDTH as u64, "{p:?}");
    for (slot, d) in local.iter().enumerate() {
        assert!(!holds(d, planted[slot]).await, "disk {slot}");
    }
    for (key, bytes) in &objects {
        let len = bytes.len() as u64;
        assert_eq!(&get(&r, key, 0..len).await.unwrap(), bytes, "{key}");
    }
}
