//! Ordered listings merged across the disks of a set.
//!
//! Every disk lists its own keys; the pages are merged by key and each key
//! resolved exactly as a read would resolve it, so a listing shows what a
//! GET would return. A disk whose page ended early bounds how far the merged
//! page is complete.
//!
//! Listings of current objects read the disks' heads indexes (one small
//! entry per key with its versions' stamps and listing projections) and
//! fall back to the records for a page where the disks disagree. They read
//! only as many disks as it takes to see what a read sees
//! ([`heads_readers`]).

use std::ops::Range;
use std::sync::Arc;

use disk_engine::{
    Disk, DiskError, HeadPage, HeadVersion, ListStart, RecordListOptions, VersionId,
};
use futures::future::join_all;

use crate::agreement::Agreement;
use crate::current::Objects;
use crate::error::Error;
use crate::list_ahead::{AheadRequest, ListAhead};
use crate::projection;
use crate::set::{version_key, version_order, ErasureSet, Resolved, VersionBody};

/// One merged page: resolved keys in order, and where to continue.
pub(crate) struct ResolvedPage<T> {
    /// Keys with their visible versions (newest first); keys whose every
    /// version is invisible are left out.
    pub keys: Vec<(String, Vec<Resolved<T>>)>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

/// A key with every disk's item for it (or the disk's failure).
type Merged<K, I> = (K, Vec<Result<I, DiskError>>);

/// Merged keys, and the horizon up to which the merge is complete.
type MergedPage<K, I> = (Vec<Merged<K, I>>, Option<K>);

/// The rest of one disk's page during a merge.
type Cursor<K, I> = std::iter::Peekable<std::vec::IntoIter<(K, I)>>;

/// A key with every disk's records of it.
type MergedKey = Merged<Vec<u8>, Vec<disk_engine::Record>>;

/// One disk's page of items in key order, and whether more follow.
struct DiskPage<K, I> {
    items: Vec<(K, I)>,
    truncated: bool,
}

/// One page of current versions from the heads indexes.
pub(crate) struct CurrentPage {
    /// Keys in order with their newest version (keys whose newest version
    /// is a delete marker left out), from the first one of `range`.
    pub objects: Arc<Objects>,
    pub range: Range<usize>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

impl CurrentPage {
    fn of(objects: Objects, next: Option<Vec<u8>>) -> CurrentPage {
        CurrentPage {
            range: 0..objects.len(),
            objects: Arc::new(objects),
            next,
        }
    }
}

/// Puts in `agreed` the versions every answering disk's head holds for a
/// key, when they all hold the same writes (versions and stamps) and know
/// them all; false otherwise (a damaged head included: the records
/// decide). Heads of identical bytes (the normal case) are decoded once.
fn agreed_heads<'a>(
    per_disk: &[Result<&'a [u8], DiskError>],
    agreed: &mut Vec<HeadVersion<'a>>,
    other: &mut Vec<HeadVersion<'a>>,
) -> bool {
    let mut answers = per_disk.iter().flatten();
    let Some(&first) = answers.next() else {
        return false;
    };
    if !head_versions(first, agreed) {
        return false;
    }
    for &head in answers {
        if head == first {
            continue;
        }
        let same = head_versions(head, other)
            && other.len() == agreed.len()
            && other
                .iter()
                .zip(agreed.iter())
                .all(|(a, b)| a.version == b.version && a.stamp == b.stamp);
        if !same {
            return false;
        }
    }
    true
}

/// Puts the versions of a head in `out` (none for a key a disk does not
/// hold); false for a damaged or count-only head.
fn head_versions<'a>(head: &'a [u8], out: &mut Vec<HeadVersion<'a>>) -> bool {
    match head.is_empty() {
        true => {
            out.clear();
            true
        }
        false => disk_engine::head_versions(head, out).unwrap_or(false),
    }
}

/// A key of a heads listing, decoded.
fn listed_key(encoded: &[u8]) -> Result<Vec<u8>, Error> {
    disk_engine::decode_listed_key(encoded).ok_or_else(bad_listed_key)
}

fn bad_listed_key() -> Error {
    Error::Corrupt("a listed key is not a valid encoding".into())
}

/// The last key of `page` (decoded) when `more` keys follow it: where a
/// listing continues.
fn last_key_if(page: &HeadPage, more: bool) -> Result<Option<Vec<u8>>, Error> {
    match page.spans.len().checked_sub(1) {
        Some(last) if more => listed_key(page.entry(last).0).map(Some),
        _ => Ok(None),
    }
}

/// Appends the key `encoded` with its newest version among `versions` to
/// `objects`, unless it has none or that is a delete marker (`name` is
/// scratch space); false when a projection is damaged (the records
/// decide).
fn push_newest(
    objects: &mut Objects,
    name: &mut Vec<u8>,
    encoded: &[u8],
    versions: &[HeadVersion<'_>],
) -> Result<bool, Error> {
    let mut newest: Option<((u64, VersionId), bool, &[u8])> = None;
    for v in versions {
        let Ok((mtime_ns, id, delete_marker)) = projection::order_of(v.listing) else {
            return Ok(false);
        };
        let order = version_order(mtime_ns, version_key(id));
        if newest.is_none_or(|(o, _, _)| order > o) {
            newest = Some((order, delete_marker, v.listing));
        }
    }
    let Some((_, false, listing)) = newest else {
        return Ok(true);
    };
    let Ok(view) = projection::view(listing) else {
        return Ok(false);
    };
    name.clear();
    if !disk_engine::decode_listed_key_into(encoded, name) {
        return Err(bad_listed_key());
    }
    objects.push(name, &view);
    Ok(true)
}

/// The newest version of each merged key whose disks agree; `None` as soon
/// as one key cannot be decided from heads.
fn current_versions(merged: Vec<Merged<&[u8], &[u8]>>) -> Result<Option<Objects>, Error> {
    let mut objects = Objects::with_capacity(merged.len());
    let (mut versions, mut other, mut name) = (Vec::new(), Vec::new(), Vec::new());
    for (encoded, per_disk) in &merged {
        if !agreed_heads(per_disk, &mut versions, &mut other) {
            return Ok(None);
        }
        if !push_newest(&mut objects, &mut name, encoded, &versions)? {
            return Ok(None);
        }
    }
    Ok(Some(objects))
}

/// [`current_versions`] of pages that are byte for byte the same on every
/// disk that answered (the normal case): each head is decoded once, with
/// no merge.
fn current_versions_of(page: &HeadPage) -> Result<Option<Objects>, Error> {
    let mut objects = Objects::with_capacity(page.spans.len());
    let (mut versions, mut name) = (Vec::new(), Vec::new());
    for i in 0..page.spans.len() {
        let (encoded, head) = page.entry(i);
        if !head_versions(head, &mut versions) {
            return Ok(None);
        }
        if !push_newest(&mut objects, &mut name, encoded, &versions)? {
            return Ok(None);
        }
    }
    Ok(Some(objects))
}

/// Pages with at least this many keys are resolved on two threads.
const PARALLEL_RESOLVE_KEYS: usize = 256;

impl ErasureSet {
    /// Lists up to `max_keys` keys of `ns` under `prefix` from `start`.
    pub(crate) async fn list_resolved<T: VersionBody>(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
    ) -> Result<ResolvedPage<T>, Error> {
        let opts = list_options(prefix, start, max_keys);
        let pages = self
            .each_disk(|_, d| {
                let opts = opts.clone();
                async move { d.list_records(ns.as_bytes(), opts).await }
            })
            .await;
        let pages: Vec<_> = pages
            .into_iter()
            .map(|p| {
                p.map(|p| DiskPage {
                    items: p.keys.into_iter().map(|k| (k.key, k.records)).collect(),
                    truncated: p.truncated,
                })
            })
            .collect();
        self.require_read_quorum(&pages)?;
        let (mut merged, horizon) = merge_pages(pages, Vec::new);
        let last = merged.last().map(|(k, _)| k.clone());
        let keys = if merged.len() >= PARALLEL_RESOLVE_KEYS {
            let second = merged.split_off(merged.len() / 2);
            std::thread::scope(|s| {
                let other = s.spawn(|| self.resolve_listed::<T>(second));
                let mut keys = self.resolve_listed::<T>(merged);
                keys.extend(other.join().expect("listing resolution"));
                keys
            })
        } else {
            self.resolve_listed::<T>(merged)
        };
        let next = horizon.map(|h| last.unwrap_or(h));
        Ok(ResolvedPage { keys, next })
    }

    /// Lists up to `max_keys` keys of `ns` under `prefix` from `start` with
    /// their newest version (delete markers included) from the disks' heads
    /// indexes, which hold each key's versions, stamps and listing
    /// projections, without reading records. `None` when a key of the page
    /// cannot be decided from heads alone: the disks read hold different
    /// writes of it, or a head has no projection (a record from before
    /// heads existed) or too many versions; or too few disks could list
    /// heads. The caller then lists the page from the records
    /// ([`Self::list_resolved`]), which decides such keys as a read does and
    /// reports a missing quorum.
    pub(crate) async fn list_current(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
    ) -> Result<Option<CurrentPage>, Error> {
        let opts = list_options(prefix, start, max_keys);
        if let Some(ahead) = self.list_ahead() {
            if let Some(page) = ahead.take(ns, &opts).await {
                return Ok(Some(page));
            }
        }
        self.heads_source().current(ns, opts).await
    }

    /// Starts reading and deciding the page [`Self::list_current`] will be
    /// asked for next, and (for a client paging through `paging` keys at a
    /// time) the pages after it (see [`crate::list_ahead`]); nothing where
    /// the set is shared with other gateways.
    pub(crate) fn read_ahead(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
        paging: Option<usize>,
    ) {
        let Some(ahead) = self.list_ahead() else {
            return;
        };
        ahead.start(AheadRequest {
            source: self.heads_source(),
            ns: ns.to_string(),
            opts: list_options(prefix, start, max_keys),
            paging,
        });
    }

    /// The pages read ahead, where this process sees every write to the
    /// set (not when the set is shared with other gateways).
    fn list_ahead(&self) -> Option<&ListAhead> {
        (!self.locks.is_shared()).then_some(&self.list_ahead)
    }

    /// Where this set's heads pages are read from: one disk where this
    /// process sees every write to the set and its disks agree, otherwise
    /// [`heads_readers`] of them.
    fn heads_source(&self) -> HeadsSource {
        HeadsSource {
            disks: self.disks.clone(),
            need: heads_readers(self.width(), self.quorum.read),
            agreement: (!self.locks.is_shared()).then(|| self.agreement.clone()),
        }
    }

    /// Resolves merged keys; keys with no visible version are left out.
    fn resolve_listed<T: VersionBody>(
        &self,
        merged: Vec<MergedKey>,
    ) -> Vec<(String, Vec<Resolved<T>>)> {
        let mut keys = Vec::with_capacity(merged.len());
        for (key, per_disk) in merged {
            match self.resolve_records(per_disk) {
                Ok(state) if !state.versions.is_empty() => {
                    let name = String::from_utf8(key)
                        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                    keys.push((name, state.versions))
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(key = %String::from_utf8_lossy(&key), error = %e, "key left out of listing")
                }
            }
        }
        keys
    }
}

/// What each disk is asked for a page of up to `max_keys` keys (at least
/// one) under `prefix` from `start`.
fn list_options(prefix: &[u8], start: ListStart, max_keys: usize) -> RecordListOptions {
    RecordListOptions {
        prefix: prefix.to_vec(),
        start,
        max_keys: max_keys.max(1),
    }
}

/// How many disks a heads listing reads in a set of `width` disks whose
/// reads show a version held by `read` of them. At least `width - read + 1`
/// of them, so that every version a read would show is held by one of the
/// disks read (and where the others lack it, they disagree and the records
/// decide); and at least `read`, so that versions every disk read holds
/// are shown by a read too. For 2+2 that is 3 disks of 4; for 4+2, 4 of 6.
pub(crate) fn heads_readers(width: usize, read: usize) -> usize {
    read.max(width + 1 - read).min(width)
}

/// Where a set's heads pages are read from.
#[derive(Clone)]
pub(crate) struct HeadsSource {
    /// The set's disks.
    pub disks: Vec<Arc<dyn Disk>>,
    /// How many of them show what a read shows ([`heads_readers`]).
    pub need: usize,
    /// Where the disks may differ; `None` where other processes write
    /// them too.
    pub agreement: Option<Arc<Agreement>>,
}

impl HeadsSource {
    /// The page `opts` of `ns` decided from heads (see
    /// [`ErasureSet::list_current`]): read from one disk where the
    /// namespace's disks are known to agree and nothing in the page's
    /// range was in doubt or written while it was read; otherwise from
    /// [`Self::need`] disks.
    pub async fn current(
        &self,
        ns: &str,
        opts: RecordListOptions,
    ) -> Result<Option<CurrentPage>, Error> {
        if let Some(agreement) = &self.agreement {
            if let Some(mark) = agreement.mark(ns) {
                let pages = read_heads(self.disks.clone(), 1, ns.to_string(), opts.clone()).await;
                if let Some(page) = pages.iter().flatten().next() {
                    let last = last_key_if(page, page.truncated)?;
                    if agreement.untouched(mark, ns, &opts, last.as_deref()) {
                        agreement.read_one_disk();
                        return decide_current(&pages, 1);
                    }
                }
            }
        }
        let pages = read_heads(self.disks.clone(), self.need, ns.to_string(), opts).await;
        decide_current(&pages, self.need)
    }
}

/// Every disk's heads page or failure, in slot order (disks not asked
/// count as failed).
pub(crate) type DiskPages = Vec<Result<HeadPage, DiskError>>;

/// Reads the heads page `opts` of `ns` from `need` of `disks`, asking
/// others in turn where some fail, until `need` answered or all were
/// asked. The first disk asked is chosen by the page, so a listing's pages
/// spread over the set.
pub(crate) async fn read_heads(
    disks: Vec<Arc<dyn Disk>>,
    need: usize,
    ns: String,
    opts: RecordListOptions,
) -> DiskPages {
    let n = disks.len();
    let first = match &opts.start {
        ListStart::Beginning => 0,
        ListStart::At(k) | ListStart::After(k) => crc_fast::crc32_iscsi(k) as usize,
    };
    let order: Vec<usize> = (0..n).map(|i| (first + i) % n).collect();
    let mut pages: DiskPages = (0..n)
        .map(|_| Err(DiskError::Offline("not asked".into())))
        .collect();
    let (mut asked, mut answered) = (0, 0);
    while answered < need && asked < n {
        let ask = &order[asked..(asked + need - answered).min(n)];
        asked += ask.len();
        let reads = ask
            .iter()
            .map(|&i| disks[i].list_heads(ns.as_bytes(), opts.clone()));
        for (&i, page) in ask.iter().zip(join_all(reads).await) {
            answered += usize::from(page.is_ok());
            pages[i] = page;
        }
    }
    pages
}

/// The page of current versions the heads `pages` show, when at least
/// `need` disks answered and they agree on every key (see
/// [`ErasureSet::list_current`]); `None` otherwise.
pub(crate) fn decide_current(pages: &DiskPages, need: usize) -> Result<Option<CurrentPage>, Error> {
    let answered: Vec<&HeadPage> = pages.iter().flatten().collect();
    if answered.len() < need {
        return Ok(None);
    }
    if let Some((first, others)) = answered.split_first() {
        if others.iter().all(|p| p.bytes == first.bytes) {
            // The same keys and heads everywhere: complete up to the last
            // key when a disk has more, as a merge would find.
            let Some(objects) = current_versions_of(first)? else {
                return Ok(None);
            };
            let next = last_key_if(first, answered.iter().any(|p| p.truncated))?;
            return Ok(Some(CurrentPage::of(objects, next)));
        }
    }
    let views = pages
        .iter()
        .map(|p| match p {
            Ok(p) => Ok(view(p)),
            Err(e) => Err(DiskError::Offline(e.to_string())),
        })
        .collect();
    // Keys merge in their encoded form, which sorts like the keys.
    let (merged, horizon) = merge_pages(views, || &[][..]);
    let last = match merged.last() {
        Some((k, _)) => Some(listed_key(k)?),
        None => None,
    };
    let Some(objects) = current_versions(merged)? else {
        return Ok(None);
    };
    let horizon = horizon.map(listed_key).transpose()?;
    let next = horizon.map(|h| last.unwrap_or(h));
    Ok(Some(CurrentPage::of(objects, next)))
}

/// A heads page as a merge reads it.
fn view(p: &HeadPage) -> DiskPage<&[u8], &[u8]> {
    DiskPage {
        items: (0..p.spans.len()).map(|i| p.entry(i)).collect(),
        truncated: p.truncated,
    }
}

/// Keys (decoded, in order) whose heads differ between disks, and where
/// the comparison continues.
pub(crate) type Differing = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// The keys (decoded, in order) whose heads differ between `pages`, every
/// disk's page of one request, and where the pages continue (after the
/// last key all of them cover); `Corrupt` when a listed key is damaged.
pub(crate) fn differing(pages: &[HeadPage]) -> Result<Differing, Error> {
    if let Some((first, others)) = pages.split_first() {
        if others.iter().all(|p| p.bytes == first.bytes) {
            let next = last_key_if(first, pages.iter().any(|p| p.truncated))?;
            return Ok((Vec::new(), next));
        }
    }
    let (merged, horizon) = merge_pages(pages.iter().map(|p| Ok(view(p))).collect(), || &[][..]);
    let mut differ = Vec::new();
    for (key, heads) in &merged {
        let first = heads.first().and_then(|h| h.as_ref().ok());
        if !heads.iter().all(|h| h.as_ref().ok() == first) {
            differ.push(listed_key(key)?);
        }
    }
    let next = horizon.map(listed_key).transpose()?;
    Ok((differ, next))
}

/// Merges sorted per-disk pages by key, moving (not copying) each disk's
/// items into the key's per-disk list (`absent()` where a disk that
/// answered does not hold the key). The merged page is complete only up to
/// the smallest last key of the disks that have more: that key is returned
/// as the horizon.
fn merge_pages<K: Ord + Clone, I>(
    pages: Vec<Result<DiskPage<K, I>, DiskError>>,
    absent: impl Fn() -> I,
) -> MergedPage<K, I> {
    let horizon: Option<K> = pages
        .iter()
        .flatten()
        .filter(|p| p.truncated)
        .filter_map(|p| p.items.last().map(|(k, _)| k.clone()))
        .min();
    let mut cursors: Vec<Option<Cursor<K, I>>> = pages
        .into_iter()
        .map(|p| p.ok().map(|p| p.items.into_iter().peekable()))
        .collect();
    let mut merged = Vec::new();
    while let Some(key) = cursors
        .iter_mut()
        .filter_map(|c| c.as_mut()?.peek().map(|(k, _)| k))
        .min()
        .cloned()
    {
        if horizon.as_ref().is_some_and(|h| &key > h) {
            break;
        }
        let per_disk = cursors
            .iter_mut()
            .map(|c| match c {
                None => Err(DiskError::Offline("no answer".into())),
                Some(c) => Ok(c
                    .next_if(|(k, _)| *k == key)
                    .map_or_else(&absent, |(_, item)| item)),
            })
            .collect();
        merged.push((key, per_disk));
    }
    (merged, horizon)
}
