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
//! only once its own write is durable. Deletions of the pieces of replaced
//! or deleted objects ride along in the same batches. A write that arrives while a batch is
//! being synced waits for the next batch, which starts at once.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::disk::PutRecordOutcome;
use crate::error::DiskError;
use crate::meta::{MetaStore, RecordWrite};

/// Record writes queued before writers wait.
const COMMIT_QUEUE: usize = 1024;
/// Largest number of writes in one batch.
const MAX_BATCH: usize = 256;

type Reply = oneshot::Sender<Result<PutRecordOutcome, DiskError>>;

/// One queued job: a record write, or a piece to delete in the next batch.
enum Job {
    Put(RecordWrite, Reply),
    DropPiece(Uuid, oneshot::Sender<Result<(), DiskError>>),
}

/// Handle to a disk's committer thread. Dropping it ends the thread after
/// the writes already queued, and waits for that, so the metadata store is
/// closed once the disk is gone (a reopen finds it unlocked).
pub(crate) struct Committer {
    tx: Option<mpsc::Sender<Job>>,
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
            .spawn({
                let label = label.to_string();
                move || run(meta, rx, &label)
            })?;
        Ok(Committer {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Stores a record write durably, sharing the sync with whatever else
    /// is waiting.
    pub async fn put(&self, write: RecordWrite) -> Result<PutRecordOutcome, DiskError> {
        let (reply, answer) = oneshot::channel();
        self.send(Job::Put(write, reply)).await?;
        answer.await.map_err(|_| gone())?
    }

    /// Deletes a piece in the next batch (the piece of an object replaced
    /// or deleted: an overwrite then costs no separate metadata write).
    pub async fn drop_piece(&self, id: Uuid) -> Result<(), DiskError> {
        let (reply, answer) = oneshot::channel();
        self.send(Job::DropPiece(id, reply)).await?;
        answer.await.map_err(|_| gone())?
    }

    async fn send(&self, job: Job) -> Result<(), DiskError> {
        let tx = self.tx.as_ref().ok_or_else(gone)?;
        tx.send(job).await.map_err(|_| gone())
    }
}

fn gone() -> DiskError {
    DiskError::Io(std::io::Error::other("record committer stopped"))
}

fn run(meta: Arc<MetaStore>, mut rx: mpsc::Receiver<Job>, label: &str) {
    let mut writes = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    let mut dropped = Vec::new();
    let mut drop_replies = Vec::new();
    while let Some(job) = rx.blocking_recv() {
        let mut next = Some(job);
        while let Some(job) = next.take() {
            match job {
                Job::Put(w, r) => {
                    writes.push(w);
                    replies.push(r);
                }
                Job::DropPiece(id, r) => {
                    dropped.push(id);
                    drop_replies.push(r);
                }
            }
            if writes.len() + dropped.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        crate::failpoint::hit_blocking("disk.commit.before", label);
        let committed = meta.commit_batch(&writes, &dropped);
        crate::failpoint::hit_blocking("disk.commit.after", label);
        match committed {
            Ok(outcomes) => {
                for (r, o) in replies.drain(..).zip(outcomes) {
                    let _ = r.send(o);
                }
                for r in drop_replies.drain(..) {
                    let _ = r.send(Ok(()));
                }
            }
            Err(e) => {
                let text = e.to_string();
                let full = matches!(e, DiskError::Full);
                let err = || match full {
                    true => DiskError::Full,
                    false => DiskError::Meta(text.clone()),
                };
                for r in replies.drain(..) {
                    let _ = r.send(Err(err()));
                }
                for r in drop_replies.drain(..) {
                    let _ = r.send(Err(err()));
                }
            }
        }
        writes.clear();
        dropped.clear();
    }
}
