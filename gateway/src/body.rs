//! Request bodies as the storage layer consumes them: decoded from
//! `aws-chunked` (verifying chunk signatures), checked against the signed
//! SHA-256, bounded by the declared length, guarded by an idle deadline
//! against slow clients, and tapped by the hashers. Nothing buffers the
//! whole body.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use placement::{BodyError, BodyStream};
use sha2::{Digest as _, Sha256};

use crate::auth::chunked::ChunkedDecoder;
use crate::auth::Payload;
use crate::error::{S3Error, S3Result};
use crate::hashing::HashTap;

/// Trailing headers of an `aws-chunked` body, available once it ended.
pub type Trailers = Arc<Mutex<Option<Vec<(String, String)>>>>;

/// How to read one request body.
pub struct BodyOptions {
    /// Verification mode from authentication.
    pub payload: Payload,
    /// Exact number of (decoded) bytes the body must carry.
    pub length: u64,
    /// Longest wait for the next bytes before the request fails.
    pub idle_timeout: Duration,
    /// Hashers to feed, if any.
    pub tap: Option<Arc<HashTap>>,
}

struct Reader {
    frames: BodyDataStream,
    decoder: Option<ChunkedDecoder>,
    sha: Option<(Sha256, String)>,
    pending: VecDeque<Bytes>,
    total: u64,
    length: u64,
    idle: Duration,
    tap: Option<Arc<HashTap>>,
    trailers: Trailers,
    ended: bool,
}

impl Reader {
    async fn next(&mut self) -> S3Result<Option<Bytes>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                if b.is_empty() {
                    continue;
                }
                if let Some(tap) = &self.tap {
                    tap.feed(&b).await;
                }
                return Ok(Some(b));
            }
            if self.ended {
                return Ok(None);
            }
            let frame = tokio::time::timeout(self.idle, self.frames.next())
                .await
                .map_err(|_| S3Error::RequestTimeout)?;
            match frame {
                None => {
                    self.ended = true;
                    self.finish()?;
                }
                Some(Err(e)) => {
                    return Err(S3Error::IncompleteBody(format!(
                        "You did not provide the number of bytes specified by the Content-Length HTTP header ({e})"
                    )))
                }
                Some(Ok(frame)) => {
                    let before = self.pending.len();
                    match &mut self.decoder {
                        Some(d) => {
                            let mut out = Vec::new();
                            d.push(frame, &mut out)?;
                            self.pending.extend(out);
                        }
                        None => self.pending.push_back(frame),
                    }
                    for b in self.pending.iter().skip(before) {
                        self.total += b.len() as u64;
                        if let Some((h, _)) = &mut self.sha {
                            h.update(b);
                        }
                    }
                    if self.total > self.length {
                        return Err(S3Error::IncompleteBody(format!(
                            "The request body is longer than the {} bytes declared",
                            self.length
                        )));
                    }
                }
            }
        }
    }

    fn finish(&mut self) -> S3Result<()> {
        if let Some(d) = &mut self.decoder {
            *self.trailers.lock() = Some(d.finish()?);
        }
        if self.total != self.length {
            return Err(S3Error::IncompleteBody(format!(
                "You did not provide the number of bytes specified by the Content-Length HTTP header ({} of {})",
                self.total, self.length
            )));
        }
        if let Some((h, expected)) = self.sha.take() {
            if hex::encode(h.finalize()) != *expected {
                return Err(S3Error::ContentSha256Mismatch);
            }
        }
        Ok(())
    }
}

/// Wraps a request body; the returned trailers fill in when it ends.
pub fn request_body(body: Body, opts: BodyOptions) -> (BodyStream, Trailers) {
    let trailers: Trailers = Arc::default();
    let (decoder, sha) = match opts.payload {
        Payload::Unsigned => (None, None),
        Payload::Sha256(h) => (None, Some((Sha256::new(), h))),
        Payload::SignedChunks { signer, .. } => (Some(ChunkedDecoder::new(Some(signer))), None),
        Payload::UnsignedChunks => (Some(ChunkedDecoder::new(None)), None),
    };
    let reader = Reader {
        frames: body.into_data_stream(),
        decoder,
        sha,
        pending: VecDeque::new(),
        total: 0,
        length: opts.length,
        idle: opts.idle_timeout,
        tap: opts.tap,
        trailers: trailers.clone(),
        ended: false,
    };
    let stream = futures::stream::unfold(Some(reader), |state| async move {
        let mut reader = state?;
        match reader.next().await {
            Ok(Some(b)) => Some((Ok(b), Some(reader))),
            Ok(None) => None,
            Err(e) => Some((Err(Box::new(e) as BodyError), None)),
        }
    });
    (Box::pin(stream), trailers)
}

/// Reads a small body (XML documents) completely, up to `limit` bytes.
pub async fn read_small(
    body: Body,
    payload: Payload,
    length: u64,
    limit: u64,
    idle: Duration,
) -> S3Result<Bytes> {
    if length > limit {
        return Err(S3Error::MaxMessageLengthExceeded);
    }
    let (mut stream, _) = request_body(
        body,
        BodyOptions {
            payload,
            length,
            idle_timeout: idle,
            tap: None,
        },
    );
    let mut out = Vec::with_capacity(length as usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| match e.downcast::<S3Error>() {
            Ok(s3) => *s3,
            Err(other) => S3Error::Internal(other.to_string()),
        })?;
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}
