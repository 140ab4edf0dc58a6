//! Garbage collection of object data nothing refers to: shard files and
//! pieces left by crashes (written, never committed; or unreferenced, not
//! yet freed), by failed or cancelled writes, and by parts of uploads that
//! were completed or aborted. It never touches an upload that exists:
//! part records are references like version records (S3 keeps an upload
//! until it is completed, aborted, or an AbortIncompleteMultipartUpload
//! rule ends it).
//!
//! Its safety rests on what the disks record, never on how old a file is:
//! every data id is staged (recorded durably on the set's disks with the
//! writing process as owner) before its first byte is written, and the
//! record or part that comes to refer to it removes the entry in its own
//! atomic write. A pass, over every pool:
//!
//! 1. lists every shard file and piece of every disk;
//! 2. reads every staged entry: those of a live owner (this process, or a
//!    gateway still holding its writer lease) protect their ids;
//! 3. reads every part record of every upload, then
//! 4. every version record of every namespace, on every disk: their data
//!    ids are referenced.
//!
//! Data only ever moves forward in that order (staged → part → version,
//! each step atomic on each disk), so an id committed while the pass runs
//! is seen at a later step than the one it left. A file from step 1 whose
//! id none of steps 2–4 saw is unreferenced, and is deleted (paced). Each
//! step runs in every set at once, and the next starts only when it ended
//! in all of them. A set with a disk that does not answer is skipped whole
//! (its records there are unknown) and the others are collected; the
//! cold pool is skipped too when any set's part records were unreadable,
//! and a later hot pool when a first-pool set's were, as an upload's part
//! records live in the upload's set and its parts may be in those pools. Entries of dead
//! owners are judged by the references too and then removed.
//!
//! Crash windows: a kill during a pass leaves some unreferenced files
//! deleted and the rest for the next pass; nothing referenced is deleted
//! at any point.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use background_work::{
    sleep_or_never, CancellationToken, WorkError, Worker, WorkerState, WorkerStatus,
};
use disk_engine::{failpoint, ScannedRecord, ScannedUpload, ShardFile, StagedId};
use erasure_set::record::{self, ObjectRecord};
use erasure_set::{ask, instance, writer_lease_name, ErasureSet};
use futures::future::join_all;
use parking_lot::Mutex;
use uuid::Uuid;

use crate::collector::{Collector, GcProgress, SetGcProgress};
use crate::model::PartRecord;
use crate::store::Store;

/// Items asked of a disk per listing page.
const GC_PAGE: usize = 1000;
/// Most data files deleted per second by a pass, so collection never
/// competes with foreground writes for the disks.
const GC_DELETES_PER_SEC: u64 = 2000;
/// How long another gateway's writer lease must have been seen missing
/// before its staged entries stop protecting their ids (its lease lasts
/// 30 s and is renewed every 10 s while it runs).
const DEAD_OWNER_AFTER: Duration = Duration::from_secs(60);
/// Default time between scheduled passes.
pub const DEFAULT_GC_INTERVAL: Duration = Duration::from_secs(3600);

/// One set's files and staged entries as a pass found them.
struct SetScan {
    set: Arc<ErasureSet>,
    shards: Vec<Vec<ShardFile>>,
    pieces: Vec<Vec<(Uuid, u64)>>,
    /// Staged ids of dead owners, per disk slot.
    dead: Vec<Vec<Uuid>>,
    /// Every staged id, per disk slot.
    staged: Vec<Vec<Uuid>>,
    /// Its place in the pass's progress by set.
    progress: usize,
}

fn now_secs() -> u64 {
    erasure_set::clock::now_ns() / 1_000_000_000
}

impl Store {
    /// The collector's progress.
    pub fn gc_progress(&self) -> GcProgress {
        let mut p = self.collector.progress.lock().clone();
        p.running = self.collector.running.load(Ordering::Relaxed);
        p
    }

    /// Runs a pass every `interval` (`None`: only on demand).
    pub fn set_gc_interval(&self, interval: Option<Duration>) {
        *self.collector.interval.lock() = interval;
        self.collector.run_now.notify_one();
    }

    /// One pass of garbage collection over every pool now (one at a time:
    /// `false` when a pass was already running).
    pub async fn collect_garbage(&self) -> bool {
        if self.collector.running.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.gc_pass().await;
        {
            let mut p = self.collector.progress.lock();
            p.passes += 1;
            p.finished_at = Some(now_secs());
        }
        self.collector.running.store(false, Ordering::SeqCst);
        true
    }

    /// One pass over every set; a set that cannot be read is skipped (and
    /// said so in the progress), never the pass.
    async fn gc_pass(&self) {
        let named = self.pools.every();
        // 1. Every file and piece, every set at once.
        let listed = join_all(named.iter().map(|(_, s)| list_files(s))).await;
        failpoint::hit("gc.listed", "").await;
        // 2. Staged entries, every set at once; then whether their owners
        // are alive.
        let staged = join_all(named.iter().map(|(_, s)| list_staged(s))).await;
        let seen: HashSet<Uuid> = staged
            .iter()
            .flatten()
            .flatten()
            .flatten()
            .map(|e| e.owner)
            .collect();
        let mut owners: HashMap<Uuid, bool> = HashMap::new();
        for owner in seen {
            owners.insert(owner, self.owner_alive(owner).await);
        }
        // 3 and 4. Part records, then version records, every set at once
        // (each step only once the one before ended in every set).
        let parts = join_all(named.iter().map(|(_, s)| part_references(s))).await;
        let records = join_all(named.iter().map(|(_, s)| record_references(s))).await;
        let mut referenced: HashSet<Uuid> = HashSet::new();
        for ids in parts.iter().chain(&records).flatten() {
            referenced.extend(ids);
        }
        // The part records of an upload whose parts are in another pool
        // live in the upload's own set: the cold pool is collected only
        // when every key set's part records were read (its own sets hold
        // none), a later hot pool only when every first-pool set's were
        // (uploads made before later pools took keys, with their parts
        // there, are in the first pool; a later pool's own uploads keep
        // their parts at home).
        let unread_parts = |first_only: bool| {
            let mut each = named.iter().zip(&parts);
            each.find_map(|((n, _), r)| {
                let counts = if first_only {
                    n.tier.is_none()
                } else {
                    n.holds_keys()
                };
                r.as_ref().err().filter(|_| counts)
            })
        };
        let (key_parts, first_parts) = (unread_parts(false), unread_parts(true));
        let mut scans = Vec::new();
        let mut sets = Vec::new();
        let mut protected: HashSet<Uuid> = HashSet::new();
        let found = listed
            .into_iter()
            .zip(staged)
            .zip(parts.iter().zip(&records));
        for ((name, set), ((files, staged), (p, r))) in named.iter().zip(found) {
            let mut progress = SetGcProgress {
                pool: name.tier.clone().unwrap_or_else(|| "hot".into()),
                set: name.index + 1,
                ..SetGcProgress::default()
            };
            let later = match name.tier.as_deref() {
                None => None,
                Some(crate::model::COLD_TIER) => key_parts,
                Some(_) => first_parts,
            };
            let unread = p.as_ref().err().or(r.as_ref().err()).or(later);
            match (files, staged, unread) {
                (Ok((shards, pieces)), Ok(entries), None) => {
                    let (dead, all) = sort_staged(entries, &owners, &mut protected);
                    scans.push(SetScan {
                        set: set.clone(),
                        shards,
                        pieces,
                        dead,
                        staged: all,
                        progress: sets.len(),
                    });
                }
                (Err(why), _, _) | (_, Err(why), _) => progress.skipped = Some(why),
                (_, _, Some(why)) => progress.skipped = Some(why.clone()),
            }
            sets.push(progress);
        }
        let pace = Pace::new();
        let done = join_all(
            scans
                .iter()
                .map(|scan| self.collect_in(scan, &referenced, &protected, &pace)),
        )
        .await;
        for (scan, (checked, deleted)) in scans.iter().zip(done) {
            sets[scan.progress].checked = checked;
            sets[scan.progress].deleted = deleted;
        }
        let mut p = self.collector.progress.lock();
        p.checked = sets.iter().map(|s| s.checked).sum();
        p.skipped = sets.iter().filter_map(|s| s.skipped.clone()).collect();
        p.sets = sets;
    }

    /// Whether the process that staged data as `owner` may still commit
    /// it: this process; another one while it holds its writer lease (only
    /// gateways sharing the disks write them besides this one).
    async fn owner_alive(&self, owner: Uuid) -> bool {
        if owner == instance() {
            return true;
        }
        let system = self.pools.system();
        if !system.locks().is_shared() {
            return false;
        }
        let disks = system.disks();
        let probe = Uuid::new_v4();
        let (granted, answered) = ask(
            disks,
            &[writer_lease_name(owner)],
            probe,
            Duration::from_millis(1),
        )
        .await;
        let quorum = disks.len() / 2 + 1;
        let held = answered >= quorum && granted < quorum;
        let mut absent = self.collector.absent.lock();
        if held || answered < quorum {
            absent.remove(&owner);
            return true;
        }
        let since = *absent.entry(owner).or_insert_with(Instant::now);
        since.elapsed() < DEAD_OWNER_AFTER
    }

    /// Deletes what `scan` found that nothing refers to, and removes staged
    /// entries that protect nothing any more. Returns how many items it
    /// looked at.
    async fn collect_in(
        &self,
        scan: &SetScan,
        referenced: &HashSet<Uuid>,
        protected: &HashSet<Uuid>,
        pace: &Pace,
    ) -> (u64, u64) {
        let set = &scan.set;
        let (mut checked, mut deleted) = (0, 0);
        for (slot, files) in scan.shards.iter().enumerate() {
            for f in files {
                checked += 1;
                let id = f.id.0;
                if referenced.contains(&id) || protected.contains(&id) {
                    continue;
                }
                pace.wait().await;
                set.free_data(slot, id, false).await;
                deleted += 1;
                failpoint::hit("gc.deleted", set.disks()[slot].label()).await;
                let mut p = self.collector.progress.lock();
                p.shards_deleted += 1;
                p.bytes_reclaimed += f.bytes;
            }
        }
        for (slot, pieces) in scan.pieces.iter().enumerate() {
            for (id, len) in pieces {
                checked += 1;
                if referenced.contains(id) || protected.contains(id) {
                    continue;
                }
                pace.wait().await;
                set.free_data(slot, *id, true).await;
                deleted += 1;
                let mut p = self.collector.progress.lock();
                p.pieces_deleted += 1;
                p.bytes_reclaimed += len;
            }
        }
        // Staged entries whose data is committed (a disk that missed the
        // commit kept its entry) or whose owner is dead: the references
        // above decided their data; the entries go.
        for (slot, ids) in scan.staged.iter().enumerate() {
            let stale: Vec<Uuid> = ids
                .iter()
                .filter(|id| referenced.contains(id) || scan.dead[slot].contains(id))
                .copied()
                .collect();
            if stale.is_empty() {
                continue;
            }
            if set.disks()[slot].unstage(stale.clone()).await.is_ok() {
                self.collector.progress.lock().staged_cleared += stale.len() as u64;
            }
        }
        (checked, deleted)
    }
}

/// Every shard file and piece of every disk of `set`; fails (the set is
/// skipped) unless every disk answers.
async fn list_files(
    set: &ErasureSet,
) -> Result<(Vec<Vec<ShardFile>>, Vec<Vec<(Uuid, u64)>>), String> {
    let mut shards = Vec::new();
    let mut pieces = Vec::new();
    for d in set.disks() {
        let why = |e: disk_engine::DiskError| format!("{}: not listed: {e}", d.label());
        let mut files = Vec::new();
        loop {
            let page = d
                .list_shards(files.last().map(|f: &ShardFile| f.id), GC_PAGE)
                .await
                .map_err(why)?;
            let last = page.len() < GC_PAGE;
            files.extend(page);
            if last {
                break;
            }
        }
        let mut ps: Vec<(Uuid, u64)> = Vec::new();
        loop {
            let page = d
                .list_pieces(ps.last().map(|p| p.0), GC_PAGE)
                .await
                .map_err(why)?;
            let last = page.len() < GC_PAGE;
            ps.extend(page);
            if last {
                break;
            }
        }
        shards.push(files);
        pieces.push(ps);
    }
    Ok((shards, pieces))
}

/// The staged entries of every disk of `set`, by slot; fails (the set is
/// skipped) unless every disk answers.
async fn list_staged(set: &ErasureSet) -> Result<Vec<Vec<StagedId>>, String> {
    let results = set
        .each_disk(|_, d| async move { d.list_staged().await })
        .await;
    let labelled = results.into_iter().zip(set.disks());
    labelled
        .map(|(r, d)| r.map_err(|e| format!("{}: staged entries unreadable: {e}", d.label())))
        .collect()
}

/// Sorts one set's staged entries by whether their owner is alive: the
/// ids of live owners go into `protected`; returns, per slot, those of
/// dead owners and all of them.
fn sort_staged(
    entries: Vec<Vec<StagedId>>,
    owners: &HashMap<Uuid, bool>,
    protected: &mut HashSet<Uuid>,
) -> (Vec<Vec<Uuid>>, Vec<Vec<Uuid>>) {
    let mut dead = Vec::new();
    let mut all = Vec::new();
    for slot in entries {
        let (live, gone): (Vec<&StagedId>, Vec<&StagedId>) = slot
            .iter()
            .partition(|s| owners.get(&s.owner).copied().unwrap_or(true));
        protected.extend(live.iter().map(|s| s.id));
        dead.push(gone.iter().map(|s| s.id).collect());
        all.push(slot.iter().map(|s| s.id).collect());
    }
    (dead, all)
}

/// The data ids of every part record on every disk of `set`.
async fn part_references(set: &ErasureSet) -> Result<HashSet<Uuid>, String> {
    let mut referenced = HashSet::new();
    for d in set.disks() {
        let pages = |after| d.scan_uploads(after, GC_PAGE);
        every_page(d.label(), "uploads", pages, |u: ScannedUpload| {
            for p in u.parts {
                if let Ok(p) = record::decode::<PartRecord>(&p.body) {
                    referenced.extend(p.part.data_id);
                }
            }
        })
        .await?;
    }
    Ok(referenced)
}

/// The data ids of every version record on every disk of `set`.
async fn record_references(set: &ErasureSet) -> Result<HashSet<Uuid>, String> {
    let mut referenced = HashSet::new();
    for d in set.disks() {
        let pages = |after| d.scan_records(after, GC_PAGE);
        every_page(d.label(), "records", pages, |r: ScannedRecord| {
            if let Ok(obj) = record::decode::<ObjectRecord>(&r.record.body) {
                referenced.extend(obj.data_ids());
            }
        })
        .await?;
    }
    Ok(referenced)
}

/// Feeds every item of a scan, page by page, to `each`.
async fn every_page<T, F, Fut>(
    disk: &str,
    what: &str,
    mut page: F,
    mut each: impl FnMut(T),
) -> Result<(), String>
where
    F: FnMut(Option<Vec<u8>>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<Vec<u8>>), disk_engine::DiskError>>,
{
    let mut after = None;
    loop {
        let (items, next) = page(after)
            .await
            .map_err(|e| format!("{disk}: {what} unreadable: {e}"))?;
        items.into_iter().for_each(&mut each);
        match next {
            Some(n) => after = Some(n),
            None => return Ok(()),
        }
    }
}

/// Keeps deletions under [`GC_DELETES_PER_SEC`].
struct Pace {
    started: Instant,
    done: Mutex<u64>,
}

impl Pace {
    fn new() -> Pace {
        Pace {
            started: Instant::now(),
            done: Mutex::new(0),
        }
    }

    async fn wait(&self) {
        let n = {
            let mut d = self.done.lock();
            *d += 1;
            *d
        };
        let due = Duration::from_secs_f64(n as f64 / GC_DELETES_PER_SEC as f64);
        if let Some(w) = due.checked_sub(self.started.elapsed()) {
            tokio::time::sleep(w).await;
        }
    }
}

/// Runs scheduled passes, in the process that owns background work (an
/// asked-for pass runs where it was asked).
pub(crate) struct GcWorker {
    store: Weak<Store>,
    collector: Arc<Collector>,
    last: Instant,
}

impl GcWorker {
    pub(crate) fn new(store: Weak<Store>, collector: Arc<Collector>) -> GcWorker {
        GcWorker {
            store,
            collector,
            last: Instant::now(),
        }
    }
}

#[async_trait::async_trait]
impl Worker for GcWorker {
    fn name(&self) -> String {
        "gc".into()
    }

    fn status(&self) -> WorkerStatus {
        let p = self.collector.progress.lock();
        WorkerStatus {
            queue: None,
            detail: Some(format!(
                "{} passes finished; {} bytes reclaimed",
                p.passes, p.bytes_reclaimed
            )),
        }
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let Some(store) = self.store.upgrade() else {
            return Ok(WorkerState::Done);
        };
        if !store.collect_garbage().await {
            // An asked-for pass was running: it counts for this one.
            return Ok(WorkerState::Idle);
        }
        let p = store.gc_progress();
        if !p.skipped.is_empty() {
            return Err(format!("sets skipped: {}", p.skipped.join("; ")).into());
        }
        Ok(WorkerState::Idle)
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        loop {
            let interval = *self.collector.interval.lock();
            let wait = interval.map(|i| i.saturating_sub(self.last.elapsed()));
            tokio::select! {
                // A new interval only re-arms the timer.
                _ = self.collector.run_now.notified() => continue,
                _ = sleep_or_never(wait) => {}
            }
            self.last = Instant::now();
            let Some(store) = self.store.upgrade() else {
                return WorkerState::Done;
            };
            if store.owns_background() {
                return WorkerState::Busy;
            }
        }
    }
}
