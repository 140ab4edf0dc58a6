use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use md5::{Digest, Md5};

use crate::harness::*;

const MIB: usize = 1 << 20;

async fn upload(
    c: &aws_sdk_s3::Client,
    key: &str,
    parts: &[Vec<u8>],
) -> (String, Vec<CompletedPart>) {
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key(key)
        .content_type("application/x-mp")
        .metadata("m", "1")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_string();
    let mut done = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let r = c
            .upload_part()
            .bucket("bkt")
            .key(key)
            .upload_id(&id)
            .part_number(i as i32 + 1)
            .body(p.clone().into())
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.e_tag().unwrap(),
            format!("\"{}\"", hex::encode(Md5::digest(p)))
        );
        done.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(r.e_tag().unwrap())
                .build(),
        );
    }
    (id, done)
}

#[tokio::test]
async fn three_parts_with_a_one_byte_tail() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let parts = vec![
        Pattern::bytes(1, 5 * MIB),
        Pattern::bytes(2, 5 * MIB + 3),
        vec![42u8],
    ];
    let (id, done) = upload(&c, "mp", &parts).await;

    let listed = c
        .list_parts()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.parts().len(), 3);
    assert_eq!(listed.parts()[2].size(), Some(1));
    let page = c
        .list_parts()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .max_parts(2)
        .send()
        .await
        .unwrap();
    assert_eq!(page.parts().len(), 2);
    assert!(page.is_truncated().unwrap());
    let rest = c
        .list_parts()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .part_number_marker(page.next_part_number_marker().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(rest.parts().len(), 1);
    let ups = c
        .list_multipart_uploads()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert_eq!(ups.uploads().len(), 1);
    assert_eq!(ups.uploads()[0].upload_id().unwrap(), id);

    let out = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let mut h = Md5::new();
    for p in &parts {
        h.update(Md5::digest(p));
    }
    let etag = format!("\"{}-3\"", hex::encode(h.finalize()));
    assert_eq!(out.e_tag().unwrap(), etag);

    let whole: Vec<u8> = parts.concat();
    let got = c.get_object().bucket("bkt").key("mp").send().await.unwrap();
    assert_eq!(got.e_tag().unwrap(), etag);
    assert_eq!(got.content_type().unwrap(), "application/x-mp");
    assert_eq!(got.metadata().unwrap().get("m").unwrap(), "1");
    assert_eq!(
        got.body.collect().await.unwrap().into_bytes().to_vec(),
        whole
    );
    // Parts as parallel downloaders fetch them.
    let head = c
        .head_object()
        .bucket("bkt")
        .key("mp")
        .part_number(2)
        .send()
        .await
        .unwrap();
    assert_eq!(head.parts_count(), Some(3));
    assert_eq!(head.content_length(), Some(5 * MIB as i64 + 3));
    let p3 = c
        .get_object()
        .bucket("bkt")
        .key("mp")
        .part_number(3)
        .send()
        .await
        .unwrap();
    assert_eq!(p3.parts_count(), Some(3));
    assert_eq!(
        p3.content_range().unwrap(),
        format!(
            "bytes {}-{}/{}",
            whole.len() - 1,
            whole.len() - 1,
            whole.len()
        )
    );
    assert_eq!(
        p3.body.collect().await.unwrap().into_bytes().to_vec(),
        vec![42u8]
    );
    let e = c
        .get_object()
        .bucket("bkt")
        .key("mp")
        .part_number(4)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPartNumber");
    // A range across the part boundary.
    let r = c
        .get_object()
        .bucket("bkt")
        .key("mp")
        .range(format!("bytes={}-{}", 5 * MIB - 2, 5 * MIB + 1))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.body.collect().await.unwrap().into_bytes().to_vec(),
        &whole[5 * MIB - 2..5 * MIB + 2]
    );
    // The upload is gone.
    let e = c
        .list_parts()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    assert!(c
        .list_multipart_uploads()
        .bucket("bkt")
        .send()
        .await
        .unwrap()
        .uploads()
        .is_empty());
}

#[tokio::test]
async fn completion_rules() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let complete = |id: String, parts: Vec<CompletedPart>| {
        let c = c.clone();
        async move {
            c.complete_multipart_upload()
                .bucket("bkt")
                .key("k")
                .upload_id(id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
        }
    };
    // Too small a non-final part.
    let (id, done) = upload(&c, "k", &[vec![1u8; MIB], vec![2u8; 10]]).await;
    let e = complete(id.clone(), done.clone()).await.unwrap_err();
    assert_eq!(code(&e), "EntityTooSmall");
    // Out of order.
    let e = complete(id.clone(), vec![done[1].clone(), done[0].clone()])
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPartOrder");
    // Wrong ETag.
    let bad = CompletedPart::builder()
        .part_number(1)
        .e_tag("\"00000000000000000000000000000000\"")
        .build();
    let e = complete(id.clone(), vec![bad]).await.unwrap_err();
    assert_eq!(code(&e), "InvalidPart");
    // Missing part.
    let missing = CompletedPart::builder()
        .part_number(9)
        .e_tag(done[0].e_tag().unwrap())
        .build();
    let e = complete(id.clone(), vec![missing]).await.unwrap_err();
    assert_eq!(code(&e), "InvalidPart");
    // A subset that is valid: only part 2 (the last may be small).
    complete(id.clone(), vec![done[1].clone()]).await.unwrap();
    assert_eq!(get_bytes(&c, "bkt", "k").await, vec![2u8; 10]);
    // Unknown upload ids.
    let e = complete("0123".into(), done.clone()).await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    let e = c
        .abort_multipart_upload()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    // Abort.
    let (id, _) = upload(&c, "gone", &[vec![3u8; 100]]).await;
    c.abort_multipart_upload()
        .bucket("bkt")
        .key("gone")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    let e = c
        .list_parts()
        .bucket("bkt")
        .key("gone")
        .upload_id(&id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    let e = c
        .upload_part()
        .bucket("bkt")
        .key("gone")
        .upload_id(&id)
        .part_number(1)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    let e = c
        .upload_part()
        .bucket("bkt")
        .key("gone")
        .upload_id(&id)
        .part_number(10_001)
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // Malformed completion document.
    let (id, _) = upload(&c, "xml", &[vec![4u8; 100]]).await;
    let r = Raw::new("POST", format!("{}/bkt/xml?uploadId={id}", s.endpoint))
        .body(b"<CompleteMultipartUpload><Part><PartNumber>1".to_vec())
        .send()
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "MalformedXML");
    // Uploads listing with prefix and delimiter.
    upload(&c, "dir/a", &[vec![1u8]]).await;
    upload(&c, "dir/b", &[vec![1u8]]).await;
    let l = c
        .list_multipart_uploads()
        .bucket("bkt")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert_eq!(l.common_prefixes().len(), 1);
    assert_eq!(l.uploads().len(), 1);
    let l = c
        .list_multipart_uploads()
        .bucket("bkt")
        .prefix("dir/")
        .send()
        .await
        .unwrap();
    assert_eq!(l.uploads().len(), 2);
}
