//! Operations Granary does not serve answer 501 NotImplemented — never a
//! misrouted success — and change nothing.

use crate::harness::*;

#[tokio::test]
async fn unsupported_operations_answer_not_implemented() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"kept".to_vec()).await;
    let bucket_subresources = [
        "policyStatus",
        "website",
        "logging",
        "notification",
        "replication",
        "encryption",
        "object-lock",
        "publicAccessBlock",
        "ownershipControls",
        "intelligent-tiering",
        "analytics",
        "metrics",
        "inventory",
        "accelerate",
        "requestPayment",
        "metadataTable",
        "metadataConfiguration",
        "metadataAnnotationTable",
        "metadataInventoryTable",
        "metadataJournalTable",
        "abac",
        "session",
    ];
    for sub in bucket_subresources {
        for method in ["GET", "PUT", "DELETE"] {
            let r = Raw::new(method, format!("{}/bkt?{sub}", s.endpoint))
                .body(b"<x/>".to_vec())
                .send()
                .await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (501, "NotImplemented"),
                "{method} ?{sub}"
            );
        }
    }
    let object_subresources = [
        "retention",
        "legal-hold",
        "torrent",
        "restore",
        "select",
        "annotation",
        "renameObject",
        "encryption",
    ];
    for sub in object_subresources {
        for method in ["GET", "PUT", "POST", "DELETE"] {
            if sub == "restore" && method == "POST" {
                // RestoreObject (see tiers.rs).
                continue;
            }
            let r = Raw::new(method, format!("{}/bkt/k?{sub}", s.endpoint))
                .header("x-amz-rename-source", "/bkt/other")
                .body(b"<x/>".to_vec())
                .send()
                .await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (501, "NotImplemented"),
                "{method} ?{sub}"
            );
        }
    }
    let r = Raw::new("GET", format!("{}/?x-id=ListDirectoryBuckets", s.endpoint))
        .send()
        .await;
    assert_eq!(r.code(), "NotImplemented");
    // Nothing changed.
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"kept");
    let l = c.list_objects_v2().bucket("bkt").send().await.unwrap();
    assert_eq!(l.key_count(), Some(1));
    let b = c.list_buckets().send().await.unwrap();
    assert_eq!(b.buckets().len(), 1);
}

#[tokio::test]
async fn an_append_is_refused_and_leaves_the_object_as_it_was() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("logs").send().await.unwrap();
    put_bytes(&c, "logs", "journal", b"hello".to_vec()).await;
    let e = c
        .put_object()
        .bucket("logs")
        .key("journal")
        .write_offset_bytes(5)
        .body(b" world".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (501, "NotImplemented"));
    assert_eq!(get_bytes(&c, "logs", "journal").await, b"hello");
    // Nor does it create a key that did not exist.
    let e = c
        .put_object()
        .bucket("logs")
        .key("new")
        .write_offset_bytes(0)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    assert!(c
        .head_object()
        .bucket("logs")
        .key("new")
        .send()
        .await
        .is_err());
}

#[tokio::test]
async fn headers_no_handler_reads_are_honoured_or_refused() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"data".to_vec()).await;
    let owner = c
        .list_buckets()
        .send()
        .await
        .unwrap()
        .owner()
        .unwrap()
        .id()
        .unwrap()
        .to_string();
    // The expected bucket owner is checked.
    c.put_object()
        .bucket("bkt")
        .key("mine")
        .expected_bucket_owner(&owner)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .expected_bucket_owner("111122223333")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (403, "AccessDenied"));
    let e = c
        .copy_object()
        .bucket("bkt")
        .key("copy")
        .copy_source("bkt/k")
        .expected_source_bucket_owner("111122223333")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // Options Granary does not have are refused on every operation.
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .sse_customer_algorithm("AES256")
        .sse_customer_key("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
        .sse_customer_key_md5("zZ0sS6upX4JLO0OuTvqxgg==")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (501, "NotImplemented"));
    let e = c
        .delete_object()
        .bucket("bkt")
        .key("k")
        .mfa("arn:aws:iam::1:mfa/x 123456")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"data");
    // The expected size of a completed upload is checked before it is made.
    let id = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_string();
    let etag = c
        .upload_part()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .part_number(1)
        .body(b"12345".to_vec().into())
        .send()
        .await
        .unwrap()
        .e_tag()
        .unwrap()
        .to_string();
    let done = || {
        aws_sdk_s3::types::CompletedMultipartUpload::builder()
            .parts(
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(1)
                    .e_tag(&etag)
                    .build(),
            )
            .build()
    };
    let e = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .mpu_object_size(6)
        .multipart_upload(done())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .mpu_object_size(5)
        .multipart_upload(done())
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "bkt", "mp").await, b"12345");
}
