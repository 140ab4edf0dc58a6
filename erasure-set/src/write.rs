//! The write pipeline: body → stripes → Reed–Solomon encode → k + m shard
//! writers, as three overlapping stages joined by bounded channels.
//!
//! ```text
//! [read body, cut stripes] --encode (blocking pool)--> channel(WRITE_AHEAD) --> [append to every disk]
//! ```
//! Memory per upload is bounded by a few stripes whatever the object size.
//! Hashing (MD5, checksums) runs beside this in the gateway, not in series.

use std::pin::Pin;
use std::sync::{Arc, Weak};

use bytes::{Bytes, BytesMut};
use disk_engine::{DiskError, ShardWriter};
use futures::future::join_all;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::error::{BodyError, SetError};
use crate::layout::ErasureLayout;
use crate::packed::Pieces;
use crate::quorum::Tally;
use crate::record::TierRef;
use crate::set::ErasureSet;

/// Encoded stripes queued between the encoder and the disk writers.
const WRITE_AHEAD_STRIPES: usize = 2;

/// A request body as the placement layer consumes it.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// Object data durably written to a write quorum of disks but not yet
/// referenced by any record; its id is staged on the set's disks (see
/// `gc.rs`), so garbage collection leaves it alone. Dropping it before a
/// commit took it over ([`StagedData::hand_over`]) deletes the shard files
/// and their staged entries again; once handed over, what becomes of the
/// data is decided by the records that were written (rule 3 of
/// `commit.rs`), never by a drop.
pub struct StagedData {
    /// Shard id of the data; `None` when the data was empty.
    pub data_id: Option<Uuid>,
    /// Bytes written.
    pub size: u64,
    /// Layout the shards were written with.
    pub layout: ErasureLayout,
    /// Disk slots holding a finished shard.
    pub disks: Vec<bool>,
    /// A packed object's pieces, stored with the record at commit.
    pub pieces: Option<Pieces>,
    /// Set when the data was written into a tier (the cold pool) as this
    /// tier object, to be referenced from the version record.
    pub tier: Option<TierRef>,
    owner: Option<Arc<ErasureSet>>,
    /// The set that staged it, whose records alone can refer to it.
    staged_by: Weak<ErasureSet>,
}

impl StagedData {
    /// Whether `set` staged this data (only its records can refer to it).
    pub fn staged_in(&self, set: &Arc<ErasureSet>) -> bool {
        std::ptr::eq(self.staged_by.as_ptr(), Arc::as_ptr(set))
    }

    /// Hands the data over to a commit that is about to write records
    /// referring to it: from now on dropping it deletes nothing. Returns
    /// the staged ids those records remove in their own writes.
    pub fn hand_over(&mut self) -> Vec<Uuid> {
        match (self.owner.take(), self.data_id) {
            (Some(_), Some(id)) => vec![id],
            _ => Vec::new(),
        }
    }
}

impl Drop for StagedData {
    fn drop(&mut self) {
        if let (Some(set), Some(id)) = (self.owner.take(), self.data_id) {
            set.discard_later(id);
        }
    }
}

/// Data being written by [`ErasureSet::write_data`]: if the write does
/// not end with its data staged (a failure, or the future dropped), its
/// shard files and staged entries are removed. Nothing can refer to the
/// id yet, so this undoes nothing anyone could have seen.
struct Writing {
    set: Arc<ErasureSet>,
    id: Uuid,
    armed: bool,
}

/// This process's instance id, fresh at every start: the owner of the data
/// it stages, which garbage collection may remove once its owner is gone.
pub fn instance() -> Uuid {
    static INSTANCE: std::sync::OnceLock<Uuid> = std::sync::OnceLock::new();
    *INSTANCE.get_or_init(Uuid::new_v4)
}

impl Drop for Writing {
    fn drop(&mut self) {
        if self.armed {
            self.set.discard_later(self.id);
        }
    }
}

impl ErasureSet {
    /// Records `id` as staged by this process on every disk, before any
    /// of its data is written; fails unless a write quorum of disks did.
    pub(crate) async fn stage(&self, id: Uuid) -> Result<(), SetError> {
        let owner = instance();
        let results = self
            .each_disk(|_, d| async move { d.stage(vec![id], owner).await })
            .await;
        self.require_write_quorum(&results)
    }

    /// Removes staged data `id` that no record refers to: its shard files
    /// (with their hot-object cache units) and its staged entries, on every
    /// disk, in the background. What a crash interrupts here, garbage
    /// collection finishes.
    pub fn discard_later(self: &Arc<Self>, id: Uuid) {
        let set = self.clone();
        let Ok(h) = tokio::runtime::Handle::try_current() else {
            return;
        };
        h.spawn(async move {
            set.free_everywhere(id).await;
            set.unstage(id).await;
        });
    }

    /// Removes the staged entries of `id` on every disk (best effort).
    pub async fn unstage(&self, id: Uuid) {
        self.each_disk(|_, d| async move { d.unstage(vec![id]).await })
            .await;
    }
}

type Writers = Vec<Option<Box<dyn ShardWriter>>>;
/// The write stage's task: returns the writers (to finish) and the errors seen.
type WriteStage = tokio::task::JoinHandle<Result<(Writers, Vec<DiskError>), SetError>>;
/// The running pipeline: where encoded stripes go, and the stage that takes them.
type Pipeline = Option<(mpsc::Sender<Vec<Bytes>>, WriteStage)>;

/// Appends each encoded stripe to every live writer; drops writers that fail
/// and gives up when fewer than a write quorum remain.
async fn write_stage(
    set: Arc<ErasureSet>,
    layout: ErasureLayout,
    mut writers: Writers,
    mut rx: mpsc::Receiver<Vec<Bytes>>,
    mut errors: Vec<DiskError>,
) -> Result<(Writers, Vec<DiskError>), SetError> {
    while let Some(shards) = rx.recv().await {
        let results = join_all(writers.iter_mut().enumerate().map(|(slot, w)| {
            let block = shards[layout.shard_of_disk(slot)].clone();
            async move {
                match w {
                    Some(w) => Some(w.append(block).await),
                    None => None,
                }
            }
        }))
        .await;
        for (slot, r) in results.into_iter().enumerate() {
            if let Some(Err(e)) = r {
                tracing::warn!(disk = set.disks[slot].label(), error = %e, "shard write failed");
                writers[slot] = None;
                errors.push(e);
            }
        }
        let alive = writers.iter().filter(|w| w.is_some()).count();
        set.decide_write(Tally::writing(alive, &errors))?;
    }
    Ok((writers, errors))
}

impl ErasureSet {
    /// Streams `body` into new shard files with `layout` and returns once the
    /// data is durable on a write quorum of disks. `size_hint` (if known)
    /// lets a write that cannot fit fail before any byte is stored.
    ///
    /// With `packable`, a body whose declared size is at most the pack
    /// threshold is encoded in memory into pieces instead, stored with the
    /// record at commit.
    pub async fn write_data(
        self: &Arc<Self>,
        layout: ErasureLayout,
        mut body: BodyStream,
        size_hint: Option<u64>,
        packable: bool,
    ) -> Result<StagedData, SetError> {
        self.check_space(size_hint.unwrap_or(0)).await?;
        if let Some(size) = size_hint.filter(|s| packable && *s <= self.pack_threshold) {
            return self.pack(layout, body, size).await;
        }
        let stripe_size = layout.stripe_size() as usize;
        let data_id = Uuid::now_v7();
        // Armed from the start: the writers open (and the id is staged) at
        // the first stripe, wherever the body is cut off.
        let mut writing = Writing {
            set: self.clone(),
            id: data_id,
            armed: true,
        };
        let mut size: u64 = 0;
        let mut buf = BytesMut::new();
        let mut pipeline: Pipeline = None;

        let result: Result<(), SetError> = async {
            loop {
                let chunk = body.next().await.transpose().map_err(SetError::Body)?;
                let eof = chunk.is_none();
                let mut chunk = chunk.unwrap_or_default();
                size += chunk.len() as u64;
                loop {
                    if buf.is_empty() && chunk.len() >= stripe_size {
                        // A whole stripe straight from the body, no copy.
                        let stripe = chunk.split_to(stripe_size);
                        self.send_stripe(&mut pipeline, layout, data_id, stripe)
                            .await?;
                        continue;
                    }
                    let room = stripe_size - buf.len();
                    let take = room.min(chunk.len());
                    if buf.capacity() == 0 {
                        buf.reserve(stripe_size);
                    }
                    buf.extend_from_slice(&chunk.split_to(take));
                    if buf.len() == stripe_size {
                        let stripe = buf.split().freeze();
                        self.send_stripe(&mut pipeline, layout, data_id, stripe)
                            .await?;
                    }
                    if chunk.is_empty() {
                        break;
                    }
                }
                if eof {
                    if !buf.is_empty() {
                        let stripe = buf.split().freeze();
                        self.send_stripe(&mut pipeline, layout, data_id, stripe)
                            .await?;
                    }
                    return Ok(());
                }
            }
        }
        .await;

        let Some((tx, task)) = pipeline else {
            // Nothing was staged: no stripe was cut.
            writing.armed = false;
            result?;
            return Ok(self.empty_data(layout));
        };
        drop(tx);
        if let Err(e) = result {
            task.abort();
            return Err(e);
        }
        let (writers, mut errors) = task
            .await
            .map_err(|e| SetError::Internal(format!("write stage: {e}")))??;
        let finished = join_all(writers.into_iter().map(|w| async move {
            match w {
                Some(w) => Some(w.finish().await),
                None => None,
            }
        }))
        .await;
        let mut disks = vec![false; self.width()];
        for (slot, r) in finished.into_iter().enumerate() {
            match r {
                Some(Ok(_)) => disks[slot] = true,
                Some(Err(e)) => {
                    tracing::warn!(disk = self.disks[slot].label(), error = %e, "shard finish failed");
                    errors.push(e);
                }
                None => {}
            }
        }
        let alive = disks.iter().filter(|d| **d).count();
        self.decide_write(Tally::writing(alive, &errors))?;
        writing.armed = false;
        Ok(StagedData {
            data_id: Some(data_id),
            size,
            layout,
            disks,
            pieces: None,
            tier: None,
            owner: Some(self.clone()),
            staged_by: Arc::downgrade(self),
        })
    }

    fn empty_data(self: &Arc<Self>, layout: ErasureLayout) -> StagedData {
        StagedData {
            data_id: None,
            size: 0,
            layout,
            disks: vec![true; self.width()],
            pieces: None,
            tier: None,
            owner: None,
            staged_by: Arc::downgrade(self),
        }
    }

    /// Receives a small body (at most `declared` bytes) and erasure-codes it
    /// into pieces: the shards of a one-stripe object, kept in memory until
    /// the record is written.
    async fn pack(
        self: &Arc<Self>,
        layout: ErasureLayout,
        mut body: BodyStream,
        declared: u64,
    ) -> Result<StagedData, SetError> {
        let mut buf = BytesMut::with_capacity(declared as usize);
        while let Some(chunk) = body.next().await.transpose().map_err(SetError::Body)? {
            if (buf.len() + chunk.len()) as u64 > declared {
                return Err(SetError::InvalidArgument(format!(
                    "the body is longer than the {declared} bytes declared"
                )));
            }
            buf.extend_from_slice(&chunk);
        }
        if buf.is_empty() {
            return Ok(self.empty_data(layout));
        }
        let size = buf.len();
        let id = Uuid::now_v7();
        let shards = self
            .codec
            .encode(&buf.freeze(), size.div_ceil(layout.data as usize));
        Ok(StagedData {
            data_id: Some(id),
            size: size as u64,
            layout,
            disks: vec![true; self.width()],
            pieces: Some(Pieces { id, shards }),
            tier: None,
            owner: None,
            staged_by: Arc::downgrade(self),
        })
    }

    async fn send_stripe(
        self: &Arc<Self>,
        pipeline: &mut Pipeline,
        layout: ErasureLayout,
        data_id: Uuid,
        stripe: Bytes,
    ) -> Result<(), SetError> {
        if pipeline.is_none() {
            *pipeline = Some(self.open_writers(layout, data_id).await?);
        }
        let (tx, _) = pipeline.as_ref().expect("just opened");
        let block_len = stripe.len().div_ceil(layout.data as usize);
        let codec = self.codec.clone();
        let shards = tokio::task::spawn_blocking(move || {
            disk_engine::at_bulk_priority(|| codec.encode(&stripe, block_len))
        })
        .await
        .map_err(|e| SetError::Internal(format!("encode: {e}")))?;
        if tx.send(shards).await.is_err() {
            // The write stage stopped: surface its error.
            let (_, task) = pipeline.take().expect("pipeline open");
            return Err(match task.await {
                Ok(Err(e)) => e,
                Ok(Ok(_)) => SetError::Internal("write stage ended early".into()),
                Err(e) => SetError::Internal(format!("write stage: {e}")),
            });
        }
        Ok(())
    }

    async fn open_writers(
        self: &Arc<Self>,
        layout: ErasureLayout,
        data_id: Uuid,
    ) -> Result<(mpsc::Sender<Vec<Bytes>>, WriteStage), SetError> {
        // Staged before its first byte is written: shard files appear
        // under their id only when finished, after this.
        let all = vec![true; self.width()];
        let (staged, opened) = futures::join!(
            self.stage(data_id),
            self.create_shards(data_id, layout, &all)
        );
        staged?;
        let mut writers: Writers = Vec::with_capacity(opened.len());
        let mut errors = Vec::new();
        for (slot, r) in opened.into_iter().enumerate() {
            match r.expect("every disk was asked") {
                Ok(w) => writers.push(Some(w)),
                Err(e) => {
                    tracing::debug!(disk = self.disks[slot].label(), error = %e, "disk skipped for write");
                    errors.push(e);
                    writers.push(None);
                }
            }
        }
        let alive = writers.iter().filter(|w| w.is_some()).count();
        self.decide_write(Tally::writing(alive, &errors))?;
        let (tx, rx) = mpsc::channel(WRITE_AHEAD_STRIPES);
        let task = tokio::spawn(write_stage(self.clone(), layout, writers, rx, errors));
        Ok((tx, task))
    }
}
