//! A pool of many erasure sets: `granary server` over 32 directories in 4
//! sets of 8 (parity 2). Objects, multipart uploads, versions and
//! listings work across the sets; each key lives in the set its hash
//! names (`placement::set_index` of the deployment id read from a disk's
//! format), which the fault half shows: with two disks of every set wiped
//! every object reads byte-exact, with three of one set wiped exactly that
//! set's keys answer 503 naming it, and with three of the set holding the
//! buckets wiped the server is not ready.
//!
//! Keys written: `GRANARY_E2E_SET_KEYS` (2,000 by default; 100,000 is the
//! full run, whose spread over the sets is then checked within 5%).

use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use futures::StreamExt;

use crate::harness::{admin, code, enable_versioning, status, Pattern, Server};

const WIDTH: usize = 8;
const SETS: usize = 4;

fn key_count() -> usize {
    std::env::var("GRANARY_E2E_SET_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn small_key(i: usize) -> String {
    format!("k/{i:06}")
}

fn small_len(i: usize) -> usize {
    100 + (i * 37) % 3000
}

/// The deployment id, from the first directory's format.
fn deployment(dir: &std::path::Path) -> uuid::Uuid {
    let text = std::fs::read_to_string(dir.join("format.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["format"]["deployment_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Empties directory `d` (as a replaced disk would be).
fn wipe(d: &std::path::Path) {
    std::fs::remove_dir_all(d).unwrap();
    std::fs::create_dir(d).unwrap();
}

/// Every key of `bucket` by ListObjectsV2 pages of `page` keys.
async fn list_all(c: &Client, bucket: &str, page: i32) -> Vec<String> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let r = c
            .list_objects_v2()
            .bucket(bucket)
            .max_keys(page)
            .set_continuation_token(token)
            .send()
            .await
            .unwrap();
        assert!(r.contents().len() <= page as usize);
        out.extend(r.contents().iter().map(|o| o.key().unwrap().to_string()));
        match r.next_continuation_token() {
            Some(t) => token = Some(t.to_string()),
            None => return out,
        }
    }
}

async fn put_small(c: &Client, bucket: &str, n: usize) {
    futures::stream::iter(0..n)
        .map(|i| {
            let c = c.clone();
            async move {
                c.put_object()
                    .bucket(bucket)
                    .key(small_key(i))
                    .body(ByteStream::from(Pattern::bytes(i as u64, small_len(i))))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("put {i}: {e:?}"));
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

async fn get(c: &Client, bucket: &str, key: &str) -> Result<Vec<u8>, (u16, String)> {
    match c.get_object().bucket(bucket).key(key).send().await {
        Ok(o) => Ok(o.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(e) => {
            let msg = match &e {
                aws_sdk_s3::error::SdkError::ServiceError(s) => {
                    s.err().meta().message().unwrap_or("").to_string()
                }
                other => format!("{other:?}"),
            };
            Err((status(&e), msg))
        }
    }
}

/// Large objects (several stripes each) and one multipart upload; returns
/// their keys with their bytes.
async fn put_large(c: &Client, bucket: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..4u64 {
        let key = format!("large/{i}");
        let data = Pattern::bytes(1000 + i, (3 << 20) + i as usize * 4099);
        c.put_object()
            .bucket(bucket)
            .key(&key)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        out.push((key, data));
    }
    let open = crate::fixture::upload(c, bucket, "mpu", None, &[5 << 20, 300 << 10], false).await;
    let uploads = c
        .list_multipart_uploads()
        .bucket(bucket)
        .send()
        .await
        .unwrap();
    assert_eq!(uploads.uploads().len(), 1);
    let mut whole = Vec::new();
    for p in open["parts"].as_array().unwrap() {
        let (name, len) = (p["name"].as_str().unwrap(), p["len"].as_u64().unwrap());
        whole.extend(crate::fixture::content(name, len as usize));
    }
    crate::fixture::complete_open_uploads(c, &serde_json::json!({ "uploads": [open] })).await;
    out.push(("mpu".to_string(), whole));
    out
}

/// Versions of `v/NN` keys: three each, the first key's current one a
/// delete marker; ListObjectVersions in pages of 7 returns them all in
/// order.
async fn check_versions(c: &Client) {
    c.create_bucket().bucket("ver").send().await.unwrap();
    enable_versioning(c, "ver").await;
    let mut written = Vec::new();
    for k in 0..20 {
        let key = format!("v/{k:02}");
        for n in 0..3 {
            let id = c
                .put_object()
                .bucket("ver")
                .key(&key)
                .body(ByteStream::from(format!("{key} #{n}").into_bytes()))
                .send()
                .await
                .unwrap()
                .version_id()
                .unwrap()
                .to_string();
            written.push((key.clone(), id));
        }
    }
    c.delete_object()
        .bucket("ver")
        .key("v/00")
        .send()
        .await
        .unwrap();
    let mut listed = Vec::new();
    let mut markers = 0;
    let (mut key_marker, mut version_marker) = (None, None);
    loop {
        let r = c
            .list_object_versions()
            .bucket("ver")
            .max_keys(7)
            .set_key_marker(key_marker)
            .set_version_id_marker(version_marker)
            .send()
            .await
            .unwrap();
        listed.extend(r.versions().iter().map(|v| {
            (
                v.key().unwrap().to_string(),
                v.version_id().unwrap().to_string(),
            )
        }));
        markers += r.delete_markers().len();
        if !r.is_truncated().unwrap_or(false) {
            break;
        }
        key_marker = r.next_key_marker().map(str::to_string);
        version_marker = r.next_version_id_marker().map(str::to_string);
    }
    assert_eq!(markers, 1);
    // Keys in order, each key's versions newest first.
    let mut expected = written.clone();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    let mut by_key: Vec<(String, Vec<String>)> = Vec::new();
    for (k, id) in expected {
        match by_key.last_mut() {
            Some((last, ids)) if *last == k => ids.insert(0, id),
            _ => by_key.push((k, vec![id])),
        }
    }
    let expected: Vec<(String, String)> = by_key
        .into_iter()
        .flat_map(|(k, ids)| ids.into_iter().map(move |id| (k.clone(), id)))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(
        code(
            &c.get_object()
                .bucket("ver")
                .key("v/00")
                .send()
                .await
                .unwrap_err()
        ),
        "NoSuchKey"
    );
}

async fn ready(s: &Server) -> u16 {
    reqwest::get(format!("{}/granary/health/ready", s.endpoint))
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The pool of 4 sets of 8 serves objects, multipart uploads, versions and
/// listings; losing two disks of every set loses nothing; losing three of
/// one set takes exactly its keys offline; losing three of the first set
/// makes the server not ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_four_sets_serves_and_loses_only_what_a_set_loses() {
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (1..=WIDTH * SETS)
        .map(|i| root.path().join(format!("disk{i}")))
        .collect();
    let mut s = Server::start_in(root, dirs.clone(), &["--set-width", "8", "--parity", "2"]);
    assert!(
        s.banner
            .contains("4 erasure sets of 8 disks, 6+2 erasure coding"),
        "{}",
        s.banner
    );
    let dep = deployment(&dirs[0]);
    let c = s.client();
    c.create_bucket().bucket("sets").send().await.unwrap();
    let n = key_count();
    put_small(&c, "sets", n).await;
    let large = put_large(&c, "sets").await;

    // The keys' spread over the sets.
    let mut per_set = [0usize; SETS];
    for i in 0..n {
        per_set[placement::set_index(dep, "sets", &small_key(i), SETS)] += 1;
    }
    eprintln!("sets: {n} keys spread {per_set:?}");
    assert!(per_set.iter().all(|&k| k > 0));
    if n >= 100_000 {
        let even = n as f64 / SETS as f64;
        assert!(
            per_set
                .iter()
                .all(|&k| (k as f64 - even).abs() <= even * 0.05),
            "{per_set:?}"
        );
    }

    // Every key once, in order, in pages of 137; with a delimiter, the two
    // prefixes and the multipart object.
    let mut expected: Vec<String> = (0..n).map(small_key).collect();
    expected.extend(large.iter().map(|(k, _)| k.clone()));
    expected.sort();
    assert_eq!(list_all(&c, "sets", 137).await, expected);
    let r = c
        .list_objects_v2()
        .bucket("sets")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let prefixes: Vec<&str> = r
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap())
        .collect();
    assert_eq!(prefixes, vec!["k/", "large/"]);
    assert_eq!(r.contents().len(), 1);
    check_versions(&c).await;
    for (key, data) in &large {
        assert_eq!(&get(&c, "sets", key).await.unwrap(), data, "{key}");
    }

    // Two disks of every set wiped at once: every object reads byte-exact.
    s.stop();
    for set in 0..SETS {
        wipe(&dirs[set * WIDTH]);
        wipe(&dirs[set * WIDTH + 1]);
    }
    s.launch().unwrap();
    let c = s.client();
    for i in (0..n).step_by((n / 500).max(1)) {
        let want = Pattern::bytes(i as u64, small_len(i));
        assert_eq!(get(&c, "sets", &small_key(i)).await.unwrap(), want, "{i}");
    }
    for (key, data) in &large {
        assert_eq!(&get(&c, "sets", key).await.unwrap(), data, "{key}");
    }
    assert_eq!(list_all(&c, "sets", 1000).await, expected);
    // The replaced disks are refilled by a pass over the four sets at once,
    // each with its own progress.
    let out = admin(&s, &["heal"]).unwrap();
    assert!(
        out.contains("healed:") && out.contains(" 0 failed"),
        "{out}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&admin(&s, &["status", "--json"]).unwrap()).unwrap();
    let heal = &status["heal"];
    let sets = heal["sets"].as_array().unwrap();
    assert_eq!(sets.len(), SETS, "{heal}");
    let total: u64 = sets.iter().map(|p| p["total"].as_u64().unwrap()).sum();
    assert_eq!(total, heal["total"].as_u64().unwrap(), "{heal}");
    for (i, p) in sets.iter().enumerate() {
        assert_eq!(p["set"], i + 1, "{heal}");
        assert!(p["done"] == true && p["scanned"] == p["total"], "{heal}");
    }
    assert_eq!(status["pools"].as_array().unwrap().len(), SETS);

    // Three disks of the third set wiped: its keys answer 503 naming it,
    // the others read; the server stays ready.
    s.stop();
    for d in &dirs[2 * WIDTH + 5..3 * WIDTH] {
        wipe(d);
    }
    s.launch().unwrap();
    let c = s.client();
    assert_eq!(ready(&s).await, 200);
    let mut lost = 0;
    for i in (0..n).step_by((n / 400).max(1)) {
        let key = small_key(i);
        match placement::set_index(dep, "sets", &key, SETS) {
            2 => {
                let (status, msg) = get(&c, "sets", &key).await.unwrap_err();
                assert_eq!(status, 503, "{key}");
                assert!(msg.contains("erasure set 3 of pool 0"), "{key}: {msg}");
                lost += 1;
            }
            _ => {
                let want = Pattern::bytes(i as u64, small_len(i));
                assert_eq!(get(&c, "sets", &key).await.unwrap(), want, "{key}");
            }
        }
    }
    assert!(lost > 0);

    // Three disks of the first set (which holds the buckets) wiped: the
    // server is not ready.
    s.stop();
    for d in &dirs[5..WIDTH] {
        wipe(d);
    }
    s.launch().unwrap();
    assert_eq!(ready(&s).await, 503);
    s.stop();
}

/// A server of 24 directories starts with its default width (2 sets of
/// 12); 17 directories are refused with the counts that would work.
#[tokio::test]
async fn twenty_four_directories_make_two_sets_and_seventeen_are_refused() {
    let mut s = Server::start_with(24, &[]);
    assert!(
        s.banner
            .contains("2 erasure sets of 12 disks, 8+4 erasure coding"),
        "{}",
        s.banner
    );
    let c = s.client();
    c.create_bucket().bucket("wide").send().await.unwrap();
    put_small(&c, "wide", 50).await;
    assert_eq!(list_all(&c, "wide", 7).await.len(), 50);
    s.stop();

    let root = tempfile::tempdir().unwrap();
    let dirs = (1..=17)
        .map(|i| root.path().join(format!("d{i}")))
        .collect();
    let err = Server::try_start_in(root, dirs, &[]).err().unwrap();
    assert!(err.contains("18, 20"), "{err}");
}
