//! Conditional writes: `If-None-Match: *` and `If-Match` on PutObject and
//! CompleteMultipartUpload, alone and with racing clients.

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;

use crate::harness::*;

#[tokio::test]
async fn if_none_match_and_if_match_on_put() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // Create-only: succeeds once, then 412.
    let first = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .if_none_match("*")
        .body(b"first".to_vec().into())
        .send()
        .await
        .unwrap();
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .if_none_match("*")
        .body(b"second".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"first");
    // If-None-Match with an ETag (beyond S3, as Ceph RGW and HTTP mean
    // it): refused while the current version has that ETag, else written.
    let current = first.e_tag().unwrap().to_string();
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .if_none_match(&current)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"first");
    c.put_object()
        .bucket("bkt")
        .key("other-etag")
        .if_none_match("\"0123456789abcdef0123456789abcdef\"")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap();

    // If-Match: the current ETag replaces; a stale one is refused.
    let etag1 = first.e_tag().unwrap().to_string();
    let second = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .if_match(&etag1)
        .body(b"second".to_vec().into())
        .send()
        .await
        .unwrap();
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .if_match(&etag1)
        .body(b"stale".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"second");
    assert_ne!(second.e_tag(), first.e_tag());
    // If-Match on a key that does not exist: 404 NoSuchKey.
    let e = c
        .put_object()
        .bucket("bkt")
        .key("missing")
        .if_match(&etag1)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"));
    // After a delete, create-only works again.
    c.delete_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    c.put_object()
        .bucket("bkt")
        .key("k")
        .if_none_match("*")
        .body(b"third".to_vec().into())
        .send()
        .await
        .unwrap();
}

async fn start_upload(c: &Client, key: &str, data: &[u8]) -> (String, CompletedMultipartUpload) {
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key(key)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_string();
    let p = c
        .upload_part()
        .bucket("bkt")
        .key(key)
        .upload_id(&id)
        .part_number(1)
        .body(data.to_vec().into())
        .send()
        .await
        .unwrap();
    let parts = CompletedMultipartUpload::builder()
        .parts(
            CompletedPart::builder()
                .part_number(1)
                .e_tag(p.e_tag().unwrap())
                .build(),
        )
        .build();
    (id, parts)
}

#[tokio::test]
async fn conditions_on_complete_multipart_upload() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // The key existed before the upload began: 412.
    let before = put_bytes(&c, "bkt", "k", b"before".to_vec()).await;
    let (id, parts) = start_upload(&c, "k", b"multipart").await;
    let complete = |cond: (&'static str, String)| {
        let b = c
            .complete_multipart_upload()
            .bucket("bkt")
            .key("k")
            .upload_id(&id)
            .multipart_upload(parts.clone());
        match cond.0 {
            "if-none-match" => b.if_none_match(cond.1),
            _ => b.if_match(cond.1),
        }
        .send()
    };
    let e = complete(("if-none-match", "*".into())).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    let e = complete(("if-match", "\"0123456789abcdef0123456789abcdef\"".into()))
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (412, "PreconditionFailed"));
    // Someone writes the key while the upload is open: S3 answers 409
    // ConditionalRequestConflict (restart the upload), even for the ETag the
    // client saw when it began.
    let during = put_bytes(&c, "bkt", "k", b"during".to_vec()).await;
    let e = complete(("if-match", before.e_tag().unwrap().into()))
        .await
        .unwrap_err();
    assert_eq!(
        (status(&e), code(&e).as_str()),
        (409, "ConditionalRequestConflict")
    );
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"during");
    // The upload survives failed preconditions and completes when the
    // condition holds.
    complete(("if-match", during.e_tag().unwrap().into()))
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"multipart");
}

#[tokio::test]
async fn racing_writers_exactly_one_wins() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    const RACERS: usize = 16;
    for round in 0..5 {
        let key = format!("race-{round}");
        // Create-only PUTs, all at once: one 200, the rest 412 (or 409 when
        // the winner committed while a loser was still being received).
        let tasks: Vec<_> = (0..RACERS)
            .map(|i| {
                let c = c.clone();
                let key = key.clone();
                tokio::spawn(async move {
                    let body = Pattern::bytes(i as u64, 256 << 10);
                    let r = c
                        .put_object()
                        .bucket("bkt")
                        .key(&key)
                        .if_none_match("*")
                        .body(body.clone().into())
                        .send()
                        .await;
                    (i, body, r.map_err(|e| (status(&e), code(&e))))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            let (i, body, r) = t.await.unwrap();
            match r {
                Ok(_) => winners.push((i, body)),
                Err((412, c)) => assert_eq!(c, "PreconditionFailed"),
                Err((409, c)) => assert_eq!(c, "ConditionalRequestConflict"),
                Err(other) => panic!("unexpected answer {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        assert_eq!(get_bytes(&c, "bkt", &key).await, winners[0].1);

        // If-Match racers all holding the same ETag: one replaces it.
        let etag = c
            .head_object()
            .bucket("bkt")
            .key(&key)
            .send()
            .await
            .unwrap()
            .e_tag()
            .unwrap()
            .to_string();
        let tasks: Vec<_> = (0..RACERS)
            .map(|i| {
                let (c, key, etag) = (c.clone(), key.clone(), etag.clone());
                tokio::spawn(async move {
                    let body = Pattern::bytes(1000 + i as u64, 64 << 10);
                    let r = c
                        .put_object()
                        .bucket("bkt")
                        .key(&key)
                        .if_match(etag)
                        .body(body.clone().into())
                        .send()
                        .await;
                    (body, r.map_err(|e| (status(&e), code(&e))))
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            let (body, r) = t.await.unwrap();
            match r {
                Ok(_) => winners.push(body),
                Err((412, _)) | Err((409, _)) => {}
                Err(other) => panic!("unexpected answer {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        assert_eq!(get_bytes(&c, "bkt", &key).await, winners[0]);
    }

    // Racing completions of different uploads of one key, create-only.
    let mut uploads = Vec::new();
    for i in 0..6u8 {
        uploads.push(start_upload(&c, "mp", &[i; 1000]).await);
    }
    let tasks: Vec<_> = uploads
        .into_iter()
        .map(|(id, parts)| {
            let c = c.clone();
            tokio::spawn(async move {
                c.complete_multipart_upload()
                    .bucket("bkt")
                    .key("mp")
                    .upload_id(id)
                    .if_none_match("*")
                    .multipart_upload(parts)
                    .send()
                    .await
                    .map_err(|e| status(&e))
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(s) => assert!(s == 412 || s == 409, "status {s}"),
        }
    }
    assert_eq!(ok, 1);
}
