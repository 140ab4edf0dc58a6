//! The read path: a byte range of an object version → the stripes covering
//! it → shard reads from the data shards only (systematic code, no decoding
//! while all is well) → on a missing or corrupt shard, parity reads and
//! reconstruction, and a repair request for the damaged shards.
//!
//! A producer task reads batches of stripes ahead of the consumer through a
//! bounded channel, so the next batch comes off disk while the current one
//! is sent. Memory per reader is a few batches whatever the object size,
//! and every byte read from disk is reserved from the cache's read budget.
//!
//! Reads go through the hot-object cache in whole read units, however the
//! requested ranges fall: concurrent readers of a unit share one disk read,
//! and a unit read for one range serves every later range in it. Only a
//! small range alone in its request, whose unit no one reads, is read by
//! itself. Sequential ranged readers have their next range read ahead.

use std::collections::VecDeque;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures::future::join_all;
use futures::Stream;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::cache::{held, Source, Unit, UnitKey};
use crate::error::SetError;
use crate::layout::{ErasureLayout, PartGeometry, StripeRun};
use crate::packed;
use crate::read_ahead::AHEAD_UNITS;
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

/// A range shorter than this share of a read unit, when it is all its
/// request reads and no one else is reading its unit, is read by itself
/// (the latency of one small read: a safetensors or tar header) instead of
/// as its whole unit.
const SMALL_READ_SHARE: u64 = 8;

/// One read unit an object range touches: which part, which unit of it,
/// and the bytes of the range in it (part-relative).
struct UnitRef {
    data_id: Uuid,
    geo: PartGeometry,
    unit: u64,
    per_unit: u64,
    want: Range<u64>,
}

impl UnitRef {
    fn key(&self) -> UnitKey {
        UnitKey {
            data_id: self.data_id,
            unit: self.unit,
        }
    }

    /// The unit's stripes and their bytes (part-relative).
    fn stripes(&self) -> (Range<u64>, Range<u64>) {
        let stripe = self.geo.layout.stripe_size();
        let stripes =
            self.unit * self.per_unit..((self.unit + 1) * self.per_unit).min(self.geo.stripes());
        let bytes = stripes.start * stripe..(stripes.end * stripe).min(self.geo.size);
        (stripes, bytes)
    }

    /// The run of shard bytes that holds the unit.
    fn run(&self) -> StripeRun {
        self.geo
            .runs(self.stripes().0, self.per_unit)
            .pop()
            .expect("a unit holds at least one stripe")
    }
}

/// The read units that bytes `range` of `object` touch, in order.
fn units_of(object: &ObjectRecord, range: &Range<u64>) -> Vec<UnitRef> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    for part in &object.parts {
        let base = offset;
        offset += part.size;
        let (a, z) = (range.start.max(base), range.end.min(offset));
        let Some(data_id) = part.data_id.filter(|_| a < z) else {
            continue;
        };
        let geo = part.geometry(object.layout);
        let local = a - base..z - base;
        let stripe = geo.layout.stripe_size();
        let per_unit = (READ_BATCH_BYTES / stripe).max(1);
        let unit_bytes = per_unit * stripe;
        for unit in local.start / unit_bytes..=(local.end - 1) / unit_bytes {
            let here = local.start.max(unit * unit_bytes)..local.end.min((unit + 1) * unit_bytes);
            out.push(UnitRef {
                data_id,
                geo,
                unit,
                per_unit,
                want: here,
            });
        }
    }
    out
}

/// The identity of an object's data, for telling streams of reads apart:
/// its first part's data id (unique per write).
fn identity(object: &ObjectRecord) -> Option<Uuid> {
    object.parts.iter().find_map(|p| p.data_id)
}

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
    /// must lie within the object. A range that continues a stream of
    /// ranged reads of the object has the range after it read ahead once
    /// its own bytes are read (see `read_ahead.rs`).
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
        // Read-ahead only where the cache keeps what is read ahead until
        // it is asked for.
        let since = Instant::now();
        let ahead = identity(&object)
            .filter(|_| self.cache.capacity() >= AHEAD_UNITS as u64 * READ_BATCH_BYTES)
            .and_then(|id| self.cache.ahead.note(id, &range, object.size));
        tokio::spawn(async move {
            let mut damaged: Vec<(Uuid, usize)> = Vec::new();
            // Units served from memory touched no disk: their shards are
            // checked in the background like unread parity.
            let mut from_memory = false;
            let units = units_of(&object, &range);
            let lone = units.len() == 1;
            for u in &units {
                match set.read_unit(u, lone, since).await {
                    Ok((chunks, damage, cached)) => {
                        from_memory |= cached;
                        for slot in damage {
                            if !damaged.contains(&(u.data_id, slot)) {
                                damaged.push((u.data_id, slot));
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
            drop(tx);
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
            if let Some(ahead) = ahead {
                set.read_units_ahead(&ns, &key, &object, ahead).await;
            }
        });
        ObjectStream {
            rx,
            pending: VecDeque::new(),
        }
    }

    /// Reads the units of bytes `range` of `object` into the cache, those
    /// no one holds or reads yet, while read-ahead permits last; damage
    /// found is reported for repair as a request's would be.
    async fn read_units_ahead(
        &self,
        ns: &str,
        key: &str,
        object: &ObjectRecord,
        range: Range<u64>,
    ) {
        let mut reads = Vec::new();
        for u in units_of(object, &range) {
            if self.cache.holds_or_reads(u.key()) {
                continue;
            }
            let Some(permit) = self.cache.ahead.permit() else {
                break;
            };
            let since = Instant::now();
            reads.push(async move {
                let read = self.read_unit(&u, false, since).await;
                drop(permit);
                read.map(|(_, damage, _)| (u.data_id, damage))
            });
        }
        let damaged: Vec<(Uuid, usize)> = join_all(reads)
            .await
            .into_iter()
            .flatten()
            .flat_map(|(id, damage)| damage.into_iter().map(move |slot| (id, slot)))
            .collect();
        if !damaged.is_empty() {
            self.repair.request(ns, key, damaged);
        }
    }

    /// The bytes of `u.want` (part-relative) in read unit `u`: from the
    /// cache, from a concurrent read of the same unit, or from disk. A read
    /// from disk reads and caches the whole unit, unless it is a small
    /// range that is all its request reads (`lone`) and no one else reads
    /// the unit: that reads only the stripes and shards it needs. A unit
    /// read of shard files waits for its turn in the set's read queue as a
    /// read for a request that arrived at `since`. Returns the bytes, the
    /// disks found damaged, and whether they came from memory.
    async fn read_unit(
        &self,
        u: &UnitRef,
        lone: bool,
        since: Instant,
    ) -> Result<(Vec<Bytes>, Damage, bool), SetError> {
        let (_, unit_range) = u.stripes();
        let in_unit = u.want.start - unit_range.start..u.want.end - unit_range.start;
        let key = u.key();
        let unit_len = unit_range.end - unit_range.start;
        let small = (u.want.end - u.want.start) * SMALL_READ_SHARE < unit_len;
        // A cached unit is found by `get_or_read` below.
        if lone && small && !self.cache.holds_or_reads(key) {
            let block = u.geo.layout.block_size as u64;
            let reserved = self
                .cache
                .reserve(u.want.end - u.want.start + 2 * block * u.geo.layout.data as u64)
                .await;
            let (chunks, damage) = self
                .read_stripes(u.data_id, &u.geo, &u.run(), &u.want)
                .await?;
            return Ok((held(chunks, &reserved), damage, false));
        }
        let mut damage = Vec::new();
        let found = &mut damage;
        let (unit, source) = self
            .cache
            .get_or_read(key, move || async move {
                let reserved = self.cache.reserve(unit_len).await;
                // Packed objects are one lookup in the disks' metadata
                // stores, not a disk read to queue.
                let _turn = if u.geo.packed {
                    None
                } else {
                    Some(self.reads.slot(since).await)
                };
                let (chunks, d) = self
                    .read_stripes(u.data_id, &u.geo, &u.run(), &unit_range)
                    .await?;
                *found = d;
                Ok(Unit::new(held(chunks, &reserved)))
            })
            .await?;
        Ok((unit.slice(in_unit), damage, source == Source::Hit))
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
