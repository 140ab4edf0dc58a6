//! Flexible checksums of multipart uploads: COMPOSITE (`-N`) and
//! FULL_OBJECT, validated on upload and completion, returned on HEAD/GET
//! and by GetObjectAttributes. Expected values are computed here with
//! independent implementations.

use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart,
    ObjectAttributes,
};
use aws_sdk_s3::Client;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use crc_fast::CrcAlgorithm;
use sha1::Digest as _;

use crate::harness::*;

fn digest(alg: &ChecksumAlgorithm, data: &[u8]) -> Vec<u8> {
    let crc = |a, width: usize| crc_fast::checksum(a, data).to_be_bytes()[8 - width..].to_vec();
    match alg {
        ChecksumAlgorithm::Crc32 => crc(CrcAlgorithm::Crc32IsoHdlc, 4),
        ChecksumAlgorithm::Crc32C => crc(CrcAlgorithm::Crc32Iscsi, 4),
        ChecksumAlgorithm::Crc64Nvme => crc(CrcAlgorithm::Crc64Nvme, 8),
        ChecksumAlgorithm::Sha1 => sha1::Sha1::digest(data).to_vec(),
        _ => <sha2::Sha256 as sha1::Digest>::digest(data).to_vec(),
    }
}

fn b64(alg: &ChecksumAlgorithm, data: &[u8]) -> String {
    B64.encode(digest(alg, data))
}

/// HEAD of `bkt/key` with checksum mode on.
async fn head_with_checksum(
    c: &Client,
    key: &str,
) -> aws_sdk_s3::operation::head_object::HeadObjectOutput {
    c.head_object()
        .bucket("bkt")
        .key(key)
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap()
}

/// The value a response carries for `alg`.
macro_rules! value_of {
    ($r:expr, $alg:expr) => {
        match $alg {
            ChecksumAlgorithm::Crc32 => $r.checksum_crc32(),
            ChecksumAlgorithm::Crc32C => $r.checksum_crc32_c(),
            ChecksumAlgorithm::Crc64Nvme => $r.checksum_crc64_nvme(),
            ChecksumAlgorithm::Sha1 => $r.checksum_sha1(),
            _ => $r.checksum_sha256(),
        }
        .map(str::to_string)
    };
}

fn completed(n: i32, etag: &str, alg: &ChecksumAlgorithm, value: Option<String>) -> CompletedPart {
    let b = CompletedPart::builder().part_number(n).e_tag(etag);
    match alg {
        ChecksumAlgorithm::Crc32 => b.set_checksum_crc32(value),
        ChecksumAlgorithm::Crc32C => b.set_checksum_crc32_c(value),
        ChecksumAlgorithm::Crc64Nvme => b.set_checksum_crc64_nvme(value),
        ChecksumAlgorithm::Sha1 => b.set_checksum_sha1(value),
        _ => b.set_checksum_sha256(value),
    }
    .build()
}

/// Uploads `parts` with `alg`/`kind`; returns (upload id, part etags).
async fn upload_parts(
    c: &Client,
    key: &str,
    alg: &ChecksumAlgorithm,
    kind: &ChecksumType,
    parts: &[Vec<u8>],
) -> (String, Vec<String>) {
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key(key)
        .checksum_algorithm(alg.clone())
        .checksum_type(kind.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(up.checksum_algorithm(), Some(alg));
    assert_eq!(up.checksum_type(), Some(kind));
    let id = up.upload_id().unwrap().to_string();
    let mut etags = Vec::new();
    for (i, data) in parts.iter().enumerate() {
        let r = c
            .upload_part()
            .bucket("bkt")
            .key(key)
            .upload_id(&id)
            .part_number(i as i32 + 1)
            .checksum_algorithm(alg.clone())
            .body(data.clone().into())
            .send()
            .await
            .unwrap();
        assert_eq!(value_of!(r, alg), Some(b64(alg, data)), "{alg:?} part {i}");
        etags.push(r.e_tag().unwrap().to_string());
    }
    (id, etags)
}

#[tokio::test]
async fn multipart_checksums_composite_and_full_object() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let parts = vec![Pattern::bytes(1, 5 << 20), Pattern::bytes(2, 1000)];
    let whole = parts.concat();
    let cases = [
        (ChecksumAlgorithm::Crc32, ChecksumType::Composite),
        (ChecksumAlgorithm::Crc32, ChecksumType::FullObject),
        (ChecksumAlgorithm::Crc32C, ChecksumType::Composite),
        (ChecksumAlgorithm::Crc32C, ChecksumType::FullObject),
        (ChecksumAlgorithm::Crc64Nvme, ChecksumType::FullObject),
        (ChecksumAlgorithm::Sha1, ChecksumType::Composite),
        (ChecksumAlgorithm::Sha256, ChecksumType::Composite),
    ];
    for (alg, kind) in cases {
        let key = format!("{}-{}", alg.as_str(), kind.as_str());
        let (id, etags) = upload_parts(&c, &key, &alg, &kind, &parts).await;
        let want = if kind == ChecksumType::Composite {
            let raw: Vec<u8> = parts.iter().flat_map(|p| digest(&alg, p)).collect();
            format!("{}-{}", b64(&alg, &raw), parts.len())
        } else {
            b64(&alg, &whole)
        };
        let body = CompletedMultipartUpload::builder()
            .parts(completed(1, &etags[0], &alg, Some(b64(&alg, &parts[0]))))
            .parts(completed(2, &etags[1], &alg, Some(b64(&alg, &parts[1]))))
            .build();
        let done = c
            .complete_multipart_upload()
            .bucket("bkt")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(body)
            .send()
            .await
            .unwrap();
        assert_eq!(value_of!(done, &alg), Some(want.clone()), "{key}");
        assert_eq!(done.checksum_type(), Some(&kind), "{key}");

        let h = head_with_checksum(&c, &key).await;
        assert_eq!(value_of!(h, &alg), Some(want.clone()), "{key}");
        assert_eq!(h.checksum_type(), Some(&kind), "{key}");
        // Without checksum mode no checksum is shown.
        let h = c
            .head_object()
            .bucket("bkt")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(value_of!(h, &alg), None);
        // A part read with checksum mode carries that part's checksum and
        // the object's type when the object's checksum is COMPOSITE (the
        // SDK validates it against the bytes it receives); a FULL_OBJECT
        // object's part has none, as on S3.
        let g = c
            .get_object()
            .bucket("bkt")
            .key(&key)
            .part_number(2)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        if kind == ChecksumType::Composite {
            assert_eq!(value_of!(g, &alg), Some(b64(&alg, &parts[1])), "{key}");
            assert_eq!(g.checksum_type(), Some(&ChecksumType::Composite), "{key}");
        } else {
            assert_eq!(value_of!(g, &alg), None, "{key}");
        }
        assert_eq!(g.parts_count(), Some(2));
        let got = g.body.collect().await.unwrap().into_bytes();
        assert_eq!(&got[..], &parts[1][..]);
        let g = c
            .get_object()
            .bucket("bkt")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        assert_eq!(
            g.body.collect().await.unwrap().into_bytes().len(),
            whole.len()
        );

        let a = c
            .get_object_attributes()
            .bucket("bkt")
            .key(&key)
            .object_attributes(ObjectAttributes::Etag)
            .object_attributes(ObjectAttributes::Checksum)
            .object_attributes(ObjectAttributes::ObjectParts)
            .object_attributes(ObjectAttributes::StorageClass)
            .object_attributes(ObjectAttributes::ObjectSize)
            .send()
            .await
            .unwrap();
        assert_eq!(a.object_size(), Some(whole.len() as i64));
        assert_eq!(a.storage_class().map(|s| s.as_str()), Some("STANDARD"));
        assert!(a.e_tag().unwrap().ends_with("-2"));
        assert!(
            !a.e_tag().unwrap().starts_with('"'),
            "ETag is unquoted here"
        );
        let ck = a.checksum().unwrap();
        assert_eq!(value_of!(ck, &alg), Some(want.clone()), "{key}");
        assert_eq!(ck.checksum_type(), Some(&kind));
        let op = a.object_parts().unwrap();
        assert_eq!(op.total_parts_count(), Some(2));
        let listed: Vec<_> = op
            .parts()
            .iter()
            .map(|p| (p.part_number(), p.size()))
            .collect();
        assert_eq!(
            listed,
            vec![(Some(1), Some(5 << 20)), (Some(2), Some(1000))]
        );
        if kind == ChecksumType::Composite {
            let p = &op.parts()[1];
            assert_eq!(value_of!(p, &alg), Some(b64(&alg, &parts[1])));
        }
    }
}

#[tokio::test]
async fn bad_checksums_are_refused_and_change_nothing() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let alg = ChecksumAlgorithm::Crc32C;
    let parts = vec![Pattern::bytes(3, 5 << 20), Pattern::bytes(4, 10)];
    let (id, etags) = upload_parts(&c, "k", &alg, &ChecksumType::FullObject, &parts).await;

    // A part whose declared checksum is wrong: BadDigest, the part unchanged.
    let e = c
        .upload_part()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .part_number(2)
        .checksum_crc32_c("AAAAAA==")
        .body(b"other bytes".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "BadDigest"));
    // A part with another algorithm than the upload's.
    let e = c
        .upload_part()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .part_number(2)
        .checksum_algorithm(ChecksumAlgorithm::Sha256)
        .body(b"other bytes".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let listed = c
        .list_parts()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.parts()[1].size(), Some(10));
    assert_eq!(
        listed.parts()[1].checksum_crc32_c(),
        Some(b64(&alg, &parts[1]).as_str())
    );

    // Completion naming a wrong part checksum: InvalidPart.
    let e = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(completed(1, &etags[0], &alg, Some(b64(&alg, b"x"))))
                .parts(completed(2, &etags[1], &alg, None))
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPart");
    // A wrong full-object checksum: BadDigest.
    let e = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .checksum_crc32_c(b64(&alg, b"not the object"))
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(completed(1, &etags[0], &alg, None))
                .parts(completed(2, &etags[1], &alg, None))
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    let e = c
        .head_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "nothing became visible");
    // The right full-object checksum completes it.
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("k")
        .upload_id(&id)
        .checksum_crc32_c(b64(&alg, &parts.concat()))
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(completed(1, &etags[0], &alg, None))
                .parts(completed(2, &etags[1], &alg, None))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "bkt", "k").await, parts.concat());

    // Type/algorithm combinations S3 refuses.
    for (alg, kind) in [
        (ChecksumAlgorithm::Sha256, ChecksumType::FullObject),
        (ChecksumAlgorithm::Crc64Nvme, ChecksumType::Composite),
    ] {
        let e = c
            .create_multipart_upload()
            .bucket("bkt")
            .key("x")
            .checksum_algorithm(alg)
            .checksum_type(kind)
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), "InvalidRequest");
    }
    // A single PUT with a wrong checksum leaves the stored object alone.
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .checksum_sha256(b64(&ChecksumAlgorithm::Sha256, b"something else"))
        .body(b"new".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    assert_eq!(get_bytes(&c, "bkt", "k").await, parts.concat());
}

/// A COMPOSITE upload's checksum is computed from the part checksums the
/// Complete body names, so S3 requires each of them, in the upload's
/// algorithm: one missing is 400 InvalidRequest. Every checksum a part
/// names is checked, so one of another algorithm beside the part's own
/// (which it cannot match) is 400 InvalidPart. Nothing completes.
#[tokio::test]
async fn a_composite_complete_must_name_every_parts_checksum() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let alg = ChecksumAlgorithm::Crc32;
    let parts = vec![Pattern::bytes(5, 5 << 20), Pattern::bytes(6, 10)];
    let (id, etags) = upload_parts(&c, "k", &alg, &ChecksumType::Composite, &parts).await;
    let complete = |second: CompletedPart| {
        c.complete_multipart_upload()
            .bucket("bkt")
            .key("k")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(completed(1, &etags[0], &alg, Some(b64(&alg, &parts[0]))))
                    .parts(second)
                    .build(),
            )
            .send()
    };
    let sha256 = ChecksumAlgorithm::Sha256;
    let missing = [
        completed(2, &etags[1], &alg, None),
        // Only another algorithm's: the upload's is still missing.
        completed(2, &etags[1], &sha256, Some(b64(&sha256, &parts[1]))),
    ];
    for part in missing {
        let e = complete(part).await.unwrap_err();
        assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidRequest"));
        assert_eq!(
            e.as_service_error().and_then(|e| e.meta().message()),
            Some(
                "The upload was created using a crc32 checksum. The complete request must include \
                 the checksum for each part. It was missing for part 2 in the request."
            )
        );
    }
    // The right CRC32 and a wrong SHA256 (checked after it: the first
    // named was all that was checked before).
    let both = CompletedPart::builder()
        .part_number(2)
        .e_tag(&etags[1])
        .checksum_crc32(b64(&alg, &parts[1]))
        .checksum_sha256(b64(&sha256, b"other"))
        .build();
    let e = complete(both).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidPart"));
    let head = c.head_object().bucket("bkt").key("k").send().await;
    assert!(head.is_err(), "nothing completed");
    let done = complete(completed(2, &etags[1], &alg, Some(b64(&alg, &parts[1]))))
        .await
        .unwrap();
    assert!(done.checksum_crc32().unwrap().ends_with("-2"));
}

#[tokio::test]
async fn a_copy_computes_stores_and_returns_the_checksum_it_is_asked_for() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(5, (1 << 20) + 333);
    c.put_object()
        .bucket("bkt")
        .key("src")
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .body(data.clone().into())
        .send()
        .await
        .unwrap();
    for alg in [
        ChecksumAlgorithm::Sha256,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Crc64Nvme,
    ] {
        let key = format!("copy-{}", alg.as_str());
        let out = c
            .copy_object()
            .bucket("bkt")
            .key(&key)
            .copy_source("bkt/src")
            .checksum_algorithm(alg.clone())
            .send()
            .await
            .unwrap();
        let r = out.copy_object_result().unwrap();
        assert_eq!(value_of!(r, &alg), Some(b64(&alg, &data)), "{alg:?}");
        assert_eq!(r.checksum_type(), Some(&ChecksumType::FullObject));
        let h = head_with_checksum(&c, &key).await;
        assert_eq!(value_of!(h, &alg), Some(b64(&alg, &data)), "{alg:?} stored");
    }
    // Without the header the copy keeps the source's algorithm.
    let out = c
        .copy_object()
        .bucket("bkt")
        .key("same")
        .copy_source("bkt/src")
        .send()
        .await
        .unwrap();
    let r = out.copy_object_result().unwrap();
    assert_eq!(
        r.checksum_crc32(),
        Some(b64(&ChecksumAlgorithm::Crc32, &data).as_str())
    );
    // An algorithm S3 does not define is refused.
    let e = c
        .copy_object()
        .bucket("bkt")
        .key("bad")
        .copy_source("bkt/src")
        .checksum_algorithm(ChecksumAlgorithm::from("MD4"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");

    // A multipart source: the copy's checksum covers the whole object.
    let parts = vec![Pattern::bytes(6, 5 << 20), Pattern::bytes(7, 1000)];
    let (id, etags) = upload_parts(
        &c,
        "mp",
        &ChecksumAlgorithm::Crc32,
        &ChecksumType::Composite,
        &parts,
    )
    .await;
    let done = CompletedMultipartUpload::builder()
        .set_parts(Some(
            etags
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let value = b64(&ChecksumAlgorithm::Crc32, &parts[i]);
                    completed(i as i32 + 1, e, &ChecksumAlgorithm::Crc32, Some(value))
                })
                .collect(),
        ))
        .build();
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(&id)
        .multipart_upload(done)
        .send()
        .await
        .unwrap();
    let whole = parts.concat();
    let out = c
        .copy_object()
        .bucket("bkt")
        .key("mp-copy")
        .copy_source("bkt/mp")
        .checksum_algorithm(ChecksumAlgorithm::Sha256)
        .send()
        .await
        .unwrap();
    let r = out.copy_object_result().unwrap();
    assert_eq!(
        r.checksum_sha256(),
        Some(b64(&ChecksumAlgorithm::Sha256, &whole).as_str())
    );
    assert_eq!(r.checksum_type(), Some(&ChecksumType::FullObject));

    // UploadPartCopy returns the part's checksum in the upload's algorithm.
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("assembled")
        .checksum_algorithm(ChecksumAlgorithm::Sha256)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let part = c
        .upload_part_copy()
        .bucket("bkt")
        .key("assembled")
        .upload_id(id)
        .part_number(1)
        .copy_source("bkt/src")
        .send()
        .await
        .unwrap();
    let r = part.copy_part_result().unwrap();
    assert_eq!(
        r.checksum_sha256(),
        Some(b64(&ChecksumAlgorithm::Sha256, &data).as_str())
    );
}

#[tokio::test]
async fn checksum_algorithms_not_computed_yet_are_refused_not_ignored() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    for name in ["sha512", "md5", "xxhash64", "xxhash3", "xxhash128"] {
        let key = format!("with-{name}");
        let r = Raw::new("PUT", format!("{}/bkt/{key}", s.endpoint))
            .header(format!("x-amz-checksum-{name}").leak(), "AAAAAAAAAAA=")
            .body(b"data".to_vec())
            .send()
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (400, "InvalidRequest"),
            "{name}: {}",
            r.text()
        );
        let r = Raw::new("POST", format!("{}/bkt/{key}?uploads", s.endpoint))
            .header("x-amz-checksum-algorithm", name.to_uppercase())
            .send()
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (400, "InvalidRequest"),
            "{name}: {}",
            r.text()
        );
        assert!(c
            .head_object()
            .bucket("bkt")
            .key(&key)
            .send()
            .await
            .is_err());
    }
}

/// The digests sent with a configuration or tag-set document are checked:
/// a Content-MD5 or `x-amz-checksum-*` header that does not match the body
/// is BadDigest and the document is not applied; a matching one is taken.
#[tokio::test]
async fn document_digests_are_checked_and_a_mismatch_applies_nothing() {
    let sha256 = |d: &str| B64.encode(digest(&ChecksumAlgorithm::Sha256, d.as_bytes()));
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"x".to_vec()).await;
    let tags = "<Tagging><TagSet><Tag><Key>team</Key><Value>a</Value></Tag></TagSet></Tagging>";
    let cors = "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>";
    let documents = [
        ("bkt?tagging", tags.to_string()),
        ("bkt/k?tagging", tags.to_string()),
        ("bkt?cors", cors.to_string()),
        ("bkt?versioning", "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>".to_string()),
        ("bkt?policy", r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/never/*"}]}"#.to_string()),
    ];
    for (path, doc) in &documents {
        let url = format!("{}/{path}", s.endpoint);
        let other = format!("{doc} ");
        for (name, value) in [
            ("content-md5", content_md5(other.as_bytes())),
            ("x-amz-checksum-sha256", sha256(&other)),
        ] {
            let r = Raw::new("PUT", url.clone())
                .header(name, value)
                .body(doc.clone().into_bytes())
                .send()
                .await;
            assert_eq!(
                (r.status, r.code().as_str()),
                (400, "BadDigest"),
                "{path} {name}"
            );
        }
    }
    let object_tags = || c.get_object_tagging().bucket("bkt").key("k").send();
    // Nothing was applied.
    assert!(c.get_bucket_tagging().bucket("bkt").send().await.is_err());
    assert!(object_tags().await.unwrap().tag_set().is_empty());
    assert!(c.get_bucket_cors().bucket("bkt").send().await.is_err());
    assert!(c.get_bucket_policy().bucket("bkt").send().await.is_err());
    let v = c
        .get_bucket_versioning()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert!(v.status().is_none());
    // With matching digests every document is applied.
    for (path, doc) in &documents {
        let r = Raw::new("PUT", format!("{}/{path}", s.endpoint))
            .header("content-md5", content_md5(doc.as_bytes()))
            .header("x-amz-checksum-sha256", sha256(doc))
            .body(doc.clone().into_bytes())
            .send()
            .await;
        assert!(r.status < 300, "{path}: {} {}", r.status, r.text());
    }
    assert_eq!(object_tags().await.unwrap().tag_set()[0].value(), "a");
    assert!(c.get_bucket_cors().bucket("bkt").send().await.is_ok());
}
