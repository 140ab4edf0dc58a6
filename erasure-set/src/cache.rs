//! The hot-object cache: verified object data by read unit (an aligned run
//! of stripes of one part), with request coalescing, and the memory budget
//! of every unit read from disk.
//!
//! When many clients read the same object at once (every pod of a job
//! pulling the same weights), the first reader of a unit reads it from disk
//! and the others wait for that read instead of starting their own; the
//! finished unit then stays in a bounded, size-aware LRU so later readers
//! are served from memory. Units are keyed by the part's data id, which is
//! unique per write, so an overwrite can never be served stale bytes: old
//! units simply age out (or leave at once when their data is freed).
//!
//! One cache serves every set of a store (data ids are unique across
//! them), so its size is the store's whatever set a hot object lives in.
//! Every byte read from disk for a request is reserved from one budget,
//! the cache's capacity plus [`READ_BUFFER_BYTES`], and given back when the
//! last slice of it is dropped (sent, evicted, or never used): the memory
//! reads hold is bounded however many requests run and however slowly
//! their clients take the bytes.

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::error::SetError;
use crate::read_ahead::ReadAhead;

/// Default cache size.
pub const DEFAULT_READ_CACHE_BYTES: u64 = 1 << 30;
/// Bytes read from disk that may be held beyond what the cache holds:
/// units on their way to clients that the cache did not keep (it is
/// full, or off), small reads, and units being read.
pub const READ_BUFFER_BYTES: u64 = 256 << 20;
/// Largest number of units the LRU indexes (its memory bound is by bytes;
/// this only sizes the index).
const MAX_UNITS: usize = 1 << 20;

/// One read unit: a part's data id and the unit's index within the part.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct UnitKey {
    pub data_id: Uuid,
    pub unit: u64,
}

/// The object bytes of one unit, in order.
#[derive(Clone, Debug)]
pub(crate) struct Unit {
    pub chunks: Arc<Vec<Bytes>>,
    pub len: u64,
}

/// Bytes reserved from the read budget, given back when dropped.
#[derive(Clone, Debug)]
pub(crate) struct Reserved(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// One chunk of bytes read from disk, holding its share of a reservation:
/// every slice made of it keeps the reservation until the last is dropped.
struct Held {
    bytes: Bytes,
    _reserved: Reserved,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// `chunks`, each holding `reserved` until it and every slice of it is
/// dropped.
pub(crate) fn held(chunks: Vec<Bytes>, reserved: &Reserved) -> Vec<Bytes> {
    chunks
        .into_iter()
        .map(|bytes| {
            Bytes::from_owner(Held {
                bytes,
                _reserved: reserved.clone(),
            })
        })
        .collect()
}

impl Unit {
    pub fn new(chunks: Vec<Bytes>) -> Unit {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        Unit {
            chunks: Arc::new(chunks),
            len,
        }
    }

    /// Bytes `range` of the unit (unit-relative) as slices of its chunks.
    pub fn slice(&self, range: std::ops::Range<u64>) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut at = 0u64;
        for c in self.chunks.iter() {
            let (lo, hi) = (at, at + c.len() as u64);
            at = hi;
            if hi <= range.start || lo >= range.end {
                continue;
            }
            let a = range.start.max(lo) - lo;
            let b = range.end.min(hi) - lo;
            out.push(c.slice(a as usize..b as usize));
        }
        out
    }
}

/// How a unit was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// From the cache.
    Hit,
    /// Read by this request.
    Read,
    /// Read by a concurrent request this one waited for.
    Coalesced,
}

/// Counters of the cache, for admins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Units served from memory.
    pub hits: u64,
    /// Units read from disk.
    pub misses: u64,
    /// Units a request waited for while another request read them.
    pub coalesced: u64,
    /// Bytes held.
    pub bytes: u64,
    /// Most bytes it may hold.
    pub capacity: u64,
    /// Units held.
    pub units: u64,
}

struct State {
    lru: lru::LruCache<UnitKey, Unit>,
    bytes: u64,
    in_flight: HashMap<UnitKey, Arc<OnceCell<Unit>>>,
    /// The cached units of each data id, so freed data leaves at once.
    units_of: HashMap<Uuid, Vec<u64>>,
}

impl State {
    /// Accounts for `key`'s unit leaving the cache.
    fn left(&mut self, key: UnitKey, unit: &Unit) {
        self.bytes -= unit.len;
        if let Some(units) = self.units_of.get_mut(&key.data_id) {
            units.retain(|u| *u != key.unit);
            if units.is_empty() {
                self.units_of.remove(&key.data_id);
            }
        }
    }
}

/// Bounded cache of verified units with request coalescing, shared by the
/// sets of a store.
pub struct ReadCache {
    capacity: u64,
    state: Mutex<State>,
    /// Bytes that reads from disk may hold, in permits of one byte.
    budget: Arc<Semaphore>,
    /// Sequential readers seen lately, and the permits of reads ahead.
    pub(crate) ahead: ReadAhead,
    hits: AtomicU64,
    misses: AtomicU64,
    coalesced: AtomicU64,
}

impl ReadCache {
    /// A cache holding at most `capacity` bytes (0: coalescing only).
    pub fn new(capacity: u64) -> ReadCache {
        let budget = capacity.saturating_add(READ_BUFFER_BYTES);
        ReadCache {
            budget: Arc::new(Semaphore::new(
                budget.min(Semaphore::MAX_PERMITS as u64) as usize
            )),
            ahead: ReadAhead::default(),
            capacity,
            state: Mutex::new(State {
                lru: lru::LruCache::new(NonZeroUsize::new(MAX_UNITS).expect("non-zero")),
                bytes: 0,
                in_flight: HashMap::new(),
                units_of: HashMap::new(),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
        }
    }

    /// Reserves `bytes` of the read budget for a read from disk, waiting
    /// until enough reads before it are given back.
    pub(crate) async fn reserve(&self, bytes: u64) -> Reserved {
        // One read never waits for more than the whole budget.
        let n = bytes.clamp(1, READ_BUFFER_BYTES.min(u32::MAX as u64)) as u32;
        let permit = self
            .budget
            .clone()
            .acquire_many_owned(n)
            .await
            .expect("the budget is never closed");
        Reserved(Arc::new(permit))
    }

    /// Most bytes it may hold.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Whether `key` is cached or being read.
    pub(crate) fn holds_or_reads(&self, key: UnitKey) -> bool {
        let st = self.state.lock();
        st.lru.contains(&key) || st.in_flight.contains_key(&key)
    }

    /// The unit if it is cached (counted as a hit).
    #[cfg(test)]
    pub(crate) fn cached(&self, key: UnitKey) -> Option<Unit> {
        let u = self.state.lock().lru.get(&key).cloned();
        if u.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        u
    }

    /// The unit from the cache, from a read already in flight, or from
    /// `read`. If the request that is reading goes away or fails, one of the
    /// waiting requests reads instead.
    pub(crate) async fn get_or_read<F, Fut>(
        &self,
        key: UnitKey,
        read: F,
    ) -> Result<(Unit, Source), SetError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Unit, SetError>>,
    {
        let guard = {
            let mut st = self.state.lock();
            if let Some(u) = st.lru.get(&key) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok((u.clone(), Source::Hit));
            }
            InFlight {
                cache: self,
                key,
                cell: st.in_flight.entry(key).or_default().clone(),
            }
        };
        let mut ran = false;
        let unit = guard
            .cell
            .get_or_try_init(|| {
                ran = true;
                let read = read();
                // Cached before the waiters wake: a waiter's guard may drop
                // the in-flight entry at once, and a request arriving then
                // must find the unit in the cache, not read it again.
                async move {
                    let unit = read.await?;
                    self.keep(key, unit.clone());
                    Ok::<_, SetError>(unit)
                }
            })
            .await?
            .clone();
        if ran {
            self.misses.fetch_add(1, Ordering::Relaxed);
            Ok((unit, Source::Read))
        } else {
            self.coalesced.fetch_add(1, Ordering::Relaxed);
            Ok((unit, Source::Coalesced))
        }
    }

    /// Keeps a unit if it fits, evicting the least recently used.
    fn keep(&self, key: UnitKey, unit: Unit) {
        if unit.len > self.capacity {
            return;
        }
        let mut st = self.state.lock();
        st.bytes += unit.len;
        // The unit it replaced, or the one evicted to make room.
        if let Some((k, old)) = st.lru.push(key, unit) {
            st.left(k, &old);
        }
        st.units_of.entry(key.data_id).or_default().push(key.unit);
        while st.bytes > self.capacity {
            match st.lru.pop_lru() {
                Some((k, old)) => st.left(k, &old),
                None => break,
            }
        }
    }

    /// Drops every cached unit of `data_id`: its data was freed (or found
    /// damaged), and the cache must not keep serving what the disks no
    /// longer hold.
    pub(crate) fn forget(&self, data_id: Uuid) {
        let mut st = self.state.lock();
        for unit in st.units_of.remove(&data_id).unwrap_or_default() {
            if let Some(old) = st.lru.pop(&UnitKey { data_id, unit }) {
                st.bytes -= old.len;
            }
        }
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let st = self.state.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            coalesced: self.coalesced.load(Ordering::Relaxed),
            bytes: st.bytes,
            capacity: self.capacity,
            units: st.lru.len() as u64,
        }
    }
}

/// A request's interest in an in-flight read. On drop (success, failure or
/// cancellation) the in-flight entry goes once the unit is read or nobody
/// else waits for it, so abandoned reads leave nothing behind.
struct InFlight<'a> {
    cache: &'a ReadCache,
    key: UnitKey,
    cell: Arc<OnceCell<Unit>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut st = self.cache.state.lock();
        let ours = st
            .in_flight
            .get(&self.key)
            .is_some_and(|c| Arc::ptr_eq(c, &self.cell));
        // Two references: the map's and ours. New waiters clone under the
        // lock held here, so the count cannot grow behind our back.
        if ours && (self.cell.initialized() || Arc::strong_count(&self.cell) <= 2) {
            st.in_flight.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn key(unit: u64) -> UnitKey {
        UnitKey {
            data_id: Uuid::nil(),
            unit,
        }
    }

    #[tokio::test]
    async fn concurrent_readers_share_one_read() {
        let cache = Arc::new(ReadCache::new(1 << 20));
        let reads = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (cache, reads) = (cache.clone(), reads.clone());
                tokio::spawn(async move {
                    cache
                        .get_or_read(key(1), || async {
                            reads.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            Ok(Unit::new(vec![Bytes::from_static(b"abc")]))
                        })
                        .await
                        .unwrap()
                })
            })
            .collect();
        for t in tasks {
            assert_eq!(&t.await.unwrap().0.chunks[0][..], b"abc");
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        let s = cache.stats();
        assert_eq!((s.misses, s.coalesced + s.hits), (1, 15));
        assert!(cache.cached(key(1)).is_some());
    }

    #[tokio::test]
    async fn failed_read_lets_the_next_reader_try_and_size_is_bounded() {
        let cache = ReadCache::new(10);
        let r = cache
            .get_or_read(key(1), || async { Err(SetError::Internal("boom".into())) })
            .await;
        assert!(r.is_err());
        let (u, src) = cache
            .get_or_read(key(1), || async {
                Ok(Unit::new(vec![Bytes::from_static(b"123456")]))
            })
            .await
            .unwrap();
        assert_eq!((u.len, src), (6, Source::Read));
        cache
            .get_or_read(key(2), || async {
                Ok(Unit::new(vec![Bytes::from_static(b"abcdef")]))
            })
            .await
            .unwrap();
        // 12 bytes do not fit in 10: the least recently used unit went.
        assert!(cache.cached(key(1)).is_none());
        assert!(cache.cached(key(2)).is_some());
        assert!(cache.stats().bytes <= 10);
        assert!(cache.state.lock().in_flight.is_empty());
        let u = Unit::new(vec![
            Bytes::from_static(b"abc"),
            Bytes::from_static(b"defg"),
        ]);
        let s: Vec<u8> = u.slice(2..5).concat();
        assert_eq!(s, b"cde");
    }

    #[tokio::test]
    async fn read_bytes_hold_their_reservation_until_the_last_slice_goes() {
        let cache = ReadCache::new(0);
        // The whole budget (no cache: only the read buffers).
        let reserved = cache.reserve(READ_BUFFER_BYTES).await;
        let chunks = held(vec![Bytes::from(vec![7u8; 1000])], &reserved);
        drop(reserved);
        let slice = chunks[0].slice(10..20);
        drop(chunks);
        // A slice of the bytes still holds the budget: another read waits.
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), cache.reserve(1 << 20))
                .await;
        assert!(waiting.is_err(), "the budget was given back too early");
        drop(slice);
        tokio::time::timeout(std::time::Duration::from_secs(5), cache.reserve(1 << 20))
            .await
            .expect("the budget is given back with the last slice");
    }
}
