//! The S3 front end shared by `granary server` and `granary gateway`: the
//! runtimes, the gateway over the opened store, the lifecycle scanner, the
//! listener and an orderly shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use gateway::{AccessKey, Gateway, GatewayConfig, MasterKey, ServeOptions};
use placement::Store;

/// Options of the S3 front end, shared by `granary server` and `granary gateway`.
#[derive(Args, Debug)]
pub struct FrontArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub address: SocketAddr,
    /// Region the server answers for.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Domain for virtual-hosted-style requests (<bucket>.<domain>).
    #[arg(long)]
    pub domain: Option<String>,
    /// Seconds a client may pause while sending a request body; also the
    /// window over which --body-min-rate is measured.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub body_timeout: u64,
    /// Bytes per second a request body must average over each
    /// --body-timeout window, or the request fails with RequestTimeout.
    #[arg(long, default_value_t = 1024, value_name = "BYTES")]
    pub body_min_rate: u64,
    /// Seconds from accepting a connection to its first request's headers,
    /// and for the headers of every later request.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub header_timeout: u64,
    /// Seconds a connection may stay idle (no traffic, no request in
    /// flight) before it is closed.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub idle_timeout: u64,
    /// Accept SigV2 presigned URLs (what botocore and the aws CLI still
    /// produce by default in us-east-1); `--sigv2 false` refuses them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub sigv2: bool,
    /// Most client connections open at once; past it new connections are
    /// closed at once, with a log line.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
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
    /// Hours between healing passes (scrubs), which read every object from
    /// every disk, verify its checksums and rebuild what is missing or
    /// corrupt (0: only on `granary admin heal`).
    #[arg(long, default_value_t = 24, value_name = "HOURS")]
    pub scrub_hours: u64,
    /// Hours between garbage collection passes, which delete the shard
    /// files and pieces nothing refers to (what crashes and cut-off writes
    /// leave); 0: only on `granary admin gc`.
    #[arg(long, default_value_t = 1, value_name = "HOURS")]
    pub gc_hours: u64,
    /// Most bytes per second a healing pass verifies, in MiB.
    #[arg(long, default_value_t = placement::DEFAULT_HEAL_BYTES_PER_SEC >> 20, value_name = "MIB")]
    pub heal_mib_per_sec: u64,
    /// Serve Prometheus metrics at /granary/metrics to requests carrying
    /// `Authorization: Bearer TOKEN` (off without it).
    #[arg(long, env = "GRANARY_METRICS_TOKEN", value_name = "TOKEN")]
    pub metrics_token: Option<String>,
}

/// What the front end serves: the store (with every pool attached), the
/// keys and how to describe it all at start.
pub struct Opened {
    /// The store over every pool.
    pub store: Arc<Store>,
    /// The root access key.
    pub root: AccessKey,
    /// The key user secrets and tier credentials are sealed with.
    pub master: MasterKey,
    /// How the pools are laid out, for the start-up line.
    pub layout: String,
    /// Lines printed after the start-up line (where the keys came from).
    pub notes: Vec<String>,
}

/// Builds the runtimes and runs `main` on the request runtime; upload
/// bodies are streamed on a second runtime at bulk priority.
pub fn run_runtimes<F, Fut>(worker_threads: Option<usize>, main: F) -> anyhow::Result<()>
where
    F: FnOnce(tokio::runtime::Handle) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = worker_threads.unwrap_or(4 * cpus).clamp(1, 256);
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
    let result = runtime.block_on(main(bulk.handle().clone()));
    bulk.shutdown_timeout(Duration::from_secs(5));
    result
}

/// Serves S3 over `opened` until SIGINT or SIGTERM, then stops the
/// store's background work (the scanner's too).
pub async fn serve(
    args: &FrontArgs,
    opened: Opened,
    bulk: tokio::runtime::Handle,
) -> anyhow::Result<()> {
    let Opened {
        store,
        root,
        master,
        layout,
        notes,
    } = opened;
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
        body_pace: gateway::BodyPace {
            window: Duration::from_secs(args.body_timeout.max(1)),
            min_rate: args.body_min_rate,
        },
        sigv2: args.sigv2,
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
    store.run_worker(scanner.worker());
    store.set_scrub(
        (args.scrub_hours > 0).then(|| Duration::from_secs(args.scrub_hours * 3600)),
        args.heal_mib_per_sec << 20,
    );
    store.set_gc_interval((args.gc_hours > 0).then(|| Duration::from_secs(args.gc_hours * 3600)));
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
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!(
        "Granary listening on {scheme}://{addr} ({layout}, region {})",
        args.region
    );
    for line in notes {
        println!("{line}");
    }
    for s in store.disk_status_by_pool().await.into_iter().flatten() {
        if let disk_engine::DiskHealth::Offline { reason } = &s.health {
            tracing::error!(disk = %s.label, slot = s.slot + 1, %reason, "disk offline");
        }
    }
    gateway::serve(
        listener,
        gateway::router(gw),
        ServeOptions {
            tls,
            header_read_timeout: Duration::from_secs(args.header_timeout.max(1)),
            idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
            max_connections: args.max_connections.max(1),
            ..ServeOptions::default()
        },
        shutdown,
    )
    .await;
    store.shutdown().await;
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

/// How a pool of `sets` erasure sets of `width` disks with `parity` is
/// used, for the start-up line.
pub fn describe_sets(sets: usize, width: usize, parity: usize) -> String {
    match sets {
        1 => describe_layout(width, parity),
        n => format!("{n} erasure sets of {}", describe_layout(width, parity)),
    }
}

/// Installs SIGINT/SIGTERM handlers now; the returned future resolves on
/// the first of them.
pub fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
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
