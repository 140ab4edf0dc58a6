//! DeleteObject and DeleteObjects.

use axum::body::Body;
use http::{Response, StatusCode};

use super::{empty, named, xml};
use crate::body::read_small;
use crate::error::{S3Error, S3Result};
use crate::names::validate_key;
use crate::request::S3Request;
use crate::xml::{from_xml, to_xml, Delete, DeleteError, DeleteResult, DeletedEntry, NS};
use crate::Gateway;

/// Most keys one DeleteObjects request may name.
const MAX_DELETE_KEYS: usize = 1000;
/// Largest DeleteObjects document accepted (1,000 keys of 1 KiB plus markup).
const MAX_DELETE_BYTES: u64 = 2 << 20;

/// DeleteObject: 204 whether or not the key existed.
pub async fn delete_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    gw.store
        .delete_object(req.bucket(), req.key())
        .await
        .map_err(|e| named(e, req.bucket(), Some(req.key())))?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteObjects: up to 1,000 keys; each gets a Deleted or an Error entry.
pub async fn delete_objects(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let has_digest = req.header("content-md5").is_some()
        || crate::checksum::ALL
            .iter()
            .any(|a| req.header(a.header()).is_some())
        || req.header("x-amz-sdk-checksum-algorithm").is_some();
    if !has_digest {
        return Err(S3Error::InvalidRequest(
            "Missing required header for this request: Content-MD5".into(),
        ));
    }
    let integ = super::receive::integrity(req)?;
    let len = req.payload_length()?;
    let doc = read_small(
        body,
        req.auth.payload.clone(),
        len,
        MAX_DELETE_BYTES,
        gw.config.body_idle_timeout,
    )
    .await?;
    integ.verify_small(&doc)?;
    let parsed: Delete = from_xml(&doc)?;
    if parsed.objects.is_empty() || parsed.objects.len() > MAX_DELETE_KEYS {
        return Err(S3Error::MalformedXml(format!(
            "The XML you provided was not well-formed or did not validate against our published schema (between 1 and {MAX_DELETE_KEYS} keys)"
        )));
    }
    gw.store
        .bucket(req.bucket())
        .await
        .map_err(|e| named(e, req.bucket(), None))?;
    let mut result = DeleteResult {
        xmlns: NS,
        deleted: Vec::new(),
        errors: Vec::new(),
    };
    for obj in parsed.objects {
        let outcome = match (&obj.version_id, validate_key(&obj.key)) {
            (_, Err(e)) => Err(e),
            (Some(v), _) if v != "null" => Err(S3Error::NotImplemented(
                "Object versions are not supported yet".into(),
            )),
            _ => gw
                .store
                .delete_object(req.bucket(), &obj.key)
                .await
                .map_err(|e| named(e, req.bucket(), Some(&obj.key))),
        };
        match outcome {
            Ok(()) if parsed.quiet => {}
            Ok(()) => result.deleted.push(DeletedEntry { key: obj.key }),
            Err(e) => result.errors.push(DeleteError {
                key: obj.key,
                code: e.code().to_string(),
                message: e.message(),
            }),
        }
    }
    Ok(xml(StatusCode::OK, to_xml("DeleteResult", &result)))
}
