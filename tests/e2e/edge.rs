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

/// Reads from `sock` until the server closes it; the time that took, or
/// `None` if it was still open after `limit`.
async fn closed_within(sock: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let start = std::time::Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(start + limit),
            sock.read(&mut buf),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

fn open_fds(s: &Server) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", s.pid()))
        .unwrap()
        .count()
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed_while_requests_are_served() {
    use tokio::io::AsyncWriteExt;
    let s = Server::start_with(1, &["--header-timeout", "3", "--idle-timeout", "4"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let fds = open_fds(&s);
    let opened = std::time::Instant::now();
    let mut silent = Vec::new();
    for _ in 0..1000 {
        silent.push(tokio::net::TcpStream::connect(&s.addr).await.unwrap());
    }
    // HTTP/2 with prior knowledge on the plain port: the preface and an
    // empty SETTINGS frame, then nothing.
    let mut h2 = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    // Half an h2 preface: the version sniffing waits for the rest.
    let mut half = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    half.write_all(b"PRI * HTT").await.unwrap();
    // A connection that served a request and then went idle.
    let mut idle = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let head = signed_head(&s, "GET", "/bkt?list-type=2", &[], 0, &[]);
    idle.write_all(head.as_bytes()).await.unwrap();
    // Normal requests are served meanwhile.
    for i in 0..20 {
        put_bytes(&c, "bkt", &format!("k{i}"), vec![i as u8; 100]).await;
    }
    // Each is closed at its header timeout (3 s after it was accepted; the
    // server accepts 1,000 at once only as fast as two cores allow).
    for (i, sock) in silent.iter_mut().enumerate() {
        let left = Duration::from_secs(20).saturating_sub(opened.elapsed());
        let closed = closed_within(sock, left).await;
        assert!(
            closed.is_some(),
            "silent connection {i} still open after {:?}",
            opened.elapsed()
        );
        if i == 0 {
            assert!(
                opened.elapsed() >= Duration::from_millis(2900),
                "closed before its timeout"
            );
        }
    }
    eprintln!(
        "1,000 silent connections closed {:?} after they were opened",
        opened.elapsed()
    );
    assert!(
        closed_within(&mut h2, Duration::from_secs(8))
            .await
            .is_some(),
        "h2 stays open"
    );
    assert!(
        closed_within(&mut half, Duration::from_secs(8))
            .await
            .is_some(),
        "half preface stays open"
    );
    let idle_closed = closed_within(&mut idle, Duration::from_secs(10)).await;
    assert!(
        idle_closed.is_some(),
        "the idle keep-alive connection stays open"
    );
    until(5, "the server's descriptors are freed", async || {
        open_fds(&s) < fds + 10
    })
    .await;
    let listed = c.list_objects_v2().bucket("bkt").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(20));
}

#[tokio::test]
async fn the_connection_past_the_cap_is_refused_with_a_log_line() {
    let s = Server::start_with(1, &["--max-connections", "20", "--header-timeout", "3"]);
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(tokio::net::TcpStream::connect(&s.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut over = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let took = closed_within(&mut over, Duration::from_secs(2)).await;
    assert!(took.is_some(), "the 21st connection was kept");
    until(5, "the refusal is logged", async || {
        s.log()
            .contains("connection limit reached (20 open, --max-connections)")
    })
    .await;
    // The held ones time out; then the server takes requests again.
    for sock in held.iter_mut() {
        assert!(closed_within(sock, Duration::from_secs(8)).await.is_some());
    }
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
}

#[tokio::test]
async fn a_trickling_body_is_cut_at_the_body_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Windows of 3 s that must bring 1 KiB/s each; the client sends a byte
    // a second, so it never pauses for long enough to be idle.
    let s = Server::start_with(1, &["--body-timeout", "3", "--body-min-rate", "1024"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let head = signed_head(&s, "PUT", "/bkt/slow", &[], 100, &[("connection", "close")]);
    let mut sock = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    sock.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let (mut rd, mut wr) = sock.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..100 {
            if wr.write_all(b"z").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("</Error>") {
        match tokio::time::timeout(Duration::from_secs(15), rd.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&buf[..n]),
            other => panic!(
                "the trickle was not answered within 15 s ({other:?}): {}",
                String::from_utf8_lossy(&answer)
            ),
        }
    }
    let answer = String::from_utf8_lossy(&answer).into_owned();
    // The connection is closed too, not drained at the sender's pace.
    let mut tail = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(3), rd.read_to_end(&mut tail)).await;
    trickle.abort();
    assert!(closed.is_ok(), "the connection stays open after the answer");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("<Code>RequestTimeout</Code>"), "{answer}");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "cut after {took:?}");
    let e = c.head_object().bucket("bkt").key("slow").send().await;
    assert_eq!(status(&e.unwrap_err()), 404);
}

/// A SigV2 presigned GET URL of `/bkt/key`, good until `expires`.
fn sigv2_url(s: &Server, key: &str, expires: i64) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("GET\n\n\n{expires}\n/bkt/{key}").as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let sig = percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC);
    format!(
        "{}/bkt/{key}?AWSAccessKeyId={USER}&Expires={expires}&Signature={sig}",
        s.endpoint
    )
}

#[tokio::test]
async fn sigv2_urls_live_at_most_a_week_and_can_be_turned_off() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"v2".to_vec()).await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let r = reqwest::get(sigv2_url(&s, "k", now + 3600)).await.unwrap();
    assert_eq!(r.status(), 200);
    let r = reqwest::get(sigv2_url(&s, "k", now + 6 * 86_400))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Until 2100: refused.
    let r = reqwest::get(sigv2_url(&s, "k", 4_102_444_800))
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("<Code>AccessDenied</Code>") && body.contains("7 days"),
        "{body}"
    );
    let r = reqwest::get(sigv2_url(&s, "k", now + 8 * 86_400))
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    let off = Server::start_with(1, &["--sigv2", "false"]);
    let oc = off.client();
    oc.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&oc, "bkt", "k", b"v2".to_vec()).await;
    let r = reqwest::get(sigv2_url(&off, "k", now + 3600))
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("Signature Version 2 is turned off"));
}

#[tokio::test]
async fn keys_with_control_characters_list_exactly() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let keys = [
        "line\nbreak",
        "carriage\rreturn",
        "both\r\nends",
        "nul\0byte",
        "tab\there",
    ];
    for k in keys {
        put_bytes(&c, "bkt", k, k.as_bytes().to_vec()).await;
    }
    // The raw document holds no control byte but the tab; CR and LF are
    // references a strict parser turns back into exactly those bytes.
    let r = Raw::new("GET", format!("{}/bkt?list-type=2", s.endpoint))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(
        !r.body
            .iter()
            .any(|b| *b < 0x20 && !matches!(*b, b'\t' | b'\n')),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains("<Key>line&#10;break</Key>"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("<Key>carriage&#13;return</Key>"));
    assert!(r.text().contains("<Key>nul&#0;byte</Key>"));
    // The SDK's parser (a strict tokenizer) without encoding-type: the
    // keys XML 1.0 can carry come back exactly.
    let page = c
        .list_objects_v2()
        .bucket("bkt")
        .prefix("line")
        .send()
        .await
        .unwrap();
    assert_eq!(page.contents()[0].key(), Some("line\nbreak"));
    for prefix in ["carriage", "both"] {
        let page = c
            .list_objects_v2()
            .bucket("bkt")
            .prefix(prefix)
            .send()
            .await
            .unwrap();
        let want = keys.iter().find(|k| k.starts_with(prefix)).unwrap();
        assert_eq!(page.contents()[0].key(), Some(*want));
    }
    // With encoding-type=url, as the aws CLI and boto3 ask, every key.
    let page = c
        .list_objects_v2()
        .bucket("bkt")
        .encoding_type(aws_sdk_s3::types::EncodingType::Url)
        .send()
        .await
        .unwrap();
    let mut listed: Vec<String> = page
        .contents()
        .iter()
        .map(|o| {
            String::from_utf8(percent_encoding::percent_decode_str(o.key().unwrap()).collect())
                .unwrap()
        })
        .collect();
    listed.sort();
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    for k in keys {
        assert_eq!(get_bytes(&c, "bkt", k).await, k.as_bytes());
    }
}

/// A request refused before its body was read ends its connection: a
/// client that waited for `100 Continue` in vain sends the body anyway,
/// and those bytes must not be taken for its next request (they were
/// answered `400 Bad Request` as garbage, failing the next request).
#[tokio::test]
async fn a_refusal_before_the_body_closes_the_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    put_bytes(&c, "bkt", "k", b"kept".to_vec()).await;
    let body = b"not a request line\r\n\r\n".repeat(8);
    let head = signed_head(
        &s,
        "PUT",
        "/bkt/k",
        &[("x-amz-checksum-sha512", "AAAA".to_string())],
        body.len(),
        &[("expect", "100-continue")],
    );
    let mut sock = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("</Error>") {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 400"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    // The body arrives late; the server has ended the connection and takes
    // none of it as a request.
    let _ = sock.write_all(&body).await;
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut rest)).await;
    assert!(
        !String::from_utf8_lossy(&rest).contains("HTTP/1.1"),
        "a second answer: {}",
        String::from_utf8_lossy(&rest)
    );
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"kept");
}

/// A PUT refused before its body is read, from a client that sends the
/// body without waiting (no `Expect: 100-continue`, as the Rust SDK
/// does): the server reads and discards the body it is sent and only then
/// ends the connection, so the client can send it all and read the error.
/// Ending the reads at the answer instead reset the connection under the
/// sender, which lost the answer (the SDK saw a broken pipe, not 507 or
/// 404).
#[tokio::test]
async fn a_refused_body_being_sent_is_read_to_its_end_before_the_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start(1);
    let body_len = 32 << 20;
    let head = signed_head(&s, "PUT", "/no-such-bucket/k", &[], body_len, &[]);
    let sock = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    wr.write_all(head.as_bytes()).await.unwrap();
    let sending = tokio::spawn(async move {
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..(body_len >> 20) {
            wr.write_all(&chunk).await?;
        }
        wr.flush().await
    });
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), rd.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 404"), "{answer}");
    assert!(answer.contains("nosuchbucket"), "{answer}");
    sending
        .await
        .unwrap()
        .expect("the whole body could be sent: the server read it");
}

/// The rest of a refused body is drained only for a while: a client that
/// trickles it in (a byte a second, within the drain's idle limit) has its
/// connection closed after the drain's deadline instead of holding it for
/// as long as it keeps sending.
#[tokio::test]
async fn a_refused_body_trickling_in_is_drained_only_until_a_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start(1);
    let head = signed_head(&s, "PUT", "/no-such-bucket/k", &[], 1 << 20, &[]);
    let sock = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    wr.write_all(head.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        while wr.write_all(b"x").await.is_ok() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(50), rd.read_to_end(&mut answer)).await;
    trickle.abort();
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 404"), "{answer}");
    assert!(
        closed.is_ok(),
        "still open after {:?} of trickling",
        started.elapsed()
    );
}
