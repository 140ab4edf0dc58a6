//! Healing passes (scrub): every visible version of every key in the store
//! — in every set of the first pool its system documents, buckets' keys
//! and tier objects, then the tier objects of the hot pools added later
//! and of the cold pool — is read completely from every disk (each block's
//! checksum verified), and whatever is missing, short, corrupt or without
//! its record is rebuilt from the other disks. The sets are healed at the
//! same time, together never faster than the pass's byte rate. A pass runs on
//! demand (`granary admin heal`) and every scrub interval, paced to a byte
//! rate so foreground requests keep their latency. Its progress, over all
//! and per set, is readable while it runs.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::healer::{HealProgress, Healer, SetHealProgress, FAILED_KEYS_SHOWN};
use crate::model::{SYSTEM_NS, TIER_NS};
use crate::store::Store;
use background_work::{
    sleep_or_never, CancellationToken, WorkError, Worker, WorkerState, WorkerStatus,
};
use disk_engine::ListStart;
use erasure_set::record::ObjectSummary;
use erasure_set::ErasureSet;
use futures::StreamExt;

/// Keys per listing page of a pass.
const HEAL_PAGE: usize = 1000;
/// Keys healed at once: a key's heal waits on every disk in turn (verify,
/// rebuild, records), so several in flight keep the disks busy.
const HEAL_IN_FLIGHT: usize = 8;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
        p.objects_at_risk = self
            .pools
            .every()
            .iter()
            .map(|(_, set)| set.at_risk().count())
            .sum();
        p
    }

    /// Runs a pass every `interval` (`None`: only on demand), verifying at
    /// most `bytes_per_sec`.
    pub fn set_scrub(&self, interval: Option<Duration>, bytes_per_sec: u64) {
        *self.healer.interval.lock() = interval;
        *self.healer.bytes_per_sec.lock() = bytes_per_sec.max(1 << 20);
        self.healer.rearm.notify_one();
    }

    /// Heals every key of every set of every pool: first the objects at
    /// risk, then every set at the same time.
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
        let named = self.pools.every();
        let sets: Vec<Arc<ErasureSet>> = named.iter().map(|(_, s)| s.clone()).collect();
        let marks: Vec<u64> = sets.iter().map(|s| s.at_risk().untracked()).collect();
        // Objects at risk first: they are the ones one more failure loses.
        for set in &sets {
            let before = Rewritten::of(set);
            for (ns, key) in set.at_risk().keys() {
                if let Err(e) = set.heal_object(&ns, &key, &[]).await {
                    self.heal_failed(None, &ns, &key, e);
                }
            }
            self.count_rewritten(set, before);
        }
        let mut work = Vec::new();
        for (i, (name, set)) in named.iter().enumerate() {
            // The hot pools' sets hold the buckets' keys.
            let namespaces = match name.holds_keys() {
                true => self.heal_namespaces().await,
                false => pool_namespaces(),
            };
            let mut keys = 0;
            for ns in &namespaces {
                keys += count_keys(set, ns).await;
            }
            let mut p = self.healer.progress.lock();
            p.total += keys;
            p.sets.push(SetHealProgress {
                pool: name.tier.clone().unwrap_or_else(|| "hot".into()),
                set: name.index + 1,
                total: keys,
                ..SetHealProgress::default()
            });
            drop(p);
            work.push((i, set.clone(), namespaces));
        }
        let rate = *self.healer.bytes_per_sec.lock();
        let started = Instant::now();
        // Every set at once, paced together.
        futures::future::join_all(
            work.into_iter()
                .map(|(i, set, namespaces)| self.heal_set(i, set, namespaces, rate, started)),
        )
        .await;
        // Degraded writes past the lists count as healed only if every
        // disk was there to take their copies.
        for (set, mark) in sets.iter().zip(marks) {
            let all_online = set
                .health()
                .await
                .iter()
                .all(|h| matches!(h, disk_engine::DiskHealth::Online { .. }));
            if all_online {
                set.at_risk().untracked_healed(mark);
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

    /// Heals every key of `namespaces` in `set` (number `i` of the pass's
    /// sets), never ahead of `rate` bytes a second since `started` over
    /// the whole pass.
    async fn heal_set(
        &self,
        i: usize,
        set: Arc<ErasureSet>,
        namespaces: Vec<String>,
        rate: u64,
        started: Instant,
    ) {
        for ns in namespaces {
            {
                let mut p = self.healer.progress.lock();
                p.namespace = ns.clone();
                p.sets[i].namespace = ns.clone();
            }
            let mut start = ListStart::Beginning;
            loop {
                let page = match set
                    .list_resolved::<ObjectSummary>(&ns, b"", start, HEAL_PAGE)
                    .await
                {
                    Ok(p) => p,
                    Err(e) => {
                        self.heal_failed(Some(i), &ns, "(listing)", e);
                        break;
                    }
                };
                let before = Rewritten::of(&set);
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
                        p.sets[i].scanned += 1;
                    }
                    if let Err(e) = result {
                        self.heal_failed(Some(i), &ns, &key, e);
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
                self.count_rewritten(&set, before);
                match page.next {
                    Some(k) => start = ListStart::After(k),
                    None => break,
                }
            }
        }
        self.healer.progress.lock().sets[i].done = true;
    }

    /// Adds what `set`'s repair counters rewrote since `before` to the
    /// pass's progress.
    fn count_rewritten(&self, set: &ErasureSet, before: Rewritten) {
        let now = Rewritten::of(set);
        let mut p = self.healer.progress.lock();
        p.shards_rebuilt += now.shards - before.shards;
        p.records_rewritten += now.records - before.records;
    }

    /// Counts a key whose healing failed, in set `set` of the pass's sets
    /// when known.
    fn heal_failed(&self, set: Option<usize>, ns: &str, key: &str, e: impl std::fmt::Display) {
        let what = format!("{ns}/{key}");
        tracing::warn!(key = %what, error = %e, "healing failed");
        let mut p = self.healer.progress.lock();
        p.last_error = Some(format!("{what}: {e}"));
        if !p.failed_seen.insert(what.clone()) {
            // Failed before in this pass (first among those at risk).
            return;
        }
        p.failed += 1;
        if let Some(s) = set.and_then(|i| p.sets.get_mut(i)) {
            s.failed += 1;
        }
        if p.failed_keys.len() < FAILED_KEYS_SHOWN {
            p.failed_keys.push(what);
        }
    }

    /// The namespaces a pass looks at (only system documents and tier
    /// objects when the buckets cannot be listed, which counts as a
    /// failure).
    async fn heal_namespaces(&self) -> Vec<String> {
        self.namespaces().await.unwrap_or_else(|e| {
            self.heal_failed(None, SYSTEM_NS, "(listing buckets)", e);
            vec![SYSTEM_NS.to_string(), TIER_NS.to_string()]
        })
    }

    /// Every namespace of a hot pool's set: system documents, buckets,
    /// tier objects.
    async fn namespaces(&self) -> Result<Vec<String>, crate::Error> {
        let mut out = vec![SYSTEM_NS.to_string()];
        out.extend(self.list_buckets().await?.into_iter().map(|b| b.name));
        out.push(TIER_NS.to_string());
        Ok(out)
    }
}

/// The namespaces of the cold pool: no buckets live there, only tier
/// objects (and system documents, should any be written).
fn pool_namespaces() -> Vec<String> {
    vec![SYSTEM_NS.to_string(), TIER_NS.to_string()]
}

/// Keys of namespace `ns` in `set`.
async fn count_keys(set: &ErasureSet, ns: &str) -> u64 {
    let mut n = 0;
    let mut start = ListStart::Beginning;
    while let Ok(page) = set
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

/// A set's repair counters of rewritten shards and records, at a moment.
#[derive(Clone, Copy)]
struct Rewritten {
    shards: u64,
    records: u64,
}

impl Rewritten {
    fn of(set: &ErasureSet) -> Rewritten {
        let stats = &set.repair_queue().stats;
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
    /// Asks for a comparison of the disks' heads of every namespace of
    /// `set`, the first pool's when `first` (see `at_risk.rs`); true once
    /// each was compared since start.
    async fn compare_namespaces(&self, set: &ErasureSet, keys: bool) -> bool {
        let namespaces = match keys {
            true => match self.namespaces().await {
                Ok(n) => n,
                Err(_) => return false,
            },
            false => pool_namespaces(),
        };
        let mut all = true;
        for ns in namespaces {
            // One namespace at a time: this is background reading.
            all &= set.compare_heads_once(&ns).await;
        }
        all
    }
}

/// Finds the objects written degraded before this process started:
/// compares every namespace (until each has been compared, waiting longer
/// after each failure), and resolves the keys found differing, those of
/// later comparisons too. One runs for each pool's set.
pub(crate) struct AtRiskFinder {
    store: Weak<Store>,
    set: Weak<ErasureSet>,
    /// Whether keys live in `set` (a hot pool's, whose namespaces are the
    /// buckets).
    keys: bool,
    compared: bool,
    backoff: Duration,
    next_compare: tokio::time::Instant,
}

impl AtRiskFinder {
    pub(crate) fn new(store: Weak<Store>, set: &Arc<ErasureSet>, keys: bool) -> AtRiskFinder {
        AtRiskFinder {
            store,
            set: Arc::downgrade(set),
            keys,
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
            queue: self.set.upgrade().map(|s| s.at_risk().count()),
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
        let (Some(store), Some(set)) = (self.store.upgrade(), self.set.upgrade()) else {
            return Ok(WorkerState::Done);
        };
        if set.offline_reason().is_some() {
            return Ok(WorkerState::Done);
        }
        if !self.compared && tokio::time::Instant::now() >= self.next_compare {
            self.compared = store.compare_namespaces(&set, self.keys).await;
            self.backoff = (self.backoff * 2).min(FIND_AT_RISK_BACKOFF);
            self.next_compare = tokio::time::Instant::now() + self.backoff;
        }
        set.confirm_at_risk().await;
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
