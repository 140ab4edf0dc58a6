//! The lifecycle scanner: a background task that walks every bucket with a
//! lifecycle configuration, version by version (every set of the store's
//! keys at the same time, one pace for all), and applies the rules that
//! are due (expirations, transitions, stale multipart uploads), paced so
//! foreground requests keep their latency. It keeps per-bucket, per-rule
//! counters for `granary admin lifecycle status`, and answers dry runs
//! (`plan`) from the same evaluation without changing anything.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use background_work::{CancellationToken, WorkError, Worker, WorkerState, WorkerStatus};
use futures::StreamExt;
use parking_lot::Mutex;
use placement::{BucketRecord, Error, ListStart, Store, Transitioned, UploadListStart, VersionRef};
use serde::Serialize;
use tokio::sync::Notify;

use crate::checkpoints::{CheckpointRules, CHECKPOINTS_KEY};
use crate::config::{parse, Classes, LifecycleConfig};
use crate::eval::{candidates, pick, Action, Clock, Version};

/// Key of the lifecycle configuration among a bucket's documents.
pub const CONFIG_KEY: &str = "lifecycle";
/// Key of its `x-amz-transition-default-minimum-object-size`.
pub const MIN_SIZE_KEY: &str = "lifecycle-min-size";
/// Keys per listing page of a pass.
pub(crate) const PAGE_KEYS: usize = 1000;
/// Actions (transitions above all) a pass runs at once: one object at a
/// time left the disks and the second core idle (benches/RESULTS.md).
const ACTIONS_IN_FLIGHT: usize = 4;
/// Example keys a plan shows per rule and action.
const PLAN_EXAMPLES: usize = 5;
/// Tier objects younger than this are never swept (a write may still be
/// about to refer to them; transitions in progress are known and skipped
/// whatever their age). A quarter of a shortened lifecycle day, for tests.
const SWEEP_GRACE: Duration = Duration::from_secs(600);

/// Now, in nanoseconds since the epoch, on the store's clock.
fn now_ns() -> u64 {
    placement::clock::now_ns()
}

/// A bucket's checkpoint retention rules, if it has any.
pub fn bucket_checkpoints(bucket: &BucketRecord) -> Option<CheckpointRules> {
    let doc = bucket.config.get(CHECKPOINTS_KEY)?;
    match serde_json::from_str::<CheckpointRules>(doc) {
        Ok(rules) if !rules.rules.is_empty() => Some(rules),
        Ok(_) => None,
        Err(e) => {
            tracing::error!(bucket = %bucket.name, error = %e, "stored checkpoint rules do not parse");
            None
        }
    }
}

/// Parsed lifecycle configurations by bucket, parsed again only when the
/// stored document changes: the gateway consults them on every GET, HEAD
/// and PUT of a bucket with rules (for `x-amz-expiration`).
#[derive(Default)]
pub struct ConfigCache {
    entries: Mutex<BTreeMap<String, CachedConfig>>,
}

/// A bucket's stored document and minimum-size setting, and what they parse to.
type CachedConfig = (String, Option<String>, Option<Arc<LifecycleConfig>>);

/// Buckets a [`ConfigCache`] holds before it starts over.
const CONFIG_CACHE_ENTRIES: usize = 10_000;

impl ConfigCache {
    /// The configuration of `bucket` (as [`bucket_config`]).
    pub fn get(&self, bucket: &BucketRecord) -> Option<Arc<LifecycleConfig>> {
        let doc = bucket.config.get(CONFIG_KEY)?;
        let min = bucket.config.get(MIN_SIZE_KEY);
        if let Some((d, m, cfg)) = self.entries.lock().get(&bucket.name) {
            if d == doc && m.as_ref() == min {
                return cfg.clone();
            }
        }
        let cfg = bucket_config(bucket).map(Arc::new);
        let mut entries = self.entries.lock();
        if entries.len() >= CONFIG_CACHE_ENTRIES {
            entries.clear();
        }
        entries.insert(
            bucket.name.clone(),
            (doc.clone(), min.cloned(), cfg.clone()),
        );
        cfg
    }
}

/// A bucket's lifecycle configuration, if it has one.
pub fn bucket_config(bucket: &BucketRecord) -> Option<LifecycleConfig> {
    let doc = bucket.config.get(CONFIG_KEY)?;
    let min = bucket.config.get(MIN_SIZE_KEY).map(String::as_str);
    match parse(doc.as_bytes(), min, Classes::Any) {
        Ok(cfg) => Some(cfg),
        Err(e) => {
            tracing::error!(bucket = %bucket.name, error = %e, "stored lifecycle configuration does not parse");
            None
        }
    }
}

/// Tunables of the scanner.
#[derive(Clone, Copy, Debug)]
pub struct ScannerOptions {
    /// The length of a lifecycle day.
    pub clock: Clock,
    /// Time between the starts of two passes.
    pub interval: Duration,
    /// Most actions per second.
    pub ops_per_sec: u32,
    /// Most bytes moved per second by transitions.
    pub bytes_per_sec: u64,
}

impl ScannerOptions {
    /// Production defaults for a day of `clock`: a pass every hour (or
    /// every eighth of a shortened day), 1,000 actions and 256 MiB per
    /// second at most.
    pub fn for_clock(clock: Clock) -> ScannerOptions {
        ScannerOptions {
            clock,
            interval: (clock.day / 8).clamp(Duration::from_millis(500), Duration::from_secs(3600)),
            ops_per_sec: 1000,
            bytes_per_sec: 256 << 20,
        }
    }
}

/// Counters of one rule.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleStats {
    /// Versions moved to a colder class.
    pub transitioned_objects: u64,
    /// Their bytes.
    pub transitioned_bytes: u64,
    /// Versions expired (delete markers added, versions or markers removed).
    pub expired_objects: u64,
    /// Their bytes.
    pub expired_bytes: u64,
    /// Multipart uploads aborted.
    pub aborted_uploads: u64,
    /// Actions due at the end of the last pass but not done (failed, or
    /// skipped because the version changed).
    pub pending_objects: u64,
    /// Their bytes.
    pub pending_bytes: u64,
    /// Actions that failed.
    pub failed: u64,
    /// The last failure.
    pub last_error: Option<String>,
}

/// Lifecycle state of one bucket.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketStatus {
    /// A pass is running now.
    pub running: bool,
    /// Passes finished.
    pub passes: u64,
    /// When the last pass started and finished (ns since the epoch).
    pub last_started_ns: u64,
    /// See `last_started_ns`; 0 before the first pass finished.
    pub last_finished_ns: u64,
    /// Versions and bytes the last finished pass looked at.
    pub last_scanned_objects: u64,
    /// See `last_scanned_objects`.
    pub last_scanned_bytes: u64,
    /// Versions the running pass has looked at so far.
    pub scanned_objects: u64,
    /// Per rule, since the server started.
    pub rules: BTreeMap<String, RuleStats>,
}

/// What the rules will do over a period (a dry run).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Until when (ns since the epoch).
    pub until_ns: u64,
    /// Per rule, per action ("expire", "transition to GLACIER", ...).
    pub actions: BTreeMap<String, BTreeMap<String, PlanEntry>>,
}

/// One kind of planned action.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanEntry {
    /// Versions (or uploads).
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// A few of their keys.
    pub examples: Vec<String>,
}

impl Plan {
    /// Adds what `other` (the plan of another set's keys) counted.
    pub(crate) fn absorb(&mut self, other: Plan) {
        for (rule, actions) in other.actions {
            for (action, e) in actions {
                let mine = self
                    .actions
                    .entry(rule.clone())
                    .or_default()
                    .entry(action)
                    .or_default();
                mine.objects += e.objects;
                mine.bytes += e.bytes;
                let room = PLAN_EXAMPLES.saturating_sub(mine.examples.len());
                mine.examples.extend(e.examples.into_iter().take(room));
            }
        }
    }

    /// Counts one planned action of `rule` on `key`.
    pub(crate) fn note(&mut self, rule: &str, action: String, key: &str, bytes: u64) {
        let e = self
            .actions
            .entry(rule.to_string())
            .or_default()
            .entry(action)
            .or_default();
        e.objects += 1;
        e.bytes += bytes;
        if e.examples.len() < PLAN_EXAMPLES {
            e.examples.push(key.to_string());
        }
    }
}

/// Spaces actions out to the configured rates.
struct Pacer {
    next: Instant,
}

/// The lifecycle scanner of one store.
pub struct Scanner {
    store: Arc<Store>,
    opts: ScannerOptions,
    status: Mutex<BTreeMap<String, BucketStatus>>,
    wake: Notify,
    pacer: tokio::sync::Mutex<Pacer>,
    /// The runner's signal that shutdown began (see [`ScannerWorker`]).
    stopping: std::sync::OnceLock<CancellationToken>,
}

/// What one version is, for evaluation.
#[derive(Clone)]
pub(crate) struct Seen {
    pub(crate) version: VersionRef,
    pub(crate) mtime_ns: u64,
    pub(crate) size: u64,
    pub(crate) delete_marker: bool,
    pub(crate) class: String,
    pub(crate) tags: Option<Vec<(String, String)>>,
}

impl Seen {
    fn view(&self) -> Version<'_> {
        Version {
            mtime_ns: self.mtime_ns,
            size: self.size,
            delete_marker: self.delete_marker,
            class: &self.class,
            tags: self.tags.as_deref(),
        }
    }
}

pub(crate) fn action_name(a: &Action) -> String {
    match a {
        Action::Expire => "expire".into(),
        Action::RemoveMarker => "remove expired delete marker".into(),
        Action::DeleteVersion => "delete noncurrent version".into(),
        Action::Transition(c) => format!("transition to {c}"),
    }
}

impl Scanner {
    /// A scanner over `store`; run it with [`Scanner::worker`].
    pub fn new(store: Arc<Store>, opts: ScannerOptions) -> Arc<Scanner> {
        Arc::new(Scanner {
            store,
            opts,
            status: Mutex::default(),
            wake: Notify::new(),
            pacer: tokio::sync::Mutex::new(Pacer {
                next: Instant::now(),
            }),
            stopping: std::sync::OnceLock::new(),
        })
    }

    /// The store the scanner works on.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The length of a lifecycle day.
    pub fn clock(&self) -> Clock {
        self.opts.clock
    }

    /// The worker running the passes: one at start (after sweeping tier
    /// objects an interrupted transition left), then every interval or
    /// when [`Scanner::trigger`] is called. The store runs it with its own
    /// workers (`Store::run_worker`), which stop it at shutdown.
    pub fn worker(self: &Arc<Self>) -> ScannerWorker {
        ScannerWorker {
            scanner: self.clone(),
            started: false,
            asked: false,
        }
    }

    /// Starts a pass over every bucket now.
    pub fn trigger(&self) {
        self.wake.notify_one();
    }

    /// Status of every bucket with a lifecycle configuration.
    pub fn status(&self) -> BTreeMap<String, BucketStatus> {
        self.status.lock().clone()
    }

    async fn run_all(&self) {
        let buckets = match self.store.list_buckets().await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "lifecycle pass cannot list buckets");
                return;
            }
        };
        let names: Vec<String> = buckets.iter().map(|b| b.name.clone()).collect();
        self.status.lock().retain(|name, _| names.contains(name));
        for b in buckets {
            if let Err(e) = self.run_bucket(&b.name).await {
                tracing::warn!(bucket = %b.name, error = %e, "lifecycle pass failed");
            }
        }
    }

    /// One pass over `bucket` now: every due action is taken.
    pub async fn run_bucket(&self, bucket: &str) -> Result<(), Error> {
        let record = self.store.bucket(bucket).await?;
        let cfg = bucket_config(&record);
        let checkpoints = bucket_checkpoints(&record);
        if cfg.is_none() && checkpoints.is_none() {
            self.status.lock().remove(bucket);
            return Ok(());
        }
        let started = now_ns();
        {
            let mut all = self.status.lock();
            let st = all.entry(bucket.to_string()).or_default();
            if st.running {
                return Ok(());
            }
            st.running = true;
            st.last_started_ns = started;
            st.scanned_objects = 0;
            for r in st.rules.values_mut() {
                r.pending_objects = 0;
                r.pending_bytes = 0;
            }
        }
        let mut plan = Plan::default();
        let mut result = match &cfg {
            Some(cfg) => self.walk(bucket, cfg, started, true, &mut plan).await,
            None => Ok((0, 0)),
        };
        if let (Ok(_), Some(rules)) = (&result, &checkpoints) {
            if let Err(e) = self.checkpoints(bucket, rules, true, &mut plan).await {
                result = Err(e);
            }
        }
        let mut all = self.status.lock();
        let st = all.entry(bucket.to_string()).or_default();
        st.running = false;
        if result.is_ok() {
            st.passes += 1;
            st.last_finished_ns = now_ns();
            st.last_scanned_objects = st.scanned_objects;
        }
        result.map(|(_, bytes)| st.last_scanned_bytes = bytes)
    }

    /// What the rules of `bucket` will do over the next `days` lifecycle
    /// days, without doing any of it.
    pub async fn plan(&self, bucket: &str, days: u32) -> Result<Plan, Error> {
        let record = self.store.bucket(bucket).await?;
        let mut plan = Plan {
            until_ns: now_ns() + days as u64 * self.opts.clock.day.as_nanos() as u64,
            ..Plan::default()
        };
        if let Some(cfg) = bucket_config(&record) {
            let until = plan.until_ns;
            self.walk(bucket, &cfg, until, false, &mut plan).await?;
        }
        if let Some(rules) = bucket_checkpoints(&record) {
            self.checkpoints(bucket, &rules, false, &mut plan).await?;
        }
        Ok(plan)
    }

    /// Walks every version of `bucket` and, for those with an action due
    /// at `at_ns`, takes it (`act`) or records it in `plan`: every set of
    /// the store's keys at the same time. Returns the versions and bytes
    /// looked at.
    async fn walk(
        &self,
        bucket: &str,
        cfg: &LifecycleConfig,
        at_ns: u64,
        act: bool,
        plan: &mut Plan,
    ) -> Result<(u64, u64), Error> {
        let scanned = AtomicU64::new(0);
        let walks = (0..self.store.key_sets()).map(|set| {
            let scanned = &scanned;
            async move {
                let mut plan = Plan::default();
                let walked = self
                    .walk_set(set, bucket, cfg, at_ns, act, scanned, &mut plan)
                    .await;
                (walked, plan)
            }
        });
        let (mut versions, mut bytes) = (0, 0);
        let mut failed = None;
        for (walked, part) in futures::future::join_all(walks).await {
            plan.absorb(part);
            match walked {
                Ok((v, b)) => {
                    versions += v;
                    bytes += b;
                }
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        self.stale_uploads(bucket, cfg, at_ns, act, plan).await?;
        Ok((versions, bytes))
    }

    /// [`Self::walk`] of the keys of set `set`, adding the versions it
    /// looks at to `scanned_all` (the pass's count, shown while it runs).
    #[allow(clippy::too_many_arguments)]
    async fn walk_set(
        &self,
        set: usize,
        bucket: &str,
        cfg: &LifecycleConfig,
        at_ns: u64,
        act: bool,
        scanned_all: &AtomicU64,
        plan: &mut Plan,
    ) -> Result<(u64, u64), Error> {
        let needs_tags = cfg
            .rules
            .iter()
            .any(|r| r.enabled && !r.filter.tags.is_empty());
        let (mut scanned, mut bytes) = (0u64, 0u64);
        let mut start = ListStart::Beginning;
        loop {
            let page = self
                .store
                .list_versions_in(set, bucket, "", start, PAGE_KEYS)
                .await?;
            let before = scanned;
            // The page's due actions, taken a few at a time once it is read.
            let mut due: Vec<(&str, Seen, String, Action)> = Vec::new();
            for (key, versions) in &page.entries {
                let mut seen = Vec::with_capacity(versions.len());
                for v in versions {
                    let version = VersionRef::of_id(v.version_id);
                    let tags = if needs_tags && !v.delete_marker {
                        match self.store.get_version(bucket, key, Some(version)).await {
                            Ok(r) => Some(r.tags),
                            Err(_) => None,
                        }
                    } else {
                        Some(Vec::new())
                    };
                    seen.push(Seen {
                        version,
                        mtime_ns: v.mtime_ns,
                        size: v.size,
                        delete_marker: v.delete_marker,
                        class: v
                            .meta
                            .storage_class
                            .clone()
                            .unwrap_or_else(|| "STANDARD".into()),
                        tags,
                    });
                }
                let views: Vec<Version<'_>> = seen.iter().map(Seen::view).collect();
                let mut picked = Vec::new();
                for (i, s) in seen.iter().enumerate() {
                    scanned += 1;
                    bytes += s.size;
                    let cands = candidates(cfg, &self.opts.clock, key, &views, i);
                    if let Some(d) = pick(&cands, at_ns) {
                        picked.push((i, d.rule.clone(), d.action.clone()));
                    }
                }
                drop(views);
                for (i, rule, action) in picked {
                    match act {
                        true => due.push((key, seen[i].clone(), rule, action)),
                        false => plan.note(&rule, action_name(&action), key, seen[i].size),
                    }
                }
            }
            futures::stream::iter(due)
                .for_each_concurrent(ACTIONS_IN_FLIGHT, |(key, s, rule, action)| async move {
                    self.take(bucket, key, &s, &rule, &action).await
                })
                .await;
            let all = scanned_all.fetch_add(scanned - before, Ordering::Relaxed) + scanned - before;
            if act {
                if let Some(st) = self.status.lock().get_mut(bucket) {
                    st.scanned_objects = all;
                }
            }
            match page.next {
                // A stopping server ends the pass after a page's actions;
                // the next one starts over.
                Some(_) if self.stopping.get().is_some_and(|s| s.is_cancelled()) => break,
                Some(next) => start = ListStart::After(next.into_bytes()),
                None => break,
            }
        }
        Ok((scanned, bytes))
    }

    /// Aborts (or plans to abort) uploads older than a rule allows.
    async fn stale_uploads(
        &self,
        bucket: &str,
        cfg: &LifecycleConfig,
        at_ns: u64,
        act: bool,
        plan: &mut Plan,
    ) -> Result<(), Error> {
        for rule in cfg.rules.iter().filter(|r| r.enabled) {
            let Some(days) = rule.abort_multipart_days else {
                continue;
            };
            let mut start = UploadListStart::Beginning;
            loop {
                let (uploads, next) = self
                    .store
                    .list_uploads(bucket, &rule.filter.prefix, start.clone(), PAGE_KEYS)
                    .await?;
                for u in &uploads {
                    if self.opts.clock.due_ns(u.record.initiated_ns, days) > at_ns {
                        continue;
                    }
                    if !act {
                        plan.note(
                            &rule.id,
                            "abort incomplete multipart upload".into(),
                            &u.key,
                            0,
                        );
                        continue;
                    }
                    self.pace(0).await;
                    let done = self.store.abort_upload(bucket, &u.key, u.upload_id).await;
                    self.count(bucket, &rule.id, |r| match &done {
                        Ok(()) | Err(Error::NoSuchUpload) => r.aborted_uploads += 1,
                        Err(e) => {
                            r.failed += 1;
                            r.last_error = Some(format!("abort upload of {}: {e}", u.key));
                        }
                    });
                }
                match next {
                    Some(n) => start = n,
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn count(&self, bucket: &str, rule: &str, f: impl FnOnce(&mut RuleStats)) {
        let mut all = self.status.lock();
        let st = all.entry(bucket.to_string()).or_default();
        f(st.rules.entry(rule.to_string()).or_default());
    }

    /// Takes one due action, counting the outcome under its rule.
    pub(crate) async fn take(
        &self,
        bucket: &str,
        key: &str,
        s: &Seen,
        rule: &str,
        action: &Action,
    ) {
        let moved = matches!(action, Action::Transition(_)).then_some(s.size);
        self.pace(moved.unwrap_or(0)).await;
        let result = match action {
            Action::Expire => {
                self.store
                    .expire_if_unchanged(bucket, key, s.version, s.mtime_ns, false)
                    .await
            }
            Action::RemoveMarker | Action::DeleteVersion => {
                self.store
                    .expire_if_unchanged(bucket, key, s.version, s.mtime_ns, true)
                    .await
            }
            Action::Transition(class) => {
                let to = self.store.destination(class);
                self.store
                    .transition_version(bucket, key, Some(s.version), class, to)
                    .await
                    .map(|t| t != Transitioned::Unchanged)
            }
        };
        self.count(bucket, rule, |r| match (&result, action) {
            (Ok(true), Action::Transition(_)) => {
                r.transitioned_objects += 1;
                r.transitioned_bytes += s.size;
            }
            (Ok(true), _) => {
                r.expired_objects += 1;
                r.expired_bytes += s.size;
            }
            (Ok(false), _) => {
                r.pending_objects += 1;
                r.pending_bytes += s.size;
            }
            (Err(e), _) => {
                r.failed += 1;
                r.pending_objects += 1;
                r.pending_bytes += s.size;
                r.last_error = Some(format!("{} {key}: {e}", action_name(action)));
                tracing::warn!(%bucket, %key, %rule, error = %e, "lifecycle action failed");
            }
        });
    }

    /// Waits for this action's turn: at most `ops_per_sec` actions and
    /// `bytes_per_sec` moved bytes per second.
    async fn pace(&self, bytes: u64) {
        let cost = Duration::from_secs_f64(
            (1.0 / self.opts.ops_per_sec.max(1) as f64)
                .max(bytes as f64 / self.opts.bytes_per_sec.max(1) as f64),
        );
        let wait = {
            let mut p = self.pacer.lock().await;
            let now = Instant::now();
            let at = p.next.max(now);
            p.next = at + cost;
            at - now
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The lifecycle scanner as a background worker (see [`Scanner::worker`]).
pub struct ScannerWorker {
    scanner: Arc<Scanner>,
    started: bool,
    asked: bool,
}

#[async_trait::async_trait]
impl Worker for ScannerWorker {
    fn name(&self) -> String {
        "lifecycle".into()
    }

    fn status(&self) -> WorkerStatus {
        let buckets = self.scanner.status.lock();
        let acted: u64 = buckets
            .values()
            .flat_map(|b| b.rules.values())
            .map(|r| r.transitioned_objects + r.expired_objects + r.aborted_uploads)
            .sum();
        WorkerStatus {
            queue: None,
            detail: Some(format!(
                "{} buckets with rules; {acted} actions taken",
                buckets.len()
            )),
        }
    }

    /// At shutdown the pass ends after the actions of the page under way
    /// (a transition's copy, an expiry); one still running after this is
    /// dropped, to be redone by the next pass.
    fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(10)
    }

    async fn work(&mut self, stopping: &CancellationToken) -> Result<WorkerState, WorkError> {
        let me = &self.scanner;
        me.stopping.get_or_init(|| stopping.clone());
        // Scheduled passes run in one gateway of a cluster (the store's
        // background lease holder); asked-for ones anywhere.
        if self.asked || me.store.owns_background() {
            let grace = (me.opts.clock.day / 4).clamp(Duration::from_secs(1), SWEEP_GRACE);
            if let Err(e) = me.store.sweep_tier_objects(grace).await {
                tracing::warn!(error = %e, "tier sweep failed");
            }
            me.run_all().await;
        }
        Ok(WorkerState::Idle)
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        if !std::mem::replace(&mut self.started, true) {
            return WorkerState::Busy;
        }
        self.asked = tokio::select! {
            _ = tokio::time::sleep(self.scanner.opts.interval) => false,
            _ = self.scanner.wake.notified() => true,
        };
        WorkerState::Busy
    }
}
