//! Connection hygiene below HTTP: a connection must start a request within
//! the header timeout of being accepted (whatever it sends meanwhile), and
//! once it has served one it is closed after the idle timeout without
//! traffic or a request in flight. This covers what hyper's own header
//! timeout does not: a connection that never sends a byte, one that sends
//! part of the HTTP/2 preface and stops, and an HTTP/2 connection (prior
//! knowledge or ALPN) that opens no stream. Request bodies are bounded by
//! the body reader's rate rule, and the discarded rest of a refused body
//! by the drain's deadline (`body.rs`), not here.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The deadlines of one connection.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    /// From accept to the first request's headers.
    pub header: Duration,
    /// Without traffic and with no request in flight, after the first.
    pub idle: Duration,
}

/// What the HTTP layer tells the guard: requests begun and in flight.
#[derive(Debug)]
pub struct Activity {
    opened: Instant,
    started: AtomicBool,
    in_flight: AtomicUsize,
    /// Reads end here: the answer being written is the last.
    condemned: AtomicBool,
    /// Milliseconds after `opened` of the last traffic or request end.
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            started: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            condemned: AtomicBool::new(false),
            last_ms: AtomicU64::new(0),
        })
    }

    fn touch(&self) {
        let ms = self.opened.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// Ends the reading side of an HTTP/1 connection: the rest of a body
    /// its answer refused is not drained at the sender's pace (an answer
    /// marked [`StopReading`]).
    pub fn condemn(&self) {
        self.condemned.store(true, Ordering::Relaxed);
    }

    /// A request's headers arrived; the returned guard ends it when
    /// dropped (its response is ready, or it was abandoned).
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.started.store(true, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }
}

/// Marks a response (as an extension) after which its HTTP/1 connection
/// reads nothing more: the client is too slow, or sends more than it may.
/// Any other answer sent before its request's body was read lets the
/// body be read and discarded first (see `body.rs`), so a client still
/// sending it does not have the connection reset under it and lose the
/// answer.
#[derive(Clone, Copy, Debug)]
pub struct StopReading;

/// One request in flight on a connection.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's byte stream, closed (with `TimedOut`) when it misses a
/// deadline while the HTTP layer waits on it.
pub struct Guarded<I> {
    inner: I,
    activity: Arc<Activity>,
    deadlines: Deadlines,
    timer: Pin<Box<Sleep>>,
}

impl<I> Guarded<I> {
    /// Wraps a freshly accepted stream.
    pub fn new(inner: I, deadlines: Deadlines) -> Guarded<I> {
        let activity = Activity::new();
        let timer = Box::pin(tokio::time::sleep_until(activity.opened + deadlines.header));
        Guarded {
            inner,
            activity,
            deadlines,
            timer,
        }
    }

    /// The activity handle the request layer reports to.
    pub fn activity(&self) -> Arc<Activity> {
        self.activity.clone()
    }

    /// When the connection is due to close, or `None` while a request is
    /// in flight.
    fn deadline(&self) -> Option<Instant> {
        let a = &self.activity;
        if a.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        if !a.started.load(Ordering::Relaxed) {
            return Some(a.opened + self.deadlines.header);
        }
        let last = Duration::from_millis(a.last_ms.load(Ordering::Relaxed));
        Some(a.opened + last + self.deadlines.idle)
    }

    /// Called when the inner stream is not ready: fails once the deadline
    /// has passed, and otherwise makes sure the task wakes to look again.
    fn waiting(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        loop {
            let now = Instant::now();
            let wake_at = match self.deadline() {
                Some(d) if d <= now => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connection closed: no request within the header or idle timeout",
                    ))
                }
                Some(d) => d,
                // Look again later: the request may end meanwhile.
                None => now + self.deadlines.idle,
            };
            if self.timer.deadline() != wake_at {
                self.timer.as_mut().reset(wake_at);
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return Ok(());
            }
        }
    }

    /// What a stream that is not ready answers: still pending, or the
    /// deadline's error.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.waiting(cx) {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    /// Accounts for a write's outcome.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(Ok(n)) => {
                self.moved(n);
                Poll::Ready(Ok(n))
            }
            Poll::Pending => self.stalled(cx),
            other => other,
        }
    }

    fn moved(&self, n: usize) {
        if n > 0 && self.activity.started.load(Ordering::Relaxed) {
            self.activity.touch();
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Guarded<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.activity.condemned.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.moved(buf.filled().len() - before);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => this.stalled(cx),
            other => other,
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Guarded<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_write(cx, data);
        this.wrote(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
