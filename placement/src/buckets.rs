//! Buckets: small records in the system namespace, read with the same
//! quorum rules as objects, and cached briefly.

use std::time::Instant;

use disk_engine::{ListStart, UploadListStart};
use erasure_set::clock::now_ns;
use erasure_set::record::{self, ObjectSummary};

use crate::error::Error;
use crate::model::BucketRecord;
use crate::model::SYSTEM_NS;
use crate::store::Store;

const BUCKET_PREFIX: &str = "buckets/";
/// Bucket lookups remembered at most; the cache is cleared when full.
const BUCKET_CACHE_ENTRIES: usize = 4096;

fn bucket_key(name: &str) -> String {
    format!("{BUCKET_PREFIX}{name}")
}

impl Store {
    /// Creates a bucket. `BucketExists` if it already exists.
    pub async fn create_bucket(&self, name: &str, region: &str) -> Result<BucketRecord, Error> {
        let bucket = BucketRecord {
            name: name.to_string(),
            created_ns: now_ns(),
            region: region.to_string(),
            versioning: Default::default(),
            config: Default::default(),
        };
        let value = record::encode(&bucket).to_vec();
        self.update_system_doc(&bucket_key(name), |current| match current {
            Some(_) => Err(Error::BucketExists {
                bucket: name.to_string(),
            }),
            None => Ok(Some(value)),
        })
        .await?;
        self.bucket_cache.lock().remove(name);
        Ok(bucket)
    }

    /// Changes a bucket's record (versioning, configuration documents) with
    /// `change`, atomically with respect to other changes of the bucket.
    pub async fn update_bucket(
        &self,
        name: &str,
        change: impl FnOnce(&mut BucketRecord) -> Result<(), Error>,
    ) -> Result<BucketRecord, Error> {
        let mut updated = None;
        self.update_system_doc(&bucket_key(name), |current| {
            let mut bucket: BucketRecord =
                record::decode(&current.ok_or_else(|| Error::no_such_bucket(name))?)?;
            change(&mut bucket)?;
            let value = record::encode(&bucket).to_vec();
            updated = Some(bucket);
            Ok(Some(value))
        })
        .await?;
        self.bucket_cache.lock().remove(name);
        updated.ok_or_else(|| Error::Internal("bucket update without result".into()))
    }

    /// Looks a bucket up (`NoSuchBucket` if absent).
    pub async fn bucket(&self, name: &str) -> Result<BucketRecord, Error> {
        if let Some((b, at)) = self.bucket_cache.lock().get(name) {
            if at.elapsed() < crate::store::BUCKET_CACHE_TTL {
                return Ok(b.clone());
            }
        }
        let value = self
            .get_system_doc(&bucket_key(name))
            .await?
            .ok_or_else(|| Error::no_such_bucket(name))?;
        let b: BucketRecord = record::decode(&value)?;
        let mut cache = self.bucket_cache.lock();
        if cache.len() >= BUCKET_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(name.to_string(), (b.clone(), Instant::now()));
        Ok(b)
    }

    /// Every bucket, by name.
    pub async fn list_buckets(&self) -> Result<Vec<BucketRecord>, Error> {
        self.list_system_docs(BUCKET_PREFIX)
            .await?
            .into_iter()
            .map(|(_, value)| Ok(record::decode(&value)?))
            .collect()
    }

    /// Deletes an empty bucket (`BucketNotEmpty` otherwise). Unfinished
    /// multipart uploads in it are aborted.
    pub async fn delete_bucket(&self, name: &str) -> Result<(), Error> {
        let key = bucket_key(name);
        self.bucket(name).await?;
        self.ensure_empty(name).await?;
        // Uploads are aborted before the bucket's lock is taken: aborting
        // takes each upload's key lock, and no code path holds two locks
        // while waiting (which keeps DeleteObjects' many-key locking free
        // of deadlocks).
        loop {
            let (uploads, _) = self
                .list_uploads(name, "", UploadListStart::Beginning, 1000)
                .await?;
            if uploads.is_empty() {
                break;
            }
            for u in uploads {
                match self.abort_upload(name, &u.key, u.upload_id).await {
                    Ok(()) | Err(Error::NoSuchUpload) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let _guard = self.set().locks().lock(SYSTEM_NS, &key).await?;
        self.bucket(name).await?;
        self.ensure_empty(name).await?;
        self.remove_system_doc(&key).await?;
        self.bucket_cache.lock().remove(name);
        Ok(())
    }

    /// `BucketNotEmpty` when any key of the bucket has a visible version.
    async fn ensure_empty(&self, name: &str) -> Result<(), Error> {
        let mut page = self
            .set()
            .list_resolved::<ObjectSummary>(name, b"", ListStart::Beginning, 1)
            .await?;
        loop {
            if !page.keys.is_empty() {
                return Err(Error::BucketNotEmpty {
                    bucket: name.to_string(),
                });
            }
            match page.next.take() {
                Some(k) => {
                    page = self
                        .set()
                        .list_resolved::<ObjectSummary>(name, b"", ListStart::After(k), 1000)
                        .await?
                }
                None => return Ok(()),
            }
        }
    }
}
