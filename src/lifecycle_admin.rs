//! `granary admin lifecycle ...`: the scanner's status (with a progress
//! bar for a running pass), starting a pass, and dry runs, rendered for a
//! terminal from the admin API's JSON.

use serde_json::Value;

use crate::admin::{Client, LifecycleCommand};

/// Width of the progress bar in characters.
const BAR: usize = 30;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn mib(v: &Value) -> String {
    format!(
        "{:.1} MiB",
        v.as_u64().unwrap_or(0) as f64 / (1 << 20) as f64
    )
}

/// "12 s ago", or "never".
fn ago(ns: &Value) -> String {
    match ns.as_u64() {
        Some(0) | None => "never".into(),
        Some(t) => format!("{} s ago", now_ns().saturating_sub(t) / 1_000_000_000),
    }
}

fn progress(done: u64, total: u64) -> String {
    if total == 0 {
        return format!("[{}] {done} versions (first pass)", "?".repeat(BAR));
    }
    let frac = (done as f64 / total as f64).min(1.0);
    let filled = (frac * BAR as f64) as usize;
    format!(
        "[{}{}] {:>3.0}% ({done} of ~{total} versions)",
        "#".repeat(filled),
        "-".repeat(BAR - filled),
        frac * 100.0
    )
}

fn status(v: &Value) {
    let buckets = v["buckets"].as_object();
    if buckets.is_none_or(|b| b.is_empty()) {
        println!("no bucket has a lifecycle configuration");
        return;
    }
    for (name, b) in buckets.into_iter().flatten() {
        println!(
            "bucket {name}: {} passes, last finished {}, last pass scanned {} versions ({})",
            b["passes"],
            ago(&b["lastFinishedNs"]),
            b["lastScannedObjects"],
            mib(&b["lastScannedBytes"])
        );
        if b["running"].as_bool() == Some(true) {
            println!(
                "  running: {}",
                progress(
                    b["scannedObjects"].as_u64().unwrap_or(0),
                    b["lastScannedObjects"].as_u64().unwrap_or(0)
                )
            );
        }
        for (rule, r) in b["rules"].as_object().into_iter().flatten() {
            println!(
                "  rule {rule}: transitioned {} ({}), expired {} ({}), aborted uploads {}, pending {} ({}), failed {}",
                r["transitionedObjects"],
                mib(&r["transitionedBytes"]),
                r["expiredObjects"],
                mib(&r["expiredBytes"]),
                r["abortedUploads"],
                r["pendingObjects"],
                mib(&r["pendingBytes"]),
                r["failed"],
            );
            if let Some(e) = r["lastError"].as_str() {
                println!("    last error: {e}");
            }
        }
    }
}

fn plan(bucket: &str, days: u32, v: &Value) {
    let actions = v["actions"].as_object();
    if actions.is_none_or(|a| a.is_empty()) {
        println!("nothing in {bucket} is due within {days} lifecycle days");
        return;
    }
    println!("due in {bucket} within {days} lifecycle days:");
    for (rule, acts) in actions.into_iter().flatten() {
        for (action, e) in acts.as_object().into_iter().flatten() {
            let examples: Vec<&str> = e["examples"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            println!(
                "  rule {rule}: {action}: {} objects, {} (e.g. {})",
                e["objects"],
                mib(&e["bytes"]),
                examples.join(", ")
            );
        }
    }
}

/// Runs one lifecycle admin command.
pub async fn execute(client: &Client, cmd: &LifecycleCommand) -> anyhow::Result<()> {
    match cmd {
        LifecycleCommand::Status { json } => {
            let v = client.call("GET", "lifecycle/status", None).await?;
            if *json {
                println!("{v}");
            } else {
                status(&v);
            }
        }
        LifecycleCommand::Run { bucket } => {
            client
                .call("POST", &format!("lifecycle/run/{bucket}"), None)
                .await?;
            println!("lifecycle pass over {bucket} started; follow it with `granary admin lifecycle status`");
        }
        LifecycleCommand::Plan { bucket, days, json } => {
            let v = client
                .call("GET", &format!("lifecycle/plan/{bucket}/{days}"), None)
                .await?;
            if *json {
                println!("{v}");
            } else {
                plan(bucket, *days, &v);
            }
        }
    }
    Ok(())
}
