//! Buffers for direct I/O: 4 KiB-aligned heap buffers, and a bounded pool of
//! equal buffers carved from one region that a ring can register with the
//! kernel (so writes from it skip the per-I/O page pinning).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Semaphore;

/// Alignment of every buffer: the logical block size O_DIRECT requires.
pub const IO_ALIGN: usize = 4096;

/// Rounds `n` up to a multiple of [`IO_ALIGN`].
pub fn align_up(n: usize) -> usize {
    n.div_ceil(IO_ALIGN) * IO_ALIGN
}

/// A zero-initialised, [`IO_ALIGN`]-aligned heap buffer with a length
/// (`len ≤ capacity`). Handed to `Bytes::from_owner` without copying.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>); the raw
// pointer is never shared outside the borrow rules of its methods.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only give out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of at least `cap` bytes (rounded up to the alignment),
    /// with length `cap`.
    pub fn zeroed(cap: usize) -> AlignedBuf {
        let rounded = align_up(cap.max(1));
        let layout = Layout::from_size_align(rounded, IO_ALIGN).expect("valid layout");
        // SAFETY: the layout has non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf {
            ptr,
            cap: rounded,
            len: cap,
        }
    }

    /// Allocated bytes (a multiple of [`IO_ALIGN`]).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The whole allocation, for I/O.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The whole allocation, writable.
    pub fn full_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for `cap` bytes, zero-initialised at
        // allocation, and borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr is valid and initialised for `cap ≥ len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.cap, IO_ALIGN).expect("valid layout");
        // SAFETY: allocated in `zeroed` with this very layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

struct PoolInner {
    /// Keeps the memory alive; buffers are addressed from `base`.
    _region: AlignedBuf,
    base: usize,
    count: usize,
    buf_size: usize,
    free: Mutex<Vec<u16>>,
    permits: Semaphore,
}

/// A bounded pool of `count` buffers of `buf_size` bytes. [`BufPool::acquire`]
/// waits (fairly, first come first served) while all are in use, which is
/// what bounds the write memory of a disk whatever the number of uploads.
#[derive(Clone)]
pub struct BufPool {
    inner: Arc<PoolInner>,
}

impl BufPool {
    /// Allocates the pool's region.
    pub fn new(count: u16, buf_size: usize) -> BufPool {
        assert!(buf_size.is_multiple_of(IO_ALIGN) && count > 0);
        let mut region = AlignedBuf::zeroed(count as usize * buf_size);
        let base = region.as_mut_ptr() as usize;
        BufPool {
            inner: Arc::new(PoolInner {
                _region: region,
                base,
                count: count as usize,
                buf_size,
                free: Mutex::new((0..count).rev().collect()),
                permits: Semaphore::new(count as usize),
            }),
        }
    }

    /// Size of each buffer.
    pub fn buf_size(&self) -> usize {
        self.inner.buf_size
    }

    /// `iovec`s of every buffer, in index order, for registration.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.inner.count)
            .map(|i| libc::iovec {
                iov_base: (self.inner.base + i * self.inner.buf_size) as *mut libc::c_void,
                iov_len: self.inner.buf_size,
            })
            .collect()
    }

    /// Takes a free buffer, waiting until one is returned if none is.
    pub async fn acquire(&self) -> PoolBuf {
        let permit = self
            .inner
            .permits
            .acquire()
            .await
            .expect("pool semaphore is never closed");
        permit.forget();
        let index = self
            .inner
            .free
            .lock()
            .pop()
            .expect("a permit means a free buffer");
        PoolBuf {
            pool: self.inner.clone(),
            index,
        }
    }
}

/// One buffer of a [`BufPool`], returned to it on drop.
pub struct PoolBuf {
    pool: Arc<PoolInner>,
    index: u16,
}

impl PoolBuf {
    /// Index of the buffer in its pool (its registered-buffer index).
    pub fn index(&self) -> u16 {
        self.index
    }

    /// Copies `data` in and zero-fills up to the next alignment boundary;
    /// returns the padded length to write. Panics if it does not fit.
    pub fn fill_padded(&mut self, data: &[u8]) -> usize {
        let padded = align_up(data.len());
        assert!(
            padded <= self.pool.buf_size,
            "data larger than a pool buffer"
        );
        let dst = self.full_mut();
        dst[..data.len()].copy_from_slice(data);
        dst[data.len()..padded].fill(0);
        padded
    }

    /// Start of the buffer, for I/O.
    pub fn as_ptr(&self) -> *const u8 {
        (self.pool.base + self.index as usize * self.pool.buf_size) as *const u8
    }

    fn full_mut(&mut self) -> &mut [u8] {
        // SAFETY: buffer `index` lies inside the pool's region, which lives
        // as long as `pool`; the index is held by this PoolBuf alone until it
        // is dropped, so no other reference to these bytes exists.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr() as *mut u8, self.pool.buf_size) }
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        self.pool.free.lock().push(self.index);
        self.pool.permits.add_permits(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned_and_zeroed() {
        let mut b = AlignedBuf::zeroed(5000);
        assert_eq!(b.capacity(), 8192);
        assert_eq!(b.as_mut_ptr() as usize % IO_ALIGN, 0);
        assert!(b.as_ref().iter().all(|&x| x == 0));
        assert_eq!(b.as_ref().len(), 5000);
        b.full_mut()[0] = 7;
        assert_eq!(b.as_ref()[0], 7);
    }

    #[tokio::test]
    async fn pool_is_bounded_and_buffers_come_back() {
        let pool = BufPool::new(2, IO_ALIGN);
        let a = pool.acquire().await;
        let mut b = pool.acquire().await;
        assert_ne!(a.index(), b.index());
        assert_eq!(b.fill_padded(&[1, 2, 3]), IO_ALIGN);
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(50), pool.acquire()).await;
        assert!(third.is_err(), "a third buffer must wait");
        drop(a);
        let c = pool.acquire().await;
        assert_eq!(c.as_ptr() as usize % IO_ALIGN, 0);
        assert_eq!(pool.iovecs().len(), 2);
    }
}
