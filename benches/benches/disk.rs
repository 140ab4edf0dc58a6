//! The local disk engine on each shard I/O path (io_uring + O_DIRECT,
//! buffered io_uring, blocking): streaming a shard file (with fsync) and
//! reading it back with bitrot verification, on the filesystem holding
//! `$TMPDIR`.
//!
//! cargo bench -p granary-benches --bench disk
#![allow(missing_docs)]

use std::sync::Arc;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use disk_engine::{
    Disk, FormatRecord, LocalDisk, LocalDiskOptions, ShardId, ShardIoMode, ShardOptions, Tier,
};

const SHARD_BYTES: usize = 64 << 20;
const BLOCK: u32 = 256 << 10;

fn disk(dir: &std::path::Path, io: ShardIoMode) -> Arc<LocalDisk> {
    FormatRecord::new_set(Tier::Hot, 1, 0)[0]
        .write_to(dir)
        .unwrap();
    let opts = LocalDiskOptions {
        io,
        ..Default::default()
    };
    Arc::new(LocalDisk::open(dir, opts).unwrap())
}

async fn write_shard(d: &LocalDisk, id: ShardId, block: &Bytes) {
    let opts = ShardOptions {
        block_size: BLOCK,
        shard_index: 0,
    };
    let mut w = d.create_shard(id, opts).await.unwrap();
    for _ in 0..SHARD_BYTES / BLOCK as usize {
        w.append(block.clone()).await.unwrap();
    }
    w.finish().await.unwrap();
}

fn shard_io(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let block = Bytes::from(vec![3u8; BLOCK as usize]);
    for io in [
        ShardIoMode::Auto,
        ShardIoMode::Buffered,
        ShardIoMode::Blocking,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = rt.block_on(async { disk(dir.path(), io) });
        let mut g = c.benchmark_group(format!("shard_64MiB/{}", d.io_path()));
        g.sample_size(10);
        g.throughput(Throughput::Bytes(SHARD_BYTES as u64));
        let last = ShardId(uuid::Uuid::now_v7());
        g.bench_function("write_fsync", |b| {
            b.iter(|| {
                rt.block_on(async {
                    let id = ShardId(uuid::Uuid::now_v7());
                    write_shard(&d, id, &block).await;
                    d.delete_shard(id).await.unwrap();
                })
            })
        });
        rt.block_on(write_shard(&d, last, &block));
        // All sixteen 4 MiB reads in flight at once. The buffered paths read
        // from the page cache (the shard was just written); O_DIRECT reads
        // the disk.
        g.bench_function("read_verified_4MiB_reads", |b| {
            b.iter(|| {
                rt.block_on(async {
                    let reads = (0..16u64).map(|i| d.read_shard(last, i * (4 << 20), 4 << 20));
                    for r in futures::future::join_all(reads).await {
                        r.unwrap();
                    }
                })
            })
        });
        g.finish();
    }
}

criterion_group!(disk_benches, shard_io);
criterion_main!(disk_benches);
