//! One erasure set: k + m disks, their quorums, and the record primitives
//! (fan-out, quorum resolution, commit) every operation is built from.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use disk_engine::{
    Disk, DiskError, DiskHealth, PutRecordOutcome, Record, ShardId, ShardOptions, ShardWriter,
    Stamp, VersionId,
};
use futures::future::join_all;
use uuid::Uuid;

use disk_engine::failpoint;

use crate::agreement::Agreement;
use crate::cache::ReadCache;
use crate::codec::Codec;
use crate::error::Error;
use crate::layout::{ErasureLayout, Quorum};
use crate::list_ahead::ListAhead;
use crate::locks::KeyLocks;
use crate::packed::{self, Pieces};
use crate::record::{self, ObjectRecord, ObjectSummary, TierRef};
use crate::repair::RepairQueue;

/// Default bytes per shard block. Reed–Solomon runs fastest on 64–256 KiB
/// blocks (they stay in cache) and one CRC64 per block costs nothing.
pub const DEFAULT_BLOCK_SIZE: u32 = 256 << 10;

/// An erasure set of `k + m` disks.
pub struct ErasureSet {
    pub(crate) disks: Vec<Arc<dyn Disk>>,
    pub(crate) data: usize,
    pub(crate) parity: usize,
    pub(crate) block_size: u32,
    /// Largest object written packed (0: never).
    pub(crate) pack_threshold: u64,
    pub(crate) quorum: Quorum,
    pub(crate) codec: Arc<Codec>,
    pub(crate) locks: KeyLocks,
    pub(crate) repair: RepairQueue,
    /// Hot-object cache and read coalescing.
    pub(crate) cache: ReadCache,
    /// Permits for background checks of shards reads did not touch.
    pub(crate) presence_checks: Arc<tokio::sync::Semaphore>,
    /// Where tier objects go once no version refers to them any more (the
    /// store's tier worker deletes them); unset without a tier.
    pub(crate) tier_release: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<TierRef>>,
    /// Listing pages read ahead.
    pub(crate) list_ahead: ListAhead,
    /// Which keys may differ between the disks (so where a listing may
    /// read one disk), and the count of writes that invalidates pages read
    /// ahead.
    pub(crate) agreement: Arc<Agreement>,
    last_mtime: AtomicU64,
}

/// A version as the set resolved it: the record and which disks hold it.
/// `T` is what of the record is decoded: all of it, or what a listing shows.
#[derive(Clone, Debug)]
pub(crate) struct Resolved<T = ObjectRecord> {
    pub record: Record,
    pub object: T,
    /// Disk slots holding exactly this write.
    pub holders: Vec<bool>,
}

/// Outcome of resolving one key across the set.
pub(crate) struct KeyState<T = ObjectRecord> {
    /// Visible versions, newest first.
    pub versions: Vec<Resolved<T>>,
    /// Disk slots that answered.
    pub responded: Vec<bool>,
}

/// A decoding of a version record that resolution can order.
pub(crate) trait VersionBody: serde::de::DeserializeOwned + Send {
    /// Creation time, ns since the epoch.
    fn mtime_ns(&self) -> u64;
}

impl VersionBody for ObjectRecord {
    fn mtime_ns(&self) -> u64 {
        self.mtime_ns
    }
}

impl VersionBody for ObjectSummary {
    fn mtime_ns(&self) -> u64 {
        self.mtime_ns
    }
}

impl<T: VersionBody> KeyState<T> {
    /// The state of visible `versions` in any order.
    fn of(mut versions: Vec<Resolved<T>>, responded: Vec<bool>) -> KeyState<T> {
        versions.sort_by_key(|v| {
            std::cmp::Reverse(version_order(v.object.mtime_ns(), v.record.version))
        });
        KeyState {
            versions,
            responded,
        }
    }
}

impl KeyState {
    /// The newest visible version.
    pub fn latest(&self) -> Option<&Resolved> {
        self.versions.first()
    }
}

/// The slot of the first answering disk when every answering disk holds the
/// same writes (the same versions with the same stamps).
fn agreed_records(results: &[Result<Vec<Record>, DiskError>]) -> Option<usize> {
    let first = results.iter().position(|r| r.is_ok())?;
    let same = |a: &Vec<Record>, b: &Vec<Record>| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.version == y.version && x.stamp == y.stamp)
    };
    let reference = results[first].as_ref().ok()?;
    results[first + 1..]
        .iter()
        .flatten()
        .all(|r| same(r, reference))
        .then_some(first)
}

/// Where a version stands among its key's versions (the newest is the
/// greatest): by creation time, not by the stamp, which a tag update
/// renews; then by id.
pub(crate) fn version_order(mtime_ns: u64, version: VersionId) -> (u64, VersionId) {
    (mtime_ns, version)
}

/// The record key of a version: the null version or a version id.
pub(crate) fn version_key(id: Option<Uuid>) -> VersionId {
    id.map_or(VersionId::NULL, |u| VersionId(*u.as_bytes()))
}

pub(crate) use crate::clock::now_ns;

impl ErasureSet {
    /// Builds a set over `disks` (in slot order) with `parity` parity shards.
    pub fn new(
        disks: Vec<Arc<dyn Disk>>,
        parity: usize,
        block_size: u32,
        read_cache_bytes: u64,
        pack_threshold: u64,
        repair: RepairQueue,
    ) -> Result<ErasureSet, Error> {
        let n = disks.len();
        if n == 0 || parity >= n {
            return Err(Error::InvalidArgument(format!(
                "{n} disks cannot hold {parity} parity shards"
            )));
        }
        let data = n - parity;
        let agreement = Arc::new(Agreement::new(disks.clone()));
        Ok(ErasureSet {
            list_ahead: ListAhead::new(agreement.clone()),
            agreement,
            codec: Arc::new(Codec::new(data, parity)?),
            quorum: Quorum::for_layout(data, parity),
            disks,
            data,
            parity,
            block_size,
            // A packed object is one stripe.
            pack_threshold: pack_threshold.min(data as u64 * block_size as u64),
            locks: KeyLocks::new(),
            cache: ReadCache::new(read_cache_bytes),
            repair,
            presence_checks: Arc::new(tokio::sync::Semaphore::new(crate::repair::PRESENCE_CHECKS)),
            tier_release: std::sync::OnceLock::new(),
            last_mtime: AtomicU64::new(0),
        })
    }

    /// Number of disks (k + m).
    pub fn width(&self) -> usize {
        self.disks.len()
    }

    /// Data shards (k).
    pub fn data_shards(&self) -> usize {
        self.data
    }

    /// Parity shards (m).
    pub fn parity_shards(&self) -> usize {
        self.parity
    }

    /// The set's quorums.
    pub fn quorum(&self) -> Quorum {
        self.quorum
    }

    /// The disks in slot order.
    pub fn disks(&self) -> &[Arc<dyn Disk>] {
        &self.disks
    }

    /// Layout for a new object under `bucket/key`: shard order rotates by a
    /// stable hash of the name so parity spreads over the disks.
    pub fn layout_for(&self, bucket: &str, key: &str) -> ErasureLayout {
        let mut name = Vec::with_capacity(bucket.len() + key.len() + 1);
        name.extend_from_slice(bucket.as_bytes());
        name.push(b'/');
        name.extend_from_slice(key.as_bytes());
        let h = crc_fast::crc32_iscsi(&name) as usize;
        ErasureLayout {
            data: self.data as u8,
            parity: self.parity as u8,
            block_size: self.block_size,
            rotation: (h % self.width()) as u8,
        }
    }

    /// A fresh stamp: modification times never go backwards in this process.
    /// A stamp for a new write of `ns/key`, taken by the holder of the
    /// key's lock. When other gateways write the same disks their clocks
    /// may run ahead of this one: the stamp then goes past the key's newest
    /// write — from `seen`, the key as the caller just resolved it, or read
    /// now — so a write committed later always wins (read-after-write
    /// holds across gateways, for overwrites, delete markers and rewrites
    /// alike).
    async fn stamp_for(
        &self,
        ns: &str,
        key: &str,
        seen: Option<&KeyState>,
    ) -> Result<Stamp, Error> {
        if self.locks.is_shared() {
            let resolved;
            let state = match seen {
                Some(s) => s,
                None => {
                    resolved = self.resolve_key(ns, key).await?;
                    &resolved
                }
            };
            if let Some(newest) = state.versions.iter().map(|v| v.record.stamp.mtime_ns).max() {
                self.last_mtime.fetch_max(newest, Ordering::Relaxed);
            }
        }
        Ok(self.next_stamp())
    }

    pub(crate) fn next_stamp(&self) -> Stamp {
        let now = now_ns();
        let mut last = self.last_mtime.load(Ordering::Relaxed);
        loop {
            let t = now.max(last + 1);
            match self
                .last_mtime
                .compare_exchange(last, t, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Stamp {
                        mtime_ns: t,
                        write_id: Uuid::now_v7(),
                    }
                }
                Err(seen) => last = seen,
            }
        }
    }

    /// Runs `f` against every disk concurrently; results in slot order.
    pub(crate) async fn each_disk<T, F, Fut>(&self, f: F) -> Vec<Result<T, DiskError>>
    where
        F: Fn(usize, Arc<dyn Disk>) -> Fut,
        Fut: Future<Output = Result<T, DiskError>>,
    {
        join_all(self.disks.iter().enumerate().map(|(i, d)| f(i, d.clone()))).await
    }

    /// Runs `f` against the disks whose slot is set in `mask`.
    pub(crate) async fn some_disks<T, F, Fut>(
        &self,
        mask: &[bool],
        f: F,
    ) -> Vec<Option<Result<T, DiskError>>>
    where
        F: Fn(usize, Arc<dyn Disk>) -> Fut,
        Fut: Future<Output = Result<T, DiskError>>,
    {
        join_all(self.disks.iter().enumerate().map(|(i, d)| {
            let run = mask.get(i).copied().unwrap_or(false);
            let fut = run.then(|| f(i, d.clone()));
            async move {
                match fut {
                    Some(fut) => Some(fut.await),
                    None => None,
                }
            }
        }))
        .await
    }

    /// Starts shard file `data_id` on the disks set in `mask`, each with its
    /// shard index under `layout`.
    pub(crate) async fn create_shards(
        &self,
        data_id: Uuid,
        layout: ErasureLayout,
        mask: &[bool],
    ) -> Vec<Option<Result<Box<dyn ShardWriter>, DiskError>>> {
        self.some_disks(mask, |slot, d| async move {
            d.create_shard(
                ShardId(data_id),
                ShardOptions {
                    block_size: layout.block_size,
                    shard_index: layout.shard_of_disk(slot) as u32,
                },
            )
            .await
        })
        .await
    }

    /// Health of every disk, in slot order.
    pub async fn health(&self) -> Vec<DiskHealth> {
        join_all(self.disks.iter().map(|d| d.health())).await
    }

    /// Checks that a write quorum of disks is online with room for
    /// `incoming` more bytes of object data (spread over k data shards).
    pub(crate) async fn check_space(&self, incoming: u64) -> Result<(), Error> {
        let per_disk = incoming.div_ceil(self.data as u64);
        let health = self.health().await;
        let online = health
            .iter()
            .filter(|h| matches!(h, DiskHealth::Online { .. }))
            .count();
        let roomy = health
            .iter()
            .filter(
                |h| matches!(h, DiskHealth::Online { free_bytes, .. } if *free_bytes >= per_disk),
            )
            .count();
        if online < self.quorum.write {
            return Err(Error::WriteQuorum {
                needed: self.quorum.write,
                got: online,
            });
        }
        if roomy < self.quorum.write {
            return Err(Error::DiskFull);
        }
        Ok(())
    }

    /// Reads every version of `key` from all disks and resolves which are
    /// visible: a write is visible when at least R disks hold it; a version
    /// is ambiguous (an error) when no write of it reaches R but one might
    /// have been acknowledged on disks that did not answer.
    pub(crate) async fn resolve_key(&self, ns: &str, key: &str) -> Result<KeyState, Error> {
        let results = self
            .each_disk(|_, d| async move { d.get_records(ns.as_bytes(), key.as_bytes()).await })
            .await;
        self.resolve_records(results)
    }

    /// Resolution over per-disk record lists (see [`Self::resolve_key`]).
    pub(crate) fn resolve_records<T: VersionBody>(
        &self,
        results: Vec<Result<Vec<Record>, DiskError>>,
    ) -> Result<KeyState<T>, Error> {
        let n = self.width();
        let responded: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        let answered = responded.iter().filter(|r| **r).count();
        if answered < self.quorum.read {
            return Err(Error::ReadQuorum {
                needed: self.quorum.read,
                got: answered,
            });
        }
        let mut versions = Vec::new();
        if let Some(agreed) = agreed_records(&results) {
            // Every answering disk holds the same writes (the common case):
            // each is on all of them, so at least R, and visible.
            let records = results.into_iter().nth(agreed).unwrap().unwrap_or_default();
            for record in records {
                let object: T = record::decode(&record.body)?;
                versions.push(Resolved {
                    record,
                    object,
                    holders: responded.clone(),
                });
            }
            return Ok(KeyState::of(versions, responded));
        }
        let silent = n - answered;
        // version -> stamp -> (record, holders)
        let mut groups: HashMap<VersionId, HashMap<Stamp, (Record, Vec<bool>)>> = HashMap::new();
        for (slot, r) in results.into_iter().enumerate() {
            for rec in r.into_iter().flatten() {
                let entry = groups
                    .entry(rec.version)
                    .or_default()
                    .entry(rec.stamp)
                    .or_insert_with(|| (rec.clone(), vec![false; n]));
                entry.1[slot] = true;
            }
        }
        for (_, writes) in groups {
            let mut best: Option<(Record, Vec<bool>)> = None;
            let mut maybe_acked = false;
            for (stamp, (rec, holders)) in writes {
                let count = holders.iter().filter(|h| **h).count();
                if count >= self.quorum.read {
                    if best.as_ref().is_none_or(|(b, _)| b.stamp < stamp) {
                        best = Some((rec, holders));
                    }
                } else if count + silent >= self.quorum.write {
                    maybe_acked = true;
                }
            }
            match best {
                Some((record, holders)) => {
                    let object: T = record::decode(&record.body)?;
                    versions.push(Resolved {
                        record,
                        object,
                        holders,
                    });
                }
                None if maybe_acked => {
                    return Err(Error::ReadQuorum {
                        needed: self.quorum.read,
                        got: answered,
                    })
                }
                None => {}
            }
        }
        Ok(KeyState::of(versions, responded))
    }

    /// Writes `object` as a new version of `key` to the disks in `targets`
    /// and returns the stored record: with `versioned`, under a new version
    /// id (the write's UUIDv7); otherwise as the null version, replacing the
    /// previous null version. The modification time is set now (see
    /// [`Self::stamp_for`]; `seen` is the key as the caller resolved it
    /// under the lock, if it did). The caller holds the key lock. See
    /// [`Self::write_record`] for durability.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn commit_record(
        &self,
        ns: &str,
        key: &str,
        mut object: ObjectRecord,
        targets: &[bool],
        versioned: bool,
        pieces: Option<&Pieces>,
        seen: Option<&KeyState>,
    ) -> Result<ObjectRecord, Error> {
        let stamp = self.stamp_for(ns, key, seen).await?;
        object.mtime_ns = stamp.mtime_ns;
        object.version_id = versioned.then_some(stamp.write_id);
        self.write_record(ns, key, object, targets, stamp, pieces)
            .await
    }

    /// Writes a changed copy of an existing version (same id and
    /// modification time, e.g. new tags) under a fresh stamp, so it wins
    /// over the copy it replaces on every disk. The caller holds the key lock
    /// and resolved the key under it (`seen`).
    pub(crate) async fn rewrite_record(
        &self,
        ns: &str,
        key: &str,
        object: ObjectRecord,
        targets: &[bool],
        seen: &KeyState,
    ) -> Result<ObjectRecord, Error> {
        let stamp = self.stamp_for(ns, key, Some(seen)).await?;
        self.write_record(ns, key, object, targets, stamp, None)
            .await
    }

    /// Stores `object` under its version id with `stamp` on the `targets`
    /// disks. Acknowledged only when a write quorum stored it; otherwise the
    /// partial write is rolled back as far as the disks allow. Shard files of
    /// the writes it replaced are deleted, disk by disk. A packed object's
    /// `pieces` go into each disk's record write.
    async fn write_record(
        &self,
        ns: &str,
        key: &str,
        object: ObjectRecord,
        targets: &[bool],
        stamp: Stamp,
        pieces: Option<&Pieces>,
    ) -> Result<ObjectRecord, Error> {
        let rec = Record {
            version: version_key(object.version_id),
            stamp,
            body: record::encode(&object),
            listing: crate::projection::encode(&object),
        };
        let layout = object.layout;
        let mut writing = self.agreement.writing(ns, [key.as_bytes()]);
        failpoint::hit("set.record.before", "").await;
        let results = self
            .some_disks(targets, |slot, d| {
                let rec = rec.clone();
                let piece = pieces.map(|p| p.for_shard(layout.shard_of_disk(slot)));
                async move {
                    let r = d
                        .put_record(ns.as_bytes(), key.as_bytes(), rec, piece)
                        .await;
                    if r.is_ok() {
                        failpoint::hit("set.record.stored", d.label()).await;
                    }
                    r
                }
            })
            .await;
        let stored = results.iter().filter(|r| matches!(r, Some(Ok(_)))).count();
        if stored < self.quorum.write {
            let full = results
                .iter()
                .any(|r| matches!(r, Some(Err(DiskError::Full))));
            self.roll_back(ns, key, &rec, &results, pieces.map(|p| p.id))
                .await;
            drop(writing);
            return Err(if full {
                Error::DiskFull
            } else {
                Error::WriteQuorum {
                    needed: self.quorum.write,
                    got: stored,
                }
            });
        }
        writing.reached_every_disk(stored == self.width());
        drop(writing);
        if stored < self.width() {
            self.repair
                .stats
                .degraded_writes
                .fetch_add(1, Ordering::Relaxed);
        }
        failpoint::hit("set.record.quorum", "").await;
        let keep: Vec<Uuid> = object.data_ids().collect();
        let mut released = Vec::new();
        for (slot, r) in results.into_iter().enumerate() {
            if let Some(Ok(PutRecordOutcome::Stored {
                replaced: Some(old),
            })) = r
            {
                released.extend(self.free_record_data(slot, &old, &keep).await);
            }
        }
        released.retain(|t| object.tiered.as_ref() != Some(t));
        self.release_tiered(released);
        failpoint::hit("set.record.freed", "").await;
        Ok(object)
    }

    async fn roll_back(
        &self,
        ns: &str,
        key: &str,
        rec: &Record,
        results: &[Option<Result<PutRecordOutcome, DiskError>>],
        piece: Option<Uuid>,
    ) {
        for (slot, r) in results.iter().enumerate() {
            if let Some(Ok(PutRecordOutcome::Stored { replaced })) = r {
                let d = &self.disks[slot];
                let undone = d
                    .delete_record(ns.as_bytes(), key.as_bytes(), rec.version, Some(rec.stamp))
                    .await;
                if let (Ok(_), Some(id)) = (&undone, piece) {
                    let _ = d.delete_piece(id).await;
                }
                if let (Ok(_), Some(old)) = (undone, replaced) {
                    let _ = d
                        .put_record(ns.as_bytes(), key.as_bytes(), old.clone(), None)
                        .await;
                }
            }
        }
    }

    /// Deletes, on one disk, the shard files a replaced or deleted record
    /// referenced, except those in `keep`. Returns the record's tier
    /// object, which the caller releases once for all disks.
    pub(crate) async fn free_record_data(
        &self,
        slot: usize,
        old: &Record,
        keep: &[Uuid],
    ) -> Option<TierRef> {
        let Ok(obj) = record::decode::<ObjectRecord>(&old.body) else {
            tracing::warn!(
                disk = self.disks[slot].label(),
                "undecodable replaced record"
            );
            return None;
        };
        for part in obj.parts.iter() {
            let Some(id) = part.data_id.filter(|id| !keep.contains(id)) else {
                continue;
            };
            if let Err(e) = packed::delete_data(&self.disks[slot], id, part.packed).await {
                tracing::warn!(disk = self.disks[slot].label(), error = %e, "could not free object data");
            }
        }
        obj.tiered
    }

    /// Hands tier objects no version refers to any more to the tier worker
    /// (each once, however many disks reported it). One that is lost here
    /// (a crash first) is found by the tier sweep.
    pub(crate) fn release_tiered(&self, mut refs: Vec<TierRef>) {
        refs.sort_by_key(|t| t.id);
        refs.dedup();
        if let Some(tx) = self.tier_release.get() {
            for t in refs {
                let _ = tx.send(t);
            }
        }
    }

    /// Deletes one version from every disk; acknowledged when a write quorum
    /// of disks answered. Frees each disk's shard files of that version.
    pub(crate) async fn delete_version(
        &self,
        ns: &str,
        key: &str,
        version: VersionId,
    ) -> Result<(), Error> {
        self.delete_versions(ns, vec![(key.as_bytes().to_vec(), version)])
            .await
    }

    /// Deletes many versions with one batch per disk and frees their data;
    /// the caller holds every key's lock.
    pub(crate) async fn delete_versions(
        &self,
        ns: &str,
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<(), Error> {
        let mut writing = self
            .agreement
            .writing(ns, items.iter().map(|(k, _)| &k[..]));
        failpoint::hit("set.delete.before", "").await;
        let results = self
            .each_disk(|_, d| {
                let items = items.clone();
                async move {
                    let r = d.delete_records(ns.as_bytes(), items).await;
                    if r.is_ok() {
                        failpoint::hit("set.delete.removed", d.label()).await;
                    }
                    r
                }
            })
            .await;
        failpoint::hit("set.delete.quorum", "").await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        writing.reached_every_disk(ok == self.width());
        drop(writing);
        let released = join_all(results.into_iter().enumerate().map(|(slot, r)| async move {
            let mut released = Vec::new();
            for old in r.into_iter().flatten().flatten() {
                released.extend(self.free_record_data(slot, &old, &[]).await);
            }
            released
        }))
        .await;
        if ok < self.quorum.write {
            // The versions may still be visible: their tier objects stay.
            return Err(Error::WriteQuorum {
                needed: self.quorum.write,
                got: ok,
            });
        }
        self.release_tiered(released.into_iter().flatten().collect());
        Ok(())
    }
}
