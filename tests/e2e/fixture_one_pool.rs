//! A deployment of one pool (four directories, one erasure set, 2+2)
//! written by the build at ee847a9, the last before pools had many sets and
//! formats recorded their set count: kept in
//! `tests/fixtures/ee847a9-one-pool/` (data with its unseal key, and a
//! manifest) by [`write_one_pool_fixture`]. It opens in this build as one
//! set, reads back byte-exact, completes its open uploads, and takes new
//! writes (into its one set, as the rule gives for a pool of one).

use std::path::PathBuf;

use serde_json::json;

use crate::fixture::{check_each, check_objects, complete_open_uploads, new_writes, put, upload};
use crate::harness::{enable_versioning, Server};

const DIRS: [&str; 4] = ["disk1", "disk2", "disk3", "disk4"];

fn dirs(root: &std::path::Path) -> Vec<PathBuf> {
    DIRS.iter().map(|d| root.join(d)).collect()
}

/// Writes the fixture into `GRANARY_FIXTURE_OUT` with the build
/// `GRANARY_E2E_BIN` names; run by hand: `GRANARY_E2E_BIN=/path/to/old/granary
/// GRANARY_FIXTURE_OUT=/tmp/fx cargo test --test e2e
/// fixture_one_pool::write_one_pool_fixture -- --ignored`.
#[tokio::test]
#[ignore]
async fn write_one_pool_fixture() {
    let out = PathBuf::from(std::env::var("GRANARY_FIXTURE_OUT").expect("GRANARY_FIXTURE_OUT"));
    std::fs::create_dir_all(&out).unwrap();
    let root = tempfile::tempdir().unwrap();
    let d = dirs(root.path());
    let mut s = Server::start_in(root, d, &[]);
    let c = s.client();
    let mut objects = Vec::new();
    c.create_bucket().bucket("plain").send().await.unwrap();
    for i in 0..10 {
        objects.push(put(&c, "plain", &format!("small/{i:02}"), 100 + i * 997, None).await);
    }
    for (i, len) in [(0, (1 << 20) + 12345), (1, 3 << 20)] {
        objects.push(put(&c, "plain", &format!("large/{i}"), len, None).await);
    }
    c.create_bucket().bucket("versioned").send().await.unwrap();
    enable_versioning(&c, "versioned").await;
    for len in [1000, 300 << 10, 5000] {
        objects.push(put(&c, "versioned", "a", len, None).await);
    }
    objects.push(put(&c, "versioned", "b", 2000, None).await);
    let marker = c
        .delete_object()
        .bucket("versioned")
        .key("b")
        .send()
        .await
        .unwrap();
    objects.push(upload(&c, "plain", "mpu/done", None, &[5 << 20, 100 << 10], true).await);
    let uploads = vec![upload(&c, "plain", "mpu/open", None, &[200 << 10], false).await];
    s.stop();
    let manifest = json!({
        "written_by": "ee847a9",
        "objects": objects,
        "delete_marker": {"bucket": "versioned", "key": "b", "version": marker.version_id()},
        "uploads": uploads,
    });
    let mut entries = DIRS.to_vec();
    entries.push("granary-unseal.key");
    crate::fixture::pack(&out, &manifest, s.root.path(), &entries);
}

/// The one-pool deployment written at ee847a9 opens as one set, reads back
/// byte-exact, completes its open upload and takes new writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_pool_deployment_written_at_ee847a9_opens_and_takes_new_writes() {
    let (manifest, root) = crate::fixture::unpack("ee847a9-one-pool");
    let d = dirs(root.path());
    let mut s = Server::start_in(root, d.clone(), &[]);
    assert!(
        s.banner.contains("(4 disks, 2+2 erasure coding"),
        "{}",
        s.banner
    );
    let c = s.client();
    let checked = check_objects(&c, &manifest).await;
    assert_eq!(checked, manifest["objects"].as_array().unwrap().len());
    complete_open_uploads(&c, &manifest).await;
    // New writes, small and large, beside the old ones.
    let new = new_writes(&c, "plain", &[None]).await;
    let listed = c
        .list_objects_v2()
        .bucket("plain")
        .send()
        .await
        .unwrap()
        .contents()
        .len();
    // 10 small, 2 large, 2 uploads completed, 20 new.
    assert_eq!(listed, 34);
    // The formats are still those of one set, and still open after a
    // restart.
    s.stop();
    let f = std::fs::read_to_string(d[0].join("format.json")).unwrap();
    assert!(!f.contains("\"sets\": 4"), "{f}");
    s.launch().unwrap();
    check_objects(&s.client(), &manifest).await;
    check_each(&s.client(), &new).await;
}
