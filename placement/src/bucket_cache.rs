//! Bucket records read lately, trusted for [`BUCKET_CACHE_TTL`] from the
//! moment their read began (not ended: a slow read may return a record
//! older than its end). Forgetting a bucket also drops the reads under way
//! when it was forgotten, so a read that began before a change cannot put
//! the record as it was back into the cache after it.
//!
//! DeleteBucket relies on both (see `buckets.rs`): once it has forgotten
//! the bucket, no write of this process trusts a record read before its
//! mark, and a write of another gateway trusts one at most
//! [`BUCKET_CACHE_TTL`] after the mark landed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::model::BucketRecord;

/// How long a bucket lookup is trusted without asking the disks again.
pub(crate) const BUCKET_CACHE_TTL: Duration = Duration::from_secs(2);
/// Bucket lookups remembered at most; the cache is cleared when full.
const BUCKET_CACHE_ENTRIES: usize = 4096;

/// When a read of a bucket record began, to hand to [`BucketCache::put`].
pub(crate) struct ReadStart {
    at: Instant,
    epoch: u64,
}

/// Recently read bucket records.
#[derive(Default)]
pub(crate) struct BucketCache {
    entries: Mutex<HashMap<String, (BucketRecord, Instant)>>,
    /// Bumped by every [`BucketCache::forget`].
    epoch: AtomicU64,
}

impl BucketCache {
    /// The record of `name` if one was read less than the TTL ago.
    pub(crate) fn get(&self, name: &str) -> Option<BucketRecord> {
        let entries = self.entries.lock();
        let (b, at) = entries.get(name)?;
        (at.elapsed() < BUCKET_CACHE_TTL).then(|| b.clone())
    }

    /// Call before reading a record to cache.
    pub(crate) fn read_start(&self) -> ReadStart {
        ReadStart {
            at: Instant::now(),
            epoch: self.epoch.load(Ordering::SeqCst),
        }
    }

    /// Remembers `record`, read from `start`, unless a bucket was
    /// forgotten since the read began.
    pub(crate) fn put(&self, record: &BucketRecord, start: ReadStart) {
        let mut entries = self.entries.lock();
        if self.epoch.load(Ordering::SeqCst) != start.epoch {
            return;
        }
        if entries.len() >= BUCKET_CACHE_ENTRIES {
            entries.clear();
        }
        entries.insert(record.name.clone(), (record.clone(), start.at));
    }

    /// Forgets `name`, and every read under way.
    pub(crate) fn forget(&self, name: &str) {
        let mut entries = self.entries.lock();
        self.epoch.fetch_add(1, Ordering::SeqCst);
        entries.remove(name);
    }
}
