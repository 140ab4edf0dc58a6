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

use crate::hashing::HashTap;
use crate::progress::{Phase, Progress};
use s3_wire::auth::chunked::ChunkedDecoder;
use s3_wire::auth::Payload;
use s3_wire::error::{S3Error, S3Result};

/// Most bytes of an abandoned request body read and discarded so the
/// client receives the error response instead of a reset connection.
const DRAIN_LIMIT_BYTES: u64 = 256 << 20;
/// Longest wait for the next bytes while draining: a client that is still
/// sending delivers data well within it; a stalled one is let go.
const DRAIN_IDLE: Duration = Duration::from_secs(2);
/// Longest a drain goes on in all, however the bytes trickle in: a client
/// refused a request holds its connection no longer than one that sends
/// nothing holds it before its first request (the header timeout's
/// default).
const DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// A request body that, when dropped unread (the request failed before or
/// while reading it), keeps reading and discarding up to
/// [`DRAIN_LIMIT_BYTES`] (for at most [`DRAIN_DEADLINE`]) in the
/// background. Without it the connection closes
/// under a client that is still sending, which sees a broken pipe instead of
/// the S3 error.
///
/// It also moves the request's [`Progress`] through the body's phases,
/// and reports a body the client cut short.
pub struct DrainOnDrop {
    inner: Option<Body>,
    /// The client waits for `100 Continue` before sending the body.
    expects_continue: bool,
    polled: bool,
    progress: Arc<Progress>,
}

impl DrainOnDrop {
    /// Wraps a request body; `expects_continue` when the request carried
    /// `Expect: 100-continue` (then an unread body was never sent).
    pub fn new(body: Body, expects_continue: bool, progress: Arc<Progress>) -> DrainOnDrop {
        DrainOnDrop {
            inner: Some(body),
            expects_continue,
            polled: false,
            progress,
        }
    }
}

impl http_body::Body for DrainOnDrop {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        use std::task::Poll;
        self.polled = true;
        let polled = match self.inner.as_mut() {
            Some(b) => std::pin::Pin::new(b).poll_frame(cx),
            None => Poll::Ready(None),
        };
        match &polled {
            Poll::Ready(Some(Ok(_))) => self.progress.enter(Phase::DuringBody),
            Poll::Ready(None) => self.progress.enter(Phase::AfterBody),
            Poll::Ready(Some(Err(_))) => self.progress.body_cut(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner
            .as_ref()
            .map(http_body::Body::size_hint)
            .unwrap_or_default()
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        if http_body::Body::is_end_stream(&body) || (self.expects_continue && !self.polled) {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let mut frames = body.into_data_stream();
                let mut drained = 0u64;
                let deadline = tokio::time::Instant::now() + DRAIN_DEADLINE;
                while drained < DRAIN_LIMIT_BYTES {
                    let wait = deadline.min(tokio::time::Instant::now() + DRAIN_IDLE);
                    match tokio::time::timeout_at(wait, frames.next()).await {
                        Ok(Some(Ok(b))) => drained += b.len() as u64,
                        _ => break,
                    }
                }
            });
        }
    }
}

/// Trailing headers of an `aws-chunked` body, available once it ended.
pub type Trailers = Arc<Mutex<Option<Vec<(String, String)>>>>;

/// How fast a request body must arrive: every `window` of time spent
/// waiting for it must bring at least `min_rate` bytes per second (and at
/// least one byte), or the request fails with RequestTimeout. A pause of a
/// whole window fails it too, so this is also the idle timeout. Only time
/// the server spends waiting for the client counts: while the server is
/// not reading (its disks are slow), the client cannot send either.
#[derive(Clone, Copy, Debug)]
pub struct BodyPace {
    /// Length of each measuring window (`--body-timeout`).
    pub window: Duration,
    /// Bytes per second a body must average over each window
    /// (`--body-min-rate`).
    pub min_rate: u64,
}

impl BodyPace {
    fn needed(&self) -> u64 {
        (self.min_rate as f64 * self.window.as_secs_f64()).max(1.0) as u64
    }
}

/// How to read one request body.
pub struct BodyOptions {
    /// Verification mode from authentication.
    pub payload: Payload,
    /// Exact number of (decoded) bytes the body must carry.
    pub length: u64,
    /// How fast the body must come.
    pub pace: BodyPace,
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
    pace: BodyPace,
    /// The current measuring window: time waited in it, bytes in it.
    window: (Duration, u64),
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
            let frame = self.paced_frame().await?;
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

    /// The next frame, within the pace: a window that ends short of its
    /// bytes fails the request, at its end rather than at the next byte.
    async fn paced_frame(&mut self) -> S3Result<Option<Result<Bytes, axum::Error>>> {
        loop {
            let (waited, got) = self.window;
            let started = tokio::time::Instant::now();
            let frame = tokio::time::timeout(self.pace.window - waited, self.frames.next()).await;
            let waited = (waited + started.elapsed()).min(self.pace.window);
            let got = got
                + match &frame {
                    Ok(Some(Ok(f))) => f.len() as u64,
                    _ => 0,
                };
            self.window = (waited, got);
            // The end of the body is never late.
            if waited == self.pace.window && !matches!(frame, Ok(None)) {
                if got < self.pace.needed() {
                    return Err(S3Error::RequestTimeout);
                }
                self.window = (Duration::ZERO, 0);
            }
            if let Ok(frame) = frame {
                return Ok(frame);
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
        pace: opts.pace,
        window: (Duration::ZERO, 0),
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
    pace: BodyPace,
) -> S3Result<Bytes> {
    if length > limit {
        return Err(S3Error::MaxMessageLengthExceeded);
    }
    let (mut stream, _) = request_body(
        body,
        BodyOptions {
            payload,
            length,
            pace,
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
    // The whole body is here; what remains is acting on it.
    placement::failpoint::hit("request.received", "").await;
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body whose sender pauses only while the server is not reading is
    /// not late: the pace counts time spent waiting for the client.
    #[tokio::test]
    async fn the_pace_counts_only_time_spent_waiting_for_the_client() {
        let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let pace = BodyPace {
            window: Duration::from_millis(500),
            min_rate: 1000,
        };
        let (mut stream, _) = request_body(
            Body::from_stream(rx),
            BodyOptions {
                payload: Payload::Unsigned,
                length: 1000,
                pace,
                tap: None,
            },
        );
        let sender = tokio::spawn(async move {
            use futures::SinkExt;
            tx.send(Ok(Bytes::from(vec![1; 100]))).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1050)).await;
            tx.send(Ok(Bytes::from(vec![2; 400]))).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send(Ok(Bytes::from(vec![3; 500]))).await.unwrap();
        });
        assert_eq!(stream.next().await.unwrap().unwrap().len(), 100);
        // The server is busy (its disks are slow) for two windows.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut rest = 0;
        while let Some(chunk) = stream.next().await {
            rest += chunk
                .expect("not late: the client was never waited on for long")
                .len();
        }
        assert_eq!(rest, 900);
        sender.await.unwrap();
    }

    #[tokio::test]
    async fn a_body_below_the_pace_fails_at_the_end_of_its_window() {
        let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let (mut stream, _) = request_body(
            Body::from_stream(rx),
            BodyOptions {
                payload: Payload::Unsigned,
                length: 1000,
                pace: BodyPace {
                    window: Duration::from_millis(300),
                    min_rate: 1000,
                },
                tap: None,
            },
        );
        let sender = tokio::spawn(async move {
            use futures::SinkExt;
            for _ in 0..20 {
                if tx.send(Ok(Bytes::from_static(b"z"))).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let started = std::time::Instant::now();
        let mut failed = None;
        while let Some(chunk) = stream.next().await {
            if let Err(e) = chunk {
                failed = Some(e);
                break;
            }
        }
        let e = failed.expect("a trickle below the pace is cut");
        assert!(matches!(
            e.downcast_ref::<S3Error>(),
            Some(S3Error::RequestTimeout)
        ));
        assert!(started.elapsed() < Duration::from_millis(600));
        sender.abort();
    }
}
