//! Prometheus metrics (text exposition format): the lifecycle scanner per
//! bucket and rule (passes, lag since the last finished pass, transitioned,
//! expired, aborted, pending and failed), the hot-object cache, repair, and
//! what reached each disk (reads, writes, their bytes, failures).
//! Served at `/granary/metrics` to scrapers holding the `--metrics-token`
//! bearer token, and in the admin API to the root key.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use axum::body::Body;
use axum::extract::State;
use http::{HeaderMap, Response, StatusCode};
use std::sync::Arc;

use crate::Gateway;

/// Content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn now_ns() -> u64 {
    crate::headers::now_ns()
}

/// Escapes a label value.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", label(v)))
            .collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        };
        let _ = writeln!(self.0, "{name}{labels} {value}");
    }
}

/// The metrics document.
pub fn render(gw: &Gateway) -> String {
    let mut o = Out(String::new());
    let c = gw.store.cache_stats();
    o.family(
        "granary_cache_units_total",
        "counter",
        "Read units by outcome.",
    );
    for (outcome, v) in [
        ("hit", c.hits),
        ("miss", c.misses),
        ("coalesced", c.coalesced),
    ] {
        o.sample(
            "granary_cache_units_total",
            &[("outcome", outcome)],
            v as f64,
        );
    }
    o.family(
        "granary_cache_bytes",
        "gauge",
        "Bytes held by the hot-object cache.",
    );
    o.sample("granary_cache_bytes", &[], c.bytes as f64);
    let r = gw.store.repair_stats();
    o.family("granary_repair_total", "counter", "Repair work by kind.");
    for (kind, v) in [
        ("queued", &r.queued),
        ("dropped", &r.dropped),
        ("repaired", &r.repaired),
        ("shards_rewritten", &r.shards_rewritten),
        ("records_rewritten", &r.records_rewritten),
        ("failed", &r.failed),
    ] {
        o.sample(
            "granary_repair_total",
            &[("kind", kind)],
            v.load(Relaxed) as f64,
        );
    }
    o.family(
        "granary_objects_at_risk",
        "gauge",
        "Objects acknowledged with fewer than k + m disks holding them and not healed since, by pool and erasure set.",
    );
    let pools = gw.store.pool_status();
    for pool in &pools {
        let set = (pool.set + 1).to_string();
        o.sample(
            "granary_objects_at_risk",
            &[
                ("pool", pool.tier.as_deref().unwrap_or("hot")),
                ("set", &set),
            ],
            pool.objects_at_risk as f64,
        );
    }
    type DiskField = fn(&placement::IoStats) -> u64;
    let per_disk: [(&str, &str, DiskField); 5] = [
        (
            "granary_disk_reads_total",
            "Shard ranges and packed pieces read, by pool, erasure set and disk slot.",
            |d| d.reads,
        ),
        (
            "granary_disk_read_bytes_total",
            "Bytes of object data read from the disk.",
            |d| d.read_bytes,
        ),
        (
            "granary_disk_writes_total",
            "Writes of blocks, pieces, records and uploads.",
            |d| d.writes,
        ),
        (
            "granary_disk_written_bytes_total",
            "Bytes of object data written to the disk.",
            |d| d.written_bytes,
        ),
        (
            "granary_disk_errors_total",
            "Calls that failed because the disk could not be used.",
            |d| d.errors,
        ),
    ];
    let io = gw.store.disk_io_by_pool();
    for (name, help, field) in per_disk {
        o.family(name, "counter", help);
        for (pool, disks) in pools.iter().zip(&io) {
            let set = (pool.set + 1).to_string();
            for (slot, d) in disks.iter().enumerate() {
                let slot = (slot + 1).to_string();
                o.sample(
                    name,
                    &[
                        ("pool", pool.tier.as_deref().unwrap_or("hot")),
                        ("set", &set),
                        ("slot", &slot),
                    ],
                    field(d) as f64,
                );
            }
        }
    }
    o.family(
        "granary_sets_offline",
        "gauge",
        "Erasure sets offline because too few of their disks hold their format.",
    );
    let offline = pools.iter().filter(|p| p.offline.is_some()).count();
    o.sample("granary_sets_offline", &[], offline as f64);
    o.family(
        "granary_listing_pages_read_ahead_total",
        "counter",
        "Listing pages served from heads read ahead of the request.",
    );
    o.sample(
        "granary_listing_pages_read_ahead_total",
        &[],
        gw.store.listing_read_ahead_hits() as f64,
    );
    o.family(
        "granary_listing_pages_one_disk_total",
        "counter",
        "Listing pages read from one disk's heads, where the disks are known to agree.",
    );
    o.sample(
        "granary_listing_pages_one_disk_total",
        &[],
        gw.store.listing_one_disk_pages() as f64,
    );
    o.family(
        "granary_client_disconnects_total",
        "counter",
        "Requests whose client went away before the answer, by operation and by what the request was doing.",
    );
    for ((api, phase), n) in gw.disconnects.snapshot() {
        o.sample(
            "granary_client_disconnects_total",
            &[("api", api), ("phase", phase)],
            n as f64,
        );
    }
    let Some(scanner) = &gw.lifecycle else {
        return o.0;
    };
    let status = scanner.status();
    let now = now_ns();
    type BucketField = fn(&lifecycle::BucketStatus, u64) -> f64;
    let per_bucket: [(&str, &str, &str, BucketField); 3] = [
        (
            "granary_lifecycle_passes_total",
            "counter",
            "Lifecycle passes finished per bucket.",
            |b, _| b.passes as f64,
        ),
        (
            "granary_lifecycle_last_pass_age_seconds",
            "gauge",
            "Seconds since the last finished lifecycle pass of the bucket (-1: none yet).",
            |b, now| match b.last_finished_ns {
                0 => -1.0,
                t => now.saturating_sub(t) as f64 / 1e9,
            },
        ),
        (
            "granary_lifecycle_running",
            "gauge",
            "1 while a lifecycle pass of the bucket runs.",
            |b, _| u8::from(b.running) as f64,
        ),
    ];
    for (name, kind, help, field) in per_bucket {
        o.family(name, kind, help);
        for (bucket, b) in &status {
            o.sample(name, &[("bucket", bucket)], field(b, now));
        }
    }
    type Field = fn(&lifecycle::RuleStats) -> u64;
    let per_rule: [(&str, &str, &str, Field); 8] = [
        (
            "granary_lifecycle_transitioned_objects_total",
            "counter",
            "Versions moved to a colder class.",
            |r| r.transitioned_objects,
        ),
        (
            "granary_lifecycle_transitioned_bytes_total",
            "counter",
            "Bytes of versions moved to a colder class.",
            |r| r.transitioned_bytes,
        ),
        (
            "granary_lifecycle_expired_objects_total",
            "counter",
            "Versions expired.",
            |r| r.expired_objects,
        ),
        (
            "granary_lifecycle_expired_bytes_total",
            "counter",
            "Bytes of versions expired.",
            |r| r.expired_bytes,
        ),
        (
            "granary_lifecycle_aborted_uploads_total",
            "counter",
            "Stale multipart uploads aborted.",
            |r| r.aborted_uploads,
        ),
        (
            "granary_lifecycle_failed_total",
            "counter",
            "Lifecycle actions that failed.",
            |r| r.failed,
        ),
        (
            "granary_lifecycle_pending_objects",
            "gauge",
            "Actions due but not done in the last pass.",
            |r| r.pending_objects,
        ),
        (
            "granary_lifecycle_pending_bytes",
            "gauge",
            "Bytes of actions due but not done in the last pass.",
            |r| r.pending_bytes,
        ),
    ];
    for (name, kind, help, field) in per_rule {
        o.family(name, kind, help);
        for (bucket, b) in &status {
            for (rule, r) in &b.rules {
                o.sample(name, &[("bucket", bucket), ("rule", rule)], field(r) as f64);
            }
        }
    }
    o.0
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, CONTENT_TYPE)
        .body(Body::from(body))
        .expect("valid response")
}

/// `GET /granary/metrics`: for a scraper with the bearer token; 404 when
/// the server was started without `--metrics-token`.
pub async fn scrape(State(gw): State<Arc<Gateway>>, headers: HeaderMap) -> Response<Body> {
    let Some(token) = &gw.config.metrics_token else {
        return text(
            StatusCode::NOT_FOUND,
            "metrics are off (start with --metrics-token)\n".into(),
        );
    };
    let given = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let matches = given.is_some_and(|g| s3_wire::auth::sigv4::signatures_equal(g, token));
    if !matches {
        return text(StatusCode::UNAUTHORIZED, "bearer token required\n".into());
    }
    text(StatusCode::OK, render(&gw))
}
