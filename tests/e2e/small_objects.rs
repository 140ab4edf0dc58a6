//! Packed small objects through the SDK: many objects of 1 B – 128 KiB
//! without a file each, deletion and garbage collection, kill -9 during a
//! burst of small PUTs, and flipped bytes inside a pack file.
//!
//! `GRANARY_E2E_SMALL_OBJECTS` sets how many objects the bulk test writes
//! (CI default 3,000; the full scale of the acceptance test is 100,000).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;
use futures::StreamExt;

use crate::harness::*;

const BUCKET: &str = "small";
const IN_FLIGHT: usize = 32;

fn object_count() -> usize {
    std::env::var("GRANARY_E2E_SMALL_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000)
}

/// Size of object `i`: most a few KiB, every tenth up to 128 KiB, and the
/// edges (1 B and exactly 128 KiB) among them.
fn size_of(i: usize) -> usize {
    match i {
        0 => 1,
        1 => 128 << 10,
        _ if i.is_multiple_of(10) => 1 + (i * 7919) % (128 << 10),
        _ => 1 + (i * 104_729) % 4096,
    }
}

fn key_of(i: usize) -> String {
    format!("obj/{i:06}")
}

fn content(key: &str, len: usize) -> Vec<u8> {
    let seed = key
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    Pattern::bytes(seed, len)
}

/// Files anywhere below the server's data directories.
fn all_files(s: &Server) -> usize {
    s.dirs.iter().map(|d| files_under(d).len()).sum()
}

fn blob_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "blob"))
        .collect()
}

async fn put_all(c: &Client, keys: impl Iterator<Item = (String, usize)>) {
    futures::stream::iter(keys)
        .for_each_concurrent(IN_FLIGHT, |(key, len)| async move {
            put_bytes(c, BUCKET, &key, content(&key, len)).await;
        })
        .await;
}

/// Reads every key back; returns the keys that were 404.
async fn check_all(c: &Client, keys: impl Iterator<Item = (String, usize)>) -> Vec<String> {
    let missing = Arc::new(Mutex::new(Vec::new()));
    futures::stream::iter(keys)
        .for_each_concurrent(IN_FLIGHT, |(key, len)| {
            let missing = missing.clone();
            async move {
                match c.get_object().bucket(BUCKET).key(&key).send().await {
                    Ok(r) => {
                        let got = r.body.collect().await.unwrap().into_bytes();
                        assert!(
                            got.as_ref() == content(&key, len).as_slice(),
                            "{key} differs"
                        );
                    }
                    Err(e) => {
                        assert_eq!(status(&e), 404, "{key}: {e:?}");
                        missing.lock().unwrap().push(key);
                    }
                }
            }
        })
        .await;
    let mut m = missing.lock().unwrap().clone();
    m.sort();
    m
}

#[tokio::test]
async fn many_small_objects_round_trip_and_deleted_space_is_collected() {
    let n = object_count();
    let s = Server::start_exactly(4, &[]);
    let c = s.client();
    c.create_bucket().bucket(BUCKET).send().await.unwrap();
    let files_before = all_files(&s);
    let objects = || (0..n).map(|i| (key_of(i), size_of(i)));
    put_all(&c, objects()).await;
    assert!(check_all(&c, objects()).await.is_empty());

    // No object has a file of its own: the count grows with packs, not objects.
    assert!(s.shard_files().iter().all(|d| d.is_empty()));
    let files = all_files(&s) - files_before;
    assert!(files < 200, "{files} new files for {n} objects");

    let blob_bytes = |s: &Server| -> u64 {
        s.dirs
            .iter()
            .flat_map(|d| blob_files(d))
            .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .sum()
    };
    // A restart flushes the pieces still in memory into pack files, so the
    // deletions below leave garbage in packs for the collection to reclaim.
    let mut s = s;
    s.restart();
    let c = s.client();
    let before = blob_bytes(&s);

    // Delete every even object, 1,000 per request.
    let even: Vec<String> = (0..n).step_by(2).map(key_of).collect();
    delete_keys(&c, &even).await;
    let out = admin(&s, &["gc"]).unwrap();
    assert!(out.contains("4 disks"), "{out}");
    let after = blob_bytes(&s);
    // The even objects include every large one: well over half the bytes.
    assert!(after * 10 <= before * 5, "pack bytes {before} -> {after}");

    let missing = check_all(&c, objects()).await;
    let mut expected = even.clone();
    expected.sort();
    assert_eq!(missing, expected, "exactly the deleted objects are gone");
}

/// Deletes `keys` with DeleteObjects, 1,000 per request.
async fn delete_keys(c: &Client, keys: &[String]) {
    for batch in keys.chunks(1000) {
        let ids: Vec<ObjectIdentifier> = batch
            .iter()
            .map(|k| ObjectIdentifier::builder().key(k).build().unwrap())
            .collect();
        let out = c
            .delete_objects()
            .bucket(BUCKET)
            .delete(Delete::builder().set_objects(Some(ids)).build().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(out.deleted().len(), batch.len());
        assert!(out.errors().is_empty());
    }
}

#[tokio::test]
async fn kill_9_during_a_compaction_loses_nothing() {
    let mut s = Server::start_with(4, &["--read-cache-mib", "0"]);
    let c = s.client();
    c.create_bucket().bucket(BUCKET).send().await.unwrap();
    let objects = || (0..2_000).map(|i| (key_of(i), 1_000 + (i * 7_919) % 40_000));
    put_all(&c, objects()).await;
    // Pieces into pack files, then half of them garbage.
    s.restart();
    let even: Vec<String> = (0..2_000).step_by(2).map(key_of).collect();
    delete_keys(&s.client(), &even).await;
    let survivors = || objects().filter(|(k, _)| !even.contains(k));
    let mut interrupted = 0;
    for delay_ms in [20, 80, 200, 500] {
        // The collection flushes and compacts every disk's packs; the kill
        // lands somewhere inside it (or after it, for the longer delays).
        let endpoint = s.endpoint.clone();
        let gc = std::thread::spawn(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_granary"))
                .args(["admin", "--endpoint", &endpoint, "gc"])
                .env("GRANARY_ROOT_USER", USER)
                .env("GRANARY_ROOT_PASSWORD", SECRET)
                .output()
                .unwrap()
                .status
                .success()
        });
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        s.kill();
        if !gc.join().unwrap() {
            interrupted += 1;
        }
        s.launch().unwrap();
        let c = s.client();
        assert!(
            check_all(&c, survivors()).await.is_empty(),
            "after {delay_ms} ms"
        );
        let back = check_all(&c, objects()).await;
        assert_eq!(back.len(), even.len(), "a deleted object came back");
    }
    assert!(interrupted > 0, "no collection was interrupted");
    admin(&s, &["gc"]).unwrap();
    assert!(check_all(&s.client(), survivors()).await.is_empty());
}

#[tokio::test]
async fn kill_9_during_a_small_put_burst_keeps_every_acknowledged_object() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket(BUCKET).send().await.unwrap();
    let acked = Arc::new(Mutex::new(Vec::<(String, usize)>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..IN_FLIGHT)
        .map(|w| {
            let (c, acked, stop) = (c.clone(), acked.clone(), stop.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let key = format!("burst/{w:02}/{n:05}");
                    let len = 1 + (w * 977 + n * 131) % 20_000;
                    let sent = c
                        .put_object()
                        .bucket(BUCKET)
                        .key(&key)
                        .body(content(&key, len).into())
                        .send()
                        .await;
                    match sent {
                        Ok(_) => acked.lock().unwrap().push((key, len)),
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.kill();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 50,
        "only {} PUTs before the kill",
        acked.len()
    );
    s.launch().unwrap();
    let c = s.client();
    assert!(check_all(&c, acked.iter().cloned()).await.is_empty());
    // Whatever is listed is whole: an unacknowledged PUT is either
    // complete or absent.
    let acked_keys: HashSet<&str> = acked.iter().map(|(k, _)| k.as_str()).collect();
    let mut listed = Vec::new();
    let mut pages = c
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix("burst/")
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for o in page.unwrap().contents() {
            listed.push((o.key().unwrap().to_string(), o.size().unwrap() as usize));
        }
    }
    assert!(listed.len() >= acked.len());
    let extra: Vec<(String, usize)> = listed
        .into_iter()
        .filter(|(k, _)| !acked_keys.contains(k.as_str()))
        .collect();
    for (key, len) in &extra {
        let (w, n) = key["burst/".len()..].split_once('/').unwrap();
        let (w, n): (usize, usize) = (w.parse().unwrap(), n.parse().unwrap());
        assert_eq!(*len, 1 + (w * 977 + n * 131) % 20_000, "{key}");
    }
    assert!(check_all(&c, extra.into_iter()).await.is_empty());
}

#[tokio::test]
async fn flipped_bytes_inside_a_pack_are_survived_and_repaired() {
    let mut s = Server::start_exactly(4, &["--read-cache-mib", "0"]);
    let c = s.client();
    c.create_bucket().bucket(BUCKET).send().await.unwrap();
    let objects = || (0..300).map(|i| (key_of(i), 3_000 + i));
    put_all(&c, objects()).await;
    // A clean stop flushes the pieces into pack (blob) files.
    s.stop();
    let packs = blob_files(&s.dirs[0]);
    assert!(!packs.is_empty());
    let mut flipped = 0;
    for p in &packs {
        let mut b = std::fs::read(p).unwrap();
        for at in (1000..b.len()).step_by(1500) {
            b[at] ^= 0x5A;
            flipped += 1;
        }
        std::fs::write(p, b).unwrap();
    }
    assert!(flipped > 100);
    s.launch().unwrap();
    let c = s.client();
    assert!(check_all(&c, objects()).await.is_empty());
    let last = read_until_repaired(&s, &c, objects).await;
    assert!(last >= 250, "only {last} pieces repaired");
}

/// Reads every object again and again until repairs stop; returns how many
/// pieces or shards the server rewrote. Reads repair what they touch; pieces
/// a read did not need (parity) are checked by sampled background checks, so
/// it may take a few passes.
async fn read_until_repaired<I>(s: &Server, c: &Client, objects: impl Fn() -> I) -> u64
where
    I: Iterator<Item = (String, usize)>,
{
    let repaired = |s: &Server| -> u64 {
        let v: serde_json::Value =
            serde_json::from_str(&admin(s, &["stats", "--json"]).unwrap()).unwrap();
        v["repair"]["shardsRewritten"].as_u64().unwrap()
    };
    let mut last = u64::MAX;
    let mut passes = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = repaired(s);
        if now == last {
            return last;
        }
        last = now;
        passes += 1;
        assert!(passes < 10, "still repairing after {passes} read passes");
        assert!(check_all(c, objects()).await.is_empty());
    }
}

#[tokio::test]
async fn deleted_packs_of_m_disks_are_survived_and_rebuilt() {
    let mut s = Server::start_exactly(4, &["--read-cache-mib", "0"]);
    let c = s.client();
    c.create_bucket().bucket(BUCKET).send().await.unwrap();
    let objects = || (0..300).map(|i| (key_of(i), 2_000 + 7 * i));
    put_all(&c, objects()).await;
    s.stop();
    // Every pack of two disks (m = 2 at 2+2) disappears.
    let remove_packs = |dirs: &[PathBuf]| {
        for d in dirs {
            let packs = blob_files(d);
            assert!(!packs.is_empty());
            for p in packs {
                std::fs::remove_file(p).unwrap();
            }
        }
    };
    remove_packs(&s.dirs[..2]);
    s.launch().unwrap();
    let c = s.client();
    assert!(check_all(&c, objects()).await.is_empty());
    let rebuilt = read_until_repaired(&s, &c, objects).await;
    assert!(rebuilt >= 600, "only {rebuilt} pieces rebuilt");
    // The rebuilt pieces alone now carry the data: lose the packs of the
    // other two disks and read everything again.
    s.stop();
    remove_packs(&s.dirs[2..]);
    s.launch().unwrap();
    let c = s.client();
    assert!(check_all(&c, objects()).await.is_empty());
    read_until_repaired(&s, &c, objects).await;
    // Collecting garbage over packs that went missing still works.
    admin(&s, &["gc"]).unwrap();
    assert!(check_all(&c, objects()).await.is_empty());
    s.stop();
    s.launch().unwrap();
    assert!(check_all(&s.client(), objects()).await.is_empty());
}
