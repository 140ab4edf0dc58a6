//! Hashing beside the write path: MD5 (the ETag) and a flexible checksum
//! each run on their own blocking thread, fed through bounded queues, so
//! neither sits in series with receiving, encoding or writing.

use bytes::Bytes;
use md5::{Digest as _, Md5};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::checksum::ChecksumAlgorithm;

/// Chunks queued per hasher before the body reader waits for it.
const HASH_QUEUE_CHUNKS: usize = 32;

/// What the hashers computed over the whole body.
#[derive(Clone, Debug, Default)]
pub struct Digests {
    /// MD5, if requested.
    pub md5: Option<[u8; 16]>,
    /// The checksum, if requested.
    pub checksum: Option<(ChecksumAlgorithm, Vec<u8>)>,
}

enum Output {
    Md5([u8; 16]),
    Checksum(ChecksumAlgorithm, Vec<u8>),
}

/// Hashers running beside a body stream.
pub struct HashTap {
    senders: Vec<mpsc::Sender<Bytes>>,
    workers: Vec<JoinHandle<Output>>,
}

impl HashTap {
    /// Starts the requested hashers.
    pub fn start(md5: bool, checksum: Option<ChecksumAlgorithm>) -> HashTap {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        if md5 {
            let (tx, mut rx) = mpsc::channel::<Bytes>(HASH_QUEUE_CHUNKS);
            senders.push(tx);
            workers.push(tokio::task::spawn_blocking(move || {
                placement::at_bulk_priority(|| {
                    let mut h = Md5::new();
                    while let Some(b) = rx.blocking_recv() {
                        h.update(&b);
                    }
                    Output::Md5(h.finalize().into())
                })
            }));
        }
        if let Some(alg) = checksum {
            let (tx, mut rx) = mpsc::channel::<Bytes>(HASH_QUEUE_CHUNKS);
            senders.push(tx);
            workers.push(tokio::task::spawn_blocking(move || {
                placement::at_bulk_priority(|| {
                    let mut h = alg.hasher();
                    while let Some(b) = rx.blocking_recv() {
                        h.update(&b);
                    }
                    Output::Checksum(alg, h.finalize())
                })
            }));
        }
        HashTap { senders, workers }
    }

    /// Hands a chunk to every hasher (waits while a hasher is behind).
    pub async fn feed(&self, chunk: &Bytes) {
        for tx in &self.senders {
            let _ = tx.send(chunk.clone()).await;
        }
    }

    /// Closes the input and collects the digests.
    pub async fn finish(mut self) -> Digests {
        self.senders.clear();
        let mut d = Digests::default();
        for w in std::mem::take(&mut self.workers) {
            match w.await {
                Ok(Output::Md5(m)) => d.md5 = Some(m),
                Ok(Output::Checksum(a, v)) => d.checksum = Some((a, v)),
                Err(e) => tracing::error!(error = %e, "hasher failed"),
            }
        }
        d
    }
}
