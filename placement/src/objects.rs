//! Object operations: stage data, commit versions (with write
//! preconditions), look versions up, read, delete (delete markers).

use std::ops::Range;
use std::sync::Arc;

use disk_engine::{Tier, VersionId};
use erasure_set::record::{ObjectMeta, ObjectRecord, PartRef};
use erasure_set::{
    version_key, BodyStream, Carried, Committed, DiskRecords, ErasureSet, KeyState, Resolved,
    StagedData,
};
use futures::future::join_all;
use uuid::Uuid;

use crate::error::Error;
use crate::model::Versioning;
use crate::store::Store;
use crate::stream::ObjectStream;

/// One version of a key, by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionRef {
    /// The null version.
    Null,
    /// A version id.
    Id(Uuid),
}

impl VersionRef {
    /// The version of a stored record.
    pub fn of(object: &ObjectRecord) -> VersionRef {
        VersionRef::of_id(object.version_id)
    }

    /// The version a record's version id names (`None`: the null version).
    pub fn of_id(version_id: Option<Uuid>) -> VersionRef {
        version_id.map_or(VersionRef::Null, VersionRef::Id)
    }

    pub(crate) fn id(self) -> Option<Uuid> {
        match self {
            VersionRef::Null => None,
            VersionRef::Id(u) => Some(u),
        }
    }
}

/// A condition on the key's current version, checked atomically with the
/// commit of a write (S3's conditional writes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteCondition {
    /// The key must have no current version (a delete marker counts as none).
    IfNoneMatch,
    /// The current version's entity tag must be this one.
    IfMatch(String),
    /// The current version's entity tag must not be this one (a missing
    /// key or a delete marker passes). Beyond S3, which has only `*`; Ceph
    /// RGW and HTTP give it this meaning.
    IfNoneMatchEtag(String),
}

/// Options of a write's commit.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Precondition on the current version.
    pub condition: Option<WriteCondition>,
    /// When the write began (ns since the epoch): a current version newer
    /// than this that breaks the condition is a concurrent conflict.
    pub since_ns: u64,
}

/// The preconditions of a conditional delete (S3's `If-Match` on
/// DeleteObject and the `ETag` of a DeleteObjects entry; the size and
/// modification time checks of directory buckets), on the version the
/// delete removes or hides: the named one, else the current one. Checked
/// under the key's lock, atomically with the delete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteCondition {
    /// The entity tag the version must have, or `*` for any: the version
    /// must exist (and not be a delete marker).
    pub if_match: Option<String>,
    /// The size in bytes the version must have.
    pub size: Option<u64>,
    /// The modification time (seconds since the epoch) it must have.
    pub last_modified_secs: Option<u64>,
    /// When the request began (ns since the epoch): a version newer than
    /// this that fails the condition is a concurrent conflict.
    pub since_ns: u64,
}

impl DeleteCondition {
    /// Whether `state` lets the delete of `version` (`None`: the current
    /// one) go ahead. A missing version fails `If-Match` with `NoSuchKey`;
    /// the size and time checks alone pass on it (nothing is there to
    /// differ, as on directory buckets).
    fn check(
        &self,
        (bucket, key): (&str, &str),
        state: &KeyState,
        version: Option<VersionRef>,
    ) -> Result<(), Error> {
        let target = match version {
            Some(v) => find(state, v),
            None => state.latest(),
        }
        .filter(|v| !v.object.delete_marker);
        let Some(t) = target else {
            return match self.if_match {
                Some(_) => Err(Error::no_such_key(bucket, key)),
                None => Ok(()),
            };
        };
        let o = &t.object;
        let differs = self
            .if_match
            .as_ref()
            .is_some_and(|e| e != "*" && *e != o.meta.etag)
            || self.size.is_some_and(|s| s != o.size)
            || self
                .last_modified_secs
                .is_some_and(|s| s != o.mtime_ns / 1_000_000_000);
        match (differs, o.mtime_ns > self.since_ns) {
            (false, _) => Ok(()),
            (true, true) => Err(Error::ConditionalConflict),
            (true, false) => Err(Error::PreconditionFailed),
        }
    }
}

/// The removals of a DeleteObjects batch in one set its keys live in.
struct HomeBatch {
    set: Arc<ErasureSet>,
    /// The versions to remove, by key.
    records: Vec<(Vec<u8>, VersionId)>,
    /// Their places among the batch's outcomes.
    items: Vec<usize>,
}

/// One key of a (multi-object) delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteItem {
    /// The key.
    pub key: String,
    /// The version to remove for good; `None`: the key's current one.
    pub version: Option<VersionRef>,
    /// Preconditions on that version.
    pub condition: Option<DeleteCondition>,
}

impl DeleteItem {
    /// An unconditional delete of `key` (`version` as in [`DeleteItem`]).
    pub fn new(key: impl Into<String>, version: Option<VersionRef>) -> DeleteItem {
        DeleteItem {
            key: key.into(),
            version,
            condition: None,
        }
    }
}

/// What a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// The version removed or the delete marker created, when versioning
    /// is involved.
    pub version: Option<VersionRef>,
    /// Whether that version is a delete marker.
    pub delete_marker: bool,
}

fn find(state: &KeyState, v: VersionRef) -> Option<&Resolved> {
    state
        .versions
        .iter()
        .find(|r| VersionRef::of(&r.object) == v)
}

/// Checks a write's precondition against the key's state.
fn check_condition(
    (bucket, key): (&str, &str),
    state: &KeyState,
    opts: &WriteOptions,
) -> Result<(), Error> {
    let Some(cond) = &opts.condition else {
        return Ok(());
    };
    let current = state.latest().filter(|v| !v.object.delete_marker);
    let conflict_or_failed = |v: &Resolved| {
        if v.object.mtime_ns > opts.since_ns {
            Error::ConditionalConflict
        } else {
            Error::PreconditionFailed
        }
    };
    match (cond, current) {
        (WriteCondition::IfNoneMatch, None) => Ok(()),
        (WriteCondition::IfNoneMatch, Some(v)) => Err(conflict_or_failed(v)),
        (WriteCondition::IfMatch(_), None) => Err(Error::no_such_key(bucket, key)),
        (WriteCondition::IfMatch(etag), Some(v)) if *etag == v.object.meta.etag => Ok(()),
        (WriteCondition::IfMatch(_), Some(v)) => Err(conflict_or_failed(v)),
        (WriteCondition::IfNoneMatchEtag(etag), Some(v)) if *etag == v.object.meta.etag => {
            Err(conflict_or_failed(v))
        }
        (WriteCondition::IfNoneMatchEtag(_), _) => Ok(()),
    }
}

impl Store {
    /// Streams `body` into shard files for a future version of
    /// `bucket/key`. Nothing is visible until [`Store::put_object`].
    pub async fn write_data(
        &self,
        bucket: &str,
        key: &str,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        self.write_data_in(Tier::Hot, bucket, key, body, size_hint)
            .await
    }

    /// [`Store::write_data`] into the pool of `tier`: for the hot tier,
    /// the set the key lives in, or where a new key goes (see `home.rs`);
    /// the cold pool keeps the data as a tier object (see `tier.rs`).
    pub async fn write_data_in(
        &self,
        tier: Tier,
        bucket: &str,
        key: &str,
        body: BodyStream,
        size_hint: Option<u64>,
    ) -> Result<StagedData, Error> {
        self.bucket(bucket).await?;
        match tier {
            Tier::Hot => {
                let set = self.write_set(bucket, key).await?;
                let layout = set.layout_for(bucket, key);
                Ok(set.write_data(layout, body, size_hint, true).await?)
            }
            Tier::Cold => {
                self.write_tier_data(crate::model::COLD_TIER, body, size_hint)
                    .await
            }
        }
    }

    /// Makes staged data the current version of `bucket/key`: a new version
    /// when the bucket's versioning is enabled, the null version otherwise.
    /// The precondition in `opts` is checked under the key's lock. The
    /// commit runs to its end even if this future is dropped.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        staged: StagedData,
        meta: ObjectMeta,
        tags: Vec<(String, String)>,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let (bucket, key, opts) = (bucket.to_string(), key.to_string(), opts.clone());
        self.detached(move |me| async move {
            me.put_object_now(&bucket, &key, staged, meta, tags, &opts)
                .await
        })
        .await
    }

    async fn put_object_now(
        &self,
        bucket: &str,
        key: &str,
        mut staged: StagedData,
        meta: ObjectMeta,
        tags: Vec<(String, String)>,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        if staged.tier.is_some() {
            return self
                .put_tiered_object(bucket, key, staged, meta, tags, opts)
                .await;
        }
        disk_engine::failpoint::hit("put.staged", "").await;
        let part = PartRef::single(staged.size, staged.data_id, staged.pieces.is_some(), &meta);
        let record = ObjectRecord::new_version(staged.layout, vec![part], false, meta, tags, None);
        let disks = staged.disks.clone();
        let _guard = self.lock_key(bucket, key).await?;
        let (set, records) = self
            .home(bucket, key)
            .await?
            .into_staged((bucket, key), &staged)?;
        let (versioning, state) = self
            .prepare_version_from(&set, bucket, key, opts, records)
            .await?;
        self.write_version(
            &set,
            bucket,
            key,
            record,
            &disks,
            versioning,
            &state,
            Some(&mut staged),
            None,
        )
        .await
        .map(|c| c.object)
    }

    /// [`Store::put_object`] of data written to a tier: the tier object is
    /// committed first, then the version referring to it, both under the
    /// key's lock (which the tier sweep takes before judging a tier object
    /// unreferenced). If the version is refused, the tier object is
    /// released again; if its write fails, the sweep decides from the
    /// writes readers are or may be shown.
    async fn put_tiered_object(
        &self,
        bucket: &str,
        key: &str,
        staged: StagedData,
        meta: ObjectMeta,
        tags: Vec<(String, String)>,
        opts: &WriteOptions,
    ) -> Result<ObjectRecord, Error> {
        let size = staged.size;
        let _guard = self.lock_key(bucket, key).await?;
        let (set, records) = self.home_or_new(bucket, key).await?;
        let tier = self.commit_tier_object(staged, bucket, key, &meta).await?;
        disk_engine::failpoint::hit("tier.put.committed", "").await;
        let part = PartRef::single(size, None, false, &meta);
        let layout = set.layout_for(bucket, key);
        let record =
            ObjectRecord::new_version(layout, vec![part], false, meta, tags, Some(tier.clone()));
        let all = vec![true; set.width()];
        let prepared = self
            .prepare_version_from(&set, bucket, key, opts, records)
            .await;
        let (versioning, state) = match prepared {
            Ok(p) => p,
            Err(e) => {
                set.release_tiered(vec![tier]);
                return Err(e);
            }
        };
        self.write_version(
            &set, bucket, key, record, &all, versioning, &state, None, None,
        )
        .await
        .map(|c| c.object)
    }

    /// What a new version of `bucket/key` is committed against, from the
    /// key's records in `set` (where it lives, or goes) read under its
    /// lock: the bucket's versioning and the key as it stands, which must
    /// meet the write's precondition.
    pub(crate) async fn prepare_version_from(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        opts: &WriteOptions,
        records: DiskRecords,
    ) -> Result<(Versioning, KeyState), Error> {
        let versioning = self.bucket_for_write(bucket).await?.versioning;
        let state = set.resolve_records(records)?;
        check_condition((bucket, key), &state, opts)?;
        Ok((versioning, state))
    }

    /// Writes a new version of `bucket/key` in `set`, prepared with
    /// [`Self::prepare_version_from`] (the caller still holds the key lock),
    /// taking over `staged` data (its staged entries go with the records)
    /// and completing upload `completes` in the same writes. After a failed
    /// write the staged entries are removed: what refers to the data is
    /// then what the records that landed say.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write_version(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        record: ObjectRecord,
        targets: &[bool],
        versioning: Versioning,
        state: &KeyState,
        staged: Option<&mut StagedData>,
        completes: Option<Uuid>,
    ) -> Result<Committed, Error> {
        let (pieces, unstage) = match staged {
            Some(s) => (s.pieces.take(), s.hand_over()),
            None => (None, Vec::new()),
        };
        let carried = Carried {
            pieces: pieces.as_ref(),
            unstage: &unstage,
            completes,
        };
        let committed = set
            .commit_record(
                bucket,
                key,
                record,
                targets,
                versioning == Versioning::Enabled,
                carried,
                Some(state),
            )
            .await;
        if committed.is_err() {
            for id in &unstage {
                set.unstage(*id).await;
            }
        }
        let committed = committed?;
        self.confirm_bucket(set, bucket, key, &committed.object)
            .await?;
        Ok(committed)
    }

    /// A version of `bucket/key`: the current one (`None`), which may be a
    /// delete marker, or the one named. `NoSuchKey` when the key has no
    /// versions, `NoSuchVersion` when the named one does not exist. Queues a
    /// repair when some disk lacks the record.
    pub async fn get_version(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
    ) -> Result<ObjectRecord, Error> {
        self.bucket(bucket).await?;
        let (set, state) = self.resolve_anywhere(bucket, key).await?;
        let found = match version {
            None => state
                .latest()
                .ok_or_else(|| Error::no_such_key(bucket, key))?,
            Some(v) => find(&state, v).ok_or(Error::NoSuchVersion)?,
        };
        if (0..set.width()).any(|s| state.responded[s] && !found.holders[s]) {
            set.repair_queue().request(bucket, key, Vec::new());
        }
        if let Some(id) = found.object.data_ids().next() {
            if self.pools.has_later_hot() {
                self.pools.remember_data(id, &set);
            }
        }
        Ok(found.object.clone())
    }

    /// The current version of `bucket/key`; `NoSuchKey` if there is none or
    /// it is a delete marker.
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectRecord, Error> {
        let v = self.get_version(bucket, key, None).await?;
        if v.delete_marker {
            return Err(Error::no_such_key(bucket, key));
        }
        Ok(v)
    }

    /// Streams bytes `range` of a version returned by [`Store::get_version`].
    pub fn read_object(
        &self,
        bucket: &str,
        key: &str,
        object: ObjectRecord,
        range: Range<u64>,
    ) -> ObjectStream {
        if let Some(tier) = object.tiered.clone() {
            return self.read_tiered(tier, range);
        }
        if !self.pools.has_later_hot() {
            let set = self.pools.set_of(bucket, key);
            return set.read_object(bucket, key, object, range).into();
        }
        // The key may live in any hot pool: the set its version was just
        // found in, or found again when the stream starts.
        let known = object.data_ids().next();
        if let Some(set) = known.and_then(|id| self.pools.set_holding_data(id)) {
            return set.read_object(bucket, key, object, range).into();
        }
        let Some(me) = self.me.upgrade() else {
            return ObjectStream::deferred(async {
                Err(Error::Internal("the store is shutting down".into()))
            });
        };
        let (bucket, key) = (bucket.to_string(), key.to_string());
        ObjectStream::deferred(async move {
            let (set, _) = me.resolve_anywhere(&bucket, &key).await?;
            Ok(set.read_object(&bucket, &key, object, range).into())
        })
    }

    /// Deletes `bucket/key`. With a version, removes that version for good
    /// (a missing one is not an error). Without: in an unversioned bucket
    /// removes the object; with versioning enabled adds a delete marker; with
    /// versioning suspended replaces the null version with a delete marker.
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
    ) -> Result<DeleteOutcome, Error> {
        self.delete_object_if(bucket, DeleteItem::new(key, version))
            .await
    }

    /// [`Self::delete_object`] of `item`, only if its condition holds.
    pub async fn delete_object_if(
        &self,
        bucket: &str,
        item: DeleteItem,
    ) -> Result<DeleteOutcome, Error> {
        self.delete_objects(bucket, &[item])
            .await?
            .pop()
            .expect("one outcome per item")
    }

    /// Makes a delete marker the current version of `key`: a new version
    /// with versioning enabled, the null version when suspended.
    async fn add_delete_marker(
        &self,
        bucket: &str,
        item: &DeleteItem,
        versioning: Versioning,
    ) -> Result<DeleteOutcome, Error> {
        let key = item.key.as_str();
        let _guard = self.lock_key(bucket, key).await?;
        let (set, records) = self.home_or_new(bucket, key).await?;
        if let Some(c) = &item.condition {
            c.check((bucket, key), &set.resolve_records(records)?, None)?;
        }
        self.add_delete_marker_locked(&set, bucket, key, versioning)
            .await
    }

    /// Deletes a version a lifecycle rule expired, only if it is still what
    /// the scanner saw: the version `seen` (by id) with modification time
    /// `seen_mtime_ns`, and, unless `permanent`, still the current one. A
    /// current version expires as a DELETE without version id would (a
    /// delete marker in a versioned bucket); `permanent` removes the version
    /// for good. Returns whether anything was deleted.
    pub async fn expire_if_unchanged(
        &self,
        bucket: &str,
        key: &str,
        seen: VersionRef,
        seen_mtime_ns: u64,
        permanent: bool,
    ) -> Result<bool, Error> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move {
            me.expire_now(&bucket, &key, seen, seen_mtime_ns, permanent)
                .await
        })
        .await
    }

    async fn expire_now(
        &self,
        bucket: &str,
        key: &str,
        seen: VersionRef,
        seen_mtime_ns: u64,
        permanent: bool,
    ) -> Result<bool, Error> {
        let versioning = self.bucket(bucket).await?.versioning;
        let _guard = self.lock_key(bucket, key).await?;
        let (set, state) = self.resolve_home(bucket, key).await?;
        let Some(found) = find(&state, seen).filter(|r| r.object.mtime_ns == seen_mtime_ns) else {
            return Ok(false);
        };
        let current = state
            .latest()
            .is_some_and(|l| l.record.version == found.record.version);
        if !permanent && !current {
            return Ok(false);
        }
        if permanent || versioning == Versioning::Unversioned {
            set.delete_versions(
                bucket,
                vec![(key.as_bytes().to_vec(), found.record.version)],
            )
            .await?;
        } else {
            self.add_delete_marker_locked(&set, bucket, key, versioning)
                .await?;
        }
        Ok(true)
    }

    async fn add_delete_marker_locked(
        &self,
        set: &ErasureSet,
        bucket: &str,
        key: &str,
        versioning: Versioning,
    ) -> Result<DeleteOutcome, Error> {
        let marker = ObjectRecord {
            version_id: None,
            mtime_ns: 0,
            delete_marker: true,
            size: 0,
            layout: set.layout_for(bucket, key),
            parts: Vec::new(),
            multipart: false,
            meta: ObjectMeta::default(),
            inline: None,
            tags: Vec::new(),
            tiered: None,
            upload_id: None,
        };
        let all = vec![true; set.width()];
        let stored = set
            .commit_record(
                bucket,
                key,
                marker,
                &all,
                versioning == Versioning::Enabled,
                Carried::default(),
                None,
            )
            .await?;
        self.confirm_bucket(set, bucket, key, &stored.object)
            .await?;
        Ok(DeleteOutcome {
            version: Some(VersionRef::of(&stored.object)),
            delete_marker: true,
        })
    }

    /// Deletes many objects (S3's DeleteObjects), each as
    /// [`Self::delete_object`] describes: the record removals of the whole
    /// request (named versions, and every key of an unversioned bucket) are
    /// written as one batch per disk under all their keys' locks; delete
    /// markers (versioned buckets without a version id) are committed one by
    /// one, together. Outcomes come back in the order of `items`. The
    /// deletes run to their end even if this future is dropped.
    pub async fn delete_objects(
        &self,
        bucket: &str,
        items: &[DeleteItem],
    ) -> Result<Vec<Result<DeleteOutcome, Error>>, Error> {
        let (bucket, items) = (bucket.to_string(), items.to_vec());
        self.detached(move |me| async move { me.delete_objects_now(&bucket, &items).await })
            .await
    }

    async fn delete_objects_now(
        &self,
        bucket: &str,
        items: &[DeleteItem],
    ) -> Result<Vec<Result<DeleteOutcome, Error>>, Error> {
        let versioning = self.bucket(bucket).await?.versioning;
        let removes = |v: &Option<VersionRef>| v.is_some() || versioning == Versioning::Unversioned;
        let batch: Vec<usize> = (0..items.len())
            .filter(|&i| removes(&items[i].version))
            .collect();
        let mut out: Vec<Option<Result<DeleteOutcome, Error>>> =
            items.iter().map(|_| None).collect();
        // One batch per set, each under its own keys' locks.
        let mut by_set: Vec<Vec<usize>> = vec![Vec::new(); self.pools.first_sets().len()];
        for i in batch {
            by_set[self.pools.index_of(bucket, &items[i].key)].push(i);
        }
        let sets = self.pools.first_sets();
        let removed = join_all(
            by_set
                .into_iter()
                .enumerate()
                .filter(|(_, batch)| !batch.is_empty())
                .map(|(s, batch)| self.remove_batch(&sets[s], bucket, items, batch)),
        )
        .await;
        for (i, outcome) in removed.into_iter().flatten() {
            out[i] = Some(outcome);
        }
        let markers = join_all((0..items.len()).filter(|&i| out[i].is_none()).map(
            |i| async move {
                (
                    i,
                    self.add_delete_marker(bucket, &items[i], versioning).await,
                )
            },
        ))
        .await;
        for (i, outcome) in markers {
            out[i] = Some(outcome);
        }
        Ok(out
            .into_iter()
            .map(|o| o.expect("every item has an outcome"))
            .collect())
    }

    /// Removes the versions of `items` named by `batch` (all of keys of
    /// `set`) in one batch per disk under all their keys' locks, once each
    /// one's condition holds; returns each item's outcome. Locks not won
    /// fail this batch's items alone: the other sets' go on.
    async fn remove_batch(
        &self,
        set: &Arc<ErasureSet>,
        bucket: &str,
        items: &[DeleteItem],
        batch: Vec<usize>,
    ) -> Vec<(usize, Result<DeleteOutcome, Error>)> {
        let locked = set
            .locks()
            .lock_all(bucket, batch.iter().map(|&i| items[i].key.as_str()))
            .await;
        let _guards = match locked {
            Ok(g) => g,
            Err(e) => {
                let e = Error::from(e);
                return batch.into_iter().map(|i| (i, Err(e.for_each()))).collect();
            }
        };
        // Where each key lives, and whether each named version is a
        // delete marker (for the reply), once its condition holds.
        let looked = join_all(batch.iter().map(|&i| async move {
            let item = &items[i];
            if item.version.is_none() && item.condition.is_none() && !self.pools.has_later_hot() {
                return Ok((set.clone(), false));
            }
            let (home, state) = self.resolve_home(bucket, &item.key).await?;
            if let Some(c) = &item.condition {
                c.check((bucket, &item.key), &state, item.version)?;
            }
            let marker = item
                .version
                .is_some_and(|v| find(&state, v).is_some_and(|r| r.object.delete_marker));
            Ok::<_, Error>((home, marker))
        }))
        .await;
        // One batch of removals per set the keys live in.
        let mut homes: Vec<HomeBatch> = Vec::new();
        let mut out = Vec::with_capacity(batch.len());
        for (&i, looked) in batch.iter().zip(looked) {
            let DeleteItem { key, version, .. } = &items[i];
            let (home, delete_marker) = match looked {
                Ok(l) => l,
                Err(e) => {
                    out.push((i, Err(e)));
                    continue;
                }
            };
            let at = match homes.iter().position(|h| Arc::ptr_eq(&h.set, &home)) {
                Some(at) => at,
                None => {
                    homes.push(HomeBatch {
                        set: home,
                        records: Vec::new(),
                        items: Vec::new(),
                    });
                    homes.len() - 1
                }
            };
            let version_of = version_key(version.and_then(|v| v.id()));
            homes[at]
                .records
                .push((key.as_bytes().to_vec(), version_of));
            homes[at].items.push(out.len());
            out.push((
                i,
                Ok(DeleteOutcome {
                    version: *version,
                    delete_marker,
                }),
            ));
        }
        let removed = join_all(homes.into_iter().map(|mut h| async move {
            h.records.sort();
            h.records.dedup();
            let removed = h.set.delete_versions(bucket, h.records).await;
            (h.items, removed.map_err(Error::from))
        }))
        .await;
        for (members, removed) in removed {
            if let Err(e) = removed {
                for m in members {
                    out[m].1 = Err(e.for_each());
                }
            }
        }
        out
    }

    /// Replaces the tags of a version (the current one with `None`) without
    /// changing its id or modification time. `IsDeleteMarker` for a marker.
    pub async fn set_tags(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
        tags: Vec<(String, String)>,
    ) -> Result<ObjectRecord, Error> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move { me.set_tags_now(&bucket, &key, version, tags).await })
            .await
    }

    /// Moves the reported restore expiry of a version (the current one with
    /// `None`) to `until_ns`, without changing its id or modification
    /// time. `IsDeleteMarker` for a marker.
    pub async fn set_restore_expiry(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
        until_ns: u64,
    ) -> Result<ObjectRecord, Error> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.detached(move |me| async move {
            me.rewrite_version(&bucket, &key, version, |o| {
                o.meta.restore_expiry_ns = Some(until_ns)
            })
            .await
        })
        .await
    }

    async fn set_tags_now(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
        tags: Vec<(String, String)>,
    ) -> Result<ObjectRecord, Error> {
        self.rewrite_version(bucket, key, version, |o| o.tags = tags)
            .await
    }

    /// Rewrites a version's record (the current one with `None`) changed by
    /// `change`, under the key's lock, keeping its id and modification time.
    async fn rewrite_version(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionRef>,
        change: impl FnOnce(&mut ObjectRecord),
    ) -> Result<ObjectRecord, Error> {
        self.bucket(bucket).await?;
        let _guard = self.lock_key(bucket, key).await?;
        let (set, state) = self.resolve_home(bucket, key).await?;
        let found = match version {
            None => state
                .latest()
                .ok_or_else(|| Error::no_such_key(bucket, key))?,
            Some(v) => find(&state, v).ok_or(Error::NoSuchVersion)?,
        };
        if found.object.delete_marker {
            return Err(Error::IsDeleteMarker);
        }
        let mut object = found.object.clone();
        change(&mut object);
        Ok(set
            .rewrite_record(bucket, key, object, &found.holding, &state)
            .await?)
    }
}
