//! Read-ahead of listing pages: when a page of current objects ends with
//! more to come, the disks' heads for the page after it are read and the
//! page decided at once, on another thread, while the page is still being
//! written out and the client asks for the next one (pages are sequential:
//! each needs the previous one's token).
//!
//! A page read ahead is used only if no write to the set began or ended
//! since its reading started: every record write and deletion bumps a
//! counter when it starts and again when its disks have answered (before it
//! is acknowledged), so a write acknowledged before the request arrived is
//! never missing from the page. The counter only sees this process's
//! writes, so a set shared with other gateways reads no pages ahead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use disk_engine::{Disk, RecordListOptions};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::listing::{decide_current, read_heads, CurrentPage};

/// Pages read ahead at once (one per listing in progress).
const SLOTS: usize = 8;
/// A page read ahead that nobody asked for within this long is dropped.
const KEEP: Duration = Duration::from_secs(10);

/// A page decided from heads ([`decide_current`]).
pub(crate) type Decided = Result<Option<CurrentPage>, Error>;

struct Slot {
    ns: String,
    opts: RecordListOptions,
    generation: u64,
    started: Instant,
    page: JoinHandle<Decided>,
}

/// The pages read ahead of a set's listings, and its write counter.
#[derive(Default)]
pub(crate) struct ListAhead {
    writes: AtomicU64,
    slots: Mutex<Vec<Slot>>,
    /// Pages served from a read ahead.
    hits: AtomicU64,
}

/// Held while a write to the set's disks is in flight.
pub(crate) struct WriteMark<'a>(&'a AtomicU64);

impl Drop for WriteMark<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl ListAhead {
    /// Marks a write to the set's disks from now until the mark is dropped.
    pub fn write(&self) -> WriteMark<'_> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        WriteMark(&self.writes)
    }

    /// The page read ahead for exactly this request, if there is one and no
    /// write began or ended since its reading started.
    pub async fn take(&self, ns: &str, opts: &RecordListOptions) -> Option<Decided> {
        let slot = {
            let mut slots = self.slots.lock();
            let i = slots.iter().position(|s| s.ns == ns && s.opts == *opts)?;
            slots.swap_remove(i)
        };
        let page = slot.page.await.ok()?;
        if self.writes.load(Ordering::SeqCst) != slot.generation {
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(page)
    }

    /// How many pages were served from a read ahead.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Starts reading the page `opts` of `ns` from `need` of `disks`, and
    /// deciding it.
    pub fn start(&self, ns: &str, opts: RecordListOptions, disks: &[Arc<dyn Disk>], need: usize) {
        let generation = self.writes.load(Ordering::SeqCst);
        let read = read_heads(disks.to_vec(), need, ns.to_string(), opts.clone());
        let page = tokio::spawn(async move { decide_current(&read.await, need) });
        let mut slots = self.slots.lock();
        slots.retain(|s| {
            let keep = s.started.elapsed() < KEEP;
            if !keep {
                s.page.abort();
            }
            keep
        });
        if slots.len() == SLOTS {
            let oldest = slots.remove(0);
            oldest.page.abort();
        }
        slots.push(Slot {
            ns: ns.to_string(),
            opts,
            generation,
            started: Instant::now(),
            page,
        });
    }
}
