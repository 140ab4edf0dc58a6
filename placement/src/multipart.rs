//! Multipart uploads: upload and part records on every disk, part data as
//! shard files of their own, and completion as one version record that lists
//! the chosen parts in order.

use std::collections::HashMap;
use std::sync::Arc;

use disk_engine::{failpoint, DiskError, PartEntry, UploadEntry, UploadListStart};
use erasure_set::clock::now_ns;
use erasure_set::record::{self, ChecksumValue, ObjectMeta, PartRef};
use erasure_set::{BodyStream, ErasureSet, StagedData};
use uuid::Uuid;

use crate::error::Error;
use crate::model::TIER_NS;
use crate::model::{PartRecord, UploadRecord};
use crate::store::Store;

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
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move {
            me.create_upload_now(&bucket, &key, meta, tags, checksum, cold)
                .await
        })
        .await
    }

    async fn create_upload_now(
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
            true => Some(crate::model::COLD_TIER.to_string()),
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
        self.set.require_write_quorum(&results)?;
        Ok(upload_id)
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
        if found.len() >= self.set.quorum().read {
            return Ok(record::decode(&found[0])?);
        }
        if answered >= self.set.quorum().read {
            return Err(Error::NoSuchUpload);
        }
        Err(self.set.read_quorum_lost(answered).into())
    }

    /// The set an upload's parts are written to.
    pub(crate) fn part_set(&self, upload: &UploadRecord) -> Result<Arc<ErasureSet>, Error> {
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
        Ok(self
            .part_set(upload)?
            .write_data(upload.layout, body, size_hint, false)
            .await?)
    }

    /// Records a written part; a part of the same number is replaced and
    /// its data freed once the new one is recorded on a write quorum. The
    /// commit runs to its end even if this future is dropped.
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
        let (bucket, key, upload) = (bucket.to_string(), key.to_string(), upload.clone());
        self.detached(move |me| async move {
            me.commit_part_now(
                &bucket, &key, upload_id, &upload, number, staged, etag, checksum,
            )
            .await
        })
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn commit_part_now(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        upload: &UploadRecord,
        number: u32,
        mut staged: StagedData,
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
            mtime_ns: self.set.next_stamp().mtime_ns,
            disks: staged.disks.clone(),
        };
        let entry = PartEntry {
            number,
            body: record::encode(&rec),
        };
        failpoint::hit("part.staged", "").await;
        let _guard = self.set.locks().lock(bucket, key).await?;
        // The set `write_part_data` staged the data in.
        let part_set = self.part_set(upload)?;
        // Staged entries in the upload's own set go with the part records;
        // in another pool's, they are removed once the records are written.
        let staged_ids = staged.hand_over();
        let here = upload.part_pool().is_none();
        let unstage = if here { staged_ids.clone() } else { Vec::new() };
        let results = self
            .set
            .each_disk(|_, d| {
                let (entry, unstage) = (entry.clone(), unstage.clone());
                async move {
                    let r = d
                        .put_part(bucket.as_bytes(), key.as_bytes(), upload_id, entry, unstage)
                        .await;
                    if r.is_ok() {
                        failpoint::hit("part.stored", d.label()).await;
                    }
                    r
                }
            })
            .await;
        failpoint::hit("part.recorded", "").await;
        let stored = results.iter().filter(|r| r.is_ok()).count();
        let gone = results
            .iter()
            .filter(|r| matches!(r, Err(DiskError::NotFound)))
            .count();
        let outcome = if gone >= self.set.quorum().read {
            Err(Error::NoSuchUpload)
        } else {
            Ok(self.set.require_write_quorum(&results)?)
        };
        if let Err(e) = outcome {
            // Nothing is freed. Data no part record refers to goes now; the
            // rest is judged by the part records that landed.
            for id in staged_ids {
                if stored == 0 {
                    part_set.discard_later(id);
                } else {
                    part_set.unstage(id).await;
                }
            }
            return Err(e);
        }
        if !here {
            for id in &staged_ids {
                part_set.unstage(*id).await;
            }
        }
        let pool = upload.part_pool();
        let replaced: Vec<(usize, PartEntry)> = results
            .into_iter()
            .enumerate()
            .filter_map(|(slot, r)| r.ok().flatten().map(|old| (slot, old)))
            .collect();
        let keep = [staged.data_id.unwrap_or_default()];
        self.free_parts(pool, replaced, &keep).await;
        Ok(rec)
    }

    /// Frees the data of dropped part records (each reported by a disk
    /// slot), except ids in `keep`: on that slot's disk for parts in this
    /// pool, on every disk of the pool named `pool` for parts there.
    pub(crate) async fn free_parts(
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
                self.set.free_data(slot, id, false).await;
            }
        }
        elsewhere.sort();
        elsewhere.dedup();
        if let (Some(pool), false) = (pool.and_then(|p| self.tier_pool(p)), elsewhere.is_empty()) {
            for id in elsewhere {
                pool.set.free_everywhere(id).await;
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
                .filter(|(_, c)| *c >= self.set.quorum().read)
                .filter_map(|(b, _)| record::decode::<PartRecord>(&b).ok())
                .max_by_key(|p| p.mtime_ns);
            if let Some(p) = winner {
                out.push(p);
            }
        }
        out.sort_by_key(|p| p.part.number);
        Ok((out, horizon.is_some()))
    }

    /// Removes the upload's records from every disk; once a write quorum of
    /// disks removed it, frees the data of its parts (in the pool named
    /// `pool`, else this one), except ids in `keep`. `NoSuchUpload` when
    /// no disk had it.
    async fn drop_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        pool: Option<&str>,
        keep: &[Uuid],
    ) -> Result<(), Error> {
        let results = self
            .set
            .each_disk(|_, d| async move {
                d.delete_upload(bucket.as_bytes(), key.as_bytes(), upload_id)
                    .await
            })
            .await;
        let answered = results
            .iter()
            .filter(|r| matches!(r, Ok(_) | Err(DiskError::NotFound)))
            .count();
        if answered < self.set.quorum().write {
            // The upload may still be there: nothing of it is freed.
            return Err(self.set.write_quorum_lost(answered).into());
        }
        let mut had = 0;
        let mut dropped = Vec::new();
        for (slot, r) in results.into_iter().enumerate() {
            if let Ok(parts) = r {
                had += 1;
                dropped.extend(parts.into_iter().map(|p| (slot, p)));
            }
        }
        if had == 0 {
            return Err(Error::NoSuchUpload);
        }
        self.free_parts(pool, dropped, keep).await;
        Ok(())
    }

    /// Aborts an upload and frees its parts' data. An upload whose
    /// completion reached some disk before (a CompleteMultipartUpload whose
    /// answer was lost) is completed instead, and `NoSuchUpload` answered:
    /// the completion came first. Runs to its end even if this future is
    /// dropped.
    pub async fn abort_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(), Error> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move { me.abort_upload_now(&bucket, &key, upload_id).await })
            .await
    }

    async fn abort_upload_now(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<(), Error> {
        let upload = self.get_upload(bucket, key, upload_id).await?;
        let _guard = self.set.locks().lock(bucket, key).await?;
        let records = self.set.read_records(bucket, key).await;
        if let Some(done) = self.completion_in(&records, upload_id)? {
            self.finish_completion(bucket, key, upload_id, done).await?;
            return Err(Error::NoSuchUpload);
        }
        let state = self.set.resolve_records(records)?;
        let keep = self.data_of_versions(&state).await;
        self.drop_upload(bucket, key, upload_id, upload.part_pool(), &keep)
            .await
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
        self.set.require_read_quorum(&results)?;
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
            if count < self.set.quorum().read {
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
