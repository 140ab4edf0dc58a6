//! POST Object: browser form uploads signed with a SigV4 policy document —
//! conditions, content-length-range, success_action_status / redirect, and
//! every refusal leaving the store untouched.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::harness::*;

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
    m.update(data.as_bytes());
    m.finalize().into_bytes().to_vec()
}

const BOUNDARY: &str = "----granary-form-boundary-7MA4YWxkTrZu0gW";

/// A signed form: fields in order (the file goes last).
#[derive(Clone)]
struct Form {
    fields: Vec<(String, String)>,
}

impl Form {
    /// A form for `key` whose policy has `conditions` (besides the signing
    /// fields) and expires at `expires`, signed with `key_id`/`secret`.
    fn new(
        key: &str,
        conditions: &[serde_json::Value],
        expires: OffsetDateTime,
        key_id: &str,
        secret: &str,
        extra: &[(&str, &str)],
    ) -> Form {
        let now = OffsetDateTime::now_utc();
        let date = format!(
            "{:04}{:02}{:02}",
            now.year(),
            u8::from(now.month()),
            now.day()
        );
        let credential = format!("{key_id}/{date}/us-east-1/s3/aws4_request");
        let amz_date = format!("{date}T000000Z");
        let mut conds = vec![
            serde_json::json!({"x-amz-algorithm": "AWS4-HMAC-SHA256"}),
            serde_json::json!({"x-amz-credential": credential}),
            serde_json::json!({"x-amz-date": amz_date}),
        ];
        conds.extend(conditions.iter().cloned());
        let policy = serde_json::json!({
            "expiration": expires.format(&Rfc3339).unwrap(),
            "conditions": conds,
        });
        let policy = B64.encode(policy.to_string());
        let mut k = hmac(format!("AWS4{secret}").as_bytes(), &date);
        for part in ["us-east-1", "s3", "aws4_request"] {
            k = hmac(&k, part);
        }
        let signature = hex::encode(hmac(&k, &policy));
        let mut fields: Vec<(String, String)> = vec![("key".into(), key.into())];
        for (n, v) in extra {
            fields.push((n.to_string(), v.to_string()));
        }
        for (n, v) in [
            ("x-amz-algorithm", "AWS4-HMAC-SHA256".to_string()),
            ("x-amz-credential", credential),
            ("x-amz-date", amz_date),
            ("policy", policy),
            ("x-amz-signature", signature),
        ] {
            fields.push((n.into(), v));
        }
        Form { fields }
    }

    fn set(mut self, name: &str, value: &str) -> Form {
        match self.fields.iter_mut().find(|(n, _)| n == name) {
            Some(f) => f.1 = value.into(),
            None => self.fields.push((name.into(), value.into())),
        }
        self
    }

    /// The multipart body: the fields in order, then the file.
    fn body(&self, file: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for (n, v) in &self.fields {
            body.extend_from_slice(
                format!(
                    "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n"
                )
                .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"local.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(file);
        body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
        body
    }

    async fn post(&self, s: &Server, bucket: &str, file: &[u8]) -> Reply {
        let req = http::Request::builder()
            .method("POST")
            .uri(format!("{}/{bucket}", s.endpoint))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(self.body(file))
            .unwrap();
        // reqwest follows redirects by default; a form's 303 must stay visible.
        let (parts, body) = req.into_parts();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut r = client
            .request(parts.method, parts.uri.to_string())
            .body(body);
        for (k, v) in parts.headers.iter() {
            r = r.header(k, v);
        }
        let resp = r.send().await.unwrap();
        Reply {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.bytes().await.unwrap().to_vec(),
        }
    }
}

/// A root-signed form for `key` into bucket `uploads` under `user/`,
/// whose policy pins `field` to `value` (and which sends it so).
fn user_form(key: &str, field: &str, value: &str) -> Form {
    let conds = [
        serde_json::json!({"bucket": "uploads"}),
        serde_json::json!(["starts-with", "$key", "user/"]),
        serde_json::json!({ field: value }),
    ];
    Form::new(key, &conds, later(), USER, SECRET, &[(field, value)])
}

fn later() -> OffsetDateTime {
    OffsetDateTime::now_utc() + Duration::hours(1)
}

#[tokio::test]
async fn browser_form_uploads() {
    use serde_json::json;
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("uploads").send().await.unwrap();
    let conds = [
        json!({"bucket": "uploads"}),
        json!(["starts-with", "$key", "user/"]),
        json!(["starts-with", "$Content-Type", "image/"]),
        json!({"success_action_status": "201"}),
        json!(["starts-with", "$x-amz-meta-owner", ""]),
        json!(["content-length-range", 1, 1000]),
    ];
    let extra = [
        ("content-type", "image/png"),
        ("success_action_status", "201"),
        ("x-amz-meta-owner", "alice"),
    ];
    let form = Form::new("user/${filename}", &conds, later(), USER, SECRET, &extra);
    let r = form.post(&s, "uploads", b"\x89PNG data").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let text = r.text();
    assert!(text.contains("<Key>user/local.bin</Key>"), "{text}");
    assert!(text.contains("<Bucket>uploads</Bucket>"));
    let g = c
        .get_object()
        .bucket("uploads")
        .key("user/local.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(g.content_type(), Some("image/png"));
    assert_eq!(g.metadata().unwrap()["owner"], "alice");
    assert_eq!(
        g.body.collect().await.unwrap().into_bytes().as_ref(),
        b"\x89PNG data"
    );

    // success_action_redirect: 303 to the page with bucket, key and ETag.
    let form = user_form(
        "user/r.txt",
        "success_action_redirect",
        "https://app.example.com/done",
    );
    let r = form.post(&s, "uploads", b"redirected").await;
    assert_eq!(r.status, 303);
    let to = r.headers["location"].to_str().unwrap();
    assert!(
        to.starts_with("https://app.example.com/done?bucket=uploads&key=user%2Fr.txt&etag="),
        "{to}"
    );
    // No status asked for: 204.
    let plain = [
        json!({"bucket": "uploads"}),
        json!(["starts-with", "$key", ""]),
    ];
    let r = Form::new("plain", &plain, later(), USER, SECRET, &[])
        .post(&s, "uploads", b"p")
        .await;
    assert_eq!(r.status, 204);
    assert!(r.headers.contains_key("etag"));

    // Refusals, each leaving user/local.bin as it was.
    let check_untouched = || async {
        assert_eq!(
            get_bytes(&c, "uploads", "user/local.bin").await,
            b"\x89PNG data"
        );
    };
    let form = |expires| Form::new("user/local.bin", &conds, expires, USER, SECRET, &extra);
    // Expired policy.
    let r = form(OffsetDateTime::now_utc() - Duration::minutes(1))
        .post(&s, "uploads", b"new")
        .await;
    assert_eq!((r.status, r.code().as_str()), (403, "AccessDenied"));
    assert!(r.text().contains("expired"));
    // Too large and too small for content-length-range.
    let r = form(later()).post(&s, "uploads", &[7u8; 1001]).await;
    assert_eq!((r.status, r.code().as_str()), (400, "EntityTooLarge"));
    let r = form(later()).post(&s, "uploads", b"").await;
    assert_eq!((r.status, r.code().as_str()), (400, "EntityTooSmall"));
    // A field breaking a condition; a field the policy does not mention.
    let r = form(later())
        .set("content-type", "text/html")
        .post(&s, "uploads", b"x")
        .await;
    assert_eq!((r.status, r.code().as_str()), (403, "AccessDenied"));
    let r = form(later())
        .set("key", "admin/evil")
        .post(&s, "uploads", b"x")
        .await;
    assert_eq!(r.code(), "AccessDenied");
    let r = form(later())
        .set("x-amz-meta-extra", "1")
        .post(&s, "uploads", b"x")
        .await;
    assert_eq!(r.code(), "AccessDenied");
    // A signature made with the wrong secret; an unknown key.
    let r = Form::new(
        "user/local.bin",
        &conds,
        later(),
        USER,
        "wrong-secret",
        &extra,
    )
    .post(&s, "uploads", b"x")
    .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    let r = Form::new(
        "user/local.bin",
        &conds,
        later(),
        "NOSUCHKEY",
        SECRET,
        &extra,
    )
    .post(&s, "uploads", b"x")
    .await;
    assert_eq!(r.code(), "InvalidAccessKeyId");
    // Tampering with the policy after signing.
    let r = form(later())
        .set(
            "policy",
            &B64.encode(r#"{"expiration":"2099-01-01T00:00:00Z","conditions":[]}"#),
        )
        .post(&s, "uploads", b"x")
        .await;
    assert_eq!(r.code(), "SignatureDoesNotMatch");
    // No policy at all: an anonymous upload, refused without a bucket policy.
    let r = Form {
        fields: vec![("key".into(), "user/local.bin".into())],
    }
    .post(&s, "uploads", b"x")
    .await;
    assert_eq!((r.status, r.code().as_str()), (403, "AccessDenied"));
    check_untouched().await;
}

#[tokio::test]
async fn a_field_given_twice_is_refused_so_the_policy_sees_what_is_stored() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("uploads").send().await.unwrap();
    let form = user_form("user/page", "content-type", "text/plain");
    // The policy checks the first content-type; a second one must not
    // become the stored one (stored XSS through a "validated" upload).
    let mut twice = form.clone();
    twice
        .fields
        .push(("Content-Type".into(), "text/html".into()));
    let r = twice
        .post(&s, "uploads", b"<script>alert(1)</script>")
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "InvalidArgument"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("content-type"), "{}", r.text());
    let e = c
        .head_object()
        .bucket("uploads")
        .key("user/page")
        .send()
        .await;
    assert_eq!(status(&e.unwrap_err()), 404, "nothing was stored");
    // Once, it is taken.
    let r = form.post(&s, "uploads", b"plain").await;
    assert_eq!(r.status, 204, "{}", r.text());
    let head = c
        .head_object()
        .bucket("uploads")
        .key("user/page")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("text/plain"));
}

#[tokio::test]
async fn form_fields_past_20_kb_are_refused_before_they_are_buffered() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("uploads").send().await.unwrap();
    let before = s.peak_rss();
    // One anonymous 256 MiB field, streamed: the server must answer from
    // the first 24 KiB and never hold the rest.
    const FIELD: usize = 256 << 20;
    let head = format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n");
    let length = head.len() + FIELD;
    let chunk = bytes::Bytes::from(vec![b'a'; 1 << 20]);
    let stream = futures::stream::iter(
        std::iter::once(bytes::Bytes::from(head))
            .chain(std::iter::repeat_n(chunk, FIELD >> 20))
            .map(Ok::<_, std::io::Error>),
    );
    let r = reqwest::Client::new()
        .post(format!("{}/uploads", s.endpoint))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .header("content-length", length)
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await;
    let grown = s.peak_rss().saturating_sub(before);
    eprintln!("peak RSS grew by {} KiB", grown >> 10);
    assert!(grown < 64 << 20, "peak RSS grew by {} MiB", grown >> 20);
    // The answer comes before the body is sent; a client may see it or a
    // connection closed under its upload, never a success.
    if let Ok(r) = r {
        assert_eq!(r.status(), 400);
        let text = r.text().await.unwrap_or_default();
        assert!(
            text.is_empty() || text.contains("<Code>MaxPostPreDataLengthExceeded</Code>"),
            "{text}"
        );
    }
    // Exactly over the limit is refused with the code; the server serves on.
    let big = "v".repeat(20 * 1024);
    let r = Form {
        fields: vec![("key".into(), "k".into()), ("x-ignore-pad".into(), big)],
    }
    .post(&s, "uploads", b"x")
    .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "MaxPostPreDataLengthExceeded"),
        "{}",
        r.text()
    );
    let listed = c.list_objects_v2().bucket("uploads").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(0));
}

/// A form carrying a session token is refused (400 InvalidToken): Granary
/// issues no temporary credentials, so it cannot check one; the rest of
/// the form would otherwise be accepted.
#[tokio::test]
async fn a_form_with_a_session_token_is_refused() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("uploads").send().await.unwrap();
    let form = user_form("user/t", "content-type", "text/plain");
    let r = form
        .clone()
        .set("x-amz-security-token", "FwoGZXIvYXdzEBc")
        .post(&s, "uploads", b"data")
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidToken"));
    let e = c.head_object().bucket("uploads").key("user/t").send().await;
    assert_eq!(status(&e.unwrap_err()), 404, "nothing was stored");
    let r = form.post(&s, "uploads", b"data").await;
    assert_eq!(r.status, 204, "{}", r.text());
}
