//! S3 operations, one family per file, and the dispatcher that picks one
//! from method, target and query.

mod acl;
mod attributes;
mod authorize;
mod bucket;
mod copy;
pub(crate) mod cors;
mod delete;
mod document;
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
mod reply;
mod restore;
mod tagging;
mod versioning;

use axum::body::Body;
use http::{Method, Response};

use crate::iam::{self, Principal};
use crate::request::S3Request;
use crate::Gateway;
use authorize::{check, condition_values};
use s3_wire::error::{S3Error, S3Result};

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
