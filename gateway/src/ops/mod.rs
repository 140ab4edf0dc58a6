//! S3 operations, one family per file, and the dispatcher that picks one
//! from method, target and query.

mod acl;
mod attributes;
mod bucket;
mod copy;
pub(crate) mod cors;
mod delete;
mod get;
pub(crate) mod lifecycle;
mod list;
mod list_xml;
mod model_headers;
mod multipart;
mod multipart_checksum;
mod policy;
pub(crate) use policy::BUCKET_POLICY as BUCKET_POLICY_DOC;
mod post_object;
mod put;
mod receive;
mod restore;
mod tagging;
mod versioning;

use axum::body::Body;
use http::{Method, Response, StatusCode};

use crate::iam::{self, Principal};
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::iam_policy::ConditionValues;

/// Bucket subresources S3 defines that Granary does not serve yet.
const UNSUPPORTED_BUCKET: &[&str] = &[
    "policyStatus",
    "website",
    "logging",
    "notification",
    "replication",
    "encryption",
    "object-lock",
    "publicAccessBlock",
    "ownershipControls",
    "intelligent-tiering",
    "analytics",
    "metrics",
    "inventory",
    "accelerate",
    "requestPayment",
    "metadataTable",
    "metadataConfiguration",
    "metadataAnnotationTable",
    "metadataInventoryTable",
    "metadataJournalTable",
    "abac",
    "session",
];
/// Object subresources S3 defines that Granary does not serve yet.
const UNSUPPORTED_OBJECT: &[&str] = &[
    "retention",
    "legal-hold",
    "torrent",
    // POST ?restore is RestoreObject; S3 defines no other method on it.
    "restore",
    "select",
    "annotation",
    "renameObject",
    "encryption",
];

fn unsupported(req: &S3Request, list: &[&str]) -> S3Result<()> {
    if let Some(sub) = list.iter().find(|s| req.has(s)) {
        return Err(S3Error::NotImplemented(format!(
            "The ?{sub} operation is not supported yet"
        )));
    }
    Ok(())
}

/// Reads a small request document (a configuration, a tag set, an ACL) of
/// at most `max` bytes, checked against the digests the client sent with
/// it (Content-MD5, an `x-amz-checksum-*` header or trailer): a mismatch is
/// BadDigest and nothing is applied.
pub(crate) async fn read_document(
    gw: &Gateway,
    req: &S3Request,
    body: Body,
    max: u64,
) -> S3Result<bytes::Bytes> {
    let integrity = receive::integrity(req)?;
    let len = req.payload_length()?;
    let doc = crate::body::read_small(
        body,
        req.auth.payload.clone(),
        len,
        max,
        gw.config.body_pace,
    )
    .await?;
    integrity.verify_small(&doc)?;
    Ok(doc)
}

/// Stores (`Some`) or removes (`None`) one of the request bucket's
/// configuration documents.
pub(crate) async fn set_bucket_document(
    gw: &Gateway,
    req: &S3Request,
    name: &str,
    doc: Option<String>,
) -> S3Result<()> {
    gw.store
        .update_bucket(req.bucket(), |b| {
            match doc {
                Some(d) => b.config.insert(name.to_string(), d),
                None => b.config.remove(name),
            };
            Ok(())
        })
        .await
        .map(|_| ())
        .map_err(S3Error::from)
}

/// An empty response with `status`.
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .expect("valid response")
}

/// An XML document response.
pub(crate) fn xml(status: StatusCode, doc: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .body(Body::from(doc))
        .expect("valid response")
}

fn not_allowed() -> S3Error {
    S3Error::MethodNotAllowed("The specified method is not allowed against this resource.".into())
}

/// Declares [`Op`] and its names.
macro_rules! operations {
    ($($op:ident),* $(,)?) => {
        /// Every S3 operation Granary answers.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Op {
            $($op),*
        }

        impl Op {
            /// The operation's name, as AWS spells it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Op::$op => stringify!($op)),*
                }
            }
        }
    };
}

operations! {
    ListBuckets,
    GetBucketLocation,
    GetBucketAcl,
    PutBucketAcl,
    GetObjectAcl,
    PutObjectAcl,
    GetBucketVersioning,
    PutBucketVersioning,
    ListObjectVersions,
    GetBucketTagging,
    PutBucketTagging,
    DeleteBucketTagging,
    GetBucketPolicy,
    PutBucketPolicy,
    DeleteBucketPolicy,
    GetBucketCors,
    PutBucketCors,
    DeleteBucketCors,
    GetBucketLifecycle,
    PutBucketLifecycle,
    DeleteBucketLifecycle,
    ListMultipartUploads,
    ListObjectsV2,
    ListObjects,
    HeadBucket,
    CreateBucket,
    DeleteBucket,
    DeleteObjects,
    PostObject,
    ListParts,
    GetObjectTagging,
    GetObjectAttributes,
    RestoreObject,
    GetObject,
    HeadObject,
    PutObjectTagging,
    UploadPartCopy,
    UploadPart,
    CopyObject,
    PutObject,
    CreateMultipartUpload,
    CompleteMultipartUpload,
    DeleteObjectTagging,
    AbortMultipartUpload,
    DeleteObject,
}

/// Picks the operation from method, target and query.
pub(crate) fn route(req: &S3Request) -> S3Result<Op> {
    let method = &req.parts.method;
    Ok(match (req.bucket.is_some(), req.key.is_some()) {
        (false, _) => match *method {
            Method::GET if req.q("x-id") == Some("ListDirectoryBuckets") => {
                return Err(S3Error::NotImplemented(
                    "Directory buckets are not supported".into(),
                ))
            }
            Method::GET => Op::ListBuckets,
            _ => return Err(not_allowed()),
        },
        (true, false) => {
            unsupported(req, UNSUPPORTED_BUCKET)?;
            match *method {
                Method::GET if req.has("location") => Op::GetBucketLocation,
                Method::GET if req.has("acl") => Op::GetBucketAcl,
                Method::GET if req.has("versioning") => Op::GetBucketVersioning,
                Method::GET if req.has("versions") => Op::ListObjectVersions,
                Method::GET if req.has("tagging") => Op::GetBucketTagging,
                Method::GET if req.has("policy") => Op::GetBucketPolicy,
                Method::GET if req.has("cors") => Op::GetBucketCors,
                Method::GET if req.has("lifecycle") => Op::GetBucketLifecycle,
                Method::GET if req.has("uploads") => Op::ListMultipartUploads,
                Method::GET if req.q("list-type") == Some("2") => Op::ListObjectsV2,
                Method::GET => Op::ListObjects,
                Method::HEAD => Op::HeadBucket,
                Method::PUT if req.has("versioning") => Op::PutBucketVersioning,
                Method::PUT if req.has("acl") => Op::PutBucketAcl,
                Method::PUT if req.has("tagging") => Op::PutBucketTagging,
                Method::PUT if req.has("policy") => Op::PutBucketPolicy,
                Method::PUT if req.has("cors") => Op::PutBucketCors,
                Method::PUT if req.has("lifecycle") => Op::PutBucketLifecycle,
                Method::PUT => Op::CreateBucket,
                Method::DELETE if req.has("tagging") => Op::DeleteBucketTagging,
                Method::DELETE if req.has("policy") => Op::DeleteBucketPolicy,
                Method::DELETE if req.has("cors") => Op::DeleteBucketCors,
                Method::DELETE if req.has("lifecycle") => Op::DeleteBucketLifecycle,
                Method::DELETE => Op::DeleteBucket,
                Method::POST if req.has("delete") => Op::DeleteObjects,
                Method::POST => Op::PostObject,
                _ => return Err(not_allowed()),
            }
        }
        (true, true) => {
            if *method == Method::POST && req.has("restore") && !req.has("select") {
                s3_wire::names::validate_key(req.key())?;
                return Ok(Op::RestoreObject);
            }
            unsupported(req, UNSUPPORTED_OBJECT)?;
            s3_wire::names::validate_key(req.key())?;
            let copy = req.parts.headers.contains_key("x-amz-copy-source");
            match *method {
                Method::GET if req.has("uploadId") => Op::ListParts,
                Method::GET if req.has("tagging") => Op::GetObjectTagging,
                Method::GET if req.has("acl") => Op::GetObjectAcl,
                Method::GET if req.has("attributes") => Op::GetObjectAttributes,
                Method::GET => Op::GetObject,
                Method::HEAD => Op::HeadObject,
                Method::PUT if req.has("tagging") => Op::PutObjectTagging,
                Method::PUT if req.has("acl") => Op::PutObjectAcl,
                Method::PUT if (req.has("uploadId") || req.has("partNumber")) && copy => {
                    Op::UploadPartCopy
                }
                Method::PUT if req.has("uploadId") || req.has("partNumber") => Op::UploadPart,
                Method::PUT if copy => Op::CopyObject,
                Method::PUT => Op::PutObject,
                Method::POST if req.has("uploads") => Op::CreateMultipartUpload,
                Method::POST if req.has("uploadId") => Op::CompleteMultipartUpload,
                Method::DELETE if req.has("tagging") => Op::DeleteObjectTagging,
                Method::DELETE if req.has("uploadId") => Op::AbortMultipartUpload,
                Method::DELETE => Op::DeleteObject,
                _ => return Err(not_allowed()),
            }
        }
    })
}

impl Op {
    /// The IAM action a policy must allow, or `None` when the operation
    /// checks its own accesses (per key, or by a signed POST policy).
    pub(crate) fn action(self, versioned: bool) -> Option<&'static str> {
        use Op::*;
        let v = |plain, version| if versioned { version } else { plain };
        Some(match self {
            ListBuckets => "s3:ListAllMyBuckets",
            GetBucketLocation => "s3:GetBucketLocation",
            GetBucketAcl => "s3:GetBucketAcl",
            PutBucketAcl => "s3:PutBucketAcl",
            GetObjectAcl => v("s3:GetObjectAcl", "s3:GetObjectVersionAcl"),
            PutObjectAcl => v("s3:PutObjectAcl", "s3:PutObjectVersionAcl"),
            GetBucketVersioning => "s3:GetBucketVersioning",
            PutBucketVersioning => "s3:PutBucketVersioning",
            ListObjectVersions => "s3:ListBucketVersions",
            GetBucketTagging => "s3:GetBucketTagging",
            PutBucketTagging | DeleteBucketTagging => "s3:PutBucketTagging",
            GetBucketPolicy => "s3:GetBucketPolicy",
            PutBucketPolicy => "s3:PutBucketPolicy",
            DeleteBucketPolicy => "s3:DeleteBucketPolicy",
            GetBucketCors => "s3:GetBucketCORS",
            PutBucketCors | DeleteBucketCors => "s3:PutBucketCORS",
            GetBucketLifecycle => "s3:GetLifecycleConfiguration",
            PutBucketLifecycle | DeleteBucketLifecycle => "s3:PutLifecycleConfiguration",
            ListMultipartUploads => "s3:ListBucketMultipartUploads",
            ListObjectsV2 | ListObjects | HeadBucket => "s3:ListBucket",
            CreateBucket => "s3:CreateBucket",
            DeleteBucket => "s3:DeleteBucket",
            DeleteObjects | PostObject => return None,
            ListParts => "s3:ListMultipartUploadParts",
            GetObjectTagging => v("s3:GetObjectTagging", "s3:GetObjectVersionTagging"),
            GetObjectAttributes => v("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"),
            GetObject | HeadObject => v("s3:GetObject", "s3:GetObjectVersion"),
            PutObjectTagging => v("s3:PutObjectTagging", "s3:PutObjectVersionTagging"),
            DeleteObjectTagging => v("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"),
            UploadPartCopy
            | UploadPart
            | CopyObject
            | PutObject
            | CreateMultipartUpload
            | CompleteMultipartUpload => "s3:PutObject",
            AbortMultipartUpload => "s3:AbortMultipartUpload",
            RestoreObject => "s3:RestoreObject",
            DeleteObject => v("s3:DeleteObject", "s3:DeleteObjectVersion"),
        })
    }
}

/// The policy context of a request (client address, TLS, list parameters).
pub(crate) fn condition_values(req: &S3Request) -> ConditionValues {
    let header = |n: &str| req.header(n).map(str::to_string);
    ConditionValues {
        source_ip: req.client.map(|a| a.ip()),
        secure: req.secure,
        prefix: req.q("prefix").map(str::to_string),
        delimiter: req.q("delimiter").map(str::to_string),
        max_keys: req.q("max-keys").map(str::to_string),
        now: Some(time::OffsetDateTime::now_utc()),
        referer: header("referer"),
        user_agent: header("user-agent"),
        tls_version: req.tls_version,
        signature_version: req.auth.signing.version(),
        auth_type: req.auth.signing.auth_type(),
        content_sha256: header("x-amz-content-sha256"),
        existing_tags: None,
        // A malformed header is refused by the operation itself.
        request_tags: req
            .header("x-amz-tagging")
            .and_then(|t| s3_wire::tags::parse_header(t).ok()),
        version_id: req.q("versionId").map(str::to_string),
        copy_source: header("x-amz-copy-source"),
        metadata_directive: header("x-amz-metadata-directive"),
        storage_class: header("x-amz-storage-class"),
        if_match: header("if-match"),
    }
}

/// Checks that the request's principal may perform `action` on `bucket`
/// (and `key`), under the bucket's policy and the principal's own.
pub(crate) async fn check(
    gw: &Gateway,
    req: &S3Request,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> S3Result<()> {
    check_as(
        gw,
        req,
        &req.principal,
        || condition_values(req),
        action,
        bucket,
        key,
    )
    .await
}

/// [`check`] for an explicit principal (a POST policy's signer) and
/// condition values, built only for a principal policies apply to.
pub(crate) async fn check_as(
    gw: &Gateway,
    req: &S3Request,
    principal: &Principal,
    values: impl FnOnce() -> ConditionValues,
    action: &str,
    bucket: &str,
    key: Option<&str>,
) -> S3Result<()> {
    if matches!(principal, Principal::Root) {
        return Ok(());
    }
    let bucket_policy = match gw.store.bucket(bucket).await {
        Ok(b) => b
            .config
            .get(self::policy::BUCKET_POLICY)
            .map(|doc| gw.identities.bucket_policy(bucket, doc))
            .transpose()?,
        Err(placement::Error::NoSuchBucket { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let resource = match key {
        Some(k) => format!("arn:aws:s3:::{bucket}/{k}"),
        None => format!("arn:aws:s3:::{bucket}"),
    };
    let user_policy = match principal {
        Principal::User(u) => u.policy.as_ref(),
        _ => None,
    };
    let wants_tags = [bucket_policy.as_deref(), user_policy]
        .into_iter()
        .flatten()
        .any(|p| p.wants_existing_tags());
    let mut values = values();
    if let (true, Some(k)) = (wants_tags, key) {
        // A missing object (or a delete marker) has no tags to match.
        values.existing_tags = get::requested_object(gw, req, k).await.ok().map(|o| o.tags);
    }
    iam::authorize(
        principal,
        bucket_policy.as_deref(),
        action,
        &resource,
        &values,
    )
}

/// Routes, authorises and runs a request.
pub(crate) async fn dispatch(gw: &Gateway, req: S3Request, body: Body) -> S3Result<Response<Body>> {
    let op = route(&req)?;
    req.progress.set_api(op.name());
    model_headers::check(gw, &req)?;
    if let Some(action) = op.action(req.has("versionId")) {
        if op == Op::ListBuckets {
            if !matches!(req.principal, Principal::Root) {
                iam::authorize(
                    &req.principal,
                    None,
                    action,
                    "arn:aws:s3:::*",
                    &condition_values(&req),
                )?;
            }
        } else {
            check(gw, &req, action, req.bucket(), req.key.as_deref()).await?;
        }
    }
    execute(op, gw, &req, body).await
}

async fn execute(op: Op, gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    use Op::*;
    match op {
        ListBuckets => bucket::list_buckets(gw, req).await,
        GetBucketLocation => bucket::location(gw, req).await,
        GetBucketAcl => acl::get_bucket(gw, req).await,
        GetObjectAcl => acl::get_object(gw, req).await,
        PutBucketAcl | PutObjectAcl => acl::put(gw, req, body).await,
        GetBucketVersioning => versioning::get(gw, req).await,
        PutBucketVersioning => versioning::put(gw, req, body).await,
        ListObjectVersions => versioning::list(gw, req).await,
        GetBucketTagging => tagging::get_bucket(gw, req).await,
        PutBucketTagging => tagging::put_bucket(gw, req, body).await,
        DeleteBucketTagging => tagging::delete_bucket(gw, req).await,
        GetBucketPolicy => policy::get(gw, req).await,
        PutBucketPolicy => policy::put(gw, req, body).await,
        DeleteBucketPolicy => policy::delete(gw, req).await,
        GetBucketCors => cors::get(gw, req).await,
        PutBucketCors => cors::put(gw, req, body).await,
        DeleteBucketCors => cors::delete(gw, req).await,
        GetBucketLifecycle => lifecycle::get(gw, req).await,
        PutBucketLifecycle => lifecycle::put(gw, req, body).await,
        DeleteBucketLifecycle => lifecycle::delete(gw, req).await,
        ListMultipartUploads => multipart::list_uploads(gw, req).await,
        ListObjectsV2 => list::list_v2(gw, req).await,
        ListObjects => list::list_v1(gw, req).await,
        HeadBucket => bucket::head(gw, req).await,
        CreateBucket => bucket::create(gw, req, body).await,
        DeleteBucket => bucket::delete(gw, req).await,
        DeleteObjects => delete::delete_objects(gw, req, body).await,
        PostObject => post_object::post(gw, req, body).await,
        ListParts => multipart::list_parts(gw, req).await,
        GetObjectTagging => tagging::get_object(gw, req).await,
        GetObjectAttributes => attributes::get(gw, req).await,
        RestoreObject => restore::restore_object(gw, req, body).await,
        GetObject => get::get(gw, req, false).await,
        HeadObject => get::get(gw, req, true).await,
        PutObjectTagging => tagging::put_object(gw, req, body).await,
        UploadPartCopy => multipart::upload_part_copy(gw, req).await,
        UploadPart => multipart::upload_part(gw, req, body).await,
        CopyObject => copy::copy_object(gw, req).await,
        PutObject => put::put_object(gw, req, body).await,
        CreateMultipartUpload => multipart::create(gw, req).await,
        CompleteMultipartUpload => multipart::complete(gw, req, body).await,
        DeleteObjectTagging => tagging::delete_object(gw, req).await,
        AbortMultipartUpload => multipart::abort(gw, req).await,
        DeleteObject => delete::delete_object(gw, req).await,
    }
}

/// Maps the error of a conditional write's commit: a failed precondition
/// names the header that failed.
pub(crate) fn write_error(
    e: placement::Error,
    cond: &Option<placement::WriteCondition>,
) -> S3Error {
    match (e, cond) {
        (
            placement::Error::PreconditionFailed,
            Some(
                placement::WriteCondition::IfNoneMatch
                | placement::WriteCondition::IfNoneMatchEtag(_),
            ),
        ) => S3Error::PreconditionFailed("If-None-Match"),
        (placement::Error::PreconditionFailed, _) => S3Error::PreconditionFailed("If-Match"),
        (e, _) => e.into(),
    }
}
