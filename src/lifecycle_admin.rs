//! `granary admin lifecycle ...`: the scanner's status (with a progress
//! bar for a running pass), starting a pass, and dry runs, rendered for a
//! terminal from the admin API's JSON.

use clap::Subcommand;
use serde_json::Value;

use crate::admin_client::Client;

/// Lifecycle administration.
#[derive(Subcommand, Debug)]
pub enum LifecycleCommand {
    /// Per bucket and rule: objects and bytes transitioned, expired,
    /// pending and failed, the last pass and its lag, and a progress bar
    /// for a running pass.
    Status {
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a lifecycle pass over a bucket now.
    Run {
        /// The bucket.
        #[arg(long)]
        bucket: String,
    },
    /// Checkpoint retention rules: keep the newest complete checkpoint
    /// directories under a prefix, move or expire the older ones whole.
    #[command(subcommand)]
    Checkpoints(CheckpointCommand),
    /// Dry run: what the bucket's rules will transition or expire over the
    /// next days (counts, bytes, example keys). Changes nothing.
    Plan {
        /// The bucket.
        #[arg(long)]
        bucket: String,
        /// How many lifecycle days ahead (0: what is due now).
        #[arg(long, default_value_t = 0)]
        days: u32,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Checkpoint retention administration.
#[derive(Subcommand, Debug)]
pub enum CheckpointCommand {
    /// The bucket's checkpoint rules.
    Show {
        /// The bucket.
        #[arg(long)]
        bucket: String,
    },
    /// Add a rule (or replace the one with the same id).
    Set {
        /// The bucket.
        #[arg(long)]
        bucket: String,
        /// Rule id.
        #[arg(long)]
        id: String,
        /// Where the checkpoint directories are (e.g. `ckpt/`): each
        /// `<prefix><name>/` is one checkpoint.
        #[arg(long)]
        prefix: String,
        /// The object whose presence in a directory makes the checkpoint
        /// complete (its time orders the checkpoints).
        #[arg(long, default_value = "COMPLETE")]
        marker: String,
        /// How many of the newest complete checkpoints stay as they are.
        #[arg(long)]
        keep: u32,
        /// Also keep every K-th complete checkpoint (oldest first) forever.
        #[arg(long, value_name = "K")]
        keep_every: Option<u32>,
        /// Move older checkpoints to this storage class...
        #[arg(long, value_name = "CLASS", required_unless_present = "expire")]
        transition: Option<String>,
        /// ...or expire them.
        #[arg(long, conflicts_with = "transition")]
        expire: bool,
    },
    /// Remove one rule, or with no --id all of the bucket's rules.
    Remove {
        /// The bucket.
        #[arg(long)]
        bucket: String,
        /// Rule id.
        #[arg(long)]
        id: Option<String>,
    },
}

/// Width of the progress bar in characters.
const BAR: usize = 30;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub(crate) fn mib(v: &Value) -> String {
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
    bar(done, total, "versions")
}

/// A progress bar of `done` out of about `total` `things`.
pub(crate) fn bar(done: u64, total: u64, things: &str) -> String {
    let frac = (done as f64 / total as f64).min(1.0);
    let filled = (frac * BAR as f64) as usize;
    format!(
        "[{}{}] {:>3.0}% ({done} of ~{total} {things})",
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

fn show_rules(bucket: &str, v: &Value) {
    let rules = v["rules"].as_array().cloned().unwrap_or_default();
    if rules.is_empty() {
        println!("{bucket} has no checkpoint rules");
    }
    for r in rules {
        let action = match r["action"]["type"].as_str() {
            Some("transition") => format!(
                "transition to {}",
                r["action"]["storageClass"].as_str().unwrap_or("?")
            ),
            _ => "expire".into(),
        };
        let every = r["keepEvery"]
            .as_u64()
            .map(|k| format!(" and every {k}-th"))
            .unwrap_or_default();
        println!(
            "rule {}: under {}, checkpoints complete with {}: keep the newest {}{every}, {action} the rest",
            r["id"].as_str().unwrap_or(""),
            r["prefix"].as_str().unwrap_or(""),
            r["marker"].as_str().unwrap_or(""),
            r["keep"],
        );
    }
}

async fn checkpoints(client: &Client, cmd: &CheckpointCommand) -> anyhow::Result<()> {
    let path = |bucket: &str| format!("lifecycle/checkpoints/{bucket}");
    match cmd {
        CheckpointCommand::Show { bucket } => {
            show_rules(bucket, &client.call("GET", &path(bucket), None).await?);
        }
        CheckpointCommand::Set {
            bucket,
            id,
            prefix,
            marker,
            keep,
            keep_every,
            transition,
            expire: _,
        } => {
            let mut current = client.call("GET", &path(bucket), None).await?;
            let mut rules: Vec<Value> = current["rules"].as_array().cloned().unwrap_or_default();
            rules.retain(|r| r["id"].as_str() != Some(id));
            let action = match transition {
                Some(class) => serde_json::json!({"type": "transition", "storageClass": class}),
                None => serde_json::json!({"type": "expire"}),
            };
            let mut rule = serde_json::json!({
                "id": id, "prefix": prefix, "marker": marker, "keep": keep, "action": action,
            });
            if let Some(k) = keep_every {
                rule["keepEvery"] = (*k).into();
            }
            rules.push(rule);
            current["rules"] = rules.into();
            show_rules(
                bucket,
                &client.call("PUT", &path(bucket), Some(current)).await?,
            );
        }
        CheckpointCommand::Remove { bucket, id } => {
            let v = match id {
                Some(id) => {
                    let mut current = client.call("GET", &path(bucket), None).await?;
                    let mut rules: Vec<Value> =
                        current["rules"].as_array().cloned().unwrap_or_default();
                    rules.retain(|r| r["id"].as_str() != Some(id));
                    current["rules"] = rules.into();
                    client.call("PUT", &path(bucket), Some(current)).await?
                }
                None => client.call("DELETE", &path(bucket), None).await?,
            };
            show_rules(bucket, &v);
        }
    }
    Ok(())
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
        LifecycleCommand::Checkpoints(cmd) => checkpoints(client, cmd).await?,
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
