//! Completing a multipart upload, exactly once. The version record the
//! completion writes carries the upload's id and, on each disk, removes
//! the upload and its part records in the same atomic write: a disk
//! holds either the upload or the version that completed it, never both.
//!
//! A CompleteMultipartUpload can be cut off (a crash, a client that gives
//! up) after its version reached some disks; the SDK then sends it again.
//! That retry finds the version (on any disk, visible or not), writes the
//! very same record where it is missing (same version id and stamp), and
//! answers with it: one upload makes one version, whose parts no other
//! version shares, and a retry after a success gets the first result.
//!
//! Crash windows: before the version reaches any disk, the upload is
//! untouched and can be completed again; with the version on some disks,
//! those hold no upload and the rest hold it — the retry (or an abort,
//! which then completes it) finishes it; after the version is on a write
//! quorum but before the unchosen parts are freed, their data is left to
//! garbage collection.

use std::sync::Arc;

use disk_engine::{failpoint, Record};
use erasure_set::record::{self, ObjectMeta, ObjectRecord, PartRef};
use erasure_set::{Carried, Committed, DiskRecords, ErasureSet, KeyState};
use uuid::Uuid;

use crate::error::Error;
use crate::model::{PartRecord, UploadRecord, Versioning};
use crate::objects::WriteOptions;
use crate::store::Store;

impl Store {
    /// Completes an upload with `parts` (already validated by the caller, in
    /// order) as the new current version of `bucket/key`, or answers with
    /// the version an earlier completion of it wrote; frees the data of
    /// uploaded parts that were not chosen. Runs to its end even if this
    /// future is dropped.
    pub async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        parts: Vec<PartRecord>,
        meta: ObjectMeta,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let (bucket, key, opts) = (bucket.to_string(), key.to_string(), opts.clone());
        self.detached(move |me| async move {
            me.complete_now(&bucket, &key, upload_id, parts, meta, &opts)
                .await
        })
        .await
    }

    /// The version a completion of upload `upload_id` wrote, when the
    /// upload no longer exists (a CompleteMultipartUpload retried after it
    /// succeeded); `NoSuchUpload` otherwise.
    pub async fn completed_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<ObjectRecord, Error> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move {
            let _guard = me.lock_key(&bucket, &key).await?;
            let (home, records) = me.home(&bucket, &key).await?.into_set(None)?;
            match completion_in(&home, &records, upload_id)? {
                Some(done) => {
                    me.finish_completion(&home, &bucket, &key, upload_id, done)
                        .await
                }
                None => Err(Error::NoSuchUpload),
            }
        })
        .await
    }

    async fn complete_now(
        &self,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        parts: Vec<PartRecord>,
        meta: ObjectMeta,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let _guard = self.lock_key(bucket, key).await?;
        failpoint::hit("complete.before", "").await;
        // Read once under the lock: for an earlier completion, and for the
        // new version's place among the key's versions.
        let (home, records) = self.home(bucket, key).await?.into_set(None)?;
        if let Some(done) = completion_in(&home, &records, upload_id)? {
            return self
                .finish_completion(&home, bucket, key, upload_id, done)
                .await;
        }
        // Read under the lock: completed or aborted while we waited?
        let upload = self.get_upload(bucket, key, upload_id).await?;
        // The key lives where its upload does (see `home.rs`).
        if !Arc::ptr_eq(&self.upload_set(bucket, key, &upload)?, &home) {
            return Err(Error::Internal(format!(
                "the upload of {bucket}/{key} is not in the pool the key lives in"
            )));
        }
        if upload.part_pool().is_some() {
            let tiered = TieredCompletion {
                upload_id,
                upload,
                parts,
                meta,
            };
            return self
                .complete_tiered_upload(&home, bucket, key, tiered, opts, records)
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
        let (versioning, state) = self
            .prepare_version_from(&home, bucket, key, opts, records)
            .await?;
        let committed = self
            .commit_completion(&home, (bucket, key), upload_id, record, versioning, &state)
            .await?;
        let keep: Vec<Uuid> = committed.object.data_ids().collect();
        let dropped = committed.completed;
        self.free_parts(&home, None, dropped, &keep).await;
        failpoint::hit("complete.dropped", "").await;
        Ok(committed.object)
    }

    /// [`Self::complete_now`] of an upload whose parts are in another pool
    /// (the cold pool, or a hot pool added later): the parts become a tier
    /// object there, then the version referring to it is committed in
    /// `home`, where the upload and its key live. The caller holds the key
    /// lock.
    async fn complete_tiered_upload(
        &self,
        home: &ErasureSet,
        bucket: &str,
        key: &str,
        done: TieredCompletion,
        opts: &WriteOptions,
        records: DiskRecords,
    ) -> Result<ObjectRecord, Error> {
        let TieredCompletion {
            upload_id,
            upload,
            parts,
            meta,
        } = done;
        let pool = upload.part_pool().unwrap_or(crate::model::COLD_TIER);
        let chosen: Vec<PartRef> = parts.iter().map(|p| p.part.clone()).collect();
        let (versioning, state) = self
            .prepare_version_from(home, bucket, key, opts, records)
            .await?;
        let tier = self
            .commit_tier_parts(
                pool,
                upload_id,
                upload.layout,
                chosen.clone(),
                bucket,
                key,
                &meta,
            )
            .await?;
        let record = ObjectRecord::new_version(
            home.layout_for(bucket, key),
            crate::transition::tiered_parts(&chosen),
            true,
            meta,
            upload.tags.clone(),
            Some(tier.clone()),
        );
        // A write that fails leaves the tier object to the tier sweep,
        // which judges it under the key's lock by the writes readers are
        // or may be shown; the
        // parts stay with the upload until a version took them over.
        let committed = self
            .commit_completion(home, (bucket, key), upload_id, record, versioning, &state)
            .await?;
        let keep: Vec<Uuid> = chosen.iter().filter_map(|p| p.data_id).collect();
        self.free_parts(home, Some((pool, upload_id)), committed.completed, &keep)
            .await;
        failpoint::hit("complete.dropped", "").await;
        Ok(committed.object)
    }

    /// Writes `record` in `home` as the version completing `upload_id`
    /// (which the same per-disk writes remove), prepared with
    /// [`Self::prepare_version_from`]; the caller holds the key lock.
    async fn commit_completion(
        &self,
        home: &ErasureSet,
        (bucket, key): (&str, &str),
        upload_id: Uuid,
        mut record: ObjectRecord,
        versioning: Versioning,
        state: &KeyState,
    ) -> Result<Committed, Error> {
        record.upload_id = Some(upload_id);
        let all = vec![true; home.width()];
        let committed = self
            .write_version(
                home,
                bucket,
                key,
                record,
                &all,
                versioning,
                state,
                None,
                Some(upload_id),
            )
            .await?;
        failpoint::hit("complete.committed", "").await;
        Ok(committed)
    }

    /// Finishes a completion that reached some disks: writes its very
    /// record (same version and stamp) where it is missing, with the
    /// upload's removal, frees the parts it did not choose, and answers
    /// with its version. The caller holds the key lock.
    pub(crate) async fn finish_completion(
        &self,
        home: &ErasureSet,
        bucket: &str,
        key: &str,
        upload_id: Uuid,
        done: Record,
    ) -> Result<ObjectRecord, Error> {
        let carried = Carried {
            completes: Some(upload_id),
            ..Carried::default()
        };
        let committed = home.repeat_record(bucket, key, done, carried).await?;
        let object = committed.object;
        let dropped = committed.completed;
        if !dropped.is_empty() {
            let mut keep: Vec<Uuid> = object.data_ids().collect();
            let pool = object.tiered.as_ref().map(|t| t.tier.clone());
            if let Some(t) = &object.tiered {
                keep.extend(self.tier_object_data(t).await);
            }
            // The tier object's set is the upload's (see `tier.rs`).
            let pool = pool.as_deref().map(|p| (p, upload_id));
            self.free_parts(home, pool, dropped, &keep).await;
        }
        Ok(object)
    }

    /// The data ids every visible version of a key refers to, with the
    /// data of the tier objects they refer to.
    pub(crate) async fn data_of_versions(&self, state: &KeyState) -> Vec<Uuid> {
        let mut keep = state.data_ids(None);
        for t in state
            .versions
            .iter()
            .filter_map(|v| v.object.tiered.as_ref())
        {
            keep.extend(self.tier_object_data(t).await);
        }
        keep
    }
}

/// What completing an upload whose parts are in another pool takes.
struct TieredCompletion {
    upload_id: Uuid,
    upload: UploadRecord,
    parts: Vec<PartRecord>,
    meta: ObjectMeta,
}

/// The record of the version a completion of `upload_id` wrote, among a
/// key's records in `home` (on any disk that answered, visible or not),
/// newest write first. A read quorum must have answered, so an
/// acknowledged completion is always found.
pub(crate) fn completion_in(
    home: &ErasureSet,
    records: &DiskRecords,
    upload_id: Uuid,
) -> Result<Option<Record>, Error> {
    home.require_read_quorum(records)?;
    Ok(records
        .iter()
        .flatten()
        .flatten()
        .filter(|r| {
            record::decode::<ObjectRecord>(&r.body).is_ok_and(|o| o.upload_id == Some(upload_id))
        })
        .max_by_key(|r| r.stamp)
        .cloned())
}
