//! HTTPS: `--tls-cert`/`--tls-key`, the SDK over TLS (where it sends
//! `aws-chunked` bodies with trailing checksums), and plain HTTP refused on
//! the TLS port.

use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
use aws_smithy_http_client::tls;

use crate::harness::*;

/// A self-signed certificate for localhost/127.0.0.1, written into `dir`.
fn certificate(dir: &std::path::Path) -> (String, String, String) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let pem = ck.cert.pem();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, &pem).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    (
        cert.to_string_lossy().into_owned(),
        key.to_string_lossy().into_owned(),
        pem,
    )
}

#[tokio::test]
async fn sdk_over_https() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key, pem) = certificate(certs.path());
    let s = Server::start_with(4, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(s.endpoint.starts_with("https://"), "{}", s.endpoint);
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .tls_context(
            tls::TlsContext::builder()
                .with_trust_store(tls::TrustStore::empty().with_pem_certificate(pem.as_bytes()))
                .build()
                .unwrap(),
        )
        .build_https();
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&s.endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new(
            USER, SECRET, None, None, "tls",
        ))
        .force_path_style(true)
        .http_client(http)
        .build();
    let c = aws_sdk_s3::Client::from_conf(conf);
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // Over HTTPS the SDK streams with aws-chunked and a trailing checksum.
    let data = Pattern::bytes(9, 3 << 20);
    let put = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .checksum_algorithm(ChecksumAlgorithm::Crc32C)
        .body(data.clone().into())
        .send()
        .await
        .unwrap();
    assert!(put.checksum_crc32_c().is_some());
    let g = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(g.checksum_crc32_c(), put.checksum_crc32_c());
    assert_eq!(
        g.body.collect().await.unwrap().into_bytes().as_ref(),
        &data[..]
    );

    // Plain HTTP to the TLS port gets no S3 answer; the server keeps going.
    let plain = format!("http://{}/bkt/k", s.addr);
    let answered = reqwest::get(&plain)
        .await
        .is_ok_and(|r| r.status().is_success());
    assert!(!answered);
    assert_eq!(get_bytes(&c, "bkt", "k").await, data);
    // The admin CLI trusts the certificate it is given.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["admin", "--endpoint", &s.endpoint, "--ca-bundle", &cert])
        .args(["user", "add", "tls-user"])
        .env("GRANARY_ROOT_USER", USER)
        .env("GRANARY_ROOT_PASSWORD", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A client that does not trust the certificate refuses to talk.
    assert!(reqwest::get(format!("{}/granary/health/live", s.endpoint))
        .await
        .is_err());
}

#[tokio::test]
async fn bad_certificate_files_stop_startup() {
    let certs = tempfile::tempdir().unwrap();
    let missing = certs.path().join("none.pem").to_string_lossy().into_owned();
    let root = tempfile::tempdir().unwrap();
    let dirs = vec![root.path().join("disk1")];
    let log =
        match Server::try_start_in(root, dirs, &["--tls-cert", &missing, "--tls-key", &missing]) {
            Ok(_) => panic!("started without its certificate"),
            Err(log) => log,
        };
    assert!(log.contains("TLS certificate"), "{log}");
}
