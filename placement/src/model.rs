//! The object model over the pools: the bucket, versioning and
//! multipart-upload records placement stores, and the names it reserves.
//! It imports nothing of this crate: every other file may import it.
//!
//! Records are serialised with [`erasure_set::record::encode`] (one format
//! byte, then MessagePack with field names), so fields can be added with
//! defaults.

use serde::{Deserialize, Serialize};

use erasure_set::{ErasureLayout, ObjectMeta, PartRef};

/// Namespace of cluster-wide state (buckets), stored erasure-coded like any
/// object. Its name is not a valid bucket name, so no bucket can collide.
pub(crate) const SYSTEM_NS: &str = ".granary.sys";
/// Namespace of tier objects in the pools that hold them. Not a valid
/// bucket name.
pub(crate) const TIER_NS: &str = ".granary.tier";
/// Metadata names of a tier object's owner.
pub(crate) const OWNER_BUCKET: &str = "owner-bucket";
pub(crate) const OWNER_KEY: &str = "owner-key";
/// Name of the cold pool's tier in version records.
pub const COLD_TIER: &str = "cold";
/// Prefix of the names of hot pools added after the first ("pool-1", …):
/// new keys may live in one of them; the bytes of versions written before
/// they took keys may be tier objects there.
pub const POOL_TIER_PREFIX: &str = "pool-";

/// State of an in-progress multipart upload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    /// When the upload was created, ns since the epoch.
    pub initiated_ns: u64,
    /// Layout every part is written with.
    pub layout: ErasureLayout,
    /// Metadata the finished object will carry (ETag filled at completion).
    pub meta: ObjectMeta,
    /// Tags the finished object will carry.
    #[serde(default)]
    pub tags: Vec<(String, String)>,
    /// Checksum algorithm every part carries (the gateway's name for it).
    #[serde(default)]
    pub checksum_algorithm: Option<String>,
    /// Checksum type of the finished object ("COMPOSITE" or "FULL_OBJECT").
    #[serde(default)]
    pub checksum_type: Option<String>,
    /// The parts are written to the cold pool (a cold storage class); the
    /// finished object is a tier object there.
    #[serde(default)]
    pub cold: bool,
    /// The pool (tier name) the parts are written to when not this one:
    /// the cold pool, or a hot pool added later. The finished object is a
    /// tier object there. Uploads written before pools were named carry
    /// only `cold`.
    #[serde(default)]
    pub pool: Option<String>,
    /// The hot pool added later the upload lives in, with its key (its
    /// records, and its parts unless `pool` names another); `None`: the
    /// first pool, in the key's set there.
    #[serde(default)]
    pub home: Option<String>,
}

impl UploadRecord {
    /// The tier name of the pool holding the parts (`None`: this pool).
    pub fn part_pool(&self) -> Option<&str> {
        match (&self.pool, self.cold) {
            (Some(p), _) => Some(p),
            (None, true) => Some(COLD_TIER),
            (None, false) => None,
        }
    }
}

/// One uploaded part of a multipart upload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRecord {
    /// The part's data.
    pub part: PartRef,
    /// When the part was uploaded, ns since the epoch.
    pub mtime_ns: u64,
    /// Which disk slots hold its shards.
    pub disks: Vec<bool>,
}

/// Versioning state of a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Versioning {
    /// Never enabled: writes replace the null version.
    #[default]
    Unversioned,
    /// Every write creates a new version.
    Enabled,
    /// Writes replace the null version; older versions stay.
    Suspended,
}

/// A bucket, stored in the system namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketRecord {
    /// Bucket name.
    pub name: String,
    /// Creation time, ns since the epoch.
    pub created_ns: u64,
    /// Region the bucket was created in.
    #[serde(default)]
    pub region: String,
    /// Versioning state.
    #[serde(default)]
    pub versioning: Versioning,
    /// Configuration documents by kind ("policy", "cors", "tagging", ...),
    /// as the gateway stored them; this layer does not interpret them.
    #[serde(default)]
    pub config: std::collections::BTreeMap<String, String>,
    /// Set while a DeleteBucket decides whether the bucket is empty
    /// (see `buckets.rs`); writes wait for its decision.
    #[serde(default)]
    pub deleting: Option<DeletingMark>,
}

/// A DeleteBucket under way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletingMark {
    /// When the bucket was marked, ns since the epoch.
    pub since_ns: u64,
    /// The process deleting it.
    pub by: uuid::Uuid,
}

#[cfg(test)]
mod tests {
    use super::*;
    use erasure_set::record::{decode, encode};
    use erasure_set::SetError;

    #[test]
    fn round_trip_and_unknown_format() {
        let r = BucketRecord {
            name: "b".into(),
            created_ns: 5,
            region: "us-east-1".into(),
            versioning: Versioning::Enabled,
            config: [("policy".to_string(), "{}".to_string())].into(),
            deleting: None,
        };
        let e = encode(&r);
        assert_eq!(decode::<BucketRecord>(&e).unwrap(), r);
        let mut bad = e.to_vec();
        bad[0] = 9;
        assert!(matches!(
            decode::<BucketRecord>(&bad),
            Err(SetError::Corrupt(_))
        ));
        assert!(decode::<BucketRecord>(&[]).is_err());
        assert!(decode::<BucketRecord>(&e[..e.len() - 2]).is_err());
    }
}
