//! Which keys of a set may differ between its disks, so that a listing can
//! read one disk's heads instead of a quorum's.
//!
//! A listing reads as many disks as it takes to see what a read sees
//! ([`crate::listing::heads_readers`]), because a disk may lack a write
//! (it was offline, failed it, or the process died before reaching it) or
//! hold one no read shows (a write that failed its quorum and could not be
//! rolled back). Where no such difference exists, any one disk's heads are
//! the set's. This process sees every write to a set it does not share
//! with other gateways, so it keeps track of where differences may be:
//!
//! - every write to the disks' records marks its keys from before its
//!   first disk write until its disks have answered; a write that did not
//!   reach every disk (or was cut short) leaves its keys in doubt;
//! - what happened before this process started (or after too many doubts
//!   to keep) is found by a scan, per namespace, that compares the heads
//!   of every disk; the keys where they differ are in doubt. Until its
//!   scan finishes, a namespace is listed from a quorum as before;
//! - where doubts remain, the keys in doubt are compared again every few
//!   seconds (so keys healed since stop being in doubt).
//!
//! A key whose heads a scan of a whole namespace finds different on the
//! disks, and that no write is touching, may be one whose newest version
//! some disk lacks: it is handed to the set's objects at risk as a suspect
//! (see `at_risk.rs`), which is how those written degraded before this
//! process started are found.
//!
//! A page read from one disk is used only if no key of its range was in
//! doubt, written, or being written at any time between the start of the
//! read and its check ([`Agreement::untouched`]); otherwise the page is
//! read from a quorum, which decides as it always did. So a page read
//! from one disk shows what a quorum read would.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use disk_engine::{Disk, HeadPage, ListStart, RecordListOptions};
use futures::future::join_all;
use parking_lot::Mutex;

/// Keys in doubt kept over all namespaces; past this the set forgets them
/// and its namespaces are scanned again.
const MAX_DOUBTS: usize = 100_000;
/// Ends of writes remembered for listings under way.
const ENDED: usize = 16_384;
/// Keys per page of a scan.
const SCAN_PAGE: usize = 10_000;
/// A namespace whose scan failed (a disk offline) is scanned again after
/// this long.
const RESCAN: Duration = Duration::from_secs(5);
/// The keys in doubt of a namespace known to agree but for them are
/// compared again this often.
const RECHECK: Duration = Duration::from_secs(10);
/// Keys compared again at most at once.
const RECHECK_KEYS: usize = 1000;

/// Where differences between a set's disks may be.
pub(crate) struct Agreement {
    disks: Vec<Arc<dyn Disk>>,
    /// Where keys found differing are noted.
    at_risk: Arc<crate::at_risk::AtRisk>,
    state: Mutex<State>,
    /// Listing pages read from one disk.
    one_disk_pages: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Counts the starts and ends of writes.
    seq: u64,
    /// Counts the times the set forgot its doubts.
    epoch: u64,
    /// Keys (namespace, 0, key) with writes in flight or in doubt.
    keys: BTreeMap<Vec<u8>, KeyState>,
    /// Keys in doubt.
    doubts: usize,
    /// Ends of writes, oldest first, with the count at their end.
    ended: VecDeque<(u64, Vec<u8>)>,
    /// The newest end no longer in `ended`.
    forgotten: u64,
    namespaces: HashMap<String, Namespace>,
}

#[derive(Default)]
struct KeyState {
    writing: u32,
    doubt: bool,
}

#[derive(Default)]
struct Namespace {
    /// Every key not in doubt is the same on every disk.
    known: bool,
    scanning: bool,
    /// When its last scan ended.
    scanned: Option<Instant>,
}

/// When a listing's read began: see [`Agreement::untouched`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    seq: u64,
    epoch: u64,
}

/// The keys of a write in flight; dropped when its disks have answered.
pub(crate) struct Writing<'a> {
    agreement: &'a Agreement,
    keys: Vec<Vec<u8>>,
    everywhere: bool,
}

impl Writing<'_> {
    /// Declares that the write reached every disk of the set (otherwise its
    /// keys are left in doubt).
    pub fn reached_every_disk(&mut self, yes: bool) {
        self.everywhere = yes;
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.agreement
            .end(std::mem::take(&mut self.keys), self.everywhere);
    }
}

/// `namespace ‖ 0 ‖ key`: namespaces (bucket names) hold no 0 byte.
fn full_key(ns: &str, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(ns.len() + 1 + key.len());
    k.extend_from_slice(ns.as_bytes());
    k.push(0);
    k.extend_from_slice(key);
    k
}

/// The range of full keys a page covers: from its start (or its prefix)
/// through `last` (inclusive), or through the prefix's end when `last` is
/// `None`.
struct Span {
    from: Vec<u8>,
    exclusive: bool,
    prefix: Vec<u8>,
    last: Option<Vec<u8>>,
}

impl Span {
    fn new(ns: &str, opts: &RecordListOptions, last: Option<&[u8]>) -> Span {
        let prefix = full_key(ns, &opts.prefix);
        let (from, exclusive) = match &opts.start {
            ListStart::After(k) if full_key(ns, k) >= prefix => (full_key(ns, k), true),
            ListStart::At(k) if full_key(ns, k) >= prefix => (full_key(ns, k), false),
            _ => (prefix.clone(), false),
        };
        Span {
            from,
            exclusive,
            prefix,
            last: last.map(|l| full_key(ns, l)),
        }
    }

    /// Every key of `ns`.
    fn namespace(ns: &str) -> Span {
        let prefix = full_key(ns, b"");
        Span {
            from: prefix.clone(),
            exclusive: false,
            prefix,
            last: None,
        }
    }

    fn contains(&self, k: &[u8]) -> bool {
        let after_start = match self.exclusive {
            true => k > &self.from[..],
            false => k >= &self.from[..],
        };
        after_start && k.starts_with(&self.prefix) && self.last.as_ref().is_none_or(|l| k <= &l[..])
    }

    /// The entries of `keys` (ordered) in the span.
    fn within<'a, V>(
        &'a self,
        keys: &'a BTreeMap<Vec<u8>, V>,
    ) -> impl Iterator<Item = (&'a Vec<u8>, &'a V)> {
        keys.range(self.from.clone()..)
            .take_while(|(k, _)| {
                k.starts_with(&self.prefix) && self.last.as_ref().is_none_or(|l| *k <= l)
            })
            .filter(|(k, _)| self.contains(k))
    }
}

impl Agreement {
    pub fn new(disks: Vec<Arc<dyn Disk>>, at_risk: Arc<crate::at_risk::AtRisk>) -> Agreement {
        Agreement {
            disks,
            at_risk,
            state: Mutex::default(),
            one_disk_pages: AtomicU64::new(0),
        }
    }

    /// Compares the disks' heads of `ns` now unless that was done since
    /// this process started (or a comparison is under way); returns
    /// whether `ns` is known to agree but for its keys in doubt.
    pub async fn compare_once(self: &Arc<Self>, ns: &str) -> bool {
        {
            let mut st = self.state.lock();
            let n = st.namespaces.entry(ns.to_string()).or_default();
            if n.known || n.scanning {
                return n.known;
            }
            n.scanning = true;
        }
        self.clone().scan(ns.to_string(), false).await;
        self.state
            .lock()
            .namespaces
            .get(ns)
            .is_some_and(|n| n.known)
    }

    /// Counts a listing page read from one disk.
    pub fn read_one_disk(&self) {
        self.one_disk_pages.fetch_add(1, Relaxed);
    }

    /// Listing pages read from one disk so far.
    pub fn one_disk_pages(&self) -> u64 {
        self.one_disk_pages.load(Relaxed)
    }

    /// Counts the starts and ends of writes so far: unchanged only while
    /// no write began or ended.
    pub fn writes(&self) -> u64 {
        self.state.lock().seq
    }

    /// Marks a write of `keys` of `ns` from now until the returned guard
    /// is dropped.
    pub fn writing<'a, 'k>(
        &'a self,
        ns: &str,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Writing<'a> {
        let keys: Vec<Vec<u8>> = keys.into_iter().map(|k| full_key(ns, k)).collect();
        let mut st = self.state.lock();
        st.seq += 1;
        for k in &keys {
            st.keys.entry(k.clone()).or_default().writing += 1;
        }
        Writing {
            agreement: self,
            keys,
            everywhere: false,
        }
    }

    fn end(&self, keys: Vec<Vec<u8>>, everywhere: bool) {
        let mut st = self.state.lock();
        st.seq += 1;
        let seq = st.seq;
        for k in keys {
            if let Some(s) = st.keys.get_mut(&k) {
                s.writing -= 1;
                let (writing, doubt) = (s.writing, s.doubt);
                if !everywhere && !doubt {
                    st.doubt(k.clone());
                } else if writing == 0 && !doubt {
                    st.keys.remove(&k);
                }
            }
            if st.ended.len() == ENDED {
                if let Some((s, _)) = st.ended.pop_front() {
                    st.forgotten = s;
                }
            }
            st.ended.push_back((seq, k));
        }
    }

    /// Where a listing of `ns` may read one disk: when its keys are known
    /// to agree but for those in doubt. Otherwise `None`, and a scan of
    /// `ns` is started when none ran lately.
    pub fn mark(self: &Arc<Self>, ns: &str) -> Option<Mark> {
        let mut st = self.state.lock();
        let mark = Mark {
            seq: st.seq,
            epoch: st.epoch,
        };
        if !st.namespaces.contains_key(ns) {
            st.namespaces.insert(ns.to_string(), Namespace::default());
        }
        let n = &st.namespaces[ns];
        let known = n.known;
        // Scanned when not known to agree (again a little after a failed
        // scan), and now and then while keys are in doubt.
        let due = match (n.scanning, n.scanned) {
            (true, _) => false,
            (false, None) => true,
            (false, Some(t)) if !known => t.elapsed() >= RESCAN,
            (false, Some(t)) => t.elapsed() >= RECHECK && st.has_doubts(ns),
        };
        if due && tokio::runtime::Handle::try_current().is_ok() {
            if let Some(n) = st.namespaces.get_mut(ns) {
                n.scanning = true;
            }
            let me = self.clone();
            let ns = ns.to_string();
            tokio::spawn(async move { me.scan(ns, known).await });
        }
        known.then_some(mark)
    }

    /// Whether a page of `ns` read from one disk since `mark`, for `opts`
    /// and ending at `last` (`None`: the prefix's end), shows what a quorum
    /// would: no key of its range was in doubt, written or being written
    /// since, and the namespace is still known to agree.
    pub fn untouched(
        &self,
        mark: Mark,
        ns: &str,
        opts: &RecordListOptions,
        last: Option<&[u8]>,
    ) -> bool {
        let span = Span::new(ns, opts, last);
        let st = self.state.lock();
        st.epoch == mark.epoch
            && st.namespaces.get(ns).is_some_and(|n| n.known)
            && span.within(&st.keys).next().is_none()
            && st
                .ended_after(mark.seq)
                .is_some_and(|mut ended| !ended.any(|k| span.contains(k)))
    }

    /// Compares every disk's heads of `ns` (all of them, or where `ns` is
    /// `known` to agree, its keys in doubt) and puts the keys where they
    /// differ in doubt (and takes those where they agree out of it); `ns`
    /// is then known to agree, unless a disk failed or too many keys
    /// differ.
    async fn scan(self: Arc<Self>, ns: String, known: bool) {
        let agree = match known {
            true => self.recheck(&ns).await,
            false => self.compare(&ns).await,
        };
        let mut st = self.state.lock();
        let n = st.namespaces.entry(ns.clone()).or_default();
        n.scanning = false;
        n.scanned = Some(Instant::now());
        n.known |= agree && !known;
        tracing::debug!(ns, known, agree, "compared the disks' heads");
    }

    /// Compares the whole namespace.
    async fn compare(&self, ns: &str) -> bool {
        let epoch = self.state.lock().epoch;
        let mut opts = RecordListOptions {
            prefix: Vec::new(),
            start: ListStart::Beginning,
            max_keys: SCAN_PAGE,
        };
        loop {
            match self.compare_page(ns, &opts, epoch, true).await {
                Some(Some(next)) => opts.start = ListStart::After(next),
                Some(None) => return true,
                None => return false,
            }
        }
    }

    /// Compares each key of `ns` in doubt (up to [`RECHECK_KEYS`] of
    /// them) on every disk, taking those that agree out of doubt.
    pub(crate) async fn recheck(&self, ns: &str) -> bool {
        let (epoch, keys) = {
            let st = self.state.lock();
            let span = Span::namespace(ns);
            let keys: Vec<Vec<u8>> = st
                .doubts_in(&span)
                .take(RECHECK_KEYS)
                .map(|k| k[span.prefix.len()..].to_vec())
                .collect();
            (st.epoch, keys)
        };
        for key in keys {
            let opts = RecordListOptions {
                prefix: key.clone(),
                start: ListStart::At(key),
                max_keys: 1,
            };
            if self.compare_page(ns, &opts, epoch, false).await.is_none() {
                return false;
            }
        }
        true
    }

    /// Compares the page `opts` of `ns` on every disk: the keys whose heads
    /// differ are put in doubt (and, with `suspect`, handed over as
    /// suspects of being at risk), the others of its range taken out of it.
    /// Returns where the namespace continues after the page; `None` when a
    /// disk failed, a listed key is damaged or the set forgot its doubts
    /// since `epoch`.
    async fn compare_page(
        &self,
        ns: &str,
        opts: &RecordListOptions,
        epoch: u64,
        suspect: bool,
    ) -> Option<Option<Vec<u8>>> {
        let mark = {
            let st = self.state.lock();
            Mark { seq: st.seq, epoch }
        };
        let reads = self
            .disks
            .iter()
            .map(|d| d.list_heads(ns.as_bytes(), opts.clone()));
        let pages: Vec<HeadPage> = join_all(reads)
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .ok()?;
        let (differ, next) = crate::merge::differing(&pages).ok()?;
        let span = Span::new(ns, opts, next.as_deref());
        let mut st = self.state.lock();
        let raw = differ;
        let differ: Vec<Vec<u8>> = raw.iter().map(|k| full_key(ns, k)).collect();
        // Keys whose writes ended since the page was read are not settled.
        let ended: Option<std::collections::HashSet<Vec<u8>>> = suspect
            .then(|| st.ended_after(mark.seq).map(|e| e.cloned().collect()))
            .flatten();
        for (k, key) in differ.iter().zip(&raw) {
            if st.epoch != epoch {
                return None;
            }
            let s = st.keys.entry(k.clone()).or_default();
            let settled = s.writing == 0 && ended.as_ref().is_some_and(|e| !e.contains(k));
            if !s.doubt {
                st.doubt(k.clone());
            }
            if settled {
                self.at_risk.suspect(ns, &String::from_utf8_lossy(key));
            }
        }
        if st.epoch != epoch {
            return None;
        }
        st.settle(&span, mark, &differ);
        Some(next)
    }
}

impl State {
    /// The keys of `span` in doubt, in order.
    fn doubts_in<'a>(&'a self, span: &'a Span) -> impl Iterator<Item = &'a Vec<u8>> {
        span.within(&self.keys)
            .filter(|(_, s)| s.doubt)
            .map(|(k, _)| k)
    }

    fn has_doubts(&self, ns: &str) -> bool {
        self.doubts_in(&Span::namespace(ns)).next().is_some()
    }

    /// The keys of the writes that ended after count `seq`, newest first;
    /// `None` when some of them are no longer remembered.
    fn ended_after(&self, seq: u64) -> Option<impl Iterator<Item = &Vec<u8>>> {
        (self.forgotten <= seq).then(|| {
            self.ended
                .iter()
                .rev()
                .take_while(move |(s, _)| *s > seq)
                .map(|(_, k)| k)
        })
    }

    /// Puts `k` (in `keys`) in doubt; past [`MAX_DOUBTS`], forgets every
    /// doubt and every namespace's agreement instead.
    fn doubt(&mut self, k: Vec<u8>) {
        if self.doubts >= MAX_DOUBTS {
            self.keys.retain(|_, s| {
                s.doubt = false;
                s.writing > 0
            });
            self.doubts = 0;
            self.epoch += 1;
            for n in self.namespaces.values_mut() {
                n.known = false;
            }
            return;
        }
        if let Some(s) = self.keys.get_mut(&k) {
            s.doubt = true;
            self.doubts += 1;
        }
    }

    /// Takes the keys of `span` out of doubt that a scan found the same on
    /// every disk (not in `differ`, which is ordered), unless they were
    /// written since `mark` or are being written (the scan may have read
    /// them mid-write).
    fn settle(&mut self, span: &Span, mark: Mark, differ: &[Vec<u8>]) {
        let Some(ended) = self.ended_after(mark.seq) else {
            return;
        };
        let written: Vec<&Vec<u8>> = ended.filter(|k| span.contains(k)).collect();
        let agreed: Vec<Vec<u8>> = span
            .within(&self.keys)
            .filter(|(k, s)| {
                s.doubt
                    && s.writing == 0
                    && !written.contains(k)
                    && differ.binary_search(k).is_err()
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in agreed {
            self.keys.remove(&k);
            self.doubts -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(prefix: &str, start: ListStart) -> RecordListOptions {
        RecordListOptions {
            prefix: prefix.as_bytes().to_vec(),
            start,
            max_keys: 1000,
        }
    }

    fn all() -> RecordListOptions {
        opts("", ListStart::Beginning)
    }

    fn after(k: &str) -> ListStart {
        ListStart::After(k.as_bytes().to_vec())
    }

    /// An agreement whose namespace `b` was scanned (over no disks: nothing
    /// differs).
    async fn known() -> Arc<Agreement> {
        let a = Arc::new(Agreement::new(Vec::new(), Default::default()));
        assert!(a.mark("b").is_none(), "not scanned yet");
        for _ in 0..100 {
            tokio::task::yield_now().await;
            if a.mark("b").is_some() {
                return a;
            }
        }
        panic!("the scan did not finish");
    }

    #[tokio::test]
    async fn a_write_touches_its_key_from_its_start_until_the_next_mark() {
        let a = known().await;
        let mark = a.mark("b").unwrap();
        assert!(a.untouched(mark, "b", &all(), None));
        let mut w = a.writing("b", [&b"k"[..]]);
        assert!(!a.untouched(mark, "b", &all(), None), "in flight");
        assert!(!a.untouched(mark, "b", &all(), Some(b"k")), "the last key");
        assert!(a.untouched(mark, "b", &all(), Some(b"j")), "before it");
        assert!(
            a.untouched(mark, "b", &opts("", after("k")), None),
            "after it"
        );
        assert!(a.untouched(mark, "b", &opts("x", ListStart::Beginning), None));
        w.reached_every_disk(true);
        drop(w);
        // A read that began before the write ended may have missed it.
        assert!(!a.untouched(mark, "b", &all(), None), "ended since");
        let mark = a.mark("b").unwrap();
        assert!(a.untouched(mark, "b", &all(), None), "every disk has it");
    }

    #[tokio::test]
    async fn a_write_that_missed_a_disk_leaves_its_key_in_doubt() {
        let a = known().await;
        drop(a.writing("b", [&b"k"[..], &b"m"[..]]));
        let mark = a.mark("b").unwrap();
        assert!(!a.untouched(mark, "b", &all(), None));
        assert!(!a.untouched(
            mark,
            "b",
            &opts("", ListStart::At(b"k".to_vec())),
            Some(b"k")
        ));
        assert!(!a.untouched(mark, "b", &opts("", after("k")), None), "m");
        assert!(a.untouched(mark, "b", &opts("", after("m")), None));
        assert!(a.untouched(mark, "b", &opts("l", ListStart::Beginning), None));
        assert!(a.untouched(mark, "b", &opts("", after("k")), Some(b"l")));
        // A later write of the key reaching every disk does not take it out
        // of doubt: the disks may still differ on other versions of it.
        let mut w = a.writing("b", [&b"k"[..]]);
        w.reached_every_disk(true);
        drop(w);
        let mark = a.mark("b").unwrap();
        assert!(!a.untouched(mark, "b", &all(), Some(b"k")));
        // Other namespaces are not affected, once scanned themselves.
        assert!(a.mark("c").is_none());
    }

    #[tokio::test]
    async fn forgotten_ends_touch_every_listing_under_way() {
        let a = known().await;
        let mark = a.mark("b").unwrap();
        for _ in 0..ENDED {
            let mut w = a.writing("c", [&b"k"[..]]);
            w.reached_every_disk(true);
        }
        assert!(a.untouched(mark, "b", &all(), None));
        let mut w = a.writing("c", [&b"k"[..]]);
        w.reached_every_disk(true);
        drop(w);
        assert!(!a.untouched(mark, "b", &all(), None));
        let mark = a.mark("b").unwrap();
        assert!(a.untouched(mark, "b", &all(), None));
    }

    #[tokio::test]
    async fn too_many_doubts_forget_every_namespace() {
        let a = known().await;
        let mark = a.mark("b").unwrap();
        for i in 0..=MAX_DOUBTS {
            drop(a.writing("c", [&i.to_be_bytes()[..]]));
        }
        assert!(!a.untouched(mark, "b", &all(), None));
        assert!(a.mark("b").is_none(), "scanned again first");
        assert!(a.state.lock().keys.len() < 2, "doubts forgotten");
    }
}
