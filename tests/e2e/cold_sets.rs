//! A cold pool of many erasure sets (`--cold` with more directories than
//! one set takes): cold objects and cold multipart uploads spread over its
//! sets, each read back byte-exact (also after a restart), and deleting
//! them frees every set.

use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, StorageClass};

use crate::harness::{count_shard_files, get_bytes, until, Pattern, Server};

#[tokio::test]
async fn a_cold_pool_of_two_sets_spreads_cold_objects_over_them() {
    let root = tempfile::tempdir().unwrap();
    let hot: Vec<PathBuf> = (1..=4)
        .map(|i| root.path().join(format!("hot{i}")))
        .collect();
    let cold: Vec<PathBuf> = (1..=8)
        .map(|i| root.path().join(format!("cold{i}")))
        .collect();
    let mut args: Vec<String> = vec!["--cold".into()];
    args.extend(cold.iter().map(|d| d.display().to_string()));
    args.extend(["--cold-set-width".into(), "4".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = Server::start_in(root, hot, &args);
    assert!(
        s.banner
            .contains("cold: 2 erasure sets of 4 disks, 2+2 erasure coding"),
        "{}",
        s.banner
    );
    let c = s.client();
    c.create_bucket().bucket("cold").send().await.unwrap();
    let hot_before = count_shard_files(&s.dirs);
    let mut objects = Vec::new();
    for i in 0..12u8 {
        let key = format!("shard-{i:02}");
        let bytes = Pattern::bytes(i as u64, 400_000 + i as usize);
        c.put_object()
            .bucket("cold")
            .key(&key)
            .storage_class(StorageClass::Glacier)
            .body(ByteStream::from(bytes.clone()))
            .send()
            .await
            .unwrap();
        objects.push((key, bytes));
    }
    // A cold multipart upload: its parts and its object in one cold set.
    let parts = [Pattern::bytes(40, 5 << 20), Pattern::bytes(41, 1 << 20)];
    let up = c
        .create_multipart_upload()
        .bucket("cold")
        .key("weights")
        .storage_class(StorageClass::Glacier)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let mut done = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let r = c
            .upload_part()
            .bucket("cold")
            .key("weights")
            .upload_id(id)
            .part_number(i as i32 + 1)
            .body(ByteStream::from(p.clone()))
            .send()
            .await
            .unwrap();
        done.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(r.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("cold")
        .key("weights")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap();
    objects.push(("weights".into(), parts.concat()));
    // The bytes are in the cold pool only, in both of its sets.
    assert_eq!(count_shard_files(&s.dirs), hot_before);
    let (first, second) = (count_shard_files(&cold[..4]), count_shard_files(&cold[4..]));
    assert!(
        first > 0 && second > 0,
        "cold sets hold {first} and {second} shard files"
    );
    for (key, bytes) in &objects {
        assert_eq!(&get_bytes(&c, "cold", key).await, bytes, "{key}");
    }
    s.restart();
    let c = s.client();
    for (key, bytes) in &objects {
        assert_eq!(
            &get_bytes(&c, "cold", key).await,
            bytes,
            "{key} after a restart"
        );
    }
    for (key, _) in &objects {
        c.delete_object()
            .bucket("cold")
            .key(key)
            .send()
            .await
            .unwrap();
    }
    until(10, "every cold set freed", async || {
        count_shard_files(&cold) == 0
    })
    .await;
}
