//! Object operations: stage data, commit versions, look up, read, delete, list.

use std::ops::Range;

use disk_engine::{ListStart, VersionId};

use crate::error::Error;
use crate::read::ObjectStream;
use crate::record::{ObjectMeta, ObjectRecord, PartRef};
use crate::store::Store;
use crate::write::{BodyStream, StagedData};

/// One page of an object listing.
pub struct ObjectListing {
    /// Keys in order with their current version (delete markers left out).
    pub entries: Vec<(String, ObjectRecord)>,
    /// Continue after this key when more may follow.
    pub next: Option<String>,
}

impl Store {
    /// Streams `body` into shard files for a future version of
    /// `bucket/key`. Nothing is visible until [`Store::put_object`].
    pub async fn write_data(
        &self,
        bucket: &str,
        key: &str,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        self.bucket(bucket).await?;
        let layout = self.set.layout_for(bucket, key);
        self.set.write_data(layout, body, size_hint).await
    }

    /// Makes staged data the current (null) version of `bucket/key`,
    /// replacing any previous one. Returns the stored record.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        staged: StagedData,
        meta: ObjectMeta,
    ) -> Result<ObjectRecord, Error> {
        self.bucket(bucket).await?;
        let record = ObjectRecord {
            version_id: None,
            mtime_ns: 0,
            delete_marker: false,
            size: staged.size,
            layout: staged.layout,
            parts: vec![PartRef {
                number: 1,
                size: staged.size,
                data_id: staged.data_id,
                etag: meta.etag.clone(),
                checksum: meta.checksum.clone(),
            }],
            multipart: false,
            meta,
            inline: None,
        };
        let _guard = self.set.locks.lock(bucket, key).await;
        let stored = self
            .set
            .commit_record(bucket, key, VersionId::NULL, record, &staged.disks)
            .await?;
        staged.keep();
        Ok(stored)
    }

    /// The current version of `bucket/key` (`NoSuchKey` if there is none).
    /// Queues a repair when some disk lacks it.
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectRecord, Error> {
        self.bucket(bucket).await?;
        let state = self.set.resolve_key(bucket, key).await?;
        let Some(v) = state.latest() else {
            return Err(Error::NoSuchKey);
        };
        if v.object.delete_marker {
            return Err(Error::NoSuchKey);
        }
        let incomplete = (0..self.set.width()).any(|s| state.responded[s] && !v.holders[s]);
        if incomplete {
            self.set.repair.request(bucket, key, Vec::new());
        }
        Ok(v.object.clone())
    }

    /// Streams bytes `range` of a version returned by [`Store::head_object`].
    pub fn read_object(
        &self,
        bucket: &str,
        key: &str,
        object: ObjectRecord,
        range: Range<u64>,
    ) -> ObjectStream {
        self.set.read_object(bucket, key, object, range)
    }

    /// Deletes the current (null) version of `bucket/key`. Deleting a key
    /// that does not exist succeeds.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), Error> {
        self.bucket(bucket).await?;
        let _guard = self.set.locks.lock(bucket, key).await;
        self.set.delete_version(bucket, key, VersionId::NULL).await
    }

    /// Lists up to `max_keys` keys of `bucket` under `prefix` from `start`.
    /// The page may hold fewer entries than asked even when more follow;
    /// continue from `next`.
    pub async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start: ListStart,
        max_keys: usize,
    ) -> Result<ObjectListing, Error> {
        self.bucket(bucket).await?;
        let page = self
            .set
            .list_resolved(bucket, prefix.as_bytes(), start, max_keys)
            .await?;
        let entries = page
            .keys
            .into_iter()
            .filter_map(|(k, mut versions)| {
                let v = versions.swap_remove(0);
                (!v.object.delete_marker).then_some((k, v.object))
            })
            .collect();
        Ok(ObjectListing {
            entries,
            next: page.next.map(|k| String::from_utf8_lossy(&k).into_owned()),
        })
    }
}
