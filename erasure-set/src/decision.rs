//! The one place where per-disk results become a quorum decision: a write
//! is done once W disks hold it, a record is seen once R disks agree on it,
//! and a record is absent once R disks answered without it. Every fan-out
//! of the set (data, version records, upload and part records) decides
//! here, so a set that lost its quorum fails the same way on every path:
//! `DiskFull` when a disk was full, else `WriteQuorum` / `ReadQuorum`, or
//! `SetOffline` naming why the set is offline.

use std::collections::BTreeMap;

use disk_engine::DiskError;

use crate::error::SetError;
use crate::quorum::Tally;
use crate::set::ErasureSet;

impl ErasureSet {
    /// Done once a write quorum did it; else `DiskFull` if a disk was
    /// full, else `WriteQuorum` (or why the set is offline).
    pub fn decide_write(&self, t: Tally) -> Result<(), SetError> {
        if t.ok >= self.quorum.write {
            return Ok(());
        }
        if t.full {
            return Err(SetError::DiskFull);
        }
        Err(self.write_quorum_lost(t.ok))
    }

    /// [`Self::decide_write`] over one fan-out's results.
    pub fn require_write_quorum<T>(
        &self,
        results: &[Result<T, DiskError>],
    ) -> Result<(), SetError> {
        self.decide_write(Tally::of(results))
    }

    /// `ReadQuorum` unless a read quorum of `results` are answers.
    pub fn require_read_quorum<T>(&self, results: &[Result<T, DiskError>]) -> Result<(), SetError> {
        let t = Tally::of(results);
        if t.ok < self.quorum.read {
            return Err(self.read_quorum_lost(t.ok));
        }
        Ok(())
    }

    /// A lookup of one record on every disk: the holders' answers when a
    /// read quorum holds it, `None` when a read quorum answered but fewer
    /// hold it (it does not exist), else `ReadQuorum`.
    pub fn decide_lookup<T>(
        &self,
        results: Vec<Result<T, DiskError>>,
    ) -> Result<Option<Vec<T>>, SetError> {
        let t = Tally::of(&results);
        if t.ok >= self.quorum.read {
            return Ok(Some(results.into_iter().flatten().collect()));
        }
        if t.answered() >= self.quorum.read {
            return Ok(None);
        }
        Err(self.read_quorum_lost(t.answered()))
    }

    /// A removal from every disk: each slot's answer (`None` where the
    /// disk did not have it or failed) once a write quorum of disks
    /// answered, holding it or not; else `WriteQuorum` — it may still be
    /// there, so nothing it refers to may be freed.
    pub fn decide_removal<T>(
        &self,
        results: Vec<Result<T, DiskError>>,
    ) -> Result<Vec<Option<T>>, SetError> {
        let answered = Tally::of(&results).answered();
        if answered < self.quorum.write {
            return Err(self.write_quorum_lost(answered));
        }
        Ok(results.into_iter().map(Result::ok).collect())
    }

    /// The entries a read quorum of disks agree on, in key order: `answers`
    /// holds every disk's entries, each with the value of the first disk
    /// that named it.
    pub fn agreed<K: Ord, V>(&self, answers: impl IntoIterator<Item = (K, V)>) -> Vec<(K, V)> {
        let mut counts: BTreeMap<K, (usize, V)> = BTreeMap::new();
        for (k, v) in answers {
            counts.entry(k).or_insert((0, v)).0 += 1;
        }
        counts
            .into_iter()
            .filter(|(_, (n, _))| *n >= self.quorum.read)
            .map(|(k, (_, v))| (k, v))
            .collect()
    }

    /// A write that reached `got` disks, fewer than the write quorum:
    /// `WriteQuorum`, or why the set is offline.
    pub fn write_quorum_lost(&self, got: usize) -> SetError {
        match self.offline.get() {
            Some(why) => SetError::SetOffline(why.clone()),
            None => SetError::WriteQuorum {
                needed: self.quorum.write,
                got,
            },
        }
    }

    /// A read that `got` disks answered, fewer than the read quorum:
    /// `ReadQuorum`, or why the set is offline.
    pub fn read_quorum_lost(&self, got: usize) -> SetError {
        match self.offline.get() {
            Some(why) => SetError::SetOffline(why.clone()),
            None => SetError::ReadQuorum {
                needed: self.quorum.read,
                got,
            },
        }
    }
}
