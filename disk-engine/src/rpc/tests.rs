//! A node served in-process on a loopback port, reached through
//! [`RemoteDisk`]: formatting, shard streams, records, errors and refusals.

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use super::*;
use crate::disk::Disk;
use crate::error::DiskError;
use crate::format::{DirState, FormatRecord, Tier};
use crate::local::LocalDiskOptions;
use crate::messages::{ListStart, PutRecordOutcome, RecordListOptions, RecordPut, ShardOptions};
use crate::types::{Record, ShardId, Stamp, VersionId};

const SECRET: &str = "rpc-test-cluster-secret";

async fn node(dirs: &[std::path::PathBuf]) -> (String, tokio::sync::oneshot::Sender<()>) {
    node_with(dirs, None).await
}

async fn node_with(
    dirs: &[std::path::PathBuf],
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let service = Arc::new(
        NodeService::open(
            dirs,
            ClusterSecret::new(SECRET).unwrap(),
            LocalDiskOptions {
                fsync: false,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_node(listener, service, tls, async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// A node serving `dir`, formatted as the one disk of a set, and the
/// remote disk that reaches it (served until the sender is dropped).
pub(crate) async fn formatted_remote(
    dir: &std::path::Path,
) -> (RemoteDisk, tokio::sync::oneshot::Sender<()>) {
    let (addr, stop) = node(&[dir.to_path_buf()]).await;
    let client = NodeClient::new(&addr, ClusterSecret::new(SECRET).unwrap());
    let label = dir.display().to_string();
    let f = FormatRecord::new_set(Tier::Hot, 1, 0).remove(0);
    client.format(&label, &f, None).await.unwrap();
    (RemoteDisk::new(client, &label, &f), stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_disk_behaves_like_the_local_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("d1");
    let (addr, _stop) = node(std::slice::from_ref(&dir)).await;
    let client = NodeClient::new(&addr, ClusterSecret::new(SECRET).unwrap());
    let label = dir.display().to_string();
    assert!(matches!(
        client.probe(&label).await.unwrap(),
        DirState::Missing
    ));
    let f = FormatRecord::new_set(Tier::Hot, 1, 0).remove(0);
    let disk = RemoteDisk::new(client.clone(), &label, &f);
    // Not formatted yet: offline, not an error of the data.
    assert!(matches!(
        disk.get_records(b"b", b"k").await,
        Err(DiskError::Offline(_))
    ));
    client.format(&label, &f, None).await.unwrap();
    // Calls signed for another disk than the directory holds are refused;
    // a disk of the same slot (a replacement) is taken on, any other not.
    let other_set = FormatRecord {
        disk_id: crate::types::DiskId(Uuid::new_v4()),
        deployment_id: Uuid::new_v4(),
        ..f.clone()
    };
    let other = RemoteDisk::new(client.clone(), &label, &other_set);
    match other.get_records(b"b", b"k").await {
        Err(DiskError::Offline(why)) => assert!(why.contains("another set"), "{why}"),
        other => panic!("{other:?}"),
    }
    let replaced = FormatRecord {
        disk_id: crate::types::DiskId(Uuid::new_v4()),
        ..f.clone()
    };
    let follower = RemoteDisk::new(client.clone(), &label, &replaced);
    assert_eq!(follower.get_records(b"b", b"k").await.unwrap(), vec![]);
    // A second formatting that expects an empty directory loses.
    assert!(matches!(
        client.format(&label, &f, None).await,
        Err(DiskError::Format(_))
    ));
    match client.probe(&label).await.unwrap() {
        DirState::Formatted(g) => assert_eq!(g, f),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        disk.health().await,
        crate::messages::DiskHealth::Online { .. }
    ));

    // A shard streams over in blocks and reads back in any range.
    let id = ShardId(Uuid::now_v7());
    let bs = 64 << 10;
    let opts = ShardOptions {
        block_size: bs as u32,
        shard_index: 0,
    };
    let data: Vec<u8> = (0..(3 * bs + 123)).map(|i| (i * 7 % 251) as u8).collect();
    let mut w = disk.create_shard(id, opts).await.unwrap();
    for c in data.chunks(bs) {
        w.append(Bytes::copy_from_slice(c)).await.unwrap();
    }
    assert_eq!(w.finish().await.unwrap().len, data.len() as u64);
    let got = disk.read_shard(id, 100, 2 * bs as u64).await.unwrap();
    assert_eq!(&got[..], &data[100..100 + 2 * bs]);
    assert_eq!(disk.shard_len(id).await.unwrap(), data.len() as u64);
    // A writer dropped unfinished leaves nothing behind.
    let id2 = ShardId(Uuid::now_v7());
    let mut w = disk.create_shard(id2, opts).await.unwrap();
    w.append(Bytes::from(vec![1u8; bs])).await.unwrap();
    drop(w);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(matches!(
        disk.shard_len(id2).await,
        Err(DiskError::NotFound)
    ));
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
    // A block of the wrong size fails the stream with the node's error.
    let mut w = disk.create_shard(id2, opts).await.unwrap();
    w.append(Bytes::from(vec![1u8; 10])).await.unwrap();
    let bad = async {
        w.append(Bytes::from(vec![1u8; 10])).await?;
        w.finish().await
    };
    assert!(matches!(bad.await, Err(DiskError::InvalidArgument(_))));
    disk.delete_shard(id).await.unwrap();
    assert!(matches!(
        disk.read_shard(id, 0, 1).await,
        Err(DiskError::NotFound)
    ));

    // Records: stored, superseded by stamp, listed, deleted.
    let rec = |ns: u64| Record {
        version: VersionId([1; 16]),
        stamp: Stamp {
            mtime_ns: ns,
            write_id: Uuid::now_v7(),
        },
        body: Bytes::from(vec![0xAB; 300]),
        listing: Bytes::from_static(b"listing"),
    };
    let newer = rec(20);
    assert!(matches!(
        disk.put_record(b"b", b"k\xff", RecordPut::of(newer.clone()))
            .await
            .unwrap(),
        PutRecordOutcome::Stored { replaced: None, .. }
    ));
    assert!(matches!(
        disk.put_record(b"b", b"k\xff", RecordPut::of(rec(10)))
            .await
            .unwrap(),
        PutRecordOutcome::Superseded { .. }
    ));
    assert_eq!(
        disk.get_records(b"b", b"k\xff").await.unwrap(),
        vec![newer.clone()]
    );
    let page = disk
        .list_records(
            b"b",
            RecordListOptions {
                prefix: Vec::new(),
                start: ListStart::Beginning,
                max_keys: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.keys.len(), 1);
    assert_eq!(page.keys[0].key, b"k\xff");
    assert_eq!(
        disk.delete_record(b"b", b"k\xff", newer.version, None)
            .await
            .unwrap(),
        Some(newer)
    );
    assert!(matches!(
        disk.read_piece(Uuid::now_v7()).await,
        Err(DiskError::NotFound)
    ));
    // Leases: one owner at a time.
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let names = vec![b"b\0k".to_vec()];
    assert!(disk.acquire_leases(names.clone(), a, 10_000).await.unwrap());
    assert!(!disk.acquire_leases(names.clone(), b, 10_000).await.unwrap());
    disk.release_leases(names.clone(), a).await.unwrap();
    assert!(disk.acquire_leases(names, b, 10_000).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_replays_and_dead_nodes_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("d1");
    let (addr, stop) = node(std::slice::from_ref(&dir)).await;
    let label = dir.display().to_string();
    // Another secret: refused, and said so.
    let stranger = NodeClient::new(&addr, ClusterSecret::new("not-the-cluster-secret").unwrap());
    match stranger.probe(&label).await {
        Err(DiskError::Offline(why)) => assert!(why.contains("refused"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A captured request sent twice: the second is refused (liveness needs
    // no secret and tells nothing).
    let http = reqwest_like(&addr, &label).await;
    assert_eq!(http, (200, 401));
    // A node that stops: calls fail Offline, fast while it is skipped.
    let client = NodeClient::new(&addr, ClusterSecret::new(SECRET).unwrap());
    client.probe(&label).await.unwrap();
    stop.send(()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let disk = RemoteDisk::new(client, &label, &FormatRecord::new_set(Tier::Hot, 1, 0)[0]);
    let t = std::time::Instant::now();
    for _ in 0..3 {
        assert!(matches!(
            disk.get_records(b"b", b"k").await,
            Err(DiskError::Offline(_))
        ));
    }
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}

/// Sends one signed `hello` twice over a plain HTTP/2 connection; returns
/// both statuses.
async fn reqwest_like(addr: &str, disk: &str) -> (u16, u16) {
    use http_body_util::{BodyExt, Full};
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let secret = ClusterSecret::new(SECRET).unwrap();
    let body = wire::encode(&());
    let digest = auth::body_digest(&body);
    let path = format!("{}hello", wire::PATH_PREFIX);
    let date = auth::now_millis().to_string();
    let nonce = auth::new_nonce();
    let sig = secret.sign_request(&auth::Call {
        method: "POST",
        path: &path,
        session: "",
        disk,
        disk_id: "",
        date: &date,
        nonce: &nonce,
        body: &digest,
    });
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let req = http::Request::post(format!("http://{addr}{path}"))
            .header(wire::DISK, disk)
            .header(auth::DATE, &date)
            .header(auth::NONCE, &nonce)
            .header(auth::BODY, &digest)
            .header(auth::SIGNATURE, &sig)
            .body(Full::new(body.clone()))
            .unwrap();
        let resp = send.send_request(req).await.unwrap();
        statuses.push(resp.status().as_u16());
        let _ = resp.into_body().collect().await;
    }
    let health = http::Request::get(format!("http://{addr}{HEALTH_PATH}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(send.send_request(health).await.unwrap().status(), 200);
    (statuses[0], statuses[1])
}

/// A TCP relay in front of `upstream` that records every byte its clients
/// send: what an on-path observer captures.
async fn recording_relay(upstream: &str) -> (String, Arc<parking_lot::Mutex<Vec<u8>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (upstream, record) = (upstream.to_string(), seen.clone());
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            let record = record.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 << 10];
                while let Ok(n) = cr.read(&mut buf).await {
                    if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    record.lock().extend_from_slice(&buf[..n]);
                }
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut sr, &mut cw).await;
            });
        }
    });
    (addr, seen)
}

/// Sends `bytes` as they were captured on a new connection to `addr` and
/// lets the node act on them.
async fn replay(addr: &str, bytes: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut sink = vec![0u8; 64 << 10];
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), async {
        while let Ok(n) = s.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// A node on `dirs` once their previous node has let go of them.
async fn node_again(dirs: &[std::path::PathBuf]) -> (String, tokio::sync::oneshot::Sender<()>) {
    for _ in 0..100 {
        let opts = LocalDiskOptions {
            fsync: false,
            ..Default::default()
        };
        if NodeService::open(dirs, ClusterSecret::new(SECRET).unwrap(), opts).is_ok() {
            return node(dirs).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the disks stayed locked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_call_is_refused_by_another_node_and_after_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("d1");
    let label = dir.display().to_string();
    let secret = || ClusterSecret::new(SECRET).unwrap();
    let format = |client: Arc<NodeClient>| {
        let label = label.clone();
        async move {
            let f = FormatRecord::new_set(Tier::Hot, 1, 0).remove(0);
            client.format(&label, &f, None).await.unwrap();
        }
    };
    let rec = Record {
        version: VersionId([3; 16]),
        stamp: Stamp {
            mtime_ns: 1,
            write_id: Uuid::now_v7(),
        },
        body: Bytes::from_static(b"captured"),
        listing: Bytes::new(),
    };
    let disk_at = |addr: String| {
        let label = label.clone();
        async move {
            let client = NodeClient::new(&addr, secret());
            let DirState::Formatted(f) = client.probe(&label).await.unwrap() else {
                panic!("not formatted");
            };
            RemoteDisk::new(client, &label, &f)
        }
    };
    let records =
        |addr: String| async move { disk_at(addr).await.get_records(b"b", b"k").await.unwrap() };

    // Node A; a call to it captured on the way.
    let (a, stop_a) = node(std::slice::from_ref(&dir)).await;
    format(NodeClient::new(&a, secret())).await;
    let (relay, captured) = recording_relay(&a).await;
    {
        let disk = disk_at(relay.clone()).await;
        disk.put_record(b"b", b"k", RecordPut::of(rec.clone()))
            .await
            .unwrap();
        let disk = disk_at(a.clone()).await;
        disk.delete_record(b"b", b"k", rec.version, None)
            .await
            .unwrap();
    }
    let captured = captured.lock().clone();
    assert!(!captured.is_empty());
    // Replayed to the running node: refused.
    replay(&a, &captured).await;
    assert_eq!(records(a.clone()).await, vec![]);

    // Replayed to node A after a restart: refused.
    stop_a.send(()).unwrap();
    let (a2, stop_a2) = node_again(std::slice::from_ref(&dir)).await;
    replay(&a2, &captured).await;
    assert_eq!(
        records(a2.clone()).await,
        vec![],
        "replayed after a restart"
    );
    stop_a2.send(()).unwrap();

    // Replayed to node B, which serves a disk under the same path.
    for _ in 0..100 {
        if std::fs::rename(&dir, root.path().join("d1-of-a")).is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (b, _stop_b) = node_again(std::slice::from_ref(&dir)).await;
    format(NodeClient::new(&b, secret())).await;
    replay(&b, &captured).await;
    assert_eq!(records(b.clone()).await, vec![], "replayed to another node");
}

/// A CA (`dir/<its name>.pem`) and the certificates it signs
/// (`dir/<name>.pem` and `.key`).
struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
    dir: std::path::PathBuf,
}

impl Pki {
    fn new(dir: &std::path::Path, ca_name: &str) -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        let ca = params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join(format!("{ca_name}.pem")), ca.pem()).unwrap();
        Pki {
            ca,
            ca_key,
            dir: dir.to_path_buf(),
        }
    }

    fn issue(&self, name: &str, sans: &[&str], usage: rcgen::ExtendedKeyUsagePurpose) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        std::fs::write(self.dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(self.dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// [`tls::TlsFiles`] over the paths [`paths`] gives.
fn tls_files<'a>(paths: &'a [std::path::PathBuf; 3]) -> tls::TlsFiles<'a> {
    tls::TlsFiles {
        cert: &paths[0],
        key: &paths[1],
        ca: &paths[2],
    }
}

/// The certificate and key of `name` in `dir` and the CA `ca`.
fn paths(dir: &std::path::Path, name: &str, ca: &str) -> [std::path::PathBuf; 3] {
    [
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
        dir.join(format!("{ca}.pem")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_lets_only_the_clusters_gateways_in() {
    use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(root.path(), "ca");
    pki.issue("node", &["127.0.0.1", "localhost"], ServerAuth);
    pki.issue("gateway", &["gateway"], ClientAuth);
    let stranger = Pki::new(root.path(), "other-ca");
    stranger.issue("intruder", &["gateway"], ClientAuth);
    let gateway_tls = |name: &str, ca: &str| NodeAccess {
        secret: ClusterSecret::new(SECRET).unwrap(),
        tls: Some(tls::gateway_config(&tls_files(&paths(root.path(), name, ca))).unwrap()),
    };
    let dir = root.path().join("d1");
    let label = dir.display().to_string();
    let node_tls = tls::node_config(&tls_files(&paths(root.path(), "node", "ca"))).unwrap();
    let (addr, _stop) = node_with(std::slice::from_ref(&dir), Some(node_tls)).await;

    // The cluster's gateway: works end to end, shard streams included.
    let gateway = NodeClient::with_access(&addr, &gateway_tls("gateway", "ca"));
    let f = FormatRecord::new_set(Tier::Hot, 1, 0).remove(0);
    gateway.format(&label, &f, None).await.unwrap();
    let disk = RemoteDisk::new(gateway, &label, &f);
    let id = ShardId(Uuid::now_v7());
    let opts = ShardOptions {
        block_size: 4096,
        shard_index: 0,
    };
    let mut w = disk.create_shard(id, opts).await.unwrap();
    w.append(Bytes::from(vec![5u8; 4096])).await.unwrap();
    assert_eq!(w.finish().await.unwrap().len, 4096);
    assert_eq!(
        &disk.read_shard(id, 0, 4096).await.unwrap()[..],
        &[5u8; 4096][..]
    );

    // Without TLS, or with a certificate another CA signed: refused.
    let plain = NodeClient::new(&addr, ClusterSecret::new(SECRET).unwrap());
    assert!(matches!(
        plain.probe(&label).await,
        Err(DiskError::Offline(_))
    ));
    let intruder = NodeClient::with_access(&addr, &gateway_tls("intruder", "ca"));
    assert!(matches!(
        intruder.probe(&label).await,
        Err(DiskError::Offline(_))
    ));
    // A gateway that does not trust the node's CA does not talk to it.
    let wary = NodeClient::with_access(&addr, &gateway_tls("gateway", "other-ca"));
    assert!(matches!(
        wary.probe(&label).await,
        Err(DiskError::Offline(_))
    ));
}
