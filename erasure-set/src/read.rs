//! The read path: a byte range of an object version → the stripes covering
//! it → shard reads from the data shards only (systematic code, no decoding
//! while all is well) → on a missing or corrupt shard, parity reads and
//! reconstruction, and a repair request for the damaged shards.
//!
//! A producer task reads batches of stripes ahead of the consumer through a
//! bounded channel, so the next batch comes off disk while the current one
//! is sent. Memory per reader is a few batches whatever the object size.

use std::collections::VecDeque;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::join_all;
use futures::Stream;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::cache::{Source, Unit, UnitKey};
use crate::error::SetError;
use crate::layout::{ErasureLayout, PartGeometry, StripeRun};
use crate::packed;
use crate::record::ObjectRecord;
use crate::set::ErasureSet;

/// Stripe data per read unit (per shard: this ÷ k), about 4 MiB: the unit
/// of disk reads, of read-ahead and of the hot-object cache.
pub const READ_BATCH_BYTES: u64 = 4 << 20;
/// Units queued ahead of the consumer.
const READ_AHEAD_BATCHES: usize = 1;
/// Reads answered from the hot-object cache per background check of all
/// the object's shards (the check a read from disk makes of the parity it
/// did not read).
const CACHED_READS_PER_CHECK: u64 = 16;
/// Reads answered from the cache, for sampling their checks.
static CACHED_READS: AtomicU64 = AtomicU64::new(0);

/// Stream of an object's bytes as the set reads them (a producer task reads
/// ahead of it); ends early with an error if the data cannot be read
/// correctly (never with wrong bytes).
pub struct ObjectStream {
    rx: mpsc::Receiver<Result<Vec<Bytes>, SetError>>,
    pending: VecDeque<Bytes>,
}

impl Stream for ObjectStream {
    type Item = Result<Bytes, SetError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Ok(batch))) => self.pending.extend(batch),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Which disks failed while reading a part: reported for repair.
type Damage = Vec<usize>;

/// The same byte run of every shard of one part.
struct ShardRun {
    data_id: Uuid,
    packed: bool,
    layout: ErasureLayout,
    offset: u64,
    len: u64,
}

/// Shard runs read so far.
struct Gather {
    shards: Vec<Option<Bytes>>,
    tried: Vec<bool>,
    damage: Damage,
}

impl ErasureSet {
    /// Streams bytes `range` of `object` (stored under `ns/key`). The range
    /// must lie within the object.
    pub fn read_object(
        self: &Arc<Self>,
        ns: &str,
        key: &str,
        object: ObjectRecord,
        range: Range<u64>,
    ) -> ObjectStream {
        let (tx, rx) = mpsc::channel(READ_AHEAD_BATCHES);
        let set = self.clone();
        let (ns, key) = (ns.to_string(), key.to_string());
        tokio::spawn(async move {
            let mut damaged: Vec<(Uuid, usize)> = Vec::new();
            // Units served from memory touched no disk: their shards are
            // checked in the background like unread parity.
            let mut from_memory = false;
            let mut offset = 0u64;
            for part in &object.parts {
                let part_range = range.start.max(offset)..range.end.min(offset + part.size);
                offset += part.size;
                if part_range.start >= part_range.end {
                    continue;
                }
                let Some(data_id) = part.data_id else {
                    continue;
                };
                let geo = part.geometry(object.layout);
                let local = (part_range.start - (offset - part.size))
                    ..(part_range.end - (offset - part.size));
                let stripe = geo.layout.stripe_size();
                let per_unit = (READ_BATCH_BYTES / stripe).max(1);
                let first = local.start / stripe / per_unit;
                let last = (local.end - 1) / stripe / per_unit;
                for unit in first..=last {
                    let read = set.read_unit(data_id, &geo, unit, per_unit, &local).await;
                    match read {
                        Ok((chunks, damage, cached)) => {
                            from_memory |= cached;
                            for slot in damage {
                                if !damaged.contains(&(data_id, slot)) {
                                    damaged.push((data_id, slot));
                                }
                            }
                            if tx.send(Ok(chunks)).await.is_err() {
                                // The reader went away: stop reading.
                                if !damaged.is_empty() {
                                    set.repair.request(&ns, &key, damaged);
                                }
                                return;
                            }
                        }
                        Err(err) => {
                            let _ = tx.send(Err(err)).await;
                            set.repair.request(&ns, &key, damaged);
                            return;
                        }
                    }
                }
            }
            if damaged.is_empty() {
                // A read served from memory checks every shard, one read
                // in CACHED_READS_PER_CHECK (a hot object is read often).
                let sampled = !from_memory
                    || CACHED_READS
                        .fetch_add(1, Ordering::Relaxed)
                        .is_multiple_of(CACHED_READS_PER_CHECK);
                if sampled {
                    set.check_unread_shards(&ns, &key, &object, from_memory);
                }
            } else {
                set.repair.request(&ns, &key, damaged);
            }
        });
        ObjectStream {
            rx,
            pending: VecDeque::new(),
        }
    }

    /// The bytes of `want` (part-relative) that fall in read unit `unit` of
    /// a part: from the cache, from a concurrent read of the same unit, or
    /// from disk. A read covering most of a unit reads and caches the whole
    /// unit; a small one reads only the stripes and shards it needs.
    async fn read_unit(
        &self,
        data_id: Uuid,
        geo: &PartGeometry,
        unit: u64,
        per_unit: u64,
        want: &Range<u64>,
    ) -> Result<(Vec<Bytes>, Damage, bool), SetError> {
        let stripe = geo.layout.stripe_size();
        let stripes = unit * per_unit..((unit + 1) * per_unit).min(geo.stripes());
        let unit_range = stripes.start * stripe..(stripes.end * stripe).min(geo.size);
        let here = want.start.max(unit_range.start)..want.end.min(unit_range.end);
        let in_unit = here.start - unit_range.start..here.end - unit_range.start;
        let key = UnitKey { data_id, unit };
        if let Some(u) = self.cache.cached(key) {
            return Ok((u.slice(in_unit), Vec::new(), true));
        }
        let run = geo
            .runs(stripes, per_unit)
            .pop()
            .expect("a unit holds at least one stripe");
        if (here.end - here.start) * 2 < unit_range.end - unit_range.start {
            let (chunks, damage) = self.read_stripes(data_id, geo, &run, &here).await?;
            return Ok((chunks, damage, false));
        }
        let mut damage = Vec::new();
        let found = &mut damage;
        let (u, source) = self
            .cache
            .get_or_read(key, move || async move {
                let (chunks, d) = self.read_stripes(data_id, geo, &run, &unit_range).await?;
                *found = d;
                Ok(Unit::new(chunks))
            })
            .await?;
        Ok((u.slice(in_unit), damage, source == Source::Hit))
    }

    /// Reads the stripes of `run` of one part and returns the slices of object
    /// data that fall in `want` (part-relative), plus the disks that failed.
    pub(crate) async fn read_stripes(
        &self,
        data_id: Uuid,
        geo: &PartGeometry,
        run: &StripeRun,
        want: &Range<u64>,
    ) -> Result<(Vec<Bytes>, Damage), SetError> {
        let layout = geo.layout;
        let k = layout.data as usize;
        let n = layout.width();
        let stripes = run.stripes.clone();

        // Which data shards hold bytes of `want` in these stripes.
        let segments: Vec<_> = geo
            .data_segments(stripes.clone())
            .into_iter()
            .filter(|s| s.start < want.end && s.end > want.start)
            .collect();
        let mut needed = vec![false; k];
        for s in &segments {
            needed[s.shard] = true;
        }
        let shards = ShardRun {
            data_id,
            packed: geo.packed,
            layout,
            offset: run.offset,
            len: run.len,
        };
        let mut g = Gather {
            shards: vec![None; n],
            tried: vec![false; n],
            damage: Vec::new(),
        };
        let wanted: Vec<usize> = (0..k).filter(|&i| needed[i]).collect();
        self.gather(&shards, &wanted, &mut g).await;

        if wanted.iter().any(|&i| g.shards[i].is_none()) {
            // Degraded: fetch every other shard and rebuild what is missing.
            let rest: Vec<usize> = (0..n).filter(|&i| !g.tried[i]).collect();
            self.gather(&shards, &rest, &mut g).await;
            let good = g.shards.iter().filter(|s| s.is_some()).count();
            if good < k {
                return Err(SetError::ReadQuorum {
                    needed: k,
                    got: good,
                });
            }
            let codec = self.codec.clone();
            let spans = geo.block_spans(stripes);
            let present = g.shards.clone();
            let rebuilt =
                tokio::task::spawn_blocking(move || codec.reconstruct_run(&present, &spans, k))
                    .await
                    .map_err(|e| SetError::Internal(format!("reconstruct: {e}")))??;
            for (i, b) in rebuilt.into_iter().enumerate() {
                if g.shards[i].is_none() {
                    g.shards[i] = Some(b);
                }
            }
        }

        // The wanted bytes, in order, as slices of the shard reads.
        let out = segments
            .iter()
            .map(|seg| {
                let (lo, hi) = (seg.start.max(want.start), seg.end.min(want.end));
                let shard = g.shards[seg.shard].as_ref().expect("needed shard present");
                let at = (seg.run_offset + lo - seg.start) as usize;
                shard.slice(at..at + (hi - lo) as usize)
            })
            .collect();
        Ok((out, g.damage))
    }

    /// Reads the same shard range from the disks holding shards `which`,
    /// recording what arrived, what was tried and which disks were damaged.
    async fn gather(&self, run: &ShardRun, which: &[usize], g: &mut Gather) {
        let results = join_all(which.iter().map(|&i| {
            let disk = self.disks[run.layout.disk_of_shard(i)].clone();
            async move {
                (
                    i,
                    packed::read_data(&disk, run.data_id, run.packed, run.offset, run.len).await,
                )
            }
        }))
        .await;
        for (i, r) in results {
            g.tried[i] = true;
            let slot = run.layout.disk_of_shard(i);
            match r {
                Ok(b) if b.len() as u64 == run.len => g.shards[i] = Some(b),
                Ok(_) => g.damage.push(slot),
                Err(e) => {
                    tracing::debug!(disk = self.disks[slot].label(), error = %e, "shard read failed");
                    if !e.is_disk_failure() {
                        g.damage.push(slot);
                    }
                }
            }
        }
    }
}
