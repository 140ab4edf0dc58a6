//! The cold pool as a tier. A version whose bytes live in the cold pool
//! keeps its version record in the hot pool (so listings, versioning and
//! key locks stay in one place) and refers by id ([`TierRef`]) to one tier
//! object: an ordinary object of one of the cold pool's erasure sets (the
//! one its id hashes to, see `pools.rs`), under an internal namespace,
//! with its own record, shards or pieces, repair and packing, and its
//! owner's bucket and key in its metadata.
//!
//! A tier object is committed before the version that refers to it and
//! released (deleted by the tier release worker) after the last version referring
//! to it is replaced or deleted, so a reader never finds a version without
//! its bytes; a crash between the two steps leaves only an unreferenced
//! tier object.

use std::ops::Range;
use std::sync::{Arc, Weak};

use background_work::{CancellationToken, WorkError, Worker, WorkerState, WorkerStatus};
use disk_engine::VersionId;
use erasure_set::record::{ObjectMeta, ObjectRecord, PartRef, TierRef};
use erasure_set::{BodyStream, Carried, ErasureLayout, ErasureSet, KeyState, StagedData};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::backend::TierBackend;
use crate::error::Error;
use crate::model::{OWNER_BUCKET, OWNER_KEY, TIER_NS};
use crate::store::Store;
use crate::stream::ObjectStream;

impl Store {
    /// Adds (or with `None` removes) a tier outside the deployment under
    /// `name`, which becomes a storage class lifecycle rules can name.
    /// Versions already in a removed tier cannot be read until it is added
    /// again.
    pub fn set_remote_tier(&self, name: &str, backend: Option<Arc<dyn TierBackend>>) {
        self.pools.set_remote(name, backend);
    }

    /// The names of the tiers outside the deployment.
    pub fn remote_tiers(&self) -> Vec<String> {
        self.pools.remotes().into_iter().map(|(n, _)| n).collect()
    }

    /// Deletes a tier object no version refers to any more.
    async fn delete_tiered(&self, tier: &TierRef) -> Result<(), Error> {
        if let Some(set) = self.pools.tier_set(&tier.tier, tier.id) {
            return delete_tier_object(&set, tier.id).await;
        }
        self.pools.remote(&tier.tier)?.delete(tier.id).await
    }

    /// Streams `body` into a new tier object of the pool named `pool`;
    /// nothing refers to it until it is committed with a version.
    pub(crate) async fn write_tier_data(
        &self,
        pool: &str,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        let id = self.pools.new_tier_id(pool);
        let set = self.pools.require_tier_set(pool, id)?;
        let layout = set.layout_for(TIER_NS, &id.to_string());
        let mut staged = set.write_data(layout, body, size_hint, true).await?;
        staged.tier = Some(TierRef {
            tier: pool.into(),
            id,
        });
        Ok(staged)
    }

    /// Commits staged tier data as its tier object, owned by
    /// `bucket/key`. The version referring to it is committed next.
    pub(crate) async fn commit_tier_object(
        &self,
        mut staged: StagedData,
        bucket: &str,
        key: &str,
        meta: &ObjectMeta,
    ) -> Result<TierRef, Error> {
        let tier = staged
            .tier
            .clone()
            .ok_or_else(|| Error::InvalidArgument("data was not written to a tier".into()))?;
        let pool = self.pools.require_tier_set(&tier.tier, tier.id)?;
        let part = PartRef::single(staged.size, staged.data_id, staged.pieces.is_some(), meta);
        let record = tier_record(staged.layout, vec![part], false, bucket, key, meta);
        let disks = staged.disks.clone();
        let pieces = staged.pieces.take();
        let unstage = staged.hand_over();
        let carried = Carried {
            pieces: pieces.as_ref(),
            unstage: &unstage,
            completes: None,
        };
        if let Err(e) = self
            .commit_tier_record(&tier, record, &disks, carried)
            .await
        {
            for id in &unstage {
                pool.unstage(*id).await;
            }
            return Err(e);
        }
        Ok(tier)
    }

    /// Commits the parts of finished multipart upload `upload_id` (already
    /// in the pool named `pool`, in the set its id hashes to) as a new tier
    /// object of that set owned by `bucket/key`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn commit_tier_parts(
        &self,
        pool: &str,
        upload_id: Uuid,
        layout: ErasureLayout,
        parts: Vec<PartRef>,
        bucket: &str,
        key: &str,
        meta: &ObjectMeta,
    ) -> Result<TierRef, Error> {
        let tier = TierRef {
            tier: pool.into(),
            id: self.pools.tier_id_like(pool, upload_id),
        };
        let record = tier_record(layout, parts, true, bucket, key, meta);
        let all = vec![true; self.pools.require_tier_set(pool, tier.id)?.width()];
        self.commit_tier_record(&tier, record, &all, Carried::default())
            .await?;
        Ok(tier)
    }

    async fn commit_tier_record(
        &self,
        tier: &TierRef,
        record: ObjectRecord,
        targets: &[bool],
        carried: Carried<'_>,
    ) -> Result<(), Error> {
        let pool = self.pools.require_tier_set(&tier.tier, tier.id)?;
        let name = tier.id.to_string();
        let _guard = pool.locks().lock(TIER_NS, &name).await?;
        // A tier object's id is new: there is no earlier write of it.
        let fresh = KeyState::empty();
        pool.commit_record(
            TIER_NS,
            &name,
            record,
            targets,
            false,
            carried,
            Some(&fresh),
        )
        .await?;
        Ok(())
    }

    /// Removes a tier object's record but not its data (the parts of
    /// an upload whose completion failed stay with the upload).
    pub(crate) async fn forget_tier_object(&self, tier: &TierRef) {
        let Some(pool) = self.pools.tier_set(&tier.tier, tier.id) else {
            return;
        };
        pool.forget(TIER_NS, &tier.id.to_string()).await;
    }

    /// The shard ids a tier object's parts use (none for remote tiers
    /// or when it cannot be read).
    pub(crate) async fn tier_object_data(&self, tier: &TierRef) -> Vec<Uuid> {
        let Some(pool) = self.pools.tier_set(&tier.tier, tier.id) else {
            return Vec::new();
        };
        match pool.resolve_key(TIER_NS, &tier.id.to_string()).await {
            Ok(state) => state.data_ids(None),
            Err(_) => Vec::new(),
        }
    }

    /// Streams bytes `range` of a version kept in a tier.
    pub(crate) fn read_tiered(&self, tier: TierRef, range: Range<u64>) -> ObjectStream {
        // A tier that is not configured (any more) makes the version
        // unavailable, not the request invalid.
        let missing = |e: Error| Error::TierUnavailable(e.to_string());
        let Some(pool) = self.pools.tier_set(&tier.tier, tier.id) else {
            let backend = self.pools.remote(&tier.tier).map_err(missing);
            return ObjectStream::deferred(async move { backend?.read(tier.id, range).await });
        };
        ObjectStream::deferred(async move {
            let name = tier.id.to_string();
            let state = pool.resolve_key(TIER_NS, &name).await?;
            let object = state
                .latest()
                .ok_or_else(|| Error::Corrupt(format!("tier object {name} is missing")))?
                .object
                .clone();
            Ok(pool.read_object(TIER_NS, &name, object, range).into())
        })
    }
}

/// The record of a tier object holding `parts`, owned by `bucket/key`.
fn tier_record(
    layout: ErasureLayout,
    parts: Vec<PartRef>,
    multipart: bool,
    bucket: &str,
    key: &str,
    meta: &ObjectMeta,
) -> ObjectRecord {
    let owner = ObjectMeta {
        etag: meta.etag.clone(),
        user: vec![
            (OWNER_BUCKET.into(), bucket.into()),
            (OWNER_KEY.into(), key.into()),
        ],
        ..ObjectMeta::default()
    };
    ObjectRecord::new_version(layout, parts, multipart, owner, Vec::new(), None)
}

/// Deletes one tier object from the set of its pool that holds it (and
/// frees its data).
async fn delete_tier_object(pool: &ErasureSet, id: Uuid) -> Result<(), Error> {
    let name = id.to_string();
    let _guard = pool.locks().lock(TIER_NS, &name).await?;
    Ok(pool.delete_version(TIER_NS, &name, VersionId::NULL).await?)
}

/// The worker deleting the tier objects the store's versions release.
pub(crate) struct TierReleaseWorker {
    pub(crate) store: Weak<Store>,
    pub(crate) rx: mpsc::UnboundedReceiver<TierRef>,
    pub(crate) next: Option<TierRef>,
}

#[async_trait::async_trait]
impl Worker for TierReleaseWorker {
    fn name(&self) -> String {
        "tier release".into()
    }

    fn status(&self) -> WorkerStatus {
        WorkerStatus {
            queue: Some(self.rx.len() as u64),
            detail: None,
        }
    }

    /// The deletion under way is finished at shutdown.
    fn shutdown_grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        let Some(store) = self.store.upgrade() else {
            return Ok(WorkerState::Done);
        };
        if let Some(tier) = self.next.take() {
            if let Err(e) = store.delete_tiered(&tier).await {
                return Err(format!(
                    "could not delete the released tier object {} of tier {}: {e}",
                    tier.id, tier.tier
                )
                .into());
            }
        }
        self.next = self.rx.try_recv().ok();
        Ok(match self.next {
            Some(_) => WorkerState::Busy,
            None => WorkerState::Idle,
        })
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        match self.rx.recv().await {
            Some(t) => {
                self.next = Some(t);
                WorkerState::Busy
            }
            None => WorkerState::Done,
        }
    }
}
