//! Tiers outside the deployment (other S3 endpoints), as the pools see
//! them: where a version's bytes can go when they leave the deployment's
//! own pools. The binary wires in the implementation (`remote-tier`).

use std::ops::Range;

use erasure_set::BodyStream;
use uuid::Uuid;

use crate::error::Error;
use crate::stream::ObjectStream;

/// A place for tier objects outside the deployment: another S3 endpoint.
/// Objects are named by the tier object's id.
#[async_trait::async_trait]
pub trait TierBackend: Send + Sync {
    /// Stores exactly `size` bytes of `body` as tier object `id`, owned
    /// by `bucket/key` (kept with it, for the sweep and for people).
    async fn put(
        &self,
        id: Uuid,
        bucket: &str,
        key: &str,
        body: BodyStream,
        size: u64,
    ) -> Result<(), Error>;
    /// Streams bytes `range` of tier object `id`.
    async fn read(&self, id: Uuid, range: Range<u64>) -> Result<ObjectStream, Error>;
    /// Deletes tier object `id` (a missing one is not an error).
    async fn delete(&self, id: Uuid) -> Result<(), Error>;
    /// Every tier object last written before `before_ns` (ns since the
    /// epoch), with its owner's bucket and key: what the sweep checks.
    async fn stale(&self, before_ns: u64) -> Result<Vec<(Uuid, String, String)>, Error>;
}
