//! The root access key: from `GRANARY_ROOT_USER` / `GRANARY_ROOT_PASSWORD`,
//! or generated on first start, kept in a mode-0600 file under the first
//! data directory and printed once. A gateway has no data directory: it
//! takes both keys from the environment, the same on every gateway.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use gateway::{AccessKey, MasterKey};

/// File (under the first data directory) holding a generated root key.
pub const CREDENTIALS_FILE: &str = "root-credentials";

/// Where the root key came from.
pub enum Origin {
    /// The environment.
    Environment,
    /// The credentials file of an earlier start.
    Stored,
    /// Generated now (and stored).
    Generated,
}

/// The start-up note of keys taken from the environment.
pub const KEYS_FROM_ENV: &str =
    "Using the root credentials from GRANARY_ROOT_USER / GRANARY_ROOT_PASSWORD";

/// What a gateway without a data directory says when a key is missing.
const GATEWAY_KEYS: &str = "a gateway keeps no files: set GRANARY_ROOT_USER, GRANARY_ROOT_PASSWORD and GRANARY_MASTER_KEY, the same on every gateway";

/// Loads or creates the root key pair (only from the environment without
/// a data directory).
pub fn root_key(first_dir: Option<&Path>) -> anyhow::Result<(String, String, Origin)> {
    let user = std::env::var("GRANARY_ROOT_USER")
        .ok()
        .filter(|v| !v.is_empty());
    let password = std::env::var("GRANARY_ROOT_PASSWORD")
        .ok()
        .filter(|v| !v.is_empty());
    match (user, password) {
        (Some(u), Some(p)) => {
            if u.len() < 3 || p.len() < 8 {
                bail!("GRANARY_ROOT_USER needs at least 3 characters and GRANARY_ROOT_PASSWORD at least 8");
            }
            return Ok((u, p, Origin::Environment));
        }
        (None, None) => {}
        _ => bail!("set both GRANARY_ROOT_USER and GRANARY_ROOT_PASSWORD, or neither"),
    }
    let Some(first_dir) = first_dir else {
        bail!(GATEWAY_KEYS);
    };
    let path = first_dir.join(CREDENTIALS_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let mut lines = text.lines();
        if let (Some(u), Some(p)) = (lines.next(), lines.next()) {
            return Ok((u.trim().to_string(), p.trim().to_string(), Origin::Stored));
        }
        bail!(
            "{} is malformed; delete it to generate a new root key",
            path.display()
        );
    }
    let AccessKey {
        access_key_id: user,
        secret_key: password,
    } = AccessKey::generate("GR");
    disk_engine::write_file_atomic(&path, format!("{user}\n{password}\n").as_bytes(), 0o600)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((user, password, Origin::Generated))
}

/// File (under the first data directory) holding a generated master key.
pub const MASTER_KEY_FILE: &str = "master-key";

/// Loads the key user secrets are sealed with: `GRANARY_MASTER_KEY`
/// (base64 of 32 bytes), else the master-key file of the first data
/// directory, created (mode 0600) on first start.
pub fn master_key(first_dir: Option<&Path>) -> anyhow::Result<MasterKey> {
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine as _;
    let decode = |text: &str, from: &str| -> anyhow::Result<MasterKey> {
        let raw = B64
            .decode(text.trim())
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .with_context(|| format!("{from} must hold the base64 of exactly 32 bytes"))?;
        Ok(MasterKey::from_bytes(&raw))
    };
    if let Some(v) = std::env::var("GRANARY_MASTER_KEY")
        .ok()
        .filter(|v| !v.is_empty())
    {
        return decode(&v, "GRANARY_MASTER_KEY");
    }
    let Some(first_dir) = first_dir else {
        bail!(GATEWAY_KEYS);
    };
    let path = first_dir.join(MASTER_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => decode(&text, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut raw = [0u8; 32];
            rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut raw);
            disk_engine::write_file_atomic(
                &path,
                format!("{}\n", B64.encode(raw)).as_bytes(),
                0o600,
            )
            .with_context(|| format!("writing {}", path.display()))?;
            Ok(MasterKey::from_bytes(&raw))
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
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
