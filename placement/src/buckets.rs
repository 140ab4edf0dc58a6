//! Buckets: small records in the system namespace (in the set holding the
//! cluster-wide documents), read with the same quorum rules as objects,
//! and cached briefly (see `bucket_cache.rs`).
//!
//! DeleteBucket is exact although a bucket's keys are spread over every
//! set of the first pool: a write racing it is either acknowledged, and
//! the DeleteBucket then fails with `BucketNotEmpty`, or refused with
//! `NoSuchBucket`; never acknowledged into a deleted bucket. It goes:
//!
//! 1. under the bucket record's lock, mark the record *deleting* and
//!    forget it from this process's cache (with other gateways sharing the
//!    disks, wait out their cache's TTL too);
//! 2. look for a visible version in every set; found: remove the mark and
//!    answer `BucketNotEmpty`; none: remove the record.
//!
//! A write commits its version, then looks at the bucket again
//! ([`Store::confirm_bucket`], a cache read). A record read before the mark
//! is trusted only until step 2 has begun, so a write that still saw the
//! bucket whole committed before step 2 looked, and was seen. A write that
//! sees the mark waits for the decision: kept, it is acknowledged;
//! deleted, its version is removed again and it answers `NoSuchBucket`.
//!
//! Crash windows: a kill after step 1 leaves the mark; writes wait for it
//! at most [`SETTLE_WAIT`], and a mark older than [`DELETING_STALE`] (a
//! DeleteBucket never decides later than [`DECISION_LIMIT`] after its
//! mark) is ignored, so the bucket serves again and a retried DeleteBucket
//! marks it anew. A kill between a write's commit and its look leaves the
//! version unacknowledged: a DeleteBucket deciding later sees it. One that
//! had decided already (possible only for a write whose bucket read began
//! before the mark) leaves it in the deleted bucket's keys, unseen until
//! a bucket of that name is created again (a known gap).

use std::time::{Duration, Instant};

use disk_engine::{failpoint, ListStart, UploadListStart};
use erasure_set::clock::now_ns;
use erasure_set::record::{self, version_key, ObjectRecord, ObjectSummary};
use erasure_set::{instance, ErasureSet};

use crate::bucket_cache::BUCKET_CACHE_TTL;
use crate::error::Error;
use crate::model::{BucketRecord, DeletingMark, SYSTEM_NS};
use crate::store::Store;

const BUCKET_PREFIX: &str = "buckets/";
/// The longest a DeleteBucket takes between marking the bucket and
/// deciding; one that took longer gives up and removes its mark.
const DECISION_LIMIT: Duration = Duration::from_secs(20);
/// The longest a write waits for a DeleteBucket's decision.
const SETTLE_WAIT: Duration = Duration::from_secs(30);
/// A mark older than this is one whose DeleteBucket died: ignored.
const DELETING_STALE: Duration = Duration::from_secs(60);
/// How often a waiting write looks at the bucket again.
const SETTLE_POLL: Duration = Duration::from_millis(50);

fn bucket_key(name: &str) -> String {
    format!("{BUCKET_PREFIX}{name}")
}

/// Whether `b` is being deleted now (its mark is not a dead one's).
fn deleting(b: &BucketRecord) -> bool {
    b.deleting
        .as_ref()
        .is_some_and(|m| now_ns().saturating_sub(m.since_ns) < DELETING_STALE.as_nanos() as u64)
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
            deleting: None,
        };
        let value = record::encode(&bucket).to_vec();
        self.update_system_doc(&bucket_key(name), |current| match current {
            Some(_) => Err(Error::BucketExists {
                bucket: name.to_string(),
            }),
            None => Ok(Some(value)),
        })
        .await?;
        self.bucket_cache.forget(name);
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
        self.bucket_cache.forget(name);
        updated.ok_or_else(|| Error::Internal("bucket update without result".into()))
    }

    /// Looks a bucket up (`NoSuchBucket` if absent).
    pub async fn bucket(&self, name: &str) -> Result<BucketRecord, Error> {
        match self.bucket_cache.get(name) {
            Some(b) => Ok(b),
            None => self.read_bucket(name).await,
        }
    }

    /// Reads a bucket's record from the disks (and caches it).
    async fn read_bucket(&self, name: &str) -> Result<BucketRecord, Error> {
        let start = self.bucket_cache.read_start();
        let value = self
            .get_system_doc(&bucket_key(name))
            .await?
            .ok_or_else(|| Error::no_such_bucket(name))?;
        let b: BucketRecord = record::decode(&value)?;
        self.bucket_cache.put(&b, start);
        Ok(b)
    }

    /// The bucket a write goes into: [`Store::bucket`], after waiting for
    /// the decision of a DeleteBucket under way (`NoSuchBucket` once it
    /// deleted the bucket).
    pub(crate) async fn bucket_for_write(&self, name: &str) -> Result<BucketRecord, Error> {
        let b = self.bucket(name).await?;
        if !deleting(&b) {
            return Ok(b);
        }
        let deadline = Instant::now() + SETTLE_WAIT;
        loop {
            tokio::time::sleep(SETTLE_POLL).await;
            let b = self.read_bucket(name).await?;
            if !deleting(&b) {
                return Ok(b);
            }
            if Instant::now() >= deadline {
                return Err(Error::LockTimeout(format!(
                    "bucket {name} is being deleted; try again"
                )));
            }
        }
    }

    /// Called after committing `object` as a version of `bucket/key` in
    /// `set`, before
    /// acknowledging it: the bucket must still be there (see the module
    /// notes). If it was deleted meanwhile, the version is removed again
    /// and the write answers `NoSuchBucket`. Any other failure to tell
    /// (the wait ran out, the bucket's set cannot be read) leaves the
    /// version as it was committed — it replaced what was there, so
    /// removing it would lose both — and answers the failure: the write is
    /// not acknowledged, and its outcome is what a read shows.
    pub(crate) async fn confirm_bucket(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        object: &ObjectRecord,
    ) -> Result<(), Error> {
        let e = match self.bucket_for_write(bucket).await {
            Ok(_) => return Ok(()),
            Err(e @ Error::NoSuchBucket { .. }) => e,
            Err(other) => return Err(other),
        };
        let version = vec![(key.as_bytes().to_vec(), version_key(object.version_id))];
        if let Err(undo) = set.delete_versions(bucket, version).await {
            tracing::warn!(bucket, key, error = %undo, "removing a version written into a deleted bucket failed");
        }
        Err(e)
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
    /// multipart uploads in it are aborted. Runs to its end even if this
    /// future is dropped.
    pub async fn delete_bucket(&self, name: &str) -> Result<(), Error> {
        let name = name.to_string();
        self.detached(move |me| async move { me.delete_bucket_now(&name).await })
            .await
    }

    async fn delete_bucket_now(&self, name: &str) -> Result<(), Error> {
        let key = bucket_key(name);
        self.bucket(name).await?;
        self.ensure_empty(name).await?;
        // Uploads are aborted before the bucket's lock is taken: aborting
        // takes each upload's key lock, and no code path holds two locks
        // while waiting (which keeps DeleteObjects' many-key locking free
        // of deadlocks).
        let mut start = UploadListStart::Beginning;
        loop {
            let (uploads, next) = self.list_uploads(name, "", start, 1000).await?;
            for u in uploads {
                match self.abort_upload(name, &u.key, u.upload_id).await {
                    Ok(()) | Err(Error::NoSuchUpload) => {}
                    Err(e) => return Err(e),
                }
            }
            match next {
                Some(n) => start = n,
                None => break,
            }
        }
        let system = self.pools.system().clone();
        let _guard = system.locks().lock(SYSTEM_NS, &key).await?;
        let mut bucket = self.read_bucket(name).await?;
        bucket.deleting = Some(DeletingMark {
            since_ns: now_ns(),
            by: instance(),
        });
        self.write_system_doc(&key, record::encode(&bucket).to_vec())
            .await?;
        let marked = Instant::now();
        self.bucket_cache.forget(name);
        failpoint::hit("bucket.delete.marked", "").await;
        if system.locks().is_shared() {
            // Other gateways trust what they read before the mark this long.
            tokio::time::sleep(BUCKET_CACHE_TTL).await;
        }
        let decided = match self.ensure_empty(name).await {
            Ok(()) if marked.elapsed() < DECISION_LIMIT => self.remove_system_doc(&key).await,
            Ok(()) => Err(Error::LockTimeout(format!(
                "deleting bucket {name} took too long; try again"
            ))),
            Err(e) => Err(e),
        };
        if decided.is_err() {
            bucket.deleting = None;
            if let Err(e) = self
                .write_system_doc(&key, record::encode(&bucket).to_vec())
                .await
            {
                tracing::warn!(bucket = name, error = %e, "removing the deleting mark failed; it lapses by itself");
            }
        }
        self.bucket_cache.forget(name);
        decided
    }

    /// `BucketNotEmpty` when any key of the bucket has a version, in any
    /// set of any hot pool.
    async fn ensure_empty(&self, name: &str) -> Result<(), Error> {
        for set in self.pools.key_sets() {
            ensure_empty_in(&set, name).await?;
        }
        Ok(())
    }
}

/// `BucketNotEmpty` when any key of bucket `name` has a version in `set`.
async fn ensure_empty_in(set: &ErasureSet, name: &str) -> Result<(), Error> {
    let mut page = set
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
                page = set
                    .list_resolved::<ObjectSummary>(name, b"", ListStart::After(k), 1000)
                    .await?
            }
            None => return Ok(()),
        }
    }
}
