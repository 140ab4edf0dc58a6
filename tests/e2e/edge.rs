//! The request edge: a signature covers every header that changes what a
//! request does, POST forms are bounded before they are buffered, and the
//! connection layer closes what does not speak.

use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;

use crate::harness::*;

#[tokio::test]
async fn headers_a_signature_does_not_cover_are_refused() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "secret", b"only for the owner".to_vec()).await;

    // A presigned PUT URL (only `host` signed) turned into a CopyObject of
    // another key by an added header.
    let put = c
        .put_object()
        .bucket("bkt")
        .key("upload")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    let r = reqwest::Client::new()
        .put(put.uri())
        .header("x-amz-copy-source", "/bkt/secret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body = r.text().await.unwrap();
    assert!(body.contains("<Code>AccessDenied</Code>"), "{body}");
    assert!(
        body.contains(
            "<Message>There were headers present in the request which were not signed</Message>"
        ),
        "{body}"
    );
    assert!(
        body.contains("<HeadersNotSigned>x-amz-copy-source</HeadersNotSigned>"),
        "{body}"
    );
    let e = c.head_object().bucket("bkt").key("upload").send().await;
    assert_eq!(status(&e.unwrap_err()), 404, "nothing was written");

    // Header-signed requests: metadata, tagging and an MD5 added after
    // signing, listed in request order.
    let mut req = Raw::new("PUT", format!("{}/bkt/tagged", s.endpoint))
        .body(b"data".to_vec())
        .signed(USER, SECRET, "us-east-1", None);
    for (k, v) in [
        ("x-amz-meta-owner", "mallory"),
        ("x-amz-tagging", "public=yes"),
        ("content-md5", "jXd/OF09/siBXSD3SWAm3A=="),
    ] {
        req.headers_mut().insert(k, v.parse().unwrap());
    }
    let r = send(req).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.text().contains(
            "<HeadersNotSigned>x-amz-meta-owner, x-amz-tagging, content-md5</HeadersNotSigned>"
        ),
        "{}",
        r.text()
    );
    let e = c.head_object().bucket("bkt").key("tagged").send().await;
    assert_eq!(status(&e.unwrap_err()), 404);

    // The same headers signed are taken; an unlisted x-amz-content-sha256
    // is covered by the canonical request's payload line and accepted.
    let r = Raw::new("PUT", format!("{}/bkt/tagged", s.endpoint))
        .header("x-amz-meta-owner", "alice")
        .header("x-amz-tagging", "public=no")
        .body(b"data".to_vec())
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let head = c
        .head_object()
        .bucket("bkt")
        .key("tagged")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.metadata().unwrap().get("owner").map(String::as_str),
        Some("alice")
    );
    let mut get = c
        .get_object()
        .bucket("bkt")
        .key("tagged")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(60)).unwrap())
        .await
        .unwrap()
        .into_http_1x_request(Vec::new());
    get.headers_mut()
        .insert("x-amz-content-sha256", "UNSIGNED-PAYLOAD".parse().unwrap());
    let r = send(get).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, b"data");
    assert_eq!(get_bytes(&c, "bkt", "secret").await, b"only for the owner");
}
