use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;

use crate::harness::*;

#[tokio::test]
async fn signatures_keys_and_presigned_urls() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"secret data".to_vec()).await;

    let wrong = client_for(&s.endpoint, USER, "not-the-secret", "us-east-1");
    let e = wrong
        .get_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    assert_eq!(status(&e), 403);
    let e = wrong
        .put_object()
        .bucket("bkt")
        .key("k")
        .body(b"evil".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"secret data");
    let unknown = client_for(&s.endpoint, "NOSUCHKEY", SECRET, "us-east-1");
    let e = unknown.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidAccessKeyId");

    // Anonymous requests are refused.
    let r = reqwest::get(format!("{}/bkt/k", s.endpoint)).await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("<Code>AccessDenied</Code>"));

    // Presigned GET and PUT.
    let get = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    let r = reqwest::get(get.uri()).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"secret data");
    let put = c
        .put_object()
        .bucket("bkt")
        .key("up")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    let r = reqwest::Client::new()
        .put(put.uri())
        .body("via presigned put")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(get_bytes(&c, "bkt", "up").await, b"via presigned put");
    // Tampering with a presigned URL breaks it.
    let tampered = get.uri().replace("/bkt/k?", "/bkt/up?");
    let r = reqwest::get(tampered).await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("SignatureDoesNotMatch"));
    // Expired.
    let short = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(1)).unwrap())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = reqwest::get(short.uri()).await.unwrap();
    assert_eq!(r.status(), 403);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("<Code>AccessDenied</Code>") && body.contains("expired"),
        "{body}"
    );
    // Presigned with the raw signer too.
    let req = Raw::new("GET", format!("{}/bkt/k", s.endpoint)).signed(
        USER,
        SECRET,
        "us-east-1",
        Some(Duration::from_secs(30)),
    );
    assert_eq!(send(req).await.body, b"secret data");
}

#[tokio::test]
async fn malformed_and_mismatched_signing() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // The body differs from the signed payload hash.
    let mut req = Raw::new("PUT", format!("{}/bkt/k", s.endpoint))
        .body(b"signed body".to_vec())
        .signed(USER, SECRET, "us-east-1", None);
    *req.body_mut() = b"other body!".to_vec();
    let r = send(req).await;
    assert_eq!(r.code(), "XAmzContentSHA256Mismatch");
    let e = c
        .head_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404);
    // A signature that was edited.
    let mut req =
        Raw::new("GET", format!("{}/bkt", s.endpoint)).signed(USER, SECRET, "us-east-1", None);
    let auth = req.headers()["authorization"].to_str().unwrap().to_string();
    let last = auth.chars().last().unwrap();
    let edited = format!(
        "{}{}",
        &auth[..auth.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    req.headers_mut()
        .insert("authorization", edited.parse().unwrap());
    assert_eq!(send(req).await.code(), "SignatureDoesNotMatch");
    // Garbage, and a SigV2 header (only SigV2 presigned URLs are accepted).
    let r = send(
        http::Request::builder()
            .uri(format!("{}/bkt", s.endpoint))
            .header("authorization", "AWS AKID:c2lnbmF0dXJl")
            .body(Vec::new())
            .unwrap(),
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidRequest"));
    let r = send(
        http::Request::builder()
            .uri(format!("{}/bkt", s.endpoint))
            .header("authorization", "AWS4-HMAC-SHA256 Credential=x")
            .header("x-amz-date", "20250101T000000Z")
            .body(Vec::new())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "AuthorizationHeaderMalformed")
    );
    // A request signed an hour ago.
    let identity_req = Raw::new("GET", format!("{}/bkt", s.endpoint));
    let mut req = identity_req.signed(USER, SECRET, "us-east-1", None);
    let old = time_shift(req.headers()["x-amz-date"].to_str().unwrap(), -3600);
    req.headers_mut().insert("x-amz-date", old.parse().unwrap());
    assert_eq!(send(req).await.code(), "RequestTimeTooSkewed");
}

/// Moves an x-amz-date timestamp by `secs`.
fn time_shift(amz: &str, secs: i64) -> String {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let t = time::PrimitiveDateTime::parse(amz, fmt)
        .unwrap()
        .assume_utc()
        + time::Duration::seconds(secs);
    t.format(fmt).unwrap()
}
