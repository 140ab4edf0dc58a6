//! Moving a version's bytes to a colder place — the cold pool or a remote
//! tier (lifecycle transitions) — and the sweep that finishes what a crash
//! interrupted.
//!
//! A transition is three steps: (1) the bytes are read
//! from the hot pool and written as a tier object, which is committed and
//! then read back and compared (CRC32C) with what was read; (2) under the
//! key's lock, if the version is still exactly the one that was read, its
//! record is rewritten to refer to the tier object instead of its shards
//! (same version id and modification time, the new storage class); (3) the
//! rewrite frees the hot shards. Before (2) completes the version still
//! reads from where it was and the tier object is unreferenced; after it,
//! from the tier. A crash between the steps leaves
//! one readable copy; the unreferenced tier object is deleted by
//! [`Store::sweep_tier_objects`] (the scanner runs it at start and every
//! pass).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use erasure_set::record::{self, ObjectRecord, PartRef, TierRef};
use erasure_set::{version_key, BodyError, BodyStream, DiskRecords, ErasureSet};
use futures::StreamExt;
use parking_lot::Mutex;

use crate::error::Error;
use crate::model::{COLD_TIER, TIER_NS};
use crate::objects::VersionRef;
use crate::store::Store;
use disk_engine::{ListStart, Record, Stamp, Tier, VersionId};

/// Marks a tier object as being written by a transition until dropped.
struct InFlight<'a> {
    store: &'a Store,
    id: uuid::Uuid,
}

impl<'a> InFlight<'a> {
    fn hold(store: &'a Store, id: uuid::Uuid) -> InFlight<'a> {
        store.in_flight.lock().insert(id);
        InFlight { store, id }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.store.in_flight.lock().remove(&self.id);
    }
}

fn new_crc() -> crc_fast::Digest {
    crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi)
}

/// Tier objects listed per page by the sweep.
const SWEEP_PAGE: usize = 1000;

/// Where a transition moves a version's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination<'a> {
    /// A pool of the deployment.
    Pool(Tier),
    /// A tier outside it, by name ([`Store::set_remote_tier`]).
    Remote(&'a str),
}

/// What a transition did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transitioned {
    /// The bytes moved to the cold pool (this many).
    Moved(u64),
    /// Only the storage class changed (the bytes were already there).
    Relabelled,
    /// Nothing: the version changed or vanished meanwhile, or already has
    /// the class.
    Unchanged,
}

/// The parts of a version whose bytes are in a tier: sizes, entity tags
/// and checksums as before (part-number reads and attributes still
/// work), no data of their own.
pub(crate) fn tiered_parts(parts: &[PartRef]) -> Vec<PartRef> {
    parts
        .iter()
        .map(|p| PartRef {
            data_id: None,
            packed: false,
            ..p.clone()
        })
        .collect()
}

impl Store {
    /// Where a transition to storage class `class` goes: the remote tier
    /// of that name if one is configured, the cold pool otherwise.
    pub fn destination<'a>(&self, class: &'a str) -> Destination<'a> {
        match self.pools.has_remote(class) {
            true => Destination::Remote(class),
            false => Destination::Pool(Tier::Cold),
        }
    }

    /// Whether this server can store data at `to`.
    pub fn reaches(&self, to: Destination<'_>) -> bool {
        match to {
            Destination::Pool(Tier::Hot) => true,
            Destination::Pool(Tier::Cold) => self.pools.has_cold(),
            Destination::Remote(name) => self.pools.has_remote(name),
        }
    }

    /// Moves version `version` of `bucket/key` (the current one if `None`)
    /// to storage class `class` at `to`: the cold pool or a tier outside
    /// the deployment. Lifecycle never moves objects back to the hot pool
    /// (a client can, with CopyObject).
    pub async fn transition_version(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
        class: &str,
        to: Destination<'_>,
    ) -> Result<Transitioned, Error> {
        let before = self.get_version(bucket, key, version).await?;
        if before.delete_marker || before.meta.storage_class.as_deref() == Some(class) {
            return Ok(Transitioned::Unchanged);
        }
        let here = before.tiered.as_ref().map(|t| t.tier.as_str());
        let there = match to {
            Destination::Pool(Tier::Hot) => None,
            Destination::Pool(Tier::Cold) => Some(COLD_TIER),
            Destination::Remote(name) => Some(name),
        };
        if there.is_none() && here.is_some() {
            return Err(Error::InvalidArgument(
                "lifecycle transitions do not move objects back to the hot pool".into(),
            ));
        }
        if here == there {
            let mut after = before.clone();
            after.meta.storage_class = Some(class.to_string());
            return Ok(match self.flip(bucket, key, &before, after).await? {
                true => Transitioned::Relabelled,
                false => Transitioned::Unchanged,
            });
        }
        let size = before.size;
        let read_crc = Arc::new(Mutex::new(new_crc()));
        let crc = read_crc.clone();
        let source = self
            .read_object(bucket, key, before.clone(), 0..size)
            .map(move |chunk| {
                let chunk = chunk.map_err(|e| Box::new(e) as BodyError)?;
                crc.lock().update(&chunk);
                Ok(chunk)
            });
        let body: BodyStream = Box::pin(source);
        let _held;
        let tier_ref = match to {
            Destination::Remote(name) => {
                let id = uuid::Uuid::now_v7();
                _held = InFlight::hold(self, id);
                self.pools
                    .remote(name)?
                    .put(id, bucket, key, body, size)
                    .await?;
                TierRef {
                    tier: name.to_string(),
                    id,
                }
            }
            _ => {
                let staged = self.write_tier_data(COLD_TIER, body, Some(size)).await?;
                let id = staged.tier.as_ref().map(|t| t.id).unwrap_or_default();
                _held = InFlight::hold(self, id);
                if staged.size != size {
                    return Err(Error::Corrupt(format!(
                        "transition read {} of {size} bytes",
                        staged.size
                    )));
                }
                self.commit_tier_object(staged, bucket, key, &before.meta)
                    .await?
            }
        };
        disk_engine::failpoint::hit("transition.tier_committed", "").await;
        let read = read_crc.lock().finalize();
        match self.tier_crc(&tier_ref, size).await {
            Ok(written) if written == read => {}
            Ok(_) => {
                self.pools.release_tiered(vec![tier_ref]);
                return Err(Error::Corrupt(
                    "the cold copy differs from the hot one".into(),
                ));
            }
            Err(e) => {
                self.pools.release_tiered(vec![tier_ref]);
                return Err(e);
            }
        }
        let mut after = before.clone();
        after.parts = tiered_parts(&before.parts);
        after.tiered = Some(tier_ref.clone());
        after.meta.storage_class = Some(class.to_string());
        let flipped = self.flip(bucket, key, &before, after).await;
        disk_engine::failpoint::hit("transition.flipped", "").await;
        match flipped {
            Ok(true) => Ok(Transitioned::Moved(size)),
            Ok(false) => {
                self.pools.release_tiered(vec![tier_ref]);
                Ok(Transitioned::Unchanged)
            }
            // The rewrite may have reached some disks: the sweep decides
            // from the writes readers are or may be shown.
            Err(e) => Err(e),
        }
    }

    /// CRC32C of a tier object's bytes, read back from its pool.
    async fn tier_crc(&self, tier: &TierRef, size: u64) -> Result<u64, Error> {
        let mut stream = self.read_tiered(tier.clone(), 0..size);
        let mut crc = new_crc();
        let mut read = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            read += chunk.len() as u64;
            crc.update(&chunk);
        }
        if read != size {
            return Err(Error::Corrupt(format!(
                "the cold copy has {read} of {size} bytes"
            )));
        }
        Ok(crc.finalize())
    }

    /// Rewrites version `before` as `after` under the key's lock, if it is
    /// still exactly `before`. The rewrite frees what `before` referenced
    /// and `after` does not.
    async fn flip(
        &self,
        bucket: &str,
        key: &str,
        before: &ObjectRecord,
        after: ObjectRecord,
    ) -> Result<bool, Error> {
        let _guard = self.lock_key(bucket, key).await?;
        let (set, state) = self.resolve_home(bucket, key).await?;
        let wanted = version_key(before.version_id);
        let unchanged = state
            .versions
            .iter()
            .any(|v| v.record.version == wanted && v.object == *before);
        if !unchanged {
            return Ok(false);
        }
        let all = vec![true; set.width()];
        set.rewrite_record(bucket, key, after, &all, &state).await?;
        Ok(true)
    }

    /// Deletes tier objects (in the cold pool, the later hot pools and every remote tier)
    /// no version refers to that are older than `grace` (younger ones may
    /// belong to a write or transition still in progress). Returns how
    /// many were deleted.
    pub async fn sweep_tier_objects(&self, grace: Duration) -> Result<usize, Error> {
        let cutoff = erasure_set::clock::now_ns().saturating_sub(grace.as_nanos() as u64);
        let mut deleted = 0;
        // A set that cannot be listed is skipped alone (the others are
        // swept); the pass then reports its first failure.
        let mut failed = None;
        for (name, set) in self.pools.tier_sets() {
            match self.sweep_set(&name, &set, cutoff).await {
                Ok(n) => deleted += n,
                Err(e) => {
                    tracing::warn!(tier = %name, error = %e, "cannot sweep a set of a tier pool; the others are swept");
                    failed.get_or_insert(e);
                }
            }
        }
        for (name, backend) in self.pools.remotes() {
            let stale = match backend.stale(cutoff).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(tier = %name, error = %e, "cannot sweep a remote tier");
                    continue;
                }
            };
            for (id, bucket, key) in stale {
                let Ok(_guard) = self.lock_key(&bucket, &key).await else {
                    continue;
                };
                if !self.in_flight.lock().contains(&id) && !self.refers_to(&bucket, &key, id).await
                {
                    tracing::info!(tier = %name, %id, %bucket, %key, "deleting an unreferenced remote tier object");
                    self.pools.release_tiered(vec![TierRef {
                        tier: name.clone(),
                        id,
                    }]);
                    deleted += 1;
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }

    /// Whether a write of `bucket/key` that readers are shown, or may be
    /// shown later, refers to tier object `id` (true when that cannot be
    /// told: see [`may_refer`]). The caller holds the key's lock.
    async fn refers_to(&self, bucket: &str, key: &str, id: uuid::Uuid) -> bool {
        let Ok(home) = self.home(bucket, key).await else {
            return true;
        };
        let found = home
            .sets()
            .any(|(set, records)| may_refer(set, records, id));
        found
    }

    /// [`Self::sweep_tier_objects`] of one set of a pool of the deployment
    /// (the cold pool or a further hot pool), named `tier` in version
    /// records.
    async fn sweep_set(&self, tier: &str, pool: &ErasureSet, cutoff: u64) -> Result<usize, Error> {
        let mut start = ListStart::Beginning;
        let mut deleted = 0;
        loop {
            let page = pool
                .list_resolved::<ObjectRecord>(TIER_NS, b"", start, SWEEP_PAGE)
                .await?;
            for (name, versions) in &page.keys {
                let Some(tier_object) = versions.first().map(|v| &v.object) else {
                    continue;
                };
                if tier_object.mtime_ns > cutoff {
                    continue;
                }
                let Ok(id) = name.parse::<uuid::Uuid>() else {
                    continue;
                };
                let owner = |n: &str| {
                    tier_object
                        .meta
                        .user
                        .iter()
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.clone())
                };
                let (Some(bucket), Some(key)) = (
                    owner(crate::model::OWNER_BUCKET),
                    owner(crate::model::OWNER_KEY),
                ) else {
                    continue;
                };
                // Under the owner key's lock: a PUT of a cold object commits
                // its tier object and then its version under it, so this
                // never sees one between the two.
                let Ok(_guard) = self.lock_key(&bucket, &key).await else {
                    continue;
                };
                if self.in_flight.lock().contains(&id) || self.refers_to(&bucket, &key, id).await {
                    continue;
                }
                tracing::info!(%id, %bucket, %key, "deleting an unreferenced tier object");
                let tier = TierRef {
                    tier: tier.into(),
                    id,
                };
                if tier_object.multipart {
                    // Its parts belong to the upload it was completed
                    // from, which still exists: only the record goes.
                    self.forget_tier_object(&tier).await;
                } else {
                    self.pools.release_tiered(vec![tier]);
                }
                deleted += 1;
            }
            match page.next {
                Some(next) => start = ListStart::After(next),
                None => return Ok(deleted),
            }
        }
    }
}

/// Whether, among one set's records of a key (`records`, each disk's),
/// a write readers may be shown refers to tier object `id`: a write of a
/// visible version, or of a version with more than one write on the disks
/// (a rewrite cut short, such as a flip left below R by a crash or a
/// failed roll-back, is shown once the older write falls below R too:
/// `ErasureSet::resolve_records`). A version whose only write is below R
/// (a write cut short and never acknowledged) is never shown, and does not
/// keep its tier object. True when it cannot be told: a disk silent, the
/// key ambiguous, a record undecodable.
fn may_refer(set: &ErasureSet, records: &DiskRecords, id: uuid::Uuid) -> bool {
    let Some(answers) = records
        .iter()
        .map(|disk| disk.as_ref().ok())
        .collect::<Option<Vec<&Vec<Record>>>>()
    else {
        return true;
    };
    let every = answers.iter().map(|disk| Ok((*disk).clone())).collect();
    let Ok(state) = set.resolve_records::<ObjectRecord>(every) else {
        return true;
    };
    // version -> (its distinct writes, whether one refers to `id`)
    let mut writes: HashMap<VersionId, (HashSet<Stamp>, bool)> = HashMap::new();
    for disk in answers {
        for rec in disk {
            let refers = match record::decode::<ObjectRecord>(&rec.body) {
                Ok(o) => o.tiered.is_some_and(|t| t.id == id),
                Err(_) => true,
            };
            let entry = writes.entry(rec.version).or_default();
            entry.0.insert(rec.stamp);
            entry.1 |= refers;
        }
    }
    let visible = |v: &VersionId| state.versions.iter().any(|s| s.record.version == *v);
    writes
        .iter()
        .any(|(v, (stamps, refers))| *refers && (stamps.len() > 1 || visible(v)))
}
