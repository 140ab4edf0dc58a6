//! Merging the disks' listings: each disk's page in key order becomes one
//! page of keys with every disk's item for each (or its failure), complete
//! up to the horizon where the first disk with more stopped; and the keys
//! whose heads differ between disks.

use disk_engine::{DiskError, HeadPage};

use crate::error::SetError;

/// A key with every disk's item for it (or the disk's failure).
pub(crate) type Merged<K, I> = (K, Vec<Result<I, DiskError>>);

/// Merged keys, and the horizon up to which the merge is complete.
pub(crate) type MergedPage<K, I> = (Vec<Merged<K, I>>, Option<K>);

/// The rest of one disk's page during a merge.
pub(crate) type Cursor<K, I> = std::iter::Peekable<std::vec::IntoIter<(K, I)>>;

/// A key with every disk's records of it.
pub(crate) type MergedKey = Merged<Vec<u8>, Vec<disk_engine::Record>>;

/// One disk's page of items in key order, and whether more follow.
pub(crate) struct DiskPage<K, I> {
    pub(crate) items: Vec<(K, I)>,
    pub(crate) truncated: bool,
}

/// A key of a heads listing, decoded.
pub(crate) fn listed_key(encoded: &[u8]) -> Result<Vec<u8>, SetError> {
    disk_engine::decode_listed_key(encoded).ok_or_else(bad_listed_key)
}

pub(crate) fn bad_listed_key() -> SetError {
    SetError::Corrupt("a listed key is not a valid encoding".into())
}

/// The last key of `page` (decoded) when `more` keys follow it: where a
/// listing continues.
pub(crate) fn last_key_if(page: &HeadPage, more: bool) -> Result<Option<Vec<u8>>, SetError> {
    match page.spans.len().checked_sub(1) {
        Some(last) if more => listed_key(page.entry(last).0).map(Some),
        _ => Ok(None),
    }
}

/// A heads page as a merge reads it.
pub(crate) fn view(p: &HeadPage) -> DiskPage<&[u8], &[u8]> {
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
pub(crate) fn differing(pages: &[HeadPage]) -> Result<Differing, SetError> {
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
pub(crate) fn merge_pages<K: Ord + Clone, I>(
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
