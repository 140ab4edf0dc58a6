//! Hot and cold pools: objects of the cold storage classes keep their bytes
//! in the cold pool and are read from it directly; replacing or deleting
//! them frees the cold pool's space.

use std::path::PathBuf;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::StorageClass;

use crate::harness::{code, count_shard_files, get_bytes, start_tiered, until, Pattern, Server};

#[tokio::test]
async fn cold_classes_live_in_the_cold_pool_and_are_read_directly() {
    let (mut s, cold) = start_tiered(&[]);
    let c = s.client();
    c.create_bucket().bucket("tiers").send().await.unwrap();
    let big = Pattern::bytes(1, 3 << 20);
    let small = Pattern::bytes(2, 1000);

    let hot_before = count_shard_files(&s.dirs);
    c.put_object()
        .bucket("tiers")
        .key("ckpt/big")
        .storage_class(StorageClass::Glacier)
        .body(ByteStream::from(big.clone()))
        .send()
        .await
        .unwrap();
    c.put_object()
        .bucket("tiers")
        .key("ckpt/small")
        .storage_class(StorageClass::from("COLD"))
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    c.put_object()
        .bucket("tiers")
        .key("hot")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    // The large cold object's shards are in the cold pool only; the small
    // ones are packed (no files of their own anywhere).
    assert_eq!(count_shard_files(&s.dirs), hot_before);
    assert_eq!(count_shard_files(&cold), 4);

    // Read directly, whole and in ranges, with the class shown everywhere.
    assert_eq!(get_bytes(&c, "tiers", "ckpt/big").await, big);
    assert_eq!(get_bytes(&c, "tiers", "ckpt/small").await, small);
    let part = c
        .get_object()
        .bucket("tiers")
        .key("ckpt/big")
        .range("bytes=1000000-2000000")
        .send()
        .await
        .unwrap();
    assert_eq!(part.storage_class(), Some(&StorageClass::Glacier));
    let part = part.body.collect().await.unwrap().into_bytes();
    assert_eq!(&part[..], &big[1_000_000..=2_000_000]);
    let head = c
        .head_object()
        .bucket("tiers")
        .key("ckpt/big")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class(), Some(&StorageClass::Glacier));
    assert_eq!(head.content_length(), Some(3 << 20));
    let head = c
        .head_object()
        .bucket("tiers")
        .key("hot")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class(), None);
    let listed = c.list_objects_v2().bucket("tiers").send().await.unwrap();
    let classes: Vec<(String, String)> = listed
        .contents()
        .iter()
        .map(|o| {
            (
                o.key().unwrap().to_string(),
                o.storage_class().unwrap().as_str().to_string(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        [
            ("ckpt/big".to_string(), "GLACIER".to_string()),
            ("ckpt/small".into(), "COLD".into()),
            ("hot".into(), "STANDARD".into())
        ]
    );

    // Everything survives a restart.
    s.restart();
    let c = s.client();
    assert_eq!(get_bytes(&c, "tiers", "ckpt/big").await, big);
    assert_eq!(get_bytes(&c, "tiers", "ckpt/small").await, small);

    // Copying to itself with another class moves the bytes: back to hot,
    // and the cold pool's copy is freed.
    c.copy_object()
        .bucket("tiers")
        .key("ckpt/big")
        .copy_source("tiers/ckpt/big")
        .storage_class(StorageClass::Standard)
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("tiers")
        .key("ckpt/big")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class(), None);
    assert_eq!(get_bytes(&c, "tiers", "ckpt/big").await, big);
    assert!(count_shard_files(&s.dirs) > hot_before);
    until(5, "cold shards freed after the copy", async || {
        count_shard_files(&cold) == 0
    })
    .await;

    // And back to cold; then an overwrite and a delete free it again.
    c.copy_object()
        .bucket("tiers")
        .key("ckpt/big")
        .copy_source("tiers/ckpt/big")
        .storage_class(StorageClass::StandardIa)
        .send()
        .await
        .unwrap();
    until(5, "hot shards freed after the copy", async || {
        count_shard_files(&s.dirs) == hot_before
    })
    .await;
    assert_eq!(count_shard_files(&cold), 4);
    assert_eq!(get_bytes(&c, "tiers", "ckpt/big").await, big);
    c.put_object()
        .bucket("tiers")
        .key("ckpt/big")
        .storage_class(StorageClass::DeepArchive)
        .body(ByteStream::from(big[..2 << 20].to_vec()))
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "tiers", "ckpt/big").await, &big[..2 << 20]);
    until(5, "the overwritten cold object freed", async || {
        count_shard_files(&cold) == 4
    })
    .await;
    c.delete_object()
        .bucket("tiers")
        .key("ckpt/big")
        .send()
        .await
        .unwrap();
    until(5, "the deleted cold object freed", async || {
        count_shard_files(&cold) == 0
    })
    .await;
    assert_eq!(get_bytes(&c, "tiers", "ckpt/small").await, small);

    // Classes Granary does not store are refused, and nothing changes.
    for class in ["REDUCED_REDUNDANCY", "INTELLIGENT_TIERING", "FANCY"] {
        let e = c
            .put_object()
            .bucket("tiers")
            .key("hot")
            .storage_class(StorageClass::from(class))
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), "InvalidStorageClass", "{class}");
    }
    assert_eq!(get_bytes(&c, "tiers", "hot").await, small);
}

#[tokio::test]
async fn cold_classes_need_a_cold_pool() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("tiers").send().await.unwrap();
    let e = c
        .put_object()
        .bucket("tiers")
        .key("k")
        .storage_class(StorageClass::Glacier)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidStorageClass");
    // A transition rule could never fire here: refused, not stored.
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, ExpirationStatus, LifecycleRule, LifecycleRuleFilter,
        Transition, TransitionStorageClass,
    };
    let rule = LifecycleRule::builder()
        .id("cold")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
        .transitions(
            Transition::builder()
                .days(1)
                .storage_class(TransitionStorageClass::Glacier)
                .build(),
        )
        .build()
        .unwrap();
    let e = c
        .put_bucket_lifecycle_configuration()
        .bucket("tiers")
        .lifecycle_configuration(
            BucketLifecycleConfiguration::builder()
                .rules(rule)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
}

#[tokio::test]
async fn pools_of_two_deployments_or_swapped_tiers_are_refused() {
    let (mut a, cold_a) = start_tiered(&[]);
    a.stop();
    // The same deployment's pools given the other way round.
    let root = tempfile::tempdir().unwrap();
    let mut args = vec!["--cold".to_string()];
    args.extend(a.dirs.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = Server::try_start_in(root, cold_a.clone(), &args)
        .err()
        .expect("swapped pools are refused");
    assert!(err.contains("tier"), "{err}");
    // Another deployment's hot pool with this cold pool.
    let root = tempfile::tempdir().unwrap();
    let hot_b: Vec<PathBuf> = (1..=4).map(|i| root.path().join(format!("b{i}"))).collect();
    let mut args = vec!["--cold".to_string()];
    args.extend(cold_a.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = Server::try_start_in(root, hot_b, &args)
        .err()
        .expect("a cold pool of another deployment is refused");
    assert!(err.contains("deployment"), "{err}");
}

#[tokio::test]
async fn cold_multipart_uploads_are_written_to_the_cold_pool() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let (s, cold) = start_tiered(&[]);
    let c = s.client();
    c.create_bucket().bucket("tiers").send().await.unwrap();
    let parts = [
        Pattern::bytes(11, 5 << 20),
        Pattern::bytes(12, 5 << 20),
        Pattern::bytes(13, 1 << 20),
    ];
    let hot_before = count_shard_files(&s.dirs);
    let up = c
        .create_multipart_upload()
        .bucket("tiers")
        .key("ckpt/weights")
        .storage_class(StorageClass::Glacier)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let mut done = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let r = c
            .upload_part()
            .bucket("tiers")
            .key("ckpt/weights")
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
    // Part 2 uploaded again: the first copy's cold shards are freed.
    let again = c
        .upload_part()
        .bucket("tiers")
        .key("ckpt/weights")
        .upload_id(id)
        .part_number(2)
        .body(ByteStream::from(parts[1].clone()))
        .send()
        .await
        .unwrap();
    done[1] = CompletedPart::builder()
        .part_number(2)
        .e_tag(again.e_tag().unwrap())
        .build();
    let listed = c
        .list_multipart_uploads()
        .bucket("tiers")
        .send()
        .await
        .unwrap();
    assert_eq!(
        listed.uploads()[0].storage_class().map(|s| s.as_str()),
        Some("GLACIER")
    );
    assert_eq!(count_shard_files(&s.dirs), hot_before);
    assert_eq!(count_shard_files(&cold), 12);
    c.complete_multipart_upload()
        .bucket("tiers")
        .key("ckpt/weights")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("tiers")
        .key("ckpt/weights")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class(), Some(&StorageClass::Glacier));
    assert!(head.e_tag().unwrap().ends_with("-3\""));
    let whole: Vec<u8> = parts.concat();
    assert_eq!(get_bytes(&c, "tiers", "ckpt/weights").await, whole);
    let second = c
        .get_object()
        .bucket("tiers")
        .key("ckpt/weights")
        .part_number(2)
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert_eq!(&second[..], &parts[1][..]);
    assert_eq!(count_shard_files(&s.dirs), hot_before);
    assert_eq!(count_shard_files(&cold), 12);

    // An aborted cold upload leaves nothing behind.
    let up = c
        .create_multipart_upload()
        .bucket("tiers")
        .key("ckpt/aborted")
        .storage_class(StorageClass::from("COLD"))
        .send()
        .await
        .unwrap();
    c.upload_part()
        .bucket("tiers")
        .key("ckpt/aborted")
        .upload_id(up.upload_id().unwrap())
        .part_number(1)
        .body(ByteStream::from(parts[0].clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(count_shard_files(&cold), 16);
    c.abort_multipart_upload()
        .bucket("tiers")
        .key("ckpt/aborted")
        .upload_id(up.upload_id().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(count_shard_files(&cold), 12);
    // Deleting the object frees the cold pool.
    c.delete_object()
        .bucket("tiers")
        .key("ckpt/weights")
        .send()
        .await
        .unwrap();
    until(5, "the cold object freed", async || {
        count_shard_files(&cold) == 0
    })
    .await;
}

/// Seconds from now until the HTTP date in `x-amz-restore`'s expiry-date.
fn restored_for_secs(restore: &str) -> i64 {
    assert!(
        restore.starts_with("ongoing-request=\"false\", expiry-date=\""),
        "{restore}"
    );
    let date = restore
        .split("expiry-date=\"")
        .nth(1)
        .unwrap()
        .trim_end_matches('"');
    let at = httpdate::parse_http_date(date).unwrap();
    let now = std::time::SystemTime::now();
    match at.duration_since(now) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

#[tokio::test]
async fn archived_objects_are_always_restored_and_a_restore_moves_the_reported_expiry() {
    use aws_sdk_s3::types::{GlacierJobParameters, OptionalObjectAttributes, RestoreRequest, Tier};
    let (s, _) = start_tiered(&[]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(3, 300 << 10);
    for (key, class) in [
        ("frozen", StorageClass::Glacier),
        ("deep", StorageClass::DeepArchive),
        ("instant", StorageClass::GlacierIr),
        ("hot", StorageClass::Standard),
    ] {
        c.put_object()
            .bucket("bkt")
            .key(key)
            .storage_class(class)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
    }
    const DAY: i64 = 86_400;
    for key in ["frozen", "deep"] {
        let h = c.head_object().bucket("bkt").key(key).send().await.unwrap();
        let left = restored_for_secs(h.restore().expect("x-amz-restore"));
        assert!((DAY - 60..=DAY).contains(&left), "{key}: {left}");
    }
    for key in ["instant", "hot"] {
        let h = c.head_object().bucket("bkt").key(key).send().await.unwrap();
        assert_eq!(h.restore(), None, "{key}");
    }
    let restore = |key: &str, days: i32| {
        c.restore_object()
            .bucket("bkt")
            .key(key)
            .restore_request(
                RestoreRequest::builder()
                    .days(days)
                    .glacier_job_parameters(
                        GlacierJobParameters::builder()
                            .tier(Tier::Standard)
                            .build()
                            .unwrap(),
                    )
                    .build(),
            )
            .send()
    };
    restore("frozen", 7).await.unwrap();
    let h = c
        .head_object()
        .bucket("bkt")
        .key("frozen")
        .send()
        .await
        .unwrap();
    let left = restored_for_secs(h.restore().unwrap());
    assert!((7 * DAY - 60..=7 * DAY).contains(&left), "{left}");
    assert_eq!(h.storage_class(), Some(&StorageClass::Glacier));
    // GET sends it too, and the bytes are there.
    let g = c
        .get_object()
        .bucket("bkt")
        .key("frozen")
        .send()
        .await
        .unwrap();
    assert!(g.restore().is_some());
    assert!(g.body.collect().await.unwrap().into_bytes() == data);
    // Other classes: 403 InvalidObjectState; no object: 404.
    for key in ["instant", "hot"] {
        let e = restore(key, 1).await.unwrap_err();
        assert_eq!(
            (crate::harness::status(&e), code(&e).as_str()),
            (403, "InvalidObjectState")
        );
    }
    assert_eq!(code(&restore("missing", 1).await.unwrap_err()), "NoSuchKey");
    assert_eq!(
        code(&restore("frozen", 0).await.unwrap_err()),
        "InvalidArgument"
    );

    // Listings answer with the restore status when asked.
    let listed = c
        .list_objects_v2()
        .bucket("bkt")
        .optional_object_attributes(OptionalObjectAttributes::RestoreStatus)
        .send()
        .await
        .unwrap();
    for o in listed.contents() {
        let status = o.restore_status();
        match o.key().unwrap() {
            "frozen" | "deep" => {
                let st = status.expect("restore status");
                assert_eq!(st.is_restore_in_progress(), Some(false));
                assert!(st.restore_expiry_date().is_some());
            }
            other => assert!(status.is_none(), "{other}"),
        }
    }
    let versions = c
        .list_object_versions()
        .bucket("bkt")
        .optional_object_attributes(OptionalObjectAttributes::RestoreStatus)
        .send()
        .await
        .unwrap();
    for v in versions.versions() {
        let status = v.restore_status();
        match v.key().unwrap() {
            "frozen" | "deep" => assert_eq!(status.unwrap().is_restore_in_progress(), Some(false)),
            other => assert!(status.is_none(), "{other}"),
        }
    }
    let e = c
        .list_objects_v2()
        .bucket("bkt")
        .optional_object_attributes(OptionalObjectAttributes::from("Bogus"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
}
