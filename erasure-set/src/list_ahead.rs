//! Read-ahead of listing pages: when a page of current objects ends with
//! more to come, the disks' heads for the page after it are read and the
//! page decided at once, on another thread, while the page is still being
//! written out and the client asks for the next one (pages are sequential:
//! each needs the previous one's token).
//!
//! A client paging through a fixed number of keys at a time (no
//! delimiter) is read ahead [`WIDTH`] pages at a time: one read of the
//! disks and one decision answer that many of its requests (each after a
//! key of the chunk, as its token says), and the chunk after it is read
//! while the client reads this one, so up to [`DEPTH`] chunks of each
//! listing are ahead of it. Reading a chunk of several pages at once
//! spreads what each read costs apart from its keys (the disks' seeks, the
//! hand-offs between threads) over those pages.
//!
//! A chunk read ahead is used only if no write to the set began or ended
//! since its reading started: the set's [`Agreement`] counts every record
//! write and deletion when it starts and again when its disks have
//! answered (before it is acknowledged), so a write acknowledged before the
//! request arrived is never missing from a page. The count only sees this
//! process's writes, so a set shared with other gateways reads no pages
//! ahead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use disk_engine::{ListStart, RecordListOptions};
use futures::future::{BoxFuture, FutureExt, Shared};
use parking_lot::Mutex;
use tokio::task::AbortHandle;

use crate::agreement::Agreement;
use crate::current::Objects;
use crate::heads::{CurrentPage, HeadsSource};

/// Chunks read ahead at once, over all listings in progress.
const SLOTS: usize = 8;
/// Chunks of one listing read ahead of the client, the one it is reading
/// included.
const DEPTH: usize = 2;
/// A client paging through `n` keys at a time is read ahead `WIDTH * n`
/// keys at a time.
const WIDTH: usize = 4;
/// A chunk read ahead that nobody asked for within this long is dropped.
const KEEP: Duration = Duration::from_secs(10);

/// What a chunk read ahead is read for, and from where.
#[derive(Clone)]
pub(crate) struct AheadRequest {
    /// Where the set's heads are read from.
    pub source: HeadsSource,
    /// The listing's namespace (bucket).
    pub ns: String,
    /// The first page asked for.
    pub opts: RecordListOptions,
    /// The client pages through this many keys (delete markers not
    /// counted) at a time, each page starting after the last key of the
    /// one before; `None` when its next page cannot be foreseen (a
    /// delimiter rolls keys up): then only the page asked for is read.
    pub paging: Option<usize>,
}

/// A chunk as decided from heads; `None` where the disks disagree or
/// failed (the request then reads the disks itself).
type Chunk = Shared<BoxFuture<'static, Option<Arc<Decided>>>>;

/// A decided chunk: its keys are handed out a page at a time, by range.
struct Decided {
    /// Where the chunk starts.
    from: ListStart,
    /// Keys in order with their newest version (keys whose newest version
    /// is a delete marker left out).
    objects: Arc<Objects>,
    /// Where the listing continues after the chunk, if more may follow.
    next: Option<Vec<u8>>,
}

impl Decided {
    fn of(from: ListStart, page: CurrentPage) -> Decided {
        Decided {
            from,
            objects: page.objects,
            next: page.next,
        }
    }

    /// Where a page starting at `start` (held by the chunk) starts.
    fn first(&self, start: &ListStart) -> usize {
        match start {
            ListStart::After(k) => self.objects.up_to(k),
            _ => 0,
        }
    }

    /// The page of up to `want` keys starting at `start`, and whether it
    /// reaches the chunk's end; `None` unless the chunk holds it (see
    /// [`Decided::holds`]). A page that reaches the end of a chunk with
    /// more after it is short, and continues where the chunk does.
    fn answer(&self, start: &ListStart, want: usize) -> Option<(CurrentPage, bool)> {
        if !self.holds(start) {
            return None;
        }
        let first = self.first(start);
        let last = first.saturating_add(want).min(self.objects.len());
        let end = last == self.objects.len();
        let next = match end {
            true => self.next.clone(),
            false => Some(self.objects.name(last - 1).as_bytes().to_vec()),
        };
        let page = CurrentPage {
            objects: self.objects.clone(),
            range: first..last,
            next,
        };
        Some((page, end))
    }

    /// Whether the page starting at `start` can be answered: it starts
    /// where the chunk does or after a key at or past that; and it has a
    /// key, or the listing ends with the chunk.
    fn holds(&self, start: &ListStart) -> bool {
        starts_before(&self.from, start)
            && (self.next.is_none() || self.first(start) < self.objects.len())
    }
}

struct Slot {
    req: AheadRequest,
    generation: u64,
    started: Instant,
    chunk: Chunk,
    abort: AbortHandle,
}

impl Slot {
    /// Whether this chunk belongs to a listing of `prefix` in `ns`.
    fn lists(&self, ns: &str, prefix: &[u8]) -> bool {
        self.req.ns == ns && self.req.opts.prefix == prefix
    }

    /// Whether this chunk holds the page starting at `start`, as far as is
    /// known: decided, if it can answer it; under way, if it starts there.
    fn holds(&self, start: &ListStart) -> bool {
        match self.chunk.peek() {
            Some(Some(chunk)) => chunk.holds(start),
            Some(None) => false,
            None => self.req.opts.start == *start,
        }
    }
}

/// Whether a chunk starting at `from` can hold the page starting at
/// `start`: the same start, or after a key at or past where it starts.
fn starts_before(from: &ListStart, start: &ListStart) -> bool {
    match (from, start) {
        _ if from == start => true,
        (ListStart::Beginning, ListStart::After(_)) => true,
        (ListStart::At(f) | ListStart::After(f), ListStart::After(k)) => k >= f,
        _ => false,
    }
}

/// The chunks read ahead of a set's listings.
pub(crate) struct ListAhead {
    inner: Arc<Inner>,
}

struct Inner {
    /// Counts the set's writes.
    writes: Arc<Agreement>,
    slots: Mutex<Vec<Slot>>,
    /// Pages served from a read ahead.
    hits: AtomicU64,
    /// Chunks started.
    chunks: AtomicU64,
}

impl ListAhead {
    /// Read-ahead for a set whose writes `writes` counts.
    pub fn new(writes: Arc<Agreement>) -> ListAhead {
        ListAhead {
            inner: Arc::new(Inner {
                writes,
                slots: Mutex::default(),
                hits: AtomicU64::new(0),
                chunks: AtomicU64::new(0),
            }),
        }
    }

    /// The page `opts` of `ns` from a chunk read ahead, if one holds it and
    /// no write began or ended since its reading started.
    pub async fn take(&self, ns: &str, opts: &RecordListOptions) -> Option<CurrentPage> {
        let candidates: Vec<(Chunk, u64)> = {
            let slots = self.inner.slots.lock();
            slots
                .iter()
                .filter(|s| {
                    s.lists(ns, &opts.prefix) && starts_before(&s.req.opts.start, &opts.start)
                })
                .map(|s| (s.chunk.clone(), s.generation))
                .collect()
        };
        for (chunk, generation) in candidates {
            let Some(decided) = chunk.clone().await else {
                continue;
            };
            if self.inner.writes.writes() != generation {
                self.inner.drop_chunk(&chunk);
                return None;
            }
            let Some((page, end)) = decided.answer(&opts.start, opts.max_keys) else {
                continue;
            };
            self.inner.hits.fetch_add(1, Ordering::Relaxed);
            let req = self.inner.slot_request(&chunk);
            if end {
                self.inner.drop_chunk(&chunk);
            }
            if let Some(req) = req.filter(|r| r.paging.is_some()) {
                self.inner.follow(&req, decided.next.as_ref());
            }
            return Some(page);
        }
        None
    }

    /// How many pages were served from a read ahead.
    pub fn hits(&self) -> u64 {
        self.inner.hits.load(Ordering::Relaxed)
    }

    /// How many chunks were started.
    pub fn chunks(&self) -> u64 {
        self.inner.chunks.load(Ordering::Relaxed)
    }

    /// Starts reading and deciding the page `req` (with `paging`, the
    /// chunk of pages from it), unless a chunk under way or read may hold
    /// it.
    pub fn start(&self, req: AheadRequest) {
        Inner::start(&self.inner, req);
    }
}

impl Inner {
    fn start(this: &Arc<Inner>, mut req: AheadRequest) {
        let generation = this.writes.writes();
        let mut slots = this.slots.lock();
        // Chunks read before a write can no longer be used; neither they
        // nor old ones hold a page or count against a listing's depth.
        slots.retain(|s| {
            let keep = s.generation == generation && s.started.elapsed() < KEEP;
            if !keep {
                s.abort.abort();
            }
            keep
        });
        let held = |s: &Slot| match req.paging {
            Some(_) => s.holds(&req.opts.start),
            None => s.req.opts == req.opts,
        };
        if slots
            .iter()
            .any(|s| s.lists(&req.ns, &req.opts.prefix) && held(s))
        {
            return;
        }
        if let Some(paging) = req.paging {
            req.opts.max_keys = req.opts.max_keys.max(paging.saturating_mul(WIDTH));
        }
        this.chunks.fetch_add(1, Ordering::Relaxed);
        let inner = this.clone();
        let read = req.clone();
        let task = tokio::spawn(async move {
            let decided = read
                .source
                .current(&read.ns, read.opts.clone())
                .await
                .ok()
                .flatten()?;
            if read.paging.is_some() {
                inner.follow(&read, decided.next.as_ref());
            }
            Some(Arc::new(Decided::of(read.opts.start.clone(), decided)))
        });
        let abort = task.abort_handle();
        let chunk = task.map(|r| r.ok().flatten()).boxed().shared();
        if slots.len() == SLOTS {
            let oldest = slots.remove(0);
            oldest.abort.abort();
        }
        slots.push(Slot {
            req,
            generation,
            started: Instant::now(),
            chunk,
            abort,
        });
    }

    /// Starts the chunk after one read for `req` that continues after
    /// `last`, while fewer than [`DEPTH`] chunks of its listing are read
    /// ahead.
    fn follow(self: &Arc<Inner>, req: &AheadRequest, last: Option<&Vec<u8>>) {
        let Some(last) = last else {
            return;
        };
        let waiting = {
            let slots = self.slots.lock();
            let generation = self.writes.writes();
            let listing =
                |s: &&Slot| s.lists(&req.ns, &req.opts.prefix) && s.generation == generation;
            slots.iter().filter(listing).count()
        };
        if waiting >= DEPTH {
            return;
        }
        let mut next = req.clone();
        next.opts.start = ListStart::After(last.clone());
        Inner::start(self, next);
    }

    /// The request `chunk` was read for, if it is still kept.
    fn slot_request(&self, chunk: &Chunk) -> Option<AheadRequest> {
        let slots = self.slots.lock();
        let slot = slots.iter().find(|s| s.chunk.ptr_eq(chunk))?;
        Some(slot.req.clone())
    }

    /// Forgets `chunk`.
    fn drop_chunk(&self, chunk: &Chunk) {
        self.slots.lock().retain(|s| !s.chunk.ptr_eq(chunk));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ObjectSummary, SummaryMeta};

    fn chunk(keys: &[&str], next: Option<&str>) -> Decided {
        let summary = ObjectSummary {
            version_id: None,
            mtime_ns: 1,
            delete_marker: false,
            size: 1,
            meta: SummaryMeta {
                etag: "e".into(),
                checksum: None,
                storage_class: None,
            },
        };
        let mut objects = Objects::with_capacity(keys.len());
        for k in keys {
            objects.push_summary(k, &summary);
        }
        let page = CurrentPage {
            range: 0..objects.len(),
            objects: Arc::new(objects),
            next: next.map(|n| n.as_bytes().to_vec()),
        };
        Decided::of(ListStart::After(b"0".to_vec()), page)
    }

    fn after(k: &str) -> ListStart {
        ListStart::After(k.as_bytes().to_vec())
    }

    /// The keys of the page answered, where it continues, and whether it
    /// reaches the chunk's end.
    fn ask(
        c: &Decided,
        start: ListStart,
        want: usize,
    ) -> Option<(Vec<String>, Option<String>, bool)> {
        let (page, end) = c.answer(&start, want)?;
        let keys = page
            .range
            .map(|i| page.objects.name(i).to_string())
            .collect();
        let next = page.next.map(|n| String::from_utf8(n).unwrap());
        Some((keys, next, end))
    }

    #[test]
    fn pages_are_answered_from_where_they_start() {
        let c = chunk(&["a", "b", "c", "d", "e"], Some("e"));
        assert_eq!(
            ask(&c, after("0"), 3),
            Some((
                vec!["a".into(), "b".into(), "c".into()],
                Some("c".into()),
                false
            ))
        );
        // The next page may start after the key before the last one (the
        // client showed one key less than it asked for), and a page
        // answered once can be answered again (another client).
        assert_eq!(
            ask(&c, after("b"), 2),
            Some((vec!["c".into(), "d".into()], Some("d".into()), false))
        );
        assert_eq!(
            ask(&c, after("a"), 1),
            Some((vec!["b".into()], Some("b".into()), false))
        );
        // A page that reaches the chunk's end continues where it does.
        assert_eq!(
            ask(&c, after("c"), 3),
            Some((vec!["d".into(), "e".into()], Some("e".into()), true))
        );
    }

    #[test]
    fn a_page_past_the_chunk_is_not_held_unless_the_listing_ends_with_it() {
        let c = chunk(&["a", "b"], Some("b"));
        assert!(!c.holds(&after("b")));
        assert!(!c.holds(&ListStart::At(b"a".to_vec())));
        assert!(c.holds(&after("a")));
        let last = chunk(&["a", "b"], None);
        assert_eq!(ask(&last, after("b"), 5), Some((vec![], None, true)));
        assert!(
            !chunk(&["a"], Some("a")).holds(&after("")),
            "starts before the chunk"
        );
    }
}
