//! Whether a disk's directory is still the one it opened. A directory
//! removed (or replaced) under a running server leaves the metadata store
//! writing into unlinked files, which "succeed" and are gone at the next
//! start: such a disk must not count towards any quorum. Every write
//! checks first that the directory and its format record it opened still
//! have a name (`fstat` of the two handles held open: a removed directory
//! or file has no link left).

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::DiskError;
use crate::format::FORMAT_FILE;

/// Open handles on a disk's directory and format file.
pub(crate) struct DirIdentity {
    root: PathBuf,
    dir: File,
    format: File,
}

impl DirIdentity {
    /// Holds `root` and its format file open.
    pub fn of(root: &Path) -> Result<DirIdentity, DiskError> {
        Ok(DirIdentity {
            root: root.to_path_buf(),
            dir: File::open(root)?,
            format: File::open(root.join(FORMAT_FILE))?,
        })
    }

    /// `Offline` once the directory or its format file was removed.
    pub fn check(&self) -> Result<(), DiskError> {
        let linked = |f: &File| f.metadata().is_ok_and(|m| m.nlink() > 0);
        match linked(&self.dir) && linked(&self.format) {
            true => Ok(()),
            false => Err(DiskError::Offline(format!(
                "{} was removed or replaced while in use",
                self.root.display()
            ))),
        }
    }
}
