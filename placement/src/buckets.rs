//! Buckets: small records in the system namespace, read with the same
//! quorum rules as objects, and cached briefly.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use disk_engine::{ListStart, UploadListStart, VersionId};

use crate::error::Error;
use crate::layout::ErasureLayout;
use crate::record::{self, BucketRecord, ObjectMeta, ObjectRecord};
use crate::store::{Store, SYSTEM_NS};

const BUCKET_PREFIX: &str = "buckets/";
/// Bucket lookups remembered at most; the cache is cleared when full.
const BUCKET_CACHE_ENTRIES: usize = 4096;

fn bucket_key(name: &str) -> String {
    format!("{BUCKET_PREFIX}{name}")
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn decode_bucket(obj: &ObjectRecord) -> Result<BucketRecord, Error> {
    let inline = obj
        .inline
        .as_deref()
        .ok_or_else(|| Error::Corrupt("bucket record without value".into()))?;
    record::decode(inline)
}

impl Store {
    /// Creates a bucket. `BucketExists` if it already exists.
    pub async fn create_bucket(&self, name: &str, region: &str) -> Result<BucketRecord, Error> {
        let key = bucket_key(name);
        let _guard = self.set.locks.lock(SYSTEM_NS, &key).await;
        let state = self.set.resolve_key(SYSTEM_NS, &key).await?;
        if state.latest().is_some_and(|v| !v.object.delete_marker) {
            return Err(Error::BucketExists);
        }
        let bucket = BucketRecord {
            name: name.to_string(),
            created_ns: now_ns(),
            region: region.to_string(),
        };
        let obj = ObjectRecord {
            version_id: None,
            mtime_ns: 0,
            delete_marker: false,
            size: 0,
            layout: ErasureLayout {
                data: self.set.data as u8,
                parity: self.set.parity as u8,
                block_size: self.set.block_size,
                rotation: 0,
            },
            parts: Vec::new(),
            multipart: false,
            meta: ObjectMeta::default(),
            inline: Some(record::encode(&bucket).to_vec()),
        };
        let all = vec![true; self.set.width()];
        self.set
            .commit_record(SYSTEM_NS, &key, VersionId::NULL, obj, &all)
            .await?;
        self.bucket_cache.lock().remove(name);
        Ok(bucket)
    }

    /// Looks a bucket up (`NoSuchBucket` if absent).
    pub async fn bucket(&self, name: &str) -> Result<BucketRecord, Error> {
        if let Some((b, at)) = self.bucket_cache.lock().get(name) {
            if at.elapsed() < crate::store::BUCKET_CACHE_TTL {
                return Ok(b.clone());
            }
        }
        let key = bucket_key(name);
        let state = self.set.resolve_key(SYSTEM_NS, &key).await?;
        let Some(v) = state.latest().filter(|v| !v.object.delete_marker) else {
            return Err(Error::NoSuchBucket);
        };
        if (0..self.set.width()).any(|s| state.responded[s] && !v.holders[s]) {
            self.set.repair.request(SYSTEM_NS, &key, Vec::new());
        }
        let b = decode_bucket(&v.object)?;
        let mut cache = self.bucket_cache.lock();
        if cache.len() >= BUCKET_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(name.to_string(), (b.clone(), Instant::now()));
        Ok(b)
    }

    /// Every bucket, by name.
    pub async fn list_buckets(&self) -> Result<Vec<BucketRecord>, Error> {
        let mut out = Vec::new();
        let mut start = ListStart::Beginning;
        loop {
            let page = self
                .set
                .list_resolved(SYSTEM_NS, BUCKET_PREFIX.as_bytes(), start, 1000)
                .await?;
            for (_, versions) in &page.keys {
                if let Some(v) = versions.first().filter(|v| !v.object.delete_marker) {
                    out.push(decode_bucket(&v.object)?);
                }
            }
            match page.next {
                Some(k) => start = ListStart::After(k),
                None => return Ok(out),
            }
        }
    }

    /// Deletes an empty bucket (`BucketNotEmpty` otherwise). Unfinished
    /// multipart uploads in it are aborted.
    pub async fn delete_bucket(&self, name: &str) -> Result<(), Error> {
        let key = bucket_key(name);
        let _guard = self.set.locks.lock(SYSTEM_NS, &key).await;
        self.bucket(name).await?;
        let page = self
            .set
            .list_resolved(name, b"", ListStart::Beginning, 1)
            .await?;
        let mut page = page;
        loop {
            if !page.keys.is_empty() {
                return Err(Error::BucketNotEmpty);
            }
            match page.next.take() {
                Some(k) => {
                    page = self
                        .set
                        .list_resolved(name, b"", ListStart::After(k), 1000)
                        .await?
                }
                None => break,
            }
        }
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
        self.set
            .delete_version(SYSTEM_NS, &key, VersionId::NULL)
            .await?;
        self.bucket_cache.lock().remove(name);
        Ok(())
    }
}
