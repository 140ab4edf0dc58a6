//! The admin API under `/granary/admin/v1/`, SigV4-signed with the root
//! key: users and their access keys.
//!
//! | method | path | does |
//! |---|---|---|
//! | GET | `/granary/admin/v1/users` | list users (no secrets) |
//! | POST | `/granary/admin/v1/users` | `{"name": .., "policy": ..?}` → new key pair (secret shown once) |
//! | DELETE | `/granary/admin/v1/users/{accessKey}` | delete a user |
//! | PUT | `/granary/admin/v1/users/{accessKey}/policy` | set the user's policy (JSON body) |
//! | DELETE | `/granary/admin/v1/users/{accessKey}/policy` | remove the user's policy |
//! | GET | `/granary/admin/v1/stats` | disk reads and writes, hot-object cache and repair counters |
//! | POST | `/granary/admin/v1/gc` | collect garbage now: unreferenced shard files and pieces, and the space of deleted packed objects |
//! | GET | `/granary/admin/v1/gc` | the garbage collector's counters |
//! | GET | `/granary/admin/v1/lifecycle/status` | per bucket and rule: passes, progress, counters, failures |
//! | POST | `/granary/admin/v1/lifecycle/run/{bucket}` | start a lifecycle pass over the bucket now |
//! | GET | `/granary/admin/v1/lifecycle/plan/{bucket}/{days}` | what the rules will do over the next days (dry run) |
//! | GET, PUT, DELETE | `/granary/admin/v1/lifecycle/checkpoints/{bucket}` | the bucket's checkpoint retention rules (JSON) |
//! | GET | `/granary/admin/v1/tiers` | remote tiers (without secrets) |
//! | GET | `/granary/admin/v1/metrics` | the Prometheus metrics (as a JSON string) |
//! | PUT, DELETE | `/granary/admin/v1/tiers/{NAME}` | add or change, remove a remote tier (another S3 endpoint) |
//! | GET | `/granary/admin/v1/faults` | fault points reached and client disconnects seen (fault tests) |
//! | PUT | `/granary/admin/v1/faults/{NAME}` | set a fault point's actions (builds with fault points only) |
//! | PUT | `/granary/admin/v1/clock` | `{"skewMs": N}`: step the store's clock (builds with fault points only) |

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use http::{Method, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::body::read_small;
use crate::iam::IamError;
use crate::Gateway;
use s3_wire::auth::credentials::Credentials;
use s3_wire::auth::{authenticate, refuse_session_token, requested_key, AuthContext};
use s3_wire::error::S3Error;

/// Largest admin request body.
const MAX_ADMIN_BODY: u64 = 64 << 10;
/// Path prefix of the admin API.
pub const PREFIX: &str = "/granary/admin/v1/";

fn reply(status: StatusCode, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("valid response")
}

fn error(status: StatusCode, code: &str, message: impl std::fmt::Display) -> Response<Body> {
    reply(
        status,
        json!({"code": code, "message": message.to_string()}),
    )
}

fn iam_error(e: IamError) -> Response<Body> {
    match e {
        IamError::InvalidName | IamError::InvalidPolicy(_) => {
            error(StatusCode::BAD_REQUEST, "InvalidArgument", e)
        }
        IamError::NameTaken(_) => error(StatusCode::CONFLICT, "UserExists", e),
        IamError::NoSuchUser => error(StatusCode::NOT_FOUND, "NoSuchUser", e),
        IamError::Store(_) => error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", e),
    }
}

fn s3_error(e: S3Error) -> Response<Body> {
    error(e.status(), e.code(), e.message())
}

#[derive(Deserialize)]
struct NewUser {
    name: String,
    #[serde(default)]
    policy: Option<Value>,
}

/// A policy given as a JSON document or as a string holding one.
/// Stores (or with `None` removes) a bucket's checkpoint rules and starts a
/// lifecycle pass.
async fn set_checkpoints(gw: &Gateway, bucket: &str, doc: Option<String>) -> Response<Body> {
    let key = lifecycle::checkpoints::CHECKPOINTS_KEY;
    let updated = gw
        .store
        .update_bucket(bucket, |b| {
            match doc {
                Some(d) => b.config.insert(key.into(), d),
                None => b.config.remove(key),
            };
            Ok(())
        })
        .await;
    match updated {
        Ok(b) => {
            if let Some(scanner) = &gw.lifecycle {
                scanner.trigger();
            }
            reply(
                StatusCode::OK,
                json!(lifecycle::bucket_checkpoints(&b).unwrap_or_default()),
            )
        }
        Err(e) => s3_error(S3Error::from(e)),
    }
}

fn lifecycle_off() -> Response<Body> {
    error(
        StatusCode::NOT_FOUND,
        "NoSuchAdminOperation",
        "this server runs no lifecycle scanner",
    )
}

fn policy_text(v: Option<Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    }
}

/// Counters of the store: what reached its disks (all of them together),
/// the hot-object cache (with its hit rate) and repair.
fn stats(store: &placement::Store) -> Value {
    use std::sync::atomic::Ordering::Relaxed;
    let c = store.cache_stats();
    let lookups = c.hits + c.misses + c.coalesced;
    let r = store.repair_stats();
    let disks = store.disk_io_by_pool().into_iter().flatten().fold(
        placement::IoStats::default(),
        |a, d| placement::IoStats {
            reads: a.reads + d.reads,
            read_bytes: a.read_bytes + d.read_bytes,
            writes: a.writes + d.writes,
            written_bytes: a.written_bytes + d.written_bytes,
            errors: a.errors + d.errors,
        },
    );
    json!({
        "disks": io(&disks),
        "cache": {
            "hits": c.hits,
            "misses": c.misses,
            "coalesced": c.coalesced,
            "hitRate": if lookups == 0 { 0.0 } else { (c.hits + c.coalesced) as f64 / lookups as f64 },
            "bytes": c.bytes,
            "capacity": c.capacity,
            "units": c.units,
        },
        "repair": {
            "queued": r.queued.load(Relaxed),
            "dropped": r.dropped.load(Relaxed),
            "repaired": r.repaired.load(Relaxed),
            "shardsRewritten": r.shards_rewritten.load(Relaxed),
            "recordsRewritten": r.records_rewritten.load(Relaxed),
            "failed": r.failed.load(Relaxed),
            "degradedWrites": r.degraded_writes.load(Relaxed),
        },
    })
}

/// What reached one disk since the server started.
fn io(io: &placement::IoStats) -> Value {
    json!({
        "reads": io.reads,
        "readBytes": io.read_bytes,
        "writes": io.writes,
        "writtenBytes": io.written_bytes,
        "errors": io.errors,
    })
}

/// The pools' erasure sets (one entry each, numbered from 1 within their
/// pool) with their disks' state, the store's background workers, the
/// heal pass and the repair backlog.
async fn status(store: &Arc<placement::Store>) -> Value {
    let disks = store.disk_status_by_pool().await;
    let pools: Vec<Value> = store
        .pool_status()
        .into_iter()
        .zip(disks)
        .map(|(pool, disks)| {
            let tier = match pool.tier.as_deref() {
                None => "hot".to_string(),
                Some(placement::COLD_TIER) => "cold".to_string(),
                Some(name) => format!("hot ({name})"),
            };
            let disks: Vec<Value> = disks
                .into_iter()
                .map(|d| {
                    let mut v = match d.health {
                        placement::DiskHealth::Online {
                            total_bytes,
                            free_bytes,
                        } => json!({"slot": d.slot + 1, "disk": d.label, "state": "online",
                            "totalBytes": total_bytes, "freeBytes": free_bytes}),
                        placement::DiskHealth::Offline { reason } => {
                            json!({"slot": d.slot + 1, "disk": d.label, "state": "offline", "reason": reason})
                        }
                    };
                    v["io"] = io(&d.io);
                    v
                })
                .collect();
            json!({
                "tier": tier,
                "set": pool.set + 1,
                "disks": disks,
                "repairBacklog": pool.repair_backlog,
                "objectsAtRisk": pool.objects_at_risk,
                "offline": pool.offline,
            })
        })
        .collect();
    json!({
        "pools": pools,
        "workers": store.worker_status(),
        "heal": store.heal_progress(),
        "gc": store.gc_progress(),
        "runsBackgroundWork": store.owns_background(),
    })
}

/// Stored policies holding condition keys Granary does not evaluate
/// (their Deny statements match; their Allow statements never do).
async fn policies_with_unknown_keys(gw: &Gateway) -> Vec<Value> {
    use s3_wire::iam_policy::Policy;
    let unknown = |doc: &str, bucket: Option<&str>| {
        Policy::load(doc, bucket)
            .map(|p| p.unknown_keys())
            .ok()
            .filter(|k| !k.is_empty())
    };
    let mut out = Vec::new();
    for b in gw.store.list_buckets().await.unwrap_or_default() {
        let doc = b.config.get(crate::ops::BUCKET_POLICY_DOC);
        if let Some(keys) = doc.and_then(|d| unknown(d, Some(&b.name))) {
            out.push(json!({"bucket": b.name, "keys": keys}));
        }
    }
    for u in gw.identities.list_users().await.unwrap_or_default() {
        if let Some(keys) = u.policy.as_deref().and_then(|d| unknown(d, None)) {
            out.push(json!({"user": u.name, "keys": keys}));
        }
    }
    out
}

/// Fault points reached and client disconnects seen.
fn faults(gw: &Gateway) -> Value {
    let points: serde_json::Map<String, Value> = placement::failpoint::counts()
        .into_iter()
        .map(|(name, (arrived, acted))| (name, json!({"arrived": arrived, "acted": acted})))
        .collect();
    let disconnects: Vec<Value> = gw
        .disconnects
        .snapshot()
        .into_iter()
        .map(|((api, phase), n)| json!({"api": api, "phase": phase, "count": n}))
        .collect();
    json!({
        "enabled": placement::failpoint::ENABLED,
        "points": points,
        "disconnects": disconnects,
        "clockSkewMs": placement::clock::skew_ms(),
    })
}

/// Steps the store's clock (builds with fault points only).
fn set_clock(body: &[u8]) -> Response<Body> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Clock {
        skew_ms: i64,
    }
    let Ok(c) = serde_json::from_slice::<Clock>(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "expected {\"skewMs\": N}",
        );
    };
    #[cfg(feature = "failpoints")]
    {
        placement::clock::set_skew_ms(c.skew_ms);
        reply(StatusCode::OK, json!({ "clockSkewMs": c.skew_ms }))
    }
    #[cfg(not(feature = "failpoints"))]
    {
        let _ = c.skew_ms;
        error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "this build has no fault points; the clock cannot be stepped",
        )
    }
}

/// Handles every admin request.
pub async fn handle(State(gw): State<Arc<Gateway>>, req: Request) -> Response<Body> {
    let (parts, body) = req.into_parts();
    // No temporary credentials exist, so no token can be checked (as on S3).
    if let Err(e) = refuse_session_token(&parts) {
        return s3_error(e);
    }
    // Only the root key may use the admin API.
    let root = gw.identities.root_access_key().to_string();
    match requested_key(&parts) {
        Some(k) if k == root => {}
        Some(_) => {
            return error(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                "the admin API needs the root credentials",
            )
        }
        None => {
            return error(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                "the admin API needs a signed request",
            )
        }
    }
    let Ok(Some((secret, _))) = gw.identities.lookup(&root).await else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "root key unavailable",
        );
    };
    let auth = match authenticate(
        &parts,
        &Credentials::single(&root, &secret),
        AuthContext {
            region: &gw.config.region,
            now: time::OffsetDateTime::now_utc(),
            vhost_bucket: None,
            sigv2: gw.config.sigv2,
        },
    ) {
        Ok(a) => a,
        Err(e) => return s3_error(e),
    };
    let path = parts
        .uri
        .path()
        .strip_prefix(PREFIX)
        .unwrap_or("")
        .trim_end_matches('/')
        .to_string();
    let segments: Vec<&str> = path.split('/').collect();
    let len = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let pace = gw.config.body_pace;
    let read = |body: Body| {
        let payload = auth.payload.clone();
        async move { read_small(body, payload, len, MAX_ADMIN_BODY, pace).await }
    };
    match (&parts.method, segments.as_slice()) {
        (&Method::GET, ["users"]) => match gw.identities.list_users().await {
            Ok(users) => reply(StatusCode::OK, json!({ "users": users })),
            Err(e) => iam_error(e),
        },
        (&Method::POST, ["users"]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            let Ok(new) = serde_json::from_slice::<NewUser>(&bytes) else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidArgument",
                    "expected {\"name\": ..., \"policy\": ...}",
                );
            };
            match gw
                .identities
                .create_user(&new.name, policy_text(new.policy))
                .await
            {
                Ok((access_key, secret_key)) => reply(
                    StatusCode::CREATED,
                    json!({"name": new.name, "accessKey": access_key, "secretKey": secret_key}),
                ),
                Err(e) => iam_error(e),
            }
        }
        (&Method::DELETE, ["users", key]) => match gw.identities.delete_user(key).await {
            Ok(()) => reply(StatusCode::OK, json!({"deleted": key})),
            Err(e) => iam_error(e),
        },
        (&Method::PUT, ["users", key, "policy"]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            match gw.identities.set_policy(key, Some(text)).await {
                Ok(()) => reply(StatusCode::OK, json!({"policy": "set"})),
                Err(e) => iam_error(e),
            }
        }
        (&Method::DELETE, ["users", key, "policy"]) => {
            match gw.identities.set_policy(key, None).await {
                Ok(()) => reply(StatusCode::OK, json!({"policy": "removed"})),
                Err(e) => iam_error(e),
            }
        }
        (&Method::GET, ["stats"]) => reply(StatusCode::OK, stats(&gw.store)),
        (&Method::GET, ["metrics"]) => {
            reply(StatusCode::OK, Value::String(crate::metrics::render(&gw)))
        }
        (&Method::GET, ["lifecycle", "status"]) => match &gw.lifecycle {
            Some(scanner) => reply(StatusCode::OK, json!({ "buckets": scanner.status() })),
            None => lifecycle_off(),
        },
        (&Method::POST, ["lifecycle", "run", bucket]) => match &gw.lifecycle {
            Some(scanner) => {
                if let Err(e) = gw.store.bucket(bucket).await {
                    return s3_error(S3Error::from(e));
                }
                let (scanner, name) = (scanner.clone(), bucket.to_string());
                tokio::spawn(async move {
                    if let Err(e) = scanner.run_bucket(&name).await {
                        tracing::warn!(bucket = %name, error = %e, "lifecycle pass failed");
                    }
                });
                reply(StatusCode::ACCEPTED, json!({ "started": bucket }))
            }
            None => lifecycle_off(),
        },
        (&Method::GET, ["lifecycle", "plan", bucket, days]) => {
            let (Some(scanner), Ok(days)) = (&gw.lifecycle, days.parse::<u32>()) else {
                return lifecycle_off();
            };
            match scanner.plan(bucket, days).await {
                Ok(plan) => reply(StatusCode::OK, json!(plan)),
                Err(e) => s3_error(S3Error::from(e)),
            }
        }
        (&Method::GET, ["lifecycle", "checkpoints", bucket]) => {
            match gw.store.bucket(bucket).await {
                Ok(b) => reply(
                    StatusCode::OK,
                    json!(lifecycle::bucket_checkpoints(&b).unwrap_or_default()),
                ),
                Err(e) => s3_error(S3Error::from(e)),
            }
        }
        (&Method::PUT, ["lifecycle", "checkpoints", bucket]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            let rules =
                match serde_json::from_slice::<lifecycle::checkpoints::CheckpointRules>(&bytes) {
                    Ok(r) => r,
                    Err(e) => return error(StatusCode::BAD_REQUEST, "InvalidArgument", e),
                };
            if let Err(e) = rules.validate(&gw.store.remote_tiers()) {
                return error(StatusCode::BAD_REQUEST, "InvalidArgument", e);
            }
            if !crate::tiers::stores_all(&gw, rules.transition_classes()) {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidRequest",
                    "transitions need a cold pool, and this server has none (start it with --cold DIR...)",
                );
            }
            set_checkpoints(&gw, bucket, Some(json!(rules).to_string())).await
        }
        (&Method::DELETE, ["lifecycle", "checkpoints", bucket]) => {
            set_checkpoints(&gw, bucket, None).await
        }
        (&Method::GET, ["tiers"]) => match crate::tiers::list(&gw).await {
            Ok(v) => reply(StatusCode::OK, v),
            Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", e),
        },
        (&Method::PUT, ["tiers", name]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            let cfg = match serde_json::from_slice::<remote_tier::RemoteTierConfig>(&bytes) {
                Ok(c) => c,
                Err(e) => return error(StatusCode::BAD_REQUEST, "InvalidArgument", e),
            };
            match crate::tiers::put(&gw, name, cfg).await {
                Ok(v) => reply(StatusCode::OK, v),
                Err(e) => error(StatusCode::BAD_REQUEST, "InvalidArgument", e),
            }
        }
        (&Method::DELETE, ["tiers", name]) => match crate::tiers::remove(&gw, name).await {
            Ok(()) => reply(StatusCode::OK, json!({ "removed": name })),
            Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", e),
        },
        (&Method::POST, ["heal"]) => {
            let started = gw.store.start_heal();
            reply(
                StatusCode::OK,
                json!({ "started": started, "progress": gw.store.heal_progress() }),
            )
        }
        (&Method::GET, ["heal"]) => reply(StatusCode::OK, json!(gw.store.heal_progress())),
        (&Method::GET, ["status"]) => {
            let mut v = status(&gw.store).await;
            v["policiesWithUnknownKeys"] = json!(policies_with_unknown_keys(&gw).await);
            reply(StatusCode::OK, v)
        }
        (&Method::GET, ["faults"]) => reply(StatusCode::OK, faults(&gw)),
        (&Method::PUT, ["faults", name]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            match placement::failpoint::configure(name, String::from_utf8_lossy(&bytes).trim()) {
                Ok(()) => reply(StatusCode::OK, json!({ "configured": name })),
                Err(e) => error(StatusCode::BAD_REQUEST, "InvalidArgument", e),
            }
        }
        (&Method::PUT, ["clock"]) => {
            let bytes = match read(body).await {
                Ok(b) => b,
                Err(e) => return s3_error(e),
            };
            set_clock(&bytes)
        }
        (&Method::POST, ["gc"]) => {
            let started = gw.store.collect_garbage().await;
            let disks = gw.store.collect_packed_garbage().await;
            reply(
                StatusCode::OK,
                json!({ "started": started, "gc": gw.store.gc_progress(), "disksCollected": disks }),
            )
        }
        (&Method::GET, ["gc"]) => reply(StatusCode::OK, json!(gw.store.gc_progress())),
        _ => error(
            StatusCode::NOT_FOUND,
            "NoSuchAdminOperation",
            format!("no admin operation {} {}", parts.method, parts.uri.path()),
        ),
    }
}
