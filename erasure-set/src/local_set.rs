//! Builds the erasure set of `granary server DIR...` from local directories
//! (see [`crate::set_format`] for what opening a set checks); a missing
//! directory's slot is offline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use disk_engine::{
    probe_dir, DirState, DiskId, FormatRecord, LocalDisk, LocalDiskOptions, OfflineDisk, Tier,
};
use uuid::Uuid;

use crate::error::SetError;
pub use crate::set_format::LocalSet;
use crate::set_format::{open_set, OpenedSlot, SetWant, Slots};
use pool_layout::{default_parity_in, MAX_SET_DISKS};

/// What `granary server` was asked for.
#[derive(Clone, Debug)]
pub struct LocalSetConfig {
    /// Data directories, in slot order.
    pub dirs: Vec<PathBuf>,
    /// Parity shards; `None` for the default for the directory count.
    pub parity: Option<usize>,
    /// Tier of the pool the directories form.
    pub tier: Tier,
    /// Index of the pool in the deployment (0: the first hot pool; 1: the
    /// cold pool).
    pub pool: u32,
    /// Index of this set in its pool.
    pub set: u32,
    /// Sets in the pool.
    pub sets: u32,
    /// Whether other sets of the pool are formatted (see
    /// [`SetWant::pool_exists`]).
    pub pool_exists: bool,
    /// The deployment a pool after the first joins; `None` for the first
    /// pool, which formats a new deployment.
    pub deployment: Option<Uuid>,
    /// Disk options (durability).
    pub disk: LocalDiskOptions,
}

fn setup(msg: String) -> SetError {
    SetError::Setup(msg)
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Opens (formatting where needed) the set described by `cfg`. Blocking.
pub fn open_local_set(cfg: &LocalSetConfig) -> Result<LocalSet, SetError> {
    let n = cfg.dirs.len();
    if n == 0 || n > MAX_SET_DISKS {
        return Err(setup(format!(
            "give between 1 and {MAX_SET_DISKS} data directories (got {n})"
        )));
    }
    for (i, a) in cfg.dirs.iter().enumerate() {
        if cfg.dirs[..i].contains(a) {
            return Err(setup(format!("directory {} is given twice", show(a))));
        }
    }
    if let Some(p) = cfg.parity {
        if p >= n {
            return Err(setup(format!(
                "--parity {p} needs more than {p} directories (got {n})"
            )));
        }
    }
    let want = SetWant {
        parity: cfg.parity,
        tier: cfg.tier,
        pool: cfg.pool,
        set: cfg.set,
        sets: cfg.sets,
        pool_exists: cfg.pool_exists,
        deployment: cfg.deployment,
        default_parity: default_parity_in(cfg.tier, n),
        parity_name: match cfg.tier {
            Tier::Hot => "--parity",
            Tier::Cold => "--cold-parity",
        },
    };
    open_set(&LocalSlots(cfg), &want)
}

/// The slots of `granary server DIR...`: local directories.
struct LocalSlots<'a>(&'a LocalSetConfig);

impl Slots for LocalSlots<'_> {
    fn count(&self) -> usize {
        self.0.dirs.len()
    }

    fn show(&self, slot: usize) -> String {
        show(&self.0.dirs[slot])
    }

    fn probe(&self, slot: usize) -> DirState {
        probe_dir(&self.0.dirs[slot])
    }

    fn write_format(
        &self,
        slot: usize,
        record: &FormatRecord,
        _expect: Option<DiskId>,
    ) -> Result<(), SetError> {
        // Local directories are this process's alone (each disk is locked
        // once opened), so there is no one to race.
        Ok(record.write_to(&self.0.dirs[slot])?)
    }

    fn mount_point(&self, slot: usize) -> Option<bool> {
        use std::os::unix::fs::MetadataExt;
        let dir = &self.0.dirs[slot];
        let me = std::fs::metadata(dir).ok()?;
        let parent = std::fs::metadata(dir.join("..")).ok()?;
        // A mount point's filesystem differs from its parent's (or it is
        // the root, its own parent).
        Some(me.dev() != parent.dev() || me.ino() == parent.ino())
    }

    fn open(&self, slot: usize, _record: &FormatRecord) -> Result<OpenedSlot, SetError> {
        let dir = &self.0.dirs[slot];
        Ok(match probe_dir(dir) {
            DirState::Missing => {
                tracing::error!(dir = %show(dir), "disk missing: directory does not exist; its slot is offline");
                OpenedSlot {
                    disk: Arc::new(OfflineDisk::new(show(dir), "directory does not exist")),
                    local: None,
                }
            }
            _ => {
                let d = Arc::new(LocalDisk::open(dir, self.0.disk.clone())?);
                OpenedSlot {
                    disk: d.clone(),
                    local: Some(d),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(root: &Path, n: usize, parity: Option<usize>) -> LocalSetConfig {
        LocalSetConfig {
            dirs: (0..n).map(|i| root.join(format!("d{i}"))).collect(),
            parity,
            tier: Tier::Hot,
            pool: 0,
            set: 0,
            sets: 1,
            pool_exists: false,
            deployment: None,
            disk: LocalDiskOptions::default(),
        }
    }

    #[test]
    fn formats_reopens_replaces_and_refuses() {
        let root = tempfile::tempdir().unwrap();
        let c = cfg(root.path(), 4, None);
        let set = open_local_set(&c).unwrap();
        assert_eq!(set.parity, 2);
        let dep = set.deployment_id;
        drop(set);
        // Reopen: same deployment.
        assert_eq!(open_local_set(&c).unwrap().deployment_id, dep);
        // Contradicting parity is refused with a clear message.
        let err = open_local_set(&cfg(root.path(), 4, Some(1)))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("parity 2"), "{err}");
        // Wrong count.
        let err = open_local_set(&cfg(root.path(), 3, None))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("one of 4 disks"), "{err}");
        // Swapped order.
        let mut swapped = c.clone();
        swapped.dirs.swap(0, 1);
        let err = open_local_set(&swapped).err().unwrap().to_string();
        assert!(err.contains("original order"), "{err}");
        // Replacement: an empty directory takes the slot.
        std::fs::remove_dir_all(&c.dirs[2]).unwrap();
        std::fs::create_dir(&c.dirs[2]).unwrap();
        let set = open_local_set(&c).unwrap();
        assert!(set.local[2].is_some());
        assert_eq!(set.local[2].as_ref().unwrap().format().position, 2);
        drop(set);
        // Missing directory: reported offline, the set still opens.
        std::fs::remove_dir_all(&c.dirs[3]).unwrap();
        let set = open_local_set(&c).unwrap();
        assert!(set.local[3].is_none());
        drop(set);
        // A disk of another deployment is refused.
        let other = tempfile::tempdir().unwrap();
        let oc = cfg(other.path(), 4, None);
        drop(open_local_set(&oc).unwrap());
        let mut mixed = c.clone();
        mixed.dirs[3] = oc.dirs[3].clone();
        let err = open_local_set(&mixed).err().unwrap().to_string();
        assert!(err.contains("deployment"), "{err}");
        // A non-empty directory without a format is refused.
        let junk = root.path().join("junk");
        std::fs::create_dir(&junk).unwrap();
        std::fs::write(junk.join("file"), b"x").unwrap();
        let mut j = c.clone();
        j.dirs[3] = junk;
        let err = open_local_set(&j).err().unwrap().to_string();
        assert!(err.contains("refusing"), "{err}");
    }

    #[test]
    fn empty_disks_are_formatted_only_while_the_set_keeps_a_read_quorum() {
        let root = tempfile::tempdir().unwrap();
        let c = cfg(root.path(), 4, None);
        drop(open_local_set(&c).unwrap());
        let empty = |slots: &[usize]| {
            for &i in slots {
                std::fs::remove_dir_all(&c.dirs[i]).unwrap();
                std::fs::create_dir(&c.dirs[i]).unwrap();
            }
        };
        let formats = || -> Vec<bool> {
            c.dirs
                .iter()
                .map(|d| d.join("format.json").exists())
                .collect()
        };
        // Two of four empty: a read quorum is left, they are refilled.
        empty(&[2, 3]);
        let set = open_local_set(&c).unwrap();
        assert_eq!(set.replaced, vec![2, 3]);
        assert!(set.offline.is_none() && set.local.iter().all(|d| d.is_some()));
        drop(set);
        // Three of four empty: nothing is formatted or opened, and the set
        // is offline naming itself and its missing disks.
        empty(&[1, 2, 3]);
        let set = open_local_set(&c).unwrap();
        let why = set.offline.clone().expect("offline");
        assert!(why.contains("erasure set 1 of pool 0"), "{why}");
        for d in &c.dirs[1..] {
            assert!(why.contains(&format!("{} (empty)", d.display())), "{why}");
        }
        assert!(set.local.iter().all(|d| d.is_none()));
        assert!(!set.created);
        drop(set);
        assert_eq!(formats(), vec![true, false, false, false]);
        // A missing directory counts as not formatted too.
        std::fs::remove_dir(&c.dirs[3]).unwrap();
        let why = open_local_set(&c).unwrap().offline.expect("offline");
        assert!(
            why.contains(&format!("{} (missing)", c.dirs[3].display())),
            "{why}"
        );
        assert_eq!(formats(), vec![true, false, false, false]);
    }
}
