//! Clock steps, forward and back, on one server and across two gateways,
//! while writes, reads, deletes, garbage collection and lifecycle passes
//! run. No acknowledged write loses to an older one, a key's
//! LastModified never goes backwards, and a forward step of T expires
//! nothing that is not due at now + T.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::{Rng, SeedableRng};

use super::control;
use super::history::{History, Outcome};
use super::recorder::Recorder;
use super::workload::Workload;
use super::{assert_linearizable, seed, trials};
use crate::cluster_harness::Cluster;
use crate::harness::{admin, expiration_rule, set_lifecycle, transition_rule};

/// Seconds in a lifecycle day in these tests.
const DAY: u64 = 2;
/// Days after which objects under `exp/` expire.
const EXPIRE_DAYS: i32 = 3;

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// When an object modified at `mtime` (s) is due to expire: S3 rounds up
/// to the next day boundary.
fn due(mtime: f64) -> f64 {
    ((mtime + (EXPIRE_DAYS as u64 * DAY) as f64) / DAY as f64).ceil() * DAY as f64
}

/// Whether lifecycle acted on `key`: an `exp/` key expired, a `tr/` key
/// moved to the cold pool.
async fn acted_on(r: &Recorder, key: &str) -> bool {
    let head = r.c.head_object().bucket(&r.bucket).key(key).send().await;
    match (key.starts_with("exp/"), head) {
        (true, Err(e)) => crate::harness::status(&e) == 404,
        (true, Ok(_)) => false,
        (false, Ok(h)) => h.storage_class().map(|c| c.as_str()) == Some("COLD"),
        (false, Err(e)) => panic!("{key}: {e:?}"),
    }
}

/// Runs lifecycle passes over `bucket` until one that started after this
/// call has finished (a pass already running when asked ignores the ask).
async fn pass_after_now(s: &crate::harness::Server, bucket: &str) {
    let status = || {
        let v = admin(s, &["lifecycle", "status", "--json"]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&v).unwrap();
        let b = &v["buckets"][bucket];
        (b["passes"].as_u64().unwrap_or(0), b["running"] == true)
    };
    let (passes, running) = status();
    let target = passes + if running { 2 } else { 1 };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        admin(s, &["lifecycle", "run", "--bucket", bucket]).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        if status().0 >= target {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no lifecycle pass over {bucket} finished within 30 s"
        );
    }
}

/// LastModified of `key` in whole seconds, when it has a current version.
async fn modified(r: &Recorder, key: &str) -> Option<i64> {
    let h =
        r.c.head_object()
            .bucket(&r.bucket)
            .key(key)
            .send()
            .await
            .ok()?;
    h.last_modified().map(|t| t.secs())
}

/// Writes through `writers` in turn, each write checked: LastModified of
/// a key never goes back. Returns the newest LastModified per key.
struct Writes {
    newest: HashMap<(String, String), i64>,
    next: u64,
}

impl Writes {
    async fn put(&mut self, r: &Recorder, key: &str, note: &str) {
        self.next += 1;
        let w = r
            .put(
                key,
                self.next,
                20_000 + (self.next as usize % 3) * 200_000,
                note,
            )
            .await;
        if w.outcome != Outcome::Done {
            return;
        }
        let Some(m) = modified(r, key).await else {
            return;
        };
        let slot = self
            .newest
            .entry((r.bucket.clone(), key.to_string()))
            .or_insert(m);
        assert!(
            m >= *slot,
            "{}/{key}: LastModified went back from {} to {m} ({note})",
            r.bucket,
            *slot
        );
        *slot = m;
    }
}

/// One server: the clock steps back a minute, forward a few seconds, back
/// again, at random between writes, deletes, reads, collections and
/// lifecycle passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_steps_on_one_server_lose_no_write_and_expire_nothing_early() {
    let seed = seed("clock steps");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let day = DAY.to_string();
    let (s, _cold) = control::server_tiered(&[
        "--lifecycle-day-secs",
        &day,
        "--gc-hours",
        "0",
        "--scrub-hours",
        "0",
    ]);
    let h = History::default();
    let Workload {
        plain, versioned, ..
    } = Workload::start(&s.endpoint, &h, seed).await;
    // Objects that expire: their own history (lifecycle deletes them).
    let lifecycle = History::default();
    let expiring = Recorder::new(&s, &lifecycle, "expiring");
    expiring
        .c
        .create_bucket()
        .bucket("expiring")
        .send()
        .await
        .unwrap();
    let rule = expiration_rule("expire", "exp/", EXPIRE_DAYS);
    let cold = transition_rule("cold", "tr/", EXPIRE_DAYS, "COLD");
    set_lifecycle(&expiring.c, "expiring", vec![rule, cold]).await;
    let mut writes = Writes {
        newest: HashMap::new(),
        next: 0,
    };
    // (key, LastModified) of the objects that may expire.
    let mut expiring_keys: Vec<(String, f64)> = Vec::new();
    let mut skew_ms: i64 = 0;
    let mut max_forward_ms: i64 = 0;
    let mut steps = 0;
    for round in 0..trials() {
        let step = match rng.gen_range(0..4) {
            0 => -60_000,
            1 => -5_000,
            2 => 1_500,
            _ => 0,
        };
        if step != 0 {
            skew_ms = (skew_ms + step).clamp(-120_000, 3_000);
            control::set_clock(&s.endpoint, skew_ms).await;
            max_forward_ms = max_forward_ms.max(skew_ms);
            steps += 1;
        }
        for i in 0..3 {
            let key = format!("k{}", rng.gen_range(0..6));
            let r = if rng.gen_bool(0.5) {
                &plain
            } else {
                &versioned
            };
            writes
                .put(r, &key, &format!("round {round}.{i}, clock {skew_ms} ms"))
                .await;
            r.get(&key, "after a write").await;
            if rng.gen_bool(0.15) {
                r.delete(&key, "").await;
            }
        }
        for prefix in ["exp", "tr"] {
            let key = format!("{prefix}/{round}");
            let v = 10_000 + 2 * round as u64 + u64::from(prefix == "tr");
            // Objects below 128 KiB are not transitioned (S3's default).
            let len = if prefix == "tr" { 200_000 } else { 5_000 };
            if expiring
                .put(&key, v, len, "lifecycle acts on it")
                .await
                .outcome
                == Outcome::Done
            {
                if let Some(m) = modified(&expiring, &key).await {
                    expiring_keys.push((key, m as f64));
                }
            }
        }
        if rng.gen_bool(0.3) {
            admin(&s, &["gc"]).unwrap();
        }
        if rng.gen_bool(0.3) {
            admin(&s, &["lifecycle", "run", "--bucket", "expiring"]).unwrap();
        }
        // Nothing expired or moved before it was due at the latest clock
        // reading.
        for (key, m) in &expiring_keys {
            if acted_on(&expiring, key).await {
                let latest = now_secs() + max_forward_ms.max(0) as f64 / 1000.0;
                assert!(
                    due(*m) <= latest + 1.0,
                    "{key} (modified {m}) acted on at {latest}, due {}",
                    due(*m)
                );
            }
        }
    }
    // A forward step of T expires what is due at now + T, and nothing else:
    // first a short step (a whole pass after it may act only on what is due
    // by now + 3 s), then one past them all.
    for (t, all_due) in [(3_000i64, false), (12_000, true)] {
        control::set_clock(&s.endpoint, t).await;
        // A whole pass after the step, so that the too-short step is judged
        // on what a pass did with it, not on a scan racing the pass.
        pass_after_now(&s, "expiring").await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut gone = 0;
            let mut waiting = None;
            for (key, m) in &expiring_keys {
                if acted_on(&expiring, key).await {
                    gone += 1;
                    let latest = now_secs() + t as f64 / 1000.0;
                    assert!(due(*m) <= latest + 1.0, "{key} acted on before it was due");
                } else {
                    waiting.get_or_insert(key);
                }
            }
            if !all_due || gone == expiring_keys.len() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{gone} of {} due objects acted on after a step of {t} ms ({waiting:?} not)\n{}",
                expiring_keys.len(),
                admin(&s, &["lifecycle", "status"]).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            // A pass started before the step is not one after it: ask
            // again (a pass already running ignores it).
            admin(&s, &["lifecycle", "run", "--bucket", "expiring"]).unwrap();
        }
    }
    control::set_clock(&s.endpoint, 0).await;
    h.quiesce();
    for ((bucket, key), _) in writes.newest.clone() {
        let r = if bucket == "plain" {
            &plain
        } else {
            &versioned
        };
        let _ = r.must_read(&key, "after the steps").await;
    }
    let checked = assert_linearizable(&h, "clock steps on one server");
    eprintln!(
        "clock steps: {steps} steps over {} rounds, {} operations, {} expiring and transitioning objects checked, 0 violations",
        trials(),
        checked.ops,
        expiring_keys.len()
    );
}

/// Two gateways over the same nodes, one a minute behind the other, each
/// stepped further at random: every write made later wins, whichever
/// gateway made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_with_stepping_clocks_agree_on_the_newest_write() {
    let seed = seed("gateway clocks");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut cluster = Cluster::start(2, 2, 2, 1);
    cluster.add_gateway_with(&[("GRANARY_FAULT_CLOCK_SKEW_MS", "-60000")]);
    let endpoints: Vec<String> = cluster
        .gateways
        .iter()
        .map(|g| g.endpoint.clone())
        .collect();
    let h = History::default();
    Workload::start(&endpoints[0], &h, seed).await;
    let plain: Vec<Recorder> = endpoints
        .iter()
        .map(|e| Recorder::of(e, &h, "plain"))
        .collect();
    let versioned: Vec<Recorder> = endpoints
        .iter()
        .map(|e| Recorder::of(e, &h, "versioned"))
        .collect();
    let mut writes = Writes {
        newest: HashMap::new(),
        next: 0,
    };
    let mut skews = [0i64, -60_000];
    for round in 0..trials() {
        let g = rng.gen_range(0..2);
        if rng.gen_bool(0.3) {
            skews[g] += [-30_000, 20_000][rng.gen_range(0..2)];
            control::set_clock(&endpoints[g], skews[g]).await;
        }
        let key = format!("k{}", rng.gen_range(0..4));
        let family = if rng.gen_bool(0.5) {
            &plain
        } else {
            &versioned
        };
        writes
            .put(
                &family[g],
                &key,
                &format!("round {round} via gateway {g}, skews {skews:?}"),
            )
            .await;
        // Both gateways read what was just written.
        family[0].get(&key, "gateway 0 reads").await;
        family[1].get(&key, "gateway 1 reads").await;
    }
    h.quiesce();
    for ((bucket, key), _) in writes.newest.clone() {
        let r = if bucket == "plain" {
            &plain[0]
        } else {
            &versioned[0]
        };
        let _ = r.must_read(&key, "after the steps").await;
    }
    let checked = assert_linearizable(&h, "two gateways with stepping clocks");
    eprintln!(
        "gateway clocks: {} rounds, {} operations, 0 violations",
        trials(),
        checked.ops
    );
    drop(cluster);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
