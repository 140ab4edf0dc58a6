//! One io_uring per disk, on a dedicated thread fed by a bounded queue.
//!
//! ```text
//! async callers --(bounded channel + eventfd wake)--> ring thread --SQEs--> kernel
//!       ^                                                  |
//!       +------------- oneshot reply (buffer, result) <----+ CQEs
//! ```
//! A request owns its file handle and its buffer until the kernel has
//! completed it: both travel into the ring thread and come back in the
//! reply, so a caller that gives up (a cancelled future) can never free
//! memory the kernel is still writing. Up to [`RING_DEPTH`] requests are in
//! flight per disk; further requests wait in the queue.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use io_uring::{opcode, types, IoUring};
use tokio::sync::{mpsc, oneshot};

use super::buf::{AlignedBuf, BufPool, PoolBuf};

/// Requests in flight per disk.
pub const RING_DEPTH: usize = 32;
/// Requests queued for the ring thread beyond those in flight.
const RING_QUEUE: usize = 256;
/// Registered write buffers per disk, and their size: 16 MiB per disk.
const POOL_BUFFERS: u16 = 64;
/// Size of one pooled write buffer.
pub const POOL_BUF_SIZE: usize = 256 << 10;
/// `user_data` of the eventfd read that wakes the ring thread.
const WAKE_TOKEN: u64 = u64::MAX;

/// Memory an I/O reads into or writes from.
pub enum IoBuf {
    /// A buffer of the disk's registered pool.
    Pool(PoolBuf),
    /// A heap buffer (reads, and writes larger than a pool buffer).
    Heap(AlignedBuf),
}

enum Op {
    Read,
    Write,
}

struct Request {
    op: Op,
    file: Arc<File>,
    buf: IoBuf,
    /// Where in `buf` the transfer starts (heap buffers only).
    at: usize,
    /// Bytes to transfer.
    len: u32,
    offset: u64,
    reply: oneshot::Sender<(Option<IoBuf>, io::Result<u32>)>,
}

/// Handle to a disk's ring thread.
pub struct Ring {
    tx: Option<mpsc::Sender<Request>>,
    wake: Arc<OwnedFd>,
    pool: BufPool,
}

fn eventfd() -> io::Result<OwnedFd> {
    // Blocking mode: io_uring answers a read of a non-blocking descriptor
    // with EAGAIN instead of waiting. Writes never block in practice (the
    // counter would have to reach 2^64 - 1).
    // SAFETY: plain system call; a non-negative result is a new descriptor
    // that we own.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a freshly created descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn signal(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd. Any failure
    // leaves a wake-up pending or the ring gone, so the result is ignored.
    unsafe {
        libc::write(
            fd.as_raw_fd(),
            (&one as *const u64).cast::<libc::c_void>(),
            8,
        )
    };
}

impl Ring {
    /// Sets up a ring and its thread. Fails where io_uring is unavailable
    /// (old kernel, or forbidden by a sandbox); the caller then falls back
    /// to blocking I/O.
    pub fn new(label: &str) -> io::Result<Ring> {
        let ring = IoUring::new((RING_DEPTH * 2) as u32)?;
        let pool = BufPool::new(POOL_BUFFERS, POOL_BUF_SIZE);
        // SAFETY: the iovecs describe the pool's region, which the pool keeps
        // alive; the ring thread holds a pool handle for as long as the ring
        // exists, so the registered memory outlives its registration.
        let registered = unsafe { ring.submitter().register_buffers(&pool.iovecs()) };
        if let Err(e) = &registered {
            tracing::info!(disk = label, error = %e, "io_uring buffer registration refused; writes use unregistered buffers");
        }
        let wake = Arc::new(eventfd()?);
        let (tx, rx) = mpsc::channel(RING_QUEUE);
        let thread_wake = wake.clone();
        let thread_pool = pool.clone();
        std::thread::Builder::new()
            .name(format!("ring {label}"))
            .spawn(move || run(ring, rx, thread_wake, registered.is_ok(), thread_pool))?;
        Ok(Ring {
            tx: Some(tx),
            wake,
            pool,
        })
    }

    /// The disk's write-buffer pool.
    pub fn pool(&self) -> &BufPool {
        &self.pool
    }

    async fn submit(
        &self,
        op: Op,
        file: Arc<File>,
        buf: IoBuf,
        at: usize,
        len: u32,
        offset: u64,
    ) -> oneshot::Receiver<(Option<IoBuf>, io::Result<u32>)> {
        let (reply, rx) = oneshot::channel();
        if let IoBuf::Heap(b) = &buf {
            assert!(
                at + len as usize <= b.capacity(),
                "transfer past the buffer"
            );
        }
        let req = Request {
            op,
            file,
            buf,
            at,
            len,
            offset,
            reply,
        };
        let tx = self.tx.as_ref().expect("sender lives until drop");
        // A send error means the ring thread is gone; the dropped reply
        // sender then reports it to the receiver below.
        let _ = tx.send(req).await;
        signal(&self.wake);
        rx
    }

    /// Starts writing the first `len` bytes of `buf` at `offset`; the
    /// returned future gives the buffer back with the bytes written.
    pub async fn start_write(&self, file: Arc<File>, buf: IoBuf, len: u32, offset: u64) -> Pending {
        Pending(self.submit(Op::Write, file, buf, 0, len, offset).await)
    }

    /// Reads up to `len` bytes at file `offset` into `buf` at `at`.
    pub async fn read(
        &self,
        file: Arc<File>,
        buf: AlignedBuf,
        at: usize,
        len: u32,
        offset: u64,
    ) -> (AlignedBuf, io::Result<u32>) {
        match Pending(
            self.submit(Op::Read, file, IoBuf::Heap(buf), at, len, offset)
                .await,
        )
        .wait()
        .await
        {
            (Some(IoBuf::Heap(b)), r) => (b, r),
            _ => (
                AlignedBuf::zeroed(0),
                Err(io::Error::other("io ring stopped")),
            ),
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Closing the queue and waking the thread makes it finish what is in
        // flight and exit.
        self.tx = None;
        signal(&self.wake);
    }
}

/// An I/O submitted to a ring.
pub struct Pending(oneshot::Receiver<(Option<IoBuf>, io::Result<u32>)>);

impl Pending {
    /// Waits for the I/O; gives back a heap buffer (pool buffers go back
    /// to their pool the moment the I/O completes) and the bytes
    /// transferred.
    pub async fn wait(self) -> (Option<IoBuf>, io::Result<u32>) {
        match self.0.await {
            Ok(r) => r,
            Err(_) => (None, Err(io::Error::other("io ring stopped"))),
        }
    }
}

/// What goes back to the submitter: heap buffers return with the result;
/// pool buffers are released here, at completion, and never wait in a
/// reply for their writer to collect them. (Otherwise writers holding
/// completed buffers while waiting for a free one could starve the pool.)
fn give_back(buf: IoBuf) -> Option<IoBuf> {
    match buf {
        IoBuf::Pool(_) => None,
        heap => Some(heap),
    }
}

fn entry(req: &mut Request, registered: bool) -> io_uring::squeue::Entry {
    let fd = types::Fd(req.file.as_raw_fd());
    match (&req.op, &mut req.buf) {
        (Op::Write, IoBuf::Pool(b)) if registered => {
            opcode::WriteFixed::new(fd, b.as_ptr(), req.len, b.index())
                .offset(req.offset)
                .build()
        }
        (Op::Write, IoBuf::Pool(b)) => opcode::Write::new(fd, b.as_ptr(), req.len)
            .offset(req.offset)
            .build(),
        // `at + len` lies within the buffer (checked in `submit`).
        (Op::Write, IoBuf::Heap(b)) => {
            opcode::Write::new(fd, b.as_mut_ptr().wrapping_add(req.at), req.len)
                .offset(req.offset)
                .build()
        }
        (Op::Read, IoBuf::Heap(b)) => {
            opcode::Read::new(fd, b.as_mut_ptr().wrapping_add(req.at), req.len)
                .offset(req.offset)
                .build()
        }
        (Op::Read, IoBuf::Pool(b)) => opcode::Read::new(fd, b.as_ptr() as *mut u8, req.len)
            .offset(req.offset)
            .build(),
    }
}

/// The ring thread: moves queued requests into the ring while fewer than
/// [`RING_DEPTH`] are in flight, waits for completions, replies.
fn run(
    mut ring: IoUring,
    mut rx: mpsc::Receiver<Request>,
    wake: Arc<OwnedFd>,
    registered: bool,
    _pool: BufPool,
) {
    // The kernel may write into this 8-byte buffer until the ring is torn
    // down, which completes asynchronously: leak it rather than free it.
    let wake_buf: &'static mut [u8; 8] = Box::leak(Box::new([0u8; 8]));
    let wake_ptr = wake_buf.as_mut_ptr();
    let arm_wake = |ring: &mut IoUring| {
        let e = opcode::Read::new(types::Fd(wake.as_raw_fd()), wake_ptr, 8)
            .build()
            .user_data(WAKE_TOKEN);
        // SAFETY: the buffer is leaked (lives forever) and the eventfd is
        // kept open by `wake` for the life of this thread.
        unsafe { ring.submission().push(&e) }.expect("room for the wake read");
    };
    arm_wake(&mut ring);

    let mut slots: Vec<Option<Request>> = (0..RING_DEPTH).map(|_| None).collect();
    let mut free: Vec<usize> = (0..RING_DEPTH).rev().collect();
    let mut closed = false;
    loop {
        while !closed && !free.is_empty() {
            match rx.try_recv() {
                Ok(mut req) => {
                    let slot = free.pop().expect("checked non-empty");
                    let e = entry(&mut req, registered).user_data(slot as u64);
                    slots[slot] = Some(req);
                    // SAFETY: the request (its file and buffer) stays in
                    // `slots` until its completion is reaped below, so the
                    // memory and descriptor outlive the kernel's use. The
                    // submission queue has room: it holds 2 × RING_DEPTH
                    // and at most RING_DEPTH + 1 entries are ever pending.
                    unsafe { ring.submission().push(&e) }.expect("room in the submission queue");
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => closed = true,
            }
        }
        if closed && free.len() == RING_DEPTH {
            return;
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => {
                tracing::error!(error = %e, "io_uring submit failed; failing in-flight requests");
                for slot in slots.iter_mut() {
                    if let Some(req) = slot.take() {
                        let _ = req
                            .reply
                            .send((give_back(req.buf), Err(io::Error::other(e.to_string()))));
                    }
                }
                return;
            }
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (token, result) in done {
            if token == WAKE_TOKEN {
                arm_wake(&mut ring);
                continue;
            }
            let slot = token as usize;
            let req = slots[slot].take().expect("completion of a pending request");
            free.push(slot);
            let r = if result < 0 {
                Err(io::Error::from_raw_os_error(-result))
            } else {
                Ok(result as u32)
            };
            let _ = req.reply.send((give_back(req.buf), r));
        }
    }
}
