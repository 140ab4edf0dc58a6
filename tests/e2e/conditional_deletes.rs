//! Conditional deletes: `If-Match` (an ETag or `*`) on DeleteObject and the
//! per-object `ETag` of DeleteObjects, in unversioned and versioned
//! buckets; the directory-bucket size and time conditions; the extra read
//! right an ETag condition needs; a bucket policy requiring `s3:if-match`;
//! and a delete racing an overwrite, which never removes the new object.

use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;

use crate::harness::*;

async fn etag_of(c: &Client, bucket: &str, key: &str) -> String {
    let h = c
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    h.e_tag().unwrap().to_string()
}

async fn exists(c: &Client, bucket: &str, key: &str) -> bool {
    c.head_object().bucket(bucket).key(key).send().await.is_ok()
}

#[tokio::test]
async fn if_match_deletes_only_the_version_it_names() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("plain").send().await.unwrap();
    put_bytes(&c, "plain", "k", b"first".to_vec()).await;
    let etag = etag_of(&c, "plain", "k").await;

    // A wrong ETag: 412, and the object stays.
    let e = c
        .delete_object()
        .bucket("plain")
        .key("k")
        .if_match("\"0123\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    assert!(exists(&c, "plain", "k").await);
    // Size and modification time (directory-bucket conditions) likewise.
    let e = c
        .delete_object()
        .bucket("plain")
        .key("k")
        .if_match_size(6)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    let e = c
        .delete_object()
        .bucket("plain")
        .key("k")
        .if_match_last_modified_time(DateTime::from_secs(1_000_000_000))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    assert!(exists(&c, "plain", "k").await);
    // The right ones: deleted.
    c.delete_object()
        .bucket("plain")
        .key("k")
        .if_match(&etag)
        .if_match_size(5)
        .send()
        .await
        .unwrap();
    assert!(!exists(&c, "plain", "k").await);
    // A missing key: 404 NoSuchKey, for an ETag and for `*`.
    for m in [etag.as_str(), "*"] {
        let e = c
            .delete_object()
            .bucket("plain")
            .key("k")
            .if_match(m)
            .send()
            .await
            .unwrap_err();
        assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"), "{m}");
    }
    // `*`: deletes whatever exists.
    put_bytes(&c, "plain", "k", b"second".to_vec()).await;
    c.delete_object()
        .bucket("plain")
        .key("k")
        .if_match("*")
        .send()
        .await
        .unwrap();
    assert!(!exists(&c, "plain", "k").await);
    // Size alone on a missing key: nothing to differ, 204.
    c.delete_object()
        .bucket("plain")
        .key("k")
        .if_match_size(1)
        .send()
        .await
        .unwrap();

    // Versioned: the condition is on the current version; a delete marker
    // is no object.
    c.create_bucket().bucket("versioned").send().await.unwrap();
    enable_versioning(&c, "versioned").await;
    let v1 = put_bytes(&c, "versioned", "k", b"one".to_vec())
        .await
        .version_id()
        .unwrap()
        .to_string();
    let etag1 = etag_of(&c, "versioned", "k").await;
    put_bytes(&c, "versioned", "k", b"two!".to_vec()).await;
    let e = c
        .delete_object()
        .bucket("versioned")
        .key("k")
        .if_match(&etag1)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    let etag2 = etag_of(&c, "versioned", "k").await;
    let out = c
        .delete_object()
        .bucket("versioned")
        .key("k")
        .if_match(&etag2)
        .send()
        .await
        .unwrap();
    assert_eq!(out.delete_marker(), Some(true));
    let e = c
        .delete_object()
        .bucket("versioned")
        .key("k")
        .if_match("*")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    // A named version: the condition is on it.
    let e = c
        .delete_object()
        .bucket("versioned")
        .key("k")
        .version_id(&v1)
        .if_match(&etag2)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    c.delete_object()
        .bucket("versioned")
        .key("k")
        .version_id(&v1)
        .if_match(&etag1)
        .send()
        .await
        .unwrap();
    let versions = c
        .list_object_versions()
        .bucket("versioned")
        .send()
        .await
        .unwrap();
    assert_eq!(versions.versions().len(), 1, "{versions:?}");
}

#[tokio::test]
async fn delete_objects_checks_each_entrys_etag() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    for k in ["a", "b", "c"] {
        put_bytes(&c, "bkt", k, k.as_bytes().to_vec()).await;
    }
    let etag_a = etag_of(&c, "bkt", "a").await;
    let id = |k: &str, etag: Option<&str>| {
        let mut b = ObjectIdentifier::builder().key(k);
        if let Some(e) = etag {
            b = b.e_tag(e);
        }
        b.build().unwrap()
    };
    let out = c
        .delete_objects()
        .bucket("bkt")
        .delete(
            Delete::builder()
                .objects(id("a", Some(&etag_a)))
                .objects(id("b", Some("\"ffff\"")))
                .objects(id("c", None))
                .objects(id("missing", Some("*")))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let mut deleted: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    deleted.sort();
    assert_eq!(deleted, vec!["a", "c"]);
    let mut errors: Vec<(&str, &str)> = out
        .errors()
        .iter()
        .map(|e| (e.key().unwrap(), e.code().unwrap()))
        .collect();
    errors.sort();
    assert_eq!(
        errors,
        vec![("b", "PreconditionFailed"), ("missing", "NoSuchKey")]
    );
    assert!(exists(&c, "bkt", "b").await);
}

#[tokio::test]
async fn a_conditional_delete_racing_an_overwrite_never_removes_the_new_object() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("locks").send().await.unwrap();
    let (mut won, mut lost) = (0, 0);
    for round in 0..20 {
        let key = format!("lock-{round}");
        put_bytes(&c, "locks", &key, b"held by one".to_vec()).await;
        let old = etag_of(&c, "locks", &key).await;
        // One client releases the lock it holds; another takes it over.
        let (released, taken) = tokio::join!(
            c.delete_object()
                .bucket("locks")
                .key(&key)
                .if_match(&old)
                .send(),
            c.put_object()
                .bucket("locks")
                .key(&key)
                .body(b"held by two".to_vec().into())
                .send(),
        );
        taken.unwrap();
        match released {
            Ok(_) => won += 1,
            Err(e) => {
                assert!(
                    ["PreconditionFailed", "ConditionalRequestConflict"]
                        .contains(&code(&e).as_str()),
                    "{e:?}"
                );
                lost += 1;
            }
        }
        // Whichever came first, the new holder's object is what remains.
        assert_eq!(
            get_bytes(&c, "locks", &key).await,
            b"held by two",
            "round {round}"
        );
    }
    eprintln!("conditional delete vs overwrite: delete first {won}, overwrite first {lost}");

    // Two clients releasing the same lock: exactly one succeeds.
    put_bytes(&c, "locks", "shared", b"x".to_vec()).await;
    let etag = etag_of(&c, "locks", "shared").await;
    let (a, b) = tokio::join!(
        c.delete_object()
            .bucket("locks")
            .key("shared")
            .if_match(&etag)
            .send(),
        c.delete_object()
            .bucket("locks")
            .key("shared")
            .if_match(&etag)
            .send(),
    );
    assert!(a.is_ok() != b.is_ok(), "{a:?} {b:?}");
    let e = a.err().or(b.err()).unwrap();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test]
async fn an_etag_condition_needs_the_read_right_and_a_policy_can_require_one() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let policy = s.root.path().join("delete-only.json");
    std::fs::write(
        &policy,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:DeleteObject","s3:PutObject"],"Resource":"arn:aws:s3:::bkt/*"}]}"#,
    )
    .unwrap();
    let (ak, sk) = add_user(&s, "deleter", &["--policy", &policy.display().to_string()]);
    let user = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    put_bytes(&c, "bkt", "k", b"data".to_vec()).await;
    let etag = etag_of(&c, "bkt", "k").await;
    // An ETag condition reads the object: s3:GetObject is needed too.
    let e = user
        .delete_object()
        .bucket("bkt")
        .key("k")
        .if_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    assert!(exists(&c, "bkt", "k").await);
    // `*` only asks whether it exists.
    user.delete_object()
        .bucket("bkt")
        .key("k")
        .if_match("*")
        .send()
        .await
        .unwrap();

    // A bucket policy that refuses unconditional deletes.
    let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"Null":{"s3:if-match":"true"}}}]}"#;
    c.put_bucket_policy()
        .bucket("bkt")
        .policy(doc)
        .send()
        .await
        .unwrap();
    put_bytes(&user, "bkt", "k", b"data".to_vec()).await;
    let e = user
        .delete_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    user.delete_object()
        .bucket("bkt")
        .key("k")
        .if_match("*")
        .send()
        .await
        .unwrap();
    assert!(!exists(&c, "bkt", "k").await);
}
