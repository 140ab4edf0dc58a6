//! `granary admin heal` and `granary admin status`: start a healing pass
//! and follow it with a progress bar; show every pool's disks, the pass and
//! the repair backlog.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use crate::admin_client::Client;
use crate::lifecycle_admin::{bar, mib};

fn summary(p: &Value) -> String {
    format!(
        "{} keys, {} verified, {} shards rebuilt, {} records rewritten, {} failed",
        p["scanned"],
        mib(&p["bytes"]),
        p["shardsRebuilt"],
        p["recordsRewritten"],
        p["failed"]
    )
}

/// One line about garbage collection.
pub fn gc_summary(g: &Value) -> String {
    let mut s = format!(
        "gc: {} passes{}; {} shard files and {} pieces deleted ({}), {} staged entries cleared; last pass checked {}",
        g["passes"],
        if g["running"] == Value::Bool(true) { ", one running" } else { "" },
        g["shardsDeleted"],
        g["piecesDeleted"],
        mib(&g["bytesReclaimed"]),
        g["stagedCleared"],
        g["checked"],
    );
    let sets = g["sets"].as_array().map(Vec::as_slice).unwrap_or_default();
    for set in sets {
        let name = format!("{}/{}", set["pool"].as_str().unwrap_or("?"), set["set"]);
        match set["skipped"].as_str() {
            Some(why) => s.push_str(&format!("\n  skipped set {name}: {why}")),
            None if sets.len() > 1 => s.push_str(&format!(
                "\n  set {name}: checked {}, deleted {}",
                set["checked"], set["deleted"]
            )),
            None => {}
        }
    }
    s
}

fn line(p: &Value) -> String {
    let total = p["total"].as_u64().unwrap_or(0).max(1);
    let mut out = format!(
        "{} {}",
        bar(p["scanned"].as_u64().unwrap_or(0), total, "keys"),
        p["namespace"].as_str().unwrap_or("")
    );
    // With many sets, how far each is (they are healed at once).
    let sets = p["sets"].as_array().map(Vec::as_slice).unwrap_or_default();
    if sets.len() > 1 {
        let each: Vec<String> = sets.iter().map(set_share).collect();
        out.push_str(&format!(" [{}]", each.join(" ")));
    }
    out
}

/// One set's part of a pass, as `hot/2 40%` (`done` when finished).
fn set_share(s: &Value) -> String {
    let (scanned, total) = (
        s["scanned"].as_u64().unwrap_or(0),
        s["total"].as_u64().unwrap_or(0).max(1),
    );
    let name = format!("{}/{}", s["pool"].as_str().unwrap_or("?"), s["set"]);
    match s["done"] == Value::Bool(true) {
        true => format!("{name} done"),
        false => format!("{name} {}%", (scanned * 100 / total).min(100)),
    }
}

/// Starts a pass; unless `no_wait`, follows it to the end.
pub async fn heal(client: &Client, no_wait: bool) -> anyhow::Result<()> {
    let before = client.call("GET", "heal", None).await?["passes"]
        .as_u64()
        .unwrap_or(0);
    let v = client.call("POST", "heal", None).await?;
    if v["started"] == Value::Bool(false) {
        println!("a healing pass is already running; following it");
    }
    if no_wait {
        println!("healing pass started");
        return Ok(());
    }
    let mut out = std::io::stdout();
    loop {
        let p = client.call("GET", "heal", None).await?;
        let finished = p["running"] == Value::Bool(false) && p["passes"].as_u64() > Some(before);
        if finished {
            println!("\rhealed: {}{}", summary(&p), " ".repeat(20));
            return pass_outcome(&p);
        }
        print!("\r{}", line(&p));
        let _ = out.flush();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A finished pass's outcome: an error naming the keys that failed, if any
/// did (so `granary admin heal` exits non-zero).
fn pass_outcome(p: &Value) -> anyhow::Result<()> {
    let failed = p["failed"].as_u64().unwrap_or(0);
    if failed == 0 {
        return Ok(());
    }
    let keys: Vec<&str> = p["failedKeys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str())
        .collect();
    let more = match failed as usize > keys.len() {
        true => format!("\n  … and {} more", failed as usize - keys.len()),
        false => String::new(),
    };
    anyhow::bail!(
        "healing failed for {failed} keys:\n  {}{more}\nlast failure: {}",
        keys.join("\n  "),
        p["lastError"].as_str().unwrap_or("?")
    )
}

/// One background worker as `granary admin status` shows it: name, state,
/// queue, what it says, failures.
fn worker_line(w: &Value) -> String {
    let mut line = format!(
        "worker {:<16} {:<7}",
        w["name"].as_str().unwrap_or("?"),
        w["state"].as_str().unwrap_or("?")
    );
    if let Some(q) = w["status"]["queue"].as_u64() {
        line += &format!(" queue {q}");
    }
    if let Some(d) = w["status"]["detail"].as_str() {
        line += &format!(" ({d})");
    }
    if let Some(n) = w["errors"].as_u64().filter(|n| *n > 0) {
        let last = w["lastError"].as_str().unwrap_or("");
        line += &format!("; {n} failed steps, the last: {last}");
    }
    line
}

/// Prints the pools' disks, the store's workers, the healing pass and the
/// repair backlog.
pub async fn status(client: &Client, json: bool) -> anyhow::Result<()> {
    let v = client.call("GET", "status", None).await?;
    if json {
        println!("{v}");
        return Ok(());
    }
    for pool in v["pools"].as_array().into_iter().flatten() {
        let disks = pool["disks"].as_array().cloned().unwrap_or_default();
        let online = disks.iter().filter(|d| d["state"] == "online").count();
        println!(
            "{} pool, erasure set {}: {online} of {} disks online, repair backlog {}, {} objects at risk",
            pool["tier"].as_str().unwrap_or("?"),
            pool["set"],
            disks.len(),
            pool["repairBacklog"],
            pool["objectsAtRisk"]
        );
        if let Some(why) = pool["offline"].as_str() {
            println!("  OFFLINE: {why}");
        }
        // Disks of a cluster are labelled NODE:/PATH and shown under their
        // node (slots alternate between nodes); local ones as they are.
        let mut by_node: std::collections::BTreeMap<&str, Vec<(&Value, String)>> =
            Default::default();
        for d in &disks {
            let label = d["disk"].as_str().unwrap_or("?");
            let (node, path) = match label.split_once(":/") {
                Some((n, p)) => (n, format!("/{p}")),
                None => ("", label.to_string()),
            };
            by_node.entry(node).or_default().push((d, path));
        }
        for (node, disks) in by_node {
            if !node.is_empty() {
                let up = disks.iter().filter(|(d, _)| d["state"] == "online").count();
                println!("  node {node}: {up} of {} disks online", disks.len());
            }
            for (d, path) in disks {
                let detail = if d["state"] == "online" {
                    format!(
                        "{} free of {}; {} read, {} written",
                        mib(&d["freeBytes"]),
                        mib(&d["totalBytes"]),
                        mib(&d["io"]["readBytes"]),
                        mib(&d["io"]["writtenBytes"])
                    )
                } else {
                    d["reason"].as_str().unwrap_or("").to_string()
                };
                println!(
                    "    slot {:>2}  {:<7}  {path}  {detail}",
                    d["slot"],
                    d["state"].as_str().unwrap_or("?")
                );
            }
        }
    }
    for w in v["workers"].as_array().into_iter().flatten() {
        println!("{}", worker_line(w));
    }
    if v["runsBackgroundWork"] == Value::Bool(false) {
        println!("scheduled lifecycle passes and scrubs run on another gateway");
    }
    println!("{}", gc_summary(&v["gc"]));
    for p in v["policiesWithUnknownKeys"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let whose = match p["bucket"].as_str() {
            Some(b) => format!("bucket {b}"),
            None => format!("user {}", p["user"].as_str().unwrap_or("?")),
        };
        let keys: Vec<&str> = p["keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str())
            .collect();
        println!(
            "policy of {whose}: condition keys not evaluated ({}); their Deny statements match every request, their Allow statements none",
            keys.join(", ")
        );
    }
    let p = &v["heal"];
    println!(
        "at risk: {} objects acknowledged with fewer than k + m disks holding them, not healed yet (the next pass heals them first)",
        p["objectsAtRisk"]
    );
    if p["running"] == Value::Bool(true) {
        println!("heal: running {}", line(p));
    } else {
        println!(
            "heal: {} passes; last: {}",
            p["passes"],
            if p["passes"].as_u64().unwrap_or(0) == 0 {
                "none yet".to_string()
            } else {
                summary(p)
            }
        );
    }
    Ok(())
}
