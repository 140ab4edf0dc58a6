//! Keys from the environment: the root access key
//! (`GRANARY_ROOT_USER` / `GRANARY_ROOT_PASSWORD`), the master key
//! (`GRANARY_MASTER_KEY`), and the cluster's secret and TLS files. A
//! server keeps what the environment does not give in its keyrings (see
//! `keyring.rs`); a gateway has no data directory and takes both keys
//! from the environment, the same on every gateway.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use gateway::MasterKey;

use crate::keyring::EnvKeys;

/// The start-up note of keys taken from the environment.
pub const KEYS_FROM_ENV: &str =
    "Using the root credentials from GRANARY_ROOT_USER / GRANARY_ROOT_PASSWORD";

/// What a gateway without a data directory says when a key is missing.
const GATEWAY_KEYS: &str = "a gateway keeps no files: set GRANARY_ROOT_USER, GRANARY_ROOT_PASSWORD and GRANARY_MASTER_KEY, the same on every gateway";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The keys the environment gives (checked, each `None` when not set).
pub fn env_keys() -> anyhow::Result<EnvKeys> {
    let root = match (env("GRANARY_ROOT_USER"), env("GRANARY_ROOT_PASSWORD")) {
        (Some(u), Some(p)) => {
            if u.len() < 3 || p.len() < 8 {
                bail!("GRANARY_ROOT_USER needs at least 3 characters and GRANARY_ROOT_PASSWORD at least 8");
            }
            Some((u, p))
        }
        (None, None) => None,
        _ => bail!("set both GRANARY_ROOT_USER and GRANARY_ROOT_PASSWORD, or neither"),
    };
    let master = match env("GRANARY_MASTER_KEY") {
        None => None,
        Some(v) => Some(crate::keyring::key_bytes(&v, "GRANARY_MASTER_KEY")?),
    };
    Ok(EnvKeys { root, master })
}

/// A gateway's keys: both from the environment.
pub fn gateway_keys() -> anyhow::Result<((String, String), MasterKey)> {
    match env_keys()? {
        EnvKeys {
            root: Some(root),
            master: Some(master),
        } => Ok((root, MasterKey::from_bytes(&master))),
        _ => bail!(GATEWAY_KEYS),
    }
}

/// The cluster secret of nodes and gateways: the first line of `file`, or
/// `GRANARY_CLUSTER_SECRET`.
pub fn cluster_secret(file: Option<&Path>) -> anyhow::Result<disk_engine::rpc::ClusterSecret> {
    let text = match file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("reading the cluster secret from {}", f.display()))?,
        None => std::env::var("GRANARY_CLUSTER_SECRET").map_err(|_| {
            anyhow::anyhow!(
                "give the cluster secret: --cluster-secret-file FILE or GRANARY_CLUSTER_SECRET"
            )
        })?,
    };
    disk_engine::rpc::ClusterSecret::new(text.lines().next().unwrap_or(""))
        .map_err(anyhow::Error::msg)
}

/// The TLS configuration of internal RPC's mutual TLS, built by `build`
/// from the certificate, key and CA files: all three or none (`flags`
/// names the options, for the message).
pub fn rpc_tls<T>(
    flags: &str,
    cert: &Option<PathBuf>,
    key: &Option<PathBuf>,
    ca: &Option<PathBuf>,
    build: fn(&disk_engine::rpc::tls::TlsFiles<'_>) -> Result<T, String>,
) -> anyhow::Result<Option<T>> {
    match (cert, key, ca) {
        (None, None, None) => Ok(None),
        (Some(cert), Some(key), Some(ca)) => {
            build(&disk_engine::rpc::tls::TlsFiles { cert, key, ca })
                .map(Some)
                .map_err(anyhow::Error::msg)
        }
        _ => anyhow::bail!("mutual TLS needs all of {flags}, or none of them"),
    }
}
