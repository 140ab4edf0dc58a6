//! Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
//! GetBucketLocation, GetBucketVersioning.

use axum::body::Body;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use http::{Response, StatusCode};

use super::document::read_document;
use super::reply::{empty, xml};
use crate::headers::{iso8601, reject_unsupported};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::names::validate_bucket_name;
use s3_wire::xml::{
    from_xml, to_xml, BucketEntry, Buckets, CreateBucketConfiguration, ListAllMyBucketsResult,
    LocationConstraint, NS,
};

/// Largest CreateBucketConfiguration document accepted.
const MAX_CONFIG_BYTES: u64 = 64 << 10;
/// Most buckets per ListBuckets page when the client asks for pages.
const MAX_BUCKETS_PAGE: usize = 10_000;

/// ListBuckets (with optional prefix, max-buckets and continuation-token).
pub async fn list_buckets(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let mut all = gw.store.list_buckets().await.map_err(S3Error::from)?;
    let prefix = req.q("prefix").map(str::to_string);
    if let Some(p) = &prefix {
        all.retain(|b| b.name.starts_with(p.as_str()));
    }
    if let Some(token) = req.q("continuation-token") {
        let after = B64
            .decode(token)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                S3Error::InvalidArgument(
                    "The continuation token provided is incorrect".into(),
                    None,
                )
            })?;
        all.retain(|b| b.name > after);
    }
    let max = match req.q("max-buckets") {
        Some(m) => m
            .parse::<usize>()
            .ok()
            .filter(|m| (1..=MAX_BUCKETS_PAGE).contains(m))
            .ok_or_else(|| {
                S3Error::InvalidArgument(
                    "max-buckets must be between 1 and 10000".into(),
                    Some(("max-buckets".into(), m.into())),
                )
            })?,
        None => usize::MAX,
    };
    let next = (all.len() > max).then(|| B64.encode(all[max - 1].name.as_bytes()));
    all.truncate(max);
    let doc = ListAllMyBucketsResult {
        xmlns: NS,
        owner: gw.owner.clone(),
        buckets: Buckets {
            bucket: all
                .into_iter()
                .map(|b| BucketEntry {
                    name: b.name,
                    creation_date: iso8601(b.created_ns),
                    bucket_region: if b.region.is_empty() {
                        gw.config.region.clone()
                    } else {
                        b.region
                    },
                })
                .collect(),
        },
        continuation_token: next,
        prefix,
    };
    Ok(xml(StatusCode::OK, to_xml("ListAllMyBucketsResult", &doc)))
}

/// CreateBucket.
pub async fn create(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let name = req.bucket();
    validate_bucket_name(name)?;
    reject_unsupported(&req.parts.headers)?;
    if req
        .header("x-amz-bucket-object-lock-enabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Err(S3Error::NotImplemented(
            "Object lock is not supported yet".into(),
        ));
    }
    if let Some(o) = req.header("x-amz-object-ownership") {
        if o != "BucketOwnerEnforced" {
            return Err(S3Error::NotImplemented(format!(
                "Object ownership {o} is not supported; buckets are BucketOwnerEnforced"
            )));
        }
    }
    let len = req.payload_length()?;
    if len > 0 {
        let doc = read_document(gw, req, body, MAX_CONFIG_BYTES).await?;
        let cfg: CreateBucketConfiguration = from_xml(&doc)?;
        if let Some(loc) = cfg.location_constraint.filter(|l| !l.is_empty()) {
            if loc != gw.config.region {
                return Err(S3Error::IllegalLocationConstraint(format!(
                    "The {loc} location constraint is incompatible for the region specific endpoint this request was sent to."
                )));
            }
        }
    }
    match gw.store.create_bucket(name, &gw.config.region).await {
        Ok(_) => {}
        // In us-east-1, S3 answers 200 to re-creating a bucket you own.
        Err(placement::Error::BucketExists { .. }) if gw.config.region == "us-east-1" => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(http::header::LOCATION, format!("/{name}"))
        .body(Body::empty())
        .expect("valid response"))
}

/// HeadBucket.
pub async fn head(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw.store.bucket(req.bucket()).await?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(
            "x-amz-bucket-region",
            if b.region.is_empty() {
                gw.config.region.clone()
            } else {
                b.region
            },
        )
        .body(Body::empty())
        .expect("valid response"))
}

/// DeleteBucket.
pub async fn delete(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store.delete_bucket(req.bucket()).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// GetBucketLocation: empty for us-east-1, as S3 answers.
pub async fn location(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw.store.bucket(req.bucket()).await?;
    let region = if b.region.is_empty() {
        gw.config.region.clone()
    } else {
        b.region
    };
    let doc = LocationConstraint {
        xmlns: NS,
        region: if region == "us-east-1" {
            String::new()
        } else {
            region
        },
    };
    Ok(xml(StatusCode::OK, to_xml("LocationConstraint", &doc)))
}
