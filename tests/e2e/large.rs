use std::time::Instant;

use md5::{Digest, Md5};

use crate::harness::*;

/// Size of the large-object test; `GRANARY_E2E_LARGE_BYTES` overrides it.
fn large_size() -> u64 {
    std::env::var("GRANARY_E2E_LARGE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2 << 30)
}

fn expected_md5(len: u64, seed: u64) -> String {
    let mut p = Pattern::new(seed);
    let mut h = Md5::new();
    let mut left = len;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        p.fill(&mut buf[..n]);
        h.update(&buf[..n]);
        left -= n as u64;
    }
    hex::encode(h.finalize())
}

#[tokio::test]
async fn two_gib_streams_up_and_down_in_bounded_memory() {
    let len = large_size();
    // A 64 MiB hot-object cache: what is measured is the streaming memory,
    // which must not grow with the object.
    let s = Server::start_with(4, &["--read-cache-mib", "64"]);
    let c = s.client();
    c.create_bucket().bucket("big").send().await.unwrap();
    let want = tokio::task::spawn_blocking(move || expected_md5(len, 77));

    let t = Instant::now();
    let put = c
        .put_object()
        .bucket("big")
        .key("blob")
        .content_length(len as i64)
        .body(generated_body(len, 77))
        .send()
        .await
        .unwrap();
    let up = t.elapsed();
    let want = want.await.unwrap();
    assert_eq!(put.e_tag().unwrap(), format!("\"{want}\""));

    let t = Instant::now();
    let mut got = c
        .get_object()
        .bucket("big")
        .key("blob")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_length(), Some(len as i64));
    let mut h = Md5::new();
    let mut n = 0u64;
    while let Some(chunk) = got.body.next().await {
        let chunk = chunk.unwrap();
        n += chunk.len() as u64;
        h.update(&chunk);
    }
    let down = t.elapsed();
    assert_eq!(n, len);
    assert_eq!(hex::encode(h.finalize()), want);

    let rss = s.peak_rss();
    let mb = |d: std::time::Duration| len as f64 / d.as_secs_f64() / 1e6;
    println!(
        "large object: {len} bytes, PUT {:.0} MB/s, GET {:.0} MB/s, server peak RSS {} MiB",
        mb(up),
        mb(down),
        rss >> 20
    );
    assert!(rss < (256 + 64) << 20, "server peak RSS {} MiB", rss >> 20);
}
