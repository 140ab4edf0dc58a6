//! Remote tiers: other S3 endpoints that lifecycle transitions can move
//! data to, configured by admins (`/granary/admin/v1/tiers`). Each is kept
//! as a cluster-wide document with its secret key sealed by the master key,
//! registered with the store at start and whenever it changes.

use std::sync::Arc;

use remote_tier::{RemoteTier, RemoteTierConfig};
use serde_json::{json, Value};

use crate::Gateway;

/// Prefix of the tier documents in the store's system namespace.
pub(crate) const TIER_DOCS: &str = "tiers/";
/// Storage class names a remote tier may not take.
const RESERVED: &[&str] = &[
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "INTELLIGENT_TIERING",
    "EXPRESS_ONEZONE",
    "OUTPOSTS",
    "SNOW",
];

fn context(name: &str) -> String {
    format!("tier:{name}")
}

/// Whether `name` can name a remote tier (it becomes a storage class).
pub fn valid_name(name: &str) -> Result<(), String> {
    let shaped = (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !shaped {
        return Err(
            "a tier name is 1-32 characters of A-Z, 0-9, '_' and '-' (it becomes a storage class)"
                .into(),
        );
    }
    if RESERVED.contains(&name) || lifecycle::config::TRANSITION_CLASSES.contains(&name) {
        return Err(format!("{name} is a storage class of its own"));
    }
    Ok(())
}

/// Whether this server can store data in every one of `classes`
/// (transition targets of validated rules): not so for a cold class
/// without a cold pool. A rule that could never fire is refused rather
/// than kept.
pub fn stores_all<'a>(gw: &Gateway, mut classes: impl Iterator<Item = &'a str>) -> bool {
    classes.all(|c| gw.store.reaches(gw.store.destination(c)))
}

/// Stores a tier's configuration and registers it with the store.
pub async fn put(gw: &Gateway, name: &str, cfg: RemoteTierConfig) -> Result<Value, String> {
    valid_name(name)?;
    let tier = RemoteTier::new(cfg.clone())?;
    let stored = RemoteTierConfig {
        secret_key: gw.identities.seal(&context(name), &cfg.secret_key),
        ..cfg.clone()
    };
    let doc = serde_json::to_vec(&stored).map_err(|e| e.to_string())?;
    gw.store
        .update_system_doc(&format!("{TIER_DOCS}{name}"), |_| Ok(Some(doc)))
        .await
        .map_err(|e| e.to_string())?;
    gw.store.set_remote_tier(name, Some(Arc::new(tier)));
    Ok(describe(name, &cfg))
}

/// Removes a tier. Versions already moved there cannot be read until it is
/// configured again.
pub async fn remove(gw: &Gateway, name: &str) -> Result<(), String> {
    gw.store
        .update_system_doc(&format!("{TIER_DOCS}{name}"), |_| Ok(None))
        .await
        .map_err(|e| e.to_string())?;
    gw.store.set_remote_tier(name, None);
    Ok(())
}

fn describe(name: &str, cfg: &RemoteTierConfig) -> Value {
    json!({
        "name": name,
        "endpoint": cfg.endpoint,
        "bucket": cfg.bucket,
        "prefix": cfg.prefix,
        "region": cfg.region,
        "accessKey": cfg.access_key,
    })
}

async fn stored(gw: &Gateway) -> Result<Vec<(String, RemoteTierConfig)>, String> {
    let docs = gw
        .store
        .list_system_docs(TIER_DOCS)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (path, doc) in docs {
        let name = path.trim_start_matches(TIER_DOCS).to_string();
        let Ok(mut cfg) = serde_json::from_slice::<RemoteTierConfig>(&doc) else {
            tracing::error!(tier = %name, "stored tier configuration does not parse");
            continue;
        };
        let Some(secret) = gw.identities.open(&context(&name), &cfg.secret_key) else {
            tracing::error!(tier = %name, "the tier's secret key cannot be decrypted with this master key");
            continue;
        };
        cfg.secret_key = secret;
        out.push((name, cfg));
    }
    Ok(out)
}

/// The configured tiers (without their secrets).
pub async fn list(gw: &Gateway) -> Result<Value, String> {
    let tiers: Vec<Value> = stored(gw)
        .await?
        .iter()
        .map(|(name, cfg)| describe(name, cfg))
        .collect();
    Ok(json!({ "tiers": tiers }))
}

/// Registers every stored tier with the store (at start).
pub async fn load(gw: &Gateway) -> Result<usize, String> {
    let tiers = stored(gw).await?;
    let n = tiers.len();
    for (name, cfg) in tiers {
        match RemoteTier::new(cfg) {
            Ok(t) => gw.store.set_remote_tier(&name, Some(Arc::new(t))),
            Err(e) => tracing::error!(tier = %name, error = %e, "remote tier not registered"),
        }
    }
    Ok(n)
}
