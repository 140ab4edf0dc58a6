//! Healing passes (scrub): every visible version of every key in the store
//! — system documents, every bucket, tier objects, then the cold pool and
//! the hot pools added later — is
//! read completely from every disk (each block's checksum verified), and
//! whatever is missing, short, corrupt or without its record is rebuilt
//! from the other disks. A pass runs on demand (`granary admin heal`) and
//! every scrub interval, paced to a byte rate so foreground requests keep
//! their latency. Its progress is readable while it runs.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use background_work::{
    sleep_or_never, CancellationToken, WorkError, Worker, WorkerState, WorkerStatus,
};
use disk_engine::ListStart;
use erasure_set::record::ObjectSummary;
use futures::StreamExt;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::model::SYSTEM_NS;
use crate::model::TIER_NS;
use crate::store::Store;

/// Keys per listing page of a pass.
const HEAL_PAGE: usize = 1000;
/// Keys healed at once: a key's heal waits on every disk in turn (verify,
/// rebuild, records), so several in flight keep the disks busy.
const HEAL_IN_FLIGHT: usize = 8;
/// Default pace of a pass: bytes verified per second.
pub const DEFAULT_HEAL_BYTES_PER_SEC: u64 = 256 << 20;

/// A pass's progress, as admins read it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealProgress {
    /// Whether a pass is running now.
    pub running: bool,
    /// Passes finished since the process started.
    pub passes: u64,
    /// When the current or last pass started (seconds since the epoch).
    pub started_at: Option<u64>,
    /// When the last pass finished.
    pub finished_at: Option<u64>,
    /// Keys the current (or last) pass has to look at.
    pub total: u64,
    /// Keys looked at so far.
    pub scanned: u64,
    /// Object bytes verified so far.
    pub bytes: u64,
    /// Shard files and pieces rebuilt by this pass.
    pub shards_rebuilt: u64,
    /// Records rewritten on disks that lacked them.
    pub records_rewritten: u64,
    /// Keys whose healing failed.
    pub failed: u64,
    /// The last failure.
    pub last_error: Option<String>,
    /// The namespace being healed.
    pub namespace: String,
    /// Objects acknowledged with fewer than k + m disks holding them and
    /// not healed since, over every pool (see `at_risk.rs`; filled in when
    /// read).
    pub objects_at_risk: u64,
    /// Keys whose healing failed (the first [`FAILED_KEYS_SHOWN`]).
    pub failed_keys: Vec<String>,
    /// Every key that failed in this pass (each counts once).
    #[serde(skip)]
    failed_seen: std::collections::HashSet<String>,
}

/// Runs passes for a store: on demand and every scrub interval.
pub struct Healer {
    progress: Mutex<HealProgress>,
    run_now: Notify,
    rearm: Notify,
    interval: Mutex<Option<Duration>>,
    bytes_per_sec: Mutex<u64>,
}

/// Failed keys a pass's progress names.
pub const FAILED_KEYS_SHOWN: usize = 100;

impl Default for Healer {
    fn default() -> Self {
        Healer {
            progress: Mutex::default(),
            run_now: Notify::new(),
            rearm: Notify::new(),
            interval: Mutex::new(None),
            bytes_per_sec: Mutex::new(DEFAULT_HEAL_BYTES_PER_SEC),
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Healer {
    /// The progress of the current or last pass.
    pub fn progress(&self) -> HealProgress {
        self.progress.lock().clone()
    }
}

impl Store {
    /// Starts a healing pass now (unless one is running); returns whether
    /// one was started.
    pub fn start_heal(&self) -> bool {
        if self.healer.progress.lock().running {
            return false;
        }
        self.healer.run_now.notify_one();
        true
    }

    /// The progress of the current or last healing pass.
    pub fn heal_progress(&self) -> HealProgress {
        let mut p = self.healer.progress();
        p.objects_at_risk = self.objects_at_risk()
            + self
                .tier_pools()
                .iter()
                .map(|(_, pool)| pool.objects_at_risk())
                .sum::<u64>();
        p
    }

    /// Objects of this pool acknowledged with fewer than k + m disks
    /// holding them, not healed since.
    pub fn objects_at_risk(&self) -> u64 {
        self.set.at_risk().count()
    }

    /// Runs a pass every `interval` (`None`: only on demand), verifying at
    /// most `bytes_per_sec`.
    pub fn set_scrub(&self, interval: Option<Duration>, bytes_per_sec: u64) {
        *self.healer.interval.lock() = interval;
        *self.healer.bytes_per_sec.lock() = bytes_per_sec.max(1 << 20);
        self.healer.rearm.notify_one();
    }

    /// Heals every key of this store and then of its cold pool.
    pub async fn heal_pass(&self) {
        {
            let mut p = self.healer.progress.lock();
            *p = HealProgress {
                running: true,
                passes: p.passes,
                started_at: Some(now_secs()),
                finished_at: p.finished_at,
                ..HealProgress::default()
            };
        }
        let pools: Vec<Arc<Store>> = self.tier_pools().into_iter().map(|(_, p)| p).collect();
        let mut stores: Vec<&Store> = vec![self];
        stores.extend(pools.iter().map(|p| &**p));
        let marks: Vec<u64> = stores.iter().map(|s| s.set.at_risk().untracked()).collect();
        // Objects at risk first: they are the ones one more failure loses.
        for store in &stores {
            let before = Rewritten::of(store);
            for (ns, key) in store.set.at_risk().keys() {
                if let Err(e) = store.set.heal_object(&ns, &key, &[]).await {
                    self.heal_failed(&ns, &key, e);
                }
            }
            self.count_rewritten(store, before);
        }
        let mut work = Vec::new();
        for store in &stores {
            for ns in store.heal_namespaces().await {
                let keys = store.count_keys(&ns).await;
                self.healer.progress.lock().total += keys;
                work.push((*store, ns));
            }
        }
        let rate = *self.healer.bytes_per_sec.lock();
        let started = Instant::now();
        for (store, ns) in work {
            self.healer.progress.lock().namespace = ns.clone();
            let mut start = ListStart::Beginning;
            loop {
                let page = match store
                    .set
                    .list_resolved::<ObjectSummary>(&ns, b"", start, HEAL_PAGE)
                    .await
                {
                    Ok(p) => p,
                    Err(e) => {
                        self.heal_failed(&ns, "(listing)", e);
                        break;
                    }
                };
                let before = Rewritten::of(store);
                let set = store.set.clone();
                let jobs: Vec<(String, u64)> = page
                    .keys
                    .iter()
                    .map(|(key, versions)| {
                        (key.clone(), versions.iter().map(|v| v.object.size).sum())
                    })
                    .collect();
                let mut healing = futures::stream::iter(jobs)
                    .map(|(key, bytes)| {
                        let (set, ns) = (set.clone(), ns.clone());
                        async move {
                            let result = set.heal_object(&ns, &key, &[]).await;
                            (key, result, bytes)
                        }
                    })
                    .buffer_unordered(HEAL_IN_FLIGHT);
                while let Some((key, result, bytes)) = healing.next().await {
                    {
                        let mut p = self.healer.progress.lock();
                        p.scanned += 1;
                        p.bytes += bytes;
                    }
                    if let Err(e) = result {
                        self.heal_failed(&ns, &key, e);
                    }
                    // Pace: never ahead of the byte rate.
                    let done = self.healer.progress.lock().bytes;
                    let due = Duration::from_secs_f64(done as f64 / rate as f64);
                    if let Some(wait) = due.checked_sub(started.elapsed()) {
                        tokio::time::sleep(wait).await;
                    }
                }
                // What this page rebuilt (with any on-read repair that ran
                // meanwhile).
                self.count_rewritten(store, before);
                match page.next {
                    Some(k) => start = ListStart::After(k),
                    None => break,
                }
            }
        }
        // Degraded writes past the lists count as healed only if every
        // disk was there to take their copies.
        for (store, mark) in stores.iter().zip(marks) {
            let all_online = store
                .disk_status()
                .await
                .iter()
                .all(|d| matches!(d.health, disk_engine::DiskHealth::Online { .. }));
            if all_online {
                store.set.at_risk().untracked_healed(mark);
            }
        }
        let mut p = self.healer.progress.lock();
        p.running = false;
        p.passes += 1;
        p.finished_at = Some(now_secs());
        p.namespace.clear();
        tracing::info!(
            keys = p.scanned,
            bytes = p.bytes,
            shards = p.shards_rebuilt,
            records = p.records_rewritten,
            failed = p.failed,
            "healing pass finished"
        );
    }

    /// Adds what `store`'s repair counters rewrote since `before` to the
    /// pass's progress.
    fn count_rewritten(&self, store: &Store, before: Rewritten) {
        let now = Rewritten::of(store);
        let mut p = self.healer.progress.lock();
        p.shards_rebuilt += now.shards - before.shards;
        p.records_rewritten += now.records - before.records;
    }

    fn heal_failed(&self, ns: &str, key: &str, e: impl std::fmt::Display) {
        let what = format!("{ns}/{key}");
        tracing::warn!(key = %what, error = %e, "healing failed");
        let mut p = self.healer.progress.lock();
        p.last_error = Some(format!("{what}: {e}"));
        if !p.failed_seen.insert(what.clone()) {
            // Failed before in this pass (first among those at risk).
            return;
        }
        p.failed += 1;
        if p.failed_keys.len() < FAILED_KEYS_SHOWN {
            p.failed_keys.push(what);
        }
    }

    /// The namespaces a pass looks at (only system documents and tier
    /// objects when the buckets cannot be listed, which counts as a
    /// failure).
    async fn heal_namespaces(&self) -> Vec<String> {
        self.namespaces().await.unwrap_or_else(|e| {
            self.heal_failed(SYSTEM_NS, "(listing buckets)", e);
            vec![SYSTEM_NS.to_string(), TIER_NS.to_string()]
        })
    }

    /// Every namespace of this pool's set: system documents, buckets, tier
    /// objects.
    async fn namespaces(&self) -> Result<Vec<String>, crate::Error> {
        let mut out = vec![SYSTEM_NS.to_string()];
        out.extend(self.list_buckets().await?.into_iter().map(|b| b.name));
        out.push(TIER_NS.to_string());
        Ok(out)
    }

    async fn count_keys(&self, ns: &str) -> u64 {
        let mut n = 0;
        let mut start = ListStart::Beginning;
        while let Ok(page) = self
            .set
            .list_resolved::<ObjectSummary>(ns, b"", start, HEAL_PAGE)
            .await
        {
            n += page.keys.len() as u64;
            match page.next {
                Some(k) => start = ListStart::After(k),
                None => break,
            }
        }
        n
    }
}

/// A store's repair counters of rewritten shards and records, at a moment.
#[derive(Clone, Copy)]
struct Rewritten {
    shards: u64,
    records: u64,
}

impl Rewritten {
    fn of(store: &Store) -> Rewritten {
        let stats = store.repair_stats();
        Rewritten {
            shards: stats.shards_rewritten.load(Relaxed),
            records: stats.records_rewritten.load(Relaxed),
        }
    }
}

/// When the finder of objects at risk first compares the disks (leaving
/// the first moments after start to requests), and how often it resolves
/// the keys found differing.
const FIND_AT_RISK_EVERY: Duration = Duration::from_secs(5);
/// The longest wait before comparing again namespaces that could not be
/// compared (a disk did not answer); the wait doubles up to it.
const FIND_AT_RISK_BACKOFF: Duration = Duration::from_secs(300);

impl Store {
    /// Asks for a comparison of the disks' heads of every namespace of this
    /// pool's set (see `at_risk.rs`); true once each was compared since
    /// start.
    async fn compare_namespaces(&self) -> bool {
        let Ok(namespaces) = self.namespaces().await else {
            return false;
        };
        let mut all = true;
        for ns in namespaces {
            // One namespace at a time: this is background reading.
            all &= self.set.compare_heads_once(&ns).await;
        }
        all
    }
}

/// Finds the objects written degraded before this process started:
/// compares every namespace (until each has been compared, waiting longer
/// after each failure), and resolves the keys found differing, those of
/// later comparisons too.
pub(crate) struct AtRiskFinder {
    store: Weak<Store>,
    compared: bool,
    backoff: Duration,
    next_compare: tokio::time::Instant,
}

impl AtRiskFinder {
    pub(crate) fn new(store: Weak<Store>) -> AtRiskFinder {
        AtRiskFinder {
            store,
            compared: false,
            backoff: FIND_AT_RISK_EVERY,
            next_compare: tokio::time::Instant::now() + FIND_AT_RISK_EVERY,
        }
    }
}

#[async_trait::async_trait]
impl Worker for AtRiskFinder {
    fn name(&self) -> String {
        "at-risk finder".into()
    }

    fn status(&self) -> WorkerStatus {
        WorkerStatus {
            queue: self.store.upgrade().map(|s| s.objects_at_risk()),
            detail: Some(
                if self.compared {
                    "every namespace compared"
                } else {
                    "namespaces not all compared yet"
                }
                .into(),
            ),
        }
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let Some(s) = self.store.upgrade() else {
            return Ok(WorkerState::Done);
        };
        if s.offline_reason().is_some() {
            return Ok(WorkerState::Done);
        }
        if !self.compared && tokio::time::Instant::now() >= self.next_compare {
            self.compared = s.compare_namespaces().await;
            self.backoff = (self.backoff * 2).min(FIND_AT_RISK_BACKOFF);
            self.next_compare = tokio::time::Instant::now() + self.backoff;
        }
        s.set.confirm_at_risk().await;
        Ok(WorkerState::Idle)
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        tokio::time::sleep(FIND_AT_RISK_EVERY).await;
        WorkerState::Busy
    }
}

/// The worker running a store's passes: when asked, and every scrub
/// interval.
pub(crate) struct HealWorker {
    store: Weak<Store>,
    healer: Arc<Healer>,
    last: Instant,
}

impl HealWorker {
    pub(crate) fn new(store: Weak<Store>, healer: Arc<Healer>) -> HealWorker {
        HealWorker {
            store,
            healer,
            last: Instant::now(),
        }
    }
}

#[async_trait::async_trait]
impl Worker for HealWorker {
    fn name(&self) -> String {
        "heal".into()
    }

    fn status(&self) -> WorkerStatus {
        let p = self.healer.progress.lock();
        WorkerStatus {
            queue: None,
            detail: Some(format!(
                "{} passes finished; {} keys failed in the last",
                p.passes, p.failed
            )),
        }
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let Some(store) = self.store.upgrade() else {
            return Ok(WorkerState::Done);
        };
        store.heal_pass().await;
        self.last = Instant::now();
        let p = store.heal_progress();
        match (p.failed, p.last_error) {
            (0, _) => Ok(WorkerState::Idle),
            (n, last) => Err(format!(
                "the pass could not heal {n} keys; the last: {}",
                last.unwrap_or_default()
            )
            .into()),
        }
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        loop {
            let interval = *self.healer.interval.lock();
            let wait = interval.map(|i| i.saturating_sub(self.last.elapsed()));
            let asked = tokio::select! {
                _ = self.healer.run_now.notified() => true,
                // A new interval or pace only re-arms the timer.
                _ = self.healer.rearm.notified() => continue,
                _ = sleep_or_never(wait) => false,
            };
            let Some(store) = self.store.upgrade() else {
                return WorkerState::Done;
            };
            // Scheduled passes run in one gateway of a cluster; asked-for
            // ones where they were asked.
            if !asked && !store.owns_background() {
                self.last = Instant::now();
                continue;
            }
            return WorkerState::Busy;
        }
    }
}
