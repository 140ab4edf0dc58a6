//! Read-ahead of listing pages: when a page of current objects ends with
//! more to come, the disks' heads for the page after it are read and the
//! page decided at once, on another thread, while the page is still being
//! written out and the client asks for the next one (pages are sequential:
//! each needs the previous one's token).
//!
//! A client paging through a fixed number of keys at a time (no
//! delimiter) asks for pages whose starts follow from the pages before, so
//! a page decided ahead starts the one after it in turn, keeping up to
//! [`DEPTH`] pages of each listing ahead of the client while it keeps
//! asking for them.
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

use disk_engine::{Disk, ListStart, RecordListOptions};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::listing::{decide_current, read_heads, CurrentPage};

/// Pages read ahead at once, over all listings in progress.
const SLOTS: usize = 8;
/// Pages of one listing read ahead of the client.
const DEPTH: usize = 2;
/// A page read ahead that nobody asked for within this long is dropped.
const KEEP: Duration = Duration::from_secs(10);

/// A page decided from heads ([`decide_current`]).
pub(crate) type Decided = Result<Option<CurrentPage>, Error>;

/// What a page read ahead is read for, and from where.
#[derive(Clone)]
pub(crate) struct AheadRequest {
    /// The set's disks.
    pub disks: Vec<Arc<dyn Disk>>,
    /// How many of them a heads listing reads.
    pub need: usize,
    /// The listing's namespace (bucket).
    pub ns: String,
    /// The page.
    pub opts: RecordListOptions,
    /// The client pages through this many keys (delete markers not
    /// counted) at a time, each page starting after the last key of the
    /// one before; `None` when its next page cannot be foreseen (a
    /// delimiter rolls keys up).
    pub paging: Option<usize>,
}

struct Slot {
    ns: String,
    opts: RecordListOptions,
    generation: u64,
    started: Instant,
    page: JoinHandle<Decided>,
}

impl Slot {
    /// Whether this is the page `opts` of `ns`.
    fn reads(&self, ns: &str, opts: &RecordListOptions) -> bool {
        self.ns == ns && self.opts == *opts
    }
}

/// The pages read ahead of a set's listings, and its write counter.
#[derive(Default)]
pub(crate) struct ListAhead {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
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
        self.inner.writes.fetch_add(1, Ordering::SeqCst);
        WriteMark(&self.inner.writes)
    }

    /// The page read ahead for exactly this request, if there is one and no
    /// write began or ended since its reading started.
    pub async fn take(&self, ns: &str, opts: &RecordListOptions) -> Option<Decided> {
        let slot = {
            let mut slots = self.inner.slots.lock();
            let i = slots.iter().position(|s| s.reads(ns, opts))?;
            slots.swap_remove(i)
        };
        let page = slot.page.await.ok()?;
        if self.inner.writes.load(Ordering::SeqCst) != slot.generation {
            return None;
        }
        self.inner.hits.fetch_add(1, Ordering::Relaxed);
        Some(page)
    }

    /// How many pages were served from a read ahead.
    pub fn hits(&self) -> u64 {
        self.inner.hits.load(Ordering::Relaxed)
    }

    /// Starts reading and deciding the page `req` (unless it is under way).
    pub fn start(&self, req: AheadRequest) {
        Inner::start(&self.inner, req);
    }
}

impl Inner {
    fn start(this: &Arc<Inner>, req: AheadRequest) {
        let generation = this.writes.load(Ordering::SeqCst);
        let mut slots = this.slots.lock();
        if slots.iter().any(|s| s.reads(&req.ns, &req.opts)) {
            return;
        }
        let (ns, opts) = (req.ns.clone(), req.opts.clone());
        let inner = this.clone();
        let page = tokio::spawn(async move {
            let read = read_heads(
                req.disks.clone(),
                req.need,
                req.ns.clone(),
                req.opts.clone(),
            );
            let decided = decide_current(&read.await, req.need);
            if let (Ok(Some(page)), Some(paging)) = (&decided, req.paging) {
                inner.follow(&req, page, paging);
            }
            decided
        });
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
            ns,
            opts,
            generation,
            started: Instant::now(),
            page,
        });
    }

    /// Starts the page a client paging `paging` keys at a time asks for
    /// after `page` (read for `req`), while fewer than [`DEPTH`] pages of
    /// its listing wait to be asked for.
    fn follow(self: &Arc<Inner>, req: &AheadRequest, page: &CurrentPage, paging: usize) {
        let mut visible = page.keys.iter().filter(|(_, v)| !v.delete_marker);
        // The client's page ends at its `paging`-th key when more follow.
        let Some((last, _)) = visible.nth(paging.saturating_sub(1)) else {
            return;
        };
        if visible.next().is_none() && page.next.is_none() {
            return;
        }
        let waiting = {
            let slots = self.slots.lock();
            let same_listing = |s: &&Slot| s.ns == req.ns && s.opts.prefix == req.opts.prefix;
            slots.iter().filter(same_listing).count()
        };
        if waiting >= DEPTH {
            return;
        }
        let mut next = req.clone();
        next.opts.start = ListStart::After(last.as_bytes().to_vec());
        Inner::start(self, next);
    }
}
