//! CORS: Put/Get/DeleteBucketCors, preflight answers, and the headers of
//! actual requests from a browser origin (a presigned PUT, as a browser app
//! uploading directly would send it).

use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::types::{CorsConfiguration, CorsRule};

use crate::harness::*;

async fn options(s: &Server, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut b = http::Request::builder()
        .method("OPTIONS")
        .uri(format!("{}{path}", s.endpoint));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    send(b.body(Vec::new()).unwrap()).await
}

#[tokio::test]
async fn cors_configuration_and_preflights() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let app = "https://app.example.com";

    // No configuration: preflights are refused, and so is reading it.
    let r = options(
        &s,
        "/bkt/k",
        &[("origin", app), ("access-control-request-method", "PUT")],
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "AccessForbidden"));
    let e = c.get_bucket_cors().bucket("bkt").send().await.unwrap_err();
    assert_eq!(
        (status(&e), code(&e).as_str()),
        (404, "NoSuchCORSConfiguration")
    );

    let cfg = CorsConfiguration::builder()
        .cors_rules(
            CorsRule::builder()
                .id("uploads")
                .allowed_origins("https://*.example.com")
                .allowed_methods("PUT")
                .allowed_methods("GET")
                .allowed_headers("content-type")
                .allowed_headers("x-amz-*")
                .expose_headers("ETag")
                .max_age_seconds(600)
                .build()
                .unwrap(),
        )
        .cors_rules(
            CorsRule::builder()
                .allowed_origins("*")
                .allowed_methods("GET")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    c.put_bucket_cors()
        .bucket("bkt")
        .cors_configuration(cfg)
        .send()
        .await
        .unwrap();
    let got = c.get_bucket_cors().bucket("bkt").send().await.unwrap();
    assert_eq!(got.cors_rules().len(), 2);
    assert_eq!(got.cors_rules()[0].id(), Some("uploads"));
    assert_eq!(got.cors_rules()[0].max_age_seconds(), Some(600));
    assert_eq!(
        got.cors_rules()[0].allowed_headers(),
        ["content-type", "x-amz-*"]
    );

    // An allowed preflight.
    let r = options(
        &s,
        "/bkt/photo.png",
        &[
            ("origin", app),
            ("access-control-request-method", "PUT"),
            ("access-control-request-headers", "Content-Type, X-Amz-Date"),
        ],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["access-control-allow-origin"], app);
    assert!(r.headers["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .contains("PUT"));
    assert_eq!(r.headers["access-control-max-age"], "600");
    assert_eq!(r.headers["access-control-expose-headers"], "ETag");
    let allowed = r.headers["access-control-allow-headers"].to_str().unwrap();
    assert!(allowed.contains("content-type") && allowed.contains("x-amz-date"));
    // The wildcard rule answers any origin for GET, with `*`.
    let r = options(
        &s,
        "/bkt/k",
        &[
            ("origin", "https://other.test"),
            ("access-control-request-method", "GET"),
        ],
    )
    .await;
    assert_eq!(
        (r.status, &r.headers["access-control-allow-origin"]),
        (200, &"*".parse::<http::HeaderValue>().unwrap())
    );
    // Refused: an origin no rule names, a method, a header.
    for headers in [
        vec![
            ("origin", "https://evil.test"),
            ("access-control-request-method", "PUT"),
        ],
        vec![("origin", app), ("access-control-request-method", "DELETE")],
        vec![
            ("origin", app),
            ("access-control-request-method", "PUT"),
            ("access-control-request-headers", "authorization-extra"),
        ],
    ] {
        let r = options(&s, "/bkt/k", &headers).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (403, "AccessForbidden"),
            "{headers:?}"
        );
        assert!(!r.headers.contains_key("access-control-allow-origin"));
    }
    // A preflight must say who and what.
    let r = options(&s, "/bkt/k", &[("access-control-request-method", "PUT")]).await;
    assert_eq!((r.status, r.code().as_str()), (400, "BadRequest"));

    // The upload a browser app then sends: a presigned PUT with an Origin.
    let presigned = c
        .put_object()
        .bucket("bkt")
        .key("photo.png")
        .content_type("image/png")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).unwrap())
        .await
        .unwrap();
    let mut b = http::Request::builder().method("PUT").uri(presigned.uri());
    for (k, v) in presigned.headers() {
        b = b.header(k, v);
    }
    let r = send(b.header("origin", app).body(b"png bytes".to_vec()).unwrap()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.headers["access-control-allow-origin"], app);
    assert_eq!(r.headers["access-control-expose-headers"], "ETag");
    assert_eq!(get_bytes(&c, "bkt", "photo.png").await, b"png bytes");
    // A request no rule allows gets its answer without CORS headers (the
    // browser then hides it from the page); `*` answers any origin's GET.
    let r = Raw::new("HEAD", format!("{}/bkt/photo.png", s.endpoint))
        .header("origin", "https://evil.test")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.headers.contains_key("access-control-allow-origin"));
    let r = Raw::new("GET", format!("{}/bkt/photo.png", s.endpoint))
        .header("origin", "https://evil.test")
        .send()
        .await;
    assert_eq!(r.headers["access-control-allow-origin"], "*");

    // Invalid configurations are refused and the stored one stays.
    let bad = CorsConfiguration::builder()
        .cors_rules(
            CorsRule::builder()
                .allowed_origins("*")
                .allowed_methods("PATCH")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let e = c
        .put_bucket_cors()
        .bucket("bkt")
        .cors_configuration(bad)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let truncated = b"<CORSConfiguration><CORSRule>".to_vec();
    let r = Raw::new("PUT", format!("{}/bkt?cors", s.endpoint))
        .header("content-md5", content_md5(&truncated))
        .body(truncated)
        .send()
        .await;
    assert_eq!(r.code(), "MalformedXML");
    assert_eq!(
        c.get_bucket_cors()
            .bucket("bkt")
            .send()
            .await
            .unwrap()
            .cors_rules()
            .len(),
        2
    );

    c.delete_bucket_cors().bucket("bkt").send().await.unwrap();
    let e = c.get_bucket_cors().bucket("bkt").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchCORSConfiguration");
    let r = options(
        &s,
        "/bkt/k",
        &[("origin", app), ("access-control-request-method", "GET")],
    )
    .await;
    assert_eq!(r.code(), "AccessForbidden");
}
