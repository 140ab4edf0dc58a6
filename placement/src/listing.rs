//! Ordered listings merged across the disks of a set.
//!
//! Every disk lists its own keys; the pages are merged by key and each key
//! resolved exactly as a read would resolve it, so a listing shows what a
//! GET would return. A disk whose page ended early bounds how far the merged
//! page is complete.

use std::collections::BTreeMap;

use disk_engine::{KeyRecords, ListStart, RecordListOptions};

use crate::error::Error;
use crate::set::{ErasureSet, Resolved};

/// One merged page: resolved keys in order, and where to continue.
pub(crate) struct ResolvedPage {
    /// Keys with their visible versions (newest first); keys whose every
    /// version is invisible are left out.
    pub keys: Vec<(String, Vec<Resolved>)>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

impl ErasureSet {
    /// Lists up to `max_keys` keys of `ns` under `prefix` from `start`.
    pub(crate) async fn list_resolved(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
    ) -> Result<ResolvedPage, Error> {
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
        let n = self.width();
        let mut merged: BTreeMap<
            Vec<u8>,
            Vec<Result<Vec<disk_engine::Record>, disk_engine::DiskError>>,
        > = BTreeMap::new();
        for (slot, page) in pages.iter().enumerate() {
            let Ok(page) = page else { continue };
            for KeyRecords { key, records } in &page.keys {
                if horizon.as_ref().is_some_and(|h| key > h) {
                    break;
                }
                let entry = merged.entry(key.clone()).or_insert_with(|| {
                    (0..n)
                        .map(|s| match &pages[s] {
                            Ok(_) => Ok(Vec::new()),
                            Err(_) => Err(disk_engine::DiskError::Offline("no answer".into())),
                        })
                        .collect()
                });
                entry[slot] = Ok(records.clone());
            }
        }
        let mut keys = Vec::with_capacity(merged.len());
        let mut last = None;
        for (key, per_disk) in merged {
            last = Some(key.clone());
            match self.resolve_records(per_disk) {
                Ok(state) if !state.versions.is_empty() => {
                    keys.push((String::from_utf8_lossy(&key).into_owned(), state.versions))
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(key = %String::from_utf8_lossy(&key), error = %e, "key left out of listing")
                }
            }
        }
        let next = horizon.map(|h| last.unwrap_or(h));
        Ok(ResolvedPage { keys, next })
    }
}
