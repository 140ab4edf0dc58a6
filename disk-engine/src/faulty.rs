//! A `Disk` decorator that injects faults: offline, failing or full writes,
//! corrupt reads, added latency. Calls no fault applies to reach the disk
//! it wraps unchanged (see `layered.rs`, which forwards every call).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::disk::Disk;
use crate::error::DiskError;
use crate::layered::{DiskLayer, Layered, Op};
use crate::messages::DiskHealth;

/// One kind of injected failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every call fails as if the disk were unplugged.
    Offline,
    /// Shard appends fail with "disk full" once this many bytes were accepted.
    FullAfter(u64),
    /// Shard appends and record writes fail with an I/O error.
    FailWrites,
    /// Shard and piece reads report a checksum failure.
    CorruptReads,
    /// Every call waits this long first.
    Delay(Duration),
}

/// The faults currently set on one disk, and the bytes written since.
#[derive(Default)]
pub struct Faults {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    faults: Vec<Fault>,
    written: u64,
}

/// A disk with the faults currently set applied to its calls.
pub type FaultyDisk = Layered<Faults>;

impl Layered<Faults> {
    /// Wraps `inner` with no faults set.
    pub fn new(inner: Arc<dyn Disk>) -> FaultyDisk {
        Layered::wrap(inner, Arc::default())
    }

    /// Replaces the set of active faults.
    pub fn set_faults(&self, faults: Vec<Fault>) {
        let mut s = self.layer().state.lock();
        s.faults = faults;
        s.written = 0;
    }
}

impl Faults {
    fn has(&self, f: &Fault) -> bool {
        self.state.lock().faults.contains(f)
    }

    fn check_write(&self, bytes: u64) -> Result<(), DiskError> {
        let mut s = self.state.lock();
        if s.faults.contains(&Fault::FailWrites) {
            return Err(DiskError::Io(std::io::Error::other(
                "injected write failure",
            )));
        }
        let limit = s.faults.iter().find_map(|f| match f {
            Fault::FullAfter(n) => Some(*n),
            _ => None,
        });
        if let Some(limit) = limit {
            if s.written + bytes > limit {
                return Err(DiskError::Full);
            }
        }
        s.written += bytes;
        Ok(())
    }
}

#[async_trait]
impl DiskLayer for Faults {
    async fn before(&self, disk: &str, op: Op, bytes: u64) -> Result<(), DiskError> {
        let delay = self.state.lock().faults.iter().find_map(|f| match f {
            Fault::Delay(d) => Some(*d),
            _ => None,
        });
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        if self.has(&Fault::Offline) {
            return Err(DiskError::Offline(format!("{disk}: injected")));
        }
        if let Some(what) = op.checks() {
            if self.has(&Fault::CorruptReads) {
                return Err(DiskError::corrupt(what, "injected corruption"));
            }
        }
        if op.writes() {
            self.check_write(bytes)?;
        }
        Ok(())
    }

    fn health(&self) -> Option<DiskHealth> {
        self.has(&Fault::Offline).then(|| DiskHealth::Offline {
            reason: "injected".into(),
        })
    }
}
