//! Nodes and gateways as separate processes: read-after-write across
//! gateways, a node killed and restarted under load, same-key races
//! between gateways, and refusals of strangers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use parking_lot::Mutex;

use crate::cluster_harness::{gateway_command, Cluster, NetNs};
use crate::harness::{admin_at, spawn_until, until, Pattern};

pub(crate) async fn put(c: &Client, key: &str, body: &[u8]) -> Result<(), String> {
    c.put_object()
        .bucket("data")
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .map(drop)
        .map_err(|e| format!("PUT {key}: {e:?}"))
}

pub(crate) async fn get(c: &Client, key: &str) -> Result<Vec<u8>, String> {
    let out = c
        .get_object()
        .bucket("data")
        .key(key)
        .send()
        .await
        .map_err(|e| format!("GET {key}: {e:?}"))?;
    let body = out
        .body
        .collect()
        .await
        .map_err(|e| format!("GET {key} body: {e:?}"))?;
    Ok(body.into_bytes().to_vec())
}

/// How many times longer (and with how many more workers) the node-kill
/// test runs than in CI: `GRANARY_E2E_CLUSTER_SCALE` (default 1).
pub(crate) fn scale() -> u64 {
    std::env::var("GRANARY_E2E_CLUSTER_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Sizes cycling through packed, single-stripe and multi-stripe objects.
pub(crate) fn size_of(i: u64) -> usize {
    [700, 40 << 10, 300 << 10, 3 << 20][(i % 4) as usize]
}

/// A steady mixed load through two gateways' clients: each worker writes
/// a new object through one and reads one acknowledged before through the
/// other, until [`Load::finish`].
pub(crate) struct Load {
    /// Keys acknowledged, with the seed of their bytes.
    pub(crate) acked: Arc<Mutex<Vec<(String, u64)>>>,
    write_failures: Arc<Mutex<Vec<String>>>,
    read_failures: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// Starts 4 workers (times [`scale`]).
    pub(crate) fn start(clients: [Client; 2]) -> Load {
        let mut load = Load {
            acked: Arc::default(),
            write_failures: Arc::default(),
            read_failures: Arc::default(),
            stop: Arc::default(),
            workers: Vec::new(),
        };
        for w in 0..4 * scale() {
            let clients = clients.clone();
            let (acked, wf, rf, stop) = (
                load.acked.clone(),
                load.write_failures.clone(),
                load.read_failures.clone(),
                load.stop.clone(),
            );
            load.workers.push(tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let seed = w * 1_000_000 + i;
                    let key = format!("load/{w}/{i}");
                    let writer = &clients[(i % 2) as usize];
                    let reader = &clients[((i + 1) % 2) as usize];
                    match put(writer, &key, &Pattern::bytes(seed, size_of(seed))).await {
                        Ok(()) => acked.lock().push((key.clone(), seed)),
                        Err(e) => wf.lock().push(e),
                    }
                    let pick = {
                        let acked = acked.lock();
                        acked
                            .get((seed * 7919) as usize % acked.len().max(1))
                            .cloned()
                    };
                    if let Some((k, s)) = pick {
                        match get(reader, &k).await {
                            Ok(got) if got == Pattern::bytes(s, size_of(s)) => {}
                            Ok(_) => rf.lock().push(format!("GET {k}: wrong bytes")),
                            Err(e) => rf.lock().push(e),
                        }
                    }
                }
            }));
        }
        load
    }

    /// Stops the workers; returns the keys acknowledged, the failed writes
    /// and the failed reads.
    pub(crate) async fn finish(self) -> (Vec<(String, u64)>, Vec<String>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers {
            w.await.unwrap();
        }
        let take = |v: &Mutex<Vec<String>>| std::mem::take(&mut *v.lock());
        let acked = std::mem::take(&mut *self.acked.lock());
        (acked, take(&self.write_failures), take(&self.read_failures))
    }
}

/// Runs a [`Load`] through `clients` for 2 s, kills node `node` for 4 s,
/// restarts it and goes on 4 s more (times [`scale`]); returns what
/// [`Load::finish`] does and how many writes were acknowledged while the
/// node was down.
pub(crate) async fn kill_under_load(
    cluster: &mut Cluster,
    node: usize,
    clients: [Client; 2],
) -> (Vec<(String, u64)>, Vec<String>, Vec<String>, usize) {
    let load = Load::start(clients);
    let scale = scale();
    tokio::time::sleep(Duration::from_secs(2 * scale)).await;
    let before_kill = load.acked.lock().len();
    cluster.nodes[node].kill();
    tokio::time::sleep(Duration::from_secs(4 * scale)).await;
    let during = load.acked.lock().len() - before_kill;
    cluster.nodes[node].start();
    tokio::time::sleep(Duration::from_secs(4 * scale)).await;
    let (acked, writes, reads) = load.finish().await;
    (acked, writes, reads, during)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_gateways_serve_one_cluster_through_a_node_kill() {
    // 4 nodes × 2 disks, 6+2: a node holds exactly the parity.
    let mut cluster = Cluster::start(4, 2, 2, 2);
    let (a, b) = (cluster.gateways[0].client(), cluster.gateways[1].client());
    a.create_bucket().bucket("data").send().await.unwrap();
    // What one gateway writes, the other reads and lists at once.
    for i in 0..4u64 {
        let body = Pattern::bytes(i, size_of(i));
        put(&a, &format!("first/{i}"), &body).await.unwrap();
        assert_eq!(get(&b, &format!("first/{i}")).await.unwrap(), body);
    }
    let listed = b
        .list_objects_v2()
        .bucket("data")
        .prefix("first/")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.contents().len(), 4);

    // A steady mixed load through both gateways while node 3 is killed
    // and later restarted: every write is acknowledged, every read of an
    // acknowledged object returns its bytes.
    let (acked, writes, reads, during) =
        kill_under_load(&mut cluster, 2, [a.clone(), b.clone()]).await;
    let errors: Vec<String> = writes.into_iter().chain(reads).collect();
    assert!(
        errors.is_empty(),
        "{} failures, first: {:?}\ngateway log:\n{}",
        errors.len(),
        &errors[..errors.len().min(3)],
        cluster.gateways[0].log()
    );
    assert!(during > 10, "only {during} writes while the node was down");
    // All shards healed afterwards: after a heal pass, with another node
    // gone, everything acknowledged still reads back through both gateways.
    let out = admin_at(&cluster.gateways[0].endpoint, &["heal"]).unwrap();
    assert!(
        out.contains("healed:") && out.contains(" 0 failed"),
        "{out}"
    );
    cluster.nodes[0].kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = acked;
    for (k, s) in &all {
        let want = Pattern::bytes(*s, size_of(*s));
        assert_eq!(&get(&a, k).await.unwrap(), &want, "{k}");
        assert_eq!(&get(&b, k).await.unwrap(), &want, "{k}");
    }
    eprintln!(
        "{} objects written, {during} while a node was down",
        all.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_key_writers_on_two_gateways_leave_one_whole_winner() {
    let cluster = Cluster::start(4, 2, 4, 2);
    let (a, b) = (cluster.gateways[0].client(), cluster.gateways[1].client());
    a.create_bucket().bucket("data").send().await.unwrap();
    // Scheduled background work belongs to exactly one of the gateways.
    let owners = || {
        cluster
            .gateways
            .iter()
            .filter(|g| {
                let out = admin_at(&g.endpoint, &["status", "--json"]).unwrap();
                serde_json::from_str::<serde_json::Value>(&out).unwrap()["runsBackgroundWork"]
                    == true
            })
            .count()
    };
    until(10, "one gateway to own background work", async || {
        owners() == 1
    })
    .await;
    // Each gateway shows its lease workers; the owner's says it holds the
    // background lease.
    for g in &cluster.gateways {
        let v: serde_json::Value =
            serde_json::from_str(&admin_at(&g.endpoint, &["status", "--json"]).unwrap()).unwrap();
        let workers = v["workers"].as_array().unwrap();
        let named = |n: &str| workers.iter().find(|w| w["name"] == n).cloned();
        assert!(named("writer lease").is_some(), "{v}");
        let held = named("background lease").unwrap()["status"]["detail"] == "held here";
        assert_eq!(held, v["runsBackgroundWork"] == true, "{v}");
    }
    for round in 0..6u64 {
        let key = format!("race/{round}");
        let size = [900, 2 << 20][(round % 2) as usize];
        let bodies: Vec<Vec<u8>> = (0..8)
            .map(|i| Pattern::bytes(round * 100 + i, size))
            .collect();
        let writers: Vec<_> = bodies
            .iter()
            .enumerate()
            .map(|(i, body)| {
                let c = if i % 2 == 0 { a.clone() } else { b.clone() };
                let (key, body) = (key.clone(), body.clone());
                tokio::spawn(async move { put(&c, &key, &body).await })
            })
            .collect();
        for w in writers {
            w.await.unwrap().unwrap();
        }
        let from_a = get(&a, &key).await.unwrap();
        let from_b = get(&b, &key).await.unwrap();
        assert_eq!(from_a, from_b, "the gateways disagree on {key}");
        assert!(bodies.contains(&from_a), "{key} is not any one write");
        let etag = |c: Client| {
            let key = key.clone();
            async move {
                c.head_object()
                    .bucket("data")
                    .key(key)
                    .send()
                    .await
                    .unwrap()
                    .e_tag()
                    .unwrap()
                    .to_string()
            }
        };
        assert_eq!(etag(a.clone()).await, etag(b.clone()).await);
    }
    // Conditional creates racing on two gateways: exactly one wins, the
    // others are refused, and the winner's bytes are what both serve.
    for round in 0..6u64 {
        let key = format!("create-once/{round}");
        let tries: Vec<_> = (0..8u64)
            .map(|i| {
                let c = if i % 2 == 0 { a.clone() } else { b.clone() };
                let key = key.clone();
                tokio::spawn(async move {
                    let body = Pattern::bytes(round * 1000 + i, 5000);
                    let r = c
                        .put_object()
                        .bucket("data")
                        .key(&key)
                        .if_none_match("*")
                        .body(ByteStream::from(body.clone()))
                        .send()
                        .await;
                    (r.map_err(|e| crate::harness::code(&e)), body)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tries {
            match t.await.unwrap() {
                (Ok(_), body) => winners.push(body),
                (Err(code), _) => assert!(
                    code == "PreconditionFailed" || code == "ConditionalRequestConflict",
                    "{code}"
                ),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "{key}: {} conditional creates won",
            winners.len()
        );
        assert_eq!(get(&a, &key).await.unwrap(), winners[0]);
        assert_eq!(get(&b, &key).await.unwrap(), winners[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_without_the_cluster_secret_gets_nothing() {
    let cluster = Cluster::start(2, 2, 2, 1);
    let log = cluster.root.path().join("stranger.log");
    let mut cmd = gateway_command(
        &cluster.cluster_file,
        "not-the-cluster-secret-at-all",
        &["--wait", "2"],
    );
    cmd.env("RUST_LOG", "warn");
    match spawn_until(cmd, &log, "Granary listening on ") {
        Ok(_) => panic!("a gateway with the wrong secret started"),
        Err(log) => assert!(log.contains("refused"), "{log}"),
    }
    assert!(cluster.nodes[0].log().contains("internal RPC refused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_over_mutual_tls_serves_through_a_node_restart_and_refuses_plain_gateways() {
    let mut cluster = Cluster::start_with_tls(2, 2, 2, 1);
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let body = Pattern::bytes(7, 3 << 20);
    put(&c, "before", &body).await.unwrap();
    // A restarted node has a new session; the gateway learns it over a
    // new TLS connection, and a write needs that node (2 + 2 disks,
    // parity 2: the write quorum is 3).
    cluster.nodes[0].kill();
    cluster.nodes[0].start();
    until(20, "a write after the node restarted", async || {
        put(&c, "after", &body).await.is_ok()
    })
    .await;
    assert_eq!(get(&c, "before").await.unwrap(), body);
    assert_eq!(get(&c, "after").await.unwrap(), body);
    // A gateway without a certificate cannot open the pool.
    let log = cluster.root.path().join("plain.log");
    let cmd = gateway_command(
        &cluster.cluster_file,
        crate::cluster_harness::CLUSTER_SECRET,
        &["--wait", "2"],
    );
    assert!(spawn_until(cmd, &log, "Granary listening on ").is_err());
    assert!(
        cluster.nodes[0].log().contains("TLS handshake refused")
            || cluster.nodes[1].log().contains("TLS handshake refused"),
        "{}",
        cluster.nodes[0].log()
    );
}

/// Writes objects `prefix/i` for `i` in `seeds`, each the pattern of its
/// seed in the size `size_of` gives, and adds them to `objects`.
async fn write_batch(
    c: &Client,
    prefix: &str,
    seeds: std::ops::Range<u64>,
    objects: &mut Vec<(String, u64)>,
) {
    for i in seeds {
        let key = format!("{prefix}/{i}");
        put(c, &key, &Pattern::bytes(i, size_of(i))).await.unwrap();
        objects.push((key, i));
    }
}

fn heal_progress(endpoint: &str) -> serde_json::Value {
    let out = admin_at(endpoint, &["status", "--json"]).unwrap();
    serde_json::from_str::<serde_json::Value>(&out).unwrap()["heal"].clone()
}

async fn read_all(c: &Client, objects: &[(String, u64)]) {
    for (k, s) in objects {
        assert_eq!(
            get(c, k).await.unwrap(),
            Pattern::bytes(*s, size_of(*s)),
            "{k}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_missed_writes_and_a_wiped_disk_are_healed() {
    let mut cluster = Cluster::start(4, 2, 2, 1);
    let gw = cluster.gateways[0].endpoint.clone();
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let mut objects = Vec::new();
    write_batch(&c, "before", 0..12, &mut objects).await;
    // Node 3 misses a batch of writes.
    cluster.nodes[2].kill();
    write_batch(&c, "while-down", 100..124, &mut objects).await;
    // A gateway started while the node is down serves everything.
    cluster.add_gateway();
    read_all(&cluster.gateways[1].client(), &objects).await;
    cluster.nodes[2].start();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pending = heal_progress(&gw)["objectsAtRisk"].as_u64().unwrap();
    assert_eq!(pending, 24, "objects at risk");
    let out = admin_at(&gw, &["heal"]).unwrap();
    assert!(out.contains("healed:"), "{out}");
    let p = heal_progress(&gw);
    assert_eq!(p["failed"], 0, "{p}");
    assert_eq!(p["objectsAtRisk"], 0, "{p}");
    assert!(p["shardsRebuilt"].as_u64().unwrap() >= 24, "{p}");
    assert!(p["recordsRewritten"].as_u64().unwrap() >= 24, "{p}");
    let secs = (p["finishedAt"].as_u64().unwrap() - p["startedAt"].as_u64().unwrap()).max(1);
    eprintln!(
        "heal pass: {} keys, {} MiB verified in ~{secs} s",
        p["scanned"],
        p["bytes"].as_u64().unwrap() >> 20
    );
    // Node 3 now holds its shards: with node 1 gone, the other six disks
    // (node 3's among them) are exactly enough to read everything.
    cluster.nodes[0].kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    read_all(&c, &objects).await;
    cluster.nodes[0].start();

    // A disk of node 2 is replaced by an empty one: the gateway formats it
    // into its slot and heals it without being asked.
    cluster.nodes[1].kill();
    let wiped = cluster.nodes[1].disks[0].clone();
    std::fs::remove_dir_all(&wiped).unwrap();
    std::fs::create_dir(&wiped).unwrap();
    cluster.nodes[1].start();
    let passes = heal_progress(&gw)["passes"].as_u64().unwrap();
    until(60, "the replaced disk to be healed", async || {
        let p = heal_progress(&gw);
        p["passes"].as_u64().unwrap() > passes && p["running"] == false
    })
    .await;
    assert!(wiped.join("format.json").exists());
    let status = admin_at(&gw, &["status"]).unwrap();
    assert!(status.contains("8 of 8 disks online"), "{status}");
    assert!(
        status.contains(&format!(
            "node {}: 2 of 2 disks online",
            cluster.nodes[1].address
        )),
        "{status}"
    );
    // Prove the rebuild: lose node 4 and read everything again.
    cluster.nodes[3].kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    read_all(&c, &objects).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_write_wins_even_from_a_gateway_whose_clock_lags() {
    let mut cluster = Cluster::start(2, 2, 2, 1);
    // The second gateway's clock runs a minute behind the first's.
    cluster.add_gateway_with(&[("GRANARY_FAULT_CLOCK_SKEW_MS", "-60000")]);
    let (fast, slow) = (cluster.gateways[0].client(), cluster.gateways[1].client());
    fast.create_bucket().bucket("data").send().await.unwrap();
    for round in 0..3u64 {
        let key = format!("k{round}");
        put(&fast, &key, b"from the gateway ahead").await.unwrap();
        put(&slow, &key, b"written later, behind").await.unwrap();
        for c in [&fast, &slow] {
            assert_eq!(get(c, &key).await.unwrap(), b"written later, behind");
        }
        // Tags set and a delete made later from the lagging gateway win too.
        put(&fast, &key, b"again from the gateway ahead")
            .await
            .unwrap();
        let tags = aws_sdk_s3::types::Tagging::builder()
            .tag_set(
                aws_sdk_s3::types::Tag::builder()
                    .key("by")
                    .value("slow")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        slow.put_object_tagging()
            .bucket("data")
            .key(&key)
            .tagging(tags)
            .send()
            .await
            .unwrap();
        let seen = fast
            .get_object_tagging()
            .bucket("data")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(seen.tag_set().len(), 1, "the later tagging was lost");
        slow.delete_object()
            .bucket("data")
            .key(&key)
            .send()
            .await
            .unwrap();
        for c in [&fast, &slow] {
            assert!(get(c, &key).await.is_err(), "{key} survived a later delete");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_get_streaming_when_a_node_dies_finishes_from_parity() {
    let mut cluster = Cluster::start(4, 2, 2, 1);
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let size = 48 << 20;
    let body = Pattern::bytes(7, size);
    put(&c, "big", &body).await.unwrap();
    let mut out = c
        .get_object()
        .bucket("data")
        .key("big")
        .send()
        .await
        .unwrap()
        .body;
    let mut got = Vec::with_capacity(size);
    while got.len() < 4 << 20 {
        got.extend_from_slice(&out.next().await.unwrap().unwrap());
    }
    // Node 1 holds data shards of every stripe; it dies mid-stream.
    cluster.nodes[0].kill();
    while let Some(chunk) = out.next().await {
        got.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(got.len(), size);
    assert!(got == body, "the bytes after the node died differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_node_is_skipped_and_healed_when_it_returns() {
    let mut cluster = Cluster::start(4, 2, 2, 1);
    let gw = cluster.gateways[0].endpoint.clone();
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    // Node 2 stops answering but keeps its connections open (as behind a
    // partition): calls to it hang instead of failing.
    cluster.nodes[1].freeze();
    let started = std::time::Instant::now();
    let mut objects = Vec::new();
    write_batch(&c, "partitioned", 0..20, &mut objects).await;
    read_all(&c, &objects).await;
    let took = started.elapsed();
    cluster.nodes[1].thaw();
    // Back: the gateway uses it again, and healing restores its copies.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let out = admin_at(&gw, &["heal"]).unwrap();
    assert!(out.contains("healed:"), "{out}");
    let p = heal_progress(&gw);
    assert!(p["shardsRebuilt"].as_u64().unwrap() >= 20, "{p}");
    // Prove it: without node 4 the data needs node 2 again.
    cluster.nodes[3].kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    read_all(&c, &objects).await;
    eprintln!("40 requests during the partition took {took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_pool_added_to_a_running_cluster_takes_cold_objects() {
    let mut cluster = Cluster::start(4, 1, 2, 1);
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let mut old = Vec::new();
    write_batch(&c, "old", 0..6, &mut old).await;
    // Storage classes of the cold pool are refused while there is none.
    let refused = c
        .put_object()
        .bucket("data")
        .key("early")
        .storage_class(aws_sdk_s3::types::StorageClass::Glacier)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert!(refused.is_err());
    cluster.add_cold_pool(4, 1, 2);
    cluster.restart_gateways();
    let c = cluster.gateways[0].client();
    read_all(&c, &old).await;
    let body = Pattern::bytes(99, 3 << 20);
    c.put_object()
        .bucket("data")
        .key("archived")
        .storage_class(aws_sdk_s3::types::StorageClass::Glacier)
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("data")
        .key("archived")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class().map(|s| s.as_str()), Some("GLACIER"));
    assert_eq!(get(&c, "archived").await.unwrap(), body);
    // Its bytes are on the cold pool's nodes.
    let cold_files = shard_files_of(&cluster.nodes[4..]);
    assert!(
        cold_files >= 4,
        "{cold_files} shard files on the cold nodes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_cut_off_by_a_network_partition_is_skipped_and_healed() {
    if !NetNs::available() {
        eprintln!("SKIPPED: network namespaces need root and `ip`");
        return;
    }
    // Node 4 runs in a network namespace joined by a veth pair.
    let mut cluster = Cluster::start_isolated(4, 2, 2, 1, 1);
    let gw = cluster.gateways[0].endpoint.clone();
    let c = cluster.gateways[0].client();
    c.create_bucket().bucket("data").send().await.unwrap();
    let mut objects = Vec::new();
    write_batch(&c, "before", 0..8, &mut objects).await;
    // The partition: the node keeps running, its packets go nowhere.
    let ns = cluster.nodes[3].netns.as_ref().unwrap();
    ns.set_connected(false);
    let started = std::time::Instant::now();
    write_batch(&c, "cut-off", 100..120, &mut objects).await;
    read_all(&c, &objects).await;
    let took = started.elapsed();
    ns.set_connected(true);
    // Back: used again once its liveness probe answers, then healed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let out = admin_at(&gw, &["heal"]).unwrap();
    assert!(
        out.contains("healed:") && out.contains(" 0 failed"),
        "{out}"
    );
    let status = admin_at(&gw, &["status"]).unwrap();
    assert!(status.contains("8 of 8 disks online"), "{status}");
    cluster.nodes[0].kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    read_all(&c, &objects).await;
    eprintln!("48 requests across the partition took {took:?}");
}

fn shard_files_of(nodes: &[crate::cluster_harness::Node]) -> usize {
    crate::harness::count_shard_files(nodes.iter().flat_map(|n| &n.disks))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hot_pool_added_later_takes_new_keys_by_free_space_and_holds_their_records() {
    let mut cluster = Cluster::start(4, 1, 2, 1);
    let gw = cluster.gateways[0].client();
    gw.create_bucket().bucket("data").send().await.unwrap();
    let mut old = Vec::new();
    write_batch(&gw, "old", 0..8, &mut old).await;
    // A second hot pool joins the cluster file; the gateway restarts.
    cluster.add_hot_pool(4, 1, 2);
    cluster.restart_gateways();
    let endpoint = cluster.gateways[0].endpoint.clone();
    let c = cluster.gateways[0].client();
    read_all(&c, &old).await;
    let (first, second) = (
        shard_files_of(&cluster.nodes[..4]),
        shard_files_of(&cluster.nodes[4..]),
    );
    assert_eq!(second, 0);
    // New objects spread over both pools (the disks share one filesystem,
    // so the two pools have the same free space: about half each).
    let new: Vec<(String, u64)> = (0..40u64).map(|i| (format!("new/{i}"), 1000 + i)).collect();
    let body_of = |s: u64| Pattern::bytes(s, 300 << 10);
    for (k, s) in &new {
        put(&c, k, &body_of(*s)).await.unwrap();
    }
    let multipart = Pattern::bytes(77, 11 << 20);
    let up = c
        .create_multipart_upload()
        .bucket("data")
        .key("new/multipart")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let mut done = Vec::new();
    for (n, chunk) in multipart.chunks(6 << 20).enumerate() {
        let part = c
            .upload_part()
            .bucket("data")
            .key("new/multipart")
            .upload_id(id)
            .part_number(n as i32 + 1)
            .body(ByteStream::from(chunk.to_vec()))
            .send()
            .await
            .unwrap();
        done.push(
            aws_sdk_s3::types::CompletedPart::builder()
                .part_number(n as i32 + 1)
                .e_tag(part.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("data")
        .key("new/multipart")
        .upload_id(id)
        .multipart_upload(
            aws_sdk_s3::types::CompletedMultipartUpload::builder()
                .set_parts(Some(done))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let (first_now, second_now) = (
        shard_files_of(&cluster.nodes[..4]),
        shard_files_of(&cluster.nodes[4..]),
    );
    assert!(
        second_now >= 4 * 5,
        "only {second_now} shard files in the new pool"
    );
    assert!(
        first_now >= first + 4 * 5,
        "the first pool took almost nothing new"
    );
    for (k, s) in &new {
        assert_eq!(get(&c, k).await.unwrap(), body_of(*s), "{k}");
    }
    assert_eq!(get(&c, "new/multipart").await.unwrap(), multipart);
    read_all(&c, &old).await;
    let listed = c
        .list_objects_v2()
        .bucket("data")
        .prefix("new/")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.contents().len(), 41);
    let status = admin_at(&endpoint, &["status"]).unwrap();
    assert!(
        status.contains("hot (pool-1) pool, erasure set 1: 4 of 4 disks online"),
        "{status}"
    );
    // The new pool holds its keys' records, not only their bytes: with
    // its nodes down, the keys living there answer 503 and the others,
    // the old ones among them, read as before.
    for node in &mut cluster.nodes[4..] {
        node.kill();
    }
    let strict = cluster.gateways[0].client_without_retries();
    let mut unavailable = 0;
    for (k, s) in &new {
        match strict.get_object().bucket("data").key(k).send().await {
            Ok(out) => {
                let body = out.body.collect().await.unwrap().into_bytes();
                assert_eq!(body.as_ref(), body_of(*s).as_slice(), "{k}");
            }
            Err(e) => {
                let status = e.raw_response().map(|r| r.status().as_u16());
                assert_eq!(status, Some(503), "{k}: {e:?}");
                unavailable += 1;
            }
        }
    }
    assert!(
        (1..new.len()).contains(&unavailable),
        "{unavailable} of {} new keys lived in the stopped pool",
        new.len()
    );
    read_all(&strict, &old).await;
    for node in &mut cluster.nodes[4..] {
        node.start();
    }
    until(60, "the new pool's keys to read again", async || {
        for (k, _) in &new {
            if get(&c, k).await.is_err() {
                return false;
            }
        }
        true
    })
    .await;
    for (k, s) in &new {
        assert_eq!(get(&c, k).await.unwrap(), body_of(*s), "{k}");
    }
    // A heal pass covers the new pool; deleting objects frees its space.
    let out = admin_at(&endpoint, &["heal"]).unwrap();
    assert!(out.contains(" 0 failed"), "{out}");
    for (k, _) in &new {
        c.delete_object()
            .bucket("data")
            .key(k)
            .send()
            .await
            .unwrap();
    }
    c.delete_object()
        .bucket("data")
        .key("new/multipart")
        .send()
        .await
        .unwrap();
    until(30, "the new pool's shard files to be freed", async || {
        shard_files_of(&cluster.nodes[4..]) == 0
    })
    .await;
    read_all(&c, &old).await;
}
