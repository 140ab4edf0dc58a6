//! Multipart uploads: upload and part records on every disk, part data as
//! shard files of their own, and completion as one version record that lists
//! the chosen parts in order.

use std::collections::HashMap;
use std::sync::Arc;

use disk_engine::{failpoint, DiskError, PartEntry, ShardId, UploadEntry, UploadListStart};
use uuid::Uuid;

use crate::error::Error;
use crate::objects::WriteOptions;
use crate::record::{
    self, ChecksumValue, ObjectMeta, ObjectRecord, PartRecord, PartRef, UploadRecord,
};
use crate::set::{now_ns, ErasureSet};
use crate::store::Store;
use crate::tier::TIER_NS;
use crate::write::{BodyStream, StagedData};

/// An upload as listed.
#[derive(Clone, Debug)]
pub struct UploadInfo {
    /// Key the upload will create.
    pub key: String,
    /// Upload id.
    pub upload_id: Uuid,
    /// Its stored state.
    pub record: UploadRecord,
}

impl Store {
    /// Starts an upload for `bucket/key`; `meta` is what the object will
    /// carry. With `cold`, its parts are written to the cold pool and the
    /// finished object is a tier object there.
    pub async fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        meta: ObjectMeta,
        tags: Vec<(String, String)>,
        checksum: Option<(String, String)>,
        cold: bool,
    ) -> Result<Uuid, Error> {
        self.bucket(bucket).await?;
        let upload_id = Uuid::now_v7();
        let pool = match cold {
            true => Some(crate::tier::COLD_TIER.to_string()),
            false => self.pool_for_new_data(None).await,
        };
        let layout = match &pool {
            Some(p) => self
                .require_pool(p)?
                .set
                .layout_for(TIER_NS, &upload_id.to_string()),
            None => self.set.layout_for(bucket, key),
        };
        let rec = UploadRecord {
            initiated_ns: now_ns(),
            layout,
            meta,
            tags,
            checksum_algorithm: checksum.as_ref().map(|c| c.0.clone()),
            checksum_type: checksum.map(|c| c.1),
            cold,
            pool,
        };
        let entry = UploadEntry {
            key: key.as_bytes().to_vec(),
            upload_id,
            body: record::encode(&rec),
        };
        let results = self
            .set
            .each_disk(|_, d| {
                let entry = entry.clone();
                async move { d.put_upload(bucket.as_bytes(), entry).await }
            })
            .await;
        self.require_write_quorum(&results)?;
        Ok(upload_id)
    }

    fn require_write_quorum<T>(&self, results: &[Result<T, DiskError>]) -> Result<(), Error> {
        let ok = results.iter().filter(|r| r.is_ok()).count();
        if ok < self.set.quorum.write {
            if results.iter().any(|r| matches!(r, Err(DiskError::Full))) {
                return Err(Error::DiskFull);
            }
            return Err(Error::WriteQuorum {
                needed: self.set.quorum.write,
                got: ok,
            });
        }
        Ok(())
    }

    /// An upload's state (`NoSuchUpload` if it does not exist).
    pub async fn get_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<UploadRecord, Error> {
        self.bucket(bucket).await?;
        let results = self
            .set
            .each_disk(|_, d| async move {
                d.get_upload(bucket.as_bytes(), key.as_bytes(), upload_id)
                    .await
            })
            .await;
        let answered = results
            .iter()
            .filter(|r| matches!(r, Ok(_) | Err(DiskError::NotFound)))
            .count();
        let found: Vec<_> = results.into_iter().flatten().collect();
        if found.len() >= self.set.quorum.read {
            return record::decode(&found[0]);
        }
        if answered >= self.set.quorum.read {
            return Err(Error::NoSuchUpload);
        }
        Err(Error::ReadQuorum {
            needed: self.set.quorum.read,
            got: answered,
        })
    }

    /// The set an upload's parts are written to.
    fn part_set(&self, upload: &UploadRecord) -> Result<Arc<ErasureSet>, Error> {
        match upload.part_pool() {
            Some(p) => Ok(self.require_pool(p)?.set.clone()),
            None => Ok(self.set.clone()),
        }
    }

    /// Streams one part's data into shard files with the upload's layout.
    pub async fn write_part_data(
        &self,
        upload: &UploadRecord,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        self.part_set(upload)?
            .write_data(upload.layout, body, size_hint, false)
            .await
    }

    /// Records a written part; a part of the same number is replaced and
    /// its data freed.
    #[allow(clippy::too_many_arguments)]
    pub async fn commit_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        upload: &UploadRecord,
        number: u32,
        staged: StagedData,
        etag: String,
        checksum: Option<ChecksumValue>,
    ) -> Result<PartRecord, Error> {
        let rec = PartRecord {
            part: PartRef {
                number,
                size: staged.size,
                data_id: staged.data_id,
                packed: false,
                etag,
                checksum,
            },
            mtime_ns: now_ns(),
            disks: staged.disks.clone(),
        };
        let entry = PartEntry {
            number,
            body: record::encode(&rec),
        };
        failpoint::hit("part.staged", "").await;
        let _guard = self.set.locks.lock(bucket, key).await?;
        let results = self
            .set
            .each_disk(|_, d| {
                let entry = entry.clone();
                async move {
                    let r = d
                        .put_part(bucket.as_bytes(), key.as_bytes(), upload_id, entry)
                        .await;
                    if r.is_ok() {
                        failpoint::hit("part.stored", d.label()).await;
                    }
                    r
                }
            })
            .await;
        failpoint::hit("part.recorded", "").await;
        let gone = results
            .iter()
            .filter(|r| matches!(r, Err(DiskError::NotFound)))
            .count();
        if gone >= self.set.quorum.read {
            return Err(Error::NoSuchUpload);
        }
        self.require_write_quorum(&results)?;
        let pool = upload.part_pool();
        let replaced: Vec<(usize, PartEntry)> = results
            .into_iter()
            .enumerate()
            .filter_map(|(slot, r)| r.ok().flatten().map(|old| (slot, old)))
            .collect();
        let keep = [staged.data_id.unwrap_or_default()];
        staged.keep();
        self.free_parts(pool, replaced, &keep).await;
        Ok(rec)
    }

    /// Frees the data of dropped part records (each reported by a disk
    /// slot), except ids in `keep`: on that slot's disk for parts in this
    /// pool, on every disk of the pool named `pool` for parts there.
    async fn free_parts(
        &self,
        pool: Option<&str>,
        dropped: Vec<(usize, PartEntry)>,
        keep: &[Uuid],
    ) {
        let mut elsewhere = Vec::new();
        for (slot, old) in dropped {
            let Ok(p) = record::decode::<PartRecord>(&old.body) else {
                continue;
            };
            let Some(id) = p.part.data_id.filter(|id| !keep.contains(id)) else {
                continue;
            };
            if pool.is_some() {
                elsewhere.push(id);
            } else {
                let _ = self.set.disks[slot].delete_shard(ShardId(id)).await;
            }
        }
        elsewhere.sort();
        elsewhere.dedup();
        if let (Some(pool), false) = (pool.and_then(|p| self.tier_pool(p)), elsewhere.is_empty()) {
            for id in elsewhere {
                let _ = pool
                    .set
                    .each_disk(|_, d| async move { d.delete_shard(ShardId(id)).await })
                    .await;
            }
        }
    }

    /// Lists parts numbered above `after`; returns the page and whether more
    /// follow. A part counts when a read quorum of disks hold the same write.
    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartRecord>, bool), Error> {
        self.get_upload(bucket, key, upload_id).await?;
        let results = self
            .set
            .each_disk(|_, d| async move { d.list_parts(upload_id, after, max).await })
            .await;
        let mut horizon: Option<u32> = None;
        let mut votes: HashMap<u32, HashMap<Vec<u8>, usize>> = HashMap::new();
        for (parts, more) in results.iter().flatten() {
            if *more {
                let last = parts.last().map(|p| p.number).unwrap_or(after);
                horizon = Some(horizon.map_or(last, |h| h.min(last)));
            }
            for p in parts {
                *votes
                    .entry(p.number)
                    .or_default()
                    .entry(p.body.to_vec())
                    .or_default() += 1;
            }
        }
        let mut out = Vec::new();
        for (number, bodies) in votes {
            if horizon.is_some_and(|h| number > h) {
                continue;
            }
            let winner = bodies
                .into_iter()
                .filter(|(_, c)| *c >= self.set.quorum.read)
                .filter_map(|(b, _)| record::decode::<PartRecord>(&b).ok())
                .max_by_key(|p| p.mtime_ns);
            if let Some(p) = winner {
                out.push(p);
            }
        }
        out.sort_by_key(|p| p.part.number);
        Ok((out, horizon.is_some()))
    }

    /// Completes an upload with `parts` (already validated by the caller, in
    /// order) as the new current version of `bucket/key`; frees the data of
    /// uploaded parts that were not chosen.
    pub async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        parts: Vec<PartRecord>,
        meta: ObjectMeta,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let upload = self.get_upload(bucket, key, upload_id).await?;
        let _guard = self.set.locks.lock(bucket, key).await?;
        // The upload may have been completed or aborted while we waited.
        self.get_upload(bucket, key, upload_id).await?;
        failpoint::hit("complete.before", "").await;
        if upload.part_pool().is_some() {
            return self
                .complete_cold_upload(bucket, key, upload_id, upload, parts, meta, opts)
                .await;
        }
        let record = ObjectRecord::new_version(
            upload.layout,
            parts.iter().map(|p| p.part.clone()).collect(),
            true,
            meta,
            upload.tags.clone(),
            None,
        );
        let all = vec![true; self.set.width()];
        let stored = self
            .commit_version_locked(bucket, key, record, &all, opts, None)
            .await?;
        failpoint::hit("complete.committed", "").await;
        let keep: Vec<Uuid> = stored.data_ids().collect();
        self.drop_upload(bucket, key, upload_id, None, &keep).await;
        failpoint::hit("complete.dropped", "").await;
        Ok(stored)
    }

    /// [`Self::complete_upload`] of an upload whose parts are in another
    /// pool (the cold pool, or a hot pool added later): the parts become a tier object there, then the version
    /// referring to it is committed. The caller holds the key lock.
    #[allow(clippy::too_many_arguments)]
    async fn complete_cold_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        upload: UploadRecord,
        parts: Vec<PartRecord>,
        meta: ObjectMeta,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let chosen: Vec<PartRef> = parts.iter().map(|p| p.part.clone()).collect();
        let tier = self
            .commit_tier_parts(
                upload.part_pool().unwrap_or(crate::tier::COLD_TIER),
                upload.layout,
                chosen.clone(),
                bucket,
                key,
                &meta,
            )
            .await?;
        let record = ObjectRecord::new_version(
            self.set.layout_for(bucket, key),
            crate::transition::tiered_parts(&chosen),
            true,
            meta,
            upload.tags.clone(),
            Some(tier.clone()),
        );
        let all = vec![true; self.set.width()];
        let stored = match self
            .commit_version_locked(bucket, key, record, &all, opts, None)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                // The parts stay with the upload (it can be completed again
                // or aborted); only the tier object's record goes.
                self.forget_tier_object(&tier).await;
                return Err(e);
            }
        };
        let keep: Vec<Uuid> = chosen.iter().filter_map(|p| p.data_id).collect();
        self.drop_upload(bucket, key, upload_id, upload.part_pool(), &keep)
            .await;
        Ok(stored)
    }

    /// Removes the upload's records from every disk and frees the data of
    /// its parts (in the pool named `pool`, else this one), except ids in
    /// `keep`.
    /// Returns how many disks had it.
    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        pool: Option<&str>,
        keep: &[Uuid],
    ) -> usize {
        let results = self
            .set
            .each_disk(|_, d| async move {
                d.delete_upload(bucket.as_bytes(), key.as_bytes(), upload_id)
                    .await
            })
            .await;
        let mut had = 0;
        let mut dropped = Vec::new();
        for (slot, r) in results.into_iter().enumerate() {
            if let Ok(parts) = r {
                had += 1;
                dropped.extend(parts.into_iter().map(|p| (slot, p)));
            }
        }
        self.free_parts(pool, dropped, keep).await;
        had
    }

    /// Aborts an upload and frees its parts' data. Data that the current
    /// version of the key references (a completion that raced) is kept.
    pub async fn abort_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(), Error> {
        let upload = self.get_upload(bucket, key, upload_id).await?;
        let _guard = self.set.locks.lock(bucket, key).await?;
        let keep: Vec<Uuid> = match self.set.resolve_key(bucket, key).await {
            Ok(state) => {
                let mut keep: Vec<Uuid> = state
                    .versions
                    .iter()
                    .flat_map(|v| v.object.data_ids().collect::<Vec<_>>())
                    .collect();
                // A completion that raced keeps its parts in a tier object.
                for t in state
                    .versions
                    .iter()
                    .filter_map(|v| v.object.tiered.as_ref())
                {
                    keep.extend(self.tier_object_data(t).await);
                }
                keep
            }
            Err(_) => {
                return Err(Error::ReadQuorum {
                    needed: self.set.quorum.read,
                    got: 0,
                })
            }
        };
        if self
            .drop_upload(bucket, key, upload_id, upload.part_pool(), &keep)
            .await
            == 0
        {
            return Err(Error::NoSuchUpload);
        }
        Ok(())
    }

    /// Lists uploads of `bucket` under `prefix`, ordered by key then id.
    pub async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadInfo>, bool), Error> {
        self.bucket(bucket).await?;
        let results = self
            .set
            .each_disk(|_, d| {
                let start = start.clone();
                async move {
                    d.list_uploads(bucket.as_bytes(), prefix.as_bytes(), start, max)
                        .await
                }
            })
            .await;
        let answered = results.iter().filter(|r| r.is_ok()).count();
        if answered < self.set.quorum.read {
            return Err(Error::ReadQuorum {
                needed: self.set.quorum.read,
                got: answered,
            });
        }
        let mut horizon: Option<(Vec<u8>, Uuid)> = None;
        let mut counts: std::collections::BTreeMap<(Vec<u8>, Uuid), (usize, bytes::Bytes)> =
            Default::default();
        for (ups, more) in results.iter().flatten() {
            if *more {
                if let Some(u) = ups.last() {
                    let last = (u.key.clone(), u.upload_id);
                    if horizon.as_ref().is_none_or(|h| &last < h) {
                        horizon = Some(last);
                    }
                }
            }
            for u in ups {
                counts
                    .entry((u.key.clone(), u.upload_id))
                    .or_insert((0, u.body.clone()))
                    .0 += 1;
            }
        }
        let mut out = Vec::new();
        for ((key, upload_id), (count, body)) in counts {
            if horizon
                .as_ref()
                .is_some_and(|h| &(key.clone(), upload_id) > h)
            {
                break;
            }
            if count < self.set.quorum.read {
                continue;
            }
            out.push(UploadInfo {
                key: String::from_utf8_lossy(&key).into_owned(),
                upload_id,
                record: record::decode(&body)?,
            });
        }
        Ok((out, horizon.is_some()))
    }
}
