//! A remote tier: lifecycle moves objects to another S3 endpoint (here a
//! second Granary), GET streams them back, and replacing or deleting them
//! deletes the remote copy. The tier survives a restart (its secret key is
//! stored sealed).

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, ExpirationStatus, LifecycleRule, LifecycleRuleFilter, Transition,
    TransitionStorageClass,
};
use aws_sdk_s3::Client;

use crate::harness::{admin, class_of, code, get_bytes, until, Pattern, Server, SECRET, USER};

async fn remote_keys(c: &Client) -> Vec<String> {
    let listed = c.list_objects_v2().bucket("archive").send().await.unwrap();
    listed
        .contents()
        .iter()
        .map(|o| o.key().unwrap().to_string())
        .collect()
}

fn archive_rule(class: &str) -> BucketLifecycleConfiguration {
    let rule = LifecycleRule::builder()
        .id("archive")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("old/").build())
        .transitions(
            Transition::builder()
                .days(0)
                .storage_class(TransitionStorageClass::from(class))
                .build(),
        )
        .build()
        .unwrap();
    BucketLifecycleConfiguration::builder()
        .rules(rule)
        .build()
        .unwrap()
}

#[tokio::test]
async fn lifecycle_moves_objects_to_another_s3_endpoint_and_reads_them_back() {
    let remote = Server::start(4);
    let r = remote.client();
    r.create_bucket().bucket("archive").send().await.unwrap();
    let mut s = Server::start_with(4, &["--lifecycle-day-secs", "2"]);
    let c = s.client();
    c.create_bucket().bucket("data").send().await.unwrap();

    // A rule naming a tier that does not exist is refused.
    let e = c
        .put_bucket_lifecycle_configuration()
        .bucket("data")
        .lifecycle_configuration(archive_rule("ARCHIVE"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "MalformedXML");
    let added = admin(
        &s,
        &[
            "tier",
            "add",
            "ARCHIVE",
            "--endpoint",
            &remote.endpoint,
            "--bucket",
            "archive",
            "--prefix",
            "granary/",
            "--access-key",
            USER,
            "--secret-key",
            SECRET,
        ],
    )
    .unwrap();
    assert!(added.contains("tier ARCHIVE"), "{added}");
    let listed = admin(&s, &["tier", "list"]).unwrap();
    assert!(
        listed.contains("ARCHIVE") && !listed.contains(SECRET),
        "{listed}"
    );
    let e = admin(
        &s,
        &[
            "tier",
            "add",
            "GLACIER",
            "--endpoint",
            &remote.endpoint,
            "--bucket",
            "archive",
            "--access-key",
            USER,
            "--secret-key",
            SECRET,
        ],
    )
    .unwrap_err();
    assert!(e.contains("storage class of its own"), "{e}");

    let a = Pattern::bytes(1, 300 << 10);
    let b = Pattern::bytes(2, 1 << 20);
    // Over the 5 MiB part size: uploaded to the endpoint in three parts.
    let big = Pattern::bytes(3, 12 << 20);
    for (key, body) in [
        ("old/a", &a),
        ("old/b", &b),
        ("old/big", &big),
        ("new/c", &a),
    ] {
        c.put_object()
            .bucket("data")
            .key(key)
            .body(ByteStream::from(body.clone()))
            .send()
            .await
            .unwrap();
    }
    c.put_bucket_lifecycle_configuration()
        .bucket("data")
        .lifecycle_configuration(archive_rule("ARCHIVE"))
        .send()
        .await
        .unwrap();
    until(30, "old/ in ARCHIVE", async || {
        class_of(&c, "data", "old/a").await.as_deref() == Some("ARCHIVE")
            && class_of(&c, "data", "old/b").await.as_deref() == Some("ARCHIVE")
            && class_of(&c, "data", "old/big").await.as_deref() == Some("ARCHIVE")
    })
    .await;
    assert_eq!(
        class_of(&c, "data", "new/c").await.as_deref(),
        Some("STANDARD")
    );
    // Read back through this server, whole and in ranges.
    assert_eq!(get_bytes(&c, "data", "old/a").await, a);
    assert_eq!(get_bytes(&c, "data", "old/b").await, b);
    assert_eq!(get_bytes(&c, "data", "old/big").await, big);
    let part = c
        .get_object()
        .bucket("data")
        .key("old/b")
        .range("bytes=100000-299999")
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert_eq!(&part[..], &b[100_000..300_000]);
    // The bytes are on the other endpoint, with their owner.
    let keys = remote_keys(&r).await;
    assert_eq!(keys.len(), 3, "{keys:?}");
    let sizes: Vec<i64> = r
        .list_objects_v2()
        .bucket("archive")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .map(|o| o.size().unwrap())
        .collect();
    assert!(sizes.contains(&(12 << 20)), "{sizes:?}");
    assert!(keys.iter().all(|k| k.starts_with("granary/")));
    let head = r
        .head_object()
        .bucket("archive")
        .key(&keys[0])
        .send()
        .await
        .unwrap();
    assert_eq!(head.metadata().unwrap()["granary-bucket"], "data");

    // What a crash between the upload and the record flip leaves — an
    // object no version refers to — is swept; other objects are not.
    let orphan = format!("granary/{}", uuid::Uuid::now_v7());
    for (name, meta) in [(orphan.as_str(), true), ("granary/notes.txt", false)] {
        let mut p = r
            .put_object()
            .bucket("archive")
            .key(name)
            .body(ByteStream::from_static(b"left behind"));
        if meta {
            p = p
                .metadata("granary-bucket", "data")
                .metadata("granary-key", "old/a");
        }
        p.send().await.unwrap();
    }
    until(30, "the orphan swept", async || {
        !remote_keys(&r).await.contains(&orphan)
    })
    .await;
    assert!(remote_keys(&r)
        .await
        .contains(&"granary/notes.txt".to_string()));
    r.delete_object()
        .bucket("archive")
        .key("granary/notes.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "data", "old/a").await, a);

    // The tier comes back after a restart.
    s.restart();
    let c = s.client();
    assert_eq!(get_bytes(&c, "data", "old/b").await, b);

    // Deleting or replacing a version deletes its remote copy.
    let left = async |n: usize| {
        until(30, "remote copies deleted", async || {
            remote_keys(&r).await.len() == n
        })
        .await
    };
    c.delete_object()
        .bucket("data")
        .key("old/a")
        .send()
        .await
        .unwrap();
    left(2).await;
    c.put_object()
        .bucket("data")
        .key("old/b")
        .body(ByteStream::from_static(b"replaced"))
        .send()
        .await
        .unwrap();
    left(1).await;
    assert_eq!(get_bytes(&c, "data", "old/b").await, b"replaced");
    c.delete_object()
        .bucket("data")
        .key("old/big")
        .send()
        .await
        .unwrap();
    left(0).await;
}
