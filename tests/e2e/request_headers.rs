//! Request headers and parameters outside the per-operation model table
//! (`s3-compat-tests/HEADERS.md`), or whose meaning depends on the
//! request's state: each is honoured or refused as S3 does, and a refused
//! request changes nothing.

use std::time::Duration;

use aws_sdk_s3::config::Credentials;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumType, CompletedMultipartUpload, CompletedPart, Delete,
    ObjectIdentifier,
};

use crate::harness::*;

/// Granary issues no temporary credentials, so any session token is one
/// it cannot know: S3 answers an unknown token 400 InvalidToken, in the
/// header or in a presigned URL.
#[tokio::test]
async fn a_session_token_is_refused_as_invalid() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"kept".to_vec()).await;
    let creds = Credentials::new(USER, SECRET, Some("FwoGZXIvYXdzEBc".into()), None, "e2e");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .endpoint_url(&s.endpoint)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(creds)
        .force_path_style(true)
        .build();
    let with_token = aws_sdk_s3::Client::from_conf(conf);
    let e = with_token
        .put_object()
        .bucket("bkt")
        .key("k")
        .body(b"replaced".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidToken"));
    let url = with_token
        .get_object()
        .bucket("bkt")
        .key("k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    assert!(url.uri().contains("X-Amz-Security-Token="), "{}", url.uri());
    let r = reqwest::get(url.uri()).await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("<Code>InvalidToken</Code>"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"kept");
    // The admin API, signed the same way, refuses it too.
    let admin = Raw::new("POST", format!("{}/granary/admin/v1/users", s.endpoint))
        .header("x-amz-security-token", "FwoGZXIvYXdzEBc")
        .body(br#"{"name":"mallory"}"#.to_vec())
        .send()
        .await;
    // (Its errors are JSON.)
    assert_eq!(admin.status, 400, "{}", admin.text());
    assert!(
        admin.text().contains(r#""code":"InvalidToken""#),
        "{}",
        admin.text()
    );
    assert!(!admin_at(&s.endpoint, &["user", "list"])
        .unwrap()
        .contains("mallory"));
}

/// `x-amz-sdk-checksum-algorithm` names the algorithm of a checksum sent
/// with it; alone it is a request S3 refuses (400 InvalidRequest), not one
/// to compute a checksum for.
#[tokio::test]
async fn an_sdk_checksum_algorithm_without_its_checksum_is_refused() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"kept".to_vec()).await;
    let put = Raw::new("PUT", format!("{}/bkt/k", s.endpoint))
        .header("x-amz-sdk-checksum-algorithm", "CRC32")
        .body(b"replaced".to_vec())
        .send()
        .await;
    assert_eq!((put.status, put.code().as_str()), (400, "InvalidRequest"));
    let upload = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("mpu")
        .send()
        .await
        .unwrap();
    let id = upload.upload_id().unwrap();
    let part = Raw::new(
        "PUT",
        format!("{}/bkt/mpu?partNumber=1&uploadId={id}", s.endpoint),
    )
    .header("x-amz-sdk-checksum-algorithm", "SHA256")
    .body(b"part".to_vec())
    .send()
    .await;
    assert_eq!((part.status, part.code().as_str()), (400, "InvalidRequest"));
    let parts = c
        .list_parts()
        .bucket("bkt")
        .key("mpu")
        .upload_id(id)
        .send()
        .await
        .unwrap();
    assert!(parts.parts().is_empty());
    let doc = "<Delete><Object><Key>k</Key></Object></Delete>";
    let delete = Raw::new("POST", format!("{}/bkt?delete", s.endpoint))
        .header("x-amz-sdk-checksum-algorithm", "CRC32")
        .body(doc.as_bytes().to_vec())
        .send()
        .await;
    assert_eq!(
        (delete.status, delete.code().as_str()),
        (400, "InvalidRequest")
    );
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"kept");
}

/// No Granary bucket has Object Lock, and S3 refuses a governance bypass
/// on such a bucket: 400 InvalidArgument, the object kept.
#[tokio::test]
async fn a_governance_bypass_is_refused_as_on_a_bucket_without_object_lock() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"kept".to_vec()).await;
    let e = c
        .delete_object()
        .bucket("bkt")
        .key("k")
        .bypass_governance_retention(true)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidArgument"));
    let e = c
        .delete_objects()
        .bucket("bkt")
        .bypass_governance_retention(true)
        .delete(
            Delete::builder()
                .objects(ObjectIdentifier::builder().key("k").build().unwrap())
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidArgument"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"kept");
}

/// Uploads one part of `key` under a new upload (`alg`, `kind`: the
/// checksum asked for at creation) and returns the upload id and the part
/// as a Complete lists it.
async fn one_part_upload(
    c: &aws_sdk_s3::Client,
    key: &str,
    alg: Option<ChecksumAlgorithm>,
    kind: Option<ChecksumType>,
) -> (String, CompletedPart) {
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key(key)
        .set_checksum_algorithm(alg.clone())
        .set_checksum_type(kind)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_string();
    let part = c
        .upload_part()
        .bucket("bkt")
        .key(key)
        .upload_id(&id)
        .part_number(1)
        .set_checksum_algorithm(alg)
        .body(Pattern::bytes(3, 1000).into())
        .send()
        .await
        .unwrap();
    let listed = CompletedPart::builder()
        .part_number(1)
        .e_tag(part.e_tag().unwrap())
        .set_checksum_crc32(part.checksum_crc32().map(str::to_string))
        .build();
    (id, listed)
}

/// The checksum type sent with CompleteMultipartUpload must be the one
/// chosen at creation (S3: BadDigest otherwise, the upload left to
/// complete); a whole-object checksum that cannot be checked is refused.
#[tokio::test]
async fn complete_checks_the_checksum_type_and_refuses_a_checksum_it_cannot_check() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let (id, part) = one_part_upload(
        &c,
        "composite",
        Some(ChecksumAlgorithm::Crc32),
        Some(ChecksumType::Composite),
    )
    .await;
    let complete = |kind: ChecksumType| {
        c.complete_multipart_upload()
            .bucket("bkt")
            .key("composite")
            .upload_id(&id)
            .checksum_type(kind)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(part.clone())
                    .build(),
            )
            .send()
    };
    let e = complete(ChecksumType::FullObject).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "BadDigest"));
    let done = complete(ChecksumType::Composite).await.unwrap();
    assert_eq!(done.checksum_type(), Some(&ChecksumType::Composite));

    // Created without an algorithm: S3's default is a CRC64NVME checksum
    // of the whole object.
    let (id, part) = one_part_upload(&c, "default", None, None).await;
    let listed = || {
        CompletedMultipartUpload::builder()
            .parts(part.clone())
            .build()
    };
    let e = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("default")
        .upload_id(&id)
        .checksum_type(ChecksumType::Composite)
        .multipart_upload(listed())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "BadDigest"));
    // Its part carries no CRC64NVME checksum (the SDK sent a CRC32), so
    // a CRC64NVME of the whole object cannot be checked: refused, not
    // taken on trust.
    assert!(part.checksum_crc32().is_some());
    let e = c
        .complete_multipart_upload()
        .bucket("bkt")
        .key("default")
        .upload_id(&id)
        .checksum_crc64_nvme("AAAAAAAAAAA=")
        .multipart_upload(listed())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidRequest"));
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("default")
        .upload_id(&id)
        .checksum_type(ChecksumType::FullObject)
        .multipart_upload(listed())
        .send()
        .await
        .unwrap();
    assert_eq!(
        get_bytes(&c, "bkt", "default").await,
        Pattern::bytes(3, 1000)
    );
}

/// S3 refuses the `response-*` overrides on anonymous GET and HEAD
/// (400 InvalidRequest) even where a policy lets anyone read.
#[tokio::test]
async fn response_overrides_are_refused_on_anonymous_reads() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"public".to_vec()).await;
    c.put_bucket_policy()
        .bucket("bkt")
        .policy(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}"#,
        )
        .send()
        .await
        .unwrap();
    let url = format!("{}/bkt/k", s.endpoint);
    let plain = reqwest::get(&url).await.unwrap();
    assert_eq!(plain.status(), 200);
    let client = reqwest::Client::new();
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let r = client
            .request(
                method.clone(),
                format!("{url}?response-content-type=text%2Fhtml"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{method}");
        assert_ne!(
            r.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"text/html"[..])
        );
        if method == reqwest::Method::GET {
            assert!(r
                .text()
                .await
                .unwrap()
                .contains("<Code>InvalidRequest</Code>"));
        }
    }
    // Signed, the override applies.
    let got = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .response_content_type("text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("text/html"));
}

/// SDKs presigning a request move its `x-amz-*` headers into the URL,
/// where the signature covers them, and S3 takes them as those headers:
/// honoured (metadata, tags, storage class) or refused exactly as the
/// headers are, never dropped.
#[tokio::test]
async fn x_amz_query_parameters_of_a_presigned_url_act_as_their_headers() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let presigned = |query: &str, body: &[u8]| {
        Raw::new("PUT", format!("{}/bkt/k?{query}", s.endpoint))
            .body(body.to_vec())
            .signed(USER, SECRET, "us-east-1", Some(Duration::from_secs(60)))
    };
    let r = send(presigned(
        "x-amz-meta-origin=query&x-amz-tagging=team%3Dml&x-amz-storage-class=STANDARD",
        b"first",
    ))
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let head = c.head_object().bucket("bkt").key("k").send().await.unwrap();
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("origin"))
            .map(String::as_str),
        Some("query")
    );
    let tags = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(
        tags.tag_set()
            .iter()
            .map(|t| (t.key(), t.value()))
            .collect::<Vec<_>>(),
        [("team", "ml")]
    );
    // Refused as the header is, the object left as it was.
    let r = send(presigned("x-amz-server-side-encryption=AES256", b"second")).await;
    assert_eq!((r.status, r.code().as_str()), (501, "NotImplemented"));
    let r = send(presigned("x-amz-checksum-crc32=AAAAAA%3D%3D", b"second")).await;
    assert_eq!((r.status, r.code().as_str()), (400, "BadDigest"));
    let twice = Raw::new(
        "PUT",
        format!("{}/bkt/k?x-amz-meta-origin=query", s.endpoint),
    )
    .header("x-amz-meta-origin", "header")
    .body(b"second".to_vec())
    .signed(USER, SECRET, "us-east-1", Some(Duration::from_secs(60)));
    let r = send(twice).await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidRequest"));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"first");
}

/// A `response-*` override is a header value, and headers carry
/// ISO-8859-1: a character outside it is refused as S3 refuses it (400
/// InvalidArgument naming the parameter), as is a control character;
/// one inside it is sent as its byte. Never dropped silently.
#[tokio::test]
async fn response_overrides_a_header_cannot_carry_are_refused() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"data".to_vec()).await;
    for bad in [
        "attachment; filename=\"1976\u{2013}2016.md\"",
        "inline\r\nx-evil: 1",
    ] {
        let e = c
            .get_object()
            .bucket("bkt")
            .key("k")
            .response_content_disposition(bad)
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            (status(&e), code(&e).as_str()),
            (400, "InvalidArgument"),
            "{bad:?}"
        );
    }
    let r = Raw::new(
        "GET",
        format!(
            "{}/bkt/k?response-content-disposition=attachment%3B%20filename%3D%22na%C3%AFve.txt%22",
            s.endpoint
        ),
    )
    .send()
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.headers["content-disposition"].as_bytes(),
        b"attachment; filename=\"na\xefve.txt\""
    );
}
