//! Read-ahead for sequential ranged readers. Model loaders pull an object
//! as runs of ranged GETs, each starting where the last one of its stream
//! ended (one stream per worker thread, several at once). Each GET reads
//! its own units ahead of the client, but the next GET's first units
//! would wait for the disk after the client asks for them: once a range
//! starts exactly where a recent range of the same object ended, the range
//! after it is read into the cache while the client takes this one, with a
//! window that doubles while the stream goes on.
//!
//! Only a stream is followed: ranges at offsets no recent range ended at
//! (a storm of random ranges, a lone header read) read nothing ahead, so
//! read-ahead never reads what no one asked for but the window past the
//! end of a stream. Reads ahead hold a permit each, so at most
//! [`AHEAD_UNITS`] units are read ahead at once in the whole store.

use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Streams remembered (each: an object's identity and where its last range
/// ended).
const STREAMS: usize = 1024;
/// Largest window read ahead of one stream.
pub const MAX_READ_AHEAD_BYTES: u64 = 32 << 20;
/// Read units being read ahead at once, store-wide.
pub const AHEAD_UNITS: usize = 32;

/// Recent ranged reads, to tell streams, and the read-ahead permits.
pub(crate) struct ReadAhead {
    /// (object, end of its last range) → the window of that stream.
    streams: Mutex<lru::LruCache<(Uuid, u64), u64>>,
    permits: Arc<Semaphore>,
}

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            streams: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(STREAMS).expect("non-zero"),
            )),
            permits: Arc::new(Semaphore::new(AHEAD_UNITS)),
        }
    }
}

impl ReadAhead {
    /// Notes a read of bytes `range` of the object `object` (the data id of
    /// its first part: unique per write) of `size` bytes, and returns what
    /// to read ahead of it: the range after it when it continues a stream,
    /// else nothing.
    pub fn note(&self, object: Uuid, range: &Range<u64>, size: u64) -> Option<Range<u64>> {
        let mut streams = self.streams.lock();
        let len = range.end - range.start;
        let window = match streams.pop(&(object, range.start)) {
            // A stream goes on: twice the window, at least this range.
            Some(w) => (w * 2).max(len).min(MAX_READ_AHEAD_BYTES),
            None => 0,
        };
        if range.end < size {
            streams.put((object, range.end), window);
        }
        (window > 0 && range.end < size).then(|| range.end..(range.end + window).min(size))
    }

    /// A permit to read one unit ahead, if fewer than [`AHEAD_UNITS`] are.
    pub fn permit(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_followed_with_a_growing_window_and_nothing_else_is() {
        let ra = ReadAhead::default();
        let o = Uuid::from_u128(7);
        let mib = 1 << 20;
        // The first range of a stream, and a range no stream ended at.
        assert_eq!(ra.note(o, &(0..8 * mib), 100 * mib), None);
        assert_eq!(ra.note(o, &(50 * mib..51 * mib), 100 * mib), None);
        // The stream goes on: its next range is read ahead, then twice it.
        assert_eq!(
            ra.note(o, &(8 * mib..16 * mib), 100 * mib),
            Some(16 * mib..24 * mib)
        );
        assert_eq!(
            ra.note(o, &(16 * mib..24 * mib), 100 * mib),
            Some(24 * mib..40 * mib)
        );
        assert_eq!(
            ra.note(o, &(24 * mib..32 * mib), 100 * mib),
            Some(32 * mib..64 * mib)
        );
        // Capped, and never past the end.
        assert_eq!(
            ra.note(o, &(32 * mib..40 * mib), 100 * mib),
            Some(40 * mib..72 * mib)
        );
        assert_eq!(
            ra.note(o, &(40 * mib..90 * mib), 100 * mib),
            Some(90 * mib..100 * mib)
        );
        assert_eq!(ra.note(o, &(90 * mib..100 * mib), 100 * mib), None);
        // Another write of the object is another stream.
        assert_eq!(
            ra.note(Uuid::from_u128(8), &(8 * mib..16 * mib), 100 * mib),
            None
        );
    }

    #[test]
    fn permits_are_bounded() {
        let ra = ReadAhead::default();
        let held: Vec<_> = (0..AHEAD_UNITS).map_while(|_| ra.permit()).collect();
        assert_eq!(held.len(), AHEAD_UNITS);
        assert!(ra.permit().is_none());
        drop(held);
        assert!(ra.permit().is_some());
    }
}
