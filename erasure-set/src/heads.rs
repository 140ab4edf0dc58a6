//! Pages of current objects decided from the disks' heads indexes (one
//! small entry per key with its versions' stamps and listing projections):
//! read from one disk where the agreement knows the disks agree, else from
//! as many disks as it takes to see what a read sees ([`heads_readers`]),
//! falling back to the records for a page where they disagree.

use std::ops::Range;
use std::sync::Arc;

use disk_engine::{
    Disk, DiskError, HeadPage, HeadVersion, ListStart, RecordListOptions, VersionId,
};
use futures::future::join_all;

use crate::agreement::Agreement;
use crate::current::Objects;
use crate::error::SetError;
use crate::merge::{bad_listed_key, last_key_if, listed_key, merge_pages, view, Merged};
use crate::projection;
use crate::record::{version_key, version_order};

/// One page of current versions from the heads indexes.
pub struct CurrentPage {
    /// Keys in order with their newest version (keys whose newest version
    /// is a delete marker left out), from the first one of `range`.
    pub objects: Arc<Objects>,
    /// The keys of `objects` this page holds.
    pub range: Range<usize>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

impl CurrentPage {
    pub(crate) fn of(objects: Objects, next: Option<Vec<u8>>) -> CurrentPage {
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
pub(crate) fn agreed_heads<'a>(
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
pub(crate) fn head_versions<'a>(head: &'a [u8], out: &mut Vec<HeadVersion<'a>>) -> bool {
    match head.is_empty() {
        true => {
            out.clear();
            true
        }
        false => disk_engine::head_versions(head, out).unwrap_or(false),
    }
}

/// Appends the key `encoded` with its newest version among `versions` to
/// `objects`, unless it has none or that is a delete marker (`name` is
/// scratch space); false when a projection is damaged (the records
/// decide).
pub(crate) fn push_newest(
    objects: &mut Objects,
    name: &mut Vec<u8>,
    encoded: &[u8],
    versions: &[HeadVersion<'_>],
) -> Result<bool, SetError> {
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
pub(crate) fn current_versions(
    merged: Vec<Merged<&[u8], &[u8]>>,
) -> Result<Option<Objects>, SetError> {
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
pub(crate) fn current_versions_of(page: &HeadPage) -> Result<Option<Objects>, SetError> {
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

/// How many disks a heads listing reads in a set of `width` disks whose
/// reads show a version held by `read` of them. At least `width - read + 1`
/// of them, so that every version a read would show is held by one of the
/// disks read (and where the others lack it, they disagree and the records
/// decide); and at least `read`, so that versions every disk read holds
/// are shown by a read too. For 2+2 that is 3 disks of 4; for 4+2, 4 of 6.
pub fn heads_readers(width: usize, read: usize) -> usize {
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
    ) -> Result<Option<CurrentPage>, SetError> {
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
pub(crate) fn decide_current(
    pages: &DiskPages,
    need: usize,
) -> Result<Option<CurrentPage>, SetError> {
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
