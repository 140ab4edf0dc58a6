//! The disk engine's only `unsafe` code: thin wrappers over system calls
//! that std does not expose, aligned buffers for direct I/O, and the
//! io_uring ring each disk's shard I/O goes through.
#![allow(unsafe_code)]

pub(crate) mod buf;
pub(crate) mod ring;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Free bytes of the filesystem holding `root`, or `Full` when `len` more
/// bytes of object data (shard blocks, pieces) would eat into `reserve`,
/// the space kept for metadata. Checked before every data write, since
/// other disks may share the filesystem.
pub(crate) fn room_for_data(
    root: &Path,
    reserve: u64,
    len: u64,
) -> Result<u64, crate::error::DiskError> {
    let (_, free) = fs_space(root)?;
    if free < reserve + len {
        return Err(crate::error::DiskError::Full);
    }
    Ok(free)
}

/// Total and free bytes of the filesystem holding `path`.
pub(crate) fn fs_space(path: &Path) -> io::Result<(u64, u64)> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a valid NUL-terminated path and `st` points to writable
    // memory of the right size; statvfs only writes into it.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it initialised the struct.
    let st = unsafe { st.assume_init() };
    // The field types differ between targets; widen them all to u64.
    #[allow(clippy::unnecessary_cast)]
    let (frsize, blocks, avail) = (st.f_frsize as u64, st.f_blocks as u64, st.f_bavail as u64);
    Ok((blocks * frsize, avail * frsize))
}

/// Whether this process may move a thread to SCHED_IDLE and back to
/// SCHED_OTHER (root, CAP_SYS_NICE or RLIMIT_NICE). Probed once, on a
/// scratch thread; without it bulk work runs at normal priority, since a
/// pool thread stuck at idle priority would slow whatever runs on it next.
fn bulk_priority_available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        std::thread::spawn(|| set_idle(true) && set_idle(false))
            .join()
            .unwrap_or(false)
    })
}

/// Runs `f` on the calling thread as bulk work and restores the thread's
/// scheduling afterwards (even if `f` panics). Bulk work (hashing, erasure
/// coding of large bodies) runs under SCHED_IDLE: it gets every cycle
/// request handling does not want, but never delays a small request — a
/// nice value is not enough, since 16 uploads' hashing threads at nice 10
/// still outweigh one request thread. For work on the blocking pool,
/// whose threads are reused by other tasks.
pub fn at_bulk_priority<T>(f: impl FnOnce() -> T) -> T {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = set_idle(false);
        }
    }
    if !bulk_priority_available() || !set_idle(true) {
        return f();
    }
    let _restore = Restore;
    f()
}

/// Makes the calling thread a bulk-work thread for good (SCHED_IDLE where
/// the system allows it): for threads that only ever run bulk work, such as
/// the runtime that receives upload bodies.
pub fn become_bulk_thread() {
    if bulk_priority_available() {
        let _ = set_idle(true);
    }
}

/// Moves the calling thread to SCHED_IDLE or back to SCHED_OTHER; false if
/// refused.
fn set_idle(idle: bool) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: plain system call; pid 0 names the calling thread and
    // `param` lives across the call.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

/// Allocates `len` bytes of `file` at `offset` and extends its size to
/// cover them (`fallocate` mode 0). Direct writes into an allocated range
/// below the file size do not extend the file, so the filesystem can take
/// them without its exclusive inode lock and io_uring need not hand them to
/// a worker thread.
pub(crate) fn allocate(file: &std::fs::File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain system call on a descriptor `file` keeps open.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            0,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
