//! One regression test per defect the fault harness found, each in the
//! shape the harness found it: the fault, then recovery (a heal and a
//! restart), then every acknowledged object read back and the recorded
//! history judged by the checker. Findings 1-5 failed on the build
//! before their fixes (65db7ba); finding 6 on bc5749a. Each aims its
//! faults at particular disks of a four-directory server (finding 6: of
//! one eight-disk set, where R is 6 of 8), so each starts exactly that
//! many, also when `GRANARY_E2E_POOL` widens the others.

use std::time::Duration;

use super::control;
use super::cut::{cut, Window};
use super::history::{body_of, History, Kind, Outcome, Seen};
use super::recorder::Recorder;
use super::{assert_linearizable, checker};
use crate::harness::{admin, enable_versioning, Server};
use crate::tagging::tagging;

/// Creates `bucket`, versioned if asked.
async fn bucket(r: &Recorder, versioned: bool) {
    r.c.create_bucket().bucket(&r.bucket).send().await.unwrap();
    if versioned {
        enable_versioning(&r.c, &r.bucket).await;
    }
}

/// [`super::recover_and_read`] of `keys` of one bucket; the checker
/// judges the reads.
async fn recover_and_read(s: &mut Server, r: &Recorder, keys: &[String]) {
    super::recover_and_read(s, &r.h, keys.iter().map(|k| (r, k.as_str()))).await;
}

/// The checker's verdict, without panicking.
fn verdict(h: &History) -> Result<checker::Checked, String> {
    checker::check(h).map_err(|v| v.to_string())
}

/// Finding 1: a client that gave up while the records of its overwrite
/// were being written left the key permanently unreadable (the request's
/// dropped future deleted the new data the records already pointed to).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_during_an_overwrite_loses_nothing() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "over");
    bucket(&r, false).await;
    // Disk 1 answers its record writes 300 ms late; the client closes
    // its connection once they are being written.
    control::set(&s, "set.record.stored", "return(sleep:300@disk1)").await;
    let trials = 6;
    let mut keys = Vec::new();
    for i in 0..trials {
        let key = format!("k{i}");
        let v1 = 1000 + 2 * i as u64;
        assert_eq!(
            r.put(&key, v1, 1_500_000, "first").await.outcome,
            Outcome::Done
        );
        let v2 = v1 + 1;
        let op = h.invoke(&r.name(&key), Kind::Put(v2), "cut while committing");
        cut(
            &s,
            "PUT",
            &format!("/over/{key}"),
            &[],
            &body_of(v2, 1_500_000),
            Window::AtPoint("set.record.stored"),
        )
        .await;
        h.complete(op, Outcome::Unknown("connection closed".into()), None, None);
        tokio::time::sleep(Duration::from_millis(400)).await;
        r.get(&key, "after the cut").await;
        keys.push(key);
    }
    control::set(&s, "set.record.stored", "off").await;
    let counts = control::counts(&s).await;
    let seen = counts.disconnects("PutObject", "commit");
    assert!(
        seen >= trials as u64,
        "the server saw {seen} disconnects while committing: {counts:?}"
    );
    recover_and_read(&mut s, &r, &keys).await;
    assert_linearizable(&h, "overwrites cut while committing");
}

/// Finding 2: after the clock stepped back, writes were acknowledged and
/// then lost to the older versions they should have replaced (a disk's
/// "a newer write is stored" answer counted as stored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_after_the_clock_steps_back_replace_what_was_there() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let plain = Recorder::new(&s, &h, "plain");
    let versioned = Recorder::new(&s, &h, "versioned");
    bucket(&plain, false).await;
    bucket(&versioned, true).await;
    // Packed and shard-file objects, in both kinds of bucket.
    let objects = [("small", 2_000usize), ("large", 700_000)];
    let mut keys = Vec::new();
    let mut modified = Vec::new();
    for r in [&plain, &versioned] {
        for (i, (key, len)) in objects.iter().enumerate() {
            assert_eq!(
                r.put(key, 10 + i as u64, *len, "before").await.outcome,
                Outcome::Done
            );
            let head =
                r.c.head_object()
                    .bucket(&r.bucket)
                    .key(*key)
                    .send()
                    .await
                    .unwrap();
            modified.push(head.last_modified().unwrap().secs());
            keys.push((r.clone(), key.to_string()));
        }
    }
    // A restart with the clock a minute behind the newest write.
    s.env
        .push(("GRANARY_FAULT_CLOCK_SKEW_MS".into(), "-60000".into()));
    s.restart();
    for (n, (r, key)) in keys.iter().enumerate() {
        let r = r.at(&s.endpoint);
        let len = if key == "small" { 2_100 } else { 710_000 };
        assert_eq!(
            r.put(key, 100 + n as u64, len, "after the step back")
                .await
                .outcome,
            Outcome::Done
        );
        r.get(key, "after the step back").await;
        let head =
            r.c.head_object()
                .bucket(&r.bucket)
                .key(key)
                .send()
                .await
                .unwrap();
        assert!(
            head.last_modified().unwrap().secs() >= modified[n],
            "{}/{key}: LastModified went backwards",
            r.bucket
        );
    }
    assert_linearizable(&h, "writes after a clock step back");
}

/// Finding 3a: a CompleteMultipartUpload that crashed after committing
/// its version, retried as an SDK retries it, created a second version
/// sharing the first one's parts; deleting the older one (as lifecycle's
/// noncurrent expiration does) freed the current one's data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_retried_after_a_crash_makes_one_version() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "mpu");
    bucket(&r, true).await;
    let (id, parts) = r.upload("k", 7, 900_000, 1 << 20).await.unwrap();
    control::set(&s, "complete.committed", "return(crash)").await;
    let op = h.invoke(&r.name("k"), Kind::Put(7), "complete, crashed, retried");
    let first = r.complete_as(op, "k", &id, &parts).await;
    assert!(matches!(first.outcome, Outcome::Unknown(_)), "{first:?}");
    assert!(s.reap(10), "the crash point did not kill the server");
    assert_eq!(control::crashes_logged(&s, "complete.committed"), 1);
    s.launch().unwrap();
    let r = r.at(&s.endpoint);
    let retried = r.complete_as(op, "k", &id, &parts).await;
    assert_eq!(retried.outcome, Outcome::Done, "{retried:?}");
    // Noncurrent versions go, as a lifecycle rule would remove them.
    let versions =
        r.c.list_object_versions()
            .bucket("mpu")
            .send()
            .await
            .unwrap();
    for v in versions
        .versions()
        .iter()
        .filter(|v| v.is_latest() != Some(true))
    {
        r.c.delete_object()
            .bucket("mpu")
            .key("k")
            .version_id(v.version_id().unwrap())
            .send()
            .await
            .unwrap();
    }
    recover_and_read(&mut s, &r, &["k".into()]).await;
    assert_linearizable(&h, "a retried completion");
    assert_eq!(versions.versions().len(), 1, "one upload, one version");
}

/// Finding 3b: a CompleteMultipartUpload retried after it had succeeded
/// (the answer was lost) answered NoSuchUpload, so the client believed a
/// good upload failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_retried_after_success_answers_the_first_result() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "mpu");
    bucket(&r, false).await;
    let (id, parts) = r.upload("k", 8, 700_000, 1 << 20).await.unwrap();
    control::set(&s, "complete.dropped", "return(crash)").await;
    let op = h.invoke(
        &r.name("k"),
        Kind::Put(8),
        "complete, crashed after it, retried",
    );
    r.complete_as(op, "k", &id, &parts).await;
    assert!(s.reap(10), "the crash point did not kill the server");
    s.launch().unwrap();
    let r = r.at(&s.endpoint);
    let retried = r.complete_as(op, "k", &id, &parts).await;
    assert_eq!(
        retried.outcome,
        Outcome::Done,
        "the retry answered {retried:?}"
    );
    r.get("k", "after the retry").await;
    recover_and_read(&mut s, &r, &["k".into()]).await;
    assert_linearizable(&h, "a completion retried after it succeeded");
}

/// Finding 4a: a DELETE that missed its write quorum had already freed
/// the shards on the disks that took it; the version stayed visible with
/// less redundancy than it was written with, and one damaged shard more
/// made it unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_that_misses_its_quorum_frees_nothing() {
    let s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "del");
    bucket(&r, false).await;
    assert_eq!(r.put("k", 1, 1 << 20, "").await.outcome, Outcome::Done);
    control::set(&s, "disk.delete_records", "return(error@disk3|disk4)").await;
    let outcome = r.delete("k", "two disks fail the delete").await;
    assert!(matches!(outcome, Outcome::Unknown(_)), "{outcome:?}");
    control::set(&s, "disk.delete_records", "off").await;
    // One shard goes bad: within what 2 + 2 promises to survive.
    control::set(&s, "disk.read_shard", "return(error@disk3)").await;
    r.h.quiesce();
    let _ = r.must_read("k", "one shard damaged").await;
    control::set(&s, "disk.read_shard", "off").await;
    assert_linearizable(&h, "a delete that missed its quorum");
}

/// Finding 4b: a DELETE was acknowledged by disks whose directories had
/// been removed under the running server: only disks that really hold a
/// write may count for its quorum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disks_whose_directories_are_gone_do_not_count() {
    let s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "gone");
    bucket(&r, false).await;
    assert_eq!(r.put("k", 1, 300_000, "").await.outcome, Outcome::Done);
    for d in &s.dirs[2..] {
        std::fs::remove_dir_all(d).unwrap();
    }
    let deleted = r.delete("k", "two directories removed").await;
    assert!(
        matches!(&deleted, Outcome::Unknown(why) if why.contains("503")),
        "a delete reached 2 of 4 disks and was answered {deleted:?}"
    );
    let written = r.put("k2", 2, 300_000, "two directories removed").await;
    assert!(
        matches!(&written.outcome, Outcome::Unknown(why) if why.contains("503")),
        "a write reached 2 of 4 disks and was answered {written:?}"
    );
    let status = admin(&s, &["status"]).unwrap();
    assert!(status.contains("2 of 4 disks online"), "{status}");
}

/// Finding 4c: an UploadPart whose client went away while its part
/// records were written (or whose write missed its quorum) left a listed
/// part whose data was deleted, and CompleteMultipartUpload accepted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_or_failed_upload_part_never_lists_a_part_without_data() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "parts");
    bucket(&r, false).await;
    let mut keys = Vec::new();
    for (i, fault) in [
        ("part.stored", "return(sleep:300@disk1)"),
        ("disk.put_part", "return(error@disk2|disk3)"),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("k{i}");
        let value = 50 + i as u64;
        let id = r.create_upload(&key).await.unwrap();
        control::set(&s, fault.0, fault.1).await;
        let path = format!("/parts/{key}?partNumber=1&uploadId={id}");
        let body = body_of(value, 400_000);
        if i == 0 {
            cut(&s, "PUT", &path, &[], &body, Window::AtPoint("part.stored")).await;
            tokio::time::sleep(Duration::from_millis(400)).await;
        } else {
            let e = r.upload_part(&key, &id, 1, body).await;
            assert!(e.is_err(), "the part write missed its quorum: {e:?}");
        }
        control::set(&s, fault.0, "off").await;
        // A resuming client lists the parts and completes with them.
        let listed =
            r.c.list_parts()
                .bucket("parts")
                .key(&key)
                .upload_id(&id)
                .send()
                .await
                .unwrap();
        let parts: Vec<_> = listed
            .parts()
            .iter()
            .map(|p| {
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(p.part_number().unwrap())
                    .e_tag(p.e_tag().unwrap())
                    .build()
            })
            .collect();
        if !parts.is_empty() {
            let op = h.invoke(
                &r.name(&key),
                Kind::Put(value),
                "completed from listed parts",
            );
            r.complete_as(op, &key, &id, &parts).await;
        }
        keys.push(key);
    }
    recover_and_read(&mut s, &r, &keys).await;
    assert_linearizable(&h, "completions of listed parts");
}

/// The checker must be able to fail: a history with a lost write.
#[test]
fn the_checker_reports_a_lost_write() {
    let h = History::default();
    let w = h.invoke("b/k", Kind::Put(1), "");
    h.complete(w, Outcome::Done, None, None);
    let g = h.invoke("b/k", Kind::Get, "");
    h.complete(g, Outcome::Done, Some(Seen::Absent), Some("REQ".into()));
    let report = verdict(&h).unwrap_err();
    assert!(report.contains("REQ"), "{report}");
}

/// Finding 4d: the tier sweep judged a cold PUT's tier object without the
/// key's lock, so a PUT whose version was still being committed lost the
/// tier object its version then referred to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tier_sweep_never_takes_a_tier_object_a_put_is_committing() {
    // Lifecycle days of 4 s: the sweep's grace is 1 s.
    let (mut s, _cold) = control::server_tiered(&["--lifecycle-day-secs", "4"]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "cold");
    bucket(&r, false).await;
    // The version is committed 3 s after its tier object.
    control::set(&s, "tier.put.committed", "return(sleep:3000)").await;
    let op = h.invoke(&r.name("k"), Kind::Put(9), "cold PUT during a sweep");
    let put = {
        let (c, body) = (r.c.clone(), body_of(9, 700_000));
        tokio::spawn(async move {
            c.put_object()
                .bucket("cold")
                .key("k")
                .storage_class(aws_sdk_s3::types::StorageClass::Glacier)
                .body(body.into())
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A lifecycle configuration wakes the scanner, which sweeps first.
    crate::harness::set_lifecycle(
        &r.c,
        "cold",
        vec![crate::harness::expiration_rule("x", "none/", 100)],
    )
    .await;
    let answer = put.await.unwrap();
    h.complete(
        op,
        if answer.is_ok() {
            Outcome::Done
        } else {
            Outcome::Unknown(format!("{answer:?}"))
        },
        None,
        None,
    );
    control::set(&s, "tier.put.committed", "off").await;
    // Let the sweep finish its pass, then read.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    recover_and_read(&mut s, &r, &["k".into()]).await;
    assert_linearizable(&h, "a cold PUT during a tier sweep");
}

/// Finding 4e: the hot-object cache kept data the server had freed, and a
/// read it answered touched no disk, so a lost or damaged shard stayed
/// hidden behind it (this hid finding 3a in testing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_neither_keeps_freed_data_nor_hides_missing_shards() {
    let s = Server::start_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "cached");
    bucket(&r, false).await;
    let cache_bytes = || async {
        let v: serde_json::Value =
            serde_json::from_str(&admin(&s, &["stats", "--json"]).unwrap()).unwrap();
        v["cache"]["bytes"].as_u64().unwrap()
    };
    // Freed data leaves the cache with the version that referred to it.
    assert_eq!(r.put("gone", 1, 2 << 20, "").await.outcome, Outcome::Done);
    r.get("gone", "fills the cache").await;
    assert!(cache_bytes().await >= 2 << 20);
    assert_eq!(r.delete("gone", "").await, Outcome::Done);
    assert_eq!(
        cache_bytes().await,
        0,
        "the deleted object's data is still cached"
    );

    // A shard lost behind a cached object is found and rebuilt all the same.
    let before = crate::harness::count_shard_files(&s.dirs);
    assert_eq!(r.put("kept", 2, 2 << 20, "").await.outcome, Outcome::Done);
    r.get("kept", "fills the cache").await;
    let added: Vec<std::path::PathBuf> = crate::harness::files_under(&s.dirs[1].join("shards"))
        .into_iter()
        .collect();
    for f in &added {
        std::fs::remove_file(f).unwrap();
    }
    let lost = before + 4 - crate::harness::count_shard_files(&s.dirs);
    assert_eq!(lost, 1, "one shard file removed");
    crate::harness::until(20, "the lost shard rebuilt", async || {
        r.get("kept", "served from the cache").await;
        crate::harness::count_shard_files(&s.dirs) == before + 4
    })
    .await;
}

/// Finding 5: shard files and pieces that crashes and cut-off writes left
/// behind were never reclaimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collection_reclaims_what_crashes_leave_and_nothing_else() {
    let mut s = control::server_exactly(4, &[]);
    let h = History::default();
    let r = Recorder::new(&s, &h, "collect");
    bucket(&r, false).await;
    let mut keys = Vec::new();
    for i in 0..3 {
        let key = format!("live{i}");
        assert_eq!(
            r.put(&key, 10 + i, 600_000, "").await.outcome,
            Outcome::Done
        );
        keys.push(key);
    }
    let live = crate::harness::count_shard_files(&s.dirs);
    // A crash after a PUT's data is written and before its record: four
    // shard files nothing refers to, staged by a process that is gone.
    control::set(&s, "put.staged", "return(crash)").await;
    let cut = r
        .put("orphan", 99, 700_000, "crashed before its record")
        .await;
    assert!(matches!(cut.outcome, Outcome::Unknown(_)), "{cut:?}");
    assert!(s.reap(10), "the crash point did not kill the server");
    s.launch().unwrap();
    assert_eq!(crate::harness::count_shard_files(&s.dirs), live + 4);
    let out = admin(&s, &["gc"]).unwrap();
    assert!(out.contains("4 shard files"), "{out}");
    assert_eq!(crate::harness::count_shard_files(&s.dirs), live);
    let status = admin(&s, &["status"]).unwrap();
    assert!(status.contains("gc: 1 passes"), "{status}");
    // What is live stays, byte for byte.
    let r = r.at(&s.endpoint);
    r.h.quiesce();
    for key in &keys {
        let _ = r.must_read(key, "after the collection").await;
    }
    assert_linearizable(&h, "garbage collection after a crash");
}

/// Finding 6: a rewrite of a version (new tags, a lifecycle transition)
/// that a crash cut short on a set of eight disks (parity 2, so R = 6)
/// left the new write on three disks and the old one on five; neither
/// reached R and the object answered NoSuchKey after the restart. (Found
/// by `lifecycle::kill_9_during_transitions_loses_nothing` on a pool of
/// 8-disk sets; this makes its timing certain.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_cut_short_by_a_crash_leaves_its_version_readable() {
    let mut s = control::server_exactly(8, &["--set-width", "8", "--parity", "2"]);
    let c = s.client();
    c.create_bucket().bucket("rewrite").send().await.unwrap();
    let body = body_of(7, 300_000);
    c.put_object()
        .bucket("rewrite")
        .key("k")
        .body(body.clone().into())
        .send()
        .await
        .unwrap();
    // Disks 4-8 commit record writes 5 s late; the third disk that stores
    // the rewrite's record kills the server.
    control::set(
        &s,
        "disk.commit.before",
        "return(sleep:5000@disk4|disk5|disk6|disk7|disk8)",
    )
    .await;
    control::set(&s, "set.record.stored", "2*off->return(crash)").await;
    let cut = c
        .put_object_tagging()
        .bucket("rewrite")
        .key("k")
        .tagging(tagging(&[("t", "1")]))
        .send()
        .await;
    assert!(cut.is_err(), "the server crashed during the rewrite");
    assert!(s.reap(10), "the crash point was reached");
    s.launch().unwrap();
    let c = s.client();
    let got = c.get_object().bucket("rewrite").key("k").send().await;
    let got = got.expect("the object after a rewrite cut short by a crash");
    assert_eq!(got.body.collect().await.unwrap().into_bytes(), body);
    let listed = c.list_objects_v2().bucket("rewrite").send().await.unwrap();
    assert_eq!(listed.contents().len(), 1);
    // A later rewrite goes to every disk holding the version, not only the
    // three holding its newest write (below the write quorum).
    c.put_object_tagging()
        .bucket("rewrite")
        .key("k")
        .tagging(tagging(&[("t", "2")]))
        .send()
        .await
        .expect("tagging the object again");
    let tags = c
        .get_object_tagging()
        .bucket("rewrite")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(tags.tag_set()[0].value(), "2");
}
