//! A full filesystem: writes fail with 507 and leave nothing behind.
//! Needs root (to mount a small tmpfs); CI runs as root.

use std::process::Command;

use crate::harness::*;

struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test]
async fn full_disk_fails_writes_cleanly_with_507() {
    let root = tempfile::tempdir().unwrap();
    let mnt = root.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED full_disk_fails_writes_cleanly_with_507: mounting a tmpfs needs root");
        return;
    }
    let _guard = Tmpfs(mnt.clone());
    let dirs = (1..=4).map(|i| mnt.join(format!("d{i}"))).collect();
    let s = Server::start_in(root, dirs, &[]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "before", Pattern::bytes(1, 4 << 20)).await;

    // Declared too large for the free space: refused before any byte is
    // sent (the client waits for 100-continue, as the aws CLI does).
    let reply = partial_request(
        &s,
        &[("expect", "100-continue")],
        "PUT",
        "/bkt/huge",
        1 << 30,
        0,
        false,
    );
    assert!(reply.starts_with("HTTP/1.1 507"), "{reply}");
    assert!(!reply.contains("100 Continue"), "{reply}");
    assert!(
        reply.contains("<Code>InsufficientStorage</Code>"),
        "{reply}"
    );
    // Fits one disk's check but not the shared filesystem: fails mid-write.
    let e = c
        .put_object()
        .bucket("bkt")
        .key("mid")
        .body(Pattern::bytes(3, 200 << 20).into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 507, "{e:?}");
    for k in ["huge", "mid"] {
        let e = c
            .head_object()
            .bucket("bkt")
            .key(k)
            .send()
            .await
            .unwrap_err();
        assert_eq!(status(&e), 404);
    }
    // Nothing half-written is left on the disks.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    for d in &s.dirs {
        assert!(files_under(&d.join("tmp")).is_empty());
    }
    // Earlier data is intact and small writes still work.
    assert_eq!(
        get_bytes(&c, "bkt", "before").await,
        Pattern::bytes(1, 4 << 20)
    );
    put_bytes(&c, "bkt", "after", b"small".to_vec()).await;
    assert_eq!(get_bytes(&c, "bkt", "after").await, b"small");
}
