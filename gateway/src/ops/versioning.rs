//! Bucket versioning: Put/GetBucketVersioning and ListObjectVersions.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html>)

use axum::body::Body;
use http::{Response, StatusCode};
use placement::{ListStart, ObjectSummary, Versioning};

use super::document::read_document;
use super::list::{common_prefixes, enc, encoding_url, max_keys, successor};
use super::reply::{empty, xml};
use crate::headers::{iso8601, quoted, STANDARD};
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::{
    from_xml, to_xml, DeleteMarkerEntry, ListVersionsResult, RestoreStatus, VersionEntry,
    VersionItem, VersioningStatus, NS,
};

/// Largest VersioningConfiguration document accepted.
const MAX_CONFIG_BYTES: u64 = 64 << 10;

/// GetBucketVersioning: no Status until versioning was first enabled.
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let b = gw.store.bucket(req.bucket()).await?;
    let status = match b.versioning {
        Versioning::Unversioned => None,
        Versioning::Enabled => Some("Enabled".to_string()),
        Versioning::Suspended => Some("Suspended".to_string()),
    };
    let doc = VersioningStatus {
        xmlns: NS,
        status,
        mfa_delete: None,
    };
    Ok(xml(StatusCode::OK, to_xml("VersioningConfiguration", &doc)))
}

/// PutBucketVersioning: Enabled or Suspended (MFA delete is not supported).
pub async fn put(gw: &Gateway, req: &S3Request, body: Body) -> S3Result<Response<Body>> {
    let doc = read_document(gw, req, body, MAX_CONFIG_BYTES).await?;
    let cfg: VersioningStatus = from_xml(&doc)?;
    if cfg.mfa_delete.as_deref() == Some("Enabled") {
        return Err(S3Error::NotImplemented(
            "MFA delete is not supported".into(),
        ));
    }
    let state = match cfg.status.as_deref() {
        Some("Enabled") => Versioning::Enabled,
        Some("Suspended") => Versioning::Suspended,
        _ => {
            return Err(S3Error::MalformedXml(
                "The XML you provided was not well-formed or did not validate against our published schema (Status must be Enabled or Suspended)".into(),
            ))
        }
    };
    gw.store
        .update_bucket(req.bucket(), |b| {
            b.versioning = state;
            Ok(())
        })
        .await?;
    Ok(empty(StatusCode::OK))
}

fn item(gw: &Gateway, key: &str, v: &ObjectSummary, is_latest: bool, url: bool) -> VersionItem {
    let (key, version_id, last_modified) = (
        enc(key, url).into_owned(),
        versions::of_listed(v),
        iso8601(v.mtime_ns),
    );
    if v.delete_marker {
        VersionItem::DeleteMarker(DeleteMarkerEntry {
            key,
            version_id,
            is_latest,
            last_modified,
            owner: gw.owner.clone(),
        })
    } else {
        VersionItem::Version(VersionEntry {
            key,
            version_id,
            is_latest,
            last_modified,
            etag: quoted(&v.meta.etag),
            size: v.size,
            owner: gw.owner.clone(),
            storage_class: v
                .meta
                .storage_class
                .clone()
                .unwrap_or_else(|| STANDARD.into()),
            restore_status: None,
        })
    }
}

/// The restore status of an archived version; `None` for other classes.
async fn restore_status(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    v: &ObjectSummary,
) -> S3Result<Option<RestoreStatus>> {
    let version = placement::VersionRef::of_id(v.version_id);
    let expiry = super::restore::listed_restore_expiry(
        gw,
        bucket,
        key,
        v.meta.storage_class.as_deref(),
        Some(version),
    )
    .await?;
    Ok(expiry.map(|t| RestoreStatus {
        in_progress: false,
        expiry: iso8601(t),
    }))
}

/// ListObjectVersions: every version and delete marker, keys in order and
/// each key's versions newest first, with key/version-id markers.
pub async fn list(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let restore_asked = super::list::restore_status_asked(req)?;
    let url = encoding_url(req)?;
    let prefix = req.q("prefix").unwrap_or("").to_string();
    let delimiter = req
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let max = max_keys(req)?;
    let key_marker = req.q("key-marker").unwrap_or("").to_string();
    let version_marker = req.q("version-id-marker").unwrap_or("").to_string();
    if !version_marker.is_empty() {
        if key_marker.is_empty() {
            return Err(S3Error::InvalidArgument(
                "A version-id marker cannot be specified without a key marker.".into(),
                Some(("version-id-marker".into(), version_marker)),
            ));
        }
        versions::parse(&version_marker)?;
    }
    let mut cursor = match (key_marker.is_empty(), version_marker.is_empty()) {
        (true, _) => ListStart::Beginning,
        (false, true) => ListStart::After(key_marker.clone().into_bytes()),
        (false, false) => ListStart::At(key_marker.clone().into_bytes()),
    };
    let mut items = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut last: Option<(String, Option<String>)> = None;
    let mut count = 0;
    'pages: loop {
        if max == 0 {
            break;
        }
        let page = gw
            .store
            .list_versions(
                req.bucket(),
                &prefix,
                cursor.clone(),
                (max - count + 1).clamp(1, 1000),
            )
            .await?;
        let mut reseek = None;
        for (key, versions_of_key) in &page.entries {
            if let Some(d) = delimiter.as_deref() {
                if let Some(i) = key[prefix.len()..].find(d) {
                    let cp = key[..prefix.len() + i + d.len()].to_string();
                    if cp.as_str() > key_marker.as_str() && prefixes.last() != Some(&cp) {
                        if count == max {
                            truncated = true;
                            break 'pages;
                        }
                        last = Some((cp.clone(), None));
                        prefixes.push(cp.clone());
                        count += 1;
                    }
                    reseek = Some(successor(&cp));
                    break;
                }
            }
            // Resuming inside the marker key: skip versions up to the marker.
            let mut skip = *key == key_marker && !version_marker.is_empty();
            for (i, v) in versions_of_key.iter().enumerate() {
                if skip {
                    skip = versions::of_listed(v) != version_marker;
                    continue;
                }
                if count == max {
                    truncated = true;
                    break 'pages;
                }
                let mut entry = item(gw, key, v, i == 0, url);
                if let (true, VersionItem::Version(e)) = (restore_asked, &mut entry) {
                    e.restore_status = restore_status(gw, req.bucket(), key, v).await?;
                }
                items.push(entry);
                last = Some((key.clone(), Some(versions::of_listed(v))));
                count += 1;
            }
        }
        match (reseek, page.next) {
            (Some(Some(s)), _) => cursor = ListStart::At(s),
            (Some(None), _) => break,
            (None, Some(n)) => cursor = ListStart::After(n.into_bytes()),
            (None, None) => break,
        }
    }
    let doc = ListVersionsResult {
        xmlns: NS,
        name: req.bucket().into(),
        prefix: enc(&prefix, url).into_owned(),
        key_marker: enc(&key_marker, url).into_owned(),
        version_id_marker: version_marker,
        next_key_marker: truncated
            .then(|| last.as_ref().map(|(k, _)| enc(k, url).into_owned()))
            .flatten(),
        next_version_id_marker: truncated
            .then(|| last.as_ref().and_then(|(_, v)| v.clone()))
            .flatten(),
        max_keys: max,
        delimiter: delimiter.as_deref().map(|d| enc(d, url).into_owned()),
        is_truncated: truncated,
        encoding_type: url.then(|| "url".to_string()),
        items,
        common_prefixes: common_prefixes(&prefixes, url),
    };
    Ok(xml(StatusCode::OK, to_xml("ListVersionsResult", &doc)))
}
