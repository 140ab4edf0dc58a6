//! ACLs, as far as a store without ACLs can answer them: every bucket and
//! object is private to its owner. Get{Bucket,Object}Acl report that;
//! Put{Bucket,Object}Acl accept exactly that (the `private` canned ACL, or
//! a policy granting only the owner FULL_CONTROL) and refuse any other
//! grant with 501 — access is granted with bucket and user policies.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAcl.html>)

use axum::body::Body;
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use super::document::read_document;
use super::get::requested_object;
use super::reply::{empty, xml};
use crate::headers::reject_unsupported;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::{from_xml, to_xml, Owner, NS};

/// Largest AccessControlPolicy document accepted.
const MAX_ACL_BYTES: u64 = 64 << 10;
const FULL_CONTROL: &str = "FULL_CONTROL";

#[derive(Serialize)]
struct AccessControlPolicy {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    #[serde(rename = "Owner")]
    owner: Owner,
    #[serde(rename = "AccessControlList")]
    list: AccessControlList,
}

#[derive(Serialize)]
struct AccessControlList {
    #[serde(rename = "Grant")]
    grants: Vec<Grant>,
}

#[derive(Serialize)]
struct Grant {
    #[serde(rename = "Grantee")]
    grantee: Grantee,
    #[serde(rename = "Permission")]
    permission: &'static str,
}

#[derive(Serialize)]
struct Grantee {
    #[serde(rename = "@xmlns:xsi")]
    xsi: &'static str,
    #[serde(rename = "@xsi:type")]
    kind: &'static str,
    #[serde(rename = "ID")]
    id: String,
    #[serde(rename = "DisplayName")]
    display_name: String,
}

/// The grants of a PutAcl document (only what decides acceptance).
#[derive(Deserialize)]
struct PolicyIn {
    #[serde(rename = "AccessControlList", default)]
    list: Option<ListIn>,
}

#[derive(Deserialize)]
struct ListIn {
    #[serde(rename = "Grant", default)]
    grants: Vec<GrantIn>,
}

#[derive(Deserialize)]
struct GrantIn {
    #[serde(rename = "Grantee")]
    grantee: GranteeIn,
    #[serde(rename = "Permission")]
    permission: String,
}

#[derive(Deserialize)]
struct GranteeIn {
    #[serde(rename = "ID", default)]
    id: Option<String>,
}

fn private(gw: &Gateway) -> String {
    let doc = AccessControlPolicy {
        xmlns: NS,
        owner: gw.owner.clone(),
        list: AccessControlList {
            grants: vec![Grant {
                grantee: Grantee {
                    xsi: "http://www.w3.org/2001/XMLSchema-instance",
                    kind: "CanonicalUser",
                    id: gw.owner.id.clone(),
                    display_name: gw.owner.display_name.clone(),
                },
                permission: FULL_CONTROL,
            }],
        },
    };
    to_xml("AccessControlPolicy", &doc)
}

fn not_private() -> S3Error {
    S3Error::NotImplemented(
        "Only the private ACL (the owner with FULL_CONTROL) is supported; grant access with a bucket policy".into(),
    )
}

/// GetBucketAcl.
pub async fn get_bucket(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store.bucket(req.bucket()).await?;
    Ok(xml(StatusCode::OK, private(gw)))
}

/// GetObjectAcl.
pub async fn get_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let obj = requested_object(gw, req, req.key()).await?;
    let mut resp = xml(StatusCode::OK, private(gw));
    if obj.version_id.is_some() {
        resp.headers_mut().insert(
            "x-amz-version-id",
            versions::of(&obj).parse().expect("ascii"),
        );
    }
    Ok(resp)
}

/// PutBucketAcl / PutObjectAcl: accepted only when they leave things
/// private.
pub async fn put(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    reject_unsupported(&req.parts.headers)?;
    let doc = read_document(gw, req, body, MAX_ACL_BYTES).await?;
    if !doc.is_empty() {
        let policy: PolicyIn = from_xml(&doc)?;
        let grants = policy.list.map(|l| l.grants).unwrap_or_default();
        if grants
            .iter()
            .any(|g| g.permission != FULL_CONTROL || g.grantee.id.as_deref() != Some(&gw.owner.id))
        {
            return Err(not_private());
        }
    } else if req.header("x-amz-acl").is_none() {
        return Err(S3Error::MalformedAclError);
    }
    match req.key.as_deref() {
        None => gw.store.bucket(req.bucket()).await.map(|_| ())?,
        Some(key) => {
            requested_object(gw, req, key).await?;
        }
    }
    Ok(empty(StatusCode::OK))
}
