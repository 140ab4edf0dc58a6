//! Opens a pool of `granary server`'s directories (its first pool, `DIR...`,
//! and its cold pool, `--cold`): its directories divided into erasure sets
//! (see `pool_layout::set_widths`), each set opened (and formatted where needed) on
//! its own, so that a set that lost more disks than its parity is offline
//! alone while the others serve.
//!
//! The width of a formatted pool is read from its disks' formats, never
//! recomputed: a deployment formatted with one set of N (every deployment
//! before pools had many sets) stays one set of N.

use std::path::PathBuf;

use disk_engine::{probe_dir, DirState, FormatRecord, LocalDiskOptions, Tier};
use erasure_set::{open_local_set, LocalSet, LocalSetConfig};
use uuid::Uuid;

use crate::error::Error;
use pool_layout::local_layout;

/// What `granary server` was asked for one of its pools.
#[derive(Clone, Debug)]
pub struct LocalPoolConfig {
    /// The pool's tier (its sets' default parity follows it).
    pub tier: Tier,
    /// The pool's index in the deployment (0: the first pool).
    pub pool: u32,
    /// The deployment the pool belongs to (`None`: the first pool's, read
    /// from its disks or made new).
    pub deployment: Option<Uuid>,
    /// Data directories, in pool order: set `s` takes directories
    /// `s * width .. (s + 1) * width`.
    pub dirs: Vec<PathBuf>,
    /// Disks per set; `None` for the default for the directory count.
    pub set_width: Option<usize>,
    /// Parity shards of every set; `None` for the default for the width.
    pub parity: Option<usize>,
    /// Disk options (durability).
    pub disk: LocalDiskOptions,
}

/// The opened pool: its sets in order.
pub struct LocalPool {
    /// Every set, offline ones included.
    pub sets: Vec<LocalSet>,
    /// The deployment every disk belongs to.
    pub deployment_id: Uuid,
    /// Whether the pool was formatted now (a new deployment).
    pub created: bool,
}

impl LocalPool {
    /// Disks per set.
    pub fn width(&self) -> usize {
        self.sets[0].disks.len()
    }

    /// Parity shards of every set.
    pub fn parity(&self) -> usize {
        self.sets[0].parity
    }
}

/// The `granary server` flag that pins the width of a pool of `tier`.
fn width_flag(tier: Tier) -> &'static str {
    match tier {
        Tier::Hot => "--set-width",
        Tier::Cold => "--cold-set-width",
    }
}

fn setup(msg: String) -> Error {
    Error::Setup(msg)
}

/// Opens (formatting where needed) the pool described by `cfg`. Blocking.
pub fn open_local_pool(cfg: &LocalPoolConfig) -> Result<LocalPool, Error> {
    let n = cfg.dirs.len();
    for (i, a) in cfg.dirs.iter().enumerate() {
        if cfg.dirs[..i].contains(a) {
            return Err(setup(format!("directory {} is given twice", a.display())));
        }
    }
    let formatted: Option<(PathBuf, FormatRecord)> =
        cfg.dirs.iter().find_map(|d| match probe_dir(d) {
            DirState::Formatted(f) => Some((d.clone(), f)),
            _ => None,
        });
    let (width, sets) = match &formatted {
        Some((dir, f)) => {
            let (width, sets) = (f.set_size(), f.sets as usize);
            if width * sets != n {
                return Err(setup(format!(
                    "{} was formatted as one of {} disks ({sets} erasure sets of {width}), but {n} were given",
                    dir.display(),
                    width * sets
                )));
            }
            if let Some(w) = cfg.set_width.filter(|w| *w != width) {
                let flag = width_flag(cfg.tier);
                return Err(setup(format!(
                    "these disks were formatted in erasure sets of {width}; started with {flag} {w}. \
                     Start without it or with {flag} {width}"
                )));
            }
            (width, sets)
        }
        None => {
            let l = local_layout(n, cfg.set_width, cfg.parity, cfg.tier).map_err(setup)?;
            (l.width, l.sets)
        }
    };
    // Once any set holds a format, a set none of whose disks holds one lost
    // them all (or their mounts failed): it is offline, never formatted
    // anew over data its disks may still hold.
    let deployment = cfg.deployment.unwrap_or_else(|| {
        formatted
            .as_ref()
            .map_or_else(Uuid::new_v4, |(_, f)| f.deployment_id)
    });
    let mut opened = Vec::with_capacity(sets);
    for s in 0..sets {
        let set = open_local_set(&LocalSetConfig {
            dirs: cfg.dirs[s * width..(s + 1) * width].to_vec(),
            parity: cfg.parity,
            tier: cfg.tier,
            pool: cfg.pool,
            set: s as u32,
            sets: sets as u32,
            pool_exists: formatted.is_some(),
            deployment: Some(deployment),
            disk: cfg.disk.clone(),
        })?;
        opened.push(set);
    }
    Ok(LocalPool {
        deployment_id: deployment,
        created: formatted.is_none(),
        sets: opened,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(root: &std::path::Path, n: usize, width: Option<usize>) -> LocalPoolConfig {
        LocalPoolConfig {
            tier: Tier::Hot,
            pool: 0,
            deployment: None,
            dirs: (0..n).map(|i| root.join(format!("d{i}"))).collect(),
            set_width: width,
            parity: None,
            disk: LocalDiskOptions {
                fsync: false,
                ..LocalDiskOptions::default()
            },
        }
    }

    fn wipe(d: &std::path::Path) {
        std::fs::remove_dir_all(d).unwrap();
        std::fs::create_dir(d).unwrap();
    }

    #[test]
    fn a_pool_is_formatted_in_sets_and_reopened_with_its_recorded_width() {
        let root = tempfile::tempdir().unwrap();
        let c = cfg(root.path(), 8, Some(4));
        let pool = open_local_pool(&c).unwrap();
        assert!(pool.created);
        assert_eq!((pool.sets.len(), pool.width(), pool.parity()), (2, 4, 2));
        let dep = pool.deployment_id;
        assert!(pool.sets.iter().all(|s| s.deployment_id == dep));
        drop(pool);
        // Reopened without the flag: the recorded width, not the default
        // (which would be one set of 8).
        let pool = open_local_pool(&cfg(root.path(), 8, None)).unwrap();
        assert!(!pool.created);
        assert_eq!((pool.sets.len(), pool.width()), (2, 4));
        drop(pool);
        let err = open_local_pool(&cfg(root.path(), 8, Some(8)))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--set-width 4"), "{err}");
        let err = open_local_pool(&cfg(root.path(), 4, None))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("2 erasure sets of 4"), "{err}");
        // The two sets swapped: refused.
        let mut swapped = c.clone();
        swapped.dirs.rotate_left(4);
        let err = open_local_pool(&swapped).err().unwrap().to_string();
        assert!(err.contains("original order"), "{err}");
    }

    #[test]
    fn a_cold_pool_keeps_its_width_and_names_its_own_flag() {
        let root = tempfile::tempdir().unwrap();
        let mut c = cfg(root.path(), 8, Some(4));
        c.tier = Tier::Cold;
        c.pool = 1;
        let pool = open_local_pool(&c).unwrap();
        assert_eq!((pool.sets.len(), pool.parity()), (2, 2));
        drop(pool);
        c.set_width = None;
        assert_eq!(open_local_pool(&c).unwrap().sets.len(), 2);
        c.set_width = Some(8);
        let err = open_local_pool(&c).err().unwrap().to_string();
        assert!(err.contains("started with --cold-set-width 8"), "{err}");
        assert!(err.contains("with --cold-set-width 4"), "{err}");
    }

    #[test]
    fn a_set_whose_disks_are_all_empty_is_offline_not_formatted_anew() {
        let root = tempfile::tempdir().unwrap();
        let c = cfg(root.path(), 8, Some(4));
        drop(open_local_pool(&c).unwrap());
        for d in &c.dirs[4..] {
            wipe(d);
        }
        let pool = open_local_pool(&c).unwrap();
        assert!(pool.sets[0].offline.is_none());
        let why = pool.sets[1].offline.clone().expect("offline");
        assert!(why.contains("erasure set 2 of pool 0"), "{why}");
        assert!(!c.dirs[4].join("format.json").exists());
    }

    #[test]
    fn the_first_set_whose_disks_are_all_empty_is_offline_not_formatted_anew() {
        // The set holding the buckets is no exception: formatting it anew
        // would start an empty deployment over the other sets' data.
        let root = tempfile::tempdir().unwrap();
        let c = cfg(root.path(), 8, Some(4));
        let dep = open_local_pool(&c).unwrap().deployment_id;
        for d in &c.dirs[..4] {
            wipe(d);
        }
        let pool = open_local_pool(&c).unwrap();
        assert_eq!(pool.deployment_id, dep);
        let why = pool.sets[0].offline.clone().expect("offline");
        assert!(why.contains("erasure set 1 of pool 0"), "{why}");
        assert!(pool.sets[1].offline.is_none());
        assert!(!c.dirs[0].join("format.json").exists());
    }

    #[test]
    fn seventeen_directories_are_refused_with_the_counts_that_work() {
        let root = tempfile::tempdir().unwrap();
        let err = open_local_pool(&cfg(root.path(), 17, None))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("18, 20"), "{err}");
    }
}
