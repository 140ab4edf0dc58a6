//! The `granary` binary: an S3-compatible object store for AI platforms.
//!
//! `granary server DIR...` runs everything in one process over local
//! directories (one directory: no parity; two or three: mirroring; four to
//! sixteen: Reed–Solomon erasure coding). In a cluster, `granary node`
//! serves a machine's disks and `granary gateway --cluster cluster.toml`
//! answers S3 over them. `granary admin ...` manages a running server.

mod admin;
mod admin_client;
mod cluster;
mod credentials;
mod front;
mod heal_admin;
mod keyring;
mod lifecycle_admin;
mod node;
mod server;

use clap::{Parser, Subcommand};

/// The process allocator. glibc malloc spent about a quarter of a
/// listing's CPU in allocation and its arena locks (benches/RESULTS.md).
/// Built without transparent huge pages (see the workspace Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Granary: an S3-compatible object store for AI platforms.
#[derive(Parser)]
#[command(name = "granary", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the whole store in one process over local directories.
    Server(server::ServerArgs),
    /// Serve this machine's disks to a cluster's gateways (internal RPC).
    Node(node::NodeArgs),
    /// Run a stateless S3 gateway over the nodes of a cluster file.
    Gateway(cluster::GatewayArgs),
    /// Administer a running server (users and their access keys).
    Admin(admin::AdminArgs),
}

fn main() {
    // Fault points named in FAILPOINTS (test builds only).
    #[cfg(feature = "failpoints")]
    let _faults = fail::FailScenario::setup();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        Command::Server(args) => server::run(args),
        Command::Node(args) => node::run(args),
        Command::Gateway(args) => cluster::run(args),
        Command::Admin(args) => admin::run(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
