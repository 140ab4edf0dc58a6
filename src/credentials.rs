//! The root access key: from `GRANARY_ROOT_USER` / `GRANARY_ROOT_PASSWORD`,
//! or generated on first start, kept in a mode-0600 file under the first
//! data directory and printed once.

use std::path::Path;

use anyhow::{bail, Context};
use rand::distributions::{Alphanumeric, DistString};
use rand::Rng;

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

/// Loads or creates the root key pair.
pub fn root_key(first_dir: &Path) -> anyhow::Result<(String, String, Origin)> {
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
    let mut rng = rand::thread_rng();
    let user = format!(
        "GR{}",
        (0..18)
            .map(|_| b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[rng.gen_range(0..32)] as char)
            .collect::<String>()
    );
    let password = Alphanumeric.sample_string(&mut rng, 40);
    disk_engine::write_file_atomic(&path, format!("{user}\n{password}\n").as_bytes(), 0o600)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((user, password, Origin::Generated))
}
