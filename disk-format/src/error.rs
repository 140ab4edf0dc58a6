//! The one error type of the disk engine.

use std::io;

/// What went wrong on one disk. Variants say what happened, so the layers
/// above can decide (retry elsewhere, reconstruct, report "disk full").
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The disk cannot be reached or was never found; nothing was done.
    #[error("disk offline: {0}")]
    Offline(String),
    /// The shard, record or upload does not exist on this disk.
    #[error("not found")]
    NotFound,
    /// Stored bytes failed their checksum or structure check.
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// Which structure (shard block, record, trailer, ...).
        what: &'static str,
        /// What exactly did not match.
        detail: String,
    },
    /// The filesystem is full (ENOSPC / EDQUOT).
    #[error("disk full")]
    Full,
    /// The caller asked for something this disk cannot do as asked.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The directory belongs to another deployment or contradicts its format.
    #[error("format mismatch: {0}")]
    Format(String),
    /// Any other I/O failure.
    #[error("i/o error: {0}")]
    Io(io::Error),
    /// The metadata store reported an error.
    #[error("metadata store: {0}")]
    Meta(String),
}

impl From<io::Error> for DiskError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => DiskError::Full,
            _ if e.kind() == io::ErrorKind::NotFound => DiskError::NotFound,
            _ => DiskError::Io(e),
        }
    }
}

impl DiskError {
    /// Builds a [`DiskError::Corrupt`].
    pub fn corrupt(what: &'static str, detail: impl Into<String>) -> Self {
        DiskError::Corrupt {
            what,
            detail: detail.into(),
        }
    }

    /// True when the error means the disk itself is unusable (as opposed to
    /// one missing or damaged item on a working disk).
    pub fn is_disk_failure(&self) -> bool {
        matches!(
            self,
            DiskError::Offline(_) | DiskError::Io(_) | DiskError::Meta(_)
        )
    }
}
