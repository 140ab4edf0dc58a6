//! `LocalDisk` beyond the common contracts (`conformance.rs`): which shard
//! I/O path each mode takes, corruption caught on every path, the shared
//! write-buffer pool under many writers, exclusive opening, and grouped
//! record commits.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use crate::conformance::formatted as formatted_with;
use crate::disk::Disk;
use crate::error::DiskError;
use crate::format::{FormatRecord, Tier, FORMAT_FILE};
use crate::local::{LocalDisk, LocalDiskOptions, ShardIoMode};
use crate::messages::{DiskHealth, PutRecordOutcome, RecordPut, ShardOptions};
use crate::types::{Piece, Record, ShardId, Stamp, VersionId};

fn formatted(dir: &Path) -> LocalDisk {
    formatted_with(dir, ShardIoMode::Auto)
}

const MODES: [ShardIoMode; 3] = [
    ShardIoMode::Auto,
    ShardIoMode::Buffered,
    ShardIoMode::Blocking,
];

#[tokio::test]
async fn each_io_path_is_the_one_asked_for() {
    let paths: Vec<&str> = MODES
        .iter()
        .map(|&m| formatted_with(tempfile::tempdir().unwrap().path(), m).io_path())
        .collect();
    // The test directories live on a filesystem with O_DIRECT (ext4/xfs);
    // on tmpfs `Auto` steps down to buffered io_uring.
    assert!(paths[0].starts_with("io_uring"), "{paths:?}");
    assert_eq!(&paths[1..], ["io_uring", "blocking"]);
}

#[tokio::test]
async fn every_io_path_reads_back_what_it_wrote() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let disk = formatted_with(dir.path(), mode);
        let id = ShardId(Uuid::now_v7());
        let bs = 8192usize;
        let opts = ShardOptions {
            block_size: bs as u32,
            shard_index: 1,
        };
        let data: Vec<u8> = (0..(5 * bs + 4097)).map(|i| (i * 13 % 251) as u8).collect();
        let mut w = disk.create_shard(id, opts).await.unwrap();
        for c in data.chunks(bs) {
            w.append(Bytes::copy_from_slice(c)).await.unwrap();
        }
        assert_eq!(w.finish().await.unwrap().len, data.len() as u64);
        for (a, z) in [
            (0, data.len()),
            (0, 1),
            (bs - 1, bs + 1),
            (4095, 4097),
            (data.len() - 1, data.len()),
            (3 * bs, 5 * bs + 1),
            (7, 7),
        ] {
            let got = disk.read_shard(id, a as u64, (z - a) as u64).await.unwrap();
            assert_eq!(&got[..], &data[a..z], "{mode:?} {a}..{z}");
        }
        assert!(disk.read_shard(id, 0, data.len() as u64 + 1).await.is_err());
        // A flipped byte on disk is caught in its block, whatever the path.
        {
            use std::os::unix::fs::FileExt;
            let f = OpenOptions::new()
                .write(true)
                .open(disk.shard_path(id))
                .unwrap();
            f.write_at(&[0xff ^ data[2 * bs + 5]], 4096 + 2 * bs as u64 + 5)
                .unwrap();
        }
        assert!(disk.read_shard(id, 0, bs as u64).await.is_ok());
        assert!(matches!(
            disk.read_shard(id, 2 * bs as u64, 10).await,
            Err(DiskError::Corrupt { .. })
        ));
        // Deleting and replacing are seen by readers that held the file open.
        disk.delete_shard(id).await.unwrap();
        assert!(matches!(
            disk.read_shard(id, 0, 1).await,
            Err(DiskError::NotFound)
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_writers_share_the_buffer_pool_without_stalling() {
    // 24 writers × 8 writes in flight is three times the disk's pool of
    // write buffers: writers must still all finish.
    let dir = tempfile::tempdir().unwrap();
    FormatRecord::new_set(Tier::Hot, 1, 0)[0]
        .write_to(dir.path())
        .unwrap();
    let disk = Arc::new(
        LocalDisk::open(
            dir.path(),
            LocalDiskOptions {
                fsync: false,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let bs = 256 << 10;
    let block = Bytes::from(vec![7u8; bs]);
    let writers: Vec<_> = (0..24)
        .map(|_| {
            let (disk, block) = (disk.clone(), block.clone());
            tokio::spawn(async move {
                let id = ShardId(Uuid::now_v7());
                let opts = ShardOptions {
                    block_size: bs as u32,
                    shard_index: 0,
                };
                let mut w = disk.create_shard(id, opts).await.unwrap();
                for _ in 0..24 {
                    w.append(block.clone()).await.unwrap();
                }
                w.finish().await.unwrap();
                id
            })
        })
        .collect();
    let all = async {
        let mut ids = Vec::new();
        for w in writers {
            ids.push(w.await.unwrap());
        }
        ids
    };
    let ids = tokio::time::timeout(std::time::Duration::from_secs(60), all)
        .await
        .expect("writers stalled");
    for id in ids {
        assert_eq!(disk.shard_len(id).await.unwrap(), 24 * bs as u64);
    }
}

#[tokio::test]
async fn shard_is_invisible_until_finished_and_gone_if_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let disk = formatted(dir.path());
    let id = ShardId(Uuid::now_v7());
    let opts = ShardOptions {
        block_size: 4096,
        shard_index: 0,
    };
    let mut w = disk.create_shard(id, opts).await.unwrap();
    w.append(Bytes::from(vec![1u8; 4096])).await.unwrap();
    w.append(Bytes::from(vec![2u8; 10])).await.unwrap();
    assert!(matches!(
        disk.read_shard(id, 0, 1).await,
        Err(DiskError::NotFound)
    ));
    assert_eq!(w.finish().await.unwrap().len, 4106);
    let got = disk.read_shard(id, 4090, 16).await.unwrap();
    assert_eq!(&got[..6], &[1u8; 6]);
    assert_eq!(&got[6..], &[2u8; 10]);
    assert_eq!(disk.shard_len(id).await.unwrap(), 4106);

    let id2 = ShardId(Uuid::now_v7());
    let mut w = disk.create_shard(id2, opts).await.unwrap();
    w.append(Bytes::from(vec![1u8; 4096])).await.unwrap();
    drop(w);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    disk.delete_shard(id).await.unwrap();
    disk.delete_shard(id).await.unwrap();
    assert!(matches!(
        disk.read_shard(id, 0, 1).await,
        Err(DiskError::NotFound)
    ));
}

#[tokio::test]
async fn second_process_is_refused_and_health_reports_space() {
    let dir = tempfile::tempdir().unwrap();
    let disk = formatted(dir.path());
    assert!(matches!(
        LocalDisk::open(dir.path(), LocalDiskOptions::default()),
        Err(DiskError::Format(_))
    ));
    assert!(matches!(disk.health().await, DiskHealth::Online { .. }));
    fs::remove_file(dir.path().join(FORMAT_FILE)).unwrap();
    assert!(matches!(disk.health().await, DiskHealth::Offline { .. }));
}

#[tokio::test]
async fn concurrent_record_writes_share_commits_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(formatted(dir.path()));
    let writes: Vec<_> = (0..300u32)
        .map(|i| {
            let disk = disk.clone();
            tokio::spawn(async move {
                let record = Record {
                    version: VersionId([0; 16]),
                    stamp: Stamp {
                        mtime_ns: 1,
                        write_id: Uuid::from_u128(i as u128),
                    },
                    body: Bytes::from(i.to_string()),
                    listing: Bytes::new(),
                };
                let piece = Piece {
                    id: Uuid::from_u128(1_000 + i as u128),
                    data: Bytes::from(vec![i as u8; 100]),
                };
                let key = format!("k{i}");
                let put = RecordPut {
                    piece: Some(piece),
                    ..RecordPut::of(record)
                };
                disk.put_record(b"ns", key.as_bytes(), put).await
            })
        })
        .collect();
    for w in writes {
        let r = w.await.unwrap();
        assert!(matches!(
            r.unwrap(),
            PutRecordOutcome::Stored { replaced: None, .. }
        ));
    }
    for i in 0..300u32 {
        let got = disk
            .get_records(b"ns", format!("k{i}").as_bytes())
            .await
            .unwrap();
        assert_eq!(got[0].body, i.to_string());
        let piece = disk
            .read_piece(Uuid::from_u128(1_000 + i as u128))
            .await
            .unwrap();
        assert_eq!(piece, vec![i as u8; 100]);
    }
    // Dropping the disk closes its metadata store: it can be opened again at once.
    drop(disk);
    let again = LocalDisk::open(dir.path(), LocalDiskOptions::default()).unwrap();
    assert_eq!(again.get_records(b"ns", b"k7").await.unwrap()[0].body, "7");
}
