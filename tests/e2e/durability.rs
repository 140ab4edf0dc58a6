use std::path::PathBuf;
use std::time::Duration;

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use crate::harness::*;

/// Snapshot of every shard file: (path, bytes).
fn snapshot(s: &Server) -> Vec<(PathBuf, Vec<u8>)> {
    s.shard_files()
        .into_iter()
        .flatten()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

async fn wait_until_restored(snap: &[(PathBuf, Vec<u8>)]) {
    for _ in 0..200 {
        if snap
            .iter()
            .all(|(p, b)| std::fs::read(p).ok().as_deref() == Some(b.as_slice()))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("shard files were not repaired");
}

fn flip(path: &PathBuf, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x5A;
    std::fs::write(path, b).unwrap();
}

#[tokio::test]
async fn m_bad_shards_are_survived_and_repaired() {
    // No hot-object cache: every read here must go to the damaged disks.
    let s = Server::start_with(4, &["--read-cache-mib", "0"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(11, 3 << 20);
    // m = 2: delete the shard files of m-1 = 1 disk and flip bytes in one
    // more; once hitting data shards, once only parity shards (which a
    // healthy read never touches).
    let mut first = Vec::new();
    for (key, delete_data, flip_data) in [("k", true, false), ("parity-only", false, false)] {
        let before = snapshot(&s);
        put_bytes(&c, "bkt", key, data.clone()).await;
        let snap: Vec<(PathBuf, Vec<u8>)> = snapshot(&s)
            .into_iter()
            .filter(|f| !before.iter().any(|b| b.0 == f.0))
            .collect();
        assert_eq!(snap.len(), 4, "one shard file per disk");
        let is_data = |f: &(PathBuf, Vec<u8>)| shard_index(&f.0) < 2;
        let victim = snap.iter().position(|f| is_data(f) == delete_data).unwrap();
        let flipped = snap
            .iter()
            .enumerate()
            .position(|(i, f)| i != victim && is_data(f) == flip_data)
            .unwrap();
        std::fs::remove_file(&snap[victim].0).unwrap();
        flip(&snap[flipped].0, 4096 + 1000);
        flip(&snap[flipped].0, 4096 + 700_000);
        assert_eq!(get_bytes(&c, "bkt", key).await, data);
        let r = c
            .get_object()
            .bucket("bkt")
            .key(key)
            .range("bytes=1000000-1000099")
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.body.collect().await.unwrap().into_bytes().to_vec(),
            &data[1_000_000..1_000_100]
        );
        wait_until_restored(&snap).await;
        if first.is_empty() {
            first = snap;
        }
    }
    let snap = first;
    // m + 1 bad shards: the GET fails; it never returns wrong bytes.
    std::fs::remove_file(&snap[0].0).unwrap();
    std::fs::remove_file(&snap[1].0).unwrap();
    flip(&snap[3].0, 4096 + 10);
    match c.get_object().bucket("bkt").key("k").send().await {
        Err(e) => {
            assert_eq!(status(&e), 503);
            assert_eq!(code(&e), "ServiceUnavailable");
        }
        Ok(r) => {
            let body = r.body.collect().await;
            assert!(body.is_err(), "a body came back from m+1 damaged shards");
        }
    }
    // The server keeps serving other requests.
    put_bytes(&c, "bkt", "other", b"fine".to_vec()).await;
    assert_eq!(get_bytes(&c, "bkt", "other").await, b"fine");
}

#[tokio::test]
async fn replaced_disk_is_formatted_and_refilled() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let objects: Vec<(String, Vec<u8>)> = (0..5)
        .map(|i| (format!("obj{i}"), Pattern::bytes(i, 700_000 + i as usize)))
        .collect();
    for (k, d) in &objects {
        put_bytes(&c, "bkt", k, d.clone()).await;
    }
    let before: Vec<Vec<u8>> = s.shard_files()[2]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    s.stop();
    std::fs::remove_dir_all(&s.dirs[2]).unwrap();
    std::fs::create_dir(&s.dirs[2]).unwrap();
    s.launch().unwrap();
    assert!(s.log().contains("replacement"), "{}", s.log());
    let c = s.client();
    for (k, d) in &objects {
        assert_eq!(&get_bytes(&c, "bkt", k).await, d);
    }
    // Read repair rewrites the disk's shards, identical to what was lost.
    for _ in 0..200 {
        if s.shard_files()[2].len() == before.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after: Vec<Vec<u8>> = s.shard_files()[2]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let mut b = before.clone();
    let mut a = after.clone();
    b.sort();
    a.sort();
    assert_eq!(a, b);
    // Proof the records came back too: lose the two other data disks; the
    // refilled disk and the last one hold everything (k = 2).
    s.stop();
    for i in [0, 1] {
        std::fs::remove_dir_all(&s.dirs[i]).unwrap();
        std::fs::create_dir(&s.dirs[i]).unwrap();
    }
    s.launch().unwrap();
    let c = s.client();
    for (k, d) in &objects {
        assert_eq!(&get_bytes(&c, "bkt", k).await, d);
    }
}

#[tokio::test]
async fn restart_keeps_everything_acknowledged() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let small = Pattern::bytes(1, 12_345);
    put_bytes(&c, "bkt", "small", small.clone()).await;
    put_bytes(&c, "bkt", "empty", Vec::new()).await;
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let p1 = Pattern::bytes(2, 5 << 20);
    let r1 = c
        .upload_part()
        .bucket("bkt")
        .key("mp")
        .upload_id(id)
        .part_number(1)
        .body(p1.clone().into())
        .send()
        .await
        .unwrap();
    let r2 = c
        .upload_part()
        .bucket("bkt")
        .key("mp")
        .upload_id(id)
        .part_number(2)
        .body(b"tail".to_vec().into())
        .send()
        .await
        .unwrap();
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(r1.e_tag().unwrap())
                        .build(),
                )
                .parts(
                    CompletedPart::builder()
                        .part_number(2)
                        .e_tag(r2.e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let pending = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("pending")
        .send()
        .await
        .unwrap();

    s.restart();
    let c = s.client();
    assert_eq!(get_bytes(&c, "bkt", "small").await, small);
    assert_eq!(get_bytes(&c, "bkt", "empty").await, Vec::<u8>::new());
    assert_eq!(
        get_bytes(&c, "bkt", "mp").await,
        [p1.clone(), b"tail".to_vec()].concat()
    );
    let ups = c
        .list_multipart_uploads()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert_eq!(ups.uploads()[0].upload_id(), pending.upload_id());

    // kill -9 right after acknowledgements: still there.
    put_bytes(&c, "bkt", "late", b"acknowledged".to_vec()).await;
    s.kill();
    s.launch().unwrap();
    let c = s.client();
    assert_eq!(get_bytes(&c, "bkt", "late").await, b"acknowledged");
    assert_eq!(get_bytes(&c, "bkt", "small").await, small);
}

#[tokio::test]
async fn missing_foreign_and_contradicting_disks() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"data".to_vec()).await;
    s.stop();

    // A missing directory: reported offline, reads and writes go on (W = 3).
    let moved = s.root.path().join("moved-away");
    std::fs::rename(&s.dirs[3], &moved).unwrap();
    s.launch().unwrap();
    assert!(
        s.log().contains("disk offline") || s.log().contains("disk missing"),
        "{}",
        s.log()
    );
    let c = s.client();
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"data");
    put_bytes(&c, "bkt", "k2", b"written degraded".to_vec()).await;
    let ready = reqwest::get(format!("{}/granary/health/ready", s.endpoint))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    s.stop();
    std::fs::rename(&moved, &s.dirs[3]).unwrap();

    // Contradicting --parity is refused with a clear message.
    let err = {
        let mut t = std::process::Command::new(env!("CARGO_BIN_EXE_granary"));
        t.arg("server")
            .args(&s.dirs)
            .args(["--address", "127.0.0.1:0", "--parity", "1"]);
        t.env("GRANARY_ROOT_USER", USER)
            .env("GRANARY_ROOT_PASSWORD", SECRET);
        let out = t.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
    };
    assert!(
        err.contains("parity 2") && err.contains("--parity 1"),
        "{err}"
    );

    // A disk of another deployment is refused.
    let mut other = Server::start(4);
    other.stop();
    let mut dirs = s.dirs.clone();
    dirs[3] = other.dirs[3].clone();
    let mut t = std::process::Command::new(env!("CARGO_BIN_EXE_granary"));
    t.arg("server")
        .args(&dirs)
        .args(["--address", "127.0.0.1:0"]);
    t.env("GRANARY_ROOT_USER", USER)
        .env("GRANARY_ROOT_PASSWORD", SECRET);
    let out = t.output().unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("deployment"), "{text}");

    // And the original set still starts and serves.
    s.launch().unwrap();
    assert_eq!(
        get_bytes(&s.client(), "bkt", "k2").await,
        b"written degraded"
    );
}
