use aws_sdk_s3::types::MetadataDirective;

use crate::harness::*;

#[tokio::test]
async fn copy_object_directives_and_conditions() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("src").send().await.unwrap();
    c.create_bucket().bucket("dst").send().await.unwrap();
    let data = Pattern::bytes(5, 3_000_001);
    c.put_object()
        .bucket("src")
        .key("a b")
        .body(data.clone().into())
        .content_type("text/x-src")
        .metadata("m", "src")
        .send()
        .await
        .unwrap();
    let etag = c
        .head_object()
        .bucket("src")
        .key("a b")
        .send()
        .await
        .unwrap()
        .e_tag()
        .unwrap()
        .to_string();

    // COPY keeps the metadata.
    let out = c
        .copy_object()
        .bucket("dst")
        .key("copy")
        .copy_source("src/a%20b")
        .send()
        .await
        .unwrap();
    assert_eq!(out.copy_object_result().unwrap().e_tag().unwrap(), etag);
    let h = c
        .head_object()
        .bucket("dst")
        .key("copy")
        .send()
        .await
        .unwrap();
    assert_eq!(h.content_type().unwrap(), "text/x-src");
    assert_eq!(h.metadata().unwrap().get("m").unwrap(), "src");
    assert_eq!(get_bytes(&c, "dst", "copy").await, data);

    // REPLACE takes the request's metadata; copying onto itself needs it.
    let e = c
        .copy_object()
        .bucket("src")
        .key("a b")
        .copy_source("src/a%20b")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.copy_object()
        .bucket("src")
        .key("a b")
        .copy_source("src/a%20b")
        .metadata_directive(MetadataDirective::Replace)
        .content_type("text/x-new")
        .metadata("m", "new")
        .send()
        .await
        .unwrap();
    let h = c
        .head_object()
        .bucket("src")
        .key("a b")
        .send()
        .await
        .unwrap();
    assert_eq!(h.content_type().unwrap(), "text/x-new");
    assert_eq!(h.metadata().unwrap().get("m").unwrap(), "new");
    assert_eq!(get_bytes(&c, "src", "a b").await, data);

    // Conditions on the source.
    let e = c
        .copy_object()
        .bucket("dst")
        .key("c2")
        .copy_source("src/a%20b")
        .copy_source_if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    let e = c
        .copy_object()
        .bucket("dst")
        .key("c2")
        .copy_source("src/a%20b")
        .copy_source_if_none_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "PreconditionFailed");
    c.copy_object()
        .bucket("dst")
        .key("c2")
        .copy_source("src/a%20b")
        .copy_source_if_match(&etag)
        .send()
        .await
        .unwrap();
    // Missing sources.
    let e = c
        .copy_object()
        .bucket("dst")
        .key("c3")
        .copy_source("src/none")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let e = c
        .copy_object()
        .bucket("dst")
        .key("c3")
        .copy_source("nobucket/x")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    let e = c
        .copy_object()
        .bucket("dst")
        .key("c3")
        .copy_source("justbucket")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
}

#[tokio::test]
async fn upload_part_copy_with_ranges() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let src = Pattern::bytes(21, 11 << 20);
    put_bytes(&c, "bkt", "src", src.clone()).await;
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("dst")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let p1 = c
        .upload_part_copy()
        .bucket("bkt")
        .key("dst")
        .upload_id(id)
        .part_number(1)
        .copy_source("bkt/src")
        .copy_source_range("bytes=0-5242879")
        .send()
        .await
        .unwrap();
    let p2 = c
        .upload_part_copy()
        .bucket("bkt")
        .key("dst")
        .upload_id(id)
        .part_number(2)
        .copy_source("bkt/src")
        .copy_source_range(format!("bytes=6000000-{}", src.len() - 1))
        .send()
        .await
        .unwrap();
    let e = c
        .upload_part_copy()
        .bucket("bkt")
        .key("dst")
        .upload_id(id)
        .part_number(3)
        .copy_source("bkt/src")
        .copy_source_range(format!("bytes=0-{}", src.len()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    let part = |n: i32, r: &aws_sdk_s3::types::CopyPartResult| {
        CompletedPart::builder()
            .part_number(n)
            .e_tag(r.e_tag().unwrap())
            .build()
    };
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("dst")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(part(1, p1.copy_part_result().unwrap()))
                .parts(part(2, p2.copy_part_result().unwrap()))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let want = [&src[..5_242_880], &src[6_000_000..]].concat();
    assert_eq!(get_bytes(&c, "bkt", "dst").await, want);
}

#[tokio::test]
async fn copy_object_refuses_sources_over_5_gib() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    const FIVE_GIB: u64 = 5 << 30;
    let s = Server::start_with(1, &["--unsafe-no-fsync"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // A 5 GiB + 1 byte object: one maximal part and a one-byte tail.
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("huge")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let mut parts = CompletedMultipartUpload::builder();
    for (n, len) in [(1, FIVE_GIB), (2, 1)] {
        let p = c
            .upload_part()
            .bucket("bkt")
            .key("huge")
            .upload_id(id)
            .part_number(n)
            .content_length(len as i64)
            .body(generated_body(len, 5))
            .send()
            .await
            .unwrap();
        parts = parts.parts(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(p.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("huge")
        .upload_id(id)
        .multipart_upload(parts.build())
        .send()
        .await
        .unwrap();
    let e = c
        .copy_object()
        .bucket("bkt")
        .key("copy")
        .copy_source("bkt/huge")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidRequest"));
    assert!(format!("{e:?}").contains("5368709120"));
    // The way S3 asks for instead: UploadPartCopy of ranges.
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("tail")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let p = c
        .upload_part_copy()
        .bucket("bkt")
        .key("tail")
        .upload_id(id)
        .part_number(1)
        .copy_source("bkt/huge")
        .copy_source_range(format!("bytes={}-{}", FIVE_GIB - 99, FIVE_GIB))
        .send()
        .await
        .unwrap();
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("tail")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(p.copy_part_result().unwrap().e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    // The last 99 bytes of part 1, then part 2's one byte.
    let mut pattern = Pattern::new(5);
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..FIVE_GIB >> 20 {
        pattern.fill(&mut chunk);
    }
    let mut want = chunk[chunk.len() - 99..].to_vec();
    want.extend(Pattern::bytes(5, 1));
    assert_eq!(get_bytes(&c, "bkt", "tail").await, want);
}
