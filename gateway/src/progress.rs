//! What a request was doing when its client went away. A client that
//! times out or is killed closes its connection; hyper then drops the
//! request's future at whatever `.await` it had reached. Each request
//! carries a [`Progress`]: the body reader and the operations move it
//! through its [`Phase`]s, and if the request ends without an answer —
//! its body was cut short, or its future was dropped — the phase it was
//! in is counted once per operation ([`Disconnects`], shown in the
//! metrics as `granary_client_disconnects_total`). The fault tests read
//! these counts to prove that each window was really hit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// Where a request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Headers received, no body byte yet.
    BeforeBody = 0,
    /// Some of the body received.
    DuringBody = 1,
    /// The whole body received; the request works on it (data still
    /// being written, digests checked).
    AfterBody = 2,
    /// Committing: version, part or upload records being written.
    Commit = 3,
    /// Answering.
    Answer = 4,
}

impl Phase {
    fn of(v: u8) -> Phase {
        match v {
            0 => Phase::BeforeBody,
            1 => Phase::DuringBody,
            2 => Phase::AfterBody,
            3 => Phase::Commit,
            _ => Phase::Answer,
        }
    }

    /// The phase's name in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Phase::BeforeBody => "before_body",
            Phase::DuringBody => "during_body",
            Phase::AfterBody => "after_body",
            Phase::Commit => "commit",
            Phase::Answer => "answer",
        }
    }
}

/// Counts of requests whose client went away, by operation and phase.
#[derive(Default)]
pub struct Disconnects {
    counts: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
}

impl Disconnects {
    fn count(&self, api: &'static str, phase: Phase) {
        *self.counts.lock().entry((api, phase.name())).or_default() += 1;
    }

    /// Every (operation, phase) seen, with its count.
    pub fn snapshot(&self) -> Vec<((&'static str, &'static str), u64)> {
        self.counts.lock().iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// One request's progress.
pub struct Progress {
    phase: AtomicU8,
    api: OnceLock<&'static str>,
    /// Answered, or its disconnect already counted.
    settled: AtomicBool,
    sink: Arc<Disconnects>,
}

impl Progress {
    /// A request that has just arrived.
    pub fn new(sink: Arc<Disconnects>) -> Arc<Progress> {
        Arc::new(Progress {
            phase: AtomicU8::new(Phase::BeforeBody as u8),
            api: OnceLock::new(),
            settled: AtomicBool::new(false),
            sink,
        })
    }

    /// Names the operation once it is routed.
    pub fn set_api(&self, api: &'static str) {
        let _ = self.api.set(api);
    }

    /// Moves to `phase` (never back).
    pub fn enter(&self, phase: Phase) {
        self.phase.fetch_max(phase as u8, Ordering::Relaxed);
    }

    /// The body ended before its declared length: the client went away.
    pub fn body_cut(&self) {
        self.disconnected();
    }

    /// Whether the request's body has been read to its end.
    pub fn body_read(&self) -> bool {
        self.phase.load(Ordering::Relaxed) >= Phase::AfterBody as u8
    }

    /// The request was answered.
    pub fn answered(&self) {
        self.settled.store(true, Ordering::Relaxed);
    }

    fn disconnected(&self) {
        if !self.settled.swap(true, Ordering::Relaxed) {
            let phase = Phase::of(self.phase.load(Ordering::Relaxed));
            self.sink
                .count(self.api.get().copied().unwrap_or("Unrouted"), phase);
        }
    }
}

/// Counts the request's disconnect if it is dropped unanswered (hyper
/// dropped its future because the client closed the connection).
pub struct AbandonGuard(pub Arc<Progress>);

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        self.0.disconnected();
    }
}
