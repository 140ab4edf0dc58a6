//! The placement layer's error type. It says what went wrong in storage
//! terms; the gateway alone maps these to S3 error codes.

use disk_engine::DiskError;
use erasure_set::{BodyError, SetError};

/// What went wrong in the placement layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bucket does not exist.
    #[error("no such bucket: {bucket}")]
    NoSuchBucket {
        /// The bucket.
        bucket: String,
    },
    /// The bucket already exists.
    #[error("bucket already exists: {bucket}")]
    BucketExists {
        /// The bucket.
        bucket: String,
    },
    /// The bucket still holds objects.
    #[error("bucket is not empty: {bucket}")]
    BucketNotEmpty {
        /// The bucket.
        bucket: String,
    },
    /// No visible version of the key exists.
    #[error("no such key: {bucket}/{key}")]
    NoSuchKey {
        /// The key's bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// The requested version of the key does not exist.
    #[error("no such version")]
    NoSuchVersion,
    /// The version the operation addresses is a delete marker.
    #[error("the version is a delete marker")]
    IsDeleteMarker,
    /// A write's precondition on the current version does not hold.
    #[error("precondition failed")]
    PreconditionFailed,
    /// A write's precondition failed because another write to the key
    /// completed while this one was in progress.
    #[error("conflicting concurrent write")]
    ConditionalConflict,
    /// The multipart upload does not exist (never did, completed or aborted).
    #[error("no such upload")]
    NoSuchUpload,
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
    /// The key's erasure set is offline: too few of its disks hold its
    /// format (the message names the set and its missing disks).
    #[error("{0}")]
    SetOffline(String),
    /// Disks are too full to take the write.
    #[error("storage full")]
    DiskFull,
    /// The request body failed (client error, bad signature, timeout...).
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
    /// A tier outside the deployment did not answer as it should.
    #[error("{0}")]
    TierUnavailable(String),
    /// The object's lock stayed with another writer too long.
    #[error("{0}")]
    LockTimeout(String),
    /// A racing write placed the key in another pool than the one this
    /// write staged its data in; nothing was written, and the request can
    /// be sent again.
    #[error("{0}")]
    Moved(String),
    /// A bug or an unexpected state.
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    /// `NoSuchBucket` for `bucket`.
    pub fn no_such_bucket(bucket: &str) -> Error {
        Error::NoSuchBucket {
            bucket: bucket.to_string(),
        }
    }

    /// This error again, for each of many keys one failure stopped (the
    /// items of a DeleteObjects batch): the same kind where a client acts
    /// on it (quorum, an offline set, a lock timeout, a racing placement), else an internal
    /// error with its message.
    pub fn for_each(&self) -> Error {
        match self {
            Error::WriteQuorum { needed, got } => Error::WriteQuorum {
                needed: *needed,
                got: *got,
            },
            Error::ReadQuorum { needed, got } => Error::ReadQuorum {
                needed: *needed,
                got: *got,
            },
            Error::SetOffline(why) => Error::SetOffline(why.clone()),
            Error::LockTimeout(why) => Error::LockTimeout(why.clone()),
            Error::Moved(why) => Error::Moved(why.clone()),
            other => Error::Internal(other.to_string()),
        }
    }

    /// `NoSuchKey` for `bucket/key`.
    pub fn no_such_key(bucket: &str, key: &str) -> Error {
        Error::NoSuchKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
        }
    }
}

impl From<SetError> for Error {
    fn from(e: SetError) -> Error {
        match e {
            SetError::WriteQuorum { needed, got } => Error::WriteQuorum { needed, got },
            SetError::ReadQuorum { needed, got } => Error::ReadQuorum { needed, got },
            SetError::SetOffline(why) => Error::SetOffline(why),
            SetError::DiskFull => Error::DiskFull,
            SetError::Body(e) => Error::Body(e),
            SetError::InvalidArgument(why) => Error::InvalidArgument(why),
            SetError::Corrupt(why) => Error::Corrupt(why),
            SetError::Setup(why) => Error::Setup(why),
            SetError::Disk(e) => Error::Disk(e),
            SetError::LockTimeout(why) => Error::LockTimeout(why),
            SetError::Internal(why) => Error::Internal(why),
        }
    }
}
