//! Committing to an erasure set: writing a version record to its disks,
//! deleting versions, and freeing what a commit made unreferenced.
//!
//! The rules every commit here follows (and what a crash or a dropped
//! future at each step leaves):
//!
//! 1. **Stamps never go backwards.** A new write of a key is stamped past
//!    the newest stamp any disk holds for the key (visible or not) and
//!    past every stamp this process made, whatever the clock says, so a
//!    write committed later always wins and LastModified never decreases.
//! 2. **A disk counts only when it stored the write.** "A newer write of
//!    this version is stored" is not stored; the write is stamped again
//!    past it and repeated.
//! 3. **Nothing is freed before the quorum decision**, and then only data
//!    no remaining version on that disk refers to. A write or delete that
//!    missed its quorum frees nothing: what it left is judged later by
//!    the records that remain (heal, garbage collection).
//! 4. **A write that missed its quorum is undone only where nobody can have
//!    seen it**: on fewer than R disks it was never visible, and is rolled
//!    back; on R or more it may have been read, so it stays (the client
//!    was told 503: the outcome is unknown). So does a write below R that
//!    readers are shown: a version none of whose writes reaches R, with R
//!    disks holding some write of it (a rewrite — same version id, newer
//!    stamp — cut short), is read as its newest write when every disk
//!    answers (`ErasureSet::resolve_records`). What the other disks hold is
//!    not known from the write's own results (a degraded write missed
//!    some), so the key is resolved again to tell, as a reader would; with
//!    disks silent, a rewrite is kept when fewer than R disks did not
//!    store it. A write kept is on fewer disks than W: the key is noted
//!    at risk, as for a degraded write that succeeded.
//!
//! Callers run commits in tasks no request owns (`Store::detached`), so
//! a client going away never stops one half way; a crash can, and then
//! (by step) leaves: before any record — staged data that garbage
//! collection reclaims; records on some disks — a version visible or not
//! by the read rule, with its data intact; records on all disks but
//! nothing freed yet — the replaced data, reclaimed by garbage collection.

use std::sync::atomic::Ordering;

use disk_engine::{
    failpoint, DiskError, PutRecordOutcome, Record, RecordPut, ShardId, Stamp, VersionId,
};
use futures::future::join_all;
use uuid::Uuid;

use crate::error::SetError;
use crate::packed::{self, Pieces};
use crate::quorum::Tally;
use crate::record::{self, ObjectRecord, TierRef};
use crate::set::{now_ns, version_key, ErasureSet, KeyState};
use crate::uploads::DroppedPart;

/// Times a write is stamped again when a disk already holds a newer
/// write of the same version (only another writer racing without the
/// key's lock could cause it).
const RESTAMPS: usize = 2;

/// What travels in a version's record write besides the record.
#[derive(Clone, Copy, Default)]
pub struct Carried<'a> {
    /// A packed object's pieces, one per disk.
    pub pieces: Option<&'a Pieces>,
    /// Staged data ids the record refers to: their entries go in the same
    /// write.
    pub unstage: &'a [Uuid],
    /// The multipart upload the record completes: removed in the same write.
    pub completes: Option<Uuid>,
}

/// A record write that reached its write quorum.
pub struct Committed {
    /// The version as stored.
    pub object: ObjectRecord,
    /// The parts of the completed upload each disk removed, by slot.
    pub completed: Vec<DroppedPart>,
}

impl ErasureSet {
    /// A stamp for a new write of a key, taken by the holder of the key's
    /// lock from `state`, the key as it resolved it under the lock: past
    /// the newest stamp any disk holds for the key and past every stamp of
    /// this process. Clocks that step back, or run behind another
    /// gateway's, cannot make a later write lose.
    fn stamp_past(&self, state: &KeyState) -> Stamp {
        if let Some(newest) = state.newest {
            self.last_mtime
                .fetch_max(newest.mtime_ns, Ordering::Relaxed);
        }
        self.next_stamp()
    }

    /// A fresh stamp: modification times never go backwards in this process.
    pub fn next_stamp(&self) -> Stamp {
        let now = now_ns();
        let mut last = self.last_mtime.load(Ordering::Relaxed);
        loop {
            let t = now.max(last + 1);
            match self
                .last_mtime
                .compare_exchange(last, t, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Stamp {
                        mtime_ns: t,
                        write_id: Uuid::now_v7(),
                    }
                }
                Err(seen) => last = seen,
            }
        }
    }

    /// Writes `object` as a new version of `key` to the disks in `targets`:
    /// with `versioned`, under a new version id (the write's UUIDv7);
    /// otherwise as the null version, replacing the previous null version.
    /// Its modification time is its stamp (see [`Self::stamp_for`]; `seen`
    /// is the key as the caller resolved it under the lock, if it did).
    /// The caller holds the key lock. See [`Self::write_record`].
    #[allow(clippy::too_many_arguments)]
    pub async fn commit_record(
        &self,
        ns: &str,
        key: &str,
        mut object: ObjectRecord,
        targets: &[bool],
        versioned: bool,
        carried: Carried<'_>,
        seen: Option<&KeyState>,
    ) -> Result<Committed, SetError> {
        let resolved;
        let state = match seen {
            Some(s) => s,
            None => {
                resolved = self.resolve_key(ns, key).await?;
                &resolved
            }
        };
        let stamp = self.stamp_past(state);
        object.mtime_ns = stamp.mtime_ns;
        object.version_id = versioned.then_some(stamp.write_id);
        let keep = state.data_ids(Some(version_key(object.version_id)));
        self.write_record(ns, key, object, targets, stamp, carried, true, Some(keep))
            .await
    }

    /// Writes a changed copy of an existing version (same id and
    /// modification time, e.g. new tags) under a fresh stamp, so it wins
    /// over the copy it replaces on every disk. The caller holds the key lock
    /// and resolved the key under it (`seen`).
    ///
    /// A target that did not hold the visible write (it holds an older or
    /// newer write of the version, `Resolved::holding`, or none: a flip
    /// goes to every disk) may lack the version's data — an older write of
    /// the null version is other data — so the key is left at risk, and a
    /// heal checks its shards there; also when the rewrite failed, as it
    /// may have been kept (rule 4).
    pub async fn rewrite_record(
        &self,
        ns: &str,
        key: &str,
        object: ObjectRecord,
        targets: &[bool],
        seen: &KeyState,
    ) -> Result<ObjectRecord, SetError> {
        let version = version_key(object.version_id);
        let stamp = self.stamp_past(seen);
        let keep = seen.data_ids(Some(version));
        let beyond_holders = seen
            .versions
            .iter()
            .filter(|v| v.record.version == version)
            .any(|v| targets.iter().zip(&v.holders).any(|(t, h)| *t && !*h));
        let written = self
            .write_record(
                ns,
                key,
                object,
                targets,
                stamp,
                Carried::default(),
                false,
                Some(keep),
            )
            .await;
        if beyond_holders {
            self.at_risk.note(ns, key);
        }
        Ok(written?.object)
    }

    /// Writes `record` exactly as it is (same version and stamp) to every
    /// disk with what `carried` brings, where it is missing: repeating a
    /// write that reached some disks before (a retried completion) makes it
    /// whole without making it a new write.
    pub async fn repeat_record(
        &self,
        ns: &str,
        key: &str,
        record: Record,
        carried: Carried<'_>,
    ) -> Result<Committed, SetError> {
        let object: ObjectRecord = record::decode(&record.body)?;
        let all = vec![true; self.width()];
        self.write_record(ns, key, object, &all, record.stamp, carried, false, None)
            .await
    }

    /// Stores `object` under its version id with `stamp` on the `targets`
    /// disks, with `carried` in each disk's write. Acknowledged only when
    /// a write quorum stored it (rules 2-4 of this file's doc); then the
    /// data of the writes it replaced is freed disk by disk, except what
    /// the new write and the key's other versions refer to (`keep`, from
    /// the caller's view of the key; `None`: read from each disk).
    /// `restamp`: the modification time follows the stamp when the write
    /// must be stamped again (a new version).
    #[allow(clippy::too_many_arguments)]
    async fn write_record(
        &self,
        ns: &str,
        key: &str,
        mut object: ObjectRecord,
        targets: &[bool],
        mut stamp: Stamp,
        carried: Carried<'_>,
        restamp: bool,
        keep: Option<Vec<Uuid>>,
    ) -> Result<Committed, SetError> {
        let layout = object.layout;
        for attempt in 0..=RESTAMPS {
            let rec = Record {
                version: version_key(object.version_id),
                stamp,
                body: record::encode(&object),
                listing: crate::projection::encode(&object),
            };
            let mut writing = self.agreement.writing(ns, [key.as_bytes()]);
            failpoint::hit("set.record.before", "").await;
            let results = self
                .some_disks(targets, |slot, d| {
                    let put = RecordPut {
                        record: rec.clone(),
                        piece: carried
                            .pieces
                            .map(|p| p.for_shard(layout.shard_of_disk(slot))),
                        unstage: carried.unstage.to_vec(),
                        completes: carried.completes,
                    };
                    async move {
                        let r = d.put_record(ns.as_bytes(), key.as_bytes(), put).await;
                        if r.is_ok() {
                            failpoint::hit("set.record.stored", d.label()).await;
                        }
                        r
                    }
                })
                .await;
            let stored = results
                .iter()
                .filter(|r| matches!(r, Some(Ok(PutRecordOutcome::Stored { .. }))))
                .count();
            writing.reached_every_disk(stored == self.width());
            drop(writing);
            let tally = Tally {
                ok: stored,
                absent: 0,
                full: results
                    .iter()
                    .any(|r| matches!(r, Some(Err(DiskError::Full)))),
            };
            let Err(refused) = self.decide_write(tally) else {
                return Ok(self
                    .committed(ns, key, object, rec, results, stored, keep)
                    .await);
            };
            let newer = results
                .iter()
                .filter_map(|r| match r {
                    Some(Ok(PutRecordOutcome::Superseded { current })) => Some(current.stamp),
                    _ => None,
                })
                .max();
            if let (Some(newer), true) = (newer, attempt < RESTAMPS) {
                self.last_mtime.fetch_max(newer.mtime_ns, Ordering::Relaxed);
                stamp = self.next_stamp();
                if restamp {
                    object.mtime_ns = stamp.mtime_ns;
                }
                continue;
            }
            // Rule 4: below R nobody can have read it, unless it is the
            // newest write of a version none of whose writes reaches R (see
            // `shown_to_readers`). A completion is left as it is: its
            // upload is gone from those disks, and a retry of it finds the
            // record and finishes it.
            let kept = carried.completes.is_some()
                || stored >= self.quorum.read
                || (stored > 0 && self.shown_to_readers(ns, key, &rec, stored, &results).await);
            // Kept, it is on fewer disks than a write quorum: at risk
            // like a degraded write that succeeded.
            match kept {
                true => self.at_risk.note(ns, key),
                false => self.roll_back(ns, key, &rec, &results).await,
            }
            return Err(refused);
        }
        unreachable!("the last attempt returns")
    }

    /// The success path of [`Self::write_record`]: frees on each disk the
    /// data of the write the new one replaced there, except what any
    /// version the disk now holds for the key refers to (the new one
    /// included), and releases tier objects no longer referred to.
    #[allow(clippy::too_many_arguments)]
    async fn committed(
        &self,
        ns: &str,
        key: &str,
        object: ObjectRecord,
        record: Record,
        results: Vec<Option<Result<PutRecordOutcome, DiskError>>>,
        stored: usize,
        others: Option<Vec<Uuid>>,
    ) -> Committed {
        if stored < self.width() {
            self.at_risk.note(ns, key);
            self.repair
                .stats
                .degraded_writes
                .fetch_add(1, Ordering::Relaxed);
        }
        failpoint::hit("set.record.quorum", "").await;
        let item = [(key.as_bytes().to_vec(), record.version)];
        // What the key's versions refer to, the new one included: known
        // from the commit's view, or asked of each disk.
        let with_new = |mut keep: Vec<Uuid>| {
            keep.extend(object.data_ids());
            keep
        };
        let known = others.map(with_new);
        let mut released = Vec::new();
        let mut completed = Vec::new();
        for (slot, r) in results.into_iter().enumerate() {
            if let Some(Ok(PutRecordOutcome::Stored {
                replaced,
                completed: parts,
            })) = r
            {
                if let Some(old) = replaced {
                    let keep = match &known {
                        Some(k) => Some(std::borrow::Cow::Borrowed(k)),
                        None => self
                            .referenced_on(slot, ns, &item)
                            .await
                            .map(|k| std::borrow::Cow::Owned(with_new(k))),
                    };
                    if let Some(keep) = keep {
                        released.extend(self.free_record_data(slot, &old, &keep).await);
                    }
                }
                completed.extend(parts.into_iter().map(|p| (slot, p)));
            }
        }
        released.retain(|t| object.tiered.as_ref() != Some(t));
        self.release_tiered(released);
        failpoint::hit("set.record.freed", "").await;
        Committed { object, completed }
    }

    /// Whether readers may have been shown `rec`, a write that reached
    /// some disks but fewer than R: whether the key, resolved now, shows
    /// it. A version none of whose writes reaches R, but which R disks
    /// hold, is read as its newest write when every disk answers
    /// (`ErasureSet::resolve_records`). While the write was in flight the
    /// disks holding each older write of the version only went down and
    /// those holding some write of it only went up, so a write readers
    /// were shown at any moment is still shown now; and whatever the
    /// other disks held before (a degraded write, a disk the write did
    /// not reach) counts as it does for a reader.
    ///
    /// If the key cannot be resolved now (disks silent), no reader can be
    /// shown the write either until they answer; it is then judged as if
    /// every disk that did not store it (it reached `stored` disks, with
    /// `results`) still held the write it replaced: kept if that leaves
    /// fewer than R of them.
    async fn shown_to_readers(
        &self,
        ns: &str,
        key: &str,
        rec: &Record,
        stored: usize,
        results: &[Option<Result<PutRecordOutcome, DiskError>>],
    ) -> bool {
        match self.resolve_key(ns, key).await {
            Ok(state) => state
                .versions
                .iter()
                .any(|v| v.record.version == rec.version && v.record.stamp == rec.stamp),
            Err(_) => {
                let replaced_any = results.iter().any(|r| {
                    matches!(
                        r,
                        Some(Ok(PutRecordOutcome::Stored {
                            replaced: Some(_),
                            ..
                        }))
                    )
                });
                replaced_any && self.width() - stored < self.quorum.read
            }
        }
    }

    /// Undoes a write that reached fewer than R disks: removes it where it
    /// was stored (if it is still that write) and puts back what it
    /// replaced. Frees nothing.
    async fn roll_back(
        &self,
        ns: &str,
        key: &str,
        rec: &Record,
        results: &[Option<Result<PutRecordOutcome, DiskError>>],
    ) {
        for (slot, r) in results.iter().enumerate() {
            if let Some(Ok(PutRecordOutcome::Stored { replaced, .. })) = r {
                let d = &self.disks[slot];
                let undone = d
                    .delete_record(ns.as_bytes(), key.as_bytes(), rec.version, Some(rec.stamp))
                    .await;
                if let (Ok(Some(_)), Some(old)) = (undone, replaced) {
                    let _ = d
                        .put_record(ns.as_bytes(), key.as_bytes(), RecordPut::of(old.clone()))
                        .await;
                }
            }
        }
    }

    /// Deletes, on one disk, the data a replaced or deleted record referred
    /// to, except ids in `keep`. Returns the record's tier object, which
    /// the caller releases once for all disks.
    pub(crate) async fn free_record_data(
        &self,
        slot: usize,
        old: &Record,
        keep: &[Uuid],
    ) -> Option<TierRef> {
        let Ok(obj) = record::decode::<ObjectRecord>(&old.body) else {
            tracing::warn!(
                disk = self.disks[slot].label(),
                "undecodable replaced record"
            );
            return None;
        };
        for part in obj.parts.iter() {
            let Some(id) = part.data_id.filter(|id| !keep.contains(id)) else {
                continue;
            };
            self.free_data(slot, id, part.packed).await;
        }
        obj.tiered
    }

    /// Deletes one disk's shard file or piece `id`, and drops it from the
    /// hot-object cache.
    pub async fn free_data(&self, slot: usize, id: Uuid, packed: bool) {
        self.cache.forget(id);
        if let Err(e) = packed::delete_data(&self.disks[slot], id, packed).await {
            tracing::warn!(disk = self.disks[slot].label(), error = %e, "could not free object data");
        }
    }

    /// Frees the shard files of data `id` on every disk at once.
    pub async fn free_everywhere(&self, id: Uuid) {
        self.cache.forget(id);
        let results = self
            .each_disk(|_, d| async move { d.delete_shard(ShardId(id)).await })
            .await;
        for (slot, r) in results.into_iter().enumerate() {
            if let Err(e) = r {
                tracing::warn!(disk = self.disks[slot].label(), error = %e, "could not free object data");
            }
        }
    }

    /// Hands tier objects no version refers to any more to the tier worker
    /// (each once, however many disks reported it). One that is lost here
    /// (a crash first) is found by the tier sweep.
    pub fn release_tiered(&self, mut refs: Vec<TierRef>) {
        refs.sort_by_key(|t| t.id);
        refs.dedup();
        if let Some(tx) = self.tier_release.get() {
            for t in refs {
                let _ = tx.send(t);
            }
        }
    }

    /// Removes `key`'s null-version record from every disk, best effort,
    /// but not its data: what it referred to stays for whoever owns it now
    /// (the parts of an upload whose completion failed stay with the
    /// upload). A disk that missed it keeps the record, which its next
    /// heal compares.
    pub async fn forget(&self, ns: &str, key: &str) {
        let item = vec![(key.as_bytes().to_vec(), VersionId::NULL)];
        let mut agreement = self.agreement.writing(ns, [&item[0].0[..]]);
        let results = self
            .each_disk(|_, d| {
                let item = item.clone();
                async move { d.delete_records(ns.as_bytes(), item).await }
            })
            .await;
        agreement.reached_every_disk(results.iter().all(|r| r.is_ok()));
    }

    /// Deletes one version from every disk; acknowledged when a write quorum
    /// of disks answered. Frees each disk's shard files of that version.
    pub async fn delete_version(
        &self,
        ns: &str,
        key: &str,
        version: VersionId,
    ) -> Result<(), SetError> {
        self.delete_versions(ns, vec![(key.as_bytes().to_vec(), version)])
            .await
    }

    /// Deletes many versions with one batch per disk; the caller holds every
    /// key's lock. Only once a write quorum of disks removed them is their
    /// data freed (rule 3), and on each disk only what no version left
    /// there refers to.
    pub async fn delete_versions(
        &self,
        ns: &str,
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<(), SetError> {
        let mut writing = self
            .agreement
            .writing(ns, items.iter().map(|(k, _)| &k[..]));
        failpoint::hit("set.delete.before", "").await;
        let results = self
            .each_disk(|_, d| {
                let items = items.clone();
                async move {
                    let r = d.delete_records(ns.as_bytes(), items).await;
                    if r.is_ok() {
                        failpoint::hit("set.delete.removed", d.label()).await;
                    }
                    r
                }
            })
            .await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        writing.reached_every_disk(ok == self.width());
        drop(writing);
        failpoint::hit("set.delete.quorum", "").await;
        // Short of a write quorum the versions may still be visible:
        // nothing they refer to goes.
        self.decide_write(Tally {
            ok,
            ..Tally::default()
        })?;
        let released = join_all(results.into_iter().enumerate().map(|(slot, r)| {
            let items = &items;
            async move {
                let removed: Vec<Record> = r.into_iter().flatten().flatten().collect();
                if removed.is_empty() {
                    return Vec::new();
                }
                let Some(keep) = self.referenced_on(slot, ns, items).await else {
                    return Vec::new();
                };
                let mut released = Vec::new();
                for old in removed {
                    released.extend(self.free_record_data(slot, &old, &keep).await);
                }
                released
            }
        }))
        .await;
        self.release_tiered(released.into_iter().flatten().collect());
        Ok(())
    }

    /// The data ids the versions left on disk `slot` under the keys of
    /// `items` refer to, none of which may be freed there; `None` when the
    /// disk cannot say (then nothing is freed on it: garbage collection
    /// decides later).
    pub(crate) async fn referenced_on(
        &self,
        slot: usize,
        ns: &str,
        items: &[(Vec<u8>, VersionId)],
    ) -> Option<Vec<Uuid>> {
        let mut keys: Vec<&[u8]> = items.iter().map(|(k, _)| &k[..]).collect();
        keys.sort();
        keys.dedup();
        let mut keep = Vec::new();
        for key in keys {
            match self.disks[slot].get_records(ns.as_bytes(), key).await {
                Ok(left) => {
                    for r in left {
                        if let Ok(obj) = record::decode::<ObjectRecord>(&r.body) {
                            keep.extend(obj.data_ids());
                        }
                    }
                }
                Err(_) => return None,
            }
        }
        Some(keep)
    }
}
