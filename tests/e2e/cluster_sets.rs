//! A cluster whose pool is many erasure sets: 8 nodes of 4 disks, one pool
//! of 32 disks in 2 sets of 16 (the default width; parity 4) and, once
//! more, pinned to sets of 8 (parity 2), served by two gateways. One node
//! is killed under load and restarted, with the SDK's retries off: no read
//! fails and every read is byte-exact; afterwards a heal pass rebuilds what
//! the node missed, and everything acknowledged lists and reads back.

use crate::cluster::{get, kill_under_load, size_of};
use crate::cluster_harness::Cluster;
use crate::harness::{admin_at, Pattern};

async fn through_a_node_kill(mut cluster: Cluster, sets: usize) {
    let (a, b) = (
        cluster.gateways[0].client_without_retries(),
        cluster.gateways[1].client_without_retries(),
    );
    a.create_bucket().bucket("data").send().await.unwrap();
    let (all, writes, reads, during) =
        kill_under_load(&mut cluster, 3, [a.clone(), b.clone()]).await;
    assert!(
        reads.is_empty(),
        "{} failed reads, first: {:?}\ngateway log:\n{}",
        reads.len(),
        &reads[..reads.len().min(3)],
        cluster.gateways[0].log()
    );
    let writes = writes.len();
    assert!(during > 10, "only {during} writes while the node was down");
    let out = admin_at(&cluster.gateways[0].endpoint, &["heal"]).unwrap();
    assert!(
        out.contains("healed:") && out.contains(" 0 failed"),
        "{out}"
    );
    // Every set of the pool in the status, every disk online again.
    let status: serde_json::Value = serde_json::from_str(
        &admin_at(&cluster.gateways[1].endpoint, &["status", "--json"]).unwrap(),
    )
    .unwrap();
    let pools = status["pools"].as_array().unwrap();
    assert_eq!(pools.len(), sets, "{status}");
    assert_eq!(pools[sets - 1]["set"], sets, "{status}");
    for p in pools {
        for d in p["disks"].as_array().unwrap() {
            assert_eq!(d["state"], "online", "{p}");
        }
    }
    let mut listed = Vec::new();
    let mut token = None;
    loop {
        let r = b
            .list_objects_v2()
            .bucket("data")
            .prefix("load/")
            .set_continuation_token(token)
            .send()
            .await
            .unwrap();
        listed.extend(r.contents().iter().map(|o| o.key().unwrap().to_string()));
        match r.next_continuation_token() {
            Some(t) => token = Some(t.to_string()),
            None => break,
        }
    }
    for (k, _) in &all {
        assert!(listed.binary_search(k).is_ok(), "{k} not listed");
    }
    for (k, s) in &all {
        let want = Pattern::bytes(*s, size_of(*s));
        assert_eq!(&get(&a, k).await.unwrap(), &want, "{k}");
    }
    eprintln!(
        "{} objects written, {during} while a node was down; {writes} writes refused",
        all.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_of_two_sets_of_sixteen_serves_through_a_node_kill() {
    let cluster = Cluster::start_in_sets(8, 4, 4, None, 2);
    through_a_node_kill(cluster, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_of_four_sets_of_eight_serves_through_a_node_kill() {
    let cluster = Cluster::start_in_sets(8, 4, 2, Some(8), 2);
    through_a_node_kill(cluster, 4).await;
}
