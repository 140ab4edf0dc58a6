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
