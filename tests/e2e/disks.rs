//! Disks that come back empty. An erasure set formats empty directories
//! as replacements only while it keeps a read quorum of formatted disks;
//! with fewer it stays offline — its keys answer 503 naming the set and
//! its missing disks, the server is not ready when it is the first pool's
//! set — and comes back whole with its disks. The deployment's keys (the
//! master key and generated root credentials) survive the loss of any
//! disks the data survives, the first one included. A heal that cannot
//! rebuild an object fails loudly.

use std::path::{Path, PathBuf};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::types::StorageClass;
use aws_sdk_s3::Client;

use crate::harness::*;

/// Moves `dir` aside and leaves an empty directory in its place, as a
/// mount that failed leaves its mount point; returns where it went.
fn take_away(dir: &Path) -> PathBuf {
    let away = dir.with_extension("away");
    std::fs::rename(dir, &away).unwrap();
    std::fs::create_dir(dir).unwrap();
    away
}

/// Puts the directory [`take_away`] moved back (the mount works again).
fn bring_back(dir: &Path, away: &Path) {
    std::fs::remove_dir(dir).unwrap();
    std::fs::rename(away, dir).unwrap();
}

/// Replaces `dir` with an empty directory (a new disk).
fn wipe(dir: &Path) {
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::create_dir(dir).unwrap();
}

async fn ready(s: &Server) -> (u16, String) {
    let r = reqwest::get(format!("{}/granary/health/ready", s.endpoint))
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Objects of several sizes (packed and shard files) in `bucket`.
async fn fill(c: &Client, bucket: &str, n: u64) -> Vec<(String, Vec<u8>)> {
    c.create_bucket().bucket(bucket).send().await.unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        let (key, data) = (
            format!("k{i}"),
            Pattern::bytes(i, 1000 + i as usize * 150_000),
        );
        put_bytes(c, bucket, &key, data.clone()).await;
        out.push((key, data));
    }
    out
}

async fn read_back(c: &Client, bucket: &str, objects: &[(String, Vec<u8>)]) {
    for (k, data) in objects {
        assert!(get_bytes(c, bucket, k).await == *data, "{bucket}/{k}");
    }
}

/// A policy letting a user do anything with objects and buckets.
fn allow_all(s: &Server) -> String {
    let path = s.root.path().join("all.json");
    std::fs::write(
        &path,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#,
    )
    .unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn more_empty_disks_than_a_set_can_lose_leave_it_offline_until_they_come_back() {
    let mut s = Server::start(4);
    let c = s.client();
    let objects = fill(&c, "kept", 5).await;
    s.stop();
    let away: Vec<PathBuf> = s.dirs[1..].iter().map(|d| take_away(d)).collect();
    s.launch().unwrap();
    let c = s.client();

    // Not ready; the admin status says why, naming the set and its disks.
    let (answer, text) = ready(&s).await;
    assert_eq!(answer, 503, "{text}");
    assert!(text.contains("offline"), "{text}");
    let why = admin(&s, &["status"]).unwrap();
    assert!(why.contains("OFFLINE: erasure set 1 of pool 0"), "{why}");
    for d in &s.dirs[1..] {
        assert!(why.contains(&format!("{} (empty)", d.display())), "{why}");
    }
    // Reads and writes answer 503 ServiceUnavailable naming the set; no
    // write is accepted.
    let e = c
        .get_object()
        .bucket("kept")
        .key("k0")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (503, "ServiceUnavailable"));
    assert!(
        e.message()
            .unwrap_or("")
            .contains("erasure set 1 of pool 0"),
        "{e:?}"
    );
    let e = c
        .put_object()
        .bucket("kept")
        .key("new")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "ServiceUnavailable");
    let e = c.create_bucket().bucket("other").send().await.unwrap_err();
    assert_eq!(code(&e), "ServiceUnavailable");
    // Nothing was written on the empty directories.
    for d in &s.dirs[1..] {
        assert!(
            std::fs::read_dir(d).unwrap().next().is_none(),
            "{}",
            d.display()
        );
    }

    // The disks come back: everything is there, and writes go on.
    s.stop();
    for (d, a) in s.dirs[1..].iter().zip(&away) {
        bring_back(d, a);
    }
    s.launch().unwrap();
    let c = s.client();
    assert_eq!(ready(&s).await.0, 200);
    read_back(&c, "kept", &objects).await;
    put_bytes(&c, "kept", "after", b"after".to_vec()).await;
    let listed = c.list_objects_v2().bucket("kept").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(6));
}

#[tokio::test]
async fn two_of_four_empty_disks_the_first_among_them_are_refilled_and_users_still_sign_in() {
    let mut s = Server::start(4);
    let c = s.client();
    let objects = fill(&c, "kept", 5).await;
    let (ak, sk) = add_user(&s, "alice", &["--policy", &allow_all(&s)]);
    s.stop();
    wipe(&s.dirs[0]);
    wipe(&s.dirs[1]);
    s.launch().unwrap();
    assert_eq!(ready(&s).await.0, 200);
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    read_back(&alice, "kept", &objects).await;
    admin(&s, &["heal"]).unwrap();
    // Refilled: the two other disks can go now.
    s.stop();
    wipe(&s.dirs[2]);
    wipe(&s.dirs[3]);
    s.launch().unwrap();
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    read_back(&alice, "kept", &objects).await;
    read_back(&s.client(), "kept", &objects).await;
}

#[tokio::test]
async fn the_first_disk_replaced_keeps_the_generated_root_key_and_every_user() {
    let mut s = Server::start_with_env(
        4,
        &[("GRANARY_ROOT_USER", ""), ("GRANARY_ROOT_PASSWORD", "")],
    );
    let (root_id, root_secret) = user_from(&s.notes_with("AWS_SECRET_ACCESS_KEY=").await);
    let root = client_for(&s.endpoint, &root_id, &root_secret, "us-east-1");
    let objects = fill(&root, "kept", 4).await;
    let policy = allow_all(&s);
    let out = admin_as(
        &s.endpoint,
        (&root_id, &root_secret),
        &["user", "add", "alice", "--policy", &policy],
    )
    .unwrap();
    let (ak, sk) = user_from(&out);
    // The root secret is on no disk in plaintext (nor is a master-key file).
    for d in &s.dirs {
        for f in files_under(d) {
            let bytes = std::fs::read(&f).unwrap();
            assert!(
                !bytes
                    .windows(root_secret.len())
                    .any(|w| w == root_secret.as_bytes()),
                "{} holds the root secret",
                f.display()
            );
        }
        assert!(!d.join("master-key").exists() && !d.join("root-credentials").exists());
    }

    s.stop();
    wipe(&s.dirs[0]);
    s.launch().unwrap();
    let root = client_for(&s.endpoint, &root_id, &root_secret, "us-east-1");
    let notes = s.notes_with("root credentials").await;
    assert!(
        !notes.contains("AWS_SECRET_ACCESS_KEY="),
        "new root key made: {notes}"
    );
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    read_back(&root, "kept", &objects).await;
    read_back(&alice, "kept", &objects).await;
    put_bytes(&alice, "kept", "by-alice", b"alice".to_vec()).await;
    admin_as(&s.endpoint, (&root_id, &root_secret), &["heal"]).unwrap();
    // The replaced disk holds the keyring again: the others may go too.
    s.stop();
    for d in &s.dirs[1..3] {
        wipe(d);
    }
    s.launch().unwrap();
    let root = client_for(&s.endpoint, &root_id, &root_secret, "us-east-1");
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    read_back(&alice, "kept", &objects).await;
    assert_eq!(get_bytes(&root, "kept", "by-alice").await, b"alice");

    // Without the unseal key the server refuses to start, saying why.
    s.stop();
    let key = s.root.path().join("granary-unseal.key");
    let saved = std::fs::read(&key).unwrap();
    std::fs::remove_file(&key).unwrap();
    let err = s.launch().unwrap_err();
    assert!(err.contains("Restore the unseal key"), "{err}");
    std::fs::write(&key, saved).unwrap();
    s.launch().unwrap();
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    read_back(&alice, "kept", &objects).await;
}

#[tokio::test]
async fn a_heal_that_cannot_rebuild_an_object_exits_non_zero_naming_it() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "fine", b"small".to_vec()).await;
    put_bytes(&c, "bkt", "broken", Pattern::bytes(7, 3 << 20)).await;
    // Three of its four shards gone (parity 2): it cannot be rebuilt.
    for files in &s.shard_files()[..3] {
        for f in files {
            std::fs::remove_file(f).unwrap();
        }
    }
    let err = admin(&s, &["heal"]).unwrap_err();
    assert!(err.contains("healing failed for 1 keys"), "{err}");
    assert!(err.contains("bkt/broken"), "{err}");
    assert!(!err.contains("bkt/fine"), "{err}");
    assert_eq!(get_bytes(&c, "bkt", "fine").await, b"small");
}

#[tokio::test]
async fn a_second_pool_losing_more_than_m_disks_goes_offline_alone() {
    let (mut s, cold) = start_tiered(&[]);
    let c = s.client();
    let hot = fill(&c, "bkt", 3).await;
    let frozen = Pattern::bytes(99, 400 << 10);
    c.put_object()
        .bucket("bkt")
        .key("frozen")
        .storage_class(StorageClass::Glacier)
        .body(frozen.clone().into())
        .send()
        .await
        .unwrap();
    s.stop();
    let away: Vec<PathBuf> = cold[1..].iter().map(|d| take_away(d)).collect();
    s.launch().unwrap();
    let c = s.client();
    // Ready: the first pool, holding buckets and users, is whole.
    assert_eq!(ready(&s).await.0, 200);
    read_back(&c, "bkt", &hot).await;
    put_bytes(&c, "bkt", "new", b"new".to_vec()).await;
    let e = c
        .get_object()
        .bucket("bkt")
        .key("frozen")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "ServiceUnavailable");
    assert!(
        e.message()
            .unwrap_or("")
            .contains("erasure set 1 of pool 1"),
        "{e:?}"
    );
    let st = admin(&s, &["status"]).unwrap();
    assert!(
        st.contains("OFFLINE: erasure set 1 of pool 1 (cold)"),
        "{st}"
    );
    for d in &cold[1..] {
        assert!(
            std::fs::read_dir(d).unwrap().next().is_none(),
            "{}",
            d.display()
        );
    }
    s.stop();
    for (d, a) in cold[1..].iter().zip(&away) {
        bring_back(d, a);
    }
    s.launch().unwrap();
    let c = s.client();
    assert!(get_bytes(&c, "bkt", "frozen").await == frozen);
    read_back(&c, "bkt", &hot).await;
}

/// The objects at risk `granary admin status --json` counts in the first
/// pool, and in all.
fn at_risk(s: &Server) -> (u64, u64) {
    let v: serde_json::Value =
        serde_json::from_str(&admin(s, &["status", "--json"]).unwrap()).unwrap();
    (
        v["pools"][0]["objectsAtRisk"].as_u64().unwrap(),
        v["heal"]["objectsAtRisk"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn objects_written_while_a_disk_failed_are_at_risk_until_healed_across_a_restart() {
    let mut s = crate::faults::control::server(4, &["--metrics-token", "scrape"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "whole", b"on every disk".to_vec()).await;
    // The fourth disk refuses records: writes are acknowledged by three.
    crate::faults::control::set(&s, "disk.put_record", "return(error@disk4)").await;
    for (i, len) in [1000usize, 300 << 10, 1 << 20].into_iter().enumerate() {
        put_bytes(
            &c,
            "bkt",
            &format!("degraded/{i}"),
            Pattern::bytes(i as u64, len),
        )
        .await;
    }
    assert_eq!(at_risk(&s), (3, 3));
    let metrics = scrape_metrics(&s, "scrape").await;
    assert!(
        metrics.contains("granary_objects_at_risk{pool=\"hot\",set=\"1\"} 3"),
        "{metrics}"
    );
    let st = admin(&s, &["status"]).unwrap();
    assert!(st.contains("3 objects at risk"), "{st}");

    // After a restart they are found again by comparing the disks.
    crate::faults::control::set(&s, "disk.put_record", "off").await;
    s.restart();
    until(30, "objects at risk found after the restart", async || {
        at_risk(&s) == (3, 3)
    })
    .await;
    admin(&s, &["heal"]).unwrap();
    assert_eq!(at_risk(&s), (0, 0));
    let c = s.client();
    for (i, len) in [1000usize, 300 << 10, 1 << 20].into_iter().enumerate() {
        assert!(
            get_bytes(&c, "bkt", &format!("degraded/{i}")).await == Pattern::bytes(i as u64, len)
        );
    }
}

#[tokio::test]
async fn every_disk_empty_beside_an_earlier_unseal_key_is_not_formatted_anew() {
    // One directory (no parity) whose mount fails: all of it is empty.
    let mut s = Server::start(1);
    let c = s.client();
    let objects = fill(&c, "kept", 2).await;
    s.stop();
    let away = take_away(&s.dirs[0]);
    let err = s.launch().unwrap_err();
    assert!(err.contains("are the disks mounted?"), "{err}");
    assert!(std::fs::read_dir(&s.dirs[0]).unwrap().next().is_none());
    bring_back(&s.dirs[0], &away);
    s.launch().unwrap();
    read_back(&s.client(), "kept", &objects).await;
}
