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
                pull_from(c, "weights.safetensors", &data, 8 << 20, 8 << 20).await;
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

/// Bytes of object data the server's disks have returned since it started
/// (`granary admin stats`, from the counters around every disk).
fn disk_read_bytes(s: &Server) -> u64 {
    let stats: serde_json::Value =
        serde_json::from_str(&admin(s, &["stats", "--json"]).unwrap()).unwrap();
    stats["disks"]["readBytes"].as_u64().unwrap()
}

/// Pulls `data` (stored under `key`) with parallel ranged GETs that start
/// at `first` and then step by `step`, checking every byte.
async fn pull_from(c: Client, key: &str, data: &[u8], first: usize, step: usize) {
    use futures::StreamExt;
    let mut cuts = vec![0];
    cuts.extend((first..data.len()).step_by(step));
    cuts.push(data.len());
    cuts.dedup();
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    futures::stream::iter(ranges)
        .map(|(a, z)| {
            let c = c.clone();
            async move { (a, z, get(&c, key, Some((a, z))).await) }
        })
        .buffer_unordered(4)
        .for_each(|(a, z, got)| async move {
            assert!(got == data[a..z], "range {a}..{z} returned other bytes");
        })
        .await;
}

/// Eight readers of a cold object whose ranges align with nothing (each
/// its own start and step, none a multiple of a block, a stripe or a read
/// unit) read each byte from disk once: the counters around the disks see
/// no more than 1.05 × the object, and every byte is exact.
#[tokio::test]
async fn misaligned_concurrent_readers_read_each_byte_from_disk_once() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let len = 10 * UNIT + 12_345;
    let data = Arc::new(Pattern::bytes(48, len));
    c.put_object()
        .bucket("data")
        .key("shard-00001.safetensors")
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap();
    // A cold cache: nothing of the object is in memory.
    s.restart();
    let c = s.client();
    let before = disk_read_bytes(&s);
    let readers: Vec<_> = (0..8)
        .map(|r| {
            let (c, data) = (c.clone(), data.clone());
            tokio::spawn(async move {
                let first = 1 + r * 777_777;
                let step = (8 << 20) - 4_099 * (r + 1);
                pull_from(c, "shard-00001.safetensors", &data, first, step).await;
            })
        })
        .collect();
    for r in readers {
        r.await.unwrap();
    }
    let read = disk_read_bytes(&s) - before;
    assert!(
        read as f64 <= 1.05 * len as f64,
        "the disks returned {read} bytes for a {len}-byte object ({:.2}x)",
        read as f64 / len as f64
    );
    assert!(read >= len as u64, "{read} bytes read for {len}");
}

/// While eight readers pull a key with whole and ranged GETs, it is
/// overwritten again and again and finally deleted: every answer is
/// wholly one version's bytes (the one its ETag names), never bytes of an
/// overwritten version served from memory or mixed with the new one's,
/// and after the delete no read finds it.
#[tokio::test]
async fn readers_of_a_key_being_overwritten_get_one_version_per_answer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let len = 3 * UNIT + 999;
    let versions: Vec<Vec<u8>> = (0..2).map(|v| Pattern::bytes(100 + v, len)).collect();
    // A single PUT's ETag is the MD5 of its body.
    let etags: Vec<String> = versions
        .iter()
        .map(|v| format!("\"{}\"", hex::encode(<md5::Md5 as md5::Digest>::digest(v))))
        .collect();
    let versions = Arc::new(versions);
    let put = |v: usize| {
        let c = c.clone();
        let body = versions[v].clone();
        async move {
            c.put_object()
                .bucket("data")
                .key("weights")
                .body(ByteStream::from(body))
                .send()
                .await
                .unwrap();
        }
    };
    put(0).await;
    let etags = Arc::new(etags);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8u64)
        .map(|r| {
            let (c, versions, etags, done) =
                (c.clone(), versions.clone(), etags.clone(), done.clone());
            tokio::spawn(async move {
                let mut p = Pattern::new(r);
                let mut answers = 0;
                while !done.load(Ordering::Relaxed) {
                    let mut pick = [0u8; 16];
                    p.fill(&mut pick);
                    let a = u64::from_le_bytes(pick[..8].try_into().unwrap()) as usize % len;
                    let n = u64::from_le_bytes(pick[8..].try_into().unwrap()) as usize % (2 * UNIT);
                    let range = (r % 2 == 0).then_some((a, (a + n + 1).min(len)));
                    let mut req = c.get_object().bucket("data").key("weights");
                    if let Some((a, z)) = range {
                        req = req.range(format!("bytes={a}-{}", z - 1));
                    }
                    let Ok(out) = req.send().await else { continue };
                    let etag = out.e_tag().unwrap().to_string();
                    // A read may fail once its version's data is freed;
                    // what it must never do is return other bytes.
                    let Ok(got) = out.body.collect().await else {
                        continue;
                    };
                    let got = got.into_bytes();
                    let v = etags
                        .iter()
                        .position(|e| *e == etag)
                        .expect("a stored ETag");
                    let (a, z) = range.unwrap_or((0, len));
                    assert!(got[..] == versions[v][a..z], "an answer mixed versions");
                    answers += 1;
                }
                answers
            })
        })
        .collect();
    for round in 0..10 {
        put((round + 1) % 2).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    c.delete_object()
        .bucket("data")
        .key("weights")
        .send()
        .await
        .unwrap();
    let gone = c.get_object().bucket("data").key("weights").send().await;
    assert_eq!(code(&gone.unwrap_err()), "NoSuchKey");
    done.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.await.unwrap() > 0, "a reader got no answer");
    }
}
