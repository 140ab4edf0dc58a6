//! One erasure set: k + m disks, their quorums, and the record primitives
//! (fan-out, quorum resolution, commit) every operation is built from.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use disk_engine::{
    Disk, DiskError, DiskHealth, IoCounters, IoStats, MeteredDisk, Record, ShardId, ShardOptions,
    ShardWriter, Stamp, VersionId,
};
use futures::future::join_all;
use uuid::Uuid;

use crate::agreement::Agreement;
use crate::at_risk::AtRisk;
use crate::cache::ReadCache;
use crate::codec::Codec;
use crate::error::SetError;
use crate::layout::ErasureLayout;
use crate::list_ahead::ListAhead;
use crate::locks::KeyLocks;
use crate::quorum::Quorum;
use crate::read_queue::{ReadQueue, UNIT_READS_IN_FLIGHT};
pub use crate::record::version_key;
use crate::record::{self, version_order, ObjectRecord, ObjectSummary, TierRef};
use crate::repair_queue::RepairQueue;

/// Each disk's records of one key, or why it did not answer.
pub type DiskRecords = Vec<Result<Vec<Record>, DiskError>>;

/// Default bytes per shard block. Reed–Solomon runs fastest on 64–256 KiB
/// blocks (they stay in cache) and one CRC64 per block costs nothing.
pub const DEFAULT_BLOCK_SIZE: u32 = 256 << 10;

/// For a key (namespace, key), the set whose locks its writers take, when
/// not the set holding it (see [`ErasureSet::lock_keys_in`]).
pub type LockPlace = Arc<dyn Fn(&str, &str) -> Option<Arc<ErasureSet>> + Send + Sync>;

/// An erasure set of `k + m` disks.
pub struct ErasureSet {
    /// The disks in slot order, each counted (see `disk_io`).
    pub(crate) disks: Vec<Arc<dyn Disk>>,
    /// What reached each disk, by slot.
    io: Vec<Arc<IoCounters>>,
    pub(crate) data: usize,
    pub(crate) parity: usize,
    pub(crate) block_size: u32,
    /// Largest object written packed (0: never).
    pub(crate) pack_threshold: u64,
    pub(crate) quorum: Quorum,
    pub(crate) codec: Arc<Codec>,
    pub(crate) locks: KeyLocks,
    pub(crate) repair: RepairQueue,
    /// Hot-object cache, read coalescing and read-ahead (the store's, shared
    /// by its sets).
    pub(crate) cache: Arc<ReadCache>,
    /// The order in which the set's disks read units (oldest request first).
    pub(crate) reads: Arc<ReadQueue>,
    /// Permits for background checks of shards reads did not touch.
    pub(crate) presence_checks: Arc<tokio::sync::Semaphore>,
    /// Where tier objects go once no version refers to them any more (the
    /// store's tier worker deletes them); unset without a tier.
    pub(crate) tier_release: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<TierRef>>,
    /// Names, for some keys, the set whose locks their writers take
    /// instead of this one's (see [`ErasureSet::lock_keys_in`]).
    pub(crate) lock_place: std::sync::OnceLock<LockPlace>,
    /// Listing pages read ahead.
    pub(crate) list_ahead: ListAhead,
    /// Which keys may differ between the disks (so where a listing may
    /// read one disk), and the count of writes that invalidates pages read
    /// ahead.
    pub(crate) agreement: Arc<Agreement>,
    /// The newest modification time this process stamped: stamps never go
    /// backwards in it (see `commit.rs`).
    pub(crate) last_mtime: AtomicU64,
    /// Why the set is offline (its disks were not opened; see
    /// `set_format.rs`): its lost quorums answer this instead.
    pub(crate) offline: std::sync::OnceLock<String>,
    /// Objects acknowledged with some disk missing their write.
    pub(crate) at_risk: Arc<AtRisk>,
}

/// A version as the set resolved it: the record and which disks hold it.
/// `T` is what of the record is decoded: all of it, or what a listing shows.
#[derive(Clone, Debug)]
pub struct Resolved<T = ObjectRecord> {
    /// The stored record.
    pub record: Record,
    /// Its body, decoded.
    pub object: T,
    /// Disk slots holding exactly this write.
    pub holders: Vec<bool>,
    /// Disk slots holding some write of this version (this one, or an
    /// older or newer one a cut-short rewrite left): where its data is, so
    /// where a rewrite of it goes.
    pub holding: Vec<bool>,
}

/// Outcome of resolving one key across the set.
pub struct KeyState<T = ObjectRecord> {
    /// Visible versions, newest first.
    pub versions: Vec<Resolved<T>>,
    /// Disk slots that answered.
    pub responded: Vec<bool>,
    /// The newest stamp any answering disk holds for the key, visible or
    /// not: a new write's stamp goes past it.
    pub newest: Option<Stamp>,
}

/// A decoding of a version record that resolution can order.
pub trait VersionBody: serde::de::DeserializeOwned + Send {
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
    fn of(
        mut versions: Vec<Resolved<T>>,
        responded: Vec<bool>,
        newest: Option<Stamp>,
    ) -> KeyState<T> {
        versions.sort_by_key(|v| {
            std::cmp::Reverse(version_order(v.object.mtime_ns(), v.record.version))
        });
        KeyState {
            versions,
            responded,
            newest,
        }
    }

    /// The state of a key no disk holds anything of (a new tier object).
    pub fn empty() -> KeyState<T> {
        KeyState {
            versions: Vec::new(),
            responded: Vec::new(),
            newest: None,
        }
    }
}

impl KeyState {
    /// The newest visible version.
    pub fn latest(&self) -> Option<&Resolved> {
        self.versions.first()
    }

    /// The data ids the visible versions refer to, but `except`'s.
    pub fn data_ids(&self, except: Option<VersionId>) -> Vec<Uuid> {
        self.versions
            .iter()
            .filter(|v| Some(v.record.version) != except)
            .flat_map(|v| v.object.data_ids())
            .collect()
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

pub(crate) use crate::clock::now_ns;

impl ErasureSet {
    /// Builds a set over `disks` (in slot order) with `parity` parity
    /// shards, reading through `cache`.
    pub fn new(
        disks: Vec<Arc<dyn Disk>>,
        parity: usize,
        block_size: u32,
        cache: Arc<ReadCache>,
        pack_threshold: u64,
        repair: RepairQueue,
    ) -> Result<ErasureSet, SetError> {
        let n = disks.len();
        if n == 0 || parity >= n {
            return Err(SetError::InvalidArgument(format!(
                "{n} disks cannot hold {parity} parity shards"
            )));
        }
        let data = n - parity;
        let metered: Vec<MeteredDisk> = disks.into_iter().map(MeteredDisk::metered).collect();
        let io = metered.iter().map(|d| d.layer().clone()).collect();
        let disks: Vec<Arc<dyn Disk>> = metered
            .into_iter()
            .map(|d| Arc::new(d) as Arc<dyn Disk>)
            .collect();
        let at_risk = Arc::new(AtRisk::default());
        let agreement = Arc::new(Agreement::new(disks.clone(), at_risk.clone()));
        Ok(ErasureSet {
            list_ahead: ListAhead::new(agreement.clone()),
            agreement,
            codec: Arc::new(Codec::new(data, parity)?),
            quorum: Quorum::for_layout(data, parity),
            disks,
            io,
            data,
            parity,
            block_size,
            // A packed object is one stripe.
            pack_threshold: pack_threshold.min(data as u64 * block_size as u64),
            locks: KeyLocks::new(),
            cache,
            reads: ReadQueue::new(UNIT_READS_IN_FLIGHT),
            repair,
            presence_checks: Arc::new(tokio::sync::Semaphore::new(
                crate::repair_queue::PRESENCE_CHECKS,
            )),
            tier_release: std::sync::OnceLock::new(),
            lock_place: std::sync::OnceLock::new(),
            last_mtime: AtomicU64::new(0),
            offline: std::sync::OnceLock::new(),
            at_risk,
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

    /// What reached each disk since the set was opened, by slot: data
    /// reads and writes and their bytes, and disk failures.
    pub fn disk_io(&self) -> Vec<IoStats> {
        self.io.iter().map(|c| c.stats()).collect()
    }

    /// Bytes per shard block of new objects.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Largest object written packed (0: never).
    pub fn pack_threshold(&self) -> u64 {
        self.pack_threshold
    }

    /// The locks on the set's names: every commit to a key holds its lock
    /// (in the set [`ErasureSet::lock_keys_in`] names, for its keys).
    pub fn locks(&self) -> &KeyLocks {
        &self.locks
    }

    /// Makes `place` name, for some keys, the set whose locks every writer
    /// of them takes instead of this one's (the layer above keeps each
    /// key's lock in one place whichever set holds the key): healing then
    /// locks those keys there too. False when already set.
    pub fn lock_keys_in(&self, place: LockPlace) -> bool {
        self.lock_place.set(place).is_ok()
    }

    /// The on-read repair queue.
    pub fn repair_queue(&self) -> &RepairQueue {
        &self.repair
    }

    /// The objects acknowledged with fewer than every disk.
    pub fn at_risk(&self) -> &AtRisk {
        &self.at_risk
    }

    /// Compares the disks' heads of namespace `ns` unless that was done
    /// since this process started; whether `ns` is known to agree but for
    /// its keys in doubt (see `agreement.rs`).
    pub async fn compare_heads_once(&self, ns: &str) -> bool {
        self.agreement.compare_once(ns).await
    }

    /// Compares each key of namespace `ns` in doubt on every disk, taking
    /// those that agree out of doubt; whether all of them agreed.
    pub async fn recheck_doubts(&self, ns: &str) -> bool {
        self.agreement.recheck(ns).await
    }

    /// Listing chunks read ahead so far.
    pub fn list_ahead_chunks(&self) -> u64 {
        self.list_ahead.chunks()
    }

    /// Listing pages read from one disk's heads (where the disks are known
    /// to agree).
    pub fn one_disk_pages(&self) -> u64 {
        self.agreement.one_disk_pages()
    }

    /// Listing pages served from read-ahead.
    pub fn list_ahead_hits(&self) -> u64 {
        self.list_ahead.hits()
    }

    /// Sends every tier reference no version refers to any more to `release`
    /// (whoever owns the tiers deletes its object); false when already set.
    pub fn release_tier_objects_to(
        &self,
        release: tokio::sync::mpsc::UnboundedSender<TierRef>,
    ) -> bool {
        self.tier_release.set(release).is_ok()
    }

    /// Marks the set offline: its lost quorums answer `why`.
    pub fn mark_offline(&self, why: String) {
        let _ = self.offline.set(why);
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

    /// Runs `f` against every disk concurrently; results in slot order.
    pub async fn each_disk<T, F, Fut>(&self, f: F) -> Vec<Result<T, DiskError>>
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
    pub(crate) async fn check_space(&self, incoming: u64) -> Result<(), SetError> {
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
            return Err(self.write_quorum_lost(online));
        }
        if roomy < self.quorum.write {
            return Err(SetError::DiskFull);
        }
        Ok(())
    }

    /// Why the set is offline, if it is.
    pub fn offline_reason(&self) -> Option<&str> {
        self.offline.get().map(String::as_str)
    }

    /// Reads every version of `key` from all disks and resolves which are
    /// visible: a write is visible when at least R disks hold it (the
    /// newest such write of a version wins); a version none of whose writes
    /// reaches R, but which has several, is visible as its newest write
    /// when every disk answered and R of them hold one of its writes (a
    /// rewrite a crash cut short); a version is ambiguous (an error) when
    /// no write of it reaches R but one might have been acknowledged, or
    /// might be read, once the disks that did not answer do.
    pub async fn resolve_key(&self, ns: &str, key: &str) -> Result<KeyState, SetError> {
        self.resolve_records(self.read_records(ns, key).await)
    }

    /// Every disk's records of `key`, as read (see [`Self::resolve_records`]).
    pub async fn read_records(&self, ns: &str, key: &str) -> DiskRecords {
        self.each_disk(|_, d| async move { d.get_records(ns.as_bytes(), key.as_bytes()).await })
            .await
    }

    /// Resolution over per-disk record lists (see [`Self::resolve_key`]).
    pub fn resolve_records<T: VersionBody>(
        &self,
        results: Vec<Result<Vec<Record>, DiskError>>,
    ) -> Result<KeyState<T>, SetError> {
        let n = self.width();
        self.require_read_quorum(&results)?;
        let responded: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        let answered = responded.iter().filter(|r| **r).count();
        let newest = results
            .iter()
            .flatten()
            .flat_map(|records| records.iter().map(|r| r.stamp))
            .max();
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
                    holding: responded.clone(),
                });
            }
            return Ok(KeyState::of(versions, responded, newest));
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
            // Disks holding some write of the version, and its latest write.
            let rewritten = writes.len() > 1;
            let mut holding = vec![false; n];
            let mut latest: Option<(Record, Vec<bool>)> = None;
            for (stamp, (rec, holders)) in writes {
                let count = holders.iter().filter(|h| **h).count();
                for (all, this) in holding.iter_mut().zip(&holders) {
                    *all |= *this;
                }
                if latest.as_ref().is_none_or(|(l, _)| l.stamp < stamp) {
                    latest = Some((rec.clone(), holders.clone()));
                }
                if count >= self.quorum.read {
                    if best.as_ref().is_none_or(|(b, _)| b.stamp < stamp) {
                        best = Some((rec, holders));
                    }
                } else if count + silent >= self.quorum.write {
                    maybe_acked = true;
                }
            }
            // A rewrite of a version (new tags, a transition, an overwrite
            // of the null version) that a crash cut short leaves its new
            // write on some disks and the old one on the rest, each maybe
            // below R. With every disk answering and
            // R of them holding the version, it is visible as its newest
            // write: the one a reader may have seen, and the one that keeps
            // what it refers to (a transition's tier object) from the
            // sweep; heal then copies it to the other disks. With disks
            // silent the answer could change when they return (a write
            // below R now, at R then), so the version is ambiguous.
            let held = holding.iter().filter(|h| **h).count();
            if best.is_none() && rewritten && held + silent >= self.quorum.read {
                if silent > 0 {
                    return Err(self.read_quorum_lost(answered));
                }
                best = latest;
            }
            match best {
                Some((record, holders)) => {
                    let object: T = record::decode(&record.body)?;
                    versions.push(Resolved {
                        record,
                        object,
                        holders,
                        holding,
                    });
                }
                None if maybe_acked => return Err(self.read_quorum_lost(answered)),
                None => {}
            }
        }
        Ok(KeyState::of(versions, responded, newest))
    }
}
