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
//! or deleted objects and the staged entries of writes being streamed ride
//! along in the same batches. A write that arrives while a batch is being
//! synced waits for the next batch, which starts at once. Before each
//! batch the disk's directory is checked to be the one opened: a removed
//! directory fails every write instead of acknowledging it.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::error::DiskError;
use crate::messages::PutRecordOutcome;
use crate::meta::{MetaStore, RecordWrite, SideWrites};
use crate::presence::DirIdentity;

/// Record writes queued before writers wait.
const COMMIT_QUEUE: usize = 1024;
/// Largest number of writes in one batch.
const MAX_BATCH: usize = 256;

type Reply = oneshot::Sender<Result<PutRecordOutcome, DiskError>>;
type Done = oneshot::Sender<Result<(), DiskError>>;

/// A write that rides along in the next batch.
pub(crate) enum Side {
    /// Delete the piece of an object replaced or deleted.
    DropPiece(Uuid),
    /// Add staged entries (data id, value).
    Stage(Vec<(Uuid, Vec<u8>)>),
    /// Remove staged entries.
    Unstage(Vec<Uuid>),
}

/// One queued job: a record write, or a side write for the next batch.
enum Job {
    Put(Box<RecordWrite>, Reply),
    Side(Side, Done),
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
    /// Starts the committer of `meta`; every batch first checks that the
    /// disk's directory is still `dir`.
    pub fn start(
        meta: Arc<MetaStore>,
        dir: Arc<DirIdentity>,
        label: &str,
    ) -> std::io::Result<Committer> {
        let (tx, rx) = mpsc::channel(COMMIT_QUEUE);
        let thread = std::thread::Builder::new()
            .name(format!("commit {label}"))
            .spawn({
                let label = label.to_string();
                move || run(meta, dir, rx, &label)
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
        self.send(Job::Put(Box::new(write), reply)).await?;
        answer.await.map_err(|_| gone())?
    }

    /// Writes `side` in the next batch (durable on return): an overwrite's
    /// freed piece or a write's staged entries then cost no metadata write
    /// of their own.
    pub async fn side(&self, side: Side) -> Result<(), DiskError> {
        let (reply, answer) = oneshot::channel();
        self.send(Job::Side(side, reply)).await?;
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

fn run(meta: Arc<MetaStore>, dir: Arc<DirIdentity>, mut rx: mpsc::Receiver<Job>, label: &str) {
    let mut writes = Vec::with_capacity(MAX_BATCH);
    let mut replies = Vec::with_capacity(MAX_BATCH);
    let mut side = SideWrites::default();
    let mut side_replies = Vec::new();
    while let Some(job) = rx.blocking_recv() {
        let mut next = Some(job);
        while let Some(job) = next.take() {
            match job {
                Job::Put(w, r) => {
                    writes.push(*w);
                    replies.push(r);
                }
                Job::Side(s, r) => {
                    match s {
                        Side::DropPiece(id) => side.dropped_pieces.push(id),
                        Side::Stage(entries) => side.stage.extend(entries),
                        Side::Unstage(ids) => side.unstage.extend(ids),
                    }
                    side_replies.push(r);
                }
            }
            if writes.len() + side.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        crate::failpoint::hit_blocking("disk.commit.before", label);
        let committed = dir.check().and_then(|()| meta.commit_batch(&writes, &side));
        crate::failpoint::hit_blocking("disk.commit.after", label);
        match committed {
            Ok(outcomes) => {
                for (r, o) in replies.drain(..).zip(outcomes) {
                    let _ = r.send(o);
                }
                for r in side_replies.drain(..) {
                    let _ = r.send(Ok(()));
                }
            }
            Err(e) => {
                let text = e.to_string();
                let err = || match &e {
                    DiskError::Full => DiskError::Full,
                    DiskError::Offline(why) => DiskError::Offline(why.clone()),
                    _ => DiskError::Meta(text.clone()),
                };
                for r in replies.drain(..) {
                    let _ = r.send(Err(err()));
                }
                for r in side_replies.drain(..) {
                    let _ = r.send(Err(err()));
                }
            }
        }
        writes.clear();
        side.clear();
    }
}
