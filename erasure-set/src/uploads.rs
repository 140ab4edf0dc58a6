//! Upload and part records on every disk of the set: their fan-outs and
//! what a quorum of the answers decides. The bodies are opaque (the upload
//! and part records of the layer above); the set decides only which of them
//! a quorum of disks holds, and reports the part records a write replaced or
//! a removal dropped, slot by slot, so their data can be freed.

use bytes::Bytes;
use disk_engine::{failpoint, PartEntry, UploadEntry, UploadListStart};
use uuid::Uuid;

use crate::error::SetError;
use crate::quorum::{horizon, Tally};
use crate::set::ErasureSet;

/// A part record one disk slot held until a write replaced it or a
/// removal dropped it.
pub type DroppedPart = (usize, PartEntry);

/// Why a part record was not stored.
#[derive(Debug)]
pub enum PartRefused {
    /// A read quorum of disks no longer hold the upload.
    UploadGone,
    /// Fewer than a write quorum of disks stored it.
    Set(SetError),
}

/// A part record that did not reach a write quorum, and how many disks
/// stored it anyway (0: no record refers to its data).
#[derive(Debug)]
pub struct PartNotStored {
    /// Why.
    pub why: PartRefused,
    /// Disks that stored it.
    pub stored: usize,
}

impl ErasureSet {
    /// Stores an upload's record on every disk; fails unless a write
    /// quorum did.
    pub async fn put_upload(&self, ns: &str, entry: UploadEntry) -> Result<(), SetError> {
        let results = self
            .each_disk(|_, d| {
                let entry = entry.clone();
                async move { d.put_upload(ns.as_bytes(), entry).await }
            })
            .await;
        self.require_write_quorum(&results)
    }

    /// An upload's record; `None` when a read quorum of disks answered and
    /// fewer than that hold it.
    pub async fn get_upload(
        &self,
        ns: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<Option<Bytes>, SetError> {
        let results = self
            .each_disk(|_, d| async move {
                d.get_upload(ns.as_bytes(), key.as_bytes(), upload_id).await
            })
            .await;
        Ok(self
            .decide_lookup(results)?
            .and_then(|found| found.into_iter().next()))
    }

    /// Stores a part record of an upload on every disk, removing the
    /// staged entries `unstage` with it; returns, slot by slot, the part
    /// records of the same number it replaced.
    pub async fn put_part(
        &self,
        ns: &str,
        key: &str,
        upload_id: Uuid,
        entry: PartEntry,
        unstage: Vec<Uuid>,
    ) -> Result<Vec<DroppedPart>, PartNotStored> {
        let results = self
            .each_disk(|_, d| {
                let (entry, unstage) = (entry.clone(), unstage.clone());
                async move {
                    let r = d
                        .put_part(ns.as_bytes(), key.as_bytes(), upload_id, entry, unstage)
                        .await;
                    if r.is_ok() {
                        failpoint::hit("part.stored", d.label()).await;
                    }
                    r
                }
            })
            .await;
        failpoint::hit("part.recorded", "").await;
        let tally = Tally::of(&results);
        let refused = if tally.absent >= self.quorum.read {
            Some(PartRefused::UploadGone)
        } else {
            self.decide_write(tally).err().map(PartRefused::Set)
        };
        if let Some(why) = refused {
            return Err(PartNotStored {
                why,
                stored: tally.ok,
            });
        }
        Ok(results
            .into_iter()
            .enumerate()
            .filter_map(|(slot, r)| r.ok().flatten().map(|old| (slot, old)))
            .collect())
    }

    /// Removes an upload's record and its parts from every disk; once a
    /// write quorum of disks answered, returns the part records dropped,
    /// slot by slot, or `None` when no disk had the upload. Short of that
    /// quorum the upload may still be there, and nothing it refers to may
    /// be freed.
    pub async fn delete_upload(
        &self,
        ns: &str,
        key: &str,
        upload_id: Uuid,
    ) -> Result<Option<Vec<DroppedPart>>, SetError> {
        let results = self
            .each_disk(|_, d| async move {
                d.delete_upload(ns.as_bytes(), key.as_bytes(), upload_id)
                    .await
            })
            .await;
        let answers = self.decide_removal(results)?;
        if answers.iter().all(Option::is_none) {
            return Ok(None);
        }
        Ok(Some(
            answers
                .into_iter()
                .enumerate()
                .flat_map(|(slot, parts)| parts.into_iter().flatten().map(move |p| (slot, p)))
                .collect(),
        ))
    }

    /// Part records numbered above `after`, at most `max` per disk: for
    /// each number, every record body a read quorum of disks holds (more
    /// than one when a part was rewritten and not every disk saw it), in
    /// number order; and whether more follow.
    pub async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<(u32, Vec<Bytes>)>, bool), SetError> {
        let results = self
            .each_disk(|_, d| async move { d.list_parts(upload_id, after, max).await })
            .await;
        let pages: Vec<_> = results.into_iter().flatten().collect();
        let end = horizon(
            pages
                .iter()
                .filter(|(_, more)| *more)
                .map(|(parts, _)| parts.last().map_or(after, |p| p.number)),
        );
        let answers = pages
            .into_iter()
            .flat_map(|(parts, _)| parts)
            .map(|p| ((p.number, p.body), ()));
        let mut out: Vec<(u32, Vec<Bytes>)> = Vec::new();
        for ((number, body), ()) in self.agreed(answers) {
            if end.is_some_and(|h| number > h) {
                break;
            }
            match out.last_mut() {
                Some((n, bodies)) if *n == number => bodies.push(body),
                _ => out.push((number, vec![body])),
            }
        }
        Ok((out, end.is_some()))
    }

    /// Uploads of `ns` whose key starts with `prefix`, ordered by (key,
    /// upload id), that a read quorum of disks hold; at most `max` per
    /// disk, and, when more may follow, the (key, upload id) the page is
    /// complete up to (the next page starts after it; the page may end
    /// before it, or be empty, where disks listed uploads no quorum holds).
    pub async fn list_uploads(
        &self,
        ns: &str,
        prefix: &str,
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, Option<(Vec<u8>, Uuid)>), SetError> {
        let results = self
            .each_disk(|_, d| {
                let start = start.clone();
                async move {
                    d.list_uploads(ns.as_bytes(), prefix.as_bytes(), start, max)
                        .await
                }
            })
            .await;
        self.require_read_quorum(&results)?;
        let pages: Vec<_> = results.into_iter().flatten().collect();
        let end = horizon(
            pages
                .iter()
                .filter(|(_, more)| *more)
                .filter_map(|(ups, _)| ups.last().map(|u| (u.key.clone(), u.upload_id))),
        );
        let answers = pages
            .into_iter()
            .flat_map(|(ups, _)| ups)
            .map(|u| ((u.key, u.upload_id), u.body));
        let out = self
            .agreed(answers)
            .into_iter()
            .take_while(|(id, _)| end.as_ref().is_none_or(|h| id <= h))
            .map(|((key, upload_id), body)| UploadEntry {
                key,
                upload_id,
                body,
            })
            .collect();
        Ok((out, end))
    }
}
