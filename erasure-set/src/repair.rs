//! On-read repair: reads that met a missing or corrupt shard, or a disk
//! without the current record, queue the object here; one background worker
//! rebuilds the damaged shards from the healthy ones and rewrites the
//! missing records.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use disk_engine::{PutRecordOutcome, RecordPut, ShardId, ShardWriter};
use futures::future::join_all;
use uuid::Uuid;

use crate::error::SetError;
use crate::layout::{PartGeometry, StripeRun};
use crate::packed::{self, Pieces};
use crate::record::ObjectRecord;
use crate::set::{ErasureSet, Resolved};

/// Stripes verified or rebuilt per step when repairing a shard.
const REPAIR_BATCH_STRIPES: u64 = 16;
/// Parts of one object whose shards a presence check looks at.
const PRESENCE_CHECK_PARTS: usize = 64;

/// Writes the visible record `rec` to a disk that lacks it. A newer write
/// of the same version that never became visible (cut short before its
/// quorum) refuses it; when `everyone` answered, that write cannot have
/// been acknowledged, so it is removed first (its data there freed).
async fn put_over_unseen(
    d: &Arc<dyn disk_engine::Disk>,
    ns: &str,
    key: &str,
    rec: disk_engine::Record,
    everyone: bool,
) -> Result<PutRecordOutcome, disk_engine::DiskError> {
    let (ns, key) = (ns.as_bytes(), key.as_bytes());
    match d.put_record(ns, key, RecordPut::of(rec.clone())).await? {
        PutRecordOutcome::Superseded { current } if everyone => {
            let removed = d
                .delete_record(ns, key, rec.version, Some(current.stamp))
                .await?;
            let mut stored = d.put_record(ns, key, RecordPut::of(rec)).await?;
            if let (Some(old), PutRecordOutcome::Stored { replaced, .. }) = (removed, &mut stored) {
                replaced.get_or_insert(old);
            }
            Ok(stored)
        }
        other => Ok(other),
    }
}

impl ErasureSet {
    /// Brings every visible version of `ns/key` back to full redundancy on
    /// the disks that answer: rewrites shard files that are missing, damaged
    /// (as reported in `damaged`) or of the wrong length, then writes the
    /// record where it is missing or stale.
    pub async fn heal_object(
        &self,
        ns: &str,
        key: &str,
        damaged: &[(Uuid, usize)],
    ) -> Result<(), SetError> {
        // Under the lock every writer of the key takes.
        let elsewhere = self.lock_place.get().and_then(|place| place(ns, key));
        let locks = elsewhere.as_ref().map_or(&self.locks, |s| s.locks());
        let _guard = locks.lock(ns, key).await?;
        let state = self.resolve_key(ns, key).await?;
        let mut failed = 0;
        for v in &state.versions {
            failed += self
                .heal_version(ns, key, v, &state.responded, damaged)
                .await?;
        }
        if failed > 0 {
            return Err(SetError::Internal(format!(
                "{failed} repair writes failed (see the log)"
            )));
        }
        if state.responded.len() == self.width() && state.responded.iter().all(|r| *r) {
            self.at_risk.healed(ns, key);
        }
        Ok(())
    }

    /// Resolves the keys whose disks' heads were found to differ, and
    /// notes at risk those with a visible version some disk lacks (see
    /// `at_risk.rs`). A key that cannot be resolved now stays a suspect.
    pub async fn confirm_at_risk(&self) {
        for (ns, key) in self.at_risk.take_suspects() {
            match self.resolve_key(&ns, &key).await {
                Ok(state) if state.versions.iter().any(|v| v.holders.contains(&false)) => {
                    self.at_risk.note(&ns, &key)
                }
                Ok(_) => {}
                Err(_) => self.at_risk.suspect(&ns, &key),
            }
        }
    }

    async fn heal_version(
        &self,
        ns: &str,
        key: &str,
        v: &Resolved,
        responded: &[bool],
        damaged: &[(Uuid, usize)],
    ) -> Result<usize, SetError> {
        let obj = &v.object;
        let mut failed = 0;
        for part in &obj.parts {
            let Some(data_id) = part.data_id else {
                continue;
            };
            let geo = part.geometry(obj.layout);
            let bad = self.verify_shards(data_id, &geo, responded).await;
            let targets: Vec<bool> = (0..self.width())
                .map(|slot| bad[slot] || (responded[slot] && damaged.contains(&(data_id, slot))))
                .collect();
            if targets.iter().any(|t| *t) {
                failed += if geo.packed {
                    self.rebuild_pieces(data_id, &geo, &targets).await?
                } else {
                    self.rebuild_shards(data_id, &geo, &targets).await?
                };
                disk_engine::failpoint::hit("heal.rebuilt", "").await;
            }
        }
        let missing: Vec<bool> = (0..self.width())
            .map(|slot| responded[slot] && !v.holders[slot])
            .collect();
        if missing.iter().any(|m| *m) {
            let rec = v.record.clone();
            let everyone = responded.iter().all(|r| *r);
            // Left in doubt: the disks differed, and the next comparison of
            // their heads finds whether they still do.
            let agreement = self.agreement.writing(ns, [key.as_bytes()]);
            let results = self
                .some_disks(&missing, |_, d| {
                    let rec = rec.clone();
                    async move { put_over_unseen(&d, ns, key, rec, everyone).await }
                })
                .await;
            drop(agreement);
            disk_engine::failpoint::hit("heal.recorded", "").await;
            let item = [(key.as_bytes().to_vec(), rec.version)];
            for (slot, r) in results.into_iter().enumerate() {
                match r {
                    Some(Ok(PutRecordOutcome::Stored { replaced, .. })) => {
                        self.repair
                            .stats
                            .records_rewritten
                            .fetch_add(1, Ordering::Relaxed);
                        if let Some(old) = replaced {
                            if let Some(mut keep) = self.referenced_on(slot, ns, &item).await {
                                keep.extend(obj.data_ids());
                                self.free_record_data(slot, &old, &keep).await;
                            }
                        }
                    }
                    Some(Err(e)) => {
                        failed += 1;
                        tracing::warn!(disk = self.disks[slot].label(), error = %e, "record repair failed")
                    }
                    _ => {}
                }
            }
        }
        Ok(failed)
    }

    /// Reads every shard of a part completely (each read verifies every
    /// block's checksum) and returns the slots whose shard is missing, short
    /// or corrupt. Disks that do not answer are not counted as damaged.
    async fn verify_shards(
        &self,
        data_id: Uuid,
        geo: &PartGeometry,
        responded: &[bool],
    ) -> Vec<bool> {
        let mut bad = vec![false; self.width()];
        for run in geo.runs(0..geo.stripes(), REPAIR_BATCH_STRIPES) {
            let (off, len) = (run.offset, run.len);
            let reads = self
                .each_disk(|_, d| async move {
                    packed::read_data(&d, data_id, geo.packed, off, len).await
                })
                .await;
            for (slot, r) in reads.into_iter().enumerate() {
                if let Err(e) = r {
                    if responded[slot] && !e.is_disk_failure() {
                        bad[slot] = true;
                    }
                }
            }
        }
        bad
    }

    /// After a read that went well, checks in the background that the shards
    /// the read did not need (parity; every shard with `all`, for a read
    /// served from the hot-object cache) are present and whole, and
    /// queues a repair when one is not. At most [`crate::repair_queue::PRESENCE_CHECKS`] run at
    /// once; further ones are skipped, which samples them under load.
    pub(crate) fn check_unread_shards(
        self: &Arc<Self>,
        ns: &str,
        key: &str,
        object: &ObjectRecord,
        all: bool,
    ) {
        let Ok(permit) = self.presence_checks.clone().try_acquire_owned() else {
            return;
        };
        let set = self.clone();
        let (ns, key) = (ns.to_string(), key.to_string());
        // A read that went well read the data shards: only the parity
        // shards' disks are left to check.
        let layout = object.layout;
        let parity: Vec<bool> = (0..self.width())
            .map(|slot| all || layout.shard_of_disk(slot) >= layout.data as usize)
            .collect();
        let parts: Vec<(Uuid, PartGeometry)> = object
            .parts
            .iter()
            .take(PRESENCE_CHECK_PARTS)
            .filter_map(|p| p.data_id.map(|id| (id, p.geometry(object.layout))))
            .collect();
        tokio::spawn(async move {
            let mut damaged = Vec::new();
            for (id, geo) in parts {
                let expect = geo.shard_len();
                let lens = set
                    .some_disks(&parity, |_, d| async move {
                        packed::data_len(&d, id, geo.packed).await
                    })
                    .await;
                for (slot, r) in lens.into_iter().enumerate() {
                    let Some(r) = r else { continue };
                    let whole = match r {
                        Ok(l) => l == expect,
                        Err(e) => e.is_disk_failure(),
                    };
                    if !whole {
                        damaged.push((id, slot));
                    }
                }
            }
            if !damaged.is_empty() {
                set.repair.request(&ns, &key, damaged);
            }
            drop(permit);
        });
    }

    /// Reads `run` of part `data_id` from every slot but the `targets` and
    /// returns every shard of it (read or rebuilt from parity), with the
    /// block spans of the run inside each shard.
    async fn rebuild_run(
        &self,
        data_id: Uuid,
        geo: &PartGeometry,
        run: &StripeRun,
        targets: &[bool],
    ) -> Result<(Vec<Bytes>, Vec<(u64, u64)>), SetError> {
        let layout = geo.layout;
        let n = layout.width();
        let (off, len) = (run.offset, run.len);
        let sources = (0..n).filter(|s| !targets[*s]);
        let reads = join_all(sources.map(|slot| {
            let d = self.disks[slot].clone();
            async move {
                (
                    slot,
                    packed::read_data(&d, data_id, geo.packed, off, len).await,
                )
            }
        }))
        .await;
        let mut present: Vec<Option<Bytes>> = vec![None; n];
        for (slot, r) in reads {
            if let Ok(b) = r {
                present[layout.shard_of_disk(slot)] = Some(b);
            }
        }
        let codec = self.codec.clone();
        let spans = geo.block_spans(run.stripes.clone());
        let run_spans = spans.clone();
        let full =
            tokio::task::spawn_blocking(move || codec.reconstruct_run(&present, &run_spans, n))
                .await
                .map_err(|e| SetError::Internal(format!("rebuild: {e}")))??;
        Ok((full, spans))
    }

    /// Rewrites the pieces of packed object `id` on the `targets` slots from
    /// the other disks' pieces; returns how many of those writes failed.
    async fn rebuild_pieces(
        &self,
        id: Uuid,
        geo: &PartGeometry,
        targets: &[bool],
    ) -> Result<usize, SetError> {
        let layout = geo.layout;
        let run = geo
            .runs(0..geo.stripes(), 1)
            .pop()
            .expect("a packed object is one stripe");
        let (shards, _) = self.rebuild_run(id, geo, &run, targets).await?;
        let pieces = Pieces { id, shards };
        let mut failed = 0;
        let written = self
            .some_disks(targets, |slot, d| {
                let piece = pieces.for_shard(layout.shard_of_disk(slot));
                async move { d.put_piece(piece).await }
            })
            .await;
        for (slot, r) in written.into_iter().enumerate() {
            match r {
                Some(Ok(())) => {
                    self.repair
                        .stats
                        .shards_rewritten
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::info!(disk = self.disks[slot].label(), piece = %id.simple(), "piece repaired");
                }
                Some(Err(e)) => {
                    failed += 1;
                    tracing::warn!(disk = self.disks[slot].label(), error = %e, "piece repair failed")
                }
                None => {}
            }
        }
        Ok(failed)
    }

    /// Rewrites the shard files of `data_id` on the `targets` slots from the
    /// other disks, stripe batch by stripe batch; returns how many of those
    /// shards could not be written.
    async fn rebuild_shards(
        &self,
        data_id: Uuid,
        geo: &PartGeometry,
        targets: &[bool],
    ) -> Result<usize, SetError> {
        let layout = geo.layout;
        let mut writers: Vec<Option<Box<dyn ShardWriter>>> = self
            .create_shards(data_id, layout, targets)
            .await
            .into_iter()
            .map(|r| r.and_then(|r| r.ok()))
            .collect();
        // Targets whose shard could not even be created.
        let mut failed = (0..targets.len())
            .filter(|&slot| targets[slot] && writers[slot].is_none())
            .count();
        for run in geo.runs(0..geo.stripes(), REPAIR_BATCH_STRIPES) {
            let (full, spans) = self.rebuild_run(data_id, geo, &run, targets).await?;
            for (slot, w) in writers.iter_mut().enumerate() {
                let Some(writer) = w else { continue };
                let shard = &full[layout.shard_of_disk(slot)];
                let mut ok = true;
                for &(at, l) in &spans {
                    if let Err(err) = writer
                        .append(shard.slice(at as usize..(at + l) as usize))
                        .await
                    {
                        tracing::warn!(disk = self.disks[slot].label(), error = %err, "repair write failed");
                        ok = false;
                        break;
                    }
                }
                if !ok {
                    failed += 1;
                    *w = None;
                }
            }
        }
        for (slot, w) in writers.into_iter().enumerate() {
            if let Some(w) = w {
                match w.finish().await {
                    Ok(_) => {
                        self.repair
                            .stats
                            .shards_rewritten
                            .fetch_add(1, Ordering::Relaxed);
                        tracing::info!(disk = self.disks[slot].label(), shard = %ShardId(data_id), "shard repaired");
                    }
                    Err(e) => {
                        failed += 1;
                        tracing::warn!(disk = self.disks[slot].label(), error = %e, "repair finish failed")
                    }
                }
            }
        }
        Ok(failed)
    }
}
