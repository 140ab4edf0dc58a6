//! Objects at risk: versions acknowledged while fewer than k + m of their
//! set's disks took them (a disk was offline or failed the write). They
//! are readable, but with less redundancy than the set's parity promises —
//! at k > m, a write acknowledged with m disks missing has none left —
//! until healed. A set keeps their keys from the write until a heal (a
//! pass, or on-read repair through [`crate::ErasureSet::heal_object`])
//! finds every disk answering and holding them; a healing pass heals them
//! first. Past [`MAX_TRACKED`] keys only a count is kept, and the next
//! pass that runs with every disk online clears it.
//!
//! The list lives in memory. Objects written degraded before this process
//! started are found by comparing the disks' heads (see `agreement.rs`):
//! each store compares every namespace of its set once, shortly after
//! start (again, less and less often, while a disk does not answer). Keys
//! whose heads differ are *suspects*: a suspect is at risk once resolving
//! it shows a visible version some disk lacks (a record left on too few
//! disks to count, such as a delete's on a disk that was offline, differs
//! too but risks nothing).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// Keys remembered by name per set.
const MAX_TRACKED: usize = 1_000_000;

/// One set's objects at risk.
#[derive(Default)]
pub struct AtRisk {
    keys: Mutex<BTreeSet<(String, String)>>,
    /// Keys whose heads differ between the disks, to resolve.
    suspects: Mutex<BTreeSet<(String, String)>>,
    /// Degraded writes past the list's capacity.
    untracked: AtomicU64,
}

impl AtRisk {
    /// `ns/key` was acknowledged with some disk missing its write.
    pub(crate) fn note(&self, ns: &str, key: &str) {
        let mut keys = self.keys.lock();
        if keys.len() < MAX_TRACKED {
            keys.insert((ns.to_string(), key.to_string()));
        } else {
            self.untracked.fetch_add(1, Relaxed);
        }
    }

    /// The disks' heads of `ns/key` differ: it may be at risk.
    pub(crate) fn suspect(&self, ns: &str, key: &str) {
        let mut s = self.suspects.lock();
        if s.len() < MAX_TRACKED {
            s.insert((ns.to_string(), key.to_string()));
        }
    }

    /// The suspects to resolve (taken out of the list).
    pub(crate) fn take_suspects(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.suspects.lock())
            .into_iter()
            .collect()
    }

    /// Every disk answered a heal of `ns/key` and holds what it should.
    pub(crate) fn healed(&self, ns: &str, key: &str) {
        self.keys.lock().remove(&(ns.to_string(), key.to_string()));
    }

    /// The keys at risk, for a pass to heal first.
    pub fn keys(&self) -> Vec<(String, String)> {
        self.keys.lock().iter().cloned().collect()
    }

    /// Objects at risk (listed or only counted).
    pub fn count(&self) -> u64 {
        self.keys.lock().len() as u64 + self.untracked.load(Relaxed)
    }

    /// The count of writes not listed, when a pass starts.
    pub fn untracked(&self) -> u64 {
        self.untracked.load(Relaxed)
    }

    /// A pass that started when `mark` writes were untracked covered them
    /// with every disk online.
    pub fn untracked_healed(&self, mark: u64) {
        self.untracked.fetch_sub(mark, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_until_healed() {
        let r = AtRisk::default();
        r.note("b", "k1");
        r.note("b", "k1");
        r.note("b", "k2");
        assert_eq!(r.count(), 2);
        r.healed("b", "k1");
        assert_eq!(r.keys(), vec![("b".to_string(), "k2".to_string())]);
        r.untracked.store(5, Relaxed);
        let mark = r.untracked();
        r.untracked.fetch_add(1, Relaxed);
        r.untracked_healed(mark);
        assert_eq!(r.count(), 2);
    }
}
