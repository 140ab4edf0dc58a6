//! DeleteObject and DeleteObjects, with versions and delete markers.

use axum::body::Body;
use http::{Response, StatusCode};
use placement::{DeleteItem, DeleteOutcome, VersionRef};

use super::document::read_document;
use super::reply::xml;
use crate::conditions::{delete_condition, entry_condition, reads_etag};
use crate::headers::now_ns;
use crate::progress::Phase;
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::names::validate_key;
use s3_wire::xml::{from_xml, to_xml, Delete, DeleteError, DeleteResult, DeletedEntry, NS};

/// Most keys one DeleteObjects request may name.
const MAX_DELETE_KEYS: usize = 1000;
/// Largest DeleteObjects document accepted (1,000 keys of 1 KiB plus markup).
const MAX_DELETE_BYTES: u64 = 2 << 20;

/// DeleteObject: 204 whether or not the key existed. With `versionId`,
/// removes that version; otherwise may create a delete marker. With
/// `If-Match` (and the size and time conditions) only if the version it
/// removes or hides matches: 412 if not, 404 if there is none.
pub async fn delete_object(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let version = versions::requested(req)?;
    let condition = delete_condition(&req.parts.headers, now_ns())?;
    if reads_etag(&condition) {
        read_right(gw, req, req.key(), version.is_some()).await?;
    }
    req.progress.enter(Phase::Commit);
    let item = DeleteItem {
        key: req.key().to_string(),
        version,
        condition,
    };
    let out = gw.store.delete_object_if(req.bucket(), item).await?;
    let mut resp = Response::builder().status(StatusCode::NO_CONTENT);
    if let Some(v) = out.version {
        resp = resp.header("x-amz-version-id", versions::format(v));
    }
    if out.delete_marker {
        resp = resp.header("x-amz-delete-marker", "true");
    }
    Ok(resp.body(Body::empty()).expect("valid response"))
}

/// A delete conditional on an entity tag needs the right to read the
/// object too (as S3 asks for s3:GetObject beside s3:DeleteObject).
async fn read_right(gw: &Gateway, req: &S3Request, key: &str, version: bool) -> S3Result<()> {
    let action = match version {
        true => "s3:GetObjectVersion",
        false => "s3:GetObject",
    };
    super::authorize::check(gw, req, action, req.bucket(), Some(key)).await
}

fn deleted_entry(key: String, asked: Option<VersionRef>, out: DeleteOutcome) -> DeletedEntry {
    let marker_id = out
        .delete_marker
        .then(|| out.version.map(versions::format))
        .flatten();
    DeletedEntry {
        key,
        version_id: asked.map(versions::format),
        delete_marker: out.delete_marker.then_some(true),
        delete_marker_version_id: marker_id,
    }
}

/// DeleteObjects: up to 1,000 keys (optionally with versions); each gets a
/// Deleted or an Error entry.
pub async fn delete_objects(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let has_digest = req.header("content-md5").is_some()
        || crate::checksum::ALL
            .iter()
            .any(|a| req.header(a.header()).is_some());
    if !has_digest {
        return Err(S3Error::InvalidRequest(
            "Missing required header for this request: Content-MD5".into(),
        ));
    }
    let doc = read_document(gw, req, body, MAX_DELETE_BYTES).await?;
    let parsed: Delete = from_xml(&doc)?;
    if parsed.objects.is_empty() || parsed.objects.len() > MAX_DELETE_KEYS {
        return Err(S3Error::MalformedXml(format!(
            "The XML you provided was not well-formed or did not validate against our published schema (between 1 and {MAX_DELETE_KEYS} keys)"
        )));
    }
    gw.store.bucket(req.bucket()).await?;
    let mut result = DeleteResult {
        xmlns: NS,
        deleted: Vec::new(),
        errors: Vec::new(),
    };
    // Each key is checked on its own; the allowed ones are deleted
    // together (one batch of record removals per disk).
    let since_ns = now_ns();
    let mut checked: Vec<(DeleteItem, S3Result<()>)> = Vec::new();
    for obj in parsed.objects {
        let entry = obj
            .version_id
            .as_deref()
            .map(versions::parse)
            .transpose()
            .and_then(|asked| {
                let condition = entry_condition(
                    obj.etag.as_deref(),
                    obj.size,
                    obj.last_modified_time.as_deref(),
                    since_ns,
                )?;
                Ok((asked, condition))
            });
        let (asked, condition) = match entry {
            Ok(v) => v,
            Err(e) => {
                checked.push((DeleteItem::new(obj.key, None), Err(e)));
                continue;
            }
        };
        let action = if asked.is_some() {
            "s3:DeleteObjectVersion"
        } else {
            "s3:DeleteObject"
        };
        let etag = reads_etag(&condition);
        let item = DeleteItem {
            key: obj.key,
            version: asked,
            condition,
        };
        let allowed = match validate_key(&item.key) {
            Err(e) => Err(e),
            Ok(()) => match super::authorize::check(gw, req, action, req.bucket(), Some(&item.key))
                .await
            {
                Ok(()) if etag => read_right(gw, req, &item.key, asked.is_some()).await,
                other => other,
            },
        };
        checked.push((item, allowed));
    }
    let wanted: Vec<DeleteItem> = checked
        .iter()
        .filter(|(_, allowed)| allowed.is_ok())
        .map(|(item, _)| item.clone())
        .collect();
    req.progress.enter(Phase::Commit);
    let mut outcomes = gw
        .store
        .delete_objects(req.bucket(), &wanted)
        .await?
        .into_iter();
    for (
        DeleteItem {
            key,
            version: asked,
            ..
        },
        allowed,
    ) in checked
    {
        let outcome = allowed.and_then(|()| {
            outcomes
                .next()
                .expect("one outcome per allowed key")
                .map_err(S3Error::from)
        });
        match outcome {
            Ok(_) if parsed.quiet => {}
            Ok(out) => result.deleted.push(deleted_entry(key, asked, out)),
            Err(e) => result.errors.push(DeleteError {
                key,
                code: e.code().to_string(),
                message: e.message(),
            }),
        }
    }
    Ok(xml(StatusCode::OK, to_xml("DeleteResult", &result)))
}
