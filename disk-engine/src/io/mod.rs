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
