//! Crashes at named steps: the server kills itself with SIGKILL at a fault
//! point inside PUT, overwrite, UploadPart, Complete, DELETE and
//! DeleteObjects, a disk's group commit, pack collection, a transition, a
//! heal and garbage collection — after a random number of arrivals, in
//! [`trials`] trials each (counted by the crash lines the server wrote).
//! After each crash the server restarts and the client retries what was
//! in flight as an SDK would; after the last, a heal, a restart, a read of
//! every key and of every acknowledged version, and the checker.

use std::time::Duration;

use aws_sdk_s3::types::{CompletedPart, StorageClass};
use rand::Rng;

use super::control;
use super::history::{History, Kind, OpId, Outcome, Seen};
use super::recorder::Recorder;
use super::workload::Workload;
use super::{assert_linearizable, seed, trials};
use crate::harness::{admin, set_lifecycle, transition_rule, Server};

/// What a trial keeps doing until the server dies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    Put,
    Overwrite,
    UploadPart,
    Complete,
    Delete,
    DeleteObjects,
    PackGc,
    Transition,
    Heal,
    Gc,
    TierPut,
}

/// Every crash point, with the work that reaches it.
const POINTS: &[(&str, Work)] = &[
    ("put.staged", Work::Put),
    ("set.record.before", Work::Overwrite),
    ("set.record.stored", Work::Overwrite),
    ("set.record.quorum", Work::Overwrite),
    ("set.record.freed", Work::Overwrite),
    ("disk.commit.after", Work::Put),
    ("part.recorded", Work::UploadPart),
    ("complete.before", Work::Complete),
    ("complete.committed", Work::Complete),
    ("complete.dropped", Work::Complete),
    ("set.delete.removed", Work::Delete),
    ("set.delete.quorum", Work::DeleteObjects),
    ("pack_gc.flushed", Work::PackGc),
    ("pack_gc.compacted", Work::PackGc),
    ("transition.tier_committed", Work::Transition),
    ("transition.flipped", Work::Transition),
    ("heal.rebuilt", Work::Heal),
    ("heal.recorded", Work::Heal),
    ("gc.listed", Work::Gc),
    ("gc.deleted", Work::Gc),
    ("tier.put.committed", Work::TierPut),
];

/// What was in flight when the server died: the SDK sends it again.
enum Retry {
    Put(Recorder, OpId, String, u64, usize),
    Complete(Recorder, OpId, String, String, Vec<CompletedPart>),
    Part(Recorder, OpId, String, String, u64, usize),
    Delete(Recorder, OpId, String),
    DeleteObjects(Recorder, Vec<OpId>, Vec<String>),
    Admin(&'static [&'static str]),
}

struct Run {
    s: Server,
    h: History,
    w: Workload,
    /// Every key written, by bucket.
    keys: Vec<(Recorder, String)>,
    /// Acknowledged versions of the versioned bucket: (key, version, value).
    versions: Vec<(String, String, u64)>,
}

impl Run {
    fn value(&mut self) -> u64 {
        self.w.value()
    }

    fn size(&mut self) -> usize {
        self.w.size()
    }

    /// Whether the server died (a crash point fired). A process killed a
    /// moment ago may still be exiting: one that no longer accepts
    /// connections is waited for.
    fn crashed(&mut self) -> bool {
        if !self.s.running() {
            return true;
        }
        if std::net::TcpStream::connect(&self.s.addr).is_ok() {
            return false;
        }
        for _ in 0..500 {
            if !self.s.running() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn note_version(&mut self, r: &Recorder, key: &str, version: Option<String>, value: u64) {
        if let (true, Some(v)) = (r.bucket == "versioned", version) {
            self.versions.push((key.to_string(), v, value));
        }
    }

    async fn put(&mut self, r: &Recorder, key: &str, value: u64, len: usize) -> Option<Retry> {
        let op = self.h.invoke(&r.name(key), Kind::Put(value), "");
        self.keys.push((r.clone(), key.to_string()));
        let w = r.put_as(op, key, value, len).await;
        self.note_version(r, key, w.version, value);
        self.crashed()
            .then(|| Retry::Put(r.clone(), op, key.to_string(), value, len))
    }

    /// One step of `work`; what to retry if the server died in it.
    async fn step(&mut self, work: Work, n: usize) -> Option<Retry> {
        let r = self.w.recorder();
        match work {
            Work::Put => {
                let (v, len) = (self.value(), self.size());
                self.put(&r, &format!("put/{n}"), v, len).await
            }
            Work::Overwrite => {
                let key = format!("over/{}", n % 5);
                let (v, len) = (self.value(), self.size());
                self.put(&r, &key, v, len).await
            }
            Work::TierPut => {
                let (v, len) = (self.value(), self.size());
                let key = format!("cold/{n}");
                let op = self.h.invoke(&r.name(&key), Kind::Put(v), "cold");
                self.keys.push((r.clone(), key.clone()));
                let out =
                    r.c.put_object()
                        .bucket(&r.bucket)
                        .key(&key)
                        .storage_class(StorageClass::Glacier)
                        .body(super::history::body_of(v, len).into())
                        .send()
                        .await;
                match out {
                    Ok(o) => {
                        self.h.complete(op, Outcome::Done, None, None);
                        self.note_version(&r, &key, o.version_id().map(str::to_string), v);
                        None
                    }
                    Err(e) => {
                        let (outcome, _) = super::recorder::outcome_of(&e);
                        self.h.complete(op, outcome, None, None);
                        self.crashed()
                            .then(|| Retry::Put(r.clone(), op, key, v, len))
                    }
                }
            }
            Work::UploadPart | Work::Complete => {
                let (v, len) = (self.value(), self.size());
                let key = format!("mpu/{n}");
                self.keys.push((r.clone(), key.clone()));
                let op = self.h.invoke(&r.name(&key), Kind::Put(v), "multipart");
                let Ok(upload) = r.create_upload(&key).await else {
                    self.h
                        .complete(op, Outcome::Refused("create failed".into()), None, None);
                    return self.crashed().then_some(Retry::Admin(&["status"]));
                };
                let body = super::history::body_of(v, len);
                let etag = match r.upload_part(&key, &upload, 1, body).await {
                    Ok(e) => e,
                    Err(_) => {
                        return self
                            .crashed()
                            .then(|| Retry::Part(r.clone(), op, key, upload, v, len))
                    }
                };
                let parts = vec![CompletedPart::builder().part_number(1).e_tag(etag).build()];
                let w = r.complete_as(op, &key, &upload, &parts).await;
                self.note_version(&r, &key, w.version, v);
                self.crashed()
                    .then(|| Retry::Complete(r.clone(), op, key, upload, parts))
            }
            Work::Delete => {
                let key = format!("del/{n}");
                let (v, len) = (self.value(), self.size());
                if let Some(retry) = self.put(&r, &key, v, len).await {
                    return Some(retry);
                }
                let op = self.h.invoke(&r.name(&key), Kind::Delete, "");
                r.delete_as(op, &key).await;
                self.crashed().then(|| Retry::Delete(r.clone(), op, key))
            }
            Work::DeleteObjects => {
                let keys: Vec<String> = (0..3).map(|i| format!("dels/{n}/{i}")).collect();
                for k in &keys {
                    let (v, len) = (self.value(), 15_000);
                    if let Some(retry) = self.put(&r, k, v, len).await {
                        return Some(retry);
                    }
                }
                let ops: Vec<OpId> = keys
                    .iter()
                    .map(|k| self.h.invoke(&r.name(k), Kind::Delete, "batch"))
                    .collect();
                for (op, outcome) in ops.iter().zip(r.delete_objects_as(&keys).await) {
                    self.h.complete(*op, outcome, None, None);
                }
                self.crashed()
                    .then(|| Retry::DeleteObjects(r.clone(), ops, keys))
            }
            Work::PackGc => {
                for i in 0..3 {
                    let key = format!("packed/{n}/{i}");
                    let v = self.value();
                    if let Some(retry) = self.put(&r, &key, v, 10_000).await {
                        return Some(retry);
                    }
                    r.delete(&key, "before a pack collection").await;
                }
                self.admin(&["gc"])
            }
            Work::Gc => {
                let key = format!("gc/{n}");
                let v = self.value();
                if let Some(retry) = self.put(&r, &key, v, 300_000).await {
                    return Some(retry);
                }
                // Shard files nothing refers to, as a crash before a record
                // leaves them: copies of live ones under new ids.
                for dir in &self.s.dirs {
                    if let Some(f) = crate::harness::files_under(&dir.join("shards")).first() {
                        let id = uuid::Uuid::new_v4();
                        let to = dir
                            .join("shards")
                            .join(format!("{:02x}", id.as_bytes()[15]))
                            .join(id.simple().to_string());
                        let _ = std::fs::copy(f, to);
                    }
                }
                self.admin(&["gc"])
            }
            Work::Heal => {
                // Disk 3 misses the record (its write fails; three disks
                // make the quorum) and loses every shard file: the heal
                // brings back both.
                let key = format!("heal/{n}");
                let v = self.value();
                // Background work (a heal pass still running, a repair) may
                // reach the armed crash point at any time: a fault that
                // cannot be set because the server is gone is that crash.
                if !control::try_set(&self.s, "disk.put_record", "return(error@disk3)").await {
                    return None;
                }
                let retry = self.put(&r, &key, v, 300_000).await;
                if retry.is_some() {
                    return retry;
                }
                if !control::try_set(&self.s, "disk.put_record", "off").await {
                    return None;
                }
                // Disk 3 loses its shard files: the heal rebuilds them.
                for f in crate::harness::files_under(&self.s.dirs[2].join("shards")) {
                    let _ = std::fs::remove_file(f);
                }
                self.admin(&["heal"])
            }
            Work::Transition => {
                let key = format!("t/{n}");
                let (v, len) = (self.value(), 300_000);
                if let Some(retry) = self.put(&r, &key, v, len).await {
                    return Some(retry);
                }
                let _ = admin(&self.s, &["lifecycle", "run", "--bucket", &r.bucket]);
                // The pass runs in the background: give it time to move.
                for _ in 0..20 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if self.crashed() {
                        return Some(Retry::Admin(&["status"]));
                    }
                }
                None
            }
        }
    }

    fn admin(&mut self, args: &'static [&'static str]) -> Option<Retry> {
        let _ = admin(&self.s, args);
        self.crashed().then_some(Retry::Admin(args))
    }

    /// Sends again what was in flight, as an SDK would (its outcome
    /// becomes the operation's).
    async fn retry(&mut self, retry: Retry) {
        let endpoint = self.s.endpoint.clone();
        match retry {
            Retry::Put(r, op, key, v, len) => {
                let r = r.at(&endpoint);
                let w = r.put_as(op, &key, v, len).await;
                self.note_version(&r, &key, w.version, v);
            }
            Retry::Complete(r, op, key, upload, parts) => {
                let r = r.at(&endpoint);
                let w = r.complete_as(op, &key, &upload, &parts).await;
                assert_eq!(w.outcome, Outcome::Done, "{key}: the retried completion");
                if let Some(v) = w.version {
                    let value = match &self.h.ops()[op].kind {
                        Kind::Put(v) => *v,
                        _ => unreachable!(),
                    };
                    self.versions.push((key, v, value));
                }
            }
            Retry::Part(r, op, key, upload, v, len) => {
                let r = r.at(&endpoint);
                let body = super::history::body_of(v, len);
                let etag = r.upload_part(&key, &upload, 1, body).await.unwrap();
                let parts = vec![CompletedPart::builder().part_number(1).e_tag(etag).build()];
                let w = r.complete_as(op, &key, &upload, &parts).await;
                assert_eq!(
                    w.outcome,
                    Outcome::Done,
                    "{key}: the completion after a retried part"
                );
                self.note_version(&r, &key, w.version, v);
            }
            Retry::Delete(r, op, key) => {
                r.at(&endpoint).delete_as(op, &key).await;
            }
            Retry::DeleteObjects(r, ops, keys) => {
                let r = r.at(&endpoint);
                for (op, outcome) in ops.iter().zip(r.delete_objects_as(&keys).await) {
                    self.h.complete(*op, outcome, None, None);
                }
            }
            Retry::Admin(args) => {
                let _ = admin(&self.s, args);
            }
        }
    }
}

/// Starts the server every crash run uses: four hot directories and, for
/// the works that need one, a cold pool; lifecycle days of a second.
fn start(work: Work) -> Server {
    let args = [
        "--lifecycle-day-secs",
        "1",
        "--gc-hours",
        "0",
        "--scrub-hours",
        "0",
    ];
    if matches!(work, Work::Transition | Work::TierPut) {
        control::server_tiered(&args).0
    } else {
        control::server(4, &args)
    }
}

/// The run's buckets; for transitions, with a rule moving `t/` to the
/// cold pool at once.
async fn workload(s: &Server, h: &History, work: Work, seed: u64) -> Workload {
    let w = Workload::start(&s.endpoint, h, seed).await;
    if work == Work::Transition {
        for r in [&w.plain, &w.versioned] {
            set_lifecycle(
                &r.c,
                &r.bucket,
                vec![transition_rule("cold", "t/", 0, "COLD")],
            )
            .await;
        }
    }
    w
}

/// Crash trials at `point` while doing `work`, until the server crashed
/// there [`trials`] times; then recovery and the checks.
async fn crash_at(point: &'static str, work: Work, seed: u64) -> (usize, usize, usize) {
    let s = start(work);
    let h = History::default();
    let seed = seed ^ crc_fast::crc32_iscsi(point.as_bytes()) as u64;
    let w = workload(&s, &h, work, seed).await;
    let mut run = Run {
        s,
        h: h.clone(),
        w,
        keys: Vec::new(),
        versions: Vec::new(),
    };
    let want = trials();
    let (mut crashes, mut steps, mut logged_before) = (0, 0, 0);
    while crashes < want {
        assert!(
            steps < 40 * want,
            "{point}: {crashes} crashes in {steps} steps"
        );
        let skip = run.w.rng.gen_range(0..3);
        if !run.s.running() {
            let log = run.s.log();
            panic!(
                "{point}: the server is not running:\n{}",
                &log[log.len().saturating_sub(3000)..]
            );
        }
        control::set(&run.s, point, &format!("{skip}*off->return(crash)")).await;
        let mut retry = None;
        for _ in 0..20 {
            steps += 1;
            retry = run.step(work, steps).await;
            if retry.is_some() || run.crashed() {
                break;
            }
        }
        // Disarmed unless background work reached the point meanwhile.
        if !run.crashed() && control::try_set(&run.s, point, "off").await {
            continue;
        }
        assert!(run.s.reap(10));
        // The server says where it died (two threads may both have reached
        // the point before the process was gone).
        let logged = control::crashes_logged(&run.s, point);
        assert!(
            logged > logged_before,
            "{point}: the server died, not at the point"
        );
        logged_before = logged;
        crashes += 1;
        run.s.launch().unwrap();
        run.w.moved_to(&run.s.endpoint);
        if let Some(r) = retry {
            run.retry(r).await;
        }
        // Listings right after a crash and its retry are judged too.
        run.w.plain.list("").await.unwrap();
        run.w.versioned.list("").await.unwrap();
    }
    // Recovery: heal, restart, read everything.
    let mut keys = run.keys.clone();
    keys.sort_by(|a, b| (&a.0.bucket, &a.1).cmp(&(&b.0.bucket, &b.1)));
    keys.dedup_by(|a, b| a.0.bucket == b.0.bucket && a.1 == b.1);
    let mut lost =
        super::recover_and_read(&mut run.s, &h, keys.iter().map(|(r, k)| (r, k.as_str()))).await;
    let endpoint = run.s.endpoint.clone();
    // Every acknowledged version still reads back exactly (nothing here
    // deletes versions by id).
    run.w.moved_to(&endpoint);
    let versioned = run.w.versioned.clone();
    for (key, version, value) in &run.versions {
        let (outcome, seen, rid) = versioned.get_version(key, version).await;
        if seen != Some(Seen::Value(*value)) {
            lost.push(format!(
                "versioned/{key} version {version}: {outcome:?} {seen:?} (request {rid:?})"
            ));
        }
    }
    run.w.plain.list("").await.unwrap();
    versioned.list("").await.unwrap();
    let checked = assert_linearizable(&h, point);
    assert!(lost.is_empty(), "{point}: {lost:#?}");
    (crashes, checked.ops, keys.len() + run.versions.len())
}

/// Runs the crash points whose index is `i` modulo `of` (the points are
/// split over tests the runner runs side by side).
async fn crash_points(i: usize, of: usize) {
    let seed = seed(&format!("crashes {i}/{of}"));
    let started = std::time::Instant::now();
    let mut report = Vec::new();
    for (n, (point, work)) in POINTS.iter().enumerate() {
        if n % of != i {
            continue;
        }
        let t = std::time::Instant::now();
        let (crashes, ops, objects) = crash_at(point, *work, seed).await;
        report.push(format!(
            "{point}: {crashes} crashes, {ops} operations, {objects} objects checked, {:.0?}",
            t.elapsed()
        ));
    }
    eprintln!(
        "crashes {i}/{of}: 0 violations in {:.0?}\n  {}",
        started.elapsed(),
        report.join("\n  ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_at_every_step_lose_nothing_0() {
    crash_points(0, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_at_every_step_lose_nothing_1() {
    crash_points(1, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_at_every_step_lose_nothing_2() {
    crash_points(2, 3).await;
}
