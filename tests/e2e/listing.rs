use std::sync::Arc;

use aws_sdk_s3::types::EncodingType;

use crate::harness::*;

/// 25 directories × 100 files = 2,500 keys.
fn keys() -> Vec<String> {
    let mut k: Vec<String> = (0..25)
        .flat_map(|d| (0..100).map(move |f| format!("dir{d:02}/file{f:03}")))
        .collect();
    k.sort();
    k
}

async fn fill(c: &aws_sdk_s3::Client) {
    c.create_bucket().bucket("many").send().await.unwrap();
    let sem = Arc::new(tokio::sync::Semaphore::new(32));
    let mut tasks = Vec::new();
    for k in keys() {
        let c = c.clone();
        let permit = sem.clone().acquire_owned().await.unwrap();
        tasks.push(tokio::spawn(async move {
            put_bytes(&c, "many", &k, k.as_bytes().to_vec()).await;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Every ListObjectsV2 page of bucket `many`, paged by continuation token
/// until one is not truncated (which then has no next token).
async fn pages_of(
    c: &aws_sdk_s3::Client,
    delimiter: Option<&str>,
    max_keys: Option<i32>,
) -> Vec<aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output> {
    let mut pages = Vec::new();
    let mut token = None;
    loop {
        let r = c
            .list_objects_v2()
            .bucket("many")
            .set_delimiter(delimiter.map(str::to_string))
            .set_max_keys(max_keys)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap();
        let truncated = r.is_truncated().unwrap();
        token = r.next_continuation_token().map(str::to_string);
        assert_eq!(truncated, token.is_some());
        pages.push(r);
        if !truncated {
            return pages;
        }
    }
}

/// The value of an unlabelled counter in a metrics scrape.
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in {metrics}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn listing_2500_keys_with_delimiter_and_paging() {
    let s = Server::start_with(4, &["--metrics-token", "scrape-me"]);
    let c = s.client();
    fill(&c).await;
    let all = keys();

    // V2, no delimiter, pages of 1,000.
    let pages = pages_of(&c, None, None).await;
    let mut got = Vec::new();
    for r in &pages {
        got.extend(r.contents().iter().map(|o| o.key().unwrap().to_string()));
        assert_eq!(r.key_count().unwrap() as usize, r.contents().len());
    }
    let pages = pages.len();
    assert_eq!(pages, 3);
    assert_eq!(got, all);
    // Pages after the first were read ahead while the previous one was
    // sent.
    let metrics = scrape_metrics(&s, "scrape-me").await;
    assert!(counter(&metrics, "granary_listing_pages_read_ahead_total") >= 1.0);
    // Once the disks' heads were compared (the first listing started it),
    // pages are read from one disk.
    let mut one_disk = 0.0;
    for _ in 0..100 {
        c.list_objects_v2().bucket("many").send().await.unwrap();
        let metrics = scrape_metrics(&s, "scrape-me").await;
        one_disk = counter(&metrics, "granary_listing_pages_one_disk_total");
        if one_disk >= 1.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(one_disk >= 1.0);

    // A key written (and a key deleted) between two pages is seen on the
    // next page, although that page was read ahead before the writes.
    let first = c.list_objects_v2().bucket("many").send().await.unwrap();
    put_bytes(&c, "many", "dir15/file050-late", b"late".to_vec()).await;
    c.delete_object()
        .bucket("many")
        .key("dir20/file000")
        .send()
        .await
        .unwrap();
    let mut rest = Vec::new();
    let mut token = first.next_continuation_token().map(str::to_string);
    while let Some(t) = token {
        let r = c
            .list_objects_v2()
            .bucket("many")
            .continuation_token(t)
            .send()
            .await
            .unwrap();
        rest.extend(r.contents().iter().map(|o| o.key().unwrap().to_string()));
        token = r.next_continuation_token().map(str::to_string);
    }
    assert!(rest.iter().any(|k| k == "dir15/file050-late"));
    assert!(!rest.iter().any(|k| k == "dir20/file000"));
    assert_eq!(first.contents().len() + rest.len(), all.len());
    c.delete_object()
        .bucket("many")
        .key("dir15/file050-late")
        .send()
        .await
        .unwrap();
    put_bytes(&c, "many", "dir20/file000", b"dir20/file000".to_vec()).await;

    // A delimiter no key holds: pages of 1,000 keys, read ahead in chunks
    // as without one, list every key once.
    let before = counter(
        &scrape_metrics(&s, "scrape-me").await,
        "granary_listing_pages_read_ahead_total",
    );
    let mut got = Vec::new();
    for r in pages_of(&c, Some("#"), None).await {
        assert!(r.common_prefixes().is_empty());
        got.extend(r.contents().iter().map(|o| o.key().unwrap().to_string()));
    }
    assert_eq!(got, all);
    let after = counter(
        &scrape_metrics(&s, "scrape-me").await,
        "granary_listing_pages_read_ahead_total",
    );
    assert!(after >= before + 2.0, "{before} -> {after}");

    // Delimiter: 25 common prefixes, no objects.
    let r = c
        .list_objects_v2()
        .bucket("many")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert!(r.contents().is_empty());
    let prefixes: Vec<_> = r
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap().to_string())
        .collect();
    assert_eq!(prefixes.len(), 25);
    assert_eq!(prefixes[0], "dir00/");
    assert_eq!(r.key_count(), Some(25));

    // Delimiter with small pages walks every prefix exactly once.
    let mut seen = Vec::new();
    for r in pages_of(&c, Some("/"), Some(7)).await {
        seen.extend(
            r.common_prefixes()
                .iter()
                .map(|p| p.prefix().unwrap().to_string()),
        );
    }
    assert_eq!(seen, prefixes);

    // Prefix + delimiter + start-after.
    let r = c
        .list_objects_v2()
        .bucket("many")
        .prefix("dir07/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert_eq!(r.contents().len(), 100);
    let r = c
        .list_objects_v2()
        .bucket("many")
        .prefix("dir07/")
        .start_after("dir07/file089")
        .send()
        .await
        .unwrap();
    assert_eq!(r.contents().len(), 10);
    assert_eq!(r.contents()[0].key().unwrap(), "dir07/file090");

    // The SDK paginator sees everything.
    let mut pages = c
        .list_objects_v2()
        .bucket("many")
        .max_keys(333)
        .into_paginator()
        .send();
    let mut n = 0;
    while let Some(p) = pages.next().await {
        n += p.unwrap().contents().len();
    }
    assert_eq!(n, 2500);

    // V1 with marker paging and a delimiter (NextMarker).
    let r = c
        .list_objects()
        .bucket("many")
        .delimiter("/")
        .max_keys(10)
        .send()
        .await
        .unwrap();
    assert!(r.is_truncated().unwrap());
    assert_eq!(r.next_marker().unwrap(), "dir09/");
    let r = c
        .list_objects()
        .bucket("many")
        .delimiter("/")
        .marker("dir09/")
        .send()
        .await
        .unwrap();
    assert_eq!(r.common_prefixes().len(), 15);
    assert_eq!(r.common_prefixes()[0].prefix().unwrap(), "dir10/");
    let r = c
        .list_objects()
        .bucket("many")
        .prefix("dir24/")
        .max_keys(1000)
        .send()
        .await
        .unwrap();
    assert_eq!(r.contents().len(), 100);
    assert!(r.contents()[0].owner().is_some());

    // fetch-owner on V2.
    let r = c
        .list_objects_v2()
        .bucket("many")
        .max_keys(1)
        .fetch_owner(true)
        .send()
        .await
        .unwrap();
    assert!(r.contents()[0].owner().is_some());
    // max-keys=0.
    let r = c
        .list_objects_v2()
        .bucket("many")
        .max_keys(0)
        .send()
        .await
        .unwrap();
    assert!(r.contents().is_empty());
    assert_eq!(r.is_truncated(), Some(false));
}

#[tokio::test]
async fn url_encoding_type() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("enc").send().await.unwrap();
    let odd = "a b+c/ü&<x>";
    put_bytes(&c, "enc", odd, b"x".to_vec()).await;
    // Asked for URL encoding, the SDK hands the encoded key through.
    let r = c
        .list_objects_v2()
        .bucket("enc")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap();
    let encoded = r.contents()[0].key().unwrap();
    assert_eq!(
        percent_encoding::percent_decode_str(encoded)
            .decode_utf8()
            .unwrap(),
        odd
    );
    // On the wire the key is percent-encoded.
    let raw = Raw::new(
        "GET",
        format!("{}/enc?list-type=2&encoding-type=url", s.endpoint),
    )
    .send()
    .await;
    assert_eq!(raw.status, 200);
    assert!(
        raw.text().contains("<Key>a%20b%2Bc/%C3%BC%26%3Cx%3E</Key>"),
        "{}",
        raw.text()
    );
    let r = c.list_objects_v2().bucket("enc").send().await.unwrap();
    assert_eq!(r.contents()[0].key().unwrap(), odd);
}
