//! Cluster-wide state as small documents in the reserved system namespace
//! (buckets, users, policies): erasure-set records with their value
//! inline, in the first pool's first set, read and written with the same
//! quorums as objects.

use erasure_set::record::{ObjectMeta, ObjectRecord};
use erasure_set::ErasureLayout;

use crate::error::Error;
use crate::model::SYSTEM_NS;
use crate::store::Store;

impl Store {
    /// Reads a document; `None` when absent. Queues a repair when some
    /// disk lacks it.
    pub async fn get_system_doc(&self, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let state = self.pools.system().resolve_key(SYSTEM_NS, path).await?;
        let Some(v) = state.latest().filter(|v| !v.object.delete_marker) else {
            return Ok(None);
        };
        if (0..self.pools.system().width()).any(|s| state.responded[s] && !v.holders[s]) {
            self.pools
                .system()
                .repair_queue()
                .request(SYSTEM_NS, path, Vec::new());
        }
        v.object
            .inline
            .clone()
            .map(Some)
            .ok_or_else(|| Error::Corrupt(format!("system document {path} has no value")))
    }

    /// Replaces a document with `change(current)`: `Some` writes, `None`
    /// deletes. Changes of one path are serialised.
    pub async fn update_system_doc(
        &self,
        path: &str,
        change: impl FnOnce(Option<Vec<u8>>) -> Result<Option<Vec<u8>>, Error>,
    ) -> Result<(), Error> {
        let _guard = self.pools.system().locks().lock(SYSTEM_NS, path).await?;
        let current = self.get_system_doc(path).await?;
        match change(current)? {
            Some(value) => self.write_system_doc(path, value).await,
            None => self.remove_system_doc(path).await,
        }
    }

    /// Every document whose path starts with `prefix`, in path order.
    pub async fn list_system_docs(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, Error> {
        self.system_docs(prefix, usize::MAX).await
    }

    /// Whether any document's path starts with `prefix` (reads no further
    /// than the first).
    pub async fn has_system_docs(&self, prefix: &str) -> Result<bool, Error> {
        Ok(!self.system_docs(prefix, 1).await?.is_empty())
    }

    /// The first `limit` documents under `prefix`, in path order.
    async fn system_docs(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut out = Vec::new();
        let mut start = disk_engine::ListStart::Beginning;
        loop {
            let page = self
                .pools
                .system()
                .list_resolved::<ObjectRecord>(
                    SYSTEM_NS,
                    prefix.as_bytes(),
                    start,
                    limit.clamp(1, 1000),
                )
                .await?;
            for (path, versions) in page.keys {
                if let Some(v) = versions
                    .into_iter()
                    .next()
                    .filter(|v| !v.object.delete_marker)
                {
                    if let Some(value) = v.object.inline {
                        out.push((path, value));
                        if out.len() == limit {
                            return Ok(out);
                        }
                    }
                }
            }
            match page.next {
                Some(k) => start = disk_engine::ListStart::After(k),
                None => return Ok(out),
            }
        }
    }

    /// Writes a document; the caller holds the path's lock.
    pub(crate) async fn write_system_doc(&self, path: &str, value: Vec<u8>) -> Result<(), Error> {
        let obj = ObjectRecord {
            version_id: None,
            mtime_ns: 0,
            delete_marker: false,
            size: 0,
            layout: ErasureLayout {
                data: self.pools.system().data_shards() as u8,
                parity: self.pools.system().parity_shards() as u8,
                block_size: self.pools.system().block_size(),
                rotation: 0,
            },
            parts: Vec::new(),
            multipart: false,
            meta: ObjectMeta::default(),
            inline: Some(value),
            tags: Vec::new(),
            tiered: None,
            upload_id: None,
        };
        let all = vec![true; self.pools.system().width()];
        self.pools
            .system()
            .commit_record(
                SYSTEM_NS,
                path,
                obj,
                &all,
                false,
                erasure_set::Carried::default(),
                None,
            )
            .await?;
        Ok(())
    }

    /// Deletes a document; the caller holds the path's lock.
    pub(crate) async fn remove_system_doc(&self, path: &str) -> Result<(), Error> {
        Ok(self
            .pools
            .system()
            .delete_version(SYSTEM_NS, path, disk_engine::VersionId::NULL)
            .await?)
    }
}
