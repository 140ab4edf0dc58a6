//! The large-object data path through the real server: every shard I/O
//! path (`--shard-io auto|buffered|blocking`) returns byte-exact data for
//! sizes around every block, stripe and read-unit boundary and for every
//! range shape, and many clients pulling one object with parallel ranged
//! GETs share disk reads (request coalescing and the hot-object cache,
//! visible in `granary admin stats`).

use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;

use crate::harness::*;

/// Shard block size and read unit of a 4-directory (2+2) server.
const BLOCK: usize = 256 << 10;
const STRIPE: usize = 2 * BLOCK;
const UNIT: usize = 4 << 20;

async fn get(c: &Client, key: &str, range: Option<(usize, usize)>) -> Vec<u8> {
    let mut req = c.get_object().bucket("data").key(key);
    if let Some((a, z)) = range {
        req = req.range(format!("bytes={a}-{}", z - 1));
    }
    let out = req.send().await.unwrap();
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

#[tokio::test]
async fn every_shard_io_path_round_trips_around_every_boundary() {
    for io in ["auto", "buffered", "blocking"] {
        let s = Server::start_with(4, &["--shard-io", io]);
        let c = s.client();
        c.create_bucket().bucket("data").send().await.unwrap();
        let mut sizes = vec![1, 4095, 4096, 4097];
        for b in [BLOCK, STRIPE, UNIT] {
            sizes.extend([b - 1, b, b + 1]);
        }
        for len in sizes {
            let key = format!("k{len}");
            let data = Pattern::bytes(len as u64, len);
            c.put_object()
                .bucket("data")
                .key(&key)
                .body(ByteStream::from(data.clone()))
                .send()
                .await
                .unwrap();
            assert!(get(&c, &key, None).await == data, "{io}: {len} bytes");
            let mut ranges = vec![(0, 1), (len - 1, len), (len / 2, len / 2 + 1)];
            for b in [4096, BLOCK, STRIPE] {
                if b + 1 < len {
                    ranges.extend([(b - 1, b + 1), (0, b), (b, len)]);
                }
            }
            for (a, z) in ranges {
                assert!(
                    get(&c, &key, Some((a, z))).await == data[a..z],
                    "{io}: {len} bytes, range {a}..{z}"
                );
            }
        }
        assert!(!s.log().contains("ERROR"), "{io}: server log:\n{}", s.log());
    }
}

/// Pulls `len` bytes of `key` with `parallel` ranged GETs of `step` bytes.
async fn pull(c: Client, key: &str, len: usize, step: usize, parallel: usize) -> Vec<u8> {
    use futures::StreamExt;
    let pieces: Vec<(usize, Vec<u8>)> = futures::stream::iter((0..len).step_by(step))
        .map(|a| {
            let c = c.clone();
            async move { (a, get(&c, key, Some((a, (a + step).min(len)))).await) }
        })
        .buffer_unordered(parallel)
        .collect()
        .await;
    let mut out = vec![0u8; len];
    for (a, p) in pieces {
        out[a..a + p.len()].copy_from_slice(&p);
    }
    out
}

#[tokio::test]
async fn concurrent_pulls_of_one_object_share_disk_reads() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let len = 12 * UNIT + 4097;
    let data = Arc::new(Pattern::bytes(9, len));
    c.put_object()
        .bucket("data")
        .key("weights.safetensors")
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap();
    // Eight "pods" start at once, each pulling with 4 parallel 8 MiB ranges.
    let pods: Vec<_> = (0..8)
        .map(|_| {
            let (c, data) = (c.clone(), data.clone());
            tokio::spawn(async move {
                let got = pull(c, "weights.safetensors", len, 8 << 20, 4).await;
                assert!(got == *data, "a pull returned different bytes");
            })
        })
        .collect();
    for p in pods {
        p.await.unwrap();
    }
    let stats: serde_json::Value =
        serde_json::from_str(&admin(&s, &["stats", "--json"]).unwrap()).unwrap();
    let cache = &stats["cache"];
    let units = len.div_ceil(UNIT) as u64;
    let disk_reads = cache["misses"].as_u64().unwrap();
    assert!(
        disk_reads <= units,
        "{disk_reads} disk reads for {units} units: {stats}"
    );
    let shared = cache["hits"].as_u64().unwrap() + cache["coalesced"].as_u64().unwrap();
    assert!(shared >= 7 * units, "{stats}");
    let text = admin(&s, &["stats"]).unwrap();
    assert!(text.contains("hit rate"), "{text}");
}
