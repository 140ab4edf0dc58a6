//! Multipart uploads: upload and part records on every disk, part data as
//! shard files of their own, and completion as one version record that lists
//! the chosen parts in order.

use std::sync::Arc;

use disk_engine::{failpoint, PartEntry, UploadEntry, UploadListStart};
use erasure_set::clock::now_ns;
use erasure_set::record::{self, ChecksumValue, ObjectMeta, PartRef};
use erasure_set::{BodyStream, DroppedPart, ErasureSet, PartRefused, StagedData};
use futures::future::{join_all, try_join_all};
use uuid::Uuid;

use crate::completion::completion_in;
use crate::error::Error;
use crate::merge::{merge_pages, SetPage};
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
        self.bucket_for_write(bucket).await?;
        // A cold upload's parts go to the cold set its id names.
        let upload_id = match cold {
            true => self.pools.new_tier_id(crate::model::COLD_TIER),
            false => Uuid::now_v7(),
        };
        // An upload places a new key as a version does (see `home.rs`):
        // under the key's lock, when it may live in more than one pool.
        let _guard = match self.pools.has_later_hot() {
            true => Some(self.lock_key(bucket, key).await?),
            false => None,
        };
        let set = self.write_set(bucket, key).await?;
        let pool = cold.then(|| crate::model::COLD_TIER.to_string());
        let layout = match &pool {
            Some(p) => self
                .pools
                .require_tier_set(p, upload_id)?
                .layout_for(TIER_NS, &upload_id.to_string()),
            None => set.layout_for(bucket, key),
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
            home: self.pools.home_name(&set),
        };
        let entry = UploadEntry {
            key: key.as_bytes().to_vec(),
            upload_id,
            body: record::encode(&rec),
        };
        set.put_upload(bucket, entry).await?;
        // As a version is (see `buckets.rs`): an upload a DeleteBucket
        // racing it did not see is removed again.
        if let Err(e @ Error::NoSuchBucket { .. }) = self.bucket_for_write(bucket).await {
            if let Err(undo) = set.delete_upload(bucket, key, upload_id).await {
                tracing::warn!(bucket, key, error = %undo, "removing an upload made in a deleted bucket failed");
            }
            return Err(e);
        }
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
        let sets = self.pools.homes_of(bucket, key);
        let found = join_all(sets.iter().map(|s| s.get_upload(bucket, key, upload_id))).await;
        let mut failed = None;
        for answer in found {
            match answer {
                Ok(Some(body)) => return Ok(record::decode(&body)?),
                Ok(None) => {}
                Err(e) => failed = failed.or(Some(Error::from(e))),
            }
        }
        Err(failed.unwrap_or(Error::NoSuchUpload))
    }

    /// The set holding `bucket/key`'s upload `upload` (its records, and
    /// its parts unless they are in another pool).
    pub(crate) fn upload_set(
        &self,
        bucket: &str,
        key: &str,
        upload: &UploadRecord,
    ) -> Result<Arc<ErasureSet>, Error> {
        self.pools.key_set_in(upload.home.as_deref(), bucket, key)
    }

    /// The set the parts of `bucket/key`'s upload `upload_id` are
    /// written to: its home set, or the set its id hashes to in the pool
    /// its parts go to.
    pub(crate) fn part_set(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        upload: &UploadRecord,
    ) -> Result<Arc<ErasureSet>, Error> {
        match upload.part_pool() {
            Some(p) => self.pools.require_tier_set(p, upload_id),
            None => self.upload_set(bucket, key, upload),
        }
    }

    /// Streams one part's data of `bucket/key`'s upload `upload_id` into
    /// shard files with the upload's layout.
    pub async fn write_part_data(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        upload: &UploadRecord,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        Ok(self
            .part_set(bucket, key, upload_id, upload)?
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
            mtime_ns: self.upload_set(bucket, key, upload)?.next_stamp().mtime_ns,
            disks: staged.disks.clone(),
        };
        let entry = PartEntry {
            number,
            body: record::encode(&rec),
        };
        failpoint::hit("part.staged", "").await;
        let _guard = self.lock_key(bucket, key).await?;
        // The set `write_part_data` staged the data in.
        let part_set = self.part_set(bucket, key, upload_id, upload)?;
        // Staged entries in the upload's own set go with the part records;
        // in another pool's, they are removed once the records are written.
        let staged_ids = staged.hand_over();
        let here = upload.part_pool().is_none();
        let unstage = if here { staged_ids.clone() } else { Vec::new() };
        let home = self.upload_set(bucket, key, upload)?;
        let replaced = match home.put_part(bucket, key, upload_id, entry, unstage).await {
            Ok(replaced) => replaced,
            Err(refused) => {
                // Nothing is freed. Data no part record refers to goes now;
                // the rest is judged by the part records that landed.
                for id in staged_ids {
                    if refused.stored == 0 {
                        part_set.discard_later(id);
                    } else {
                        part_set.unstage(id).await;
                    }
                }
                return Err(match refused.why {
                    PartRefused::UploadGone => Error::NoSuchUpload,
                    PartRefused::Set(e) => e.into(),
                });
            }
        };
        if !here {
            for id in &staged_ids {
                part_set.unstage(*id).await;
            }
        }
        let pool = upload.part_pool();
        let keep = [staged.data_id.unwrap_or_default()];
        self.free_parts(&home, pool.map(|p| (p, upload_id)), replaced, &keep)
            .await;
        Ok(rec)
    }

    /// Frees the data of dropped part records of an upload living in
    /// `home` (each reported by a disk slot), except ids in `keep`: on that
    /// slot's disk for parts in `home`; for parts in another pool (`pool`:
    /// its name and the upload's id), on every disk of the upload's set
    /// there.
    pub(crate) async fn free_parts(
        &self,
        home: &ErasureSet,
        pool: Option<(&str, Uuid)>,
        dropped: Vec<DroppedPart>,
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
                home.free_data(slot, id, false).await;
            }
        }
        elsewhere.sort();
        elsewhere.dedup();
        let set = pool.and_then(|(p, upload)| self.pools.tier_set(p, upload));
        if let (Some(pool), false) = (set, elsewhere.is_empty()) {
            for id in elsewhere {
                pool.free_everywhere(id).await;
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
        let upload = self.get_upload(bucket, key, upload_id).await?;
        let (numbers, more) = self
            .upload_set(bucket, key, &upload)?
            .list_parts(upload_id, after, max)
            .await?;
        // Of a part written twice, the newer write.
        let out = numbers
            .into_iter()
            .filter_map(|(_, bodies)| {
                bodies
                    .iter()
                    .filter_map(|b| record::decode::<PartRecord>(b).ok())
                    .max_by_key(|p| p.mtime_ns)
            })
            .collect();
        Ok((out, more))
    }

    /// Removes the upload's records from every disk of `home`, where it
    /// lives; once a write quorum of disks removed it, frees the data of
    /// its parts (in the pool named `pool`, else `home`), except ids in
    /// `keep`. `NoSuchUpload` when no disk had it.
    async fn drop_upload(
        &self,
        home: &ErasureSet,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        pool: Option<&str>,
        keep: &[Uuid],
    ) -> Result<(), Error> {
        // Short of a write quorum the upload may still be there: nothing of
        // it is freed.
        let Some(dropped) = home.delete_upload(bucket, key, upload_id).await? else {
            return Err(Error::NoSuchUpload);
        };
        self.free_parts(home, pool.map(|p| (p, upload_id)), dropped, keep)
            .await;
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
        let _guard = self.lock_key(bucket, key).await?;
        let home = self.upload_set(bucket, key, &upload)?;
        let records = home.read_records(bucket, key).await;
        if let Some(done) = completion_in(&home, &records, upload_id)? {
            self.finish_completion(&home, bucket, key, upload_id, done)
                .await?;
            return Err(Error::NoSuchUpload);
        }
        let state = home.resolve_records(records)?;
        let keep = self.data_of_versions(&state).await;
        self.drop_upload(&home, bucket, key, upload_id, upload.part_pool(), &keep)
            .await
    }

    /// Lists uploads of `bucket` under `prefix`, ordered by key then id,
    /// and where the next page starts when more may follow (the page may
    /// be short, even empty, when they do).
    pub async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadInfo>, Option<UploadListStart>), Error> {
        self.bucket(bucket).await?;
        let sets = self.pools.key_sets();
        let pages = try_join_all(sets.iter().map(|set| {
            let start = start.clone();
            async move {
                let (entries, next) = set.list_uploads(bucket, prefix, start, max).await?;
                let entries = entries
                    .into_iter()
                    .map(|u| ((u.key.clone(), u.upload_id), u))
                    .collect();
                Ok::<_, Error>(SetPage { entries, next })
            }
        }))
        .await?;
        let (entries, next) = merge_pages(pages, max);
        let out = entries
            .into_iter()
            .map(|(_, u)| {
                Ok(UploadInfo {
                    key: String::from_utf8_lossy(&u.key).into_owned(),
                    upload_id: u.upload_id,
                    record: record::decode(&u.body)?,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok((
            out,
            next.map(|(key, id)| UploadListStart::AfterUpload(key, id)),
        ))
    }
}
