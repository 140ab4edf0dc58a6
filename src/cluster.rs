//! `granary gateway --cluster cluster.toml`: a stateless S3 front end over
//! the nodes named in the cluster file. It formats the deployment on first
//! start (when every disk answers), and otherwise only reads and writes
//! through the nodes; any number of gateways can serve the same cluster.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use gateway::AccessKey;
use placement::{open_cluster_pool, ClusterMap, LocalPool, Store};

use crate::credentials::{cluster_secret, gateway_keys, rpc_tls, KEYS_FROM_ENV};
use crate::front::{self, describe_sets, run_runtimes, FrontArgs, Opened};
use crate::server::store_options;
use disk_engine::rpc::NodeAccess;

/// Options of `granary gateway`.
#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The cluster file: deployment id, pools and their nodes' disks.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// File whose first line is the cluster secret (else
    /// GRANARY_CLUSTER_SECRET).
    #[arg(long, value_name = "FILE")]
    pub cluster_secret_file: Option<PathBuf>,
    /// PEM certificate this gateway presents to its nodes (mutual TLS;
    /// with --node-tls-key and --node-tls-ca).
    #[arg(long, value_name = "FILE")]
    pub node_tls_cert: Option<PathBuf>,
    /// PEM private key of --node-tls-cert.
    #[arg(long, value_name = "FILE")]
    pub node_tls_key: Option<PathBuf>,
    /// PEM certificate of the CA that signs the nodes' certificates.
    #[arg(long, value_name = "FILE")]
    pub node_tls_ca: Option<PathBuf>,
    /// How long to keep trying to open the pools at start (nodes may start
    /// after the gateway).
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub wait: u64,
    #[command(flatten)]
    pub front: FrontArgs,
}

/// Runs the gateway until SIGINT or SIGTERM.
pub fn run(args: GatewayArgs) -> anyhow::Result<()> {
    run_runtimes(args.front.worker_threads, |bulk| serve(args, bulk))
}

async fn serve(args: GatewayArgs, bulk: tokio::runtime::Handle) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.cluster)
        .with_context(|| format!("reading {}", args.cluster.display()))?;
    let map = ClusterMap::parse(&text)?;
    let tls = rpc_tls(
        "--node-tls-cert, --node-tls-key and --node-tls-ca",
        &args.node_tls_cert,
        &args.node_tls_key,
        &args.node_tls_ca,
        disk_engine::rpc::tls::gateway_config,
    )?;
    let access = NodeAccess {
        secret: cluster_secret(args.cluster_secret_file.as_deref())?,
        tls,
    };
    let ((user, password), master) = gateway_keys()?;
    let deadline = Instant::now() + Duration::from_secs(args.wait);
    let mut pools = Vec::new();
    for index in 0..map.pools.len() {
        let sets = loop {
            let (map, access) = (map.clone(), access.clone());
            let handle = tokio::runtime::Handle::current();
            let tried = tokio::task::spawn_blocking(move || {
                open_cluster_pool(&map, index, &access, handle)
            })
            .await?;
            match tried {
                Ok(sets) => break sets,
                Err(e) if Instant::now() < deadline => {
                    tracing::warn!(pool = index, error = %e, "pool not ready; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e).context(format!("cannot open pool {index}")),
            }
        };
        pools.push(sets);
    }
    let opts = store_options(&args.front);
    let mut layout = Vec::new();
    // A set whose disks were not opened comes back with a restart: the
    // replacement watch leaves its pool alone.
    let offline: Vec<bool> = pools
        .iter()
        .map(|sets| sets.iter().any(|s| s.offline.is_some()))
        .collect();
    let mut store = None;
    for (index, (sets, pool)) in pools.into_iter().zip(&map.pools).enumerate() {
        let nodes: std::collections::BTreeSet<&str> =
            pool.disks.iter().map(|d| d.node.as_str()).collect();
        let sets_used = describe_sets(sets.len(), pool.set_width, pool.parity);
        layout.push(format!(
            "{}: {sets_used} on {} nodes",
            pool.tier,
            nodes.len()
        ));
        // Pool 0 holds the cluster-wide documents and every key's lock;
        // later hot pools take new keys by free space, the cold pool the
        // bytes of cold classes.
        match (&store, pool.tier) {
            (None, _) => {
                store = Some(Store::for_pool(
                    LocalPool {
                        sets,
                        deployment_id: map.deployment,
                        created: false,
                    },
                    opts,
                )?)
            }
            (Some(s), disk_engine::Tier::Hot) => {
                s.attach_hot_pool(index as u32, sets)?;
            }
            (Some(s), disk_engine::Tier::Cold) => s.attach_cold_pool(sets)?,
        }
    }
    let store = store.context("the cluster map has no pools")?;
    // Other gateways write the same disks: object locks become quorum
    // leases on them.
    store.share_locks();
    tokio::spawn(watch_replacements(
        map.clone(),
        access,
        store.clone(),
        offline,
    ));
    let opened = Opened {
        store,
        root: AccessKey {
            access_key_id: user,
            secret_key: password,
        },
        master,
        layout: format!("deployment {}; {}", map.deployment, layout.join("; ")),
        notes: vec![KEYS_FROM_ENV.to_string()],
    };
    front::serve(&args.front, opened, bulk).await?;
    tracing::info!("gateway stopped");
    Ok(())
}

/// How often the gateway looks for replaced (empty) disks.
const REPLACEMENT_CHECK: Duration = Duration::from_secs(10);

/// Formats a disk that comes back empty in a known slot (a replaced disk)
/// while the gateway runs, and starts a healing pass to refill it.
async fn watch_replacements(
    map: ClusterMap,
    access: NodeAccess,
    store: std::sync::Arc<Store>,
    offline: Vec<bool>,
) {
    loop {
        tokio::time::sleep(REPLACEMENT_CHECK).await;
        for (index, offline) in offline.iter().enumerate() {
            if *offline {
                // Its disks were not opened: it comes back with a restart.
                continue;
            }
            let (map, access) = (map.clone(), access.clone());
            let handle = tokio::runtime::Handle::current();
            let opened = tokio::task::spawn_blocking(move || {
                open_cluster_pool(&map, index, &access, handle)
            })
            .await;
            match opened {
                Ok(Ok(sets)) if sets.iter().any(|s| !s.replaced.is_empty()) => {
                    let replaced: Vec<_> = sets.iter().map(|s| s.replaced.clone()).collect();
                    tracing::warn!(pool = index, slots_by_set = ?replaced, "replaced disks formatted; healing");
                    // The store's pass covers every pool.
                    store.start_heal();
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::debug!(pool = index, error = %e, "replacement check"),
                Err(e) => tracing::warn!(error = %e, "replacement check failed"),
            }
        }
    }
}
