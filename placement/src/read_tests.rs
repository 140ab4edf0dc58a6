//! Read-path correctness on every shard I/O path, with and without the
//! hot-object cache: byte-exact round trips for sizes around every block,
//! stripe and read-unit boundary (±1 byte), every range shape, and many
//! concurrent ranged reads of one object.

use disk_engine::ShardIoMode;
use erasure_set::READ_BATCH_BYTES;

use crate::store_tests::{data, get, put, rig_with};

const MODES: [ShardIoMode; 3] = [
    ShardIoMode::Auto,
    ShardIoMode::Buffered,
    ShardIoMode::Blocking,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boundaries_and_ranges_on_every_io_path() {
    for io in MODES {
        for cache in [0, 64 << 20] {
            let r = rig_with(4, None, io, cache);
            r.store.create_bucket("b", "us-east-1").await.unwrap();
            let layout = r.store.pools.system().layout_for("b", "k");
            let block = layout.block_size as usize;
            let stripe = layout.stripe_size() as usize;
            let unit = (READ_BATCH_BYTES as usize / stripe).max(1) * stripe;
            let mut sizes = vec![1, 4095, 4096, 4097];
            for b in [block, stripe, unit, 2 * unit] {
                sizes.extend([b - 1, b, b + 1]);
            }
            for len in sizes {
                let d = data(len, len as u8);
                put(&r, "k", &d).await.unwrap();
                let what = format!("{io:?}, cache {cache}, {len} bytes");
                for _ in 0..2 {
                    // The second round is served from the cache when there is one.
                    assert_eq!(get(&r, "k", 0..len as u64).await.unwrap(), d, "{what}");
                }
                let mut ranges = vec![(0, 1), (len - 1, len), (len / 2, len / 2 + 1)];
                if len > 2 {
                    ranges.push((1, len - 1));
                }
                for b in [4096, block, stripe, unit] {
                    if b + 1 < len {
                        ranges.extend([(b - 1, b + 1), (b - 1, b), (b, b + 1), (0, b), (b, len)]);
                    }
                }
                for (a, z) in ranges {
                    assert_eq!(
                        get(&r, "k", a as u64..z as u64).await.unwrap(),
                        &d[a..z],
                        "{what}, range {a}..{z}"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ranged_reads_agree_and_share_disk_reads() {
    for io in MODES {
        let r = std::sync::Arc::new(rig_with(4, None, io, 64 << 20));
        r.store.create_bucket("b", "us-east-1").await.unwrap();
        let len = 3 * READ_BATCH_BYTES as usize + 12345;
        let d = std::sync::Arc::new(data(len, 7));
        put(&r, "k", &d).await.unwrap();
        let chunk = len / 16 + 1;
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let (r, d) = (r.clone(), d.clone());
                tokio::spawn(async move {
                    // Half the readers pull the whole object, half one range each.
                    let (a, z) = if i % 2 == 0 {
                        (0, len)
                    } else {
                        let a = (i / 2) * chunk;
                        (a, (a + chunk).min(len))
                    };
                    let got = get(&r, "k", a as u64..z as u64).await.unwrap();
                    assert!(got == d[a..z], "{io:?}: range {a}..{z} differs");
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let s = r.store.cache_stats();
        let units = len.div_ceil(READ_BATCH_BYTES as usize) as u64;
        assert!(
            s.misses <= units,
            "{io:?}: {} disk reads of {units} units",
            s.misses
        );
        assert!(s.hits + s.coalesced > 0, "{io:?}: {s:?}");
    }
}
