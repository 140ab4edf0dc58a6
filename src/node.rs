//! `granary node --disks DIR...`: serves this machine's disks to the
//! cluster's gateways over internal RPC. The node keeps no other state; it
//! opens each disk once it is formatted (by the first gateway to start, or
//! already at start) and answers only callers that know the cluster secret.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use disk_engine::rpc::{serve_node, NodeService, HEALTH_PATH};
use disk_engine::LocalDiskOptions;

use crate::credentials::{cluster_secret, rpc_tls};
use crate::front::shutdown_signal;
use crate::server::ShardIo;

/// Options of `granary node`.
#[derive(Args, Debug)]
pub struct NodeArgs {
    /// The disks (directories) this node serves.
    #[arg(long, num_args = 1.., required = true, value_name = "DIR")]
    pub disks: Vec<PathBuf>,
    /// Address the internal RPC listens on.
    #[arg(long, default_value = "0.0.0.0:9100")]
    pub address: SocketAddr,
    /// File whose first line is the cluster secret (else
    /// GRANARY_CLUSTER_SECRET).
    #[arg(long, value_name = "FILE")]
    pub cluster_secret_file: Option<PathBuf>,
    /// PEM certificate this node presents (mutual TLS; with --tls-key and
    /// --tls-client-ca, and the gateways' --node-tls-* options).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// PEM certificate of the CA that signs the gateways' certificates;
    /// only gateways presenting one are let in.
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// How shard files are read and written (as for `granary server`).
    #[arg(long, value_enum, default_value_t = ShardIo::Auto)]
    pub shard_io: ShardIo,
    /// Skip fsync before acknowledging writes. UNSAFE.
    #[arg(long)]
    pub unsafe_no_fsync: bool,
}

/// Runs the node until SIGINT or SIGTERM.
pub fn run(args: NodeArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("granary-node")
        .build()?;
    runtime.block_on(serve(args))
}

async fn serve(args: NodeArgs) -> anyhow::Result<()> {
    let secret = cluster_secret(args.cluster_secret_file.as_deref())?;
    let tls = rpc_tls(
        "--tls-cert, --tls-key and --tls-client-ca",
        &args.tls_cert,
        &args.tls_key,
        &args.tls_client_ca,
        disk_engine::rpc::tls::node_config,
    )?;
    let scheme = if tls.is_some() {
        "mutual TLS"
    } else {
        "plain HTTP/2"
    };
    let opts = LocalDiskOptions {
        fsync: !args.unsafe_no_fsync,
        io: args.shard_io.into(),
        listing_of: Some(placement::listing_of_body),
    };
    let dirs = args.disks.clone();
    let service = tokio::task::spawn_blocking(move || NodeService::open(&dirs, secret, opts))
        .await?
        .context("cannot open the node's disks")?;
    let service = Arc::new(service);
    let listener = tokio::net::TcpListener::bind(args.address)
        .await
        .with_context(|| format!("cannot listen on {}", args.address))?;
    let addr = listener.local_addr()?;
    let shutdown = shutdown_signal()?;
    let open = service.open_disks().await.len();
    println!(
        "Granary node listening on {addr} ({scheme}; {} disks, {open} formatted; liveness at {HEALTH_PATH})",
        args.disks.len()
    );
    serve_node(listener, service.clone(), tls, shutdown).await;
    for d in service.open_disks().await {
        if let Err(e) = d.flush().await {
            tracing::warn!(disk = %d.root().display(), error = %e, "flush at shutdown failed");
        }
    }
    tracing::info!("node stopped");
    Ok(())
}
