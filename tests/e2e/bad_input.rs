use crate::harness::*;

#[tokio::test]
async fn bad_requests_get_s3_errors_and_change_nothing() {
    let s = Server::start_with(4, &["--body-timeout", "2"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"precious".to_vec()).await;
    let e = &s.endpoint;

    // A body cut short, then a client that stalls mid-body.
    let reply = partial_request(&s, &[], "PUT", "/bkt/k", 100_000, 50_000, true);
    assert!(
        reply.contains("IncompleteBody") || reply.is_empty(),
        "{reply}"
    );
    let reply = partial_request(&s, &[], "PUT", "/bkt/k", 100_000, 10, false);
    assert!(
        reply.starts_with("HTTP/1.1 400") && reply.contains("<Code>RequestTimeout</Code>"),
        "{reply}"
    );

    // More declared than S3 allows in one PUT.
    let r = send({
        let mut raw = Raw::new("PUT", format!("{e}/bkt/huge"));
        raw.signed_payload = false;
        let mut req = raw.signed(USER, SECRET, "us-east-1", None);
        req.headers_mut()
            .insert("content-length", (6u64 << 30).to_string().parse().unwrap());
        req
    })
    .await;
    assert_eq!(r.code(), "EntityTooLarge");

    // Malformed XML bodies.
    let r = Raw::new("POST", format!("{e}/bkt?delete"))
        .header("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==")
        .body(Vec::new())
        .send()
        .await;
    assert_eq!(r.status, 400);
    let doc = b"<Delete><Object><Key>k</Key></Object>".to_vec();
    let r = Raw::new("POST", format!("{e}/bkt?delete"))
        .header("content-md5", content_md5(&doc))
        .body(doc)
        .send()
        .await;
    assert_eq!(r.code(), "MalformedXML");
    let r = Raw::new("POST", format!("{e}/bkt?delete"))
        .body(b"<Delete><Object><Key>k</Key></Object></Delete>".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "InvalidRequest");
    let r = Raw::new("PUT", format!("{e}/newbucket"))
        .body(b"<CreateBucketConfiguration><Loc".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "MalformedXML");

    // Absurd ranges and part numbers.
    let r = Raw::new("GET", format!("{e}/bkt/k"))
        .header("range", "bytes=99999999999999-")
        .send()
        .await;
    assert_eq!((r.status, r.code().as_str()), (416, "InvalidRange"));
    assert_eq!(r.headers["content-range"], "bytes */8");
    let r = Raw::new("GET", format!("{e}/bkt/k?partNumber=0"))
        .send()
        .await;
    assert_eq!(r.code(), "InvalidArgument");
    let r = Raw::new("GET", format!("{e}/bkt/k?partNumber=abc"))
        .send()
        .await;
    assert_eq!(r.code(), "InvalidArgument");

    // Keys too long, paths that do not decode, unknown checksums.
    let r = Raw::new("PUT", format!("{e}/bkt/{}", "x".repeat(1025)))
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "KeyTooLongError");
    let r = Raw::new("GET", format!("{e}/bkt/%FF%FE")).send().await;
    assert_eq!(r.code(), "InvalidURI");
    let r = Raw::new("PUT", format!("{e}/bkt/k"))
        .header("x-amz-checksum-crc32", "not base64!")
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "InvalidRequest");
    let r = Raw::new("PUT", format!("{e}/bkt/k"))
        .header("content-md5", "short")
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "InvalidDigest");
    let r = Raw::new("PUT", format!("{e}/bkt/k"))
        .header("x-amz-storage-class", "PLATINUM")
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "InvalidStorageClass");
    let r = Raw::new("PUT", format!("{e}/bkt/k"))
        .payload_hash("garbage")
        .body(b"x".to_vec())
        .send()
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidArgument"));

    // A broken aws-chunked body.
    let r = Raw::new("PUT", format!("{e}/bkt/k"))
        .payload_hash("STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        .header("content-encoding", "aws-chunked")
        .header("x-amz-decoded-content-length", "5")
        .body(b"zz\r\nhello\r\n0\r\n\r\n".to_vec())
        .send()
        .await;
    assert_eq!(r.code(), "IncompleteBody");

    // Nothing stored changed, and the server still serves.
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"precious");
    let keys: Vec<String> = c
        .list_objects_v2()
        .bucket("bkt")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .map(|o| o.key().unwrap().to_string())
        .collect();
    assert_eq!(keys, vec!["k"]);
    assert!(c.head_bucket().bucket("newbucket").send().await.is_err());
    put_bytes(&c, "bkt", "after", b"still serving".to_vec()).await;
}
