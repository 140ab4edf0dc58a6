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

use disk_engine::{ListStart, RecordListOptions};

use crate::error::SetError;
use crate::list_ahead::{AheadRequest, ListAhead};
use crate::merge::{merge_pages, DiskPage, MergedKey};
use crate::set::{ErasureSet, Resolved, VersionBody};

use crate::heads::{heads_readers, CurrentPage, HeadsSource};

/// One merged page: resolved keys in order, and where to continue.
pub struct ResolvedPage<T> {
    /// Keys with their visible versions (newest first); keys whose every
    /// version is invisible are left out.
    pub keys: Vec<(String, Vec<Resolved<T>>)>,
    /// Continue after this key, if more may follow.
    pub next: Option<Vec<u8>>,
}

/// Pages with at least this many keys are resolved on two threads.
const PARALLEL_RESOLVE_KEYS: usize = 256;

impl ErasureSet {
    /// Lists up to `max_keys` keys of `ns` under `prefix` from `start`.
    pub async fn list_resolved<T: VersionBody>(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
    ) -> Result<ResolvedPage<T>, SetError> {
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
    pub async fn list_current(
        &self,
        ns: &str,
        prefix: &[u8],
        start: ListStart,
        max_keys: usize,
    ) -> Result<Option<CurrentPage>, SetError> {
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
    pub fn read_ahead(
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
