//! Get/Put/DeleteBucketLifecycleConfiguration, and the `x-amz-expiration`
//! header of objects a rule will expire.

use std::sync::Arc;

use axum::body::Body;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use lifecycle::eval::{expiration_header, Version};
use lifecycle::{LifecycleConfig, CONFIG_KEY, MIN_SIZE_KEY};
use placement::ObjectRecord;

use super::document::read_document;
use super::reply::{empty, xml};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};

/// Largest LifecycleConfiguration document accepted (1,000 rules).
const MAX_LIFECYCLE_BYTES: u64 = 1 << 20;
/// Header naming the minimum size of objects transitions move.
const MIN_SIZE_HEADER: &str = "x-amz-transition-default-minimum-object-size";

/// The bucket's lifecycle configuration, if any.
pub async fn configuration(gw: &Gateway, bucket: &str) -> S3Result<Option<Arc<LifecycleConfig>>> {
    let b = gw.store.bucket(bucket).await?;
    Ok(gw.lifecycle_configs.get(&b))
}

fn with_min_size(mut resp: Response<Body>, cfg: &LifecycleConfig) -> Response<Body> {
    resp.headers_mut().insert(
        MIN_SIZE_HEADER,
        HeaderValue::from_static(cfg.min_size_header()),
    );
    resp
}

/// GetBucketLifecycleConfiguration.
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let cfg = configuration(gw, req.bucket())
        .await?
        .ok_or(S3Error::NoSuchLifecycleConfiguration)?;
    Ok(with_min_size(xml(StatusCode::OK, cfg.to_xml()), &cfg))
}

/// PutBucketLifecycleConfiguration: validated as S3 validates it, then
/// stored with the bucket; the scanner applies it from its next pass.
pub async fn put(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let doc = read_document(gw, req, body, MAX_LIFECYCLE_BYTES).await?;
    let remote = gw.store.remote_tiers();
    s3_wire::xml::check_document(&doc)?;
    let cfg = lifecycle::parse(
        &doc,
        req.header(MIN_SIZE_HEADER),
        lifecycle::Classes::Remote(&remote),
    )?;
    if !crate::tiers::stores_all(gw, cfg.transition_classes()) {
        return Err(S3Error::InvalidRequest(
            "Transition actions need a cold pool, and this server has none (start it with --cold DIR...)".into(),
        ));
    }
    let (text, min) = (cfg.to_xml(), cfg.min_size_header().to_string());
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.insert(CONFIG_KEY.into(), text);
            b.config.insert(MIN_SIZE_KEY.into(), min);
            Ok(())
        })
        .await?;
    if let Some(scanner) = &gw.lifecycle {
        scanner.trigger();
    }
    Ok(with_min_size(empty(StatusCode::OK), &cfg))
}

/// DeleteBucketLifecycle.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.config.remove(CONFIG_KEY);
            b.config.remove(MIN_SIZE_KEY);
            Ok(())
        })
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Adds `x-amz-expiration` to a response about `object` when a rule of
/// the bucket will expire it.
pub async fn add_expiration(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    object: &ObjectRecord,
    out: &mut HeaderMap,
) {
    let Ok(Some(cfg)) = configuration(gw, bucket).await else {
        return;
    };
    let clock = gw.lifecycle.as_ref().map(|s| s.clock()).unwrap_or_default();
    let class = object.meta.storage_class.as_deref().unwrap_or("STANDARD");
    let version = Version {
        mtime_ns: object.mtime_ns,
        size: object.size,
        delete_marker: object.delete_marker,
        class,
        tags: Some(&object.tags),
    };
    if let Some(h) = expiration_header(&cfg, &clock, key, &version) {
        if let Ok(v) = HeaderValue::from_str(&h) {
            out.insert("x-amz-expiration", v);
        }
    }
}
