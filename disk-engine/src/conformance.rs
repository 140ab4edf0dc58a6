//! What every [`Disk`] promises, one function per contract, run against
//! each implementation: `LocalDisk` in each shard-I/O mode, `RemoteDisk`
//! over a node served in-process, and `FaultyDisk` with no faults set. A
//! new implementation (or a new shard path) joins by passing all of them;
//! `OfflineDisk` is checked to answer `Offline` to every call.
//!
//! Each contract takes a freshly formatted, empty disk and uses its own
//! namespace, so they can also run one after another on the same disk.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use uuid::Uuid;

use crate::disk::{Disk, Inventory};
use crate::error::DiskError;
use crate::format::{FormatRecord, Tier};
use crate::heads::{decode_listed_key, head_versions};
use crate::local::{LocalDisk, LocalDiskOptions, ShardIoMode};
use crate::messages::{
    DiskHealth, ListStart, PutRecordOutcome, RecordListOptions, RecordPut, ShardOptions,
    UploadListStart,
};
use crate::types::{PartEntry, Piece, Record, ShardId, Stamp, UploadEntry, VersionId};
use crate::{FaultyDisk, IoStats, MeteredDisk, OfflineDisk};

/// Runs every contract on `disk`.
pub(crate) async fn all(disk: &dyn Disk) {
    shard_round_trip(disk).await;
    dropped_writer_leaves_nothing(disk).await;
    record_superseded_by_its_stamp(disk).await;
    batch_delete_removes_exactly_its_items(disk).await;
    heads_listing_equals_record_listing(disk).await;
    uploads_and_parts(disk).await;
    piece_travels_with_its_record(disk).await;
    staged_entries_go_with_the_record(disk).await;
    leases_are_exclusive(disk).await;
    assert!(matches!(disk.health().await, DiskHealth::Online { .. }));
}

const BLOCK: usize = 64 << 10;

fn opts(shard_index: u32) -> ShardOptions {
    ShardOptions {
        block_size: BLOCK as u32,
        shard_index,
    }
}

fn record(version: u8, mtime_ns: u64, body: &str) -> Record {
    Record {
        version: VersionId([version; 16]),
        stamp: Stamp {
            mtime_ns,
            write_id: Uuid::now_v7(),
        },
        body: Bytes::from(body.to_string()),
        listing: Bytes::from(format!("listing of {body}")),
    }
}

fn list(prefix: &[u8], start: ListStart, max_keys: usize) -> RecordListOptions {
    RecordListOptions {
        prefix: prefix.to_vec(),
        start,
        max_keys,
    }
}

async fn listed_shards(disk: &dyn Disk) -> Vec<ShardId> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = disk.list_shards(after, 100).await.unwrap();
        let Some(last) = page.last() else {
            return out;
        };
        after = Some(last.id);
        out.extend(page.iter().map(|f| f.id));
    }
}

/// A shard file reads back, in any range, exactly what was appended; it
/// is listed while it exists, and deleting it (twice) leaves `NotFound`.
pub(crate) async fn shard_round_trip(disk: &dyn Disk) {
    let id = ShardId(Uuid::now_v7());
    let data: Vec<u8> = (0..(3 * BLOCK + 4097))
        .map(|i| (i * 13 % 251) as u8)
        .collect();
    let mut w = disk.create_shard(id, opts(2)).await.unwrap();
    for c in data.chunks(BLOCK) {
        w.append(Bytes::copy_from_slice(c)).await.unwrap();
    }
    assert_eq!(w.finish().await.unwrap().len, data.len() as u64);
    assert_eq!(disk.shard_len(id).await.unwrap(), data.len() as u64);
    for (a, z) in [
        (0, data.len()),
        (0, 1),
        (BLOCK - 1, BLOCK + 1),
        (4095, 4097),
        (data.len() - 1, data.len()),
        (2 * BLOCK, 3 * BLOCK + 1),
        (7, 7),
    ] {
        let got = disk.read_shard(id, a as u64, (z - a) as u64).await.unwrap();
        assert_eq!(&got[..], &data[a..z], "{}: {a}..{z}", disk.label());
    }
    assert!(disk.read_shard(id, 0, data.len() as u64 + 1).await.is_err());
    assert!(listed_shards(disk).await.contains(&id));
    disk.delete_shard(id).await.unwrap();
    disk.delete_shard(id).await.unwrap();
    assert!(matches!(
        disk.read_shard(id, 0, 1).await,
        Err(DiskError::NotFound)
    ));
    assert!(matches!(disk.shard_len(id).await, Err(DiskError::NotFound)));
    assert!(!listed_shards(disk).await.contains(&id));
}

/// Nothing of a shard is visible before `finish`, and a writer dropped
/// unfinished leaves nothing: the id stays free for a new write.
pub(crate) async fn dropped_writer_leaves_nothing(disk: &dyn Disk) {
    let id = ShardId(Uuid::now_v7());
    let mut w = disk.create_shard(id, opts(0)).await.unwrap();
    w.append(Bytes::from(vec![1u8; BLOCK])).await.unwrap();
    assert!(matches!(disk.shard_len(id).await, Err(DiskError::NotFound)));
    drop(w);
    // A remote writer's stream is torn down after the drop returns.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while listed_shards(disk).await.contains(&id) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "dropped shard stays"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(matches!(disk.shard_len(id).await, Err(DiskError::NotFound)));
    let mut w = disk.create_shard(id, opts(0)).await.unwrap();
    w.append(Bytes::from(vec![2u8; 10])).await.unwrap();
    assert_eq!(w.finish().await.unwrap().len, 10);
    assert_eq!(&disk.read_shard(id, 0, 10).await.unwrap()[..], &[2u8; 10]);
    disk.delete_shard(id).await.unwrap();
}

/// A write of a version replaces an older write of it (and reports it),
/// loses to a newer one (and names it), and is idempotent; a conditional
/// delete removes only the write with that stamp.
pub(crate) async fn record_superseded_by_its_stamp(disk: &dyn Disk) {
    let ns = b"superseded";
    let key = b"k\xff\x00key";
    let middle = record(1, 20, "middle");
    assert!(matches!(
        disk.put_record(ns, key, RecordPut::of(middle.clone()))
            .await
            .unwrap(),
        PutRecordOutcome::Stored { replaced: None, .. }
    ));
    match disk
        .put_record(ns, key, RecordPut::of(record(1, 10, "older")))
        .await
        .unwrap()
    {
        PutRecordOutcome::Superseded { current } => assert_eq!(current, middle),
        other => panic!("{}: {other:?}", disk.label()),
    }
    assert_eq!(
        disk.get_records(ns, key).await.unwrap(),
        vec![middle.clone()]
    );
    // The same write again changes nothing and replaces nothing.
    assert!(matches!(
        disk.put_record(ns, key, RecordPut::of(middle.clone()))
            .await
            .unwrap(),
        PutRecordOutcome::Stored { replaced: None, .. }
    ));
    let newer = record(1, 30, "newer");
    match disk
        .put_record(ns, key, RecordPut::of(newer.clone()))
        .await
        .unwrap()
    {
        PutRecordOutcome::Stored { replaced, .. } => assert_eq!(replaced, Some(middle.clone())),
        other => panic!("{}: {other:?}", disk.label()),
    }
    // Another version of the key is kept beside it.
    let other = record(2, 5, "other version");
    disk.put_record(ns, key, RecordPut::of(other.clone()))
        .await
        .unwrap();
    let mut stored = disk.get_records(ns, key).await.unwrap();
    stored.sort_by_key(|r| r.version);
    assert_eq!(stored, vec![newer.clone(), other.clone()]);
    assert_eq!(
        disk.delete_record(ns, key, newer.version, Some(middle.stamp))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        disk.delete_record(ns, key, newer.version, Some(newer.stamp))
            .await
            .unwrap(),
        Some(newer)
    );
    assert_eq!(
        disk.delete_record(ns, key, other.version, None)
            .await
            .unwrap(),
        Some(other)
    );
    assert_eq!(disk.get_records(ns, key).await.unwrap(), vec![]);
}

/// A batch delete removes exactly its items and reports each: the record
/// removed, or `None` where there was none.
pub(crate) async fn batch_delete_removes_exactly_its_items(disk: &dyn Disk) {
    let ns = b"batch";
    let mut written = Vec::new();
    for i in 0..5u8 {
        let r = record(i, 100 + i as u64, &format!("r{i}"));
        let key = format!("key{i}").into_bytes();
        disk.put_record(ns, &key, RecordPut::of(r.clone()))
            .await
            .unwrap();
        written.push((key, r));
    }
    let items = vec![
        (written[1].0.clone(), written[1].1.version),
        (written[3].0.clone(), written[3].1.version),
        (b"missing".to_vec(), VersionId([9; 16])),
        // The right key with a version it does not have.
        (written[0].0.clone(), VersionId([9; 16])),
    ];
    let removed = disk.delete_records(ns, items).await.unwrap();
    assert_eq!(
        removed,
        vec![
            Some(written[1].1.clone()),
            Some(written[3].1.clone()),
            None,
            None
        ]
    );
    for (i, (key, r)) in written.iter().enumerate() {
        let left = disk.get_records(ns, key).await.unwrap();
        match i {
            1 | 3 => assert_eq!(left, vec![], "{}: key{i}", disk.label()),
            _ => assert_eq!(left, vec![r.clone()], "{}: key{i}", disk.label()),
        }
    }
}

/// Every page of the heads index lists the same keys, versions, stamps
/// and listing projections as the records, and ends where the record
/// listing ends — after overwrites and deletes too.
pub(crate) async fn heads_listing_equals_record_listing(disk: &dyn Disk) {
    let ns = b"heads";
    for i in 0..12u8 {
        let key = format!("dir/{:02}", i);
        for v in 0..(i % 3 + 1) {
            disk.put_record(ns, key.as_bytes(), RecordPut::of(record(v, 10, &key)))
                .await
                .unwrap();
        }
    }
    // Overwrites (a newer write of version 0) and deletes change both.
    for i in [2u8, 5] {
        let key = format!("dir/{:02}", i);
        disk.put_record(ns, key.as_bytes(), RecordPut::of(record(0, 99, "again")))
            .await
            .unwrap();
    }
    disk.delete_record(ns, b"dir/04", VersionId([0; 16]), None)
        .await
        .unwrap();
    disk.put_record(ns, b"other", RecordPut::of(record(0, 1, "other")))
        .await
        .unwrap();
    for (prefix, start, max) in [
        (&b""[..], ListStart::Beginning, 1000),
        (b"dir/", ListStart::Beginning, 5),
        (b"dir/", ListStart::After(b"dir/03".to_vec()), 4),
        (b"dir/", ListStart::At(b"dir/07".to_vec()), 3),
        (b"dir/1", ListStart::Beginning, 1),
        (b"none", ListStart::Beginning, 10),
    ] {
        let records = disk
            .list_records(ns, list(prefix, start.clone(), max))
            .await
            .unwrap();
        let heads = disk
            .list_heads(ns, list(prefix, start.clone(), max))
            .await
            .unwrap();
        let what = format!("{}: {prefix:?} {start:?} {max}", disk.label());
        assert_eq!(heads.truncated, records.truncated, "{what}");
        assert_eq!(heads.spans.len(), records.keys.len(), "{what}");
        let mut versions = Vec::new();
        for (i, k) in records.keys.iter().enumerate() {
            let (encoded, head) = heads.entry(i);
            assert_eq!(
                decode_listed_key(encoded).as_deref(),
                Some(&k.key[..]),
                "{what}"
            );
            assert!(head_versions(head, &mut versions).unwrap(), "{what}");
            let from_heads: Vec<_> = versions
                .iter()
                .map(|h| (h.version, h.stamp, h.listing.to_vec()))
                .collect();
            let from_records: Vec<_> = k
                .records
                .iter()
                .map(|r| (r.version, r.stamp, r.listing.to_vec()))
                .collect();
            assert_eq!(from_heads, from_records, "{what}");
        }
    }
}

/// An upload holds its parts until it is deleted with them; a part
/// replaces the part of its number; parts and uploads list in order and
/// in pages; nothing is stored into an upload that is gone.
pub(crate) async fn uploads_and_parts(disk: &dyn Disk) {
    let ns = b"uploads";
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let entry = |key: &str, id: Uuid| UploadEntry {
        key: key.as_bytes().to_vec(),
        upload_id: id,
        body: Bytes::from(format!("upload {key}")),
    };
    disk.put_upload(ns, entry("obj", a)).await.unwrap();
    disk.put_upload(ns, entry("obj", b)).await.unwrap();
    disk.put_upload(ns, entry("pre/x", Uuid::now_v7()))
        .await
        .unwrap();
    assert_eq!(disk.get_upload(ns, b"obj", a).await.unwrap(), "upload obj");
    assert!(matches!(
        disk.get_upload(ns, b"other", a).await,
        Err(DiskError::NotFound)
    ));
    let (all, more) = disk
        .list_uploads(ns, b"", UploadListStart::Beginning, 10)
        .await
        .unwrap();
    assert!(!more);
    let listed: Vec<_> = all.iter().map(|u| (u.key.clone(), u.upload_id)).collect();
    assert_eq!(&listed[..2], &[(b"obj".to_vec(), a), (b"obj".to_vec(), b)]);
    assert_eq!(listed.len(), 3);
    let (page, more) = disk
        .list_uploads(ns, b"", UploadListStart::Beginning, 1)
        .await
        .unwrap();
    assert!(more);
    assert_eq!(page, vec![entry("obj", a)]);
    let (page, _) = disk
        .list_uploads(
            ns,
            b"",
            UploadListStart::AfterUpload(b"obj".to_vec(), a),
            10,
        )
        .await
        .unwrap();
    assert_eq!(page[0], entry("obj", b));
    let (page, _) = disk
        .list_uploads(ns, b"", UploadListStart::AfterKey(b"obj".to_vec()), 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].key, b"pre/x");
    let (page, _) = disk
        .list_uploads(ns, b"pre/", UploadListStart::Beginning, 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 1);

    let part = |n: u32, body: &str| PartEntry {
        number: n,
        body: Bytes::from(body.to_string()),
    };
    for n in [3, 1, 2] {
        let old = disk
            .put_part(ns, b"obj", a, part(n, "first"), Vec::new())
            .await
            .unwrap();
        assert_eq!(old, None);
    }
    assert_eq!(
        disk.put_part(ns, b"obj", a, part(2, "second"), Vec::new())
            .await
            .unwrap(),
        Some(part(2, "first"))
    );
    let (parts, more) = disk.list_parts(a, 0, 2).await.unwrap();
    assert!(more);
    assert_eq!(parts, vec![part(1, "first"), part(2, "second")]);
    let (parts, more) = disk.list_parts(a, 2, 10).await.unwrap();
    assert!(!more);
    assert_eq!(parts, vec![part(3, "first")]);
    assert_eq!(disk.list_parts(b, 0, 10).await.unwrap(), (vec![], false));

    let mut removed = disk.delete_upload(ns, b"obj", a).await.unwrap();
    removed.sort_by_key(|p| p.number);
    assert_eq!(
        removed,
        vec![part(1, "first"), part(2, "second"), part(3, "first")]
    );
    assert!(matches!(
        disk.get_upload(ns, b"obj", a).await,
        Err(DiskError::NotFound)
    ));
    assert_eq!(disk.list_parts(a, 0, 10).await.unwrap(), (vec![], false));
    assert!(matches!(
        disk.put_part(ns, b"obj", a, part(4, "late"), Vec::new())
            .await,
        Err(DiskError::NotFound)
    ));
    assert!(matches!(
        disk.delete_upload(ns, b"obj", a).await,
        Err(DiskError::NotFound)
    ));
    assert_eq!(disk.get_upload(ns, b"obj", b).await.unwrap(), "upload obj");
}

/// A packed object's piece is stored in the record's write and only then:
/// a write that loses to a newer one stores no piece. Pieces stored alone
/// (repair) read back, list, and delete.
pub(crate) async fn piece_travels_with_its_record(disk: &dyn Disk) {
    let ns = b"pieces";
    let piece = |data: &'static [u8]| Piece {
        id: Uuid::now_v7(),
        data: Bytes::from_static(data),
    };
    let first = piece(b"piece of the newer write");
    let put = RecordPut {
        piece: Some(first.clone()),
        ..RecordPut::of(record(0, 50, "packed"))
    };
    disk.put_record(ns, b"small", put).await.unwrap();
    assert_eq!(disk.read_piece(first.id).await.unwrap(), first.data);
    let lost = piece(b"piece of an older write");
    let put = RecordPut {
        piece: Some(lost.clone()),
        ..RecordPut::of(record(0, 40, "older"))
    };
    assert!(matches!(
        disk.put_record(ns, b"small", put).await.unwrap(),
        PutRecordOutcome::Superseded { .. }
    ));
    assert!(matches!(
        disk.read_piece(lost.id).await,
        Err(DiskError::NotFound)
    ));
    let alone = piece(b"rebuilt by repair");
    disk.put_piece(alone.clone()).await.unwrap();
    assert_eq!(disk.read_piece(alone.id).await.unwrap(), alone.data);
    let listed = disk.list_pieces(None, 1000).await.unwrap();
    assert!(
        listed.contains(&(first.id, first.data.len() as u64)),
        "{listed:?}"
    );
    assert!(listed.iter().any(|(id, _)| *id == alone.id));
    assert!(!listed.iter().any(|(id, _)| *id == lost.id));
    disk.delete_piece(alone.id).await.unwrap();
    disk.delete_piece(alone.id).await.unwrap();
    assert!(matches!(
        disk.read_piece(alone.id).await,
        Err(DiskError::NotFound)
    ));
    disk.collect_pieces().await.unwrap();
    assert_eq!(disk.read_piece(first.id).await.unwrap(), first.data);
}

/// Staged entries are durable until the record or part that refers to
/// their data removes them in its own write, or they are unstaged.
pub(crate) async fn staged_entries_go_with_the_record(disk: &dyn Disk) {
    let owner = Uuid::now_v7();
    let (by_record, by_part, by_hand) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    disk.stage(vec![by_record, by_part, by_hand], owner)
        .await
        .unwrap();
    let mut want = vec![by_record, by_part, by_hand];
    want.sort();
    assert_eq!(staged_by(disk, owner).await, want);
    let put = RecordPut {
        unstage: vec![by_record],
        ..RecordPut::of(record(0, 1, "refers to staged data"))
    };
    disk.put_record(b"staged", b"k", put).await.unwrap();
    let upload = Uuid::now_v7();
    disk.put_upload(
        b"staged",
        UploadEntry {
            key: b"k".to_vec(),
            upload_id: upload,
            body: Bytes::from_static(b"u"),
        },
    )
    .await
    .unwrap();
    let part = PartEntry {
        number: 1,
        body: Bytes::from_static(b"p"),
    };
    disk.put_part(b"staged", b"k", upload, part, vec![by_part])
        .await
        .unwrap();
    assert_eq!(staged_by(disk, owner).await, vec![by_hand]);
    disk.unstage(vec![by_hand, Uuid::now_v7()]).await.unwrap();
    assert_eq!(staged_by(disk, owner).await, Vec::<Uuid>::new());
}

async fn staged_by(disk: &dyn Disk, owner: Uuid) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = disk
        .list_staged()
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.owner == owner)
        .map(|s| s.id)
        .collect();
    ids.sort();
    ids
}

/// A lease has one owner at a time; its owner renews it, and releasing
/// frees it for another — a stranger's release does not.
pub(crate) async fn leases_are_exclusive(disk: &dyn Disk) {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let names = vec![b"b\0k".to_vec(), b"b\0other".to_vec()];
    assert!(disk.acquire_leases(names.clone(), a, 10_000).await.unwrap());
    assert!(disk.acquire_leases(names.clone(), a, 10_000).await.unwrap());
    assert!(!disk.acquire_leases(names.clone(), b, 10_000).await.unwrap());
    // All or none: one name held by `a` refuses the pair.
    assert!(!disk
        .acquire_leases(vec![b"b\0free".to_vec(), names[0].clone()], b, 10_000)
        .await
        .unwrap());
    assert!(disk
        .acquire_leases(vec![b"b\0free".to_vec()], a, 10_000)
        .await
        .unwrap());
    disk.release_leases(names.clone(), b).await.unwrap();
    assert!(!disk.acquire_leases(names.clone(), b, 10_000).await.unwrap());
    disk.release_leases(names.clone(), a).await.unwrap();
    assert!(disk.acquire_leases(names, b, 10_000).await.unwrap());
}

/// A local disk at `dir`, formatted as the one disk of a set, with shard
/// I/O `io`.
pub(crate) fn formatted(dir: &std::path::Path, io: ShardIoMode) -> LocalDisk {
    FormatRecord::new_set(Tier::Hot, 1, 0)[0]
        .write_to(dir)
        .unwrap();
    LocalDisk::open(
        dir,
        LocalDiskOptions {
            io,
            ..Default::default()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_keeps_every_contract_in_each_shard_io_mode() {
    for io in [
        ShardIoMode::Auto,
        ShardIoMode::Buffered,
        ShardIoMode::Blocking,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let disk = formatted(dir.path(), io);
        all(&disk).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_disk_keeps_every_contract() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("d1");
    let (disk, _stop) = crate::rpc::tests::formatted_remote(&dir).await;
    all(&disk).await;
    // What was dropped or deleted over the wire is gone on the node too.
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_disk_without_faults_keeps_every_contract() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FaultyDisk::new(Arc::new(formatted(dir.path(), ShardIoMode::Auto)));
    all(&disk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metered_disk_keeps_every_contract_and_counts_what_reaches_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let disk = MeteredDisk::metered(Arc::new(formatted(dir.path(), ShardIoMode::Auto)));
    all(&disk).await;
    let before = disk.layer().stats();
    assert!(before.writes > 0 && before.reads > 0, "{before:?}");
    // One shard of two blocks written, a range of it read twice, a piece
    // stored and read, a read of a missing shard (not a disk failure).
    let id = ShardId(Uuid::now_v7());
    let mut w = disk.create_shard(id, opts(0)).await.unwrap();
    w.append(Bytes::from(vec![1u8; BLOCK])).await.unwrap();
    w.append(Bytes::from(vec![2u8; 100])).await.unwrap();
    w.finish().await.unwrap();
    disk.read_shard(id, 10, 1000).await.unwrap();
    disk.read_shard(id, BLOCK as u64, 100).await.unwrap();
    let piece = Piece {
        id: Uuid::now_v7(),
        data: Bytes::from(vec![3u8; 333]),
    };
    disk.put_piece(piece.clone()).await.unwrap();
    disk.read_piece(piece.id).await.unwrap();
    assert!(disk
        .read_shard(ShardId(Uuid::now_v7()), 0, 1)
        .await
        .is_err());
    let after = disk.layer().stats();
    let delta = IoStats {
        reads: after.reads - before.reads,
        read_bytes: after.read_bytes - before.read_bytes,
        writes: after.writes - before.writes,
        written_bytes: after.written_bytes - before.written_bytes,
        errors: after.errors - before.errors,
    };
    assert_eq!(
        delta,
        IoStats {
            reads: 3,
            read_bytes: 1000 + 100 + 333,
            // Two appends, the finish, the piece.
            writes: 4,
            written_bytes: BLOCK as u64 + 100 + 333,
            errors: 0,
        }
    );
    // A disk that cannot be used counts its failures.
    let gone = MeteredDisk::metered(Arc::new(OfflineDisk::new("slot 1", "unplugged")));
    assert!(gone.read_piece(piece.id).await.is_err());
    assert_eq!(gone.layer().stats().errors, 1);
}

#[tokio::test]
async fn offline_disk_answers_offline_to_every_call() {
    let disk = OfflineDisk::new("slot 3", "not found");
    let offline = |r: Result<(), DiskError>| match r {
        Err(DiskError::Offline(why)) => assert!(why.contains("slot 3"), "{why}"),
        other => panic!("{other:?}"),
    };
    let id = Uuid::now_v7();
    let (ns, key) = (&b"ns"[..], &b"k"[..]);
    let v = VersionId::NULL;
    offline(disk.stage(vec![id], id).await);
    offline(disk.unstage(vec![id]).await);
    offline(disk.list_staged().await.map(drop));
    offline(disk.list_shards(None, 1).await.map(drop));
    offline(disk.list_pieces(None, 1).await.map(drop));
    offline(disk.scan_records(None, 1).await.map(drop));
    offline(disk.scan_uploads(None, 1).await.map(drop));
    assert!(matches!(disk.health().await, DiskHealth::Offline { .. }));
    offline(disk.create_shard(ShardId(id), opts(0)).await.map(drop));
    offline(disk.read_shard(ShardId(id), 0, 1).await.map(drop));
    offline(disk.shard_len(ShardId(id)).await.map(drop));
    offline(disk.delete_shard(ShardId(id)).await);
    offline(disk.get_records(ns, key).await.map(drop));
    offline(
        disk.put_record(ns, key, RecordPut::of(record(0, 1, "x")))
            .await
            .map(drop),
    );
    offline(disk.read_piece(id).await.map(drop));
    let piece = Piece {
        id,
        data: Bytes::new(),
    };
    offline(disk.put_piece(piece).await);
    offline(disk.delete_piece(id).await);
    offline(disk.collect_pieces().await);
    offline(disk.delete_record(ns, key, v, None).await.map(drop));
    offline(
        disk.delete_records(ns, vec![(key.to_vec(), v)])
            .await
            .map(drop),
    );
    let opts = || list(b"", ListStart::Beginning, 1);
    offline(disk.list_records(ns, opts()).await.map(drop));
    offline(disk.list_heads(ns, opts()).await.map(drop));
    let entry = UploadEntry {
        key: key.to_vec(),
        upload_id: id,
        body: Bytes::new(),
    };
    offline(disk.put_upload(ns, entry).await);
    offline(disk.get_upload(ns, key, id).await.map(drop));
    offline(disk.delete_upload(ns, key, id).await.map(drop));
    offline(
        disk.list_uploads(ns, b"", UploadListStart::Beginning, 1)
            .await
            .map(drop),
    );
    let part = PartEntry {
        number: 1,
        body: Bytes::new(),
    };
    offline(disk.put_part(ns, key, id, part, Vec::new()).await.map(drop));
    offline(
        disk.acquire_leases(vec![key.to_vec()], id, 1)
            .await
            .map(drop),
    );
    offline(disk.release_leases(vec![key.to_vec()], id).await);
    offline(disk.list_parts(id, 0, 1).await.map(drop));
}
