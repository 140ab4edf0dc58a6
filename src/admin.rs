//! `granary admin ...`: a client of the server's admin API
//! (`/granary/admin/v1/`), signing each request with the root key.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::admin_client::Client;
use crate::lifecycle_admin::LifecycleCommand;

/// Options of `granary admin`.
#[derive(Args, Debug)]
pub struct AdminArgs {
    /// URL of the server.
    #[arg(
        long,
        env = "GRANARY_ENDPOINT",
        default_value = "http://127.0.0.1:9000"
    )]
    pub endpoint: String,
    /// Region the server answers for.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// PEM certificate to trust (for a server with a self-signed certificate).
    #[arg(long)]
    pub ca_bundle: Option<PathBuf>,
    /// A data directory of the server, whose keyring holds the generated
    /// root key (used when GRANARY_ROOT_USER / GRANARY_ROOT_PASSWORD and
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are unset).
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// The server's unseal key file (default: granary-unseal.key beside
    /// --data-dir; GRANARY_UNSEAL_KEY takes its place).
    #[arg(long, value_name = "FILE")]
    pub unseal_key_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// What to administer.
#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Users and their access keys.
    #[command(subcommand)]
    User(UserCommand),
    /// Collect garbage now, while the server keeps serving: delete the
    /// shard files and pieces nothing refers to (left by crashes and
    /// cut-off writes) and reclaim the space of deleted and overwritten
    /// small (packed) objects on every disk.
    Gc,
    /// Remote tiers: other S3 endpoints lifecycle rules can move data to
    /// (the tier's name is the storage class rules name).
    #[command(subcommand)]
    Tier(TierCommand),
    /// Lifecycle: what the scanner did, run a pass now, or dry-run the rules.
    #[command(subcommand)]
    Lifecycle(LifecycleCommand),
    /// The Prometheus metrics of the running server (lifecycle per bucket
    /// and rule, cache, repair).
    Metrics,
    /// Run a healing pass now: every object is read from every disk, its
    /// checksums verified, and whatever is missing or corrupt rebuilt.
    /// Shows a progress bar until the pass ends.
    Heal {
        /// Start the pass and return at once.
        #[arg(long)]
        no_wait: bool,
    },
    /// Disks of every pool with their state and space, its background
    /// workers, the healing pass and the repair backlog.
    Status {
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Counters of the running server: disk reads and writes, hot-object
    /// cache (hit rate) and repair.
    Stats {
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Remote tier administration.
#[derive(Subcommand, Debug)]
pub enum TierCommand {
    /// Add a remote tier, or change one.
    Add {
        /// Its name: A-Z, 0-9, '_' and '-' (it becomes a storage class).
        name: String,
        /// The endpoint's URL.
        #[arg(long)]
        endpoint: String,
        /// The bucket there (it must exist).
        #[arg(long)]
        bucket: String,
        /// Key prefix inside that bucket.
        #[arg(long, default_value = "")]
        prefix: String,
        /// Region to sign requests for.
        #[arg(long, default_value = "us-east-1")]
        region: String,
        /// Access key id at the endpoint.
        #[arg(long)]
        access_key: String,
        /// Secret key at the endpoint (stored encrypted).
        #[arg(long, env = "GRANARY_TIER_SECRET_KEY")]
        secret_key: String,
        /// Objects larger than this are uploaded in parts of this size (MiB).
        #[arg(long, default_value_t = 64)]
        part_size_mib: u64,
    },
    /// List the remote tiers.
    List,
    /// Remove a remote tier (versions already there become unreadable
    /// until it is added again).
    Remove {
        /// Its name.
        name: String,
    },
}

/// User management.
#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Create a user with a new access key; prints the secret (shown once).
    Add {
        /// User name (what policies name: arn:aws:iam:::user/NAME).
        name: String,
        /// File holding the user's IAM policy document (JSON).
        #[arg(long)]
        policy: Option<PathBuf>,
    },
    /// List users (never their secrets).
    List,
    /// Delete a user; their key stops working.
    Remove {
        /// The user's access key id.
        access_key: String,
    },
    /// Set (or with --clear remove) a user's IAM policy.
    SetPolicy {
        /// The user's access key id.
        access_key: String,
        /// File holding the policy document (JSON); `-` reads stdin.
        #[arg(required_unless_present = "clear")]
        file: Option<PathBuf>,
        /// Remove the user's policy.
        #[arg(long, conflicts_with = "file")]
        clear: bool,
    },
}

/// Runs an admin command.
pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(execute(args))
}

fn read_policy(path: &PathBuf) -> anyhow::Result<Value> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

async fn execute(args: AdminArgs) -> anyhow::Result<()> {
    let client = Client::new(
        &args.endpoint,
        args.ca_bundle.as_deref(),
        &args.region,
        root_key(&args)?,
    )?;
    match &args.command {
        AdminCommand::User(UserCommand::Add { name, policy }) => {
            let mut body = json!({ "name": name });
            if let Some(p) = policy {
                body["policy"] = read_policy(p)?;
            }
            let v = client.call("POST", "users", Some(body)).await?;
            println!("User {} created.", v["name"].as_str().unwrap_or(name));
            println!(
                "  AWS_ACCESS_KEY_ID={}",
                v["accessKey"].as_str().unwrap_or("")
            );
            println!(
                "  AWS_SECRET_ACCESS_KEY={}",
                v["secretKey"].as_str().unwrap_or("")
            );
            println!("The secret is shown only this once.");
        }
        AdminCommand::Tier(TierCommand::Add {
            name,
            endpoint,
            bucket,
            prefix,
            region,
            access_key,
            secret_key,
            part_size_mib,
        }) => {
            let body = json!({
                "endpoint": endpoint, "bucket": bucket, "prefix": prefix, "region": region,
                "accessKey": access_key, "secretKey": secret_key, "partSizeMib": part_size_mib,
            });
            let v = client
                .call("PUT", &format!("tiers/{name}"), Some(body))
                .await?;
            println!(
                "tier {} -> {}/{}/{}",
                v["name"].as_str().unwrap_or(name),
                v["endpoint"].as_str().unwrap_or(""),
                v["bucket"].as_str().unwrap_or(""),
                v["prefix"].as_str().unwrap_or("")
            );
        }
        AdminCommand::Tier(TierCommand::List) => {
            let v = client.call("GET", "tiers", None).await?;
            for t in v["tiers"].as_array().into_iter().flatten() {
                println!(
                    "{:<16} {}/{}/{} (key {}, region {})",
                    t["name"].as_str().unwrap_or(""),
                    t["endpoint"].as_str().unwrap_or(""),
                    t["bucket"].as_str().unwrap_or(""),
                    t["prefix"].as_str().unwrap_or(""),
                    t["accessKey"].as_str().unwrap_or(""),
                    t["region"].as_str().unwrap_or(""),
                );
            }
        }
        AdminCommand::Tier(TierCommand::Remove { name }) => {
            client
                .call("DELETE", &format!("tiers/{name}"), None)
                .await?;
            println!("tier {name} removed");
        }
        AdminCommand::Lifecycle(cmd) => crate::lifecycle_admin::execute(&client, cmd).await?,
        AdminCommand::Heal { no_wait } => crate::heal_admin::heal(&client, *no_wait).await?,
        AdminCommand::Status { json } => crate::heal_admin::status(&client, *json).await?,
        AdminCommand::Metrics => {
            let v = client.call("GET", "metrics", None).await?;
            print!("{}", v.as_str().unwrap_or_default());
        }
        AdminCommand::Gc => {
            let v = client.call("POST", "gc", None).await?;
            if v["started"] == serde_json::Value::Bool(false) {
                println!("a collection was already running; this is where it stands");
            }
            println!("{}", crate::heal_admin::gc_summary(&v["gc"]));
            println!("collected packed garbage on {} disks", v["disksCollected"]);
            let skipped = v["gc"]["skipped"].as_array().map_or(0, Vec::len);
            if skipped > 0 {
                bail!("garbage collection skipped {skipped} sets (see above)");
            }
        }
        AdminCommand::Stats { json } => {
            let v = client.call("GET", "stats", None).await?;
            if *json {
                println!("{v}");
            } else {
                let d = &v["disks"];
                println!(
                    "disks:  {} MiB read in {} reads, {} MiB written in {} writes, {} errors",
                    d["readBytes"].as_u64().unwrap_or(0) >> 20,
                    d["reads"],
                    d["writtenBytes"].as_u64().unwrap_or(0) >> 20,
                    d["writes"],
                    d["errors"],
                );
                let c = &v["cache"];
                println!(
                    "cache:  {:.1}% hit rate ({} hits, {} coalesced, {} disk reads), {} of {} MiB in {} units",
                    c["hitRate"].as_f64().unwrap_or(0.0) * 100.0,
                    c["hits"],
                    c["coalesced"],
                    c["misses"],
                    c["bytes"].as_u64().unwrap_or(0) >> 20,
                    c["capacity"].as_u64().unwrap_or(0) >> 20,
                    c["units"],
                );
                let r = &v["repair"];
                println!(
                    "repair: {} queued, {} repaired ({} shards, {} records rewritten), {} failed, {} dropped",
                    r["queued"], r["repaired"], r["shardsRewritten"], r["recordsRewritten"], r["failed"], r["dropped"],
                );
            }
        }
        AdminCommand::User(UserCommand::List) => {
            let v = client.call("GET", "users", None).await?;
            println!("{:<22} {:<24} POLICY", "ACCESS KEY", "NAME");
            for u in v["users"].as_array().into_iter().flatten() {
                println!(
                    "{:<22} {:<24} {}",
                    u["accessKey"].as_str().unwrap_or(""),
                    u["name"].as_str().unwrap_or(""),
                    if u["policy"].is_null() { "-" } else { "yes" }
                );
            }
        }
        AdminCommand::User(UserCommand::Remove { access_key }) => {
            client
                .call("DELETE", &format!("users/{access_key}"), None)
                .await?;
            println!("User with access key {access_key} deleted.");
        }
        AdminCommand::User(UserCommand::SetPolicy {
            access_key,
            file,
            clear,
        }) => {
            let path = format!("users/{access_key}/policy");
            match (file, clear) {
                (_, true) => {
                    client.call("DELETE", &path, None).await?;
                    println!("Policy of {access_key} removed.");
                }
                (Some(f), false) => {
                    client.call("PUT", &path, Some(read_policy(f)?)).await?;
                    println!("Policy of {access_key} set.");
                }
                (None, false) => bail!("give a policy file or --clear"),
            }
        }
    }
    Ok(())
}

/// The root key to sign with: from the environment, else the server's
/// keyring.
fn root_key(args: &AdminArgs) -> anyhow::Result<(String, String)> {
    for (u, p) in [
        ("GRANARY_ROOT_USER", "GRANARY_ROOT_PASSWORD"),
        ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    ] {
        if let (Ok(u), Ok(p)) = (std::env::var(u), std::env::var(p)) {
            if !u.is_empty() && !p.is_empty() {
                return Ok((u, p));
            }
        }
    }
    let unseal = crate::keyring::UnsealSource::new(args.unseal_key_file.clone(), &args.data_dir);
    crate::keyring::stored_root(&args.data_dir, &unseal).context(
        "no root key: set GRANARY_ROOT_USER/GRANARY_ROOT_PASSWORD, or pass the server's --data-dir and --unseal-key-file",
    )
}
