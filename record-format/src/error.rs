//! The set engine's error type: what went wrong on one erasure set, in
//! storage terms. It names no bucket, key or S3 code; placement turns it
//! into its own error, and the gateway alone maps that to S3.

use disk_format::DiskError;

/// Error from a request body stream, passed through untouched so the caller
/// can recover its own error type.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// What went wrong on an erasure set.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Fewer disks than the write quorum accepted the write.
    #[error("write quorum lost: {got} of {needed} disks")]
    WriteQuorum {
        /// Disks needed.
        needed: usize,
        /// Disks that succeeded.
        got: usize,
    },
    /// Fewer disks than the read quorum answered or agreed, or fewer than k
    /// good shards were found: the data cannot be returned correctly.
    #[error("read quorum lost: {got} of {needed}")]
    ReadQuorum {
        /// Disks or shards needed.
        needed: usize,
        /// Disks or shards available.
        got: usize,
    },
    /// The set is offline: too few of its disks hold its format (the
    /// message names the set and its missing disks).
    #[error("{0}")]
    SetOffline(String),
    /// Disks are too full to take the write.
    #[error("storage full")]
    DiskFull,
    /// The body being written failed (client error, bad signature,
    /// timeout...).
    #[error("request body: {0}")]
    Body(BodyError),
    /// A caller passed something invalid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A stored structure could not be decoded.
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    /// Opening or formatting the disks failed; the message says why.
    #[error("{0}")]
    Setup(String),
    /// A disk error that fits none of the above.
    #[error("disk: {0}")]
    Disk(#[from] DiskError),
    /// A key's lock stayed with another writer too long.
    #[error("{0}")]
    LockTimeout(String),
    /// A bug or an unexpected state.
    #[error("internal: {0}")]
    Internal(String),
}
