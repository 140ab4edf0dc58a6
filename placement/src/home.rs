//! Finding a key's home: the one hot-pool set holding its version
//! records, its data and its uploads (`pools.rs` says how a new key's is
//! chosen).
//!
//! Without hot pools added later, a key's home is its first-pool set and
//! nothing is looked up. With them, a key may live in its first-pool set
//! or in any later pool's set, and is found by asking them all at once:
//!
//! - Writers ask under the key's lock, which is always in its first-pool
//!   set, so every writer of a key meets there (healing too). A set holds
//!   the key *live* when it has a visible version or an upload of it, and
//!   only *leftovers* when a disk that answers has records of it that are
//!   not visible (a write that failed on most disks; a record a disk kept
//!   because it was away when the key was deleted). The live holder is
//!   the key's home; without one, a set holding leftovers is (so a write
//!   that failed is retried where its leftovers are); without either the
//!   key is new and is placed. At most one set ever holds a key live: a
//!   key is placed only when none does, and only under its lock, so once
//!   placed it stays until nothing visible of it is left; two live holders
//!   would be a bug, and the key's writes are refused rather than guessed.
//! - Readers ask without the lock and take the set whose newest version
//!   is newest. Two sets can both answer only in the window where a key
//!   moves (its last version and upload gone, a new write placing it
//!   elsewhere), and then the newer answer is the truth.
//! - A set that cannot answer (below its read quorum, offline) fails the
//!   lookup unless another set holds the key live: the key may be the
//!   silent set's, and answering "no such key" or placing it anew could be
//!   wrong.
//!
//! The cost is one record read per hot pool on each single-key request,
//! at once, and for a writer of a key no pool holds a visible version of
//! also a one-entry listing of the key's uploads per pool; a deployment
//! without later pools pays nothing.

use std::sync::Arc;

use disk_engine::{DiskError, UploadListStart};
use erasure_set::{DiskRecords, ErasureSet, KeyState, StagedData};
use futures::future::join_all;

use crate::error::Error;
use crate::store::Store;

/// What a writer found of a key under its lock: every hot-pool set it may
/// live in, with that set's records of it, and the one holding it.
pub(crate) struct Home {
    /// Each set asked, with its disks' records of the key.
    sets: Vec<(Arc<ErasureSet>, DiskRecords)>,
    /// Which of `sets` holds something of the key (`None`: a new key).
    at: Option<usize>,
}

impl Home {
    /// Every set asked, with its disks' records of the key (every write,
    /// visible or not) or why a disk did not answer.
    pub(crate) fn sets(&self) -> impl Iterator<Item = &(Arc<ErasureSet>, DiskRecords)> {
        self.sets.iter()
    }

    /// The set holding the key, if one does.
    pub(crate) fn found(&self) -> Option<&Arc<ErasureSet>> {
        self.at.map(|i| &self.sets[i].0)
    }

    /// The key's set and its records there: where the key lives, else
    /// (a new key) `new` — one of the sets asked — or the key's
    /// first-pool set.
    pub(crate) fn into_set(
        mut self,
        new: Option<&Arc<ErasureSet>>,
    ) -> Result<(Arc<ErasureSet>, DiskRecords), Error> {
        let i = match (self.at, new) {
            (Some(i), _) => i,
            (None, None) => 0,
            (None, Some(set)) => self
                .sets
                .iter()
                .position(|(s, _)| Arc::ptr_eq(s, set))
                .ok_or_else(|| Error::Internal("a new key's set is not a key set".into()))?,
        };
        Ok(self.sets.swap_remove(i))
    }

    /// [`Home::into_set`] for a write whose data `staged` is already in
    /// some set: a new key goes there; a key living elsewhere (a racing
    /// writer placed it meanwhile) refuses the write with `Moved`.
    pub(crate) fn into_staged(
        self,
        (bucket, key): (&str, &str),
        staged: &StagedData,
    ) -> Result<(Arc<ErasureSet>, DiskRecords), Error> {
        if self.found().is_some_and(|s| !staged.staged_in(s)) {
            return Err(Error::Moved(format!(
                "{bucket}/{key} was just written in another pool; please send the request again"
            )));
        }
        let new = self
            .sets
            .iter()
            .find(|(s, _)| staged.staged_in(s))
            .map(|(s, _)| s.clone());
        match new {
            Some(set) => self.into_set(Some(&set)),
            None => Err(Error::Internal(
                "the data was staged outside the key sets".into(),
            )),
        }
    }
}

impl Store {
    /// Where `bucket/key` lives, asked of every set it may live in; call
    /// it under the key's lock for an exact answer.
    pub(crate) async fn home(&self, bucket: &str, key: &str) -> Result<Home, Error> {
        let sets = self.pools.homes_of(bucket, key);
        if let [set] = &sets[..] {
            let records = set.read_records(bucket, key).await;
            return Ok(Home {
                sets: vec![(set.clone(), records)],
                at: Some(0),
            });
        }
        let asked = join_all(sets.iter().map(|s| records_hold(s, bucket, key))).await;
        let mut found = Vec::with_capacity(sets.len());
        let mut holds = Vec::with_capacity(sets.len());
        let mut failed = None;
        for (set, answer) in sets.into_iter().zip(asked) {
            match answer {
                Ok((records, hold)) => {
                    found.push((set, records));
                    holds.push(hold);
                }
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        // A set with a visible version is the key's home (no other can
        // hold it live); only without one are the sets' uploads asked for.
        if !holds.contains(&Hold::Live) {
            let uploads = join_all(found.iter().map(|(s, _)| upload_hold(s, bucket, key))).await;
            for (hold, upload) in holds.iter_mut().zip(uploads) {
                *hold = (*hold).max(upload?);
            }
        }
        let held =
            |h: Hold| -> Vec<usize> { (0..holds.len()).filter(|&i| holds[i] == h).collect() };
        let (live, leftovers) = (held(Hold::Live), held(Hold::Leftovers));
        let at = match (&live[..], leftovers.first(), failed) {
            ([one], _, _) => Some(*one),
            // A silent set may hold the key live.
            ([], _, Some(e)) => return Err(e),
            ([], Some(&set), None) => Some(set),
            ([], None, None) => None,
            (_, _, _) => {
                tracing::error!(bucket, key, "the key has versions or uploads in two pools");
                return Err(Error::Internal(format!(
                    "{bucket}/{key} has versions or uploads in two pools"
                )));
            }
        };
        Ok(Home { sets: found, at })
    }

    /// The set `bucket/key` lives in, or where a new key goes now (chosen
    /// by free space); for a writer holding the key's lock.
    pub(crate) async fn home_or_new(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(Arc<ErasureSet>, DiskRecords), Error> {
        let home = self.home(bucket, key).await?;
        match home.found() {
            Some(_) => home.into_set(None),
            None => {
                let new = self.pools.set_for_new_key(bucket, key).await;
                home.into_set(Some(&new))
            }
        }
    }

    /// The set new data of `bucket/key` is staged in before its lock is
    /// taken: where the key lives now, else where a new key goes (the
    /// commit checks again under the lock, see [`Home::into_staged`]).
    pub(crate) async fn write_set(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Arc<ErasureSet>, Error> {
        if !self.pools.has_later_hot() {
            return Ok(self.pools.set_of(bucket, key).clone());
        }
        Ok(self.home_or_new(bucket, key).await?.0)
    }

    /// The set a writer holding the key's lock finds `bucket/key` in, with
    /// the key as it stands there (its first-pool set, with no versions,
    /// for a key no set holds).
    pub(crate) async fn resolve_home(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(Arc<ErasureSet>, KeyState), Error> {
        let (set, records) = self.home(bucket, key).await?.into_set(None)?;
        let state = set.resolve_records(records)?;
        Ok((set, state))
    }

    /// The set a reader finds `bucket/key` in, without its lock, with the
    /// key as it stands there: of the sets holding versions of it, the one
    /// whose newest is newest (its first-pool set, with no versions, for a
    /// key none holds).
    pub(crate) async fn resolve_anywhere(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(Arc<ErasureSet>, KeyState), Error> {
        let sets = self.pools.homes_of(bucket, key);
        if let [set] = &sets[..] {
            return Ok((set.clone(), set.resolve_key(bucket, key).await?));
        }
        let states = join_all(sets.iter().map(|s| s.resolve_key(bucket, key))).await;
        let mut best: Option<(Arc<ErasureSet>, KeyState)> = None;
        let mut empty = None;
        let mut failed = None;
        for (set, state) in sets.into_iter().zip(states) {
            let state = match state {
                Ok(s) => s,
                Err(e) => {
                    failed = failed.or(Some(Error::from(e)));
                    continue;
                }
            };
            let newest = |s: &KeyState| s.latest().map(|l| l.object.mtime_ns);
            match (newest(&state), best.as_ref().and_then(|(_, b)| newest(b))) {
                (None, _) => {
                    empty = empty.or(Some((set, state)));
                }
                (Some(t), Some(b)) if t <= b => {}
                (Some(_), _) => best = Some((set, state)),
            }
        }
        match (best, failed, empty) {
            (Some(found), _, _) => Ok(found),
            (None, Some(e), _) => Err(e),
            (None, None, Some(none)) => Ok(none),
            (None, None, None) => Err(Error::Internal("no key set answered".into())),
        }
    }
}

/// How much of a key a set holds (see the module notes), least first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Hold {
    Nothing,
    Leftovers,
    Live,
}

/// `set`'s disks' records of `bucket/key`, and how much of the key they
/// show the set holds (its uploads aside). Fails below the set's read
/// quorum.
async fn records_hold(
    set: &ErasureSet,
    bucket: &str,
    key: &str,
) -> Result<(DiskRecords, Hold), Error> {
    let records = set.read_records(bucket, key).await;
    set.require_read_quorum(&records)?;
    let state: KeyState = set.resolve_records(copy(&records))?;
    let hold = match (
        state.versions.is_empty(),
        records.iter().flatten().any(|r| !r.is_empty()),
    ) {
        (false, _) => Hold::Live,
        (true, true) => Hold::Leftovers,
        (true, false) => Hold::Nothing,
    };
    Ok((records, hold))
}

/// What `set` holds of `bucket/key`'s uploads: the first upload listed
/// under the key as a prefix is one of the key's if the key has any held
/// by a read quorum (keys the prefix also matches sort after it), and an
/// upload of the key seen on too few disks to be listed, where the
/// listing stops at it, is a leftover.
async fn upload_hold(set: &ErasureSet, bucket: &str, key: &str) -> Result<Hold, Error> {
    let (entries, next) = set
        .list_uploads(bucket, key, UploadListStart::Beginning, 1)
        .await?;
    let of_key = |k: &[u8]| k == key.as_bytes();
    Ok(match entries.first() {
        Some(u) if of_key(&u.key) => Hold::Live,
        Some(_) => Hold::Nothing,
        None if next.is_some_and(|(k, _)| of_key(&k)) => Hold::Leftovers,
        None => Hold::Nothing,
    })
}

/// A copy of a key's records as read, to resolve while keeping them (a
/// disk's error is kept only as the disk having not answered).
fn copy(records: &DiskRecords) -> DiskRecords {
    records
        .iter()
        .map(|r| match r {
            Ok(list) => Ok(list.clone()),
            Err(e) => Err(DiskError::Offline(e.to_string())),
        })
        .collect()
}
