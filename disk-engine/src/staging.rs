//! A shard file while it is written: it lives under `tmp/` until it is
//! published (fsync, rename to its id, fsync the directory), and is removed
//! if dropped unpublished, so a failed or abandoned write leaves nothing.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::atomic::sync_dir;
use crate::error::DiskError;
use crate::types::ShardId;

/// The temporary and final places of one shard file.
pub(crate) struct Staging {
    id: ShardId,
    tmp: PathBuf,
    dest_dir: PathBuf,
    fsync: bool,
    done: bool,
}

impl Staging {
    /// A fresh temporary name under `root/tmp` for shard `id`, published
    /// into `dest_dir`.
    pub fn new(root: &Path, id: ShardId, dest_dir: PathBuf, fsync: bool) -> Staging {
        Staging {
            id,
            tmp: root
                .join("tmp")
                .join(format!("{id}.{}", Uuid::new_v4().simple())),
            dest_dir,
            fsync,
            done: false,
        }
    }

    /// Where the file is written.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// The shard being written.
    pub fn id(&self) -> ShardId {
        self.id
    }

    /// Moves the staging out, leaving an inert one behind (whose drop does
    /// nothing).
    pub fn take(&mut self) -> Staging {
        let taken = Staging {
            id: self.id,
            tmp: std::mem::take(&mut self.tmp),
            dest_dir: self.dest_dir.clone(),
            fsync: self.fsync,
            done: self.done,
        };
        self.done = true;
        taken
    }

    /// Makes the complete file durable (one fdatasync) and visible under its
    /// id, replacing an older file of the same id. Blocking.
    pub fn publish(&mut self, file: &File) -> Result<(), DiskError> {
        if self.fsync {
            file.sync_data()?;
        }
        fs::rename(&self.tmp, self.dest_dir.join(self.id.to_string()))?;
        if self.fsync {
            sync_dir(&self.dest_dir)?;
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let tmp = std::mem::take(&mut self.tmp);
        let remove = move || {
            let _ = fs::remove_file(&tmp);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn_blocking(remove);
            }
            Err(_) => remove(),
        }
    }
}
