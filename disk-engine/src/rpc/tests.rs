//! A node served in-process on a loopback port, reached through
//! [`RemoteDisk`]: formatting, shard streams, records, errors and refusals.

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use super::*;
use crate::disk::{Disk, ListStart, PutRecordOutcome, RecordListOptions, RecordPut, ShardOptions};
use crate::error::DiskError;
use crate::format::{DirState, FormatRecord, Tier};
use crate::local::LocalDiskOptions;
use crate::types::{Record, ShardId, Stamp, VersionId};

const SECRET: &str = "rpc-test-cluster-secret";

async fn node(dirs: &[std::path::PathBuf]) -> (String, tokio::sync::oneshot::Sender<()>) {
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
    tokio::spawn(serve_node(listener, service, async {
        let _ = stopped.await;
    }));
    (addr, stop)
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
    let disk = RemoteDisk::new(client.clone(), &label);
    // Not formatted yet: offline, not an error of the data.
    assert!(matches!(
        disk.get_records(b"b", b"k").await,
        Err(DiskError::Offline(_))
    ));
    let f = FormatRecord::new_set(Tier::Hot, 1, 0).remove(0);
    client.format(&label, &f, None).await.unwrap();
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
        crate::disk::DiskHealth::Online { .. }
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
    let disk = RemoteDisk::new(client, &label);
    let t = std::time::Instant::now();
    for _ in 0..3 {
        assert!(matches!(
            disk.get_records(b"b", b"k").await,
            Err(DiskError::Offline(_))
        ));
    }
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}

/// Sends one signed probe twice over a plain HTTP/2 connection; returns
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
    let path = format!("{}probe", wire::PATH_PREFIX);
    let date = auth::now_millis().to_string();
    let nonce = auth::new_nonce();
    let sig = secret.sign_request("POST", &path, disk, &date, &nonce, &digest);
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
