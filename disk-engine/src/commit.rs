//! Group commit of version records (and the pieces of packed objects): one
//! thread per disk takes every record write waiting in its queue, applies
//! them as one RocksDB batch with one synced WAL write, and answers each.
//!
//! ```text
//! put_record ─┐
//! put_record ─┼─> bounded queue ─> committer thread ─> WriteBatch + fsync ─> replies
//! put_record ─┘
//! ```
//! Concurrent small PUTs thereby share fsyncs while each is acknowledged
//! only once its own write is durable. A write that arrives while a batch is
//! being synced waits for the next batch, which starts at once.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::disk::PutRecordOutcome;
use crate::error::DiskError;
use crate::meta::{MetaStore, RecordWrite};

/// Record writes queued before writers wait.
const COMMIT_QUEUE: usize = 1024;
/// Largest number of writes in one batch.
const MAX_BATCH: usize = 256;

type Reply = oneshot::Sender<Result<PutRecordOutcome, DiskError>>;

/// Handle to a disk's committer thread. Dropping it ends the thread after
/// the writes already queued, and waits for that, so the metadata store is
/// closed once the disk is gone (a reopen finds it unlocked).
pub(crate) struct Committer {
    tx: Option<mpsc::Sender<(RecordWrite, Reply)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Committer {
    /// Starts the committer of `meta`.
    pub fn start(meta: Arc<MetaStore>, label: &str) -> std::io::Result<Committer> {
        let (tx, rx) = mpsc::channel(COMMIT_QUEUE);
        let thread = std::thread::Builder::new()
            .name(format!("commit {label}"))
            .spawn(move || run(meta, rx))?;
        Ok(Committer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Stores a record write durably, sharing the sync with whatever else
    /// is waiting.
    pub async fn put(&self, write: RecordWrite) -> Result<PutRecordOutcome, DiskError> {
        let (reply, answer) = oneshot::channel();
        let gone = || DiskError::Io(std::io::Error::other("record committer stopped"));
        let tx = self.tx.as_ref().ok_or_else(gone)?;
        tx.send((write, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

fn run(meta: Arc<MetaStore>, mut rx: mpsc::Receiver<(RecordWrite, Reply)>) {
    let mut writes = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    while let Some((w, r)) = rx.blocking_recv() {
        writes.push(w);
        replies.push(r);
        while writes.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok((w, r)) => {
                    writes.push(w);
                    replies.push(r);
                }
                Err(_) => break,
            }
        }
        match meta.put_records(&writes) {
            Ok(outcomes) => {
                for (r, o) in replies.drain(..).zip(outcomes) {
                    let _ = r.send(o);
                }
            }
            Err(e) => {
                let text = e.to_string();
                let full = matches!(e, DiskError::Full);
                for r in replies.drain(..) {
                    let _ = r.send(Err(if full {
                        DiskError::Full
                    } else {
                        DiskError::Meta(text.clone())
                    }));
                }
            }
        }
        writes.clear();
    }
}
