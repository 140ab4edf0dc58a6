//! ListObjects (v1) and ListObjectsV2: prefix, delimiter roll-up, paging
//! by marker / start-after / continuation token, URL encoding.

use axum::body::Body;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use http::{Response, StatusCode};
use placement::{ListStart, ObjectRecord};

use super::{named, xml};
use crate::auth::sigv4::uri_encode;
use crate::error::{S3Error, S3Result};
use crate::headers::{iso8601, quoted, STANDARD};
use crate::request::S3Request;
use crate::xml::{to_xml, CommonPrefix, Contents, ListBucketResultV1, ListBucketResultV2, NS};
use crate::Gateway;

/// Most keys one listing page returns.
pub const MAX_KEYS: usize = 1000;

struct ListParams {
    prefix: String,
    delimiter: Option<String>,
    max_keys: usize,
    after: Option<String>,
}

impl ListParams {
    /// Prefix, delimiter and max-keys of the request; `after` is where the
    /// listing resumes (marker, start-after or continuation token).
    fn of(req: &S3Request, after: Option<String>) -> S3Result<ListParams> {
        Ok(ListParams {
            prefix: req.q("prefix").unwrap_or("").to_string(),
            delimiter: req
                .q("delimiter")
                .filter(|d| !d.is_empty())
                .map(str::to_string),
            max_keys: max_keys(req)?,
            after,
        })
    }
}

struct Listed {
    contents: Vec<(String, ObjectRecord)>,
    prefixes: Vec<String>,
    truncated: bool,
    last: Option<String>,
}

/// The smallest string greater than every string starting with `p`.
pub(crate) fn successor(p: &str) -> Option<Vec<u8>> {
    let mut b = p.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0xFF {
            b.push(last + 1);
            return Some(b);
        }
    }
    None
}

pub(crate) fn max_keys(req: &S3Request) -> S3Result<usize> {
    match req.q("max-keys") {
        None => Ok(MAX_KEYS),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(MAX_KEYS))
            .ok_or_else(|| {
                S3Error::InvalidArgument(
                    "Provided max-keys not an integer or within integer range".into(),
                    Some(("max-keys".into(), v.into())),
                )
            }),
    }
}

pub(crate) fn encoding_url(req: &S3Request) -> S3Result<bool> {
    match req.q("encoding-type") {
        None => Ok(false),
        Some(e) if e.eq_ignore_ascii_case("url") => Ok(true),
        Some(e) => Err(S3Error::InvalidArgument(
            "Invalid Encoding Method specified in Request".into(),
            Some(("encoding-type".into(), e.into())),
        )),
    }
}

async fn list(gw: &Gateway, bucket: &str, p: &ListParams) -> S3Result<Listed> {
    let mut out = Listed {
        contents: Vec::new(),
        prefixes: Vec::new(),
        truncated: false,
        last: None,
    };
    let mut cursor = match &p.after {
        Some(a) if a.as_str() >= p.prefix.as_str() => ListStart::After(a.as_bytes().to_vec()),
        _ => ListStart::Beginning,
    };
    if p.max_keys == 0 {
        // Nothing asked for, nothing to page through.
        return Ok(out);
    }
    let delimiter = p.delimiter.as_deref().filter(|d| !d.is_empty());
    let mut count = 0;
    'pages: loop {
        let want = (p.max_keys - count + 1).clamp(1, MAX_KEYS);
        let page = gw
            .store
            .list_objects(bucket, &p.prefix, cursor.clone(), want)
            .await
            .map_err(|e| named(e, bucket, None))?;
        let mut reseek = None;
        for (key, rec) in page.entries {
            let rolled = delimiter.and_then(|d| {
                key[p.prefix.len()..]
                    .find(d)
                    .map(|i| key[..p.prefix.len() + i + d.len()].to_string())
            });
            if let Some(cp) = rolled {
                let seen = p.after.as_deref().is_some_and(|a| cp.as_str() <= a)
                    || out.prefixes.last() == Some(&cp);
                if !seen {
                    if count == p.max_keys {
                        out.truncated = true;
                        break 'pages;
                    }
                    out.prefixes.push(cp.clone());
                    out.last = Some(cp.clone());
                    count += 1;
                }
                reseek = Some(successor(&cp));
                break;
            }
            if count == p.max_keys {
                out.truncated = true;
                break 'pages;
            }
            out.last = Some(key.clone());
            out.contents.push((key, rec));
            count += 1;
        }
        match (reseek, page.next) {
            (Some(Some(s)), _) => cursor = ListStart::At(s),
            (Some(None), _) => break,
            (None, Some(n)) => cursor = ListStart::After(n.into_bytes()),
            (None, None) => break,
        }
    }
    Ok(out)
}

fn contents(
    gw: &Gateway,
    listed: Vec<(String, ObjectRecord)>,
    url: bool,
    owner: bool,
) -> Vec<Contents> {
    listed
        .into_iter()
        .map(|(key, rec)| Contents {
            key: enc(&key, url),
            last_modified: iso8601(rec.mtime_ns),
            etag: quoted(&rec.meta.etag),
            checksum_algorithm: rec.meta.checksum.as_ref().map(|c| c.algorithm.clone()),
            checksum_type: rec.meta.checksum.as_ref().map(|c| c.kind.clone()),
            size: rec.size,
            owner: owner.then(|| gw.owner.clone()),
            storage_class: rec
                .meta
                .storage_class
                .clone()
                .unwrap_or_else(|| STANDARD.into()),
        })
        .collect()
}

pub(crate) fn common_prefixes(prefixes: &[String], url: bool) -> Vec<CommonPrefix> {
    prefixes
        .iter()
        .map(|cp| CommonPrefix {
            prefix: enc(cp, url),
        })
        .collect()
}

pub(crate) fn enc(s: &str, url: bool) -> String {
    if url {
        uri_encode(s.as_bytes(), false)
    } else {
        s.to_string()
    }
}

/// ListObjectsV2.
pub async fn list_v2(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let url = encoding_url(req)?;
    let token = req.q("continuation-token").map(str::to_string);
    let after = match &token {
        Some(t) => Some(
            B64.decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    S3Error::InvalidArgument(
                        "The continuation token provided is incorrect".into(),
                        Some(("continuation-token".into(), t.clone())),
                    )
                })?,
        ),
        None => req
            .q("start-after")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    };
    let p = ListParams::of(req, after)?;
    let listed = list(gw, req.bucket(), &p).await?;
    let fetch_owner = req.q("fetch-owner").is_some_and(|v| v == "true");
    let doc = ListBucketResultV2 {
        xmlns: NS,
        name: req.bucket().to_string(),
        prefix: enc(&p.prefix, url),
        delimiter: p.delimiter.as_deref().map(|d| enc(d, url)),
        max_keys: p.max_keys,
        encoding_type: url.then(|| "url".to_string()),
        key_count: listed.contents.len() + listed.prefixes.len(),
        is_truncated: listed.truncated,
        continuation_token: token,
        next_continuation_token: listed
            .truncated
            .then(|| listed.last.as_ref().map(|l| B64.encode(l.as_bytes())))
            .flatten(),
        start_after: req
            .q("start-after")
            .filter(|s| !s.is_empty())
            .map(|s| enc(s, url)),
        common_prefixes: common_prefixes(&listed.prefixes, url),
        contents: contents(gw, listed.contents, url, fetch_owner),
    };
    Ok(xml(StatusCode::OK, to_xml("ListBucketResult", &doc)))
}

/// ListObjects (version 1).
pub async fn list_v1(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let url = encoding_url(req)?;
    let marker = req.q("marker").unwrap_or("").to_string();
    let p = ListParams::of(req, (!marker.is_empty()).then(|| marker.clone()))?;
    let listed = list(gw, req.bucket(), &p).await?;
    let doc = ListBucketResultV1 {
        xmlns: NS,
        name: req.bucket().to_string(),
        prefix: enc(&p.prefix, url),
        marker: enc(&marker, url),
        next_marker: (listed.truncated && p.delimiter.is_some())
            .then(|| listed.last.as_deref().map(|l| enc(l, url)))
            .flatten(),
        max_keys: p.max_keys,
        delimiter: p.delimiter.as_deref().map(|d| enc(d, url)),
        is_truncated: listed.truncated,
        encoding_type: url.then(|| "url".to_string()),
        common_prefixes: common_prefixes(&listed.prefixes, url),
        contents: contents(gw, listed.contents, url, true),
    };
    Ok(xml(StatusCode::OK, to_xml("ListBucketResult", &doc)))
}
