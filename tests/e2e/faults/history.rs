//! The recorded history of a fault run: every operation a client invoked,
//! when (on one monotonic clock), what it answered, and for reads what
//! they saw. Values are identified by their bytes: every write stores a
//! body that names its own value id ([`body_of`]), so a read maps back to
//! the write it saw, or to none (wrong bytes).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::harness::Pattern;

/// Index of an operation in its history.
pub type OpId = usize;

/// What an operation did to (or asked of) one key's current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A write of the value with this id.
    Put(u64),
    /// A delete of the key (removal, or a delete marker).
    Delete,
    /// A read of the key's current version.
    Get,
}

/// What a read saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The bytes of the write of this value, exactly.
    Value(u64),
    /// No current version (NoSuchKey).
    Absent,
    /// Bytes that are no write's (what they looked like).
    Garbage(String),
}

/// How an operation ended, as the client learned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not answered yet.
    Pending,
    /// Acknowledged (a read: answered with what it saw).
    Done,
    /// Refused with an error that means it did not happen (a 4xx).
    Refused(String),
    /// The client never learned whether it happened: the connection was
    /// cut, the server died, or it answered 5xx.
    Unknown(String),
}

/// One operation.
#[derive(Clone, Debug)]
pub struct Op {
    /// Its index.
    pub id: OpId,
    /// The key it addressed.
    pub key: String,
    /// What it did.
    pub kind: Kind,
    /// When it was invoked (ns since the history began).
    pub start: u64,
    /// When its answer arrived (`None` while pending or never).
    pub end: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// What a read saw.
    pub seen: Option<Seen>,
    /// The server's request id, when it answered.
    pub request_id: Option<String>,
    /// A note for reports (the trial, the fault).
    pub note: String,
    /// A read after recovery: it must be answered (an object that cannot
    /// be read then is lost, whatever else the history allows).
    pub must_answer: bool,
}

impl Op {
    /// Whether the operation's effect may be part of the history: it was
    /// acknowledged, or its outcome is unknown.
    pub fn may_have_happened(&self) -> bool {
        !matches!(self.outcome, Outcome::Refused(_))
    }

    /// Whether the client learned it happened.
    pub fn acknowledged(&self) -> bool {
        self.outcome == Outcome::Done
    }
}

/// A listing taken during the run.
#[derive(Clone, Debug)]
pub struct Listing {
    /// Only keys under this prefix were listed.
    pub prefix: String,
    /// When the first page was asked for, and when the last arrived.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Every key listed.
    pub keys: Vec<String>,
    /// Request id of the first page.
    pub request_id: Option<String>,
}

#[derive(Default)]
struct Inner {
    ops: Vec<Op>,
    listings: Vec<Listing>,
    quiesced: Option<u64>,
}

/// A history being recorded; cheap to clone and share between clients.
#[derive(Clone)]
pub struct History {
    began: Instant,
    inner: Arc<Mutex<Inner>>,
}

impl Default for History {
    fn default() -> Self {
        History {
            began: Instant::now(),
            inner: Arc::default(),
        }
    }
}

impl History {
    /// Now, in ns since the history began.
    pub fn now(&self) -> u64 {
        self.began.elapsed().as_nanos() as u64
    }

    /// Records the invocation of an operation.
    pub fn invoke(&self, key: &str, kind: Kind, note: impl Into<String>) -> OpId {
        let start = self.now();
        let mut inner = self.inner.lock();
        let id = inner.ops.len();
        inner.ops.push(Op {
            id,
            key: key.to_string(),
            kind,
            start,
            end: None,
            outcome: Outcome::Pending,
            seen: None,
            request_id: None,
            note: note.into(),
            must_answer: false,
        });
        id
    }

    /// Records the invocation of a read after recovery, which must be
    /// answered.
    pub fn invoke_final(&self, key: &str, note: impl Into<String>) -> OpId {
        let id = self.invoke(key, Kind::Get, note);
        self.inner.lock().ops[id].must_answer = true;
        id
    }

    /// Records how an operation ended.
    pub fn complete(
        &self,
        id: OpId,
        outcome: Outcome,
        seen: Option<Seen>,
        request_id: Option<String>,
    ) {
        let end = self.now();
        let mut inner = self.inner.lock();
        let op = &mut inner.ops[id];
        op.end = match outcome {
            Outcome::Unknown(_) | Outcome::Pending => None,
            _ => Some(end),
        };
        op.outcome = outcome;
        op.seen = seen;
        op.request_id = request_id;
    }

    /// Sets an operation's times and outcome outright (the checker's own
    /// tests build histories this way).
    #[cfg(test)]
    pub fn set(
        &self,
        id: OpId,
        start: u64,
        end: Option<u64>,
        outcome: Outcome,
        seen: Option<Seen>,
    ) {
        let mut inner = self.inner.lock();
        let op = &mut inner.ops[id];
        op.start = start;
        op.end = end;
        op.outcome = outcome;
        op.seen = seen;
    }

    /// Marks the moment every client request has ended and the server
    /// has recovered: nothing left unanswered takes effect after it.
    pub fn quiesce(&self) {
        let now = self.now();
        self.inner.lock().quiesced.get_or_insert(now);
    }

    /// Sets the quiescent point outright (the checker's own tests).
    #[cfg(test)]
    pub fn set_quiesced(&self, at: u64) {
        self.inner.lock().quiesced = Some(at);
    }

    /// When the run quiesced, if it did.
    pub fn quiesced(&self) -> Option<u64> {
        self.inner.lock().quiesced
    }

    /// Records a listing.
    pub fn listed(&self, listing: Listing) {
        self.inner.lock().listings.push(listing);
    }

    /// Every operation so far (pending ones count as unknown).
    pub fn ops(&self) -> Vec<Op> {
        self.inner
            .lock()
            .ops
            .iter()
            .cloned()
            .map(|mut op| {
                if op.outcome == Outcome::Pending {
                    op.outcome = Outcome::Unknown("never answered".into());
                }
                op
            })
            .collect()
    }

    /// Every listing so far.
    pub fn listings(&self) -> Vec<Listing> {
        self.inner.lock().listings.clone()
    }
}

/// First line of every written body: names the value.
const TAG: &str = "granary-fault-value ";

/// The body of the write of value `value`: a line naming it, then
/// `len` pattern bytes seeded by it.
pub fn body_of(value: u64, len: usize) -> Vec<u8> {
    let mut out = format!("{TAG}{value} {len}\n").into_bytes();
    out.extend_from_slice(&Pattern::bytes(value, len));
    out
}

/// Which write's bytes `data` are, exactly.
pub fn value_of(data: &[u8]) -> Seen {
    let head = &data[..data.len().min(64)];
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let parsed = text.strip_prefix(TAG).and_then(|rest| {
        let (v, len) = rest.split_once(' ')?;
        Some((v.parse::<u64>().ok()?, len.parse::<usize>().ok()?))
    });
    match parsed {
        Some((v, len)) if body_of(v, len) == data => Seen::Value(v),
        Some((v, len)) => Seen::Garbage(format!(
            "{} bytes claiming value {v} of {len} bytes, not its bytes",
            data.len()
        )),
        None => Seen::Garbage(format!(
            "{} bytes starting {:?}",
            data.len(),
            String::from_utf8_lossy(head)
        )),
    }
}
