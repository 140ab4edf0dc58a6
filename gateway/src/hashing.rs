//! Hashing beside the write path: MD5 (the ETag) and a flexible checksum
//! run on blocking threads fed through bounded queues, so neither sits in
//! series with receiving, encoding or writing.
//!
//! Chunks are handed over in batches of about [`HASH_BATCH_BYTES`]: a body
//! arrives in frames of tens of KiB, and waking a hasher per frame cost more
//! CPU than the CRCs themselves. A CRC (a few GB/s per core) shares MD5's
//! thread; SHA-1 and SHA-256 get their own, as MD5 is already the slowest
//! stage.

use std::sync::Mutex;

use bytes::Bytes;
use md5::{Digest as _, Md5};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::checksum::{ChecksumAlgorithm, ChecksumHasher};

/// Bytes collected before a batch is handed to the hashers.
const HASH_BATCH_BYTES: usize = 1 << 20;
/// Batches queued per hasher thread before the body reader waits for it.
const HASH_QUEUE_BATCHES: usize = 4;

/// What the hashers computed over the whole body.
#[derive(Clone, Debug, Default)]
pub struct Digests {
    /// MD5, if requested.
    pub md5: Option<[u8; 16]>,
    /// The checksum, if requested.
    pub checksum: Option<(ChecksumAlgorithm, Vec<u8>)>,
}

/// One running hash.
enum Hasher {
    Md5(Md5),
    Sum(ChecksumAlgorithm, Box<ChecksumHasher>),
}

impl Hasher {
    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(data),
            Hasher::Sum(_, h) => h.update(data),
        }
    }

    fn finish(self, into: &mut Digests) {
        match self {
            Hasher::Md5(h) => into.md5 = Some(h.finalize().into()),
            Hasher::Sum(alg, h) => into.checksum = Some((alg, (*h).finalize())),
        }
    }
}

#[derive(Default)]
struct Batch {
    chunks: Vec<Bytes>,
    bytes: usize,
}

/// Hashers running beside a body stream.
pub struct HashTap {
    pending: Mutex<Batch>,
    senders: Vec<mpsc::Sender<Vec<Bytes>>>,
    workers: Vec<JoinHandle<Vec<Hasher>>>,
}

impl HashTap {
    /// Starts the requested hashers.
    pub fn start(md5: bool, checksum: Option<ChecksumAlgorithm>) -> HashTap {
        let mut groups: Vec<Vec<Hasher>> = Vec::new();
        if md5 {
            groups.push(vec![Hasher::Md5(Md5::new())]);
        }
        if let Some(alg) = checksum {
            let hasher = Hasher::Sum(alg, Box::new(alg.hasher()));
            match groups.first_mut() {
                Some(group) if alg.crc().is_some() => group.push(hasher),
                _ => groups.push(vec![hasher]),
            }
        }
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for mut group in groups {
            let (tx, mut rx) = mpsc::channel::<Vec<Bytes>>(HASH_QUEUE_BATCHES);
            senders.push(tx);
            workers.push(tokio::task::spawn_blocking(move || {
                placement::at_bulk_priority(|| {
                    while let Some(batch) = rx.blocking_recv() {
                        for chunk in &batch {
                            for h in &mut group {
                                h.update(chunk);
                            }
                        }
                    }
                    group
                })
            }));
        }
        HashTap {
            pending: Mutex::new(Batch::default()),
            senders,
            workers,
        }
    }

    /// Adds a chunk; hands a full batch to every hasher (waiting while a
    /// hasher is behind).
    pub async fn feed(&self, chunk: &Bytes) {
        let full = {
            let mut p = self.pending.lock().expect("hash batch lock");
            p.bytes += chunk.len();
            p.chunks.push(chunk.clone());
            (p.bytes >= HASH_BATCH_BYTES).then(|| std::mem::take(&mut *p))
        };
        if let Some(batch) = full {
            self.send(batch.chunks).await;
        }
    }

    async fn send(&self, chunks: Vec<Bytes>) {
        for tx in &self.senders {
            let _ = tx.send(chunks.clone()).await;
        }
    }

    /// Hashes what is left, closes the input and collects the digests.
    pub async fn finish(mut self) -> Digests {
        let rest = std::mem::take(&mut *self.pending.lock().expect("hash batch lock"));
        if !rest.chunks.is_empty() {
            self.send(rest.chunks).await;
        }
        self.senders.clear();
        let mut d = Digests::default();
        for w in std::mem::take(&mut self.workers) {
            match w.await {
                Ok(group) => group.into_iter().for_each(|h| h.finish(&mut d)),
                Err(e) => tracing::error!(error = %e, "hasher failed"),
            }
        }
        d
    }
}
