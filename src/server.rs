//! `granary server DIR...`: disks, store and S3 gateway in one process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use disk_engine::{LocalDiskOptions, ShardIoMode, Tier};
use gateway::{AccessKey, Gateway, GatewayConfig, ServeOptions};
use placement::{open_local_set, LocalSetConfig, Store, StoreOptions, DEFAULT_BLOCK_SIZE};

use crate::credentials::{master_key, root_key, Origin, CREDENTIALS_FILE};

/// Options of `granary server`.
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Data directories of the hot pool (1 to 16); created if missing on
    /// first start.
    #[arg(default_value = "./data", conflicts_with = "hot")]
    pub dirs: Vec<PathBuf>,
    /// The hot pool's directories (NVMe), instead of the plain list: where
    /// new objects and every version record go.
    #[arg(long, num_args = 1.., value_name = "DIR")]
    pub hot: Vec<PathBuf>,
    /// The cold pool's directories (QLC): where objects of the cold storage
    /// classes (STANDARD_IA, ONEZONE_IA, GLACIER_IR, GLACIER, DEEP_ARCHIVE,
    /// COLD) keep their bytes. Without it the server is hot-only.
    #[arg(long, num_args = 1.., value_name = "DIR")]
    pub cold: Vec<PathBuf>,
    /// Parity shards of the cold pool (default 2, fewer for fewer than four
    /// directories).
    #[arg(long, requires = "cold")]
    pub cold_parity: Option<usize>,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub address: SocketAddr,
    /// Parity shards (default: 0 for 1 dir, mirroring for 2-3, 2 for 4-5, 3 for 6-7, 4 for 8+).
    #[arg(long)]
    pub parity: Option<usize>,
    /// Region the server answers for.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Domain for virtual-hosted-style requests (<bucket>.<domain>).
    #[arg(long)]
    pub domain: Option<String>,
    /// Seconds a client may pause while sending a request body.
    #[arg(long, default_value_t = 60)]
    pub body_timeout: u64,
    /// PEM certificate chain: serve HTTPS instead of HTTP (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Hot-object cache size in MiB (0: no cache; concurrent reads of the
    /// same data are still read from disk once).
    #[arg(long, default_value_t = placement::DEFAULT_READ_CACHE_BYTES >> 20, value_name = "MIB")]
    pub read_cache_mib: u64,
    /// Largest object stored packed, in KiB (0: never). Packed objects are
    /// erasure-coded into pieces stored with their record in each disk's
    /// pack store instead of a shard file per disk; capped at one stripe.
    #[arg(long, default_value_t = placement::DEFAULT_PACK_THRESHOLD >> 10, value_name = "KIB")]
    pub pack_threshold_kib: u64,
    /// How shard files are read and written: `auto` (io_uring with O_DIRECT
    /// where the filesystem allows), `buffered` (io_uring through the page
    /// cache) or `blocking` (no io_uring).
    #[arg(long, value_enum, default_value_t = ShardIo::Auto)]
    pub shard_io: ShardIo,
    /// Threads answering requests (default: 4 per CPU). More threads than
    /// CPUs let the kernel preempt a thread busy with an upload's bytes, so
    /// small requests are not queued behind it (measured: p99 of a 1 MiB
    /// GET during 16 concurrent uploads fell from 40–90 ms to 23–28 ms).
    #[arg(long)]
    pub worker_threads: Option<usize>,
    /// Length of a lifecycle day in seconds: rules count days in these, and
    /// "midnight UTC" is every multiple of it. 86400 in production; shorter
    /// to test rules without waiting.
    #[arg(long, default_value_t = 86_400, value_name = "SECS")]
    pub lifecycle_day_secs: u64,
    /// Most bytes per second lifecycle transitions move, in MiB, so that
    /// foreground requests keep their latency during a pass.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub lifecycle_mib_per_sec: u64,
    /// Serve Prometheus metrics at /granary/metrics to requests carrying
    /// `Authorization: Bearer TOKEN` (off without it).
    #[arg(long, env = "GRANARY_METRICS_TOKEN", value_name = "TOKEN")]
    pub metrics_token: Option<String>,
    /// Skip fsync before acknowledging writes. UNSAFE: a power cut can lose
    /// acknowledged objects.
    #[arg(long)]
    pub unsafe_no_fsync: bool,
}

/// Shard I/O choice on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ShardIo {
    /// io_uring, O_DIRECT where possible.
    Auto,
    /// io_uring through the page cache.
    Buffered,
    /// Blocking I/O on a thread pool.
    Blocking,
}

impl From<ShardIo> for ShardIoMode {
    fn from(s: ShardIo) -> Self {
        match s {
            ShardIo::Auto => ShardIoMode::Auto,
            ShardIo::Buffered => ShardIoMode::Buffered,
            ShardIo::Blocking => ShardIoMode::Blocking,
        }
    }
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = args.worker_threads.unwrap_or(4 * cpus).clamp(1, 256);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .thread_name("granary")
        .build()?;
    // Upload bodies are streamed into storage on their own threads at bulk
    // priority: a checkpoint burst then takes only the CPU that request
    // handling leaves (the 1 MiB GET tail during a 16-upload burst).
    let bulk = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus)
        .enable_all()
        .thread_name("granary-bulk")
        .on_thread_start(placement::become_bulk_thread)
        .build()?;
    let result = runtime.block_on(serve(args, bulk.handle().clone()));
    bulk.shutdown_timeout(Duration::from_secs(5));
    result
}

async fn serve(args: ServerArgs, bulk: tokio::runtime::Handle) -> anyhow::Result<()> {
    if args.unsafe_no_fsync {
        tracing::warn!("--unsafe-no-fsync: acknowledged writes may be lost on power failure");
    }
    let hot_dirs = if args.hot.is_empty() {
        args.dirs.clone()
    } else {
        args.hot.clone()
    };
    let disk = LocalDiskOptions {
        fsync: !args.unsafe_no_fsync,
        io: args.shard_io.into(),
    };
    let cfg = LocalSetConfig {
        dirs: hot_dirs.clone(),
        parity: args.parity,
        tier: Tier::Hot,
        pool: 0,
        deployment: None,
        disk: disk.clone(),
    };
    let set = tokio::task::spawn_blocking(move || open_local_set(&cfg))
        .await?
        .context("cannot open the data directories")?;
    let n = set.disks.len();
    let parity = set.parity;
    let mut local = set.local.clone();
    let opts = StoreOptions {
        block_size: DEFAULT_BLOCK_SIZE,
        read_cache_bytes: args.read_cache_mib << 20,
        pack_threshold: args.pack_threshold_kib << 10,
    };
    let store = Store::new(set.disks, set.parity, opts)?;
    let mut cold_layout = None;
    let cold = if args.cold.is_empty() {
        None
    } else {
        let cfg = LocalSetConfig {
            dirs: args.cold.clone(),
            parity: args.cold_parity,
            tier: Tier::Cold,
            pool: 1,
            deployment: Some(set.deployment_id),
            disk,
        };
        let cold = tokio::task::spawn_blocking(move || open_local_set(&cfg))
            .await?
            .context("cannot open the cold pool's directories")?;
        cold_layout = Some(describe_layout(cold.disks.len(), cold.parity));
        local.extend(cold.local.iter().cloned());
        let cold = Store::new(cold.disks, cold.parity, opts)?;
        store.attach_cold_pool(cold.clone())?;
        Some(cold)
    };
    for d in local.iter().flatten() {
        tracing::info!(disk = %d.root().display(), tier = %d.format().tier, io = d.io_path(), "shard I/O");
    }

    let (user, password, origin) = root_key(&hot_dirs[0])?;
    let root = AccessKey {
        access_key_id: user.clone(),
        secret_key: password.clone(),
    };
    let master = master_key(&hot_dirs[0])?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            gateway::load_tls(cert, key)
                .map_err(|e| anyhow::anyhow!("cannot load the TLS certificate: {e}"))?,
        ),
        _ => None,
    };
    let config = GatewayConfig {
        region: args.region.clone(),
        domain: args.domain.clone(),
        body_idle_timeout: Duration::from_secs(args.body_timeout),
        bulk: Some(bulk),
        metrics_token: args.metrics_token.clone(),
    };
    let clock = lifecycle::Clock {
        day: Duration::from_secs(args.lifecycle_day_secs.max(1)),
    };
    let scanner = lifecycle::Scanner::new(
        store.clone(),
        lifecycle::ScannerOptions {
            bytes_per_sec: args.lifecycle_mib_per_sec.max(1) << 20,
            ..lifecycle::ScannerOptions::for_clock(clock)
        },
    );
    let scanner_task = scanner.spawn();
    let mut gw = Gateway::new(store.clone(), root, master, config);
    gw.lifecycle = Some(scanner.clone());
    let gw = Arc::new(gw);
    match gateway::tiers::load(&gw).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(tiers = n, "remote tiers registered"),
        Err(e) => tracing::error!(error = %e, "remote tiers could not be loaded"),
    }
    let listener = tokio::net::TcpListener::bind(args.address)
        .await
        .with_context(|| format!("cannot listen on {}", args.address))?;
    let addr = listener.local_addr()?;
    // Signal handlers are in place before anyone learns the address.
    let shutdown = shutdown_signal()?;

    let mut layout = describe_layout(n, parity);
    if let Some(cold) = cold_layout {
        layout = format!("hot: {layout}; cold: {cold}");
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!(
        "Granary listening on {scheme}://{addr} ({layout}, region {})",
        args.region
    );
    match origin {
        Origin::Generated => {
            println!(
                "Root credentials were generated and stored in {} (mode 0600):",
                hot_dirs[0].join(CREDENTIALS_FILE).display()
            );
            println!("  AWS_ACCESS_KEY_ID={user}");
            println!("  AWS_SECRET_ACCESS_KEY={password}");
            println!("They are shown only this once.");
        }
        Origin::Stored => println!(
            "Using the root credentials stored in {}",
            hot_dirs[0].join(CREDENTIALS_FILE).display()
        ),
        Origin::Environment => {
            println!("Using the root credentials from GRANARY_ROOT_USER / GRANARY_ROOT_PASSWORD")
        }
    }
    let cold_status = match &cold {
        Some(c) => c.disk_status().await,
        None => Vec::new(),
    };
    for s in store.disk_status().await.into_iter().chain(cold_status) {
        if let disk_engine::DiskHealth::Offline { reason } = &s.health {
            tracing::error!(disk = %s.label, slot = s.slot + 1, %reason, "disk offline");
        }
    }

    gateway::serve(
        listener,
        gateway::router(gw),
        ServeOptions {
            tls,
            ..ServeOptions::default()
        },
        shutdown,
    )
    .await;
    scanner.stop();
    let _ = scanner_task.await;
    store.shutdown().await;
    if let Some(cold) = &cold {
        cold.shutdown().await;
    }
    for d in local.into_iter().flatten() {
        if let Err(e) = d.flush().await {
            tracing::warn!(disk = %d.root().display(), error = %e, "flush at shutdown failed");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// How a pool's disks are used, for the start-up line.
fn describe_layout(n: usize, parity: usize) -> String {
    match (n, parity) {
        (1, _) => "a single disk, no parity".to_string(),
        (_, p) if p == n - 1 => format!("{n} mirrored disks"),
        (_, p) => format!("{n} disks, {}+{p} erasure coding", n - p),
    }
}

/// Installs SIGINT/SIGTERM handlers now; the returned future resolves on
/// the first of them.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutdown signal received; finishing in-flight requests");
    })
}
