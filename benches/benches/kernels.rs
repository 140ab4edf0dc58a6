//! Per-core kernels on the write and read paths: Reed-Solomon encode and
//! reconstruct at the block sizes we consider, the bitrot checksum and MD5.
//!
//! cargo bench -p granary-benches --bench kernels
#![allow(missing_docs)]

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use erasure_set::Codec;
use md5::{Digest, Md5};

const BLOCKS: [usize; 3] = [64 << 10, 256 << 10, 1 << 20];

fn stripe(k: usize, block: usize) -> Bytes {
    (0..k * block)
        .map(|i| (i * 131 % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("rs_encode");
    for (k, m) in [(2, 2), (4, 2), (8, 4)] {
        let codec = Codec::new(k, m).unwrap();
        for block in BLOCKS {
            let s = stripe(k, block);
            g.throughput(Throughput::Bytes(s.len() as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("{k}+{m}"), block >> 10),
                &s,
                |b, s| b.iter(|| codec.encode(s, block)),
            );
        }
    }
    g.finish();
}

fn reconstruct(c: &mut Criterion) {
    let mut g = c.benchmark_group("rs_reconstruct_m_lost");
    for (k, m) in [(2, 2), (4, 2)] {
        let codec = Codec::new(k, m).unwrap();
        let block = 256 << 10;
        let shards = codec.encode(&stripe(k, block), block);
        g.throughput(Throughput::Bytes((k * block) as u64));
        g.bench_function(format!("{k}+{m}"), |b| {
            b.iter(|| {
                let mut v: Vec<Option<Vec<u8>>> = shards.iter().map(|s| Some(s.to_vec())).collect();
                for lost in v.iter_mut().take(m) {
                    *lost = None;
                }
                codec.reconstruct(&mut v, true).unwrap();
                v
            })
        });
    }
    g.finish();
}

fn hashes(c: &mut Criterion) {
    let data = vec![7u8; 1 << 20];
    let mut g = c.benchmark_group("hash_1MiB");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("crc64nvme_bitrot", |b| {
        b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Nvme, &data))
    });
    g.bench_function("crc32c", |b| b.iter(|| crc_fast::crc32_iscsi(&data)));
    g.bench_function("md5_etag", |b| b.iter(|| Md5::digest(&data)));
    // SigV4-signed chunks: the server hashes every payload byte once more.
    g.bench_function("sha256_chunk_signature", |b| {
        b.iter(|| sha2::Sha256::digest(&data))
    });
    g.finish();
}

criterion_group!(kernels, encode, reconstruct, hashes);
criterion_main!(kernels);
