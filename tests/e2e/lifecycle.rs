//! Lifecycle: the configuration API with S3's validation, and the scanner
//! applying rules when due and not before — expiration, transitions to the
//! cold pool (filtered by prefix, tag and size), versioned-bucket
//! semantics, stale multipart uploads — and transitions interrupted by
//! kill -9. Lifecycle days are shortened with `--lifecycle-day-secs`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, ExpirationStatus,
    LifecycleExpiration, LifecycleRule, LifecycleRuleAndOperator, LifecycleRuleFilter,
    NoncurrentVersionExpiration, Tag, Transition, TransitionStorageClass,
};
use aws_sdk_s3::Client;

use crate::harness::{
    admin, all_in_class, class_of, code, content_md5, enable_versioning, get_bytes, scrape_metrics,
    set_lifecycle, start_tiered, until, Pattern, Raw,
};

/// Seconds in a lifecycle day in these tests.
const DAY: u64 = 2;

fn rule(id: &str) -> aws_sdk_s3::types::builders::LifecycleRuleBuilder {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
}

fn prefix(p: &str) -> LifecycleRuleFilter {
    LifecycleRuleFilter::builder().prefix(p).build()
}

fn transition(days: i32, class: &str) -> Transition {
    Transition::builder()
        .days(days)
        .storage_class(TransitionStorageClass::from(class))
        .build()
}

async fn put(c: &Client, bucket: &str, key: &str, body: Vec<u8>) {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .unwrap();
}

fn now_secs_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The earliest moment an action `days` days after `t` may run: S3 rounds
/// up to the next day boundary.
fn due(t: f64, days: u64) -> f64 {
    ((t + (days * DAY) as f64) / DAY as f64).ceil() * DAY as f64
}

#[tokio::test]
async fn configurations_round_trip_and_invalid_ones_get_s3_errors() {
    let (s, _cold) = start_tiered(&[]);
    let c = s.client();
    c.create_bucket().bucket("rules").send().await.unwrap();
    let e = c
        .get_bucket_lifecycle_configuration()
        .bucket("rules")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchLifecycleConfiguration");
    let rules = vec![
        rule("tmp")
            .filter(prefix("tmp/"))
            .expiration(LifecycleExpiration::builder().days(7).build())
            .build()
            .unwrap(),
        rule("ckpt")
            .filter(
                LifecycleRuleFilter::builder()
                    .and(
                        LifecycleRuleAndOperator::builder()
                            .prefix("ckpt/")
                            .tags(Tag::builder().key("keep").value("no").build().unwrap())
                            .object_size_greater_than(1000)
                            .build(),
                    )
                    .build(),
            )
            .transitions(transition(30, "STANDARD_IA"))
            .transitions(transition(60, "GLACIER"))
            .noncurrent_version_expiration(
                NoncurrentVersionExpiration::builder()
                    .noncurrent_days(10)
                    .newer_noncurrent_versions(2)
                    .build(),
            )
            .build()
            .unwrap(),
        rule("uploads")
            .filter(prefix(""))
            .abort_incomplete_multipart_upload(
                AbortIncompleteMultipartUpload::builder()
                    .days_after_initiation(3)
                    .build(),
            )
            .build()
            .unwrap(),
    ];
    set_lifecycle(&c, "rules", rules.clone()).await;
    let got = c
        .get_bucket_lifecycle_configuration()
        .bucket("rules")
        .send()
        .await
        .unwrap();
    assert_eq!(got.rules(), &rules[..]);
    assert_eq!(
        got.transition_default_minimum_object_size()
            .map(|m| m.as_str()),
        Some("all_storage_classes_128K")
    );

    // S3's checks, with its error codes; the stored rules stay.
    let bad: Vec<(LifecycleRule, &str)> = vec![
        (
            rule("ia")
                .filter(prefix(""))
                .transitions(transition(10, "STANDARD_IA"))
                .build()
                .unwrap(),
            "InvalidArgument",
        ),
        (
            rule("zero")
                .filter(prefix(""))
                .expiration(LifecycleExpiration::builder().days(0).build())
                .build()
                .unwrap(),
            "InvalidArgument",
        ),
        (
            rule("none").filter(prefix("")).build().unwrap(),
            "InvalidRequest",
        ),
        (
            rule("order")
                .filter(prefix(""))
                .expiration(LifecycleExpiration::builder().days(5).build())
                .transitions(transition(5, "GLACIER"))
                .build()
                .unwrap(),
            "InvalidArgument",
        ),
        (
            rule("status")
                .status(ExpirationStatus::from("Sometimes"))
                .filter(prefix(""))
                .expiration(LifecycleExpiration::builder().days(1).build())
                .build()
                .unwrap(),
            "MalformedXML",
        ),
        (
            rule("class")
                .filter(prefix(""))
                .transitions(transition(1, "STANDARD"))
                .build()
                .unwrap(),
            "MalformedXML",
        ),
    ];
    for (r, expected) in bad {
        let id = r.id().unwrap().to_string();
        let e = c
            .put_bucket_lifecycle_configuration()
            .bucket("rules")
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .rules(r)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), expected, "rule {id}");
    }
    // A date with a signed year, which no SDK sends: it was once accepted,
    // stored as text that no longer parsed, and the bucket's rules were
    // gone.
    for date in ["-2492-02-01", "+2030-01-01"] {
        let doc = format!(
            "<LifecycleConfiguration><Rule><ID>signed</ID><Filter/><Status>Enabled</Status>\
             <Expiration><Date>{date}</Date></Expiration></Rule></LifecycleConfiguration>"
        );
        let r = Raw::new("PUT", format!("{}/rules?lifecycle", s.endpoint))
            .header("content-md5", content_md5(doc.as_bytes()))
            .body(doc)
            .send()
            .await;
        assert_eq!((r.status, r.code()), (400, "MalformedXML".into()), "{date}");
    }
    let duplicate = vec![rules[0].clone(), rules[0].clone()];
    let e = c
        .put_bucket_lifecycle_configuration()
        .bucket("rules")
        .lifecycle_configuration(
            BucketLifecycleConfiguration::builder()
                .set_rules(Some(duplicate))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    let got = c
        .get_bucket_lifecycle_configuration()
        .bucket("rules")
        .send()
        .await
        .unwrap();
    assert_eq!(got.rules().len(), 3);

    // x-amz-expiration names the rule that will expire the object.
    let put = c
        .put_object()
        .bucket("rules")
        .key("tmp/a")
        .body(ByteStream::from_static(b"a"))
        .send()
        .await
        .unwrap();
    assert!(put.expiration().unwrap().contains("rule-id=\"tmp\""));
    let head = c
        .head_object()
        .bucket("rules")
        .key("tmp/a")
        .send()
        .await
        .unwrap();
    let expiration = head.expiration().unwrap();
    assert!(expiration.starts_with("expiry-date=\""), "{expiration}");
    assert!(expiration.ends_with("rule-id=\"tmp\""), "{expiration}");

    c.delete_bucket_lifecycle()
        .bucket("rules")
        .send()
        .await
        .unwrap();
    let e = c
        .get_bucket_lifecycle_configuration()
        .bucket("rules")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchLifecycleConfiguration");
    let head = c
        .head_object()
        .bucket("rules")
        .key("tmp/a")
        .send()
        .await
        .unwrap();
    assert_eq!(head.expiration(), None);
}

#[tokio::test]
async fn rules_expire_and_transition_when_due_and_not_before() {
    let (s, _cold) = start_tiered(&[
        "--lifecycle-day-secs",
        &DAY.to_string(),
        "--metrics-token",
        "scrape-me",
    ]);
    let c = s.client();
    c.create_bucket().bucket("life").send().await.unwrap();
    let big = Pattern::bytes(7, 300 << 10);
    let small = Pattern::bytes(8, 1000);
    let t0 = now_secs_f64();
    put(&c, "life", "tmp/x", small.clone()).await;
    put(&c, "life", "keep/x", small.clone()).await;
    put(&c, "life", "ckpt/big", big.clone()).await;
    put(&c, "life", "ckpt/small", small.clone()).await;
    for (key, tagged) in [("tagged/a", true), ("tagged/b", false)] {
        let mut p = c
            .put_object()
            .bucket("life")
            .key(key)
            .body(ByteStream::from(small.clone()));
        if tagged {
            p = p.tagging("tier=cold");
        }
        p.send().await.unwrap();
    }
    set_lifecycle(
        &c,
        "life",
        vec![
            rule("expire-tmp")
                .filter(prefix("tmp/"))
                .expiration(LifecycleExpiration::builder().days(2).build())
                .build()
                .unwrap(),
            rule("ckpt-cold")
                .filter(prefix("ckpt/"))
                .transitions(transition(1, "COLD"))
                .build()
                .unwrap(),
            rule("tagged-glacier")
                .filter(
                    LifecycleRuleFilter::builder()
                        .and(
                            LifecycleRuleAndOperator::builder()
                                .prefix("tagged/")
                                .tags(Tag::builder().key("tier").value("cold").build().unwrap())
                                .object_size_greater_than(0)
                                .build(),
                        )
                        .build(),
                )
                .transitions(transition(1, "GLACIER"))
                .build()
                .unwrap(),
        ],
    )
    .await;
    // Nothing is due yet.
    let plan = admin(
        &s,
        &[
            "lifecycle",
            "plan",
            "--bucket",
            "life",
            "--days",
            "0",
            "--json",
        ],
    )
    .unwrap();
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    if now_secs_f64() < due(t0, 1) {
        assert!(plan["actions"].as_object().unwrap().is_empty(), "{plan}");
    }
    let plan = admin(
        &s,
        &["lifecycle", "plan", "--bucket", "life", "--days", "3"],
    )
    .unwrap();
    assert!(
        plan.contains("rule expire-tmp: expire: 1 objects"),
        "{plan}"
    );
    assert!(
        plan.contains("rule ckpt-cold: transition to COLD: 1 objects"),
        "{plan}"
    );
    assert!(plan.contains("tagged/a"), "{plan}");

    // Each action happens, and not before it is due: the first time each
    // is seen done is no earlier than its rounded due time.
    let mut seen: [Option<f64>; 3] = [None; 3];
    until(30, "the expiration and both transitions", async || {
        let done = [
            class_of(&c, "life", "tmp/x").await.is_none(),
            class_of(&c, "life", "ckpt/big").await.as_deref() == Some("COLD"),
            class_of(&c, "life", "tagged/a").await.as_deref() == Some("GLACIER"),
        ];
        let now = now_secs_f64();
        for (at, done) in seen.iter_mut().zip(done) {
            if done && at.is_none() {
                *at = Some(now);
            }
        }
        seen.iter().all(Option::is_some)
    })
    .await;
    assert!(seen[0].unwrap() >= due(t0, 2), "expired before it was due");
    assert!(
        seen[1].unwrap() >= due(t0, 1),
        "transitioned before it was due"
    );
    assert!(
        seen[2].unwrap() >= due(t0, 1),
        "transitioned before it was due"
    );
    // Bytes are unchanged; objects the filters do not select stay hot.
    assert_eq!(get_bytes(&c, "life", "ckpt/big").await, big);
    assert_eq!(get_bytes(&c, "life", "tagged/a").await, small);
    for key in ["keep/x", "ckpt/small", "tagged/b"] {
        assert_eq!(
            class_of(&c, "life", key).await.as_deref(),
            Some("STANDARD"),
            "{key}"
        );
        assert_eq!(get_bytes(&c, "life", key).await, small);
    }
    let status = admin(&s, &["lifecycle", "status", "--json"]).unwrap();
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let rules = &status["buckets"]["life"]["rules"];
    assert_eq!(rules["expire-tmp"]["expiredObjects"], 1, "{status}");
    assert_eq!(rules["ckpt-cold"]["transitionedObjects"], 1, "{status}");
    assert_eq!(
        rules["ckpt-cold"]["transitionedBytes"],
        300 << 10,
        "{status}"
    );
    assert_eq!(
        rules["tagged-glacier"]["transitionedObjects"], 1,
        "{status}"
    );
    let text = admin(&s, &["lifecycle", "status"]).unwrap();
    assert!(text.contains("bucket life:"), "{text}");
    // The same counters as Prometheus metrics, for the bearer token only.
    let url = format!("{}/granary/metrics", s.endpoint);
    let denied = reqwest::Client::new().get(&url).send().await.unwrap();
    assert_eq!(denied.status(), 401);
    let metrics = scrape_metrics(&s, "scrape-me").await;
    assert!(
        metrics.contains(
            "granary_lifecycle_transitioned_objects_total{bucket=\"life\",rule=\"ckpt-cold\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("granary_lifecycle_last_pass_age_seconds{bucket=\"life\"}"),
        "{metrics}"
    );
    let via_admin = admin(&s, &["metrics"]).unwrap();
    assert!(
        via_admin.contains(
            "granary_lifecycle_expired_objects_total{bucket=\"life\",rule=\"expire-tmp\"} 1"
        ),
        "{via_admin}"
    );
}

#[tokio::test]
async fn versioned_buckets_get_delete_markers_and_lose_noncurrent_versions() {
    let (s, _cold) = start_tiered(&["--lifecycle-day-secs", &DAY.to_string()]);
    let c = s.client();
    c.create_bucket().bucket("vers").send().await.unwrap();
    enable_versioning(&c, "vers").await;
    put(&c, "vers", "k", b"one".to_vec()).await;
    let upload = c
        .create_multipart_upload()
        .bucket("vers")
        .key("big")
        .send()
        .await
        .unwrap();
    set_lifecycle(
        &c,
        "vers",
        vec![
            rule("current")
                .filter(prefix(""))
                .expiration(LifecycleExpiration::builder().days(1).build())
                .build()
                .unwrap(),
            rule("old")
                .filter(prefix(""))
                .noncurrent_version_expiration(
                    NoncurrentVersionExpiration::builder()
                        .noncurrent_days(1)
                        .build(),
                )
                .abort_incomplete_multipart_upload(
                    AbortIncompleteMultipartUpload::builder()
                        .days_after_initiation(1)
                        .build(),
                )
                .build()
                .unwrap(),
        ],
    )
    .await;
    let versions = async || {
        let v = c
            .list_object_versions()
            .bucket("vers")
            .send()
            .await
            .unwrap();
        (v.versions().len(), v.delete_markers().len())
    };
    // Expiration makes a delete marker current (the data stays as a
    // noncurrent version)...
    until(30, "a delete marker", async || versions().await.1 == 1).await;
    assert_eq!(
        code(
            &c.head_object()
                .bucket("vers")
                .key("k")
                .send()
                .await
                .unwrap_err()
        ),
        "NotFound"
    );
    // ...the noncurrent version expires a day later, and then the lone
    // marker is removed too.
    until(30, "every version gone", async || {
        versions().await == (0, 0)
    })
    .await;
    // The stale upload was aborted.
    let uploads = c
        .list_multipart_uploads()
        .bucket("vers")
        .send()
        .await
        .unwrap();
    assert!(uploads.uploads().is_empty());
    let e = c
        .list_parts()
        .bucket("vers")
        .key("big")
        .upload_id(upload.upload_id().unwrap())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
}

#[tokio::test]
async fn kill_9_during_transitions_loses_nothing() {
    let count: usize = 24;
    // 1 MiB/s: the ~5 MiB of transitions take about five seconds, so the
    // kills below land in the middle of them.
    let (mut s, _cold) = start_tiered(&[
        "--lifecycle-day-secs",
        &DAY.to_string(),
        "--lifecycle-mib-per-sec",
        "1",
    ]);
    let c = s.client();
    c.create_bucket().bucket("move").send().await.unwrap();
    let body = |i: usize| Pattern::bytes(100 + i as u64, (200 << 10) + i * 4099);
    for i in 0..count {
        put(&c, "move", &format!("ckpt/{i:03}"), body(i)).await;
    }
    set_lifecycle(
        &c,
        "move",
        vec![rule("cold")
            .filter(prefix("ckpt/"))
            .transitions(transition(0, "COLD"))
            .build()
            .unwrap()],
    )
    .await;
    // Kill the server at several points of the transitions; after each
    // restart every object reads back intact, whichever pool it is in.
    let mut interrupted = 0;
    for wait_ms in [1500u64, 700, 1100, 1300, 900] {
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        s.kill();
        s.launch().unwrap();
        let c = s.client();
        let mut cold = 0;
        for i in 0..count {
            let key = format!("ckpt/{i:03}");
            assert_eq!(
                get_bytes(&c, "move", &key).await,
                body(i),
                "{key} after a kill"
            );
            cold += usize::from(class_of(&c, "move", &key).await.as_deref() == Some("COLD"));
        }
        interrupted += usize::from(cold > 0 && cold < count);
    }
    assert!(interrupted > 0, "no kill landed during the transitions");
    let c = s.client();
    let keys: Vec<String> = (0..count).map(|i| format!("ckpt/{i:03}")).collect();
    until(60, "every object in COLD", async || {
        all_in_class(&c, "move", &keys, "COLD").await
    })
    .await;
    for i in 0..count {
        assert_eq!(
            get_bytes(&c, "move", &format!("ckpt/{i:03}")).await,
            body(i)
        );
    }
    let listed = c
        .list_object_versions()
        .bucket("move")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.versions().len(), count);
}

#[tokio::test]
async fn checkpoint_retention_keeps_exactly_the_newest_complete_directories() {
    let (s, _cold) = start_tiered(&["--lifecycle-day-secs", &DAY.to_string()]);
    let c = s.client();
    c.create_bucket().bucket("train").send().await.unwrap();
    let shard = |step: u32, i: u32| Pattern::bytes(step as u64 * 10 + i as u64, 150 << 10);
    // Seven complete checkpoints (marker written last, in step order), one
    // still being written (no marker), and a loose file beside them.
    for step in 1..=8u32 {
        for i in 0..2 {
            put(
                &c,
                "train",
                &format!("ckpt/step-{step}/shard-{i}"),
                shard(step, i),
            )
            .await;
        }
        if step <= 7 {
            put(
                &c,
                "train",
                &format!("ckpt/step-{step}/COMPLETE"),
                b"ok".to_vec(),
            )
            .await;
        }
    }
    put(&c, "train", "ckpt/README", b"loose".to_vec()).await;
    // An S3 lifecycle configuration of the bucket is independent of it.
    set_lifecycle(
        &c,
        "train",
        vec![rule("logs")
            .filter(prefix("logs/"))
            .expiration(LifecycleExpiration::builder().days(30).build())
            .build()
            .unwrap()],
    )
    .await;
    let shown = admin(
        &s,
        &[
            "lifecycle",
            "checkpoints",
            "set",
            "--bucket",
            "train",
            "--id",
            "ckpt",
            "--prefix",
            "ckpt/",
            "--keep",
            "2",
            "--keep-every",
            "3",
            "--transition",
            "COLD",
        ],
    )
    .unwrap();
    assert!(
        shown.contains("keep the newest 2 and every 3-th, transition to COLD"),
        "{shown}"
    );
    let plan = admin(&s, &["lifecycle", "plan", "--bucket", "train"]).unwrap();
    assert!(
        plan.contains("rule checkpoint:ckpt: transition to COLD"),
        "{plan}"
    );
    // Kept: the newest two complete (6, 7) and every third (3, 6); moved:
    // 1, 2, 4, 5 as a whole; untouched: 8 (incomplete) and the loose file.
    let moved = [1u32, 2, 4, 5];
    let markers: Vec<String> = moved
        .iter()
        .map(|step| format!("ckpt/step-{step}/COMPLETE"))
        .collect();
    until(60, "old checkpoints in COLD", async || {
        all_in_class(&c, "train", &markers, "COLD").await
    })
    .await;
    for step in 1..=8u32 {
        let want = if moved.contains(&step) {
            "COLD"
        } else {
            "STANDARD"
        };
        for i in 0..2 {
            let key = format!("ckpt/step-{step}/shard-{i}");
            assert_eq!(
                class_of(&c, "train", &key).await.as_deref(),
                Some(want),
                "{key}"
            );
            assert_eq!(get_bytes(&c, "train", &key).await, shard(step, i), "{key}");
        }
    }
    assert_eq!(
        class_of(&c, "train", "ckpt/README").await.as_deref(),
        Some("STANDARD")
    );
    // Rewriting the S3 lifecycle configuration does not drop the rule.
    c.delete_bucket_lifecycle()
        .bucket("train")
        .send()
        .await
        .unwrap();
    let shown = admin(
        &s,
        &["lifecycle", "checkpoints", "show", "--bucket", "train"],
    )
    .unwrap();
    assert!(shown.contains("rule ckpt:"), "{shown}");
    // A new complete checkpoint pushes step 6 out of the newest two; it
    // is also every third, so it stays; step 7 is then the one to move.
    put(&c, "train", "ckpt/step-8/COMPLETE", b"ok".to_vec()).await;
    let step9 = async || {
        put(&c, "train", "ckpt/step-9/shard-0", shard(9, 0)).await;
        put(&c, "train", "ckpt/step-9/COMPLETE", b"ok".to_vec()).await;
    };
    step9().await;
    until(60, "step 7 in COLD", async || {
        class_of(&c, "train", "ckpt/step-7/shard-1")
            .await
            .as_deref()
            == Some("COLD")
    })
    .await;
    for step in [3u32, 6, 8, 9] {
        let key = format!("ckpt/step-{step}/shard-0");
        assert_eq!(
            class_of(&c, "train", &key).await.as_deref(),
            Some("STANDARD"),
            "{key}"
        );
    }
    // A transition is counted once it returns, just after a reader can
    // see the object in its new class.
    until(30, "15 transitions counted", async || {
        let status = admin(&s, &["lifecycle", "status", "--json"]).unwrap();
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        status["buckets"]["train"]["rules"]["checkpoint:ckpt"]["transitionedObjects"] == 15
    })
    .await;
    // Refused: nonsense rules.
    let e = admin(
        &s,
        &[
            "lifecycle",
            "checkpoints",
            "set",
            "--bucket",
            "train",
            "--id",
            "x",
            "--prefix",
            "ckpt/",
            "--keep",
            "0",
            "--expire",
        ],
    )
    .unwrap_err();
    assert!(e.contains("keep at least one"), "{e}");
    admin(
        &s,
        &[
            "lifecycle",
            "checkpoints",
            "remove",
            "--bucket",
            "train",
            "--id",
            "ckpt",
        ],
    )
    .unwrap();
    let shown = admin(
        &s,
        &["lifecycle", "checkpoints", "show", "--bucket", "train"],
    )
    .unwrap();
    assert!(shown.contains("no checkpoint rules"), "{shown}");
}
