//! The cold pool as a tier. A version whose bytes live in the cold pool
//! keeps its version record in the hot pool (so listings, versioning and
//! key locks stay in one place) and refers by id ([`TierRef`]) to one tier
//! object: an ordinary object of the cold pool's own erasure set, under an
//! internal namespace, with its own record, shards or pieces, repair and
//! packing, and its owner's bucket and key in its metadata.
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
use erasure_set::{BodyStream, Carried, ErasureLayout, KeyState, StagedData};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::error::Error;
use crate::model::{COLD_TIER, OWNER_BUCKET, OWNER_KEY, POOL_TIER_PREFIX, TIER_NS};
use crate::store::Store;
use crate::stream::ObjectStream;
use crate::transition::Destination;
use disk_engine::Tier;

impl Store {
    /// Makes `cold` this store's cold pool.
    pub fn attach_cold_pool(&self, cold: Arc<Store>) -> Result<(), Error> {
        self.cold
            .set(cold)
            .map_err(|_| Error::InvalidArgument("a cold pool is already attached".into()))
    }

    /// Adds `pool` (pool `index` of the deployment) as a further hot pool:
    /// new objects' bytes go to it by free space, as tier objects, while
    /// their version records stay here. Returns its tier name.
    pub fn attach_hot_pool(&self, index: u32, pool: Arc<Store>) -> String {
        let name = format!("{POOL_TIER_PREFIX}{index}");
        self.extra.write().push((name.clone(), pool));
        name
    }

    /// The hot pools added after this one, with their tier names.
    pub fn hot_pools(&self) -> Vec<(String, Arc<Store>)> {
        self.extra.read().clone()
    }

    /// Every pool tier objects can live in, with its tier name: the cold
    /// pool and the further hot pools.
    pub fn tier_pools(&self) -> Vec<(String, Arc<Store>)> {
        let mut out: Vec<(String, Arc<Store>)> = self
            .cold
            .get()
            .map(|c| (COLD_TIER.to_string(), c.clone()))
            .into_iter()
            .collect();
        out.extend(self.hot_pools());
        out
    }

    /// The pool of the deployment named `tier` in version records.
    pub(crate) fn tier_pool(&self, tier: &str) -> Option<Arc<Store>> {
        if tier == COLD_TIER {
            return self.cold.get().cloned();
        }
        self.extra
            .read()
            .iter()
            .find(|(n, _)| n == tier)
            .map(|(_, s)| s.clone())
    }

    pub(crate) fn require_pool(&self, tier: &str) -> Result<Arc<Store>, Error> {
        self.tier_pool(tier).ok_or_else(|| match tier {
            COLD_TIER => Error::InvalidArgument("this server has no cold pool".into()),
            other => Error::InvalidArgument(format!("this server has no pool {other:?}")),
        })
    }

    /// Adds (or with `None` removes) a tier outside the deployment under
    /// `name`, which becomes a storage class lifecycle rules can name.
    /// Versions already in a removed tier cannot be read until it is added
    /// again.
    pub fn set_remote_tier(&self, name: &str, backend: Option<Arc<dyn TierBackend>>) {
        let mut tiers = self.remote.write();
        match backend {
            Some(b) => tiers.insert(name.to_string(), b),
            None => tiers.remove(name),
        };
    }

    /// The names of the tiers outside the deployment.
    pub fn remote_tiers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.remote.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// Where a transition to storage class `class` goes: the remote tier
    /// of that name if one is configured, the cold pool otherwise.
    pub fn destination<'a>(&self, class: &'a str) -> Destination<'a> {
        match self.remote.read().contains_key(class) {
            true => Destination::Remote(class),
            false => Destination::Pool(Tier::Cold),
        }
    }

    /// Whether this server can store data at `to`.
    pub fn reaches(&self, to: Destination<'_>) -> bool {
        match to {
            Destination::Pool(Tier::Hot) => true,
            Destination::Pool(Tier::Cold) => self.cold.get().is_some(),
            Destination::Remote(name) => self.remote.read().contains_key(name),
        }
    }

    pub(crate) fn remote_tier(&self, name: &str) -> Result<Arc<dyn TierBackend>, Error> {
        self.remote
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument(format!("no tier named {name:?} is configured")))
    }

    /// Deletes a tier object no version refers to any more.
    async fn delete_tiered(&self, tier: &TierRef) -> Result<(), Error> {
        if let Some(pool) = self.tier_pool(&tier.tier) {
            return delete_tier_object(&pool, tier.id).await;
        }
        self.remote_tier(&tier.tier)?.delete(tier.id).await
    }

    /// The cold pool, if the store has one.
    pub fn cold_pool(&self) -> Option<&Arc<Store>> {
        self.cold.get()
    }

    /// Streams `body` into a new tier object of the pool named `pool`;
    /// nothing refers to it until it is committed with a version.
    pub(crate) async fn write_tier_data(
        &self,
        pool: &str,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        let store = self.require_pool(pool)?;
        let id = Uuid::now_v7();
        let layout = store.set.layout_for(TIER_NS, &id.to_string());
        let mut staged = store.set.write_data(layout, body, size_hint, true).await?;
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
        let pool = self.require_pool(&tier.tier)?;
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
                pool.set.unstage(*id).await;
            }
            return Err(e);
        }
        Ok(tier)
    }

    /// Commits the parts of a finished multipart upload (already in the
    /// pool named `pool`) as a new tier object owned by `bucket/key`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn commit_tier_parts(
        &self,
        pool: &str,
        layout: ErasureLayout,
        parts: Vec<PartRef>,
        bucket: &str,
        key: &str,
        meta: &ObjectMeta,
    ) -> Result<TierRef, Error> {
        let tier = TierRef {
            tier: pool.into(),
            id: Uuid::now_v7(),
        };
        let record = tier_record(layout, parts, true, bucket, key, meta);
        let all = vec![true; self.require_pool(pool)?.set.width()];
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
        let pool = self.require_pool(&tier.tier)?;
        let name = tier.id.to_string();
        let _guard = pool.set.locks().lock(TIER_NS, &name).await?;
        // A tier object's id is new: there is no earlier write of it.
        let fresh = KeyState::empty();
        pool.set
            .commit_record(
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
        let Some(pool) = self.tier_pool(&tier.tier) else {
            return;
        };
        pool.set.forget(TIER_NS, &tier.id.to_string()).await;
    }

    /// The shard ids a tier object's parts use (none for remote tiers
    /// or when it cannot be read).
    pub(crate) async fn tier_object_data(&self, tier: &TierRef) -> Vec<Uuid> {
        let Some(pool) = self.tier_pool(&tier.tier) else {
            return Vec::new();
        };
        match pool.set.resolve_key(TIER_NS, &tier.id.to_string()).await {
            Ok(state) => state.data_ids(None),
            Err(_) => Vec::new(),
        }
    }

    /// Streams bytes `range` of a version kept in a tier.
    pub(crate) fn read_tiered(&self, tier: TierRef, range: Range<u64>) -> ObjectStream {
        // A tier that is not configured (any more) makes the version
        // unavailable, not the request invalid.
        let missing = |e: Error| Error::TierUnavailable(e.to_string());
        let Some(pool) = self.tier_pool(&tier.tier) else {
            let backend = self.remote_tier(&tier.tier).map_err(missing);
            return ObjectStream::deferred(async move { backend?.read(tier.id, range).await });
        };
        ObjectStream::deferred(async move {
            let name = tier.id.to_string();
            let state = pool.set.resolve_key(TIER_NS, &name).await?;
            let object = state
                .latest()
                .ok_or_else(|| Error::Corrupt(format!("tier object {name} is missing")))?
                .object
                .clone();
            Ok(pool.set.read_object(TIER_NS, &name, object, range).into())
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

/// Deletes one tier object from its pool (and frees its data).
async fn delete_tier_object(pool: &Store, id: Uuid) -> Result<(), Error> {
    let name = id.to_string();
    let _guard = pool.set.locks().lock(TIER_NS, &name).await?;
    Ok(pool
        .set
        .delete_version(TIER_NS, &name, VersionId::NULL)
        .await?)
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
