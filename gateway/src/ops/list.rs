//! ListObjects (v1) and ListObjectsV2: prefix, delimiter roll-up, paging
//! by marker / start-after / continuation token, URL encoding.

use std::borrow::Cow;

use axum::body::Body;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use http::{Response, StatusCode};
use placement::{ListStart, ObjectPage};

use super::list_xml::{ContentsEntry, ListingXml};
use super::reply::xml;
use crate::headers::STANDARD;
use crate::request::S3Request;
use crate::Gateway;
use s3_wire::auth::sigv4::uri_encode;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::CommonPrefix;

/// Most keys one listing page returns.
pub const MAX_KEYS: usize = 1000;
/// Keys fetched after jumping past a common prefix.
const SKIP_PAGE_KEYS: usize = 64;

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
    /// The store's pages the contents come from.
    pages: Vec<ObjectPage>,
    /// The keys listed: page and key on it.
    contents: Vec<(usize, usize)>,
    prefixes: Vec<String>,
    truncated: bool,
    /// Whether the last entry listed is a common prefix (else a key).
    last_is_prefix: bool,
}

impl Listed {
    /// The last entry listed, where the next page continues.
    fn last(&self) -> Option<&str> {
        match self.last_is_prefix {
            true => self.prefixes.last().map(String::as_str),
            false => self.contents.last().map(|&(p, i)| self.pages[p].name(i)),
        }
    }
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
        pages: Vec::new(),
        contents: Vec::new(),
        prefixes: Vec::new(),
        truncated: false,
        last_is_prefix: false,
    };
    let mut cursor = first_page(&p.prefix, p.after.as_deref(), p.max_keys).0;
    if p.max_keys == 0 {
        // Nothing asked for, nothing to page through.
        return Ok(out);
    }
    let delimiter = p.delimiter.as_deref().filter(|d| !d.is_empty());
    let mut count = 0;
    // After skipping past the rest of a common prefix, the next page is
    // fetched short: a "directory" of many keys then costs one short page
    // rather than a full one.
    let mut short = false;
    'pages: loop {
        let room = (p.max_keys - count + 1).clamp(1, MAX_KEYS + 1);
        let want = if short {
            room.min(SKIP_PAGE_KEYS)
        } else {
            room
        };
        let page = gw
            .store
            .list_object_page(bucket, &p.prefix, cursor.clone(), want)
            .await?;
        let next = page.next.clone();
        out.pages.push(page);
        let n = out.pages.len() - 1;
        let page = &out.pages[n];
        // The common prefix whose keys are being skipped.
        let mut open: Option<String> = None;
        for i in 0..page.len() {
            let key = page.name(i);
            if open.as_deref().is_some_and(|cp| key.starts_with(cp)) {
                continue;
            }
            open = None;
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
                    out.last_is_prefix = true;
                    count += 1;
                }
                open = Some(cp);
                continue;
            }
            if count == p.max_keys {
                out.truncated = true;
                break 'pages;
            }
            out.last_is_prefix = false;
            out.contents.push((n, i));
            count += 1;
        }
        short = open.is_some();
        match (open, next) {
            // The page ended inside a common prefix: jump past all of it.
            (Some(cp), Some(_)) => match successor(&cp) {
                Some(s) => cursor = ListStart::At(s),
                None => break,
            },
            (_, Some(n)) => cursor = ListStart::After(n.into_bytes()),
            (_, None) => break,
        }
    }
    if let (true, Some(last)) = (out.truncated, out.last()) {
        // The client's next request continues after the last entry: its
        // first page is read while this one is written out (and, where no
        // key rolled up into a common prefix, the pages after it while the
        // client keeps up: each starts after the last key of the one before).
        let (start, want) = first_page(&p.prefix, Some(last), p.max_keys);
        let paging = out.prefixes.is_empty().then_some(p.max_keys);
        gw.store.read_ahead(bucket, &p.prefix, start, want, paging);
    }
    Ok(out)
}

/// Where a listing request continuing after `after` starts, and how many
/// keys its first page asks for (one more than the request's `max_keys`,
/// to tell whether the listing is truncated).
fn first_page(prefix: &str, after: Option<&str>, max_keys: usize) -> (ListStart, usize) {
    let start = match after {
        Some(a) if a >= prefix => ListStart::After(a.as_bytes().to_vec()),
        _ => ListStart::Beginning,
    };
    (start, (max_keys + 1).clamp(1, MAX_KEYS + 1))
}

/// Whether the request asks for the listed objects' restore status
/// (`x-amz-optional-object-attributes: RestoreStatus`, its one value).
pub(crate) fn restore_status_asked(req: &S3Request) -> S3Result<bool> {
    match req.header("x-amz-optional-object-attributes") {
        None => Ok(false),
        Some(v) if v.split(',').all(|a| a.trim() == "RestoreStatus") => Ok(true),
        Some(v) => Err(S3Error::InvalidArgument(
            "Invalid attribute name specified".into(),
            Some(("x-amz-optional-object-attributes".into(), v.into())),
        )),
    }
}

/// The restore expiry of each listed object of an archive class, by
/// position in `listed.contents` (read from its record: listings do not
/// carry it), when `asked`.
async fn restore_expiries(
    gw: &Gateway,
    bucket: &str,
    listed: &Listed,
    asked: bool,
) -> S3Result<Vec<Option<u64>>> {
    let mut out = vec![None; listed.contents.len()];
    if !asked {
        return Ok(out);
    }
    for (n, &(p, i)) in listed.contents.iter().enumerate() {
        let (key, v) = listed.pages[p].get(i);
        out[n] = super::restore::listed_restore_expiry(
            gw,
            bucket,
            key,
            v.storage_class.as_deref(),
            None,
        )
        .await?;
    }
    Ok(out)
}

/// Writes the listed objects and common prefixes into `doc`.
fn render(
    gw: &Gateway,
    doc: &mut ListingXml,
    listed: &Listed,
    (url, owner): (bool, bool),
    restores: &[Option<u64>],
) {
    for (n, &(p, i)) in listed.contents.iter().enumerate() {
        let (key, v) = listed.pages[p].get(i);
        let key = enc(key, url);
        doc.contents(
            &ContentsEntry {
                key: &key,
                mtime_ns: v.mtime_ns,
                etag: &v.etag,
                checksum: v.checksum.as_ref().map(|(a, _, k)| (&a[..], &k[..])),
                size: v.size,
                storage_class: v.storage_class.as_deref().unwrap_or(STANDARD),
                restore_expiry_ns: restores[n],
            },
            owner.then_some(&gw.owner),
        );
    }
    for cp in &listed.prefixes {
        doc.common_prefix(&enc(cp, url));
    }
}

pub(crate) fn common_prefixes(prefixes: &[String], url: bool) -> Vec<CommonPrefix> {
    prefixes
        .iter()
        .map(|cp| CommonPrefix {
            prefix: enc(cp, url).into_owned(),
        })
        .collect()
}

/// `s` as a listing shows it: URL-encoded when the request asked for it,
/// else as it is (borrowed: listings write a key per entry).
pub(crate) fn enc(s: &str, url: bool) -> Cow<'_, str> {
    match url {
        true => Cow::Owned(uri_encode(s.as_bytes(), false)),
        false => Cow::Borrowed(s),
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
    let asked = restore_status_asked(req)?;
    let listed = list(gw, req.bucket(), &p).await?;
    let restores = restore_expiries(gw, req.bucket(), &listed, asked).await?;
    let fetch_owner = req.q("fetch-owner").is_some_and(|v| v == "true");
    let next_token = listed
        .truncated
        .then(|| listed.last().map(|l| B64.encode(l.as_bytes())))
        .flatten();
    let mut doc = ListingXml::new(listed.contents.len() + listed.prefixes.len());
    doc.text("Name", req.bucket())
        .text("Prefix", &enc(&p.prefix, url))
        .opt(
            "Delimiter",
            p.delimiter.as_deref().map(|d| enc(d, url)).as_deref(),
        )
        .value("MaxKeys", p.max_keys)
        .opt("EncodingType", url.then_some("url"))
        .value("KeyCount", listed.contents.len() + listed.prefixes.len())
        .value("IsTruncated", listed.truncated)
        .opt("ContinuationToken", token.as_deref())
        .opt("NextContinuationToken", next_token.as_deref())
        .opt(
            "StartAfter",
            req.q("start-after")
                .filter(|s| !s.is_empty())
                .map(|s| enc(s, url))
                .as_deref(),
        );
    render(gw, &mut doc, &listed, (url, fetch_owner), &restores);
    Ok(xml(StatusCode::OK, doc.finish()))
}

/// ListObjects (version 1).
pub async fn list_v1(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    let url = encoding_url(req)?;
    let marker = req.q("marker").unwrap_or("").to_string();
    let p = ListParams::of(req, (!marker.is_empty()).then(|| marker.clone()))?;
    let asked = restore_status_asked(req)?;
    let listed = list(gw, req.bucket(), &p).await?;
    let restores = restore_expiries(gw, req.bucket(), &listed, asked).await?;
    let next_marker = (listed.truncated && p.delimiter.is_some())
        .then(|| listed.last().map(|l| enc(l, url)))
        .flatten();
    let mut doc = ListingXml::new(listed.contents.len() + listed.prefixes.len());
    doc.text("Name", req.bucket())
        .text("Prefix", &enc(&p.prefix, url))
        .text("Marker", &enc(&marker, url))
        .opt("NextMarker", next_marker.as_deref())
        .value("MaxKeys", p.max_keys)
        .opt(
            "Delimiter",
            p.delimiter.as_deref().map(|d| enc(d, url)).as_deref(),
        )
        .value("IsTruncated", listed.truncated)
        .opt("EncodingType", url.then_some("url"));
    render(gw, &mut doc, &listed, (url, true), &restores);
    Ok(xml(StatusCode::OK, doc.finish()))
}
