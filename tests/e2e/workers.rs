//! Background work as `granary admin status` shows it: every worker of a
//! store with its state, steps and failures; a read repair and an
//! asked-for heal pass are steps of their workers; SIGTERM stops them all
//! and the server exits cleanly.

use serde_json::Value;

use crate::harness::*;

/// The store's workers, from `granary admin status --json`.
fn workers(s: &Server) -> Vec<Value> {
    let v: Value = serde_json::from_str(&admin(s, &["status", "--json"]).unwrap()).unwrap();
    v["workers"].as_array().unwrap().clone()
}

/// The worker called `name`.
fn worker(s: &Server, name: &str) -> Value {
    workers(s)
        .into_iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no worker {name}"))
}

#[tokio::test]
async fn every_background_worker_is_shown_and_counts_its_steps() {
    // No hot-object cache: the read below must go to the disks.
    let mut s = Server::start_with(4, &["--read-cache-mib", "0"]);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let data = Pattern::bytes(5, 3 << 20);
    put_bytes(&c, "bkt", "k", data.clone()).await;

    let shown = workers(&s);
    let names: Vec<&str> = shown.iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "repair",
            "tier release",
            "heal",
            "gc",
            "at-risk finder",
            "lifecycle"
        ]
    );
    for w in &shown {
        assert!(w["state"] == "idle" || w["state"] == "busy", "{w}");
        assert_eq!(w["errors"], 0, "{w}");
    }
    assert_eq!(worker(&s, "repair")["steps"], 0);

    // A read that meets a missing data shard queues the object: the repair
    // worker rebuilds it, one step.
    let lost = s
        .shard_files()
        .into_iter()
        .flatten()
        .find(|f| shard_index(f) == 0)
        .unwrap();
    std::fs::remove_file(&lost).unwrap();
    assert_eq!(get_bytes(&c, "bkt", "k").await, data);
    until(30, "the repair worker to rebuild the shard", async || {
        worker(&s, "repair")["status"]["detail"] == "1 repaired, 0 failed"
    })
    .await;
    let repair = worker(&s, "repair");
    assert!(repair["steps"].as_u64().unwrap() >= 1, "{repair}");
    assert_eq!(repair["status"]["queue"], 0, "{repair}");
    assert!(lost.exists(), "the lost shard file is back");

    // An asked-for pass is a step of the heal worker.
    admin(&s, &["heal"]).unwrap();
    until(60, "the heal worker to finish the pass", async || {
        let heal = worker(&s, "heal");
        heal["state"] == "idle"
            && heal["status"]["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("1 passes finished"))
    })
    .await;

    let text = admin(&s, &["status"]).unwrap();
    for line in ["worker repair", "1 repaired, 0 failed", "worker lifecycle"] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    // Every worker stops at SIGTERM; the server exits with success.
    s.stop();
}
