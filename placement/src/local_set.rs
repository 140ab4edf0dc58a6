//! Builds the erasure set of `granary server DIR...` from local directories:
//! formats a new deployment, recognises its own disks, formats an empty
//! directory in a known slot as a replacement, reports missing directories
//! offline, and refuses anything that contradicts the stored format.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use disk_engine::{
    probe_dir, DirState, Disk, DiskId, FormatRecord, LocalDisk, LocalDiskOptions, OfflineDisk, Tier,
};
use uuid::Uuid;

use crate::error::Error;

/// Parity of a new cold pool unless `--cold-parity` says otherwise (or
/// the pool has too few directories for it).
pub const DEFAULT_COLD_PARITY: usize = 2;

/// Most directories one erasure set takes.
pub const MAX_SET_DISKS: usize = 16;

/// What `granary server` was asked for.
#[derive(Clone, Debug)]
pub struct LocalSetConfig {
    /// Data directories, in slot order.
    pub dirs: Vec<PathBuf>,
    /// Parity shards; `None` for the default for the directory count.
    pub parity: Option<usize>,
    /// Tier of the pool the directories form.
    pub tier: Tier,
    /// Index of the pool in the deployment (0: the hot pool holding every
    /// version record; 1: the cold pool).
    pub pool: u32,
    /// The deployment a pool after the first joins; `None` for the first
    /// pool, which formats a new deployment.
    pub deployment: Option<Uuid>,
    /// Disk options (durability).
    pub disk: LocalDiskOptions,
}

/// The opened set: disks by slot (offline slots included) and its parity.
pub struct LocalSet {
    /// One disk per slot; missing ones are [`OfflineDisk`]s.
    pub disks: Vec<Arc<dyn Disk>>,
    /// The local disks that opened, for shutdown flushing and tests.
    pub local: Vec<Option<Arc<LocalDisk>>>,
    /// Parity shards (m).
    pub parity: usize,
    /// Deployment id shared by every disk.
    pub deployment_id: Uuid,
}

/// Default parity for `n` directories: none for one, mirroring for two or
/// three, then 2 for 4–5, 3 for 6–7 and 4 for 8 or more.
pub fn default_parity(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        2 | 3 => n - 1,
        4 | 5 => 2,
        6 | 7 => 3,
        _ => 4,
    }
}

fn setup(msg: String) -> Error {
    Error::Setup(msg)
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Opens (formatting where needed) the set described by `cfg`. Blocking.
pub fn open_local_set(cfg: &LocalSetConfig) -> Result<LocalSet, Error> {
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
    let states: Vec<DirState> = cfg.dirs.iter().map(|d| probe_dir(d)).collect();
    for (dir, st) in cfg.dirs.iter().zip(&states) {
        if let DirState::Foreign(why) = st {
            return Err(setup(format!("{}: {why}", show(dir))));
        }
    }
    let formatted: Vec<(usize, &FormatRecord)> = states
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            DirState::Formatted(f) => Some((i, f)),
            _ => None,
        })
        .collect();

    let Some(&(first_slot, reference)) = formatted.first() else {
        return format_new(cfg);
    };
    let reference = reference.clone();
    for &(slot, f) in &formatted {
        let dir = show(&cfg.dirs[slot]);
        if f.deployment_id != reference.deployment_id {
            return Err(setup(format!(
                "{dir} belongs to deployment {} but {} belongs to {}; refusing to mix disks of two deployments",
                f.deployment_id,
                show(&cfg.dirs[first_slot]),
                reference.deployment_id
            )));
        }
        if f.set_size() != n {
            return Err(setup(format!(
                "{dir} was formatted as one of {} disks, but {n} directories were given",
                f.set_size()
            )));
        }
        if f.position as usize != slot {
            return Err(setup(format!(
                "{dir} is disk {} of its set but was given in position {}; give the directories in their original order",
                f.position + 1,
                slot + 1
            )));
        }
        if f.parity_shards != reference.parity_shards
            || f.tier != reference.tier
            || f.pool != reference.pool
        {
            return Err(setup(format!(
                "{dir} disagrees with the other disks' format"
            )));
        }
    }
    if let Some(p) = cfg.parity {
        if p != reference.parity_shards as usize {
            return Err(setup(format!(
                "these disks were formatted with parity {}; started with --parity {p}. Start without --parity or with --parity {}",
                reference.parity_shards, reference.parity_shards
            )));
        }
    }
    if cfg.tier != reference.tier {
        return Err(setup(format!(
            "these disks were formatted as the {} tier; started as {}",
            reference.tier, cfg.tier
        )));
    }
    if let Some(dep) = cfg.deployment.filter(|d| *d != reference.deployment_id) {
        return Err(setup(format!(
            "{} belongs to deployment {} but the hot pool belongs to {dep}; refusing to mix disks of two deployments",
            show(&cfg.dirs[first_slot]),
            reference.deployment_id
        )));
    }
    if cfg.pool != reference.pool {
        return Err(setup(format!(
            "{} was formatted as pool {} but given as pool {}",
            show(&cfg.dirs[first_slot]),
            reference.pool,
            cfg.pool
        )));
    }

    let mut set_disks = reference.set_disks.clone();
    let mut replaced = Vec::new();
    for (slot, st) in states.iter().enumerate() {
        if let DirState::Empty = st {
            let id = DiskId(Uuid::new_v4());
            set_disks[slot] = id;
            let f = FormatRecord {
                disk_id: id,
                position: slot as u32,
                set_disks: set_disks.clone(),
                ..reference.clone()
            };
            f.write_to(&cfg.dirs[slot])?;
            tracing::warn!(dir = %show(&cfg.dirs[slot]), slot = slot + 1, "empty directory formatted as a replacement disk; repair will refill it");
            replaced.push(slot);
        }
    }
    if !replaced.is_empty() {
        // Every formatted disk learns the new ids of its set.
        for &(slot, f) in &formatted {
            let updated = FormatRecord {
                set_disks: set_disks.clone(),
                ..f.clone()
            };
            updated.write_to(&cfg.dirs[slot])?;
        }
    }
    open_all(
        cfg,
        reference.parity_shards as usize,
        reference.deployment_id,
    )
}

fn format_new(cfg: &LocalSetConfig) -> Result<LocalSet, Error> {
    let n = cfg.dirs.len();
    // Cold pools trade fault tolerance for space by default: parity 2
    // (wider, cheaper stripes than the hot pool's on as many disks).
    let parity = cfg.parity.unwrap_or_else(|| match cfg.tier {
        Tier::Hot => default_parity(n),
        Tier::Cold => default_parity(n).min(DEFAULT_COLD_PARITY),
    });
    let mut formats = FormatRecord::new_set(cfg.tier, (n - parity) as u32, parity as u32);
    for f in &mut formats {
        f.pool = cfg.pool;
        f.deployment_id = cfg.deployment.unwrap_or(f.deployment_id);
    }
    let deployment_id = formats[0].deployment_id;
    for (f, dir) in formats.iter().zip(&cfg.dirs) {
        f.write_to(dir)?;
    }
    tracing::info!(disks = n, data = n - parity, parity, tier = %cfg.tier, %deployment_id, "formatted a new pool");
    open_all(cfg, parity, deployment_id)
}

fn open_all(cfg: &LocalSetConfig, parity: usize, deployment_id: Uuid) -> Result<LocalSet, Error> {
    let mut disks: Vec<Arc<dyn Disk>> = Vec::new();
    let mut local = Vec::new();
    for dir in &cfg.dirs {
        match probe_dir(dir) {
            DirState::Missing => {
                tracing::error!(dir = %show(dir), "disk missing: directory does not exist; its slot is offline");
                disks.push(Arc::new(OfflineDisk::new(
                    show(dir),
                    "directory does not exist",
                )));
                local.push(None);
            }
            _ => {
                let d = Arc::new(LocalDisk::open(dir, cfg.disk.clone())?);
                disks.push(d.clone());
                local.push(Some(d));
            }
        }
    }
    Ok(LocalSet {
        disks,
        local,
        parity,
        deployment_id,
    })
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
            deployment: None,
            disk: LocalDiskOptions::default(),
        }
    }

    #[test]
    fn defaults_follow_the_directory_count() {
        assert_eq!(
            (1..=16).map(default_parity).collect::<Vec<_>>(),
            vec![0, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4]
        );
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
}
