//! Ordered listings merged across the disks of a set.
//!
//! Every disk lists its own keys; the pages are merged by key and each key
//! resolved exactly as a read would resolve it, so a listing shows what a
//! GET would return. A disk whose page ended early bounds how far the merged
//! page is complete.

use disk_engine::{KeyRecords, ListStart, RecordListOptions};

use crate::error::Error;
use crate::set::{ErasureSet, Resolved, VersionBody};

/// One merged page: resolved keys in order, and where to continue.
pub(crate) struct ResolvedPage<T> {
    /// Keys with their visible versions (newest first); keys whose every
    /// version is invisible are left out.
    pub keys: Vec<(String, Vec<Resolved<T>>)>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

/// A key with every disk's records of it (or the disk's failure).
type MergedKey = (
    Vec<u8>,
    Vec<Result<Vec<disk_engine::Record>, disk_engine::DiskError>>,
);

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
        let opts = RecordListOptions {
            prefix: prefix.to_vec(),
            start,
            max_keys: max_keys.max(1),
        };
        let pages = self
            .each_disk(|_, d| {
                let opts = opts.clone();
                async move { d.list_records(ns.as_bytes(), opts).await }
            })
            .await;
        let answered = pages.iter().filter(|p| p.is_ok()).count();
        if answered < self.quorum.read {
            return Err(Error::ReadQuorum {
                needed: self.quorum.read,
                got: answered,
            });
        }
        // The merged page is complete only up to the smallest last key of the
        // disks that have more.
        let horizon: Option<Vec<u8>> = pages
            .iter()
            .flatten()
            .filter(|p| p.truncated)
            .filter_map(|p| p.keys.last().map(|k| k.key.clone()))
            .min();
        // Merge the sorted per-disk pages by key, moving (not copying) each
        // disk's records into the key's per-disk list.
        let mut cursors: Vec<Option<std::iter::Peekable<std::vec::IntoIter<KeyRecords>>>> = pages
            .into_iter()
            .map(|p| p.ok().map(|p| p.keys.into_iter().peekable()))
            .collect();
        // Gather each key's per-disk records first (cheap), then resolve
        // them: the decoding is most of a page's work, so a large page is
        // resolved in two halves on two threads.
        let mut merged: Vec<MergedKey> = Vec::new();
        while let Some(key) = cursors
            .iter_mut()
            .filter_map(|c| c.as_mut()?.peek().map(|k| &k.key))
            .min()
            .cloned()
        {
            if horizon.as_ref().is_some_and(|h| &key > h) {
                break;
            }
            let per_disk = cursors
                .iter_mut()
                .map(|c| match c {
                    None => Err(disk_engine::DiskError::Offline("no answer".into())),
                    Some(c) => Ok(c
                        .next_if(|k| k.key == key)
                        .map(|k| k.records)
                        .unwrap_or_default()),
                })
                .collect();
            merged.push((key, per_disk));
        }
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
