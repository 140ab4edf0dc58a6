//! Whether a disk's directory is still the one it opened. A directory
//! removed (or replaced) under a running server leaves the metadata store
//! writing into unlinked files, which "succeed" and are gone at the next
//! start: such a disk must not count towards any quorum. Every write
//! checks first that the directory and its format record are still the
//! ones opened (two `stat` calls).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::DiskError;
use crate::format::FORMAT_FILE;

/// The identity (device and inode) of a disk's directory and format file.
pub(crate) struct DirIdentity {
    root: PathBuf,
    dir: (u64, u64),
    format: (u64, u64),
}

fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

impl DirIdentity {
    /// The identity of `root` now.
    pub fn of(root: &Path) -> Result<DirIdentity, DiskError> {
        Ok(DirIdentity {
            root: root.to_path_buf(),
            dir: identity(root)?,
            format: identity(&root.join(FORMAT_FILE))?,
        })
    }

    /// `Offline` unless the directory and its format file are the ones
    /// that were opened.
    pub fn check(&self) -> Result<(), DiskError> {
        let same = identity(&self.root).is_ok_and(|d| d == self.dir)
            && identity(&self.root.join(FORMAT_FILE)).is_ok_and(|f| f == self.format);
        match same {
            true => Ok(()),
            false => Err(DiskError::Offline(format!(
                "{} was removed or replaced while in use",
                self.root.display()
            ))),
        }
    }
}
