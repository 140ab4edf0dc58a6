//! `granary server DIR...`: disks, store and S3 gateway in one process.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use disk_engine::{LocalDiskOptions, ShardIoMode, Tier};
use gateway::AccessKey;
use placement::{
    open_local_pool, LocalPool, LocalPoolConfig, Store, StoreOptions, DEFAULT_BLOCK_SIZE,
};

use crate::credentials::{env_keys, KEYS_FROM_ENV};
use crate::front::{self, describe_sets, run_runtimes, FrontArgs, Opened};
use crate::keyring::{check_before_formatting, server_keys, KeyringDirs, Origin, UnsealSource};

/// Options of `granary server`.
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Data directories of the hot pool; created if missing on first
    /// start. Up to 16 form one erasure set; more are divided into sets of
    /// equal width (see --set-width).
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
    /// Parity shards of each cold erasure set (default 2, fewer for sets
    /// of fewer than four directories).
    #[arg(long, requires = "cold")]
    pub cold_parity: Option<usize>,
    /// Disks per erasure set of the cold pool, chosen as --set-width is for
    /// the hot pool (default: the widest of 4 to 16 that divides the cold
    /// directory count; up to 16, one set of all of them).
    #[arg(long, value_name = "DISKS", requires = "cold")]
    pub cold_set_width: Option<usize>,
    /// Parity shards of each hot erasure set (default by set width: 0 for
    /// 1 disk, mirroring for 2-3, 2 for 4-5, 3 for 6-7, 4 for 8+).
    #[arg(long)]
    pub parity: Option<usize>,
    /// Disks per erasure set of the hot pool (default: the widest of 4 to
    /// 16 that divides the directory count; up to 16 directories, one set
    /// of all of them). Recorded at formatting; a formatted pool keeps it.
    #[arg(long, value_name = "DISKS")]
    pub set_width: Option<usize>,
    /// How shard files are read and written: `auto` (io_uring with O_DIRECT
    /// where the filesystem allows), `buffered` (io_uring through the page
    /// cache) or `blocking` (no io_uring).
    #[arg(long, value_enum, default_value_t = ShardIo::Auto)]
    pub shard_io: ShardIo,
    /// The file holding the unseal key the disks' keyrings (master key,
    /// generated root credentials) are sealed under; outside every data
    /// directory. Default: granary-unseal.key beside the first data
    /// directory, created on the first start. GRANARY_UNSEAL_KEY (base64
    /// of 32 bytes) takes its place.
    #[arg(long, value_name = "FILE")]
    pub unseal_key_file: Option<PathBuf>,
    /// Skip fsync before acknowledging writes. UNSAFE: a power cut can lose
    /// acknowledged objects.
    #[arg(long)]
    pub unsafe_no_fsync: bool,
    #[command(flatten)]
    pub front: FrontArgs,
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
    run_runtimes(args.front.worker_threads, |bulk| serve(args, bulk))
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
        listing_of: Some(placement::listing_of_body),
    };
    let all_dirs: Vec<PathBuf> = hot_dirs.iter().chain(&args.cold).cloned().collect();
    let unseal = UnsealSource::new(args.unseal_key_file.clone(), &hot_dirs[0]);
    check_before_formatting(&unseal, &hot_dirs, &all_dirs)?;
    let cfg = LocalPoolConfig {
        tier: Tier::Hot,
        pool: 0,
        deployment: None,
        dirs: hot_dirs.clone(),
        set_width: args.set_width,
        parity: args.parity,
        disk: disk.clone(),
    };
    let pool = tokio::task::spawn_blocking(move || open_local_pool(&cfg))
        .await?
        .context("cannot open the data directories")?;
    let mut layout = describe_pool(&pool);
    let mut local: Vec<_> = pool.sets.iter().flat_map(|s| s.local.clone()).collect();
    let opts = store_options(&args.front);
    let deployment_id = pool.deployment_id;
    let created = pool.created;
    let mut replaced = pool.sets.iter().any(|s| !s.replaced.is_empty());
    let store = Store::for_pool(pool, opts)?;
    if !args.cold.is_empty() {
        let cfg = LocalPoolConfig {
            tier: Tier::Cold,
            pool: 1,
            deployment: Some(deployment_id),
            dirs: args.cold.clone(),
            set_width: args.cold_set_width,
            parity: args.cold_parity,
            disk,
        };
        let cold = tokio::task::spawn_blocking(move || open_local_pool(&cfg))
            .await?
            .context("cannot open the cold pool's directories")?;
        layout = format!("hot: {layout}; cold: {}", describe_pool(&cold));
        local.extend(cold.sets.iter().flat_map(|s| s.local.iter().cloned()));
        replaced |= cold.sets.iter().any(|s| !s.replaced.is_empty());
        store.attach_cold_pool(cold.sets)?;
    }
    if replaced {
        // Replacement disks were formatted: refill them now rather than
        // only as reads touch their objects.
        tracing::warn!("replaced disks formatted; healing");
        store.start_heal();
    }
    for d in local.iter().flatten() {
        tracing::info!(disk = %d.root().display(), tier = %d.format().tier, io = d.io_path(), "shard I/O");
    }

    let opened_dirs: Vec<PathBuf> = local
        .iter()
        .flatten()
        .map(|d| d.root().to_path_buf())
        .collect();
    // Nothing sealed under older keys can be lost by making new ones.
    let fresh = created
        || !gateway::sealed::holds_sealed_secrets(&store)
            .await
            .unwrap_or(true);
    let dirs = KeyringDirs {
        read: &all_dirs,
        write: &opened_dirs,
        deployment: deployment_id,
        fresh,
    };
    let keys =
        server_keys(&dirs, env_keys()?, &unseal).context("cannot open the deployment's keys")?;
    let (user, password) = keys.root;
    let mut notes = keys.notes;
    notes.extend(match keys.origin {
        Origin::Generated => vec![
            "Root credentials were generated and sealed into every disk's keyring:".to_string(),
            format!("  AWS_ACCESS_KEY_ID={user}"),
            format!("  AWS_SECRET_ACCESS_KEY={password}"),
            "They are shown only this once.".to_string(),
        ],
        Origin::Stored => {
            vec!["Using the root credentials sealed in the disks' keyrings".to_string()]
        }
        Origin::Environment => vec![KEYS_FROM_ENV.to_string()],
    });
    let master = keys.master;
    let opened = Opened {
        store,
        root: AccessKey {
            access_key_id: user,
            secret_key: password,
        },
        master,
        layout,
        notes,
    };
    front::serve(&args.front, opened, bulk).await?;
    for d in local.into_iter().flatten() {
        if let Err(e) = d.flush().await {
            tracing::warn!(disk = %d.root().display(), error = %e, "flush at shutdown failed");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// How an opened pool's disks are used, for the start-up line.
fn describe_pool(pool: &LocalPool) -> String {
    describe_sets(pool.sets.len(), pool.width(), pool.parity())
}

/// The store options the front end's flags ask for.
pub fn store_options(front: &FrontArgs) -> StoreOptions {
    StoreOptions {
        block_size: DEFAULT_BLOCK_SIZE,
        read_cache_bytes: front.read_cache_mib << 20,
        pack_threshold: front.pack_threshold_kib << 10,
    }
}
