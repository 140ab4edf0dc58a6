use std::time::Duration;

use crate::harness::*;

#[tokio::test]
async fn health_endpoints_and_reserved_prefix() {
    let s = Server::start(1);
    let live = reqwest::get(format!("{}/granary/health/live", s.endpoint))
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    let ready = reqwest::get(format!("{}/granary/health/ready", s.endpoint))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    // Anything else under /granary/ is an ordinary (unauthenticated) S3 request.
    let other = reqwest::get(format!("{}/granary/nothing", s.endpoint))
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
    // Every S3 response carries a request id.
    let r = Raw::new("GET", format!("{}/", s.endpoint)).send().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-amz-request-id"].len(), 16);
    let r = reqwest::get(format!("{}/nobucket/k", s.endpoint))
        .await
        .unwrap();
    let id = r.headers()["x-amz-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(r
        .text()
        .await
        .unwrap()
        .contains(&format!("<RequestId>{id}</RequestId>")));
}

#[tokio::test]
async fn generated_credentials_are_stored_privately_and_printed_once() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let run = |dir: &std::path::Path| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_granary"))
            .arg("server")
            .arg(dir)
            .args(["--address", "127.0.0.1:0"])
            .env_remove("GRANARY_ROOT_USER")
            .env_remove("GRANARY_ROOT_PASSWORD")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut out = Vec::new();
        for _ in 0..6 {
            match lines.next() {
                Some(Ok(l)) => out.push(l),
                _ => break,
            }
            if out.last().unwrap().contains("shown only")
                || out.last().unwrap().contains("Using the root")
            {
                break;
            }
        }
        unsafe_kill(child.id(), "TERM");
        child.wait().unwrap();
        out.join("\n")
    };
    let first = run(&dir);
    let secret_line = first
        .lines()
        .find(|l| l.contains("AWS_SECRET_ACCESS_KEY="))
        .expect("secret printed on first start");
    let secret = secret_line.split('=').nth(1).unwrap();
    // Sealed in the data directory's keyring under the unseal key beside
    // it, both private; the secret itself is in neither.
    let mode = |f: &std::path::Path| std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
    let (keyring, unseal) = (
        dir.join("keyring.json"),
        root.path().join("granary-unseal.key"),
    );
    assert_eq!((mode(&keyring), mode(&unseal)), (0o600, 0o600));
    for f in [&keyring, &unseal] {
        assert!(!std::fs::read_to_string(f).unwrap().contains(secret));
    }
    assert!(!dir.join("root-credentials").exists());
    let second = run(&dir);
    assert!(!second.contains(secret), "secret printed again:\n{second}");
    assert!(second.contains("Using the root credentials sealed in the disks' keyrings"));
    // `granary admin` on the machine opens the keyring for its root key.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["admin", "--endpoint", "http://127.0.0.1:9", "--data-dir"])
        .arg(&dir)
        .args(["user", "list"])
        .env_remove("GRANARY_ROOT_USER")
        .env_remove("GRANARY_ROOT_PASSWORD")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    // It got as far as the network (nothing listens there).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("no root key"), "{err}");
    assert!(
        err.contains("127.0.0.1:9") || err.contains("connect"),
        "{err}"
    );
}

#[tokio::test]
async fn virtual_hosted_style_requests() {
    let s = Server::start_with(1, &["--domain", "s3.granary.test"]);
    let c = s.client();
    c.create_bucket().bucket("vhost").send().await.unwrap();
    put_bytes(&c, "vhost", "dir/key", b"virtual".to_vec()).await;
    let port = s.addr.rsplit(':').next().unwrap();
    let url = format!("http://vhost.s3.granary.test:{port}/dir/key");
    let req = Raw::new("GET", url.clone()).signed(USER, SECRET, "us-east-1", None);
    let client = reqwest::Client::builder()
        .resolve("vhost.s3.granary.test", s.addr.parse().unwrap())
        .build()
        .unwrap();
    let (parts, _) = req.into_parts();
    let mut r = client.get(&url);
    for (k, v) in parts.headers.iter() {
        if k != "host" {
            r = r.header(k, v);
        }
    }
    let resp = r.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), b"virtual");
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_downloads() {
    let mut s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(9, 64 << 20);
    put_bytes(&c, "bkt", "k", data.clone()).await;
    let mut got = c.get_object().bucket("bkt").key("k").send().await.unwrap();
    let first = got.body.next().await.unwrap().unwrap();
    unsafe_kill(s.pid(), "TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut all = first.to_vec();
    while let Some(chunk) = got.body.next().await {
        all.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(all, data);
    s.stop();
    // New connections are refused once it has stopped.
    assert!(reqwest::get(format!("{}/granary/health/live", s.endpoint))
        .await
        .is_err());
}
