use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, Delete, ObjectIdentifier};
use base64::Engine as _;
use md5::{Digest, Md5};

use crate::harness::*;

fn md5_hex(d: &[u8]) -> String {
    hex::encode(Md5::digest(d))
}

#[tokio::test]
async fn put_get_head_delete_at_every_size() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    for (key, len) in [
        ("zero", 0usize),
        ("one", 1),
        ("mib-plus-one", (1 << 20) + 1),
    ] {
        let data = Pattern::bytes(len as u64, len);
        let out = c
            .put_object()
            .bucket("bkt")
            .key(key)
            .body(data.clone().into())
            .content_type("application/x-test")
            .cache_control("max-age=60")
            .content_disposition("attachment; filename=\"x.bin\"")
            .content_encoding("identity")
            .metadata("color", "blue")
            .metadata("shape", "round")
            .send()
            .await
            .unwrap();
        assert_eq!(out.e_tag().unwrap(), format!("\"{}\"", md5_hex(&data)));
        let got = c.get_object().bucket("bkt").key(key).send().await.unwrap();
        assert_eq!(got.content_length().unwrap(), len as i64);
        assert_eq!(got.content_type().unwrap(), "application/x-test");
        assert_eq!(got.cache_control().unwrap(), "max-age=60");
        assert_eq!(
            got.content_disposition().unwrap(),
            "attachment; filename=\"x.bin\""
        );
        assert_eq!(got.content_encoding().unwrap(), "identity");
        assert_eq!(got.metadata().unwrap().get("color").unwrap(), "blue");
        assert_eq!(got.e_tag().unwrap(), format!("\"{}\"", md5_hex(&data)));
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().to_vec(),
            data,
            "{key}"
        );
        let head = c.head_object().bucket("bkt").key(key).send().await.unwrap();
        assert_eq!(head.content_length().unwrap(), len as i64);
        assert_eq!(head.metadata().unwrap().get("shape").unwrap(), "round");
        assert!(head.last_modified().is_some());
    }
    // Default content type, for a PUT without one.
    let r = Raw::new("PUT", format!("{}/bkt/plain", s.endpoint))
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!(r.status, 200);
    let h = c
        .head_object()
        .bucket("bkt")
        .key("plain")
        .send()
        .await
        .unwrap();
    assert_eq!(h.content_type().unwrap(), "binary/octet-stream");
    // Overwrite, then delete.
    put_bytes(&c, "bkt", "one", b"new".to_vec()).await;
    assert_eq!(get_bytes(&c, "bkt", "one").await, b"new");
    c.delete_object()
        .bucket("bkt")
        .key("one")
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("bkt")
        .key("one")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let e = c
        .head_object()
        .bucket("bkt")
        .key("one")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404);
    // Deleting a missing key is not an error.
    c.delete_object()
        .bucket("bkt")
        .key("one")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn ranges_and_part_numbers() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(7, 1_000_000);
    put_bytes(&c, "bkt", "k", data.clone()).await;
    for (range, want) in [
        ("bytes=0-9", 0..10),
        ("bytes=999990-", 999_990..1_000_000),
        ("bytes=-5", 999_995..1_000_000),
        ("bytes=524280-524300", 524_280..524_301),
        ("bytes=10-99999999", 10..1_000_000),
    ] {
        let r = c
            .get_object()
            .bucket("bkt")
            .key("k")
            .range(range)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.content_range().unwrap(),
            format!("bytes {}-{}/1000000", want.start, want.end - 1)
        );
        assert_eq!(
            r.body.collect().await.unwrap().into_bytes().to_vec(),
            &data[want],
            "{range}"
        );
    }
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .range("bytes=1000000-")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRange");
    assert_eq!(status(&e), 416);
    // A malformed range is ignored, as S3 does.
    let r = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .range("bytes=abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.content_length().unwrap(), 1_000_000);
    // partNumber=1 of a single-part object is the whole object, as a 206.
    let r = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .part_number(1)
        .send()
        .await
        .unwrap();
    assert_eq!(r.content_range().unwrap(), "bytes 0-999999/1000000");
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .part_number(2)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPartNumber");
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .part_number(1)
        .range("bytes=0-1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
}

#[tokio::test]
async fn conditional_reads() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let etag = put_bytes(&c, "bkt", "k", b"hello".to_vec())
        .await
        .e_tag()
        .unwrap()
        .to_string();
    c.get_object()
        .bucket("bkt")
        .key("k")
        .if_match(&etag)
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    assert_eq!(status(&e), 412);
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .if_none_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 304);
    let future = DateTime::from_secs(DateTime::from(std::time::SystemTime::now()).secs() + 3600);
    let past = DateTime::from_secs(1_000_000_000);
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .if_modified_since(future)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 304);
    c.get_object()
        .bucket("bkt")
        .key("k")
        .if_modified_since(past)
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .if_unmodified_since(past)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    let e = c
        .head_object()
        .bucket("bkt")
        .key("k")
        .if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
}

#[tokio::test]
async fn digests_are_verified_and_checksums_returned() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "keep", b"original".to_vec()).await;
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    // Content-MD5 that does not match: refused, previous version untouched.
    let e = c
        .put_object()
        .bucket("bkt")
        .key("keep")
        .body(b"changed".to_vec().into())
        .content_md5(b64(&Md5::digest(b"something else")))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    assert_eq!(get_bytes(&c, "bkt", "keep").await, b"original");
    c.put_object()
        .bucket("bkt")
        .key("md5")
        .body(b"abc".to_vec().into())
        .content_md5(b64(&Md5::digest(b"abc")))
        .send()
        .await
        .unwrap();
    // A checksum header that does not match.
    let e = c
        .put_object()
        .bucket("bkt")
        .key("keep")
        .body(b"changed".to_vec().into())
        .checksum_crc32("AAAAAA==")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    assert_eq!(get_bytes(&c, "bkt", "keep").await, b"original");
    // Each algorithm: stored and returned with checksum mode.
    for alg in [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ] {
        let data = Pattern::bytes(3, 300_000);
        let put = c
            .put_object()
            .bucket("bkt")
            .key("sum")
            .body(data.clone().into())
            .checksum_algorithm(alg.clone())
            .send()
            .await
            .unwrap();
        let got = c
            .get_object()
            .bucket("bkt")
            .key("sum")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        let (sent, back) = match alg {
            ChecksumAlgorithm::Crc32 => (put.checksum_crc32(), got.checksum_crc32()),
            ChecksumAlgorithm::Crc32C => (put.checksum_crc32_c(), got.checksum_crc32_c()),
            ChecksumAlgorithm::Crc64Nvme => (put.checksum_crc64_nvme(), got.checksum_crc64_nvme()),
            ChecksumAlgorithm::Sha1 => (put.checksum_sha1(), got.checksum_sha1()),
            _ => (put.checksum_sha256(), got.checksum_sha256()),
        };
        assert!(sent.is_some(), "{alg:?}");
        assert_eq!(sent, back, "{alg:?}");
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().to_vec(),
            data
        );
    }
}

#[tokio::test]
async fn delete_objects_in_one_request() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    for k in ["a", "b", "c"] {
        put_bytes(&c, "bkt", k, k.as_bytes().to_vec()).await;
    }
    let ids = ["a", "b", "missing", &"x".repeat(1025)]
        .iter()
        .map(|k| ObjectIdentifier::builder().key(*k).build().unwrap())
        .collect();
    let out = c
        .delete_objects()
        .bucket("bkt")
        .delete(Delete::builder().set_objects(Some(ids)).build().unwrap())
        .send()
        .await
        .unwrap();
    let deleted: Vec<_> = out
        .deleted()
        .iter()
        .map(|d| d.key().unwrap().to_string())
        .collect();
    assert_eq!(deleted, vec!["a", "b", "missing"]);
    assert_eq!(out.errors().len(), 1);
    assert_eq!(out.errors()[0].code().unwrap(), "KeyTooLongError");
    let left = c.list_objects_v2().bucket("bkt").send().await.unwrap();
    assert_eq!(left.contents().len(), 1);
    // Quiet mode reports only failures.
    let out = c
        .delete_objects()
        .bucket("bkt")
        .delete(
            Delete::builder()
                .objects(ObjectIdentifier::builder().key("c").build().unwrap())
                .quiet(true)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert!(out.deleted().is_empty());
    assert_eq!(
        c.list_objects_v2()
            .bucket("bkt")
            .send()
            .await
            .unwrap()
            .key_count(),
        Some(0)
    );
}

#[tokio::test]
async fn odd_keys_are_opaque_names() {
    let s = Server::start_exactly(4, &[]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let keys = [
        "../../etc/passwd",
        "a/../../../b",
        "/leading-slash",
        "./dot",
        "sp ace+plus&amp=eq?q#hash",
        "données/日本語/ファイル.txt",
        "%2e%2e/pct",
        "trailing/",
        "tab\there",
        &"k".repeat(1024),
    ];
    for (i, k) in keys.iter().enumerate() {
        put_bytes(&c, "bkt", k, format!("v{i}").into_bytes()).await;
    }
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            get_bytes(&c, "bkt", k).await,
            format!("v{i}").into_bytes(),
            "{k}"
        );
    }
    let mut listed: Vec<String> = c
        .list_objects_v2()
        .bucket("bkt")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .map(|o| o.key().unwrap().to_string())
        .collect();
    listed.sort();
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    // Nothing was written outside the data directories (but the unseal
    // key, made at the first start, and the test's own logs).
    let mut top: Vec<String> = std::fs::read_dir(s.root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        vec![
            "disk1",
            "disk2",
            "disk3",
            "disk4",
            "granary-unseal.key",
            "server.log",
            "server.out"
        ]
    );
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k".repeat(1025))
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "KeyTooLongError");
}

#[tokio::test]
async fn unsupported_options_are_refused_not_ignored() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    use aws_sdk_s3::types::{ObjectCannedAcl, ServerSideEncryption, StorageClass};
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    c.put_object()
        .bucket("bkt")
        .key("k")
        .acl(ObjectCannedAcl::Private)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap();
    c.put_object()
        .bucket("bkt")
        .key("k")
        .storage_class(StorageClass::Standard)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap();
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k2")
        .metadata("big", "x".repeat(2100))
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "MetadataTooLarge");
    let e = c
        .get_object_retention()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    assert_eq!(status(&e), 501);
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k3")
        .storage_class(StorageClass::Glacier)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidStorageClass");
    assert_eq!(status(&e), 400);
    // Response header overrides.
    let r = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .response_content_type("text/x-override")
        .response_content_disposition("inline")
        .send()
        .await
        .unwrap();
    assert_eq!(r.content_type().unwrap(), "text/x-override");
    assert_eq!(r.content_disposition().unwrap(), "inline");
}

#[tokio::test]
async fn acls_are_private_only() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl, Permission};
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"x".to_vec()).await;
    let b = c.get_bucket_acl().bucket("bkt").send().await.unwrap();
    let owner = b.owner().unwrap().id().unwrap().to_string();
    assert_eq!(b.grants().len(), 1);
    assert_eq!(b.grants()[0].permission(), Some(&Permission::FullControl));
    assert_eq!(b.grants()[0].grantee().unwrap().id(), Some(owner.as_str()));
    let o = c
        .get_object_acl()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(o.grants()[0].grantee().unwrap().id(), Some(owner.as_str()));
    // Setting private is accepted; anything wider is refused and changes
    // nothing.
    c.put_bucket_acl()
        .bucket("bkt")
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .unwrap();
    c.put_object_acl()
        .bucket("bkt")
        .key("k")
        .acl(ObjectCannedAcl::Private)
        .send()
        .await
        .unwrap();
    let e = c
        .put_object_acl()
        .bucket("bkt")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (501, "NotImplemented"));
    let e = c
        .put_bucket_acl()
        .bucket("bkt")
        .grant_read("uri=http://acs.amazonaws.com/groups/global/AllUsers")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    let r = send(
        http::Request::builder()
            .uri(format!("{}/bkt/k", s.endpoint))
            .body(Vec::new())
            .unwrap(),
    )
    .await;
    assert_eq!(r.code(), "AccessDenied", "still private");
    let e = c
        .get_object_acl()
        .bucket("bkt")
        .key("missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}
