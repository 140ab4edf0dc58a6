//! Listing a bucket's keys, their versions, over every set of every hot
//! pool (a key lives in exactly one, see `home.rs`): each set lists its own keys (with the one-disk heads, agreement
//! and read-ahead of one set), and the pages are merged in key order (see
//! `merge.rs`). A deployment of one set is listed as before, without a merge.

use std::sync::Arc;

use disk_engine::ListStart;
use erasure_set::record::ObjectSummary;
use erasure_set::{ErasureSet, ObjectPage, Objects};
use futures::future::try_join_all;

use crate::error::Error;
use crate::merge::{merge_pages, SetPage};
use crate::store::Store;

/// One page of an object listing.
pub struct ObjectListing {
    /// Keys in order with their current version (delete markers left out).
    pub entries: Vec<(String, ObjectSummary)>,
    /// Continue after this key when more may follow.
    pub next: Option<String>,
}

/// One page of a version listing.
pub struct VersionListing {
    /// Keys in order, each with its versions newest first (delete markers
    /// included); the first is the current version.
    pub entries: Vec<(String, Vec<ObjectSummary>)>,
    /// Continue after this key when more may follow.
    pub next: Option<String>,
}

fn lossy(k: Vec<u8>) -> String {
    String::from_utf8_lossy(&k).into_owned()
}

impl Store {
    /// Lists up to `max_keys` keys of `bucket` under `prefix` from `start`
    /// with their current version. The page may hold fewer entries than
    /// asked even when more follow; continue from `next`.
    pub async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
    ) -> Result<ObjectListing, Error> {
        let page = self
            .list_object_page(bucket, prefix, start, max_keys)
            .await?;
        Ok(ObjectListing {
            entries: page.summaries(),
            next: page.next,
        })
    }

    /// [`Self::list_objects`] as a compact page, rendered without
    /// allocating per key.
    pub async fn list_object_page(
        &self,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
    ) -> Result<ObjectPage, Error> {
        self.bucket(bucket).await?;
        let sets = self.pools.key_sets();
        if let [set] = &sets[..] {
            return set_object_page(set, bucket, prefix, start, max_keys).await;
        }
        let pages = try_join_all(
            sets.iter()
                .map(|set| set_object_page(set, bucket, prefix, start.clone(), max_keys)),
        )
        .await?;
        let pages = pages
            .iter()
            .map(|page| SetPage {
                entries: (0..page.len()).map(|i| (page.name(i), (page, i))).collect(),
                next: page.next.as_deref(),
            })
            .collect();
        let (entries, next) = merge_pages(pages, max_keys);
        let mut objects = Objects::with_capacity(entries.len());
        for (_, (page, i)) in &entries {
            let (name, view) = page.get(*i);
            objects.push(name.as_bytes(), &view);
        }
        let range = 0..objects.len();
        Ok(ObjectPage::new(
            Arc::new(objects),
            range,
            next.map(str::to_string),
        ))
    }

    /// Starts reading, ahead of the request, the page of
    /// [`Self::list_objects`] a client is expected to ask for next, so that
    /// it is ready (or under way) when asked. With `paging` (the client
    /// asks for that many keys at a time, each page after the last key of
    /// the one before, delete markers not counted), the pages after it are
    /// read ahead too while the client keeps up. A page is used only if no
    /// write changed the set in between. Over many sets only the next page
    /// is read ahead in each: a set's later pages start after keys of its
    /// own, which the merged pages do not end on.
    pub fn read_ahead(
        &self,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
        paging: Option<usize>,
    ) {
        let sets = self.pools.key_sets();
        let paging = paging.filter(|_| sets.len() == 1);
        for set in &sets {
            set.read_ahead(bucket, prefix.as_bytes(), start.clone(), max_keys, paging);
        }
    }

    /// How many sets keys are spread over (every set of every hot pool):
    /// what [`Store::list_versions_in`] takes.
    pub fn key_sets(&self) -> usize {
        self.pools.key_sets().len()
    }

    /// [`Store::list_versions`] of the keys of set `set` (below
    /// [`Store::key_sets`]) alone, for work that walks every key and can
    /// walk the sets at the same time (lifecycle passes).
    pub async fn list_versions_in(
        &self,
        set: usize,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
    ) -> Result<VersionListing, Error> {
        self.bucket(bucket).await?;
        let set = self
            .pools
            .key_sets()
            .get(set)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("no key set {set}")))?;
        let page = set_versions(&set, bucket, prefix, start, max_keys).await?;
        Ok(VersionListing {
            entries: page.entries,
            next: page.next,
        })
    }

    /// Lists up to `max_keys` keys of `bucket` under `prefix` from `start`
    /// with all their versions, newest first.
    pub async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
    ) -> Result<VersionListing, Error> {
        self.bucket(bucket).await?;
        let sets = self.pools.key_sets();
        let pages = try_join_all(
            sets.iter()
                .map(|set| set_versions(set, bucket, prefix, start.clone(), max_keys)),
        )
        .await?;
        let (entries, next) = match <[_; 1]>::try_from(pages) {
            Ok([one]) => (one.entries, one.next),
            Err(pages) => merge_pages(pages, max_keys),
        };
        Ok(VersionListing { entries, next })
    }
}

/// One set's page of [`Store::list_object_page`].
async fn set_object_page(
    set: &ErasureSet,
    bucket: &str,
    prefix: &str,
    start: ListStart,
    max_keys: usize,
) -> Result<ObjectPage, Error> {
    let current = set
        .list_current(bucket, prefix.as_bytes(), start.clone(), max_keys)
        .await?;
    if let Some(page) = current {
        return Ok(ObjectPage::new(
            page.objects,
            page.range,
            page.next.map(lossy),
        ));
    }
    let page = set_versions(set, bucket, prefix, start, max_keys).await?;
    let mut objects = Objects::with_capacity(page.entries.len());
    for (key, versions) in &page.entries {
        if let Some(v) = versions.first().filter(|v| !v.delete_marker) {
            objects.push_summary(key, v);
        }
    }
    let range = 0..objects.len();
    Ok(ObjectPage::new(Arc::new(objects), range, page.next))
}

/// One set's page of [`Store::list_versions`].
async fn set_versions(
    set: &ErasureSet,
    bucket: &str,
    prefix: &str,
    start: ListStart,
    max_keys: usize,
) -> Result<SetPage<String, Vec<ObjectSummary>>, Error> {
    let page = set
        .list_resolved::<ObjectSummary>(bucket, prefix.as_bytes(), start, max_keys)
        .await?;
    Ok(SetPage {
        entries: page
            .keys
            .into_iter()
            .map(|(k, versions)| (k, versions.into_iter().map(|v| v.object).collect()))
            .collect(),
        next: page.next.map(lossy),
    })
}
