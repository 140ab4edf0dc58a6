//! Store-level tests over real local disks, with faults injected by
//! wrapping them in `FaultyDisk`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use disk_engine::{
    Disk, Fault, FaultyDisk, LocalDisk, LocalDiskOptions, ShardId, ShardIoMode, Tier,
};
use erasure_set::record::{ObjectMeta, ObjectRecord};
use erasure_set::{open_local_set, BodyStream, LocalSet, LocalSetConfig};
use futures::StreamExt;

use crate::error::Error;
use crate::store::{Store, StoreOptions};
use crate::{ListStart, VersionRef, Versioning, WriteCondition, WriteOptions};

pub(crate) struct Rig {
    pub store: Arc<Store>,
    pub faulty: Vec<FaultyDisk>,
    pub local: Vec<Arc<LocalDisk>>,
    _dir: tempfile::TempDir,
}

pub(crate) const BLOCK: u32 = 16 << 10;

/// No cache: most tests read what is on the disks after injecting faults.
pub(crate) fn rig(n: usize, parity: Option<usize>) -> Rig {
    rig_with(n, parity, ShardIoMode::Auto, 0)
}

/// A store over `n` fresh directories with the given shard I/O path and
/// cache size.
pub(crate) fn rig_with(n: usize, parity: Option<usize>, io: ShardIoMode, cache: u64) -> Rig {
    rig_packing(n, parity, io, cache, 0)
}

/// [`rig_with`] that packs objects up to `pack_threshold` bytes.
pub(crate) fn rig_packing(
    n: usize,
    parity: Option<usize>,
    io: ShardIoMode,
    cache: u64,
    pack_threshold: u64,
) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let set = open_local_set(&LocalSetConfig {
        dirs: (0..n).map(|i| dir.path().join(format!("d{i}"))).collect(),
        parity,
        tier: Tier::Hot,
        pool: 0,
        set: 0,
        sets: 1,
        pool_exists: false,
        deployment: None,
        disk: LocalDiskOptions {
            fsync: false,
            io,
            listing_of: Some(erasure_set::listing_of_body),
        },
    })
    .unwrap();
    let local: Vec<Arc<LocalDisk>> = set.local.into_iter().map(|d| d.unwrap()).collect();
    let faulty: Vec<FaultyDisk> = set.disks.into_iter().map(FaultyDisk::new).collect();
    let disks: Vec<Arc<dyn Disk>> = faulty
        .iter()
        .map(|f| Arc::new(f.clone()) as Arc<dyn Disk>)
        .collect();
    let opts = StoreOptions {
        block_size: BLOCK,
        read_cache_bytes: cache,
        pack_threshold,
    };
    let store = Store::new(disks, set.parity, opts).unwrap();
    Rig {
        store,
        faulty,
        local,
        _dir: dir,
    }
}

/// A first pool of `sets` sets of `width` fresh directories under `dir`,
/// no fsync.
pub(crate) fn open_sets(
    dir: &std::path::Path,
    sets: usize,
    width: usize,
) -> crate::local_pool::LocalPool {
    let pool = crate::local_pool::open_local_pool(&crate::local_pool::LocalPoolConfig {
        tier: disk_engine::Tier::Hot,
        pool: 0,
        deployment: None,
        dirs: (0..sets * width)
            .map(|i| dir.join(format!("d{i}")))
            .collect(),
        set_width: Some(width),
        parity: None,
        disk: LocalDiskOptions {
            fsync: false,
            io: ShardIoMode::Blocking,
            listing_of: Some(erasure_set::listing_of_body),
        },
    })
    .unwrap();
    assert_eq!(pool.sets.len(), sets);
    pool
}

/// A store whose first pool is `sets` sets of `width` fresh directories,
/// every disk wrapped in `FaultyDisk` (in pool order), packing off.
pub(crate) fn rig_of_sets(sets: usize, width: usize) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let mut pool = open_sets(dir.path(), sets, width);
    let (faulty, local) = wrap_faulty(&mut pool.sets);
    let opts = StoreOptions {
        block_size: BLOCK,
        read_cache_bytes: 0,
        pack_threshold: 0,
    };
    Rig {
        store: Store::for_pool(pool, opts).unwrap(),
        faulty,
        local,
        _dir: dir,
    }
}

/// Wraps every disk of `sets` in `FaultyDisk`; returns the wrappers and
/// the local disks beneath, in pool order.
pub(crate) fn wrap_faulty(sets: &mut [LocalSet]) -> (Vec<FaultyDisk>, Vec<Arc<LocalDisk>>) {
    let mut faulty = Vec::new();
    let mut local = Vec::new();
    for set in sets {
        local.extend(set.local.iter().map(|d| d.clone().unwrap()));
        let wrapped: Vec<FaultyDisk> = set.disks.drain(..).map(FaultyDisk::new).collect();
        set.disks = wrapped
            .iter()
            .map(|f| Arc::new(f.clone()) as Arc<dyn Disk>)
            .collect();
        faulty.extend(wrapped);
    }
    (faulty, local)
}

pub(crate) fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

pub(crate) fn body(bytes: &[u8], piece: usize) -> BodyStream {
    let chunks: Vec<Result<Bytes, crate::BodyError>> = bytes
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(chunks))
}

/// Sets bucket "b"'s versioning state.
pub(crate) async fn set_versioning(r: &Rig, state: Versioning) {
    r.store
        .update_bucket("b", |b| {
            b.versioning = state;
            Ok(())
        })
        .await
        .unwrap();
}

pub(crate) async fn put(r: &Rig, key: &str, bytes: &[u8]) -> Result<(), Error> {
    let staged = r
        .store
        .write_data("b", key, body(bytes, 10_000), Some(bytes.len() as u64))
        .await?;
    commit(&r.store, "b", key, staged).await?;
    Ok(())
}

/// Commits `staged` as the current version of `bucket/key` (entity tag
/// "e", no tags, no condition).
pub(crate) async fn commit(
    store: &Store,
    bucket: &str,
    key: &str,
    staged: crate::StagedData,
) -> Result<ObjectRecord, Error> {
    let meta = ObjectMeta {
        etag: "e".into(),
        ..Default::default()
    };
    store
        .put_object(
            bucket,
            key,
            staged,
            meta,
            Vec::new(),
            &WriteOptions::default(),
        )
        .await
}

pub(crate) async fn get(r: &Rig, key: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, Error> {
    let obj = r.store.head_object("b", key).await?;
    let mut s = r.store.read_object("b", key, obj, range);
    let mut out = Vec::new();
    while let Some(c) = s.next().await {
        out.extend_from_slice(&c?);
    }
    Ok(out)
}

pub(crate) async fn wait_for_repairs(r: &Rig) {
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let s = r.store.repair_stats();
        let q = s.queued.load(std::sync::atomic::Ordering::Relaxed);
        let done = s.repaired.load(std::sync::atomic::Ordering::Relaxed)
            + s.failed.load(std::sync::atomic::Ordering::Relaxed);
        if q == done {
            return;
        }
    }
    panic!("repairs did not finish");
}

#[tokio::test]
async fn round_trips_at_stripe_boundaries_and_ranges() {
    for (n, parity) in [
        (4, None),
        (6, None),
        (1, None),
        (2, None),
        (3, None),
        (5, Some(1)),
    ] {
        let r = rig(n, parity);
        r.store.create_bucket("b", "us-east-1").await.unwrap();
        let stripe = r.store.pools.system().layout_for("b", "k").stripe_size() as usize;
        for len in [0, 1, stripe - 1, stripe, stripe + 1, 3 * stripe + 7] {
            let d = data(len, len as u8);
            put(&r, "k", &d).await.unwrap();
            assert_eq!(
                get(&r, "k", 0..len as u64).await.unwrap(),
                d,
                "{n} disks, {len} bytes"
            );
            if len > 2 {
                for (a, b) in [(1, len - 1), (len / 2, len / 2 + 1), (0, 1), (len - 1, len)] {
                    assert_eq!(get(&r, "k", a as u64..b as u64).await.unwrap(), &d[a..b]);
                }
            }
        }
    }
}

#[tokio::test]
async fn reads_survive_m_failures_and_refuse_m_plus_one() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let d = data(200_000, 3);
    put(&r, "k", &d).await.unwrap();
    r.faulty[0].set_faults(vec![Fault::Offline]);
    r.faulty[2].set_faults(vec![Fault::CorruptReads]);
    assert_eq!(get(&r, "k", 0..d.len() as u64).await.unwrap(), d);
    assert_eq!(get(&r, "k", 5..77_777).await.unwrap(), &d[5..77_777]);
    r.faulty[3].set_faults(vec![Fault::CorruptReads]);
    let err = get(&r, "k", 0..d.len() as u64).await.unwrap_err();
    assert!(matches!(err, Error::ReadQuorum { .. }), "{err:?}");
}

#[tokio::test]
async fn damaged_shards_are_repaired_after_a_read() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let d = data(300_000, 9);
    put(&r, "k", &d).await.unwrap();
    let obj = r.store.head_object("b", "k").await.unwrap();
    let id = ShardId(obj.parts[0].data_id.unwrap());
    // Delete one shard file and flip a byte in another.
    std::fs::remove_file(r.local[1].shard_path(id)).unwrap();
    let p = r.local[3].shard_path(id);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[4096 + 10] ^= 0xFF;
    std::fs::write(&p, bytes).unwrap();
    assert_eq!(get(&r, "k", 0..d.len() as u64).await.unwrap(), d);
    wait_for_repairs(&r).await;
    // Both shards are whole again: the two other disks can go and reads still work.
    r.faulty[0].set_faults(vec![Fault::Offline]);
    r.faulty[2].set_faults(vec![Fault::Offline]);
    assert_eq!(get(&r, "k", 0..d.len() as u64).await.unwrap(), d);
}

#[tokio::test]
async fn writes_need_a_write_quorum_and_report_full_disks() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    // 2+2: W = 3, so one disk may be offline.
    r.faulty[1].set_faults(vec![Fault::Offline]);
    put(&r, "one-down", &data(100_000, 1)).await.unwrap();
    r.faulty[2].set_faults(vec![Fault::Offline]);
    let err = put(&r, "two-down", &data(100_000, 1)).await.unwrap_err();
    assert!(
        matches!(err, Error::WriteQuorum { needed: 3, got: 2 }),
        "{err:?}"
    );
    r.faulty[1].set_faults(vec![]);
    r.faulty[2].set_faults(vec![]);
    assert!(matches!(
        r.store.head_object("b", "two-down").await,
        Err(Error::NoSuchKey { .. })
    ));
    // The object written while a disk was offline is healed onto it by a read.
    assert_eq!(
        get(&r, "one-down", 0..100_000).await.unwrap(),
        data(100_000, 1)
    );
    wait_for_repairs(&r).await;
    for f in [0, 2] {
        r.faulty[f].set_faults(vec![Fault::Offline]);
    }
    assert_eq!(
        get(&r, "one-down", 0..100_000).await.unwrap(),
        data(100_000, 1)
    );
    for f in &r.faulty {
        f.set_faults(vec![]);
    }
    // Disks filling up mid-write: nothing becomes visible, nothing is left behind.
    for f in &r.faulty[..2] {
        f.set_faults(vec![Fault::FullAfter(50_000)]);
    }
    let err = put(&r, "full", &data(1_000_000, 2)).await.unwrap_err();
    assert!(matches!(err, Error::DiskFull), "{err:?}");
    assert!(matches!(
        r.store.head_object("b", "full").await,
        Err(Error::NoSuchKey { .. })
    ));
    tokio::time::sleep(Duration::from_millis(100)).await;
    for l in &r.local {
        assert_eq!(std::fs::read_dir(l.root().join("tmp")).unwrap().count(), 0);
    }
}

#[tokio::test]
async fn overwrite_and_delete_free_the_old_shards() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    put(&r, "k", &data(70_000, 1)).await.unwrap();
    let old = ShardId(
        r.store.head_object("b", "k").await.unwrap().parts[0]
            .data_id
            .unwrap(),
    );
    put(&r, "k", &data(80_000, 2)).await.unwrap();
    assert_eq!(get(&r, "k", 0..80_000).await.unwrap(), data(80_000, 2));
    for l in &r.local {
        assert!(!l.shard_path(old).exists());
    }
    let new = ShardId(
        r.store.head_object("b", "k").await.unwrap().parts[0]
            .data_id
            .unwrap(),
    );
    r.store.delete_object("b", "k", None).await.unwrap();
    assert!(matches!(
        r.store.head_object("b", "k").await,
        Err(Error::NoSuchKey { .. })
    ));
    for l in &r.local {
        assert!(!l.shard_path(new).exists());
    }
}

/// Stores a copy of key `a`'s record as `ghost` in bucket `b` on disk 0
/// only: a write cut short after its first disk.
async fn put_ghost_on_disk_0(r: &Rig) {
    let object = r.store.head_object("b", "a").await.unwrap();
    put_on_disk_0(r, "ghost", &object).await;
}

/// Stores `object` as the null version of `key` in bucket `b`, under a
/// fresh stamp, on disk 0 only: a write cut short after its first disk.
pub(crate) async fn put_on_disk_0(r: &Rig, key: &str, object: &ObjectRecord) {
    let stray = disk_engine::Record {
        version: disk_engine::VersionId::NULL,
        stamp: r.store.pools.system().next_stamp(),
        body: erasure_set::record::encode(object),
        listing: erasure_set::encode_projection(object),
    };
    r.local[0]
        .put_record(b"b", key.as_bytes(), disk_engine::RecordPut::of(stray))
        .await
        .unwrap();
}

#[tokio::test]
async fn listing_merges_disks_and_hides_unacknowledged_records() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    for k in ["a", "b/1", "b/2", "c"] {
        put(&r, k, b"x").await.unwrap();
    }
    // A record present on a single disk (an interrupted write) is not listed.
    put_ghost_on_disk_0(&r).await;
    let page = r
        .store
        .list_objects("b", "", ListStart::Beginning, 1000)
        .await
        .unwrap();
    let keys: Vec<_> = page.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, vec!["a", "b/1", "b/2", "c"]);
    let page = r
        .store
        .list_objects("b", "b/", ListStart::After(b"b/1".to_vec()), 1)
        .await
        .unwrap();
    let keys: Vec<_> = page.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, vec!["b/2"]);
    assert!(matches!(
        r.store.delete_bucket("b").await,
        Err(Error::BucketNotEmpty { .. })
    ));
    assert_eq!(r.store.list_buckets().await.unwrap().len(), 1);
}

/// Every current object as the record listing resolves it, page by page.
async fn listed_from_records(r: &Rig, page: usize) -> Vec<(String, crate::ObjectSummary)> {
    let mut out = Vec::new();
    let mut start = ListStart::Beginning;
    loop {
        let p = r.store.list_versions("b", "", start, page).await.unwrap();
        for (k, mut v) in p.entries {
            let latest = v.swap_remove(0);
            if !latest.delete_marker {
                out.push((k, latest));
            }
        }
        match p.next {
            Some(n) => start = ListStart::After(n.into_bytes()),
            None => return out,
        }
    }
}

async fn listed_current(r: &Rig, page: usize) -> Vec<(String, crate::ObjectSummary)> {
    let mut out = Vec::new();
    let mut start = ListStart::Beginning;
    loop {
        let p = r.store.list_objects("b", "", start, page).await.unwrap();
        out.extend(p.entries);
        match p.next {
            Some(n) => start = ListStart::After(n.into_bytes()),
            None => return out,
        }
    }
}

#[tokio::test]
async fn listings_from_heads_match_the_records_through_versions_and_a_missing_disk() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    for i in 0..30 {
        put(&r, &format!("plain/{i:02}"), b"x").await.unwrap();
    }
    set_versioning(&r, Versioning::Enabled).await;
    for i in 0..12 {
        // Up to 11 versions: past what a head keeps, so some keys are
        // counted only.
        for v in 0..=i {
            put(&r, &format!("v/{i:02}"), &data(v + 1, v as u8))
                .await
                .unwrap();
        }
    }
    r.store.delete_object("b", "v/03", None).await.unwrap();
    r.store.delete_object("b", "plain/07", None).await.unwrap();
    // Writes while a disk is away: it misses them.
    r.faulty[2].set_faults(vec![Fault::Offline]);
    put(&r, "v/05", b"while away").await.unwrap();
    put(&r, "late", b"while away").await.unwrap();
    let expected = listed_from_records(&r, 1000).await;
    assert_eq!(expected.len(), 30 - 1 + 12 - 1 + 1);
    for page in [1, 7, 1000] {
        assert_eq!(listed_current(&r, page).await, expected, "pages of {page}");
    }
    // The disk is back, with the writes it missed: those pages come from
    // the records; the others from the heads.
    r.faulty[2].set_faults(vec![]);
    for page in [1, 7, 1000] {
        assert_eq!(listed_current(&r, page).await, expected, "pages of {page}");
    }
    let store = &r.store;
    let heads = |prefix: &'static str| async move {
        store
            .pools
            .system()
            .list_current("b", prefix.as_bytes(), ListStart::Beginning, 1000)
            .await
            .unwrap()
    };
    let plain = heads("plain/")
        .await
        .expect("agreeing disks list from heads");
    // plain/07 is a delete marker now: left out.
    assert_eq!(plain.range.len(), 29);
    assert!(heads("late").await.is_none(), "a disk that missed a write");
    assert!(heads("v/1").await.is_none(), "a key with a long history");
    assert!(heads("v/02").await.is_some(), "a few versions");
}

/// Writes and deletions cut short after reaching some of the disks (a
/// gateway that died mid-write): whichever disks a heads listing reads, it
/// shows exactly what reads show, at every page size.
#[tokio::test]
async fn a_listing_from_some_disks_shows_what_reads_show_after_interrupted_writes() {
    let r = rig(4, None);
    assert_eq!(
        erasure_set::heads_readers(4, r.store.pools.system().quorum().read),
        3
    );
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    // Every set of one, two or three disks of four.
    let subsets: Vec<Vec<usize>> = (1u32..15)
        .filter(|m| m.count_ones() < 4)
        .map(|m| (0..4).filter(|i| m & (1 << i) != 0).collect())
        .collect();
    for i in 0..subsets.len() {
        for kind in ["new", "over", "gone"] {
            put(&r, &format!("{kind}/{i:02}/kept"), b"x").await.unwrap();
            if kind != "new" {
                put(&r, &format!("{kind}/{i:02}/cut"), b"x").await.unwrap();
            }
        }
    }
    for (i, disks) in subsets.iter().enumerate() {
        // A new key, and an overwrite, stored on these disks only.
        for (kind, key) in [("new", "kept"), ("over", "cut")] {
            let mut object = r
                .store
                .head_object("b", &format!("{kind}/{i:02}/{key}"))
                .await
                .unwrap();
            object.mtime_ns += 1_000_000_000;
            object.meta.etag = format!("cut-{i}");
            let rec = disk_engine::Record {
                version: disk_engine::VersionId::NULL,
                stamp: r.store.pools.system().next_stamp(),
                body: erasure_set::record::encode(&object),
                listing: erasure_set::encode_projection(&object),
            };
            let name = format!("{kind}/{i:02}/cut");
            for &d in disks {
                r.local[d]
                    .put_record(
                        b"b",
                        name.as_bytes(),
                        disk_engine::RecordPut::of(rec.clone()),
                    )
                    .await
                    .unwrap();
            }
        }
        // A deletion that reached these disks only.
        for &d in disks {
            r.local[d]
                .delete_record(
                    b"b",
                    format!("gone/{i:02}/cut").as_bytes(),
                    disk_engine::VersionId::NULL,
                    None,
                )
                .await
                .unwrap();
        }
    }
    let by_reads = listed_from_records(&r, 1000).await;
    for i in 0..subsets.len() {
        for kind in ["new", "over", "gone"] {
            for key in ["cut", "kept"] {
                let name = format!("{kind}/{i:02}/{key}");
                let listed = by_reads.iter().any(|(k, _)| *k == name);
                match r.store.head_object("b", &name).await {
                    Ok(_) => assert!(listed, "{name}"),
                    Err(Error::NoSuchKey { .. }) => assert!(!listed, "{name}"),
                    Err(e) => panic!("{name}: {e}"),
                }
            }
        }
    }
    for page in [1, 2, 3, 5, 1000] {
        assert_eq!(listed_current(&r, page).await, by_reads, "pages of {page}");
    }
    for (name, summary) in &by_reads {
        let object = r.store.head_object("b", name).await.unwrap();
        assert_eq!(summary.meta.etag, object.meta.etag, "{name}");
    }
}

/// The keys of one `list_objects` page of `max` keys after `after`.
async fn page_after(r: &Rig, after: &str, max: usize) -> Vec<String> {
    let start = ListStart::After(after.as_bytes().to_vec());
    let p = r.store.list_objects("b", "", start, max).await.unwrap();
    p.entries.into_iter().map(|(k, _)| k).collect()
}

#[tokio::test]
async fn a_page_read_ahead_is_used_only_if_nothing_was_written_since() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    for k in ["a", "b", "c", "d", "e"] {
        put(&r, k, b"x").await.unwrap();
    }
    let store = &r.store;
    let hits = || store.pools.system().list_ahead_hits();
    let page = |after: &'static str| page_after(&r, after, 2);
    // Read ahead, nothing written: the page read ahead is served.
    r.store
        .read_ahead("b", "", ListStart::After(b"a".to_vec()), 2, None);
    assert_eq!(page("a").await, ["b", "c"]);
    assert_eq!(hits(), 1);
    // Read ahead, then a key written (and acknowledged) inside the page:
    // the page is read again and shows it.
    r.store
        .read_ahead("b", "", ListStart::After(b"b".to_vec()), 2, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    put(&r, "c2", b"new").await.unwrap();
    assert_eq!(page("b").await, ["c", "c2"]);
    assert_eq!(hits(), 1);
    // Likewise for a deletion.
    r.store
        .read_ahead("b", "", ListStart::After(b"c2".to_vec()), 2, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    r.store.delete_object("b", "d", None).await.unwrap();
    assert_eq!(page("c2").await, ["e"]);
    assert_eq!(hits(), 1);
    // A page the chunk read ahead does not hold is read from the disks:
    // it starts after the chunk's last key, which has more after it.
    r.store
        .read_ahead("b", "", ListStart::After(b"a".to_vec()), 2, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(page("c").await, ["c2", "e"]);
    assert_eq!(hits(), 1);
    // A shorter page from the same start is held.
    assert_eq!(page_after(&r, "a", 1).await, ["b"]);
    assert_eq!(hits(), 2);
}

#[tokio::test]
async fn a_client_paging_through_keys_is_read_ahead_in_chunks_of_pages() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    for i in 0..40 {
        put(&r, &format!("k{i:02}"), b"x").await.unwrap();
    }
    let store = &r.store;
    let hits = || store.pools.system().list_ahead_hits();
    let chunks = || store.pools.system().list_ahead_chunks();
    let page = |after: &'static str| page_after(&r, after, 4);
    // A client asking for 3 keys at a time (the set is asked for one more,
    // to tell whether more follow) is read ahead 12 keys at a time: the
    // chunk after its next page, and the chunk after that, no further
    // while neither is asked for.
    r.store
        .read_ahead("b", "", ListStart::After(b"k02".to_vec()), 4, Some(3));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(chunks(), 2);
    assert_eq!(page("k02").await, ["k03", "k04", "k05", "k06"]);
    assert_eq!(page("k05").await, ["k06", "k07", "k08", "k09"]);
    assert_eq!(page("k08").await, ["k09", "k10", "k11", "k12"]);
    // The page that reaches the chunk's end is short; the gateway asks for
    // the rest after its last key, which the next chunk holds.
    assert_eq!(page("k11").await, ["k12", "k13", "k14"]);
    assert_eq!(hits(), 4);
    assert_eq!(page("k14").await, ["k15", "k16", "k17", "k18"]);
    assert_eq!(hits(), 5);
    // Reading the second chunk starts the third.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(chunks(), 3);
    // Chunks read ahead are used only if nothing was written since.
    put(&r, "k20a", b"new").await.unwrap();
    assert_eq!(page("k17").await, ["k18", "k19", "k20", "k20a"]);
    assert_eq!(hits(), 5);
    // Nor do they count against the listing's depth: reading ahead after
    // the write starts two chunks again.
    r.store
        .read_ahead("b", "", ListStart::After(b"k20".to_vec()), 4, Some(3));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(chunks(), 5);
    assert_eq!(page("k20").await, ["k20a", "k21", "k22", "k23"]);
    assert_eq!(hits(), 6);
}

/// A store of four disks with bucket `b` holding keys `a`, `c` and `x/1`.
async fn rig_with_three_keys() -> Rig {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    for k in ["a", "c", "x/1"] {
        put(&r, k, b"x").await.unwrap();
    }
    r
}

/// The keys of one page of up to 1,000 keys of bucket `b` under `prefix`.
async fn first_page(r: &Rig, prefix: &str) -> Vec<String> {
    let page = r
        .store
        .list_objects("b", prefix, ListStart::Beginning, 1000)
        .await
        .unwrap();
    page.entries.into_iter().map(|(k, _)| k).collect()
}

/// Lists `prefix` of bucket `b` until a page is read from one disk (its
/// disks were compared), and returns that listing's keys.
async fn listed_from_one_disk(r: &Rig, prefix: &str) -> Vec<String> {
    for _ in 0..500 {
        let before = r.store.listing_one_disk_pages();
        let keys = first_page(r, prefix).await;
        if r.store.listing_one_disk_pages() > before {
            return keys;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never listed from one disk");
}

/// A listing reads one disk once the disks were compared, but not where a
/// write missed a disk: that disk (the first one a listing from the
/// start reads) would not show the key.
#[tokio::test]
async fn a_listing_reads_one_disk_where_the_disks_agree_but_not_where_a_write_missed_one() {
    let r = rig_with_three_keys().await;
    assert_eq!(listed_from_one_disk(&r, "").await, ["a", "c", "x/1"]);
    r.faulty[0].set_faults(vec![Fault::FailWrites]);
    put(&r, "b", b"x").await.unwrap();
    r.faulty[0].set_faults(vec![]);
    let one_disk = r.store.listing_one_disk_pages();
    assert_eq!(first_page(&r, "").await, ["a", "b", "c", "x/1"]);
    assert_eq!(
        r.store.listing_one_disk_pages(),
        one_disk,
        "read from a quorum"
    );
    // Pages without the key still read one disk.
    assert_eq!(listed_from_one_disk(&r, "x/").await, ["x/1"]);
    assert_eq!(r.store.listing_one_disk_pages(), one_disk + 1);
    // Once the key is healed and compared again, its pages read one disk.
    assert!(r.store.pools.system().recheck_doubts("b").await);
    assert_eq!(first_page(&r, "").await, ["a", "b", "c", "x/1"]);
    assert_eq!(
        r.store.listing_one_disk_pages(),
        one_disk + 1,
        "not healed yet"
    );
    r.store
        .pools
        .system()
        .heal_object("b", "b", &[])
        .await
        .unwrap();
    assert!(r.store.pools.system().recheck_doubts("b").await);
    assert_eq!(first_page(&r, "").await, ["a", "b", "c", "x/1"]);
    assert_eq!(r.store.listing_one_disk_pages(), one_disk + 2);
}

/// Differences left from before this process (a write that reached one
/// disk and was never acknowledged) are found by comparing the disks
/// before any listing reads one of them.
#[tokio::test]
async fn a_listing_reads_one_disk_only_where_a_scan_found_the_disks_agree() {
    let r = rig_with_three_keys().await;
    // Disk 0 is the one a listing from the start reads first.
    put_ghost_on_disk_0(&r).await;
    assert_eq!(listed_from_one_disk(&r, "x/").await, ["x/1"]);
    let one_disk = r.store.listing_one_disk_pages();
    assert_eq!(first_page(&r, "").await, ["a", "c", "x/1"]);
    assert_eq!(
        r.store.listing_one_disk_pages(),
        one_disk,
        "read from a quorum"
    );
}

/// Every key of a listing paged through `max` keys at a time as the
/// gateway does it: the set asked for one key more than the page still
/// needs, short pages continued after their last key, and the next page
/// read ahead after each truncated one.
async fn page_through(r: &Rig, max: usize) -> Vec<String> {
    let mut listed = Vec::new();
    let mut cursor = ListStart::Beginning;
    let mut calls = 0;
    loop {
        let mut page: Vec<String> = Vec::new();
        let truncated = loop {
            calls += 1;
            assert!(calls < 1000, "the listing makes no progress");
            let want = max - page.len() + 1;
            let p = r
                .store
                .list_objects("b", "", cursor.clone(), want)
                .await
                .unwrap();
            let room = max - page.len();
            let full = p.entries.len() > room;
            page.extend(p.entries.into_iter().take(room).map(|(k, _)| k));
            match (full, p.next) {
                (true, _) => break true,
                (false, Some(n)) => cursor = ListStart::After(n.into_bytes()),
                (false, None) => break false,
            }
        };
        listed.extend(page.iter().cloned());
        if !truncated {
            return listed;
        }
        let last = page.last().expect("a full page").as_bytes().to_vec();
        r.store
            .read_ahead("b", "", ListStart::After(last.clone()), max + 1, Some(max));
        cursor = ListStart::After(last);
    }
}

#[tokio::test]
async fn paging_through_chunks_read_ahead_lists_every_visible_key_once() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    set_versioning(&r, Versioning::Enabled).await;
    let mut visible = Vec::new();
    for i in 0..60 {
        let key = format!("k{i:02}");
        put(&r, &key, b"x").await.unwrap();
        // Delete markers in runs and alone, at chunk and page edges.
        match i % 9 == 4 || (20..26).contains(&i) || i == 59 {
            true => {
                r.store.delete_object("b", &key, None).await.unwrap();
            }
            false => visible.push(key),
        }
    }
    let store = &r.store;
    let hits = || store.pools.system().list_ahead_hits();
    for max in [1, 2, 3, 4, 5, 7, 13, 100] {
        let before = hits();
        assert_eq!(page_through(&r, max).await, visible, "pages of {max}");
        if max < 13 {
            assert!(hits() > before, "pages of {max} were read ahead");
        }
    }
}

#[tokio::test]
async fn multipart_complete_and_abort() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let id = r
        .store
        .create_upload("b", "mp", ObjectMeta::default(), Vec::new(), None, false)
        .await
        .unwrap();
    let up = r.store.get_upload("b", "mp", id).await.unwrap();
    let parts = [data(50_000, 1), data(50_000, 2), data(1, 3)];
    for (i, p) in parts.iter().enumerate() {
        let staged = r
            .store
            .write_part_data("b", "mp", id, &up, body(p, 4096), None)
            .await
            .unwrap();
        r.store
            .commit_part(
                "b",
                "mp",
                id,
                &up,
                i as u32 + 1,
                staged,
                format!("e{i}"),
                None,
            )
            .await
            .unwrap();
    }
    // Re-uploading part 2 replaces it.
    let staged = r
        .store
        .write_part_data("b", "mp", id, &up, body(&parts[1], 999), None)
        .await
        .unwrap();
    r.store
        .commit_part("b", "mp", id, &up, 2, staged, "e1".into(), None)
        .await
        .unwrap();
    let (listed, more) = r.store.list_parts("b", "mp", id, 0, 1000).await.unwrap();
    assert_eq!(listed.len(), 3);
    assert!(!more);
    let (ups, _) = r
        .store
        .list_uploads("b", "", crate::UploadListStart::Beginning, 10)
        .await
        .unwrap();
    assert_eq!(ups.len(), 1);
    r.store
        .complete_upload(
            "b",
            "mp",
            id,
            listed,
            ObjectMeta::default(),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    let whole: Vec<u8> = parts.concat();
    assert_eq!(get(&r, "mp", 0..whole.len() as u64).await.unwrap(), whole);
    assert_eq!(
        get(&r, "mp", 49_990..50_010).await.unwrap(),
        &whole[49_990..50_010]
    );
    assert!(matches!(
        r.store.get_upload("b", "mp", id).await,
        Err(Error::NoSuchUpload)
    ));
    assert!(matches!(
        r.store.abort_upload("b", "mp", id).await,
        Err(Error::NoSuchUpload)
    ));

    let id2 = r
        .store
        .create_upload("b", "mp2", ObjectMeta::default(), Vec::new(), None, false)
        .await
        .unwrap();
    let up2 = r.store.get_upload("b", "mp2", id2).await.unwrap();
    let staged = r
        .store
        .write_part_data("b", "mp2", id2, &up2, body(&parts[0], 4096), None)
        .await
        .unwrap();
    let part = r
        .store
        .commit_part("b", "mp2", id2, &up2, 1, staged, "x".into(), None)
        .await
        .unwrap();
    r.store.abort_upload("b", "mp2", id2).await.unwrap();
    let pid = ShardId(part.part.data_id.unwrap());
    for l in &r.local {
        assert!(!l.shard_path(pid).exists());
    }
    // The completed object is untouched.
    assert_eq!(get(&r, "mp", 0..whole.len() as u64).await.unwrap(), whole);
}

async fn put_with(
    r: &Rig,
    key: &str,
    bytes: &[u8],
    etag: &str,
    opts: &WriteOptions,
) -> Result<crate::ObjectRecord, Error> {
    let staged = r
        .store
        .write_data("b", key, body(bytes, 10_000), Some(bytes.len() as u64))
        .await?;
    let meta = ObjectMeta {
        etag: etag.into(),
        ..Default::default()
    };
    r.store
        .put_object("b", key, staged, meta, Vec::new(), opts)
        .await
}

async fn read_version(r: &Rig, key: &str, v: Option<VersionRef>) -> Vec<u8> {
    let obj = r.store.get_version("b", key, v).await.unwrap();
    let mut s = r.store.read_object("b", key, obj.clone(), 0..obj.size);
    let mut out = Vec::new();
    while let Some(c) = s.next().await {
        out.extend_from_slice(&c.unwrap());
    }
    out
}

#[tokio::test]
async fn versions_and_delete_markers() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let none = WriteOptions::default();
    put_with(&r, "k", b"null-era", "e0", &none).await.unwrap();
    set_versioning(&r, Versioning::Enabled).await;
    let v1 = put_with(&r, "k", b"one", "e1", &none).await.unwrap();
    let v2 = put_with(&r, "k", b"two", "e2", &none).await.unwrap();
    assert!(v1.version_id.is_some() && v1.version_id != v2.version_id);
    assert_eq!(read_version(&r, "k", None).await, b"two");
    assert_eq!(
        read_version(&r, "k", Some(VersionRef::of(&v1))).await,
        b"one"
    );
    assert_eq!(
        read_version(&r, "k", Some(VersionRef::Null)).await,
        b"null-era"
    );

    // Tagging an old version does not make it current.
    r.store
        .set_tags(
            "b",
            "k",
            Some(VersionRef::of(&v1)),
            vec![("t".into(), "1".into())],
        )
        .await
        .unwrap();
    assert_eq!(read_version(&r, "k", None).await, b"two");
    let tagged = r
        .store
        .get_version("b", "k", Some(VersionRef::of(&v1)))
        .await
        .unwrap();
    assert_eq!(tagged.tags, vec![("t".to_string(), "1".to_string())]);
    assert_eq!(tagged.mtime_ns, v1.mtime_ns);

    // A delete marker hides the key; removing it brings the key back.
    let out = r.store.delete_object("b", "k", None).await.unwrap();
    assert!(out.delete_marker);
    assert!(
        r.store
            .get_version("b", "k", None)
            .await
            .unwrap()
            .delete_marker
    );
    assert!(matches!(
        r.store.head_object("b", "k").await,
        Err(Error::NoSuchKey { .. })
    ));
    assert!(r
        .store
        .list_objects("b", "", ListStart::Beginning, 10)
        .await
        .unwrap()
        .entries
        .is_empty());
    let page = r
        .store
        .list_versions("b", "", ListStart::Beginning, 10)
        .await
        .unwrap();
    assert_eq!(page.entries[0].1.len(), 4);
    assert!(page.entries[0].1[0].delete_marker);
    r.store.delete_object("b", "k", out.version).await.unwrap();
    assert_eq!(read_version(&r, "k", None).await, b"two");

    // Deleting a version for good frees its shard files.
    let id = ShardId(v1.parts[0].data_id.unwrap());
    r.store
        .delete_object("b", "k", Some(VersionRef::of(&v1)))
        .await
        .unwrap();
    assert!(matches!(
        r.store
            .get_version("b", "k", Some(VersionRef::of(&v1)))
            .await,
        Err(Error::NoSuchVersion)
    ));
    for l in &r.local {
        assert!(!l.shard_path(id).exists());
    }

    // Suspended: writes replace the null version, older versions stay.
    set_versioning(&r, Versioning::Suspended).await;
    let n1 = put_with(&r, "k", b"null-1", "n1", &none).await.unwrap();
    assert!(n1.version_id.is_none());
    put_with(&r, "k", b"null-2", "n2", &none).await.unwrap();
    let page = r
        .store
        .list_versions("b", "", ListStart::Beginning, 10)
        .await
        .unwrap();
    let versions = &page.entries[0].1;
    assert_eq!(versions.len(), 2, "null version replaced, v2 kept");
    assert_eq!(
        read_version(&r, "k", Some(VersionRef::Null)).await,
        b"null-2"
    );
    assert_eq!(
        read_version(&r, "k", Some(VersionRef::of(&v2))).await,
        b"two"
    );
    let out = r.store.delete_object("b", "k", None).await.unwrap();
    assert_eq!(out.version, Some(VersionRef::Null));
    assert!(out.delete_marker);
}

#[tokio::test]
async fn write_conditions() {
    let r = rig(4, None);
    r.store.create_bucket("b", "us-east-1").await.unwrap();
    let if_none = |since_ns| WriteOptions {
        condition: Some(WriteCondition::IfNoneMatch),
        since_ns,
    };
    let if_match = |etag: &str, since_ns| WriteOptions {
        condition: Some(WriteCondition::IfMatch(etag.into())),
        since_ns,
    };
    let missing = put_with(&r, "k", b"x", "e9", &if_match("e9", u64::MAX)).await;
    assert!(matches!(missing, Err(Error::NoSuchKey { .. })));
    put_with(&r, "k", b"first", "e1", &if_none(u64::MAX))
        .await
        .unwrap();
    // Existing before the write began: 412; created while it ran: 409.
    assert!(matches!(
        put_with(&r, "k", b"x", "e2", &if_none(u64::MAX)).await,
        Err(Error::PreconditionFailed)
    ));
    assert!(matches!(
        put_with(&r, "k", b"x", "e2", &if_none(0)).await,
        Err(Error::ConditionalConflict)
    ));
    assert!(matches!(
        put_with(&r, "k", b"x", "e2", &if_match("nope", u64::MAX)).await,
        Err(Error::PreconditionFailed)
    ));
    put_with(&r, "k", b"second", "e2", &if_match("e1", u64::MAX))
        .await
        .unwrap();
    assert_eq!(get(&r, "k", 0..6).await.unwrap(), b"second");
    // Nothing was left behind by the refused writes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let shards: usize = r
        .local
        .iter()
        .map(|l| crate::store_tests::count_shards(l.root()))
        .sum();
    assert_eq!(shards, 4);
}

pub(crate) fn count_shards(root: &std::path::Path) -> usize {
    std::fs::read_dir(root.join("shards"))
        .unwrap()
        .flatten()
        .map(|d| std::fs::read_dir(d.path()).unwrap().count())
        .sum()
}
