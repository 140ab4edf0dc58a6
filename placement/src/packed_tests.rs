//! Packed small objects through the store: byte-exact round trips at the
//! sizes where the pieces change shape, no shard files, degraded reads,
//! repair of damaged pieces, and space freed by overwrite and delete.

use disk_engine::{Disk, DiskError, Fault, ShardIoMode};

use crate::error::Error;
use crate::model::Versioning;
use crate::objects::{DeleteItem, VersionRef};
use crate::store_tests::{
    count_shards, data, get, put, rig_packing, set_versioning, wait_for_repairs, Rig, BLOCK,
};

/// Packs everything up to one 2+2 stripe of the test block size.
const THRESHOLD: u64 = 2 * BLOCK as u64;

fn packed_rig(n: usize) -> Rig {
    rig_packing(n, None, ShardIoMode::Auto, 0, THRESHOLD)
}

async fn piece_id(r: &Rig, key: &str) -> uuid::Uuid {
    let obj = r.store.head_object("b", key).await.unwrap();
    assert!(obj.parts[0].packed, "{key} is not packed");
    obj.parts[0].data_id.unwrap()
}

#[tokio::test]
async fn small_objects_are_packed_without_files_and_read_back_exactly() {
    for n in [1, 2, 4, 6] {
        let r = packed_rig(n);
        r.store.create_bucket("b", "us-east-1").await.unwrap();
        // A packed object is one stripe: the threshold is capped there.
        let k = r.store.pools.system().data_shards();
        let t = (THRESHOLD as usize).min(k * BLOCK as usize);
        let sizes = [1, 2, 3, 4, 5, 4095, 4096, 4097, t / 2 + 1, t - 1, t];
        for (i, &size) in sizes.iter().enumerate() {
            let d = data(size, i as u8);
            let key = format!("k{size}");
            put(&r, &key, &d).await.unwrap();
            piece_id(&r, &key).await;
            assert_eq!(
                get(&r, &key, 0..size as u64).await.unwrap(),
                d,
                "{n} disks, {size} B"
            );
            if size > 2 {
                let mid = size as u64 / 2;
                assert_eq!(
                    get(&r, &key, 1..mid).await.unwrap(),
                    &d[1..mid as usize],
                    "{n} disks, {size} B, range"
                );
            }
        }
        // One byte over the threshold goes to shard files as before.
        put(&r, "big", &data(t + 1, 7)).await.unwrap();
        let big = r.store.head_object("b", "big").await.unwrap();
        assert!(!big.parts[0].packed);
        for l in &r.local {
            assert_eq!(
                count_shards(l.root()),
                1,
                "only the large object has a file"
            );
        }
    }
}

#[tokio::test]
async fn packed_reads_survive_m_failures_and_damaged_pieces_are_repaired() {
    let r = packed_rig(4);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let d = data(20_000, 5);
    put(&r, "k", &d).await.unwrap();
    let id = piece_id(&r, "k").await;
    r.faulty[0].set_faults(vec![Fault::Offline]);
    r.faulty[2].set_faults(vec![Fault::CorruptReads]);
    assert_eq!(get(&r, "k", 0..20_000).await.unwrap(), d);
    r.faulty[3].set_faults(vec![Fault::CorruptReads]);
    let err = get(&r, "k", 0..20_000).await.unwrap_err();
    assert!(matches!(err, Error::ReadQuorum { .. }), "{err:?}");
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    wait_for_repairs(&r).await;

    // Lose the pieces of two disks (m = 2): the read rebuilds, the repair
    // puts them back, and then the other two disks may go.
    for l in &r.local[..2] {
        l.delete_piece(id).await.unwrap();
    }
    assert_eq!(get(&r, "k", 0..20_000).await.unwrap(), d);
    wait_for_repairs(&r).await;
    for l in &r.local[..2] {
        assert_eq!(l.read_piece(id).await.unwrap().len(), 10_000);
    }
    r.faulty[2].set_faults(vec![Fault::Offline]);
    r.faulty[3].set_faults(vec![Fault::Offline]);
    assert_eq!(get(&r, "k", 0..20_000).await.unwrap(), d);
}

#[tokio::test]
async fn overwrite_delete_and_failed_writes_leave_no_pieces() {
    let r = packed_rig(4);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    put(&r, "k", &data(3_000, 1)).await.unwrap();
    let old = piece_id(&r, "k").await;
    put(&r, "k", &data(5_000, 2)).await.unwrap();
    assert_eq!(get(&r, "k", 0..5_000).await.unwrap(), data(5_000, 2));
    let new = piece_id(&r, "k").await;
    for l in &r.local {
        assert!(matches!(l.read_piece(old).await, Err(DiskError::NotFound)));
        assert!(l.read_piece(new).await.is_ok());
    }
    r.store.delete_object("b", "k", None).await.unwrap();
    for l in &r.local {
        assert!(matches!(l.read_piece(new).await, Err(DiskError::NotFound)));
    }

    // Three disks failing at 2+2: the write reached one disk (below R, so
    // nobody can have seen it); it fails, and that disk's record and piece
    // are rolled back.
    r.faulty[1].set_faults(vec![Fault::Offline]);
    r.faulty[2].set_faults(vec![Fault::FailWrites]);
    r.faulty[3].set_faults(vec![Fault::FailWrites]);
    let err = put(&r, "lost", &data(4_000, 3)).await.unwrap_err();
    assert!(matches!(err, Error::WriteQuorum { .. }), "{err:?}");
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    assert!(matches!(
        r.store.head_object("b", "lost").await,
        Err(Error::NoSuchKey { .. })
    ));
    for l in &r.local {
        assert_eq!(l.get_records(b"b", b"lost").await.unwrap().len(), 0);
    }

    // Two disks failing: the write reached R disks, where a reader may have
    // seen it. It fails (503: its outcome is unknown) but is not undone,
    // and reads back whole.
    r.faulty[1].set_faults(vec![Fault::Offline]);
    r.faulty[2].set_faults(vec![Fault::FailWrites]);
    let err = put(&r, "maybe", &data(4_000, 4)).await.unwrap_err();
    assert!(matches!(err, Error::WriteQuorum { .. }), "{err:?}");
    assert_eq!(get(&r, "maybe", 0..4_000).await.unwrap(), data(4_000, 4));
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    assert_eq!(get(&r, "maybe", 0..4_000).await.unwrap(), data(4_000, 4));
}

#[tokio::test]
async fn multi_delete_removes_a_batch_and_answers_in_order() {
    let r = packed_rig(4);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let mut ids = Vec::new();
    for i in 0..300 {
        put(&r, &format!("k{i:03}"), &data(100 + i, i as u8))
            .await
            .unwrap();
        ids.push(piece_id(&r, &format!("k{i:03}")).await);
    }
    // Every other key, one twice, and one that never existed.
    let mut items: Vec<DeleteItem> = (0..300)
        .step_by(2)
        .map(|i| DeleteItem::new(format!("k{i:03}"), None))
        .collect();
    items.push(DeleteItem::new("k000", None));
    items.push(DeleteItem::new("missing", None));
    let out = r.store.delete_objects("b", &items).await.unwrap();
    assert_eq!(out.len(), items.len());
    assert!(out
        .iter()
        .all(|o| o.as_ref().is_ok_and(|o| !o.delete_marker)));
    for (i, id) in ids.iter().enumerate() {
        let key = format!("k{i:03}");
        let got = get(&r, &key, 0..(100 + i) as u64).await;
        if i % 2 == 0 {
            assert!(matches!(got, Err(Error::NoSuchKey { .. })), "{key}");
            for l in &r.local {
                assert!(matches!(l.read_piece(*id).await, Err(DiskError::NotFound)));
            }
        } else {
            assert_eq!(got.unwrap(), data(100 + i, i as u8), "{key}");
        }
    }

    // Versioned: no version id makes delete markers, a version id removes
    // that version; both in one request.
    set_versioning(&r, Versioning::Enabled).await;
    put(&r, "v", b"one").await.unwrap();
    let v1 = r.store.head_object("b", "v").await.unwrap();
    put(&r, "v", b"two").await.unwrap();
    let items = vec![
        DeleteItem::new("k001", None),
        DeleteItem::new("v", Some(VersionRef::of(&v1))),
    ];
    let out = r.store.delete_objects("b", &items).await.unwrap();
    let marker = out[0].as_ref().unwrap();
    assert!(marker.delete_marker && marker.version.is_some());
    assert!(!out[1].as_ref().unwrap().delete_marker);
    assert!(matches!(
        r.store.head_object("b", "k001").await,
        Err(Error::NoSuchKey { .. })
    ));
    assert_eq!(get(&r, "v", 0..3).await.unwrap(), b"two");
    assert!(matches!(
        r.store
            .get_version("b", "v", Some(VersionRef::of(&v1)))
            .await,
        Err(Error::NoSuchVersion)
    ));
}
